//! The catalog API through a real server on 127.0.0.1: every status and code it answers with.

use std::sync::Arc;

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use skill_engine::{Engine, Origin, TokenRequest};
use skill_fixtures::Scratch;

pub(crate) struct Api {
    pub(crate) base: String,
    client: reqwest::Client,
    pub(crate) admin: String,
    pub(crate) engine: Engine,
    _folder: Scratch,
}

pub(crate) async fn api() -> Api {
    let folder = Scratch::new("skill-core-api");
    let store = skill_store::open(folder.path().to_str().expect("utf-8"), &Default::default()).await.expect("store");
    let engine = Engine::new(Arc::clone(&store));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("a port");
    let base = format!("http://{}", listener.local_addr().expect("address"));
    tokio::spawn(skill_server::serve(engine.clone(), listener, Default::default()));
    let admin = token(&engine, "admin", &["org.manage"]).await;
    Api { base, client: reqwest::Client::new(), admin, engine, _folder: folder }
}

pub(crate) async fn token(engine: &Engine, name: &str, grants: &[&str]) -> String {
    token_of_kind(engine, name, "person", grants).await
}

/// A token of an executor principal named `name` with `grants`, allowed to run what `allowance`
/// (an executor allowance: `{protocols, local, httpOrigins, mcpOrigins, audiences}`) says.
pub(crate) async fn executor_token(engine: &Engine, name: &str, grants: &[&str], allowance: Value) -> String {
    let token = token_of_kind(engine, name, "executor", grants).await;
    let allowance: skill_api::ExecutorAllowance = serde_json::from_value(allowance).expect("an allowance");
    engine.allow_executor(None, name, &allowance, None).await.expect("allowed");
    token
}

/// A token of a principal of `kind` (`person`, `agent`, `executor`) with `grants`.
pub(crate) async fn token_of_kind(engine: &Engine, name: &str, kind: &str, grants: &[&str]) -> String {
    let request = TokenRequest {
        principal: name.to_owned(),
        kind: kind.to_owned(),
        grants: grants.iter().map(|g| (*g).to_owned()).collect(),
        label: String::new(),
        expires_at: None,
    };
    let operator = if kind == "agent" { Some(agent_operator(engine).await) } else { None };
    engine.issue_token_for(&request, operator, &Origin::default()).await.expect("token").token
}

/// The person who operates the agents tests make by hand: one who decides nothing.
pub(crate) async fn agent_operator(engine: &Engine) -> &'static str {
    if engine.store().principal_by_name("agent-operator").await.is_err() {
        let person = TokenRequest {
            principal: "agent-operator".into(),
            kind: "person".into(),
            grants: Vec::new(),
            label: String::new(),
            expires_at: None,
        };
        engine.issue_token(&person, &Origin::default()).await.expect("the operator");
    }
    "agent-operator"
}

struct Answer {
    status: StatusCode,
    headers: reqwest::header::HeaderMap,
    body: Value,
}

impl Api {
    async fn send(
        &self,
        method: Method,
        path: &str,
        token: Option<&str>,
        body: Option<&str>,
        headers: &[(&str, &str)],
    ) -> Answer {
        let mut request = self.client.request(method, format!("{}{path}", self.base));
        if let Some(token) = token {
            request = request.bearer_auth(token);
        }
        if let Some(body) = body {
            request = request.header("content-type", "application/json").body(body.to_owned());
        }
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        let response = request.send().await.expect("the core answers");
        let status = response.status();
        let headers = response.headers().clone();
        let text = response.text().await.expect("a body");
        let body = serde_json::from_str(&text).unwrap_or(Value::String(text));
        Answer { status, headers, body }
    }

    async fn post(&self, path: &str, body: &Value) -> Answer {
        self.send(Method::POST, path, Some(&self.admin), Some(&body.to_string()), &[]).await
    }

    async fn get(&self, path: &str) -> Answer {
        self.send(Method::GET, path, Some(&self.admin), None, &[]).await
    }

    async fn patch(&self, path: &str, if_match: Option<&str>, body: &Value) -> Answer {
        let headers: Vec<(&str, &str)> = if_match.map(|value| ("if-match", value)).into_iter().collect();
        self.send(Method::PATCH, path, Some(&self.admin), Some(&body.to_string()), &headers).await
    }
}

