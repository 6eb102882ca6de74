//! The two backends: opening, migrating, and the write transaction each one needs.
//!
//! SQLite keeps one writing connection (SQLite has one writer at a time; queueing in the pool is
//! cheaper than retrying on `SQLITE_BUSY`) and a pool of readers, in WAL mode so readers never
//! wait for the writer. PostgreSQL uses one pool for both.

use std::borrow::Cow;
use std::path::Path;
use std::str::FromStr;
use std::time::Duration;

use sqlx::migrate::{Migration, MigrationType, Migrator};
use sqlx::postgres::{PgConnectOptions, PgPool, PgPoolOptions};
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteSynchronous};
use sqlx::{Postgres, SqlSafeStr, SqlStr, Sqlite, Transaction};

use crate::error::{ErrorKind, Result, StoreError};
use crate::lite::Lite;
use crate::together::{Gather, Insertion, Update};

/// How long a statement waits for SQLite's write lock held by another process.
const BUSY_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a caller waits for a free connection before the store reports `Unavailable`.
const ACQUIRE_TIMEOUT: Duration = Duration::from_secs(10);

/// Options for opening a store.
#[derive(Debug, Clone)]
pub struct StoreOptions {
    /// Connections of the PostgreSQL pool, or SQLite readers.
    pub max_connections: u32,
    /// SQLite: `synchronous=FULL` (a commit survives a power cut) when true, `NORMAL` (survives a
    /// killed process, not a power cut) when false.
    pub sqlite_full_sync: bool,
    /// Give the events written before the journal their entries and leaves at open (`open`; a
    /// reader that audits the database, `journal export`, changes nothing and leaves it off).
    pub journal_catch_up: bool,
}

impl Default for StoreOptions {
    fn default() -> Self {
        Self { max_connections: 8, sqlite_full_sync: true, journal_catch_up: true }
    }
}

/// The embedded backend: one SQLite file in WAL mode.
#[derive(Debug, Clone)]
pub struct SqliteStore {
    pub(crate) reader: SqlitePool,
    pub(crate) writer: SqlitePool,
    /// The hot path of calls and sessions (`lite.rs`).
    pub(crate) lite: Lite,
}

/// The scale-out backend: a PostgreSQL database shared by every core replica.
#[derive(Debug, Clone)]
pub struct PgStore {
    pub(crate) pool: PgPool,
    /// The reads by key kept while a listening connection hears every change (`key_cache.rs`).
    pub(crate) keys: std::sync::Arc<crate::key_cache::KeyCache>,
    /// The new calls and the call updates that arrive together, written together
    /// (`together.rs`).
    pub(crate) inserts: std::sync::Arc<Gather<Insertion>>,
    pub(crate) updates: std::sync::Arc<Gather<Update>>,
}

impl SqliteStore {
    /// Nothing of the reads by key is kept on SQLite (they are read on the caller's thread).
    pub(crate) fn keys_changed(&self) {}

