//! The database's own guards: what no code path — the store's or an operator's SQL — can do.

use serde_json::json;
use skill_contract::codes::Code;
use skill_store::ErrorKind;
use skill_store::records::SkillChange;

use crate::fixture::{Db, Raw, catalog_row, contract, contract_json, event, leaf, publish};

/// Runs the SQLite or the PostgreSQL spelling of one statement and returns the refusal's text.
async fn refused(db: &Db, sqlite: &str, postgres: &str) -> String {
    let sql = match db.raw {
        Raw::Sqlite(_) => sqlite,
        Raw::Postgres(_) => postgres,
    };
    match db.raw.execute(sql).await {
        Ok(rows) => panic!("`{sql}` changed {rows} rows"),
        Err(error) => error.to_string(),
    }
}

pub(crate) async fn a_published_contract_cannot_change_even_by_sql(db: Db) {
    let skill = leaf("claim.send_reply", "1");
    publish(&db, &skill).await;
    let id = &skill.id;
    let error = refused(
        &db,
        &format!(
            "UPDATE skills SET contract = json_set(contract, '$.timeoutSeconds', 5), row_version = row_version + 1 \
             WHERE id = '{id}'"
        ),
        &format!(
            "UPDATE skills SET contract = jsonb_set(contract, '{{timeoutSeconds}}', '5'), \
             row_version = row_version + 1 WHERE id = '{id}'"
        ),
    )
    .await;
    assert!(error.contains("skill_version_immutable"), "{error}");
    for column in ["risk_level = 'high'", "side_effects = 'none'", "name = 'x'", "version = '9'", "protocol = 'mcp'"] {
        let sql = format!("UPDATE skills SET {column}, row_version = row_version + 1 WHERE id = '{id}'");
        let error = refused(&db, &sql, &sql).await;
        assert!(error.contains("skill_version_immutable"), "{column}: {error}");
    }
    let sql = format!("UPDATE skills SET contract = NULL, row_version = row_version + 1 WHERE id = '{id}'");
    assert!(refused(&db, &sql, &sql).await.contains("skill_version_immutable"), "a contract never disappears");
    let sql = format!("UPDATE skills SET description = 'quiet' WHERE id = '{id}'");
    assert!(refused(&db, &sql, &sql).await.contains("row_version_required"), "every change moves the row version");

    // Through the store: the same refusal, as a neutral kind.
    let mut changed = contract_json("https://skills.example/a");
    changed["timeoutSeconds"] = json!(5);
    let changed = skill_contract::Contract::from_stored(&changed).expect("a contract");
    let change = SkillChange { contract: Some(changed), ..SkillChange::from_record(&skill) };
    let error = db.store.update_skill(id, 1, &change, &event("skill.updated", "s")).await.expect_err("refused");
    assert_eq!(error.kind(), ErrorKind::Refused(Code::SkillVersionImmutable), "{error}");
    let read = db.store.skill(id).await.expect("read").skill;
    assert_eq!((read.contract, read.row_version), (skill.contract.clone(), 1), "nothing changed");
}

pub(crate) async fn only_the_endpoint_of_a_contract_moves_and_stays_a_string(db: Db) {
    let skill = leaf("claim.send_reply", "1");
    publish(&db, &skill).await;
    let moved =
        SkillChange { contract: Some(contract("https://skills.example/b")), ..SkillChange::from_record(&skill) };
    let read = db.store.update_skill(&skill.id, 1, &moved, &event("skill.updated", "s")).await.expect("moved");
    assert_eq!(read.contract.as_ref().and_then(|c| c.implementation().endpoint()), Some("https://skills.example/b"));
    // A stored contract is a type: an endpoint that is not a string cannot be written through the
    // store; the database refuses it from raw SQL too.
    let id = &skill.id;
    let error = refused(
        &db,
        &format!(
            "UPDATE skills SET contract = json_set(contract, '$.implementation.endpoint', NULL), \
             row_version = row_version + 1 WHERE id = '{id}'"
        ),
        &format!(
            "UPDATE skills SET contract = jsonb_set(contract, '{{implementation,endpoint}}', 'null'), \
             row_version = row_version + 1 WHERE id = '{id}'"
        ),
    )
    .await;
    assert!(error.contains("skill_version_immutable"), "{error}");
}

