//! Artifacts' rows — written once for both backends — and the blob store their content lives in.

use std::path::{Path, PathBuf};

use futures::future::BoxFuture;

use crate::backend::{PgStore, SqliteStore};
use crate::error::{ErrorKind, Result, StoreError};
use crate::records::{ArtifactRecord, ArtifactTypeRecord, Event};

/// The rows of artifacts.
pub trait ArtifactStore: Send + Sync {
    /// Inserts an artifact with its event.
    fn insert_artifact<'a>(&'a self, artifact: &'a ArtifactRecord, event: &'a Event) -> BoxFuture<'a, Result<()>>;
    fn artifact<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<ArtifactRecord>>;
    /// The artifacts of a task, oldest first.
    fn task_artifacts<'a>(&'a self, task_id: &'a str) -> BoxFuture<'a, Result<Vec<ArtifactRecord>>>;
    /// The newest artifact of type `kind` in task `task_id` that nothing supersedes, if any.
    fn task_head<'a>(&'a self, task_id: &'a str, kind: &'a str) -> BoxFuture<'a, Result<Option<ArtifactRecord>>>;
    fn artifact_type<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<ArtifactTypeRecord>>;
    fn artifact_type_version<'a>(&'a self, key: &'a str, version: &'a str)
    -> BoxFuture<'a, Result<ArtifactTypeRecord>>;
    /// The version of `key` published last.
    fn newest_artifact_type<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<ArtifactTypeRecord>>;
    /// Versions in publication order after the id `after`, of one key when given.
    fn artifact_types<'a>(
        &'a self,
        key: Option<&'a str>,
        after: Option<&'a str>,
        limit: i64,
    ) -> BoxFuture<'a, Result<Vec<ArtifactTypeRecord>>>;
    /// The authority of a call of task `task_id` that `executor` runs now, if any.
    fn running_authority<'a>(&'a self, executor: &'a str, task_id: &'a str) -> BoxFuture<'a, Result<Option<String>>>;
}

macro_rules! artifact_columns {
    () => {
        "SELECT id, workspace_id, task_id, run_id, type, name, media_type, size_bytes, sha256, metadata, \
         author_principal_id, skill_invocation_id, supersedes_id, created_at FROM artifacts"
    };
}

macro_rules! artifact_type_columns {
    () => {
        "SELECT id, key, version, display_name, description, media_types, max_bytes, metadata_schema, created_by, \
         created_at FROM artifact_types"
    };
}

/// The one artifact type `$sql` finds with the arguments, or `NotFound` saying `$what`.
macro_rules! one_type {
    ($store:ident, $sql:expr, [$($arg:expr),*], $what:expr) => {{
        let found: Option<ArtifactTypeRecord> =
            sqlx::query_as($sql)$(.bind($arg))*.fetch_optional($store.read()).await?;
        found.ok_or_else(|| StoreError::new(ErrorKind::NotFound, $what))
    }};
}

macro_rules! artifact_store {
    ($store:ty) => {
        impl ArtifactStore for $store {
            fn insert_artifact<'a>(&'a self, a: &'a ArtifactRecord, event: &'a Event) -> BoxFuture<'a, Result<()>> {
                Box::pin(async move {
                    let mut tx = self.write().await?;
                    crate::statements::run_in!(tx, &[crate::statements::insert_artifact(a)]);
                    crate::events::commit!(tx, event);
                    Ok(())
                })
            }

            fn artifact<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<ArtifactRecord>> {
                Box::pin(async move {
                    let found: Option<ArtifactRecord> = sqlx::query_as(concat!(artifact_columns!(), " WHERE id = $1"))
                        .bind(id)
                        .fetch_optional(self.read())
                        .await?;
                    found.ok_or_else(|| StoreError::new(ErrorKind::NotFound, format!("no artifact {id}")))
                })
            }

            fn task_artifacts<'a>(&'a self, task_id: &'a str) -> BoxFuture<'a, Result<Vec<ArtifactRecord>>> {
                Box::pin(async move {
                    Ok(sqlx::query_as(concat!(artifact_columns!(), " WHERE task_id = $1 ORDER BY created_at, id"))
                        .bind(task_id)
                        .fetch_all(self.read())
                        .await?)
                })
            }

            fn task_head<'a>(
                &'a self,
                task_id: &'a str,
                kind: &'a str,
            ) -> BoxFuture<'a, Result<Option<ArtifactRecord>>> {
                Box::pin(async move {
                    Ok(sqlx::query_as(concat!(
                        artifact_columns!(),
                        " a WHERE task_id = $1 AND type = $2 AND NOT EXISTS \
                         (SELECT 1 FROM artifacts s WHERE s.supersedes_id = a.id) \
                         ORDER BY created_at DESC, id DESC LIMIT 1"
                    ))
                    .bind(task_id)
                    .bind(kind)
                    .fetch_optional(self.read())
                    .await?)
                })
            }

            fn artifact_type<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<ArtifactTypeRecord>> {
                Box::pin(async move {
                    one_type!(
                        self,
                        concat!(artifact_type_columns!(), " WHERE id = $1"),
                        [id],
                        format!("no artifact type {id}")
                    )
                })
            }

            fn artifact_type_version<'a>(
                &'a self,
                key: &'a str,
                version: &'a str,
            ) -> BoxFuture<'a, Result<ArtifactTypeRecord>> {
                Box::pin(async move {
                    one_type!(
                        self,
                        concat!(artifact_type_columns!(), " WHERE key = $1 AND version = $2"),
                        [key, version],
                        format!("no artifact type {key}@{version}")
                    )
                })
            }

            fn newest_artifact_type<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<ArtifactTypeRecord>> {
                Box::pin(async move {
                    one_type!(
                        self,
                        concat!(artifact_type_columns!(), " WHERE key = $1 ORDER BY created_at DESC, id DESC LIMIT 1"),
                        [key],
                        format!("no artifact type {key}")
                    )
                })
            }

            fn artifact_types<'a>(
                &'a self,
                key: Option<&'a str>,
                after: Option<&'a str>,
                limit: i64,
            ) -> BoxFuture<'a, Result<Vec<ArtifactTypeRecord>>> {
                Box::pin(async move {
                    Ok(sqlx::query_as(concat!(
                        artifact_type_columns!(),
                        " WHERE ($1 IS NULL OR key = $1) AND ($2 IS NULL OR \
                         (created_at, id) > (SELECT created_at, id FROM artifact_types WHERE id = $2)) \
                         ORDER BY created_at, id LIMIT $3"
                    ))
                    .bind(key)
                    .bind(after)
                    .bind(limit)
                    .fetch_all(self.read())
                    .await?)
                })
            }

            fn running_authority<'a>(
                &'a self,
                executor: &'a str,
                task_id: &'a str,
            ) -> BoxFuture<'a, Result<Option<String>>> {
                Box::pin(async move {
                    Ok(sqlx::query_scalar(
                        "SELECT authority_principal_id FROM skill_invocations WHERE status = 'running' \
                         AND executor_principal_id = $1 AND task_id = $2 LIMIT 1",
                    )
                    .bind(executor)
                    .bind(task_id)
                    .fetch_optional(self.read())
                    .await?)
                })
            }
        }
    };
}