    /// Opens (creating it and its folder when missing) the database file and applies the
    /// migrations (events written before the journal get their leaves through [`crate::open`]).
    pub async fn open(path: &Path, options: &StoreOptions) -> Result<Self> {
        if let Some(folder) = path.parent().filter(|folder| !folder.as_os_str().is_empty()) {
            // What the store holds (token hashes, contracts, the journal) is the owner's alone:
            // a folder and a file it creates are readable by the owner only.
            let mut builder = std::fs::DirBuilder::new();
            builder.recursive(true);
            #[cfg(unix)]
            std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
            builder.create(folder).map_err(|error| {
                StoreError::new(
                    ErrorKind::Unavailable,
                    format!("cannot create the data directory {}: {error}", folder.display()),
                )
            })?;
        }
        if !path.exists() {
            let mut options = std::fs::OpenOptions::new();
            options.write(true).create_new(true);
            #[cfg(unix)]
            std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
            // Created empty (an empty file is an empty database); SQLite gives its -wal and
            // -shm files the same permissions.
            if let Err(error) = options.open(path)
                && error.kind() != std::io::ErrorKind::AlreadyExists
            {
                return Err(StoreError::new(
                    ErrorKind::Unavailable,
                    format!("cannot create the database file {}: {error}", path.display()),
                ));
            }
        }
        let connect = SqliteConnectOptions::new()
            .filename(path)
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            .synchronous(if options.sqlite_full_sync { SqliteSynchronous::Full } else { SqliteSynchronous::Normal })
            .foreign_keys(true)
            .busy_timeout(BUSY_TIMEOUT);
        let writer = SqlitePoolOptions::new()
            .max_connections(1)
            .acquire_timeout(ACQUIRE_TIMEOUT)
            .connect_with(connect.clone())
            .await
            .map_err(|error| opening(&path.display().to_string(), error))?;
        renumbered(&writer).await.map_err(|error| opening(&path.display().to_string(), error))?;
        migrator(SQLITE_MIGRATIONS).run(&writer).await.map_err(migrating)?;
        let reader = SqlitePoolOptions::new()
            .max_connections(options.max_connections.max(1))
            .acquire_timeout(ACQUIRE_TIMEOUT)
            .connect_with(connect.read_only(true))
            .await
            .map_err(|error| opening(&path.display().to_string(), error))?;
        let lite = Lite::open(path, options.sqlite_full_sync, BUSY_TIMEOUT)?;
        Ok(Self { reader, writer, lite })
    }

    /// A write transaction that takes the write lock at once, so it never fails half-way on a
    /// lock another process took after it started.
    pub(crate) async fn write(&self) -> Result<Transaction<'static, Sqlite>> {
        Ok(self.writer.begin_with("BEGIN IMMEDIATE").await?)
    }

    pub(crate) fn read(&self) -> &SqlitePool {
        &self.reader
    }
}

impl PgStore {
    /// Connects to `url` (`postgres://…`) and applies the migrations; replicas starting together
    /// take turns on a lock (events written before the journal get their leaves through
    /// [`crate::open`]).
    pub async fn open(url: &str, options: &StoreOptions) -> Result<Self> {
        let connect = PgConnectOptions::from_str(url)
            .map_err(|error| StoreError::new(ErrorKind::Invalid, format!("the database URL is not valid: {error}")))?;
        let pool = PgPoolOptions::new()
            .max_connections(options.max_connections.max(1))
            .acquire_timeout(ACQUIRE_TIMEOUT)
            .connect_with(connect)
            .await
            .map_err(|error| opening(&redact(url), error))?;
        migrator(POSTGRES_MIGRATIONS).run(&pool).await.map_err(migrating)?;
        Ok(Self {
            pool,
            keys: std::sync::Arc::new(crate::key_cache::KeyCache::new()),
            inserts: std::sync::Arc::default(),
            updates: std::sync::Arc::default(),
        })
    }

    /// A write through this store changed what the reads by key answer: what it kept is
    /// forgotten before the write is answered (other cores hear it from the database).
    pub(crate) fn keys_changed(&self) {
        self.keys.changed();
    }

    pub(crate) async fn write(&self) -> Result<Transaction<'static, Postgres>> {
        Ok(self.pool.begin().await?)
    }

    pub(crate) fn read(&self) -> &PgPool {
        &self.pool
    }
}

/// `(version, description, sql)` of each migration, in order.
type Migrations = &'static [(i64, &'static str, &'static str)];