/// Asserts the status and the envelope's code, and that the envelope carries the request id.
fn refused(answer: &Answer, status: u16, code: &str) {
    assert_eq!(answer.status.as_u16(), status, "{}", answer.body);
    assert_eq!(answer.body["error"]["code"], code, "{}", answer.body);
    let id = answer.headers["x-request-id"].to_str().expect("ASCII");
    assert_eq!(answer.body["error"]["requestId"], id, "the envelope names the request");
    assert!(answer.body["error"]["message"].as_str().is_some_and(|m| !m.is_empty()));
}

pub(crate) fn leaf(name: &str, version: &str) -> Value {
    json!({
        "name": name, "version": version, "description": "Sends the reply.",
        "sideEffects": "external_write", "riskLevel": "high",
        "contract": {
            "inputs": {"type": "object"}, "outputs": {"type": "object"}, "idempotency": "required",
            "retryPolicy": {"maxAttempts": 3, "backoffSeconds": 10},
            "implementation": {"protocol": "http", "endpoint": "https://skills.example/send"}
        }
    })
}

#[tokio::test]
async fn publish_read_and_list_answer_with_etags_and_camel_case() {
    let api = api().await;
    let created = api.post("/api/v1/skills", &leaf("claim.send_reply", "1")).await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.body);
    assert_eq!(created.headers["etag"], "\"skill-1\"");
    assert_eq!(created.body["sideEffects"], "external_write");
    assert_eq!(created.body["contract"]["retryPolicy"], json!({"maxAttempts": 3, "backoffSeconds": 10}));
    let id = created.body["id"].as_str().expect("an id").to_owned();

    for path in [
        format!("/api/v1/skills/{id}"),
        "/api/v1/skills/claim.send_reply@1".into(),
        "/api/v1/skills/claim.send_reply".into(),
    ] {
        let read = api.get(&path).await;
        assert_eq!((read.status, read.body["id"].as_str()), (StatusCode::OK, Some(id.as_str())), "{path}");
        assert_eq!(read.headers["etag"], "\"skill-1\"");
    }
    let page = api.get("/api/v1/skills?name=claim.send_reply&limit=10").await;
    assert_eq!(page.body["items"].as_array().map(Vec::len), Some(1));
    assert_eq!(page.body["nextCursor"], Value::Null);
    let metadata = api.get("/api/v1/skills/claim.send_reply@1:metadata").await;
    assert_eq!((metadata.body["writes"].clone(), metadata.body["read_only"].clone()), (json!(true), json!(false)));
    let definition = api.get("/api/v1/skills/claim.send_reply@1:definition").await;
    assert_eq!(definition.status, StatusCode::OK, "{}", definition.body);
    let catalogue = api.get("/api/v1/catalogue").await;
    assert_eq!(catalogue.body["items"][0]["name"], "claim.send_reply");

    let caller_id =
        api.send(Method::GET, "/api/v1/skills/nope@1", Some(&api.admin), None, &[("x-request-id", "trace-42")]).await;
    refused(&caller_id, 404, "not_found");
    assert_eq!(caller_id.body["error"]["requestId"], "trace-42", "a caller's request id is kept");
}

