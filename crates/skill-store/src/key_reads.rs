//! The reads by key that every request or call makes — a token's credential, a version by id or
//! by name and version, a skill's package settings. Each backend reads them its fastest way:
//! PostgreSQL through sqlx (below), what it found kept while its core hears every change
//! (`key_cache.rs`); SQLite on the caller's thread (`key_reads/sqlite.rs`).

mod sqlite;

use futures::future::BoxFuture;
use sqlx::{FromRow as _, Row as _};

use crate::backend::PgStore;
use crate::error::Result;
use sqlx::types::Json;

use crate::records::{AccessToken, Credential, ExecutorAllowance, Grant, PackageSettings, Principal, SkillEntry};

/// The columns of a skill with its package, as a literal so statements are `concat!`-ed at
/// compile time.
macro_rules! select_skill {
    () => {
        "SELECT s.id, s.name, s.version, s.description, s.protocol, s.config, s.input_schema, \
     s.output_schema, s.side_effects, s.risk_level, s.contract, s.composition, s.status, s.row_version, \
     s.created_at, s.updated_at, pi.key AS package_key, pi.version AS package_version, pi.install_hash, \
     pi.installed_at, pi.installed_by \
     FROM skills s \
     LEFT JOIN package_objects po ON po.kind = 'Skill' AND po.object_key = s.name \
     LEFT JOIN package_installs pi ON pi.key = po.package_key"
    };
}
pub(crate) use select_skill;

/// The token with this hash, its principal and the principal's grants, in one query.
pub(crate) const CREDENTIAL: &str = "SELECT t.id AS token_id, t.principal_id, t.token_hash, t.label, \
     t.created_at AS token_created_at, t.expires_at, t.revoked_at, p.id, p.kind, p.name, \
     p.display_name, p.created_at, p.disabled_at, g.id AS grant_id, g.workspace_id, \
     g.permission, g.created_at AS grant_created_at, p.executor_allowance, t.operated_by, t.issued_by, \
     o.disabled_at IS NOT NULL AS operator_disabled, i.disabled_at IS NOT NULL AS issuer_disabled \
     FROM access_tokens t JOIN principals p ON p.id = t.principal_id \
     LEFT JOIN principals o ON o.id = t.operated_by \
     LEFT JOIN principals i ON i.id = t.issued_by \
     LEFT JOIN grants g ON g.principal_id = p.id \
     WHERE t.token_hash = $1 ORDER BY g.permission, g.workspace_id";
pub(crate) const SKILL_BY_ID: &str = concat!(select_skill!(), " WHERE s.id = $1");
pub(crate) const SKILL_BY_VERSION: &str = concat!(select_skill!(), " WHERE s.name = $1 AND s.version = $2");
/// The settings of the package that installed skill `$1` and the package's version, in one
/// statement (a claim's path).
pub(crate) const SETTINGS_OF_SKILL: &str = "SELECT ps.package_key, ps.schema, ps.schema_revision, ps.\"values\", \
     ps.values_revision, ps.updated_at, ps.updated_by, pi.version AS package_version FROM package_objects po \
     JOIN package_settings ps ON ps.package_key = po.package_key \
     JOIN package_installs pi ON pi.key = po.package_key \
     WHERE po.kind = 'Skill' AND po.object_key = $1";

pub(crate) trait KeyReads {
    fn credential_by_hash<'a>(&'a self, hash: &'a str) -> BoxFuture<'a, Result<Credential>>;
    fn skill_by_id<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<SkillEntry>>;
    fn skill_by_version<'a>(&'a self, name: &'a str, version: &'a str) -> BoxFuture<'a, Result<SkillEntry>>;
    fn settings_of_skill<'a>(&'a self, name: &'a str) -> BoxFuture<'a, Result<Option<(PackageSettings, String)>>>;
}

impl KeyReads for PgStore {
    fn credential_by_hash<'a>(&'a self, hash: &'a str) -> BoxFuture<'a, Result<Credential>> {
        Box::pin(async move {
            if let Some(kept) = self.keys.credential(hash) {
                return Ok(kept);
            }
            let generation = self.keys.generation();
            let rows = sqlx::query(CREDENTIAL).bind(hash).fetch_all(self.read()).await?;
            let Some(first) = rows.first() else { return Err(sqlx::Error::RowNotFound.into()) };
            let mut grants = Vec::new();
            for row in &rows {
                if row.try_get::<Option<String>, _>("grant_id")?.is_some() {
                    grants.push(Grant::from_row(row)?);
                }
            }
            let allowance: Option<Json<ExecutorAllowance>> = first.try_get("executor_allowance")?;
            let credential = Credential {
                token: AccessToken::from_row(first)?,
                principal: Principal::from_row(first)?,
                grants,
                allowance: allowance.map(|Json(allowance)| allowance),
                operator_disabled: first.try_get("operator_disabled")?,
                issuer_disabled: first.try_get("issuer_disabled")?,
            };
            self.keys.keep_credential(generation, hash, &credential);
            Ok(credential)
        })
    }

    fn skill_by_id<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<SkillEntry>> {
        Box::pin(async move {
            if let Some(kept) = self.keys.skill(id) {
                return Ok(kept);
            }
            let generation = self.keys.generation();
            let entry: SkillEntry = sqlx::query_as(SKILL_BY_ID).bind(id).fetch_one(self.read()).await?;
            self.keys.keep_skill(generation, &entry);
            Ok(entry)
        })
    }

    fn skill_by_version<'a>(&'a self, name: &'a str, version: &'a str) -> BoxFuture<'a, Result<SkillEntry>> {
        Box::pin(async move {
            if let Some(kept) = self.keys.version(name, version) {
                return Ok(kept);
            }
            let generation = self.keys.generation();
            let entry: SkillEntry =
                sqlx::query_as(SKILL_BY_VERSION).bind(name).bind(version).fetch_one(self.read()).await?;
            self.keys.keep_skill(generation, &entry);
            Ok(entry)
        })
    }

    fn settings_of_skill<'a>(&'a self, name: &'a str) -> BoxFuture<'a, Result<Option<(PackageSettings, String)>>> {
        Box::pin(async move {
            if let Some(kept) = self.keys.settings(name) {
                return Ok(kept);
            }
            let generation = self.keys.generation();
            let row = sqlx::query(SETTINGS_OF_SKILL).bind(name).fetch_optional(self.read()).await?;
            let settings = match row {
                Some(row) => Some((PackageSettings::from_row(&row)?, row.try_get("package_version")?)),
                None => None,
            };
            self.keys.keep_settings(generation, name, &settings);
            Ok(settings)
        })
    }
}
