//! The catalog's rules through the engine, on an embedded SQLite store (the store's own suite
//! runs every backend).

use skill_api::Code;
use std::sync::Arc;

use serde_json::{Value, json};
use skill_api::{ListQuery, PatchRequest, PublishRequest, SkillKind};
use skill_engine::{Actor, Class, Engine, EngineError, Origin, TokenRequest};

struct World {
    engine: Engine,
    admin: Actor,
    _folder: Folder,
}

struct Folder(std::path::PathBuf);

impl Drop for Folder {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

async fn world() -> World {
    static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let folder = std::env::temp_dir().join(format!("skill-engine-{}-{n}", std::process::id()));
    let store = skill_store::open(folder.to_str().expect("utf-8"), &Default::default()).await.expect("store");
    let engine = Engine::new(Arc::clone(&store));
    let admin = actor(&engine, "admin", &["org.manage"]).await;
    World { engine, admin, _folder: Folder(folder) }
}

async fn actor(engine: &Engine, name: &str, grants: &[&str]) -> Actor {
    let request = TokenRequest {
        principal: name.to_owned(),
        kind: "person".to_owned(),
        grants: grants.iter().map(|g| (*g).to_owned()).collect(),
        label: "test".to_owned(),
        expires_at: None,
    };
    let issued = engine.issue_token(&request, &Origin::default()).await.expect("token");
    engine.authenticate(&issued.token).await.expect("authenticates")
}

fn contract(endpoint: &str) -> Value {
    json!({
        "inputs": {"type": "object", "properties": {"text": {"type": "string"}}},
        "outputs": {"type": "object"},
        "implementation": {"protocol": "http", "endpoint": endpoint}
    })
}

fn leaf(name: &str, version: &str, side_effects: &str) -> PublishRequest {
    PublishRequest {
        name: name.to_owned(),
        version: Some(version.to_owned()),
        description: Some(format!("{name} does one thing")),
        side_effects: Some(side_effects.to_owned()),
        risk_level: Some("low".to_owned()),
        contract: Some(contract("https://skills.example/a")),
        ..PublishRequest::default()
    }
}

fn refused<T: std::fmt::Debug>(result: Result<T, EngineError>) -> EngineError {
    result.expect_err("refused")
}

#[tokio::test]
async fn publishing_normalizes_the_contract_and_takes_policy_and_schemas_from_it() {
    let w = world().await;
    let out = w.engine.publish(&w.admin, &leaf("claim.classify", "1", "none"), Some("req-9")).await.expect("published");
    assert_eq!((out.kind, out.status.as_str(), out.row_version), (SkillKind::Leaf, "active", 1));
    assert_eq!(out.protocol.as_deref(), Some("http"));
    let contract = out.contract.expect("contract").to_normalized_json();
    assert_eq!(contract["timeoutSeconds"], 60, "defaults filled");
    assert_eq!(contract["retryPolicy"], json!({"maxAttempts": 1, "backoffSeconds": 0}));
    assert_eq!(out.input_schema, Some(contract["inputs"].clone()));
    let events = w.engine.store().events(0, Some(&format!("skill:{}", out.id)), 10).await.expect("events");
    assert_eq!(events[0].kind, "skill.registered");
    assert_eq!(events[0].data["invocable"], true);
    assert_eq!(events[0].request_id.as_deref(), Some("req-9"));
    assert_eq!(events[0].actor_id.as_deref(), Some(w.admin.id()));
}

#[tokio::test]
async fn publication_errors_name_the_field_as_the_request_names_it() {
    let w = world().await;
    let cases: Vec<(PublishRequest, &str, &str)> = vec![
        (PublishRequest { side_effects: None, ..leaf("a.b", "1", "none") }, "invalid_skill_contract", "sideEffects"),
        (
            PublishRequest {
                contract: Some(
                    json!({"inputs": {"type": "object"}, "outputs": {"type": "object"}, "timeoutSeconds": 0,
                    "implementation": {"protocol": "http", "endpoint": "https://x"}}),
                ),
                ..leaf("a.b", "1", "none")
            },
            "invalid_skill_contract",
            "timeoutSeconds",
        ),
        (
            PublishRequest {
                contract: Some(json!({"inputs": {"type": "object"}, "outputs": {"type": "object"},
                    "retryPolicy": {"maxAttempts": 3}, "implementation": {"protocol": "http", "endpoint": "https://x"}})),
                ..leaf("a.b", "1", "external_write")
            },
            "invalid_skill_contract",
            "retryPolicy.maxAttempts",
        ),
        (
            PublishRequest { protocol: Some("mcp".into()), ..leaf("a.b", "1", "none") },
            "invalid_skill_contract",
            "protocol",
        ),
        (
            PublishRequest { input_schema: Some(json!({"type": "object"})), ..leaf("a.b", "1", "none") },
            "invalid_skill_contract",
            "inputSchema",
        ),
        (PublishRequest { name: "Bad Name".into(), ..leaf("a.b", "1", "none") }, "invalid_skill_document", "name"),
        (
            PublishRequest {
                contract: Some(json!({"inputs": {"type": "object"}, "outputs": {"type": "object"},
                    "preconditions": ["x > 1"], "implementation": {"protocol": "http", "endpoint": "https://x"}})),
                ..leaf("a.b", "1", "none")
            },
            "unsupported_skill_condition",
            "preconditions",
        ),
    ];
    for (request, code, field) in cases {
        let error = refused(w.engine.publish(&w.admin, &request, None).await);
        assert_eq!((error.class, error.code.as_str()), (Class::Invalid, code), "{field}: {error}");
        assert_eq!(error.details["field"], field, "{error}");
    }
    let error = refused(
        w.engine.publish(&w.admin, &PublishRequest { name: "legacy.tool".into(), ..Default::default() }, None).await,
    );
    assert_eq!(error.code, Code::InvalidProtocol);
    assert!(w.engine.store().skills(&Default::default()).await.expect("list").is_empty(), "nothing was published");

    w.engine.publish(&w.admin, &leaf("a.b", "1", "none"), None).await.expect("first");
    let error = refused(w.engine.publish(&w.admin, &leaf("a.b", "1", "none"), None).await);
    assert_eq!((error.class, error.code.as_str()), (Class::Conflict, "skill_exists"));
    assert_eq!((error.details["name"].clone(), error.details["version"].clone()), (json!("a.b"), json!("1")));

    let reader = actor(&w.engine, "reader", &["org.read"]).await;
    let error = refused(w.engine.publish(&reader, &leaf("a.c", "1", "none"), None).await);
    assert_eq!((error.class, error.code.as_str()), (Class::Forbidden, "permission_denied"));
}

#[tokio::test]
async fn references_resolve_by_id_pin_or_newest_and_config_needs_org_read() {
    let w = world().await;
    let mut first = leaf("claim.reply", "1", "none");
    first.config = Some(json!({"region": "eu"}));
    let v1 = w.engine.publish(&w.admin, &first, None).await.expect("v1");
    let v2 = w.engine.publish(&w.admin, &leaf("claim.reply", "2", "none"), None).await.expect("v2");
    assert_eq!(w.engine.skill(&w.admin, &v1.id).await.expect("by id").version, "1");
    assert_eq!(w.engine.skill(&w.admin, "claim.reply@1").await.expect("pinned").id, v1.id);
    assert_eq!(w.engine.skill(&w.admin, "claim.reply").await.expect("newest").id, v2.id);
    let error = refused(w.engine.skill(&w.admin, "claim.reply@7").await);
    assert_eq!((error.class, error.code.as_str()), (Class::NotFound, "not_found"));

    let invoker = actor(&w.engine, "bot", &["skills.invoke"]).await;
    assert_eq!(w.engine.skill(&invoker, "claim.reply@1").await.expect("readable").config, json!({}));
    assert_eq!(w.engine.skill(&w.admin, "claim.reply@1").await.expect("readable").config, json!({"region": "eu"}));
    let nobody = actor(&w.engine, "nobody", &[]).await;
    assert_eq!(refused(w.engine.skill(&nobody, "claim.reply@1").await).code, Code::PermissionDenied);
    assert_eq!(refused(w.engine.skills(&invoker, &ListQuery::default()).await).code, Code::PermissionDenied);
}

#[tokio::test]
async fn listings_page_with_a_cursor() {
    let w = world().await;
    for version in 1..=5 {
        w.engine.publish(&w.admin, &leaf("a.b", &version.to_string(), "none"), None).await.expect("published");
    }
    let mut versions = Vec::new();
    let mut cursor = None;
    loop {
        let query = ListQuery { limit: Some(2), cursor: cursor.clone(), ..ListQuery::default() };
        let page = w.engine.skills(&w.admin, &query).await.expect("page");
        versions.extend(page.items.iter().map(|s| s.version.clone()));
        match page.next_cursor {
            Some(next) => cursor = Some(next),
            None => break,
        }
    }
    assert_eq!(versions, ["1", "2", "3", "4", "5"]);
    let error = refused(w.engine.skills(&w.admin, &ListQuery { limit: Some(500), ..ListQuery::default() }).await);
    assert_eq!((error.class, error.code.as_str()), (Class::BadRequest, "invalid_request"));
    let error =
        refused(w.engine.skills(&w.admin, &ListQuery { status: Some("paused".into()), ..ListQuery::default() }).await);
    assert_eq!(error.code, Code::InvalidStatus);
}

#[tokio::test]
async fn patches_need_the_current_etag_and_change_only_what_may_change() {
    let w = world().await;
    let out = w.engine.publish(&w.admin, &leaf("claim.send", "1", "external_write"), None).await.expect("published");
    let describe = PatchRequest { description: Some("Sends the reply.".into()), ..PatchRequest::default() };
    let code = |result: Result<skill_api::SkillOut, EngineError>| refused(result).code.as_str();
    assert_eq!(code(w.engine.patch(&w.admin, &out.id, None, &describe, None).await), "if_match_required");
    assert_eq!(code(w.engine.patch(&w.admin, &out.id, Some("7"), &describe, None).await), "invalid_if_match");
    assert_eq!(code(w.engine.patch(&w.admin, &out.id, Some("\"skill-2\""), &describe, None).await), "version_conflict");
    let patched = w.engine.patch(&w.admin, &out.id, Some("\"skill-1\""), &describe, None).await.expect("patched");
    assert_eq!((patched.row_version, patched.description.as_str()), (2, "Sends the reply."));
    let error = refused(w.engine.patch(&w.admin, &out.id, Some("\"skill-1\""), &describe, None).await);
    assert_eq!(
        (error.code.as_str(), error.details["expectedVersion"].clone(), error.details["currentVersion"].clone()),
        ("version_conflict", json!(1), json!(2))
    );
    assert_eq!(code(w.engine.patch(&w.admin, &out.id, Some("\"skill-2\""), &describe, None).await), "empty_update");

    let moved = PatchRequest { endpoint: Some("https://skills.example/b".into()), ..PatchRequest::default() };
    let patched = w.engine.patch(&w.admin, &out.id, Some("\"skill-2\""), &moved, None).await.expect("moved");
    assert_eq!(patched.contract.expect("contract").implementation().endpoint(), Some("https://skills.example/b"));
    let events = w.engine.store().events(0, Some(&format!("skill:{}", out.id)), 10).await.expect("events");
    assert_eq!(events[2].data["changedFields"], json!(["endpoint"]));
    assert_eq!(
        events[2].data["endpoint"],
        json!({"from": "https://skills.example/a", "to": "https://skills.example/b"})
    );

    let bad_endpoint = PatchRequest { endpoint: Some("ftp://x".into()), ..PatchRequest::default() };
    let error = refused(w.engine.patch(&w.admin, &out.id, Some("\"skill-3\""), &bad_endpoint, None).await);
    assert_eq!(
        (error.code.as_str(), error.details["field"].clone()),
        ("invalid_skill_contract", json!("implementation.endpoint"))
    );
    let schema =
        PatchRequest { input_schema: Some(json!({"type": "object", "required": ["x"]})), ..PatchRequest::default() };
    let error = refused(w.engine.patch(&w.admin, &out.id, Some("\"skill-3\""), &schema, None).await);
    assert_eq!((error.class, error.code.as_str()), (Class::Conflict, "skill_version_immutable"));
    assert_eq!(error.details["fields"], json!(["inputSchema"]));

    let disable = PatchRequest { status: Some("disabled".into()), ..PatchRequest::default() };
    w.engine.patch(&w.admin, &out.id, Some("\"skill-3\""), &disable, None).await.expect("disabled");
    let back = PatchRequest { status: Some("active".into()), ..PatchRequest::default() };
    let error = refused(w.engine.patch(&w.admin, &out.id, Some("\"skill-4\""), &back, None).await);
    assert_eq!(
        (error.code.as_str(), error.details["from"].clone(), error.details["to"].clone()),
        ("invalid_status_transition", json!("disabled"), json!("active"))
    );
    let odd = PatchRequest { status: Some("paused".into()), ..PatchRequest::default() };
    assert_eq!(code(w.engine.patch(&w.admin, &out.id, Some("\"skill-4\""), &odd, None).await), "invalid_status");
}

#[tokio::test]
async fn endpoints_move_only_on_contracts_that_have_one() {
    let w = world().await;
    let local = PublishRequest {
        contract: Some(json!({"inputs": {"type": "object"}, "outputs": {"type": "object"},
            "implementation": {"protocol": "local", "entrypoint": "claims.skills:classify"}})),
        ..leaf("claim.classify", "1", "none")
    };
    let local = w.engine.publish(&w.admin, &local, None).await.expect("local");
    let row =
        PublishRequest { name: "legacy.tool".into(), protocol: Some("custom".into()), ..PublishRequest::default() };
    let row = w.engine.publish(&w.admin, &row, None).await.expect("catalog row");
    assert_eq!((row.kind, row.version.as_str()), (SkillKind::Catalog, "1.0.0"));
    let moved = PatchRequest { endpoint: Some("https://x".into()), ..PatchRequest::default() };
    let error = refused(w.engine.patch(&w.admin, &local.id, Some("\"skill-1\""), &moved, None).await);
    assert_eq!((error.class, error.code.as_str()), (Class::Invalid, "invalid_skill_contract"));
    let error = refused(w.engine.patch(&w.admin, &row.id, Some("\"skill-1\""), &moved, None).await);
    assert_eq!(
        (error.class, error.code.as_str(), error.details["reason"].clone()),
        (Class::Conflict, "skill_not_invocable", json!("no_contract"))
    );
    // A catalog row's schemas are its own to change.
    let schema = PatchRequest { input_schema: Some(json!({"type": "object"})), ..PatchRequest::default() };
    let patched = w.engine.patch(&w.admin, &row.id, Some("\"skill-1\""), &schema, None).await.expect("mutable");
    assert_eq!(patched.input_schema, Some(json!({"type": "object"})));
}

#[tokio::test]
async fn composites_resolve_at_publication_and_describe_themselves() {
    let w = world().await;
    w.engine.publish(&w.admin, &leaf("claim.classify", "1", "none"), None).await.expect("reader");
    w.engine.publish(&w.admin, &leaf("claim.send", "1", "external_write"), None).await.expect("writer");
    let composite = |name: &str, includes: Value| PublishRequest {
        name: name.to_owned(),
        version: Some("1".into()),
        description: Some("claims desk".into()),
        includes: Some(includes),
        ..PublishRequest::default()
    };
    let desk =
        w.engine.publish(&w.admin, &composite("claims.desk", json!(["claim.classify@1", "claim.send@1"])), None).await;
    let desk = desk.expect("composite");
    assert_eq!((desk.kind, desk.protocol.clone()), (SkillKind::Composite, None));
    let metadata = w.engine.metadata(&w.admin, "claims.desk@1").await.expect("metadata");
    assert_eq!((metadata.metadata.writes(), metadata.metadata.read_only()), (true, false));
    assert_eq!((metadata.metadata.tool_count(), metadata.kind), (2, SkillKind::Composite));
    let definition = w.engine.definition(&w.admin, "claims.desk@1").await.expect("definition");
    let tools: Vec<&str> = definition.resolved_tools().iter().map(|t| t.tool().name()).collect();
    assert_eq!(tools.len(), 2, "{definition:?}");

    let error =
        refused(w.engine.publish(&w.admin, &composite("claims.broken", json!(["claim.missing@1"])), None).await);
    assert_eq!((error.class, error.code.as_str()), (Class::Invalid, "resolution_failure"), "{error}");
    let error = refused(w.engine.publish(&w.admin, &composite("claims.empty", json!([])), None).await);
    assert_eq!(error.code, Code::InvalidSkillDocument);

    let leaf_metadata = w.engine.metadata(&w.admin, "claim.classify@1").await.expect("leaf metadata");
    assert!(leaf_metadata.metadata.read_only());
    let page = w.engine.catalogue(&w.admin, None, None).await.expect("catalogue");
    let names: Vec<&str> = page.items.iter().map(|m| m.metadata.name().as_str()).collect();
    assert_eq!(names, ["claim.classify", "claim.send", "claims.desk"]);
}

#[tokio::test]
async fn assignments_refuse_disabled_versions_and_tokens_stop_when_revoked() {
    let w = world().await;
    let bot = actor(&w.engine, "bot", &["skills.invoke"]).await;
    let out = w.engine.publish(&w.admin, &leaf("claim.classify", "1", "none"), None).await.expect("published");
    let created = w.engine.assign(&w.admin, bot.id(), "claim.classify@1", None, false, None).await.expect("assigned");
    assert_eq!(created, skill_store::records::AssignOutcome::Created);
    let again = w.engine.assign(&w.admin, bot.id(), "claim.classify@1", None, false, None).await.expect("again");
    assert_eq!(again, skill_store::records::AssignOutcome::Unchanged);
    let held = w.engine.assigned(&bot, bot.id()).await.expect("own assignments");
    assert_eq!(held[0].name, "claim.classify");
    let disable = PatchRequest { status: Some("disabled".into()), ..PatchRequest::default() };
    w.engine.patch(&w.admin, &out.id, Some("\"skill-1\""), &disable, None).await.expect("disabled");
    let other = actor(&w.engine, "other", &[]).await;
    let error = refused(w.engine.assign(&w.admin, other.id(), "claim.classify@1", None, false, None).await);
    assert_eq!((error.class, error.code.as_str()), (Class::Invalid, "skill_disabled"));
    assert_eq!(
        refused(w.engine.assign(&w.admin, "no-such-principal", &out.id, None, false, None).await).code,
        Code::NotFound
    );

    let request = TokenRequest {
        principal: "ops".into(),
        kind: "person".into(),
        grants: vec!["org.read".into()],
        label: "cli".into(),
        expires_at: None,
    };
    let issued = w.engine.issue_token(&request, &Origin::default()).await.expect("issued");
    assert!(w.engine.authenticate(&issued.token).await.expect("valid").can("org.read"));
    w.engine.revoke_token(&issued.record.id, &Origin::default()).await.expect("revoked");
    let error = refused(w.engine.authenticate(&issued.token).await);
    assert_eq!((error.class, error.code.as_str()), (Class::Unauthenticated, "invalid_token"));
    assert_eq!(refused(w.engine.revoke_token(&issued.record.id, &Origin::default()).await).code, Code::NotFound);
    let dead = TokenRequest { expires_at: Some(chrono::Utc::now() - chrono::Duration::seconds(1)), ..request.clone() };
    assert_eq!(refused(w.engine.issue_token(&dead, &Origin::default()).await).code, Code::InvalidExpiry);
    let short = TokenRequest { expires_at: Some(chrono::Utc::now() + chrono::Duration::milliseconds(300)), ..request };
    let issued = w.engine.issue_token(&short, &Origin::default()).await.expect("issued");
    assert!(w.engine.authenticate(&issued.token).await.is_ok(), "valid until it expires");
    tokio::time::sleep(std::time::Duration::from_millis(400)).await;
    assert_eq!(refused(w.engine.authenticate(&issued.token).await).code, Code::InvalidToken);
    assert_eq!(refused(w.engine.authenticate("skp_unknown").await).code, Code::InvalidToken);
}

#[tokio::test]
async fn grants_hold_in_one_workspace_when_named() {
    let w = world().await;
    let claims = w.engine.create_workspace("claims", "Claims desk", &Origin::default()).await.expect("workspace");
    assert_eq!(refused(w.engine.create_workspace("claims", "", &Origin::default()).await).code, Code::WorkspaceExists);
    assert_eq!(
        refused(w.engine.create_workspace("Claims Desk", "", &Origin::default()).await).code,
        Code::InvalidWorkspace
    );
    let clerk = actor(&w.engine, "clerk", &["tasks.write@claims", "skills.invoke"]).await;
    assert!(clerk.can_in("tasks.write", &claims.id));
    assert!(!clerk.can("tasks.write"), "a workspace grant is not organisation-wide");
    assert!(clerk.can("skills.invoke"));
    let request = TokenRequest {
        principal: "other".into(),
        kind: "person".into(),
        grants: vec!["tasks.write@nowhere".into()],
        label: String::new(),
        expires_at: None,
    };
    let error = refused(w.engine.issue_token(&request, &Origin::default()).await);
    assert_eq!((error.class, error.code.as_str()), (Class::NotFound, "not_found"));
    assert!(w.engine.store().principal_by_name("other").await.is_err(), "a refused request creates no principal");
    let bad = TokenRequest { grants: vec!["Org Manage".into()], ..request };
    assert_eq!(refused(w.engine.issue_token(&bad, &Origin::default()).await).code, Code::InvalidPermission);
}