pub(crate) async fn status_moves_only_forward(db: Db) {
    let skill = leaf("claim.classify", "1");
    publish(&db, &skill).await;
    let to = |status: &str, from: &skill_store::records::SkillRecord| SkillChange {
        status: status.parse().expect("a state"),
        ..SkillChange::from_record(from)
    };
    let deprecated = db
        .store
        .update_skill(&skill.id, 1, &to("deprecated", &skill), &event("skill.updated", "s"))
        .await
        .expect("forward");
    let error = db
        .store
        .update_skill(&skill.id, 2, &to("active", &deprecated), &event("skill.updated", "s"))
        .await
        .expect_err("refused");
    assert_eq!(error.kind(), ErrorKind::Refused(Code::InvalidStatusTransition), "{error}");
    let disabled = db
        .store
        .update_skill(&skill.id, 2, &to("disabled", &deprecated), &event("skill.updated", "s"))
        .await
        .expect("on");
    for back in ["active", "deprecated"] {
        let error = db
            .store
            .update_skill(&skill.id, 3, &to(back, &disabled), &event("skill.updated", "s"))
            .await
            .expect_err("refused");
        assert_eq!(error.kind(), ErrorKind::Refused(Code::InvalidStatusTransition), "{back}: {error}");
    }
    let sql = format!("UPDATE skills SET status = 'active', row_version = row_version + 1 WHERE id = '{}'", skill.id);
    assert!(refused(&db, &sql, &sql).await.contains("invalid_status_transition"));
}

pub(crate) async fn schemas_freeze_with_a_contract_and_stay_mutable_without(db: Db) {
    let leaf = leaf("claim.classify", "1");
    let row = catalog_row("legacy.tool", "1");
    publish(&db, &leaf).await;
    publish(&db, &row).await;
    let schema = Some(json!({"type": "object", "required": ["x"]}));
    let change = SkillChange { input_schema: schema.clone(), ..SkillChange::from_record(&leaf) };
    let error = db.store.update_skill(&leaf.id, 1, &change, &event("skill.updated", "s")).await.expect_err("refused");
    assert_eq!(error.kind(), ErrorKind::Refused(Code::SkillVersionImmutable), "{error}");
    let change =
        SkillChange { input_schema: schema.clone(), config: json!({"a": 1}), ..SkillChange::from_record(&row) };
    let updated = db.store.update_skill(&row.id, 1, &change, &event("skill.updated", "s")).await.expect("mutable");
    assert_eq!(updated.input_schema, schema);
}

pub(crate) async fn published_versions_and_events_are_never_deleted_or_rewritten(db: Db) {
    let skill = leaf("claim.classify", "1");
    publish(&db, &skill).await;
    let sql = format!("DELETE FROM skills WHERE id = '{}'", skill.id);
    assert!(refused(&db, &sql, &sql).await.contains("skill_version_immutable"));
    let sql = "UPDATE events SET kind = 'skill.forged'";
    assert!(refused(&db, sql, sql).await.contains("events_append_only"));
    let sql = "DELETE FROM events";
    assert!(refused(&db, sql, sql).await.contains("events_append_only"));
    assert_eq!(db.store.events(0, None, 10).await.expect("events").len(), 1);
}