#[tokio::test]
async fn credentials_are_checked_first_and_permissions_per_route() {
    let api = api().await;
    let missing = api.send(Method::GET, "/api/v1/skills/nope@1", None, None, &[]).await;
    refused(&missing, 401, "missing_authorization");
    assert!(missing.headers["www-authenticate"].to_str().expect("ASCII").starts_with("Bearer "));
    // An invalid token says why, and what to do.
    let forged = api.send(Method::GET, "/api/v1/skills", Some("skp_forged"), None, &[]).await;
    refused(&forged, 401, "invalid_token");
    assert_eq!(forged.body["error"]["details"]["reason"], "unknown");
    assert!(forged.body["error"]["message"].as_str().is_some_and(|m| m.contains("copied whole")), "{}", forged.body);
    let basic = api.send(Method::GET, "/api/v1/skills", None, None, &[("authorization", "Basic YTpi")]).await;
    refused(&basic, 401, "invalid_token");
    assert_eq!(basic.body["error"]["details"]["reason"], "malformed");
    let request = skill_engine::TokenRequest {
        principal: "leaving".into(),
        kind: "person".into(),
        grants: vec!["org.read".into()],
        label: String::new(),
        expires_at: None,
    };
    let issued = api.engine.issue_token(&request, &skill_engine::Origin::default()).await.expect("a token");
    api.engine.revoke_token(&issued.record.id, &skill_engine::Origin::default()).await.expect("revoked");
    let revoked = api.send(Method::GET, "/api/v1/skills", Some(&issued.token), None, &[]).await;
    refused(&revoked, 401, "invalid_token");
    assert_eq!(revoked.body["error"]["details"]["reason"], "revoked", "{}", revoked.body);

    let reader = token(&api.engine, "reader", &["org.read"]).await;
    let body = leaf("a.b", "1").to_string();
    let denied = api.send(Method::POST, "/api/v1/skills", Some(&reader), Some(&body), &[]).await;
    refused(&denied, 403, "permission_denied");
    assert_eq!(denied.body["error"]["details"]["permission"], "org.manage");
    let invoker = token(&api.engine, "bot", &["skills.invoke"]).await;
    refused(&api.send(Method::GET, "/api/v1/skills", Some(&invoker), None, &[]).await, 403, "permission_denied");
    refused(&api.send(Method::GET, "/api/v1/nowhere", Some(&reader), None, &[]).await, 404, "not_found");
}

#[tokio::test]
async fn bad_bodies_and_queries_are_400_413_or_422_and_change_nothing() {
    let api = api().await;
    let unknown = json!({"name": "a.b", "protocol": "custom", "colour": "red"});
    let answer = api.post("/api/v1/skills", &unknown).await;
    refused(&answer, 400, "invalid_request");
    assert!(answer.body["error"]["message"].as_str().is_some_and(|m| m.contains("colour")), "{}", answer.body);
    let answer = api.send(Method::POST, "/api/v1/skills", Some(&api.admin), Some("{"), &[]).await;
    refused(&answer, 400, "invalid_request");
    let answer =
        api.post("/api/v1/skills", &json!({"name": "a.b", "protocol": "custom", "description": "x\u{0}y"})).await;
    refused(&answer, 400, "invalid_request");
    assert_eq!(answer.body["error"]["details"]["field"], "description");
    let answer = api.post("/api/v1/skills", &json!({"name": 7})).await;
    assert_eq!(answer.body["error"]["details"]["field"], "name");
    refused(&api.get("/api/v1/skills?colour=red").await, 400, "invalid_request");
    refused(&api.get("/api/v1/skills?limit=0").await, 400, "invalid_request");
    refused(&api.get("/api/v1/catalogue?limit=201").await, 400, "invalid_request");
    refused(&api.get("/api/v1/events?limit=1001").await, 400, "invalid_request");
    refused(&api.get("/api/v1/skills?status=paused").await, 422, "invalid_status");
    let huge = json!({"name": "a.b", "protocol": "custom", "description": "x".repeat(3 * 1024 * 1024)});
    refused(&api.post("/api/v1/skills", &huge).await, 413, "payload_too_large");

    let mut bad = leaf("a.b", "1");
    bad["contract"]["timeoutSeconds"] = json!(0);
    let answer = api.post("/api/v1/skills", &bad).await;
    refused(&answer, 422, "invalid_skill_contract");
    assert_eq!(answer.body["error"]["details"]["field"], "timeoutSeconds");
    assert_eq!(
        (answer.body["error"]["details"]["min"].clone(), answer.body["error"]["details"]["max"].clone()),
        (json!(1), json!(3600))
    );
    let mut secret = leaf("a.b", "1");
    secret["contract"]["implementation"]["auth"] = json!({"token": "sk-live-0123456789abcdef0123456789"});
    refused(&api.post("/api/v1/skills", &secret).await, 422, "secret_material_rejected");
    let mut conditions = leaf("a.b", "1");
    conditions["contract"]["preconditions"] = json!(["x"]);
    refused(&api.post("/api/v1/skills", &conditions).await, 422, "unsupported_skill_condition");
    let mut schema = leaf("a.b", "1");
    schema["contract"]["inputs"] =
        json!({"type": "object", "properties": {"a": {"$ref": "https://evil.example/s.json"}}});
    refused(&api.post("/api/v1/skills", &schema).await, 422, "invalid_json_schema");
    refused(&api.post("/api/v1/skills", &json!({"name": "legacy.tool"})).await, 422, "invalid_protocol");
    refused(
        &api.post("/api/v1/skills", &json!({"name": "a.c", "version": "1", "includes": ["a.z@1"]})).await,
        422,
        "resolution_failure",
    );

    assert_eq!(api.get("/api/v1/skills").await.body["items"], json!([]), "nothing was published");
    assert_eq!(api.post("/api/v1/skills", &leaf("a.b", "1")).await.status, StatusCode::CREATED);
    refused(&api.post("/api/v1/skills", &leaf("a.b", "1")).await, 409, "skill_exists");
}

