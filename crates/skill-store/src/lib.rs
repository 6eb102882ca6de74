//! The core's storage: one [`Store`] trait with two backends that mirror each other — SQLite in
//! WAL mode (embedded, the default: a file, nothing to set up) and PostgreSQL (shared by core
//! replicas). SQL text lives in this crate only.
//!
//! | what | where |
//! |---|---|
//! | opening a database, migrations | [`open`], [`SqliteStore::open`], [`PgStore::open`] |
//! | principals, tokens, workspaces, grants | [`IdentityStore`] |
//! | skill versions, assignments, package installs | [`CatalogStore`] |
//! | the keys audience tokens are signed with | [`KeyStore`] |
//! | task types, tasks, runs, approvals and their outcomes, comments | [`WorkStore`] |
//! | knowledge slots and their entities | [`KnowledgeStore`] |
//! | console sessions | [`ConsoleStore`] |
//! | artifacts' rows, and the blob store of their content (a folder) | [`ArtifactStore`], [`BlobStore`], [`FolderBlobs`] |
//! | the events journal | [`Journal`] |
//! | the rows | [`records`] |
//! | errors, one neutral kind per failure | [`StoreError`], [`ErrorKind`] |
//!
//! Every write is one transaction that also appends its event to the journal. The database
//! itself guards what must never change: a published skill version (triggers on both backends
//! refuse any other change than the mutable fields, a backward status move, or a delete) and
//! the journal (append-only).
//!
//! ```
//! # tokio::runtime::Runtime::new().unwrap().block_on(async {
//! use skill_store::{Backend, Store};
//!
//! let folder = std::env::temp_dir().join(format!("skill-store-doc-{}", std::process::id()));
//! let store = skill_store::open(folder.to_str().unwrap(), &Default::default()).await.unwrap();
//! assert_eq!(store.backend(), Backend::Sqlite);
//! store.ping().await.unwrap();
//! # std::fs::remove_dir_all(folder).unwrap();
//! # });
//! ```

mod agents;
mod artifacts;
mod backend;
mod catalog;
mod console;
mod error;
mod events;
mod idempotency;
mod identity;
mod invocations;
mod journal;
mod key_cache;
mod key_reads;
mod keys;
mod knowledge;
mod leaves;
mod lite;
mod processes;
pub mod records;
mod rules;
mod settings;
mod statements;
mod states;
mod together;
pub mod wakeups;
mod work;

use std::path::{Path, PathBuf};

use std::sync::Arc;

use futures::future::BoxFuture;

pub use agents::AgentStore;
pub use artifacts::{ArtifactStore, BlobStore, FolderBlobs, check_blob_name};
pub use backend::{PgStore, SqliteStore, StoreOptions, redact};
pub use catalog::CatalogStore;
pub use console::ConsoleStore;
pub use error::{ErrorKind, Result, StoreError};
pub use events::Journal;
pub use idempotency::{Begun, IdempotencyStore, StoredAnswer};
pub use identity::IdentityStore;
pub use invocations::{Decision, InvocationStore, Take};
pub use journal::{CheckpointRow, JournalTree, LeafRow, SendRow};
pub use keys::KeyStore;
pub use knowledge::KnowledgeStore;
pub use leaves::journal_grown;
pub use processes::ProcessStore;
pub use rules::RuleStore;
pub use settings::SettingsStore;
pub use work::WorkStore;

/// The file a data directory holds.
pub const SQLITE_FILE: &str = "core.db";

/// Which database a store speaks to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    Sqlite,
    Postgres,
}