pub(crate) async fn row_shapes_are_checked_by_the_database(db: Db) {
    // A contract without its policy columns, a composite with a protocol (an unknown status is
    // `a_state_the_code_does_not_know_is_refused_when_read`'s).
    let no_policy = skill_store::records::SkillRecord { side_effects: None, ..leaf("a.b", "1") };
    let composite_with_protocol = skill_store::records::SkillRecord {
        contract: None,
        composition: Some(skill_api::Composition { includes: vec!["a.b@1".into()], tools: Vec::new() }),
        ..leaf("a.c", "1")
    };
    let wrong_protocol = skill_store::records::SkillRecord { protocol: Some("mcp".to_owned()), ..leaf("a.e", "1") };
    for (label, skill) in [
        ("no policy", no_policy),
        ("composite with protocol", composite_with_protocol),
        ("protocol differs from the contract", wrong_protocol),
    ] {
        let error = db.store.insert_skill(&skill, &event("skill.registered", "s")).await.expect_err("refused");
        assert_eq!(error.kind(), ErrorKind::Invalid, "{label}: {error}");
    }
    let composite = skill_store::records::SkillRecord {
        protocol: None,
        contract: None,
        side_effects: None,
        risk_level: None,
        input_schema: None,
        output_schema: None,
        composition: Some(skill_api::Composition { includes: vec!["a.b@1".into()], tools: Vec::new() }),
        ..leaf("a.f", "1")
    };
    publish(&db, &composite).await;
    let read = db.store.skill(&composite.id).await.expect("composite").skill;
    assert_eq!(read.composition, composite.composition);
}

pub(crate) async fn signing_keys_are_listed_while_published_and_never_change(db: Db) {
    let now = chrono::Utc::now();
    let key = |kid: &str, age_days: i64, signs_days: i64, published_days: i64| skill_store::records::SigningKey {
        kid: kid.to_owned(),
        algorithm: "ES256".to_owned(),
        private_key: "MIGHAgEAMBMG".to_owned(),
        public_jwk: json!({"kty": "EC", "crv": "P-256", "kid": kid}),
        created_at: now - chrono::Duration::days(age_days),
        signs_until: now - chrono::Duration::days(age_days) + chrono::Duration::days(signs_days),
        published_until: now - chrono::Duration::days(age_days) + chrono::Duration::days(published_days),
    };
    for (kid, age, signs, published) in [("retired", 40, 30, 31), ("older", 29, 30, 31), ("newest", 1, 30, 31)] {
        let written =
            db.store.insert_signing_key(&key(kid, age, signs, published), &event("signing_key.created", kid)).await;
        written.expect("inserted");
    }
    let listed: Vec<String> = db.store.signing_keys(now).await.expect("keys").into_iter().map(|k| k.kid).collect();
    assert_eq!(listed, ["newest", "older"], "newest first, the retired one no longer published");
    let again = db.store.insert_signing_key(&key("newest", 0, 30, 31), &event("signing_key.created", "x")).await;
    assert_eq!(again.expect_err("taken").kind(), skill_store::ErrorKind::Conflict);
    // Signing past its publication would leave tokens no one can verify: the database refuses it.
    let inverted =
        skill_store::records::SigningKey { signs_until: now + chrono::Duration::days(40), ..key("odd", 0, 30, 31) };
    let refused_key = db.store.insert_signing_key(&inverted, &event("signing_key.created", "odd")).await;
    assert_eq!(refused_key.expect_err("checked").kind(), skill_store::ErrorKind::Invalid);
    for sql in ["UPDATE signing_keys SET private_key = 'forged'", "DELETE FROM signing_keys"] {
        assert!(refused(&db, sql, sql).await.contains("signing_key_immutable"), "{sql}");
    }
}