#[tokio::test]
async fn patches_follow_if_match_and_the_immutability_rules() {
    let api = api().await;
    let created = api.post("/api/v1/skills", &leaf("claim.send_reply", "1")).await;
    let path = format!("/api/v1/skills/{}", created.body["id"].as_str().expect("id"));
    let describe = json!({"description": "Sends the approved reply."});
    refused(&api.patch(&path, None, &describe).await, 428, "if_match_required");
    refused(&api.patch(&path, Some("skill-1"), &describe).await, 400, "invalid_if_match");
    refused(&api.patch(&path, Some("\"skill-9\""), &describe).await, 409, "version_conflict");
    let patched = api.patch(&path, Some("\"skill-1\""), &describe).await;
    assert_eq!((patched.status, patched.headers["etag"].to_str().ok()), (StatusCode::OK, Some("\"skill-2\"")));
    refused(&api.patch(&path, Some("\"skill-2\""), &describe).await, 422, "empty_update");
    let answer = api.patch(&path, Some("\"skill-2\""), &json!({"outputSchema": {"type": "string"}})).await;
    refused(&answer, 409, "skill_version_immutable");
    refused(&api.patch(&path, Some("\"skill-2\""), &json!({"status": "paused"})).await, 422, "invalid_status");
    refused(
        &api.patch(&path, Some("\"skill-2\""), &json!({"endpoint": "ftp://x"})).await,
        422,
        "invalid_skill_contract",
    );
    let moved = api.patch(&path, Some("\"skill-2\""), &json!({"endpoint": "https://skills.example/v2"})).await;
    assert_eq!(moved.body["contract"]["implementation"]["endpoint"], "https://skills.example/v2");
    assert_eq!(api.patch(&path, Some("\"skill-3\""), &json!({"status": "disabled"})).await.status, StatusCode::OK);
    refused(
        &api.patch(&path, Some("\"skill-4\""), &json!({"status": "active"})).await,
        409,
        "invalid_status_transition",
    );
    refused(&api.patch("/api/v1/skills/nope@1", Some("\"skill-1\""), &describe).await, 404, "not_found");

    let row = api.post("/api/v1/skills", &json!({"name": "legacy.tool", "protocol": "custom"})).await;
    let row_path = format!("/api/v1/skills/{}", row.body["id"].as_str().expect("id"));
    refused(
        &api.patch(&row_path, Some("\"skill-1\""), &json!({"endpoint": "https://x"})).await,
        409,
        "skill_not_invocable",
    );
    refused(&api.get("/api/v1/skills/legacy.tool@1.0.0:metadata").await, 409, "skill_not_invocable");

    let subject = format!("skill:{}", created.body["id"].as_str().expect("id"));
    let events = api.get(&format!("/api/v1/events?subject={subject}")).await;
    let subjects: Vec<&str> =
        events.body["items"].as_array().expect("items").iter().filter_map(|e| e["subject"].as_str()).collect();
    assert_eq!(subjects.len(), 4, "registered, then three changes: {subjects:?}");
    assert!(subjects.iter().all(|s| *s == subject));
    let all = api.get("/api/v1/events?limit=100").await;
    let kinds: Vec<&str> =
        all.body["items"].as_array().expect("items").iter().filter_map(|e| e["kind"].as_str()).collect();
    assert_eq!(kinds.iter().filter(|k| **k == "skill.updated").count(), 3, "{kinds:?}");
}