/// Everything the core stores.
pub trait Store:
    IdentityStore
    + AgentStore
    + CatalogStore
    + InvocationStore
    + IdempotencyStore
    + SettingsStore
    + KeyStore
    + WorkStore
    + ArtifactStore
    + KnowledgeStore
    + RuleStore
    + ProcessStore
    + ConsoleStore
    + Journal
    + JournalTree
    + std::fmt::Debug
{
    fn backend(&self) -> Backend;
    /// Answers when the database does (`/readyz`).
    fn ping(&self) -> BoxFuture<'_, Result<()>>;
    /// Writes a consistent copy of the whole database to the new file `file` (SQLite only: the
    /// scratch cores package tests run on start each test from one).
    fn copy_into<'a>(&'a self, file: &'a Path) -> BoxFuture<'a, Result<()>>;
    /// A connection listening for the wake-ups other cores send (PostgreSQL; `None` on SQLite,
    /// whose one writer is one core).
    fn wakeups(&self) -> BoxFuture<'_, Result<Option<wakeups::Wakeups>>>;
    /// Wakes the claims waiting on every core that listens: calls were queued (PostgreSQL;
    /// nothing to do on SQLite).
    fn wake_others(&self) -> BoxFuture<'_, Result<()>>;
    /// The database connections this process holds, by pool: `(pool, open, idle)`.
    fn connections(&self) -> Vec<(&'static str, u32, u32)>;
}

impl Store for SqliteStore {
    fn backend(&self) -> Backend {
        Backend::Sqlite
    }

    fn ping(&self) -> BoxFuture<'_, Result<()>> {
        Box::pin(async move {
            sqlx::query("SELECT 1").execute(&self.reader).await?;
            Ok(())
        })
    }

    fn copy_into<'a>(&'a self, file: &'a Path) -> BoxFuture<'a, Result<()>> {
        Box::pin(async move {
            let Some(file) = file.to_str() else {
                return Err(StoreError::new(ErrorKind::Invalid, "the copy's path is not UTF-8"));
            };
            sqlx::query("VACUUM INTO $1").bind(file).execute(&self.reader).await?;
            Ok(())
        })
    }

    fn wakeups(&self) -> BoxFuture<'_, Result<Option<wakeups::Wakeups>>> {
        Box::pin(async { Ok(None) })
    }

    fn wake_others(&self) -> BoxFuture<'_, Result<()>> {
        Box::pin(async { Ok(()) })
    }

    fn connections(&self) -> Vec<(&'static str, u32, u32)> {
        let pool = |pool: &sqlx::SqlitePool| (pool.size(), u32::try_from(pool.num_idle()).unwrap_or(u32::MAX));
        let ((reader, reader_idle), (writer, writer_idle)) = (pool(&self.reader), pool(&self.writer));
        let (calls, calls_idle) = self.lite.connections();
        vec![("reader", reader, reader_idle), ("writer", writer, writer_idle), ("calls", calls, calls_idle)]
    }
}

impl Store for PgStore {
    fn backend(&self) -> Backend {
        Backend::Postgres
    }

    fn ping(&self) -> BoxFuture<'_, Result<()>> {
        Box::pin(async move {
            sqlx::query("SELECT 1").execute(&self.pool).await?;
            Ok(())
        })
    }

    fn copy_into<'a>(&'a self, _file: &'a Path) -> BoxFuture<'a, Result<()>> {
        Box::pin(
            async move { Err(StoreError::new(ErrorKind::Invalid, "only a SQLite database is copied into a file")) },
        )
    }

    fn wakeups(&self) -> BoxFuture<'_, Result<Option<wakeups::Wakeups>>> {
        Box::pin(
            async move { Ok(Some(wakeups::Wakeups::listen(&self.pool, std::sync::Arc::clone(&self.keys)).await?)) },
        )
    }

    fn wake_others(&self) -> BoxFuture<'_, Result<()>> {
        Box::pin(async move {
            sqlx::query(wakeups::NOTIFY_CALLS).execute(&self.pool).await?;
            Ok(())
        })
    }

    fn connections(&self) -> Vec<(&'static str, u32, u32)> {
        vec![("main", self.pool.size(), u32::try_from(self.pool.num_idle()).unwrap_or(u32::MAX))]
    }
}

/// Opens the database `target` names: a `postgres://` or `postgresql://` URL, or else a SQLite
/// data directory (created when missing; the database is its file [`SQLITE_FILE`]) or a path
/// ending in `.db`, `.sqlite` or `.sqlite3` (the file itself). Migrations are applied.
/// Events written before the journal get their entries and leaves then (unless
/// `options.journal_catch_up` is off: an audit reads the database as it is).
pub async fn open(target: &str, options: &StoreOptions) -> Result<Arc<dyn Store>> {
    let store: Arc<dyn Store> = if target.starts_with("postgres://") || target.starts_with("postgresql://") {
        Arc::new(PgStore::open(target, options).await?)
    } else {
        Arc::new(SqliteStore::open(&sqlite_path(target)?, options).await?)
    };
    if options.journal_catch_up {
        let events = store.journal_catch_up().await?;
        if events > 0 {
            tracing::info!(events, "the journal now holds the events written before it");
        }
    }
    Ok(store)
}

fn sqlite_path(target: &str) -> Result<PathBuf> {
    let target = target.strip_prefix("sqlite:").unwrap_or(target);
    if target.is_empty() {
        return Err(StoreError::new(
            ErrorKind::Invalid,
            "no database given: pass a data directory or a postgres:// URL",
        ));
    }
    let path = Path::new(target);
    let is_file =
        path.extension().is_some_and(|extension| matches!(extension.to_str(), Some("db" | "sqlite" | "sqlite3")));
    Ok(if is_file { path.to_path_buf() } else { path.join(SQLITE_FILE) })
}