pub(crate) async fn console_sessions_only_end_once(db: Db) {
    let ana = crate::fixture::principal("ana");
    db.store.create_principal(&ana, &event("principal.created", "p")).await.expect("created");
    let now = chrono::Utc::now();
    let session = skill_store::records::ConsoleSession {
        id: crate::fixture::id(),
        secret_hash: "ab".repeat(32),
        token_hash: "cd".repeat(32),
        principal_id: ana.id.clone(),
        csrf: "ef".repeat(16),
        created_at: now,
        expires_at: now + chrono::Duration::hours(12),
        ended_at: None,
    };
    db.store.insert_console_session(&session, &event("console.signed_in", "s")).await.expect("started");
    let read = db.store.console_session(&"ab".repeat(32)).await.expect("found by its secret's hash");
    assert_eq!(read.id, session.id);
    assert_eq!(read.expires_at.timestamp_micros(), session.expires_at.timestamp_micros());
    let unknown = db.store.console_session(&"00".repeat(32)).await.expect_err("none");
    assert_eq!(unknown.kind(), skill_store::ErrorKind::NotFound);
    let again = skill_store::records::ConsoleSession { id: crate::fixture::id(), ..session.clone() };
    let taken = db.store.insert_console_session(&again, &event("console.signed_in", "s")).await;
    assert_eq!(taken.expect_err("one secret, one session").kind(), skill_store::ErrorKind::Conflict);
    let short = skill_store::records::ConsoleSession {
        id: crate::fixture::id(),
        secret_hash: "12".repeat(32),
        expires_at: now,
        ..session.clone()
    };
    let refused_short = db.store.insert_console_session(&short, &event("console.signed_in", "s")).await;
    assert_eq!(refused_short.expect_err("expires after it starts").kind(), skill_store::ErrorKind::Invalid);
    // Only the end moves, once.
    for sql in [
        "UPDATE console_sessions SET expires_at = expires_at",
        "UPDATE console_sessions SET csrf = 'forged-forged-forged-forged-forged'",
        "DELETE FROM console_sessions",
    ] {
        assert!(refused(&db, sql, sql).await.contains("console_session_immutable"), "{sql}");
    }
    let events = db.store.events(0, Some("s"), 100).await.expect("events").len();
    assert!(db.store.end_console_session(&session.id, now, &event("console.signed_out", "s")).await.expect("ended"));
    assert!(!db.store.end_console_session(&session.id, now, &event("console.signed_out", "s")).await.expect("once"));
    assert_eq!(db.store.events(0, Some("s"), 100).await.expect("events").len(), events + 1, "one event for one end");
    assert!(db.store.console_session(&"ab".repeat(32)).await.expect("kept").ended_at.is_some());
    let reopen = "UPDATE console_sessions SET ended_at = NULL";
    assert!(refused(&db, reopen, reopen).await.contains("console_session_immutable"));
}