artifact_store!(SqliteStore);
artifact_store!(PgStore);

/// Where artifacts' content lives, by SHA-256: written once, never changed (a second write of the
/// same content changes nothing).
pub trait BlobStore: Send + Sync + std::fmt::Debug {
    fn put<'a>(&'a self, sha256: &'a str, content: &'a [u8]) -> BoxFuture<'a, Result<()>>;
    /// `NotFound` when there is no such content.
    fn get<'a>(&'a self, sha256: &'a str) -> BoxFuture<'a, Result<Vec<u8>>>;
}

/// `Invalid` unless `sha256` is a lower-case hex SHA-256, the only name a blob has (so no name
/// can reach outside its store's folder or prefix).
pub fn check_blob_name(sha256: &str) -> Result<()> {
    if sha256.len() != 64 || !sha256.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)) {
        return Err(StoreError::new(ErrorKind::Invalid, "a blob is named by a lower-case hex SHA-256"));
    }
    Ok(())
}

/// Blobs in a folder: `<root>/<2 hex digits>/<sha256>`, each written to a temporary file, synced,
/// then renamed into place (a reader never sees half a blob).
#[derive(Debug, Clone)]
pub struct FolderBlobs {
    root: PathBuf,
}

impl FolderBlobs {
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Self { root: root.into() }
    }

    fn path(&self, sha256: &str) -> Result<PathBuf> {
        check_blob_name(sha256)?;
        Ok(self.root.join(&sha256[..2]).join(sha256))
    }
}

fn io_error(path: &Path, error: &std::io::Error) -> StoreError {
    let kind = if error.kind() == std::io::ErrorKind::NotFound { ErrorKind::NotFound } else { ErrorKind::Unavailable };
    StoreError::new(kind, format!("blob {}: {error}", path.display()))
}

impl BlobStore for FolderBlobs {
    fn put<'a>(&'a self, sha256: &'a str, content: &'a [u8]) -> BoxFuture<'a, Result<()>> {
        Box::pin(async move {
            let path = self.path(sha256)?;
            let content = content.to_vec();
            tokio::task::spawn_blocking(move || {
                use std::io::Write as _;
                if path.exists() {
                    return Ok(());
                }
                let folder = path.parent().expect("a blob path has a folder");
                std::fs::create_dir_all(folder).map_err(|error| io_error(folder, &error))?;
                let temporary = folder.join(format!(".{}.{}", uuid_like(), std::process::id()));
                let mut file = std::fs::File::create(&temporary).map_err(|error| io_error(&temporary, &error))?;
                file.write_all(&content)
                    .and_then(|()| file.sync_all())
                    .map_err(|error| io_error(&temporary, &error))?;
                std::fs::rename(&temporary, &path).map_err(|error| io_error(&path, &error))?;
                if let Ok(directory) = std::fs::File::open(folder) {
                    let _ = directory.sync_all();
                }
                Ok(())
            })
            .await
            .map_err(|error| StoreError::new(ErrorKind::Internal, format!("a blob write stopped: {error}")))?
        })
    }

    fn get<'a>(&'a self, sha256: &'a str) -> BoxFuture<'a, Result<Vec<u8>>> {
        Box::pin(async move {
            let path = self.path(sha256)?;
            tokio::task::spawn_blocking(move || std::fs::read(&path).map_err(|error| io_error(&path, &error)))
                .await
                .map_err(|error| StoreError::new(ErrorKind::Internal, format!("a blob read stopped: {error}")))?
        })
    }
}

/// A name no other writer of this process uses at the same moment.
fn uuid_like() -> String {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    format!("{:x}-{n}", std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos()))
}