#[tokio::test]
async fn assignments_and_package_installs() {
    let api = api().await;
    api.post("/api/v1/skills", &leaf("claim.send_reply", "1")).await;
    let bot = token(&api.engine, "bot", &["skills.invoke"]).await;
    let bot_id = api.engine.authenticate(&bot).await.expect("bot").id().to_owned();
    let path = format!("/api/v1/principals/{bot_id}/skills");
    let first = api.post(&path, &json!({"skillId": "claim.send_reply@1"})).await;
    assert_eq!((first.status, first.body["created"].clone()), (StatusCode::CREATED, json!(true)));
    let again = api.post(&path, &json!({"skillId": "claim.send_reply@1"})).await;
    assert_eq!((again.status, again.body["created"].clone()), (StatusCode::OK, json!(false)));
    let own = api.send(Method::GET, &path, Some(&bot), None, &[]).await;
    assert_eq!(own.body["items"][0]["name"], "claim.send_reply", "a principal reads its own assignments");
    refused(
        &api.post("/api/v1/principals/nobody/skills", &json!({"skillId": "claim.send_reply@1"})).await,
        404,
        "not_found",
    );
    let revoked = api.post(&format!("{path}/claim.send_reply@1:revoke"), &json!({})).await;
    assert_eq!(revoked.body["revoked"], true, "{}", revoked.body);
    let send = api.get("/api/v1/skills/claim.send_reply@1").await;
    let send_path = format!("/api/v1/skills/{}", send.body["id"].as_str().expect("id"));
    assert_eq!(api.patch(&send_path, Some("\"skill-1\""), &json!({"status": "disabled"})).await.status, StatusCode::OK);
    refused(&api.post(&path, &json!({"skillId": "claim.send_reply@1"})).await, 422, "skill_disabled");

    let record = json!({"package": {"key": "claims", "version": "1.0.0"}, "installHash": "abababababababababababababababababababababababababababababababab",
                        "objects": [{"kind": "Skill", "key": "claim.send_reply"}]});
    let recorded = api.post("/api/v1/packages:record", &record).await;
    assert_eq!(recorded.status, StatusCode::OK, "{}", recorded.body);
    assert_eq!(
        api.get("/api/v1/packages/claims").await.body["installHash"],
        "abababababababababababababababababababababababababababababababab"
    );
    assert_eq!(api.get("/api/v1/skills/claim.send_reply@1").await.body["package"]["key"], "claims");
    assert_eq!(api.get("/api/v1/skills?package=claims").await.body["items"].as_array().map(Vec::len), Some(1));
    refused(&api.get("/api/v1/packages/other").await, 404, "not_found");
    // The record is checked as an apply's is: a key, a version, a SHA-256, skills by name.
    for bad in [
        json!({"package": {"key": "../..", "version": "1"}, "installHash": "ab".repeat(32), "objects": []}),
        json!({"package": {"key": "claims", "version": "1' OR 1=1"}, "installHash": "ab".repeat(32), "objects": []}),
        json!({"package": {"key": "claims", "version": "1"}, "installHash": "x", "objects": []}),
        json!({"package": {"key": "claims", "version": "1"}, "installHash": "ab".repeat(32),
               "objects": [{"kind": "Secret", "key": "claim.send_reply"}]}),
    ] {
        refused(&api.post("/api/v1/packages:record", &bad).await, 400, "invalid_request");
    }
    assert_eq!(api.get("/api/v1/packages/claims").await.body["version"], "1.0.0", "unchanged by refused records");

    // Another package takes a skill only by adopting it; a package links only published skills.
    let rival = |objects: Value, adopt: Value| json!({"package": {"key": "rival", "version": "1"}, "installHash": "cd".repeat(32), "objects": objects, "adopt": adopt});
    let send = json!([{"kind": "Skill", "key": "claim.send_reply"}]);
    let taken = api.post("/api/v1/packages:record", &rival(send.clone(), json!([]))).await;
    refused(&taken, 409, "package_object_conflict");
    assert_eq!(
        taken.body["error"]["details"]["objects"],
        json!([{"kind": "Skill", "key": "claim.send_reply", "package": "claims"}])
    );
    let ghost =
        api.post("/api/v1/packages:record", &rival(json!([{"kind": "Skill", "key": "claim.ghost"}]), json!([]))).await;
    refused(&ghost, 422, "unknown_reference");
    assert_eq!(ghost.body["error"]["details"]["field"], "objects[0]");
    let stray = api
        .post("/api/v1/packages:record", &rival(send.clone(), json!([{"kind": "Skill", "key": "claim.other"}])))
        .await;
    refused(&stray, 400, "invalid_request");
    assert_eq!(stray.body["error"]["details"]["field"], "adopt[0]");
    refused(&api.get("/api/v1/packages/rival").await, 404, "not_found");
    assert_eq!(api.get("/api/v1/skills/claim.send_reply@1").await.body["package"]["key"], "claims");
    let adopted = api.post("/api/v1/packages:record", &rival(send.clone(), send)).await;
    assert_eq!(adopted.status, StatusCode::OK, "{}", adopted.body);
    assert_eq!(api.get("/api/v1/skills/claim.send_reply@1").await.body["package"]["key"], "rival");
    assert_eq!(api.get("/api/v1/packages/claims").await.body["objects"], json!([]));
}