pub(crate) async fn a_state_the_code_does_not_know_is_refused_when_read(db: Db) {
    let (skill, ana) = crate::calls::setup(&db).await;
    let task = crate::work::task(&db, &ana).await;
    let call = crate::calls::pending(&skill, &ana, "local", "claims.lookup", None);
    crate::calls::insert(&db, &call).await;
    // A basis of a kind the code does not know never gets in (a copy of the call with one is
    // refused; the same copy without a basis goes in).
    let copy = |id: &str, basis: &str| {
        format!(
            "DROP TABLE IF EXISTS copied; CREATE TEMP TABLE copied AS SELECT * FROM skill_invocations WHERE id = '{}'; \
             UPDATE copied SET id = '{id}', idempotency_key = NULL, authorization_basis = {basis}; \
             INSERT INTO skill_invocations SELECT * FROM copied; DROP TABLE copied;",
            call.id
        )
    };
    let foreign = db.raw.batch(&copy(&crate::fixture::id(), r#"'{"kind": "delegation", "stepId": "s"}'"#)).await;
    let refused = foreign.expect_err("a basis of an unknown kind").to_string();
    assert!(refused.contains("basis_unknown"), "{refused}");
    db.raw.batch(&copy(&crate::fixture::id(), "NULL")).await.expect("the same copy without a basis");
    // The database itself keeps a word it does not know out.
    let odd = format!(
        "UPDATE tasks SET status = 'paused', closed_at = created_at, row_version = row_version + 1 WHERE id = '{}'",
        task.id
    );
    assert!(db.raw.execute(&odd).await.is_err(), "an unknown status written");
    // Past its guards (as a damaged or foreign database would be), the row is not read as
    // anything: the error names the table, the column and the word.
    let bypass = match db.raw {
        Raw::Sqlite(_) => "PRAGMA ignore_check_constraints = ON; DROP TRIGGER skill_invocations_lifecycle;",
        Raw::Postgres(_) => {
            "SET session_replication_role = replica; ALTER TABLE tasks DROP CONSTRAINT tasks_status_check; \
             ALTER TABLE skill_invocations DROP CONSTRAINT skill_invocations_status_check;"
        }
    };
    let damage = format!(
        "{bypass} {odd}; UPDATE skill_invocations SET status = 'paused', row_version = row_version + 1 WHERE id = '{}';",
        call.id
    );
    db.raw.batch(&damage).await.expect("the rows damaged");
    let error = db.store.task(&task.id).await.expect_err("an unknown task status");
    let message = error.to_string();
    assert!(message.contains("tasks.status holds `paused`") && message.contains("task status"), "{message}");
    assert!(message.contains("open, done, failed, cancelled"), "what it may hold: {message}");
    let error = db.store.invocation(&call.id).await.expect_err("an unknown call status");
    let message = error.to_string();
    assert!(message.contains("skill_invocations.status holds `paused`"), "{message}");
}

/// Agents: only a person holds `approvals.decide`, an agent's principal is of its kind, an agent keeps
/// its key, principal and kind, and a package links only agents that exist — whatever SQL tries.
pub(crate) async fn agents_keep_their_kind_and_never_decide(db: Db) {
    let mut agent = crate::fixture::principal("desk-bot");
    agent.kind = skill_api::PrincipalKind::Agent;
    db.store.create_principal(&agent, &event("principal.created", "p")).await.expect("principal");
    let person = crate::fixture::principal("desk-person");
    db.store.create_principal(&person, &event("principal.created", "q")).await.expect("person");
    let (a, p) = (&agent.id, &person.id);
    let grant = |principal: &str| {
        format!(
            "INSERT INTO grants (id, principal_id, workspace_id, permission, created_at) \
             VALUES ('g-{principal}', '{principal}', NULL, 'approvals.decide', '2026-01-01T00:00:00Z')"
        )
    };
    let error = refused(&db, &grant(a), &grant(a)).await;
    assert!(error.contains("decider_not_a_person"), "{error}");
    assert_eq!(db.raw.execute(&grant(p)).await.expect("a person may decide"), 1);

    let insert = |key: &str, principal: &str, kind: &str| {
        format!(
            "INSERT INTO agents (key, principal_id, kind, package_key, spec, revision, created_at, updated_at) \
             VALUES ('{key}', '{principal}', '{kind}', NULL, '{{\"identity\": {{\"kind\": \"{kind}\"}}}}', 1, \
             '2026-01-01T00:00:00Z', '2026-01-01T00:00:00Z')"
        )
    };
    let error = refused(&db, &insert("x", a, "executor"), &insert("x", a, "executor")).await;
    assert!(error.contains("agent_principal_conflict"), "a principal of another kind: {error}");
    assert_eq!(db.raw.execute(&insert("desk-bot", a, "agent")).await.expect("an agent"), 1);
    for change in ["kind = 'executor'", "key = 'other'", "revision = 3", &format!("principal_id = '{p}'")] {
        let sql = format!("UPDATE agents SET {change} WHERE key = 'desk-bot'");
        let error = refused(&db, &sql, &sql).await;
        assert!(error.contains("agent_principal_conflict"), "{change}: {error}");
    }
    let sql = "UPDATE agents SET revision = 2 WHERE key = 'desk-bot'";
    assert_eq!(db.raw.execute(sql).await.expect("the revision moves by one"), 1);
    let link = |key: &str| {
        format!("INSERT INTO package_objects (kind, object_key, package_key) VALUES ('Agent', '{key}', 'claims')")
    };
    let error = refused(&db, &link("nobody"), &link("nobody")).await;
    assert!(error.contains("unknown_reference"), "{error}");
}
