//! Package settings: the schema a package's install declared and the values an operator set —
//! written once for both backends.

use futures::future::BoxFuture;
use sqlx::types::Json;

use crate::backend::{PgStore, SqliteStore};
use crate::error::{ErrorKind, Result, StoreError};
use crate::key_reads::KeyReads;
use crate::records::{Event, PackageSettings};

pub trait SettingsStore: Send + Sync {
    fn package_settings<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<PackageSettings>>;
    /// The settings of the package that installed the skill `name`, with that package's version.
    fn skill_settings<'a>(&'a self, name: &'a str) -> BoxFuture<'a, Result<Option<(PackageSettings, String)>>>;
    /// Writes `settings` when its stored values are still at `values_revision - 1` (`Stale`
    /// otherwise), with its event.
    fn set_package_values<'a>(&'a self, settings: &'a PackageSettings, event: &'a Event) -> BoxFuture<'a, Result<()>>;
}

/// Stores `$schema` as the settings schema of package `$key` inside `$tx` (a changed schema
/// moves its revision; the values stay).
macro_rules! settings_schema_in {
    ($tx:ident, $key:expr, $schema:expr, $at:expr) => {{
        let (key, schema, at): (&str, &serde_json::Value, $crate::records::Time) = ($key, $schema, $at);
        sqlx::query(
            "INSERT INTO package_settings (package_key, schema, updated_at) VALUES ($1, $2, $3) \
             ON CONFLICT (package_key) DO UPDATE SET schema = excluded.schema, \
             schema_revision = package_settings.schema_revision + 1, updated_at = excluded.updated_at \
             WHERE package_settings.schema <> excluded.schema",
        )
        .bind(key)
        .bind(sqlx::types::Json(schema))
        .bind(at)
        .execute(&mut *$tx)
        .await?;
    }};
}
pub(crate) use settings_schema_in;

macro_rules! settings_store {
    ($store:ty) => {
        impl SettingsStore for $store {
            fn package_settings<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<PackageSettings>> {
                Box::pin(async move {
                    Ok(sqlx::query_as(
                        "SELECT package_key, schema, schema_revision, \"values\", values_revision, updated_at, updated_by \
                         FROM package_settings WHERE package_key = $1",
                    )
                    .bind(key)
                    .fetch_one(self.read())
                    .await?)
                })
            }

            fn skill_settings<'a>(&'a self, name: &'a str) -> BoxFuture<'a, Result<Option<(PackageSettings, String)>>> {
                KeyReads::settings_of_skill(self, name)
            }

            fn set_package_values<'a>(&'a self, s: &'a PackageSettings, event: &'a Event) -> BoxFuture<'a, Result<()>> {
                Box::pin(async move {
                    let mut tx = self.write().await?;
                    let done = sqlx::query(
                        "UPDATE package_settings SET \"values\" = $2, values_revision = $3, updated_at = $4, updated_by = $5 \
                         WHERE package_key = $1 AND values_revision = $6 AND schema_revision = $7",
                    )
                    .bind(&s.package_key)
                    .bind(Json(&s.values))
                    .bind(s.values_revision)
                    .bind(s.updated_at)
                    .bind(&s.updated_by)
                    .bind(s.values_revision - 1)
                    .bind(s.schema_revision)
                    .execute(&mut *tx)
                    .await?;
                    if done.rows_affected() == 0 {
                        return Err(StoreError::new(ErrorKind::Stale, format!("the settings of {} moved on", s.package_key)));
                    }
                    crate::events::commit!(tx, event);
                    self.keys_changed();
                    Ok(())
                })
            }
        }
    };
}

settings_store!(SqliteStore);
settings_store!(PgStore);