#[tokio::test]
async fn health_readiness_and_the_openapi_document() {
    let api = api().await;
    assert_eq!(api.send(Method::GET, "/healthz", None, None, &[]).await.body, json!({"status": "ok"}));
    assert_eq!(api.send(Method::GET, "/readyz", None, None, &[]).await.body, json!({"status": "ready"}));
    let document = api.send(Method::GET, "/api/v1/openapi.json", None, None, &[]).await.body;
    assert_eq!(document["openapi"], "3.1.0");
    for route in skill_api::operations::OPERATIONS {
        let method = route.method.as_str();
        let operation = &document["paths"][route.path][method.to_ascii_lowercase()];
        assert!(operation.is_object(), "{method} {} is documented", route.path);
        for (status, code) in route.errors {
            let description = operation["responses"][status.to_string()]["description"].as_str().unwrap_or_default();
            assert!(description.contains(code), "{method} {} documents {status} {code}", route.path);
        }
    }
    let publish = &document["paths"]["/skills"]["post"];
    let reference = publish["requestBody"]["content"]["application/json"]["schema"]["$ref"].as_str().expect("a $ref");
    let name = reference.rsplit('/').next().expect("a name");
    let schema = &document["components"]["schemas"][name];
    assert!(
        schema["properties"]["contract"].is_object() && schema["properties"]["sideEffects"].is_object(),
        "{schema}"
    );
    let dangling: Vec<String> = refs(&document).into_iter().filter(|r| document.pointer(&r[1..]).is_none()).collect();
    assert!(dangling.is_empty(), "every $ref resolves: {dangling:?}");
}

fn refs(value: &Value) -> Vec<String> {
    match value {
        Value::Object(map) => {
            map.iter()
                .flat_map(|(key, item)| {
                    if key == "$ref" { item.as_str().map(str::to_owned).into_iter().collect() } else { refs(item) }
                })
                .collect()
        }
        Value::Array(items) => items.iter().flat_map(refs).collect(),
        _ => Vec::new(),
    }
}

#[test]
fn every_code_the_api_documents_is_registered() {
    // Every code the OpenAPI document names in a response (`code`, …), the common ones included.
    let document = skill_api::openapi::document();
    let mut codes: Vec<String> = Vec::new();
    for item in document["paths"].as_object().expect("paths").values() {
        for operation in item.as_object().expect("an item").values() {
            for response in operation["responses"].as_object().expect("responses").values() {
                let description = response["description"].as_str().unwrap_or_default();
                codes.extend(description.split('`').skip(1).step_by(2).map(str::to_owned));
            }
        }
    }
    assert!(codes.iter().any(|code| code == "internal_error") && codes.len() > 30, "{codes:?}");
    for code in codes {
        assert!(skill_contract::codes::code_info(&code).is_some(), "{code} is in the registry and docs/errors.md");
    }
}