const SQLITE_MIGRATIONS: Migrations = &[
    (1, "catalog", include_str!("../migrations/sqlite/0001_catalog.sql")),
    (2, "package links", include_str!("../migrations/sqlite/0002_package_links.sql")),
    (3, "invocations", include_str!("../migrations/sqlite/0003_invocations.sql")),
    (4, "idempotency", include_str!("../migrations/sqlite/0004_idempotency.sql")),
    (5, "package settings", include_str!("../migrations/sqlite/0005_package_settings.sql")),
    (6, "signing keys", include_str!("../migrations/sqlite/0006_signing_keys.sql")),
    (7, "draining sessions", include_str!("../migrations/sqlite/0007_draining_sessions.sql")),
    (8, "work", include_str!("../migrations/sqlite/0008_work.sql")),
    (9, "artifacts", include_str!("../migrations/sqlite/0009_artifacts.sql")),
    (10, "knowledge", include_str!("../migrations/sqlite/0010_knowledge.sql")),
    (11, "knowledge documents", include_str!("../migrations/sqlite/0011_knowledge_documents.sql")),
    (12, "artifact types", include_str!("../migrations/sqlite/0012_artifact_types.sql")),
    (13, "console sessions", include_str!("../migrations/sqlite/0013_console_sessions.sql")),
    (14, "bound bases", include_str!("../migrations/sqlite/0014_bound_bases.sql")),
    (15, "outcome retries", include_str!("../migrations/sqlite/0015_outcome_retries.sql")),
    (16, "state moves", include_str!("../migrations/sqlite/0016_state_moves.sql")),
    (17, "agents", include_str!("../migrations/sqlite/0017_agents.sql")),
    (18, "agent requests", include_str!("../migrations/sqlite/0018_agent_requests.sql")),
    (19, "facts and rules", include_str!("../migrations/sqlite/0019_facts_rules.sql")),
    (20, "enabled deciders", include_str!("../migrations/sqlite/0020_enabled_deciders.sql")),
    (21, "processes", include_str!("../migrations/sqlite/0021_processes.sql")),
    (22, "decided writes", include_str!("../migrations/sqlite/0022_decided_writes.sql")),
    (23, "basis checks by kind", include_str!("../migrations/sqlite/0023_basis_checks_by_kind.sql")),
    (24, "key changes heard", include_str!("../migrations/sqlite/0024_key_changes_heard.sql")),
    (25, "call traces", include_str!("../migrations/sqlite/0025_call_traces.sql")),
    (26, "journal", include_str!("../migrations/sqlite/0026_journal.sql")),
    (27, "initiators", include_str!("../migrations/sqlite/0027_initiators.sql")),
    (28, "fixed names", include_str!("../migrations/sqlite/0028_fixed_names.sql")),
];
const POSTGRES_MIGRATIONS: Migrations = &[
    (1, "catalog", include_str!("../migrations/postgres/0001_catalog.sql")),
    (2, "package links", include_str!("../migrations/postgres/0002_package_links.sql")),
    (3, "invocations", include_str!("../migrations/postgres/0003_invocations.sql")),
    (4, "idempotency", include_str!("../migrations/postgres/0004_idempotency.sql")),
    (5, "package settings", include_str!("../migrations/postgres/0005_package_settings.sql")),
    (6, "signing keys", include_str!("../migrations/postgres/0006_signing_keys.sql")),
    (7, "draining sessions", include_str!("../migrations/postgres/0007_draining_sessions.sql")),
    (8, "work", include_str!("../migrations/postgres/0008_work.sql")),
    (9, "artifacts", include_str!("../migrations/postgres/0009_artifacts.sql")),
    (10, "knowledge", include_str!("../migrations/postgres/0010_knowledge.sql")),
    (11, "knowledge documents", include_str!("../migrations/postgres/0011_knowledge_documents.sql")),
    (12, "artifact types", include_str!("../migrations/postgres/0012_artifact_types.sql")),
    (13, "console sessions", include_str!("../migrations/postgres/0013_console_sessions.sql")),
    (14, "bound bases", include_str!("../migrations/postgres/0014_bound_bases.sql")),
    (15, "outcome retries", include_str!("../migrations/postgres/0015_outcome_retries.sql")),
    (16, "state moves", include_str!("../migrations/postgres/0016_state_moves.sql")),
    (17, "agents", include_str!("../migrations/postgres/0017_agents.sql")),
    (18, "agent requests", include_str!("../migrations/postgres/0018_agent_requests.sql")),
    (19, "facts and rules", include_str!("../migrations/postgres/0019_facts_rules.sql")),
    (20, "enabled deciders", include_str!("../migrations/postgres/0020_enabled_deciders.sql")),
    (21, "processes", include_str!("../migrations/postgres/0021_processes.sql")),
    (22, "decided writes", include_str!("../migrations/postgres/0022_decided_writes.sql")),
    (23, "basis checks by kind", include_str!("../migrations/postgres/0023_basis_checks_by_kind.sql")),
    (24, "key changes heard", include_str!("../migrations/postgres/0024_key_changes_heard.sql")),
    (25, "call traces", include_str!("../migrations/postgres/0025_call_traces.sql")),
    (26, "journal", include_str!("../migrations/postgres/0026_journal.sql")),
    (27, "initiators", include_str!("../migrations/postgres/0027_initiators.sql")),
    (28, "fixed names", include_str!("../migrations/postgres/0028_fixed_names.sql")),
];

