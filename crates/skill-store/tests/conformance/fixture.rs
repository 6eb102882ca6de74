//! A fresh database per case, with a raw connection for the SQL a case runs around the store.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use chrono::Utc;
use serde_json::{Value, json};
use skill_api::{PrincipalKind, SkillStatus};
use skill_contract::{RiskLevel, SideEffects};
use skill_store::records::{Event, Principal, SkillRecord};
use skill_store::{PgStore, SqliteStore, Store, StoreOptions};
use sqlx::{AssertSqlSafe, PgPool, SqlitePool};

pub(crate) enum Raw {
    Sqlite(SqlitePool),
    Postgres(PgPool),
}

impl Raw {
    /// Runs one statement outside the store, as an operator with a SQL shell would.
    pub(crate) async fn execute(&self, sql: &str) -> Result<u64, sqlx::Error> {
        let sql = AssertSqlSafe(sql.to_owned());
        match self {
            Raw::Sqlite(pool) => sqlx::query(sql).execute(pool).await.map(|done| done.rows_affected()),
            Raw::Postgres(pool) => sqlx::query(sql).execute(pool).await.map(|done| done.rows_affected()),
        }
    }
}

impl Raw {
    /// Runs several statements in one go on one connection (what a `PRAGMA` before them needs).
    pub(crate) async fn batch(&self, sql: &str) -> Result<(), sqlx::Error> {
        let sql = AssertSqlSafe(sql.to_owned());
        match self {
            Raw::Sqlite(pool) => sqlx::raw_sql(sql).execute(pool).await.map(drop),
            Raw::Postgres(pool) => sqlx::raw_sql(sql).execute(pool).await.map(drop),
        }
    }
}

pub(crate) struct Db {
    pub(crate) store: Arc<dyn Store>,
    pub(crate) raw: Raw,
    /// Opens the same database again (migrations run again).
    pub(crate) target: String,
}

static NEXT: AtomicU32 = AtomicU32::new(0);

fn unique(prefix: &str) -> String {
    format!("{prefix}_{}_{}", std::process::id(), NEXT.fetch_add(1, Ordering::Relaxed))
}

pub(crate) async fn sqlite() -> Db {
    let folder = std::env::temp_dir().join(unique("skill_store"));
    let store = SqliteStore::open(&folder.join("core.db"), &StoreOptions::default()).await.expect("SQLite opens");
    let raw = SqlitePool::connect(&format!("sqlite://{}", folder.join("core.db").display())).await.expect("raw");
    Db { store: Arc::new(store), raw: Raw::Sqlite(raw), target: folder.display().to_string() }
}

pub(crate) async fn postgres() -> Db {
    let admin_url = std::env::var("SKILL_TEST_POSTGRES_URL").expect(
        "SKILL_TEST_POSTGRES_URL names a PostgreSQL superuser URL; `cargo xtask test -p skill-store` starts a server and sets it",
    );
    let admin = PgPool::connect(&admin_url).await.expect("the test PostgreSQL answers");
    let name = unique("skill_store");
    sqlx::query(AssertSqlSafe(format!("CREATE DATABASE {name}"))).execute(&admin).await.expect("create database");
    admin.close().await;
    let (base, _) = admin_url.rsplit_once('/').expect("a URL with a database");
    let url = format!("{base}/{name}");
    let store = PgStore::open(&url, &StoreOptions::default()).await.expect("PostgreSQL opens");
    let raw = PgPool::connect(&url).await.expect("raw");
    Db { store: Arc::new(store), raw: Raw::Postgres(raw), target: url }
}

pub(crate) fn id() -> String {
    uuid::Uuid::now_v7().to_string()
}

pub(crate) fn event(kind: &str, subject: &str) -> Event {
    Event {
        seq: 0,
        id: id(),
        kind: kind.to_owned(),
        subject: subject.to_owned(),
        data: json!({"note": kind}),
        actor_id: None,
        request_id: Some("req-1".to_owned()),
        created_at: Utc::now(),
    }
}

/// A call's error: `code`, `message`, whether it is `retryable`.
pub(crate) fn failure(code: &str, message: &str, retryable: bool) -> skill_api::ReportedError {
    skill_api::ReportedError { code: code.to_owned(), message: message.to_owned(), retryable, details: None }
}

pub(crate) fn principal(name: &str) -> Principal {
    Principal {
        id: id(),
        kind: PrincipalKind::Person,
        name: name.to_owned(),
        display_name: format!("{name} (display)"),
        created_at: Utc::now(),
        disabled_at: None,
    }
}

pub(crate) fn contract(endpoint: &str) -> skill_contract::Contract {
    skill_contract::Contract::from_stored(&contract_json(endpoint)).expect("a stored contract")
}

/// A leaf's stored contract at `endpoint`, as the JSON it is stored as.
pub(crate) fn contract_json(endpoint: &str) -> Value {
    json!({
        "inputs": {"type": "object"}, "outputs": {"type": "object"},
        "timeoutSeconds": 60, "retryPolicy": {"maxAttempts": 1, "backoffSeconds": 0},
        "idempotency": "none", "requiredPermissions": [], "preconditions": [], "postconditions": [],
        "costModel": null,
        "implementation": {"protocol": "http", "endpoint": endpoint, "auth": null, "entrypoint": null}
    })
}

/// A leaf version with an `http` contract.
pub(crate) fn leaf(name: &str, version: &str) -> SkillRecord {
    let now = Utc::now();
    SkillRecord {
        id: id(),
        name: name.to_owned(),
        version: version.to_owned(),
        description: format!("{name} does one thing"),
        protocol: Some("http".to_owned()),
        config: json!({}),
        input_schema: Some(json!({"type": "object"})),
        output_schema: Some(json!({"type": "object"})),
        side_effects: Some(SideEffects::ExternalRead),
        risk_level: Some(RiskLevel::Low),
        contract: Some(contract("https://skills.example/a")),
        composition: None,
        status: SkillStatus::Active,
        row_version: 1,
        created_at: now,
        updated_at: now,
    }
}

/// A catalog row: a protocol, no contract.
pub(crate) fn catalog_row(name: &str, version: &str) -> SkillRecord {
    SkillRecord {
        protocol: Some("custom".to_owned()),
        side_effects: None,
        risk_level: None,
        contract: None,
        input_schema: None,
        output_schema: None,
        ..leaf(name, version)
    }
}

pub(crate) async fn publish(db: &Db, skill: &SkillRecord) {
    db.store.insert_skill(skill, &event("skill.registered", &format!("skill:{}", skill.id))).await.expect("published");
}
