//! The reads by key every request makes, on SQLite: on the caller's thread, one statement each.

use futures::future::BoxFuture;
use rusqlite::Row;

use super::{CREDENTIAL, KeyReads, SETTINGS_OF_SKILL, SKILL_BY_ID, SKILL_BY_VERSION};
use crate::backend::SqliteStore;
use crate::error::{ErrorKind, Result, StoreError};
use crate::lite::rows::{get_json, get_maybe_json, get_maybe_time, get_time, one, rows, text};
use crate::records::{
    AccessToken, Credential, ExecutorAllowance, Grant, PackageInstall, PackageSettings, Principal, SkillEntry,
    SkillRecord,
};
use crate::states;

/// A row of `select_skill!`: the version's columns, then the joined package's (null when no
/// package installed the name).
fn skill_entry(row: &Row<'_>) -> rusqlite::Result<SkillEntry> {
    let skill = SkillRecord {
        id: row.get(0)?,
        name: row.get(1)?,
        version: row.get(2)?,
        description: row.get(3)?,
        protocol: row.get(4)?,
        config: get_json(row, 5)?,
        input_schema: get_maybe_json(row, 6)?,
        output_schema: get_maybe_json(row, 7)?,
        side_effects: states::get_maybe(row, 8)?,
        risk_level: states::get_maybe(row, 9)?,
        contract: states::get_document(row, 10)?,
        composition: states::get_document(row, 11)?,
        status: states::get(row, 12)?,
        row_version: row.get(13)?,
        created_at: get_time(row, 14)?,
        updated_at: get_time(row, 15)?,
    };
    let package = match row.get::<_, Option<String>>(16)? {
        None => None,
        Some(key) => Some(PackageInstall {
            key,
            version: row.get::<_, Option<String>>(17)?.unwrap_or_default(),
            install_hash: row.get::<_, Option<String>>(18)?.unwrap_or_default(),
            installed_at: get_maybe_time(row, 19)?.unwrap_or_default(),
            installed_by: row.get(20)?,
        }),
    };
    Ok(SkillEntry { skill, package })
}

/// A row of [`CREDENTIAL`]: the token (0–6), its principal (7–12), one grant or nulls (13–16),
/// the principal's executor allowance (17), the token's operator (18) and issuer (19), whether
/// the operator is disabled (20), whether the issuer is (21).
type CredentialRow = (AccessToken, Principal, Option<Grant>, Option<ExecutorAllowance>, [bool; 2]);

fn credential_row(row: &Row<'_>) -> rusqlite::Result<CredentialRow> {
    let token = AccessToken {
        id: row.get(0)?,
        principal_id: row.get(1)?,
        token_hash: row.get(2)?,
        label: row.get(3)?,
        created_at: get_time(row, 4)?,
        expires_at: get_maybe_time(row, 5)?,
        revoked_at: get_maybe_time(row, 6)?,
        operated_by: row.get(18)?,
        issued_by: row.get(19)?,
    };
    let principal = Principal {
        id: row.get(7)?,
        kind: states::get(row, 8)?,
        name: row.get(9)?,
        display_name: row.get(10)?,
        created_at: get_time(row, 11)?,
        disabled_at: get_maybe_time(row, 12)?,
    };
    let grant = match row.get::<_, Option<String>>(13)? {
        None => None,
        Some(id) => Some(Grant {
            id,
            principal_id: principal.id.clone(),
            workspace_id: row.get(14)?,
            permission: row.get(15)?,
            created_at: get_time(row, 16)?,
        }),
    };
    let allowance = match row.get::<_, Option<String>>(17)? {
        None => None,
        Some(text) => Some(serde_json::from_str(&text).map_err(|error| {
            rusqlite::Error::FromSqlConversionFailure(
                17,
                rusqlite::types::Type::Text,
                format!("principals.executor_allowance is not an allowance: {error}").into(),
            )
        })?),
    };
    Ok((token, principal, grant, allowance, [row.get(20)?, row.get(21)?]))
}

fn settings_row(row: &Row<'_>) -> rusqlite::Result<(PackageSettings, String)> {
    let settings = PackageSettings {
        package_key: row.get(0)?,
        schema: get_json(row, 1)?,
        schema_revision: row.get(2)?,
        values: get_json(row, 3)?,
        values_revision: row.get(4)?,
        updated_at: get_time(row, 5)?,
        updated_by: row.get(6)?,
    };
    Ok((settings, row.get(7)?))
}

impl KeyReads for SqliteStore {
    fn credential_by_hash<'a>(&'a self, hash: &'a str) -> BoxFuture<'a, Result<Credential>> {
        let found = self.lite.read(|connection| rows(connection, CREDENTIAL, &[text(hash)], credential_row));
        Box::pin(async move {
            let mut found = found?.into_iter();
            let Some((token, principal, first, allowance, [operator_disabled, issuer_disabled])) = found.next() else {
                return Err(StoreError::new(ErrorKind::NotFound, "no token with this hash"));
            };
            let grants = first.into_iter().chain(found.filter_map(|(_, _, grant, _, _)| grant)).collect();
            Ok(Credential { token, principal, grants, allowance, operator_disabled, issuer_disabled })
        })
    }

    fn skill_by_id<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<SkillEntry>> {
        let found = self.lite.read(|connection| one(connection, SKILL_BY_ID, &[text(id)], skill_entry));
        Box::pin(async move { found })
    }

    fn skill_by_version<'a>(&'a self, name: &'a str, version: &'a str) -> BoxFuture<'a, Result<SkillEntry>> {
        let found =
            self.lite.read(|connection| one(connection, SKILL_BY_VERSION, &[text(name), text(version)], skill_entry));
        Box::pin(async move { found })
    }

    fn settings_of_skill<'a>(&'a self, name: &'a str) -> BoxFuture<'a, Result<Option<(PackageSettings, String)>>> {
        let found = self.lite.read(|connection| rows(connection, SETTINGS_OF_SKILL, &[text(name)], settings_row));
        Box::pin(async move { Ok(found?.into_iter().next()) })
    }
}