fn migrator(migrations: Migrations) -> Migrator {
    Migrator::with_migrations(
        migrations
            .iter()
            .map(|(version, description, sql)| {
                let sql: SqlStr = (*sql).into_sql_str();
                Migration::new(*version, Cow::Borrowed(*description), MigrationType::Simple, sql, false)
            })
            .collect(),
    )
}

/// The migration SQLite lacked until the two backends' migrations were put in parity: the
/// migrations after it were numbered one lower then.
const PARITY_FROM: i64 = 24;

/// A SQLite database migrated before its migrations were numbered as PostgreSQL's, renumbered
/// in one transaction: each migration from [`PARITY_FROM`] one higher, and the one it lacked
/// recorded as applied (it does nothing on SQLite). A database of any other history is left as
/// it is.
async fn renumbered(writer: &sqlx::SqlitePool) -> Result<(), sqlx::Error> {
    let mut tx = writer.begin().await?;
    let history: Option<String> =
        sqlx::query_scalar("SELECT name FROM sqlite_master WHERE type = 'table' AND name = '_sqlx_migrations'")
            .fetch_optional(&mut *tx)
            .await?;
    if history.is_none() {
        return Ok(());
    }
    let old: Option<String> = sqlx::query_scalar("SELECT description FROM _sqlx_migrations WHERE version = $1")
        .bind(PARITY_FROM)
        .fetch_optional(&mut *tx)
        .await?;
    if old.as_deref() != Some("call traces") {
        return Ok(());
    }
    let missing = migrator(SQLITE_MIGRATIONS)
        .iter()
        .find(|migration| migration.version == PARITY_FROM)
        .map(|migration| migration.checksum.to_vec())
        .unwrap_or_default();
    // Through negative numbers, so no two rows ever hold one version.
    sqlx::query("UPDATE _sqlx_migrations SET version = -version - 1 WHERE version >= $1")
        .bind(PARITY_FROM)
        .execute(&mut *tx)
        .await?;
    sqlx::query("UPDATE _sqlx_migrations SET version = -version WHERE version < 0").execute(&mut *tx).await?;
    sqlx::query(
        "INSERT INTO _sqlx_migrations (version, description, success, checksum, execution_time) \
         VALUES ($1, 'key changes heard', TRUE, $2, 0)",
    )
    .bind(PARITY_FROM)
    .bind(missing)
    .execute(&mut *tx)
    .await?;
    tx.commit().await?;
    tracing::info!("the database's migrations were renumbered as PostgreSQL's");
    Ok(())
}

fn opening(target: &str, error: sqlx::Error) -> StoreError {
    let kind = StoreError::from(error);
    StoreError::new(kind.kind(), format!("cannot open the database {target}: {}", kind.message()))
}

fn migrating(error: sqlx::migrate::MigrateError) -> StoreError {
    StoreError::new(ErrorKind::Internal, format!("the database schema could not be brought up to date: {error}"))
}

/// `url` without its password, for messages.
pub fn redact(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else { return url.to_owned() };
    let Some((credentials, host)) = rest.rsplit_once('@') else { return url.to_owned() };
    let user = credentials.split(':').next().unwrap_or_default();
    format!("{scheme}://{user}:***@{host}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_never_reach_messages() {
        assert_eq!(redact("postgres://core:s3cret@db:5432/skills"), "postgres://core:***@db:5432/skills");
        assert_eq!(redact("postgres://db/skills"), "postgres://db/skills");
    }
}
