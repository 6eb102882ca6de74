//! `ctx.artifacts()` and `ctx.knowledge()` against a real HTTP server on 127.0.0.1 that records
//! every request: routes, bodies, the bearer token, which calls carry an `Idempotency-Key`,
//! paging, retries, and the mapping of the core's answers.

use std::sync::{Arc, Mutex};

use axum::body::Bytes;
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use skill_sdk::core::{EntityQuery, KnowledgeDocument, stale_state_token};
use skill_sdk::{SkillContext, SkillError, skill, testing};

#[derive(Debug, Clone)]
struct Recorded {
    method: String,
    path: String,
    query: Option<String>,
    authorization: Option<String>,
    idempotency_key: Option<String>,
    body: Value,
}

#[derive(Default)]
struct Server {
    requests: Mutex<Vec<Recorded>>,
}

fn json_response(status: StatusCode, body: Value) -> Response {
    (status, [("content-type", "application/json")], body.to_string()).into_response()
}

async fn answer(server: Arc<Server>, method: Method, uri: Uri, headers: HeaderMap, body: Bytes) -> Response {
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok()).map(str::to_owned);
    let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let path = uri.path().to_owned();
    let count = {
        let mut requests = server.requests.lock().expect("lock");
        requests.push(Recorded {
            method: method.to_string(),
            path: path.clone(),
            query: uri.query().map(str::to_owned),
            authorization: header("authorization"),
            idempotency_key: header("idempotency-key"),
            body: body.clone(),
        });
        requests.iter().filter(|r| r.path == path).count()
    };
    match path.as_str() {
        "/api/v1/knowledge/snapshots:preview" => {
            json_response(StatusCode::OK, json!({"stateToken": "st:current", "opened": 1}))
        }
        "/api/v1/knowledge/snapshots" if body["expectedState"] == "st:old" => json_response(
            StatusCode::CONFLICT,
            json!({"error": {"code": "snapshot_stale", "message": "stale", "details": {"stateToken": "st:current"}}}),
        ),
        "/api/v1/knowledge/snapshots" => json_response(StatusCode::OK, json!({"stateToken": "st:next"})),
        // The first document call meets a restart: the client tries once more with the same key.
        "/api/v1/knowledge/documents" if count == 1 => json_response(StatusCode::SERVICE_UNAVAILABLE, json!({})),
        "/api/v1/knowledge/documents" => {
            json_response(StatusCode::OK, json!({"naturalKey": body["naturalKey"], "status": "stored"}))
        }
        "/api/v1/context/recall" if body["anchor"] == "broken" => {
            json_response(StatusCode::INTERNAL_SERVER_ERROR, json!({}))
        }
        "/api/v1/context/recall" if body["anchor"] == "forbidden" => json_response(
            StatusCode::FORBIDDEN,
            json!({"error": {"code": "permission_denied", "message": "no access to the workspace"}}),
        ),
        "/api/v1/context/recall" => json_response(StatusCode::OK, json!({"sections": [{"title": "s1"}]})),
        "/api/v1/knowledge/entities:query" => {
            let page = match body.get("cursor").and_then(Value::as_str) {
                None => json!({"items": [{"key": "e1"}, {"key": "e2"}], "nextCursor": "c1"}),
                Some("c1") => json!({"items": [], "nextCursor": "c2"}),
                Some(_) => json!({"items": [{"key": "e3"}], "nextCursor": null}),
            };
            json_response(StatusCode::OK, page)
        }
        "/api/v1/artifacts/A-1/content" => (
            StatusCode::OK,
            [("content-type", "text/plain; charset=utf-8"), ("x-content-sha256", "abc123")],
            "Договор № 7",
        )
            .into_response(),
        _ => json_response(StatusCode::NOT_FOUND, json!({"error": {"code": "not_found", "message": "no such thing"}})),
    }
}

/// Starts the recording server; returns its URL.
fn start() -> (String, Arc<Server>) {
    let server = Arc::new(Server::default());
    let shared = Arc::clone(&server);
    let app = axum::Router::new()
        .fallback(move |method, uri, headers, body| answer(Arc::clone(&shared), method, uri, headers, body));
    (skill_fixtures::serve(app), server)
}

#[derive(Debug, Deserialize, JsonSchema)]
pub(crate) struct Op {
    pub op: String,
    #[serde(default)]
    pub arg: Value,
}

#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct Answer {
    pub result: Value,
}

#[skill("core.client", version = "1", side_effects = "external_read", risk = "low")]
pub(crate) async fn client(inputs: Op, ctx: SkillContext) -> Result<Answer, SkillError> {
    let snapshot = json!({"pack": "p", "source": "s", "scope": "c", "entities": [{"kind": "company", "key": "7701"}]});
    let result = match inputs.op.as_str() {
        "preview" => ctx.knowledge()?.preview(snapshot, "W-1").await?,
        "apply" => ctx.knowledge()?.apply(snapshot, "W-1", inputs.arg.as_str()).await?,
        "stale" => match ctx.knowledge()?.apply(snapshot, "W-1", Some("st:old")).await {
            Err(error) => {
                json!({"code": error.code(), "retryable": error.retryable(), "token": stale_state_token(&error)})
            }
            Ok(_) => json!("not stale"),
        },
        "document" => {
            let mut document = KnowledgeDocument::new("W-1", "contract-7", "Contract 7", vec![json!({"text": "…"})]);
            document.meta = Some(json!({"lang": "ru"}));
            ctx.knowledge()?.document(document).await?
        }
        "recall" => ctx.knowledge()?.recall(json!({"workspaceId": "W-1", "anchor": inputs.arg})).await?,
        "query" => {
            let mut query = EntityQuery::new("W-1", &["company"]).condition("okved", "prefix", json!("62.01"));
            query.limit = 2;
            query.max_items = inputs.arg.as_u64().unwrap_or(10) as usize;
            json!(ctx.knowledge()?.query(query).await?)
        }
        "artifact" => {
            let content = ctx.artifacts()?.read_for_task(inputs.arg.as_str().unwrap_or(""), "T-9").await?;
            json!({"text": content.text()?, "mediaType": content.media_type, "sha256": content.sha256})
        }
        _ => Value::Null,
    };
    Ok(Answer { result })
}

fn run(url: &str, op: &str, arg: Value) -> Result<Value, SkillError> {
    testing::call(&client::SKILL)
        .env("CONTROL_PLANE_URL", url)
        .env("CONTROL_PLANE_TOKEN", "pat-secret")
        .invoke(json!({"op": op, "arg": arg}))
        .map(|outcome| outcome.outputs["result"].clone())
}

fn requests(server: &Server) -> Vec<Recorded> {
    server.requests.lock().expect("lock").clone()
}

#[test]
fn knowledge_calls_use_the_routes_bodies_and_keys_of_the_core() {
    let (url, server) = start();
    assert_eq!(run(&url, "preview", Value::Null).expect("preview")["stateToken"], "st:current");
    assert_eq!(run(&url, "apply", json!("st:current")).expect("apply")["stateToken"], "st:next");
    assert_eq!(run(&url, "recall", json!("company:7701")).expect("recall"), json!({"sections": [{"title": "s1"}]}));
    let seen = requests(&server);
    let preview = &seen[0];
    assert_eq!((preview.method.as_str(), preview.path.as_str()), ("POST", "/api/v1/knowledge/snapshots:preview"));
    assert_eq!(
        preview.body,
        json!({"pack": "p", "source": "s", "scope": "c", "entities": [{"kind": "company", "key": "7701"}], "workspaceId": "W-1"})
    );
    assert_eq!(preview.authorization.as_deref(), Some("Bearer pat-secret"));
    assert_eq!(preview.idempotency_key, None, "preview is not idempotent");
    let apply = &seen[1];
    assert_eq!(apply.path, "/api/v1/knowledge/snapshots");
    assert_eq!(apply.body["expectedState"], "st:current");
    assert!(apply.idempotency_key.as_deref().is_some_and(|k| k.len() == 36), "apply carries a key");
    let recall = &seen[2];
    assert_eq!(recall.path, "/api/v1/context/recall");
    assert_eq!(recall.body, json!({"workspaceId": "W-1", "anchor": "company:7701"}), "recall sends the query as given");
    assert_eq!(recall.idempotency_key, None);
}

#[test]
fn apply_without_an_expected_state_sends_none() {
    let (url, server) = start();
    run(&url, "apply", Value::Null).expect("apply");
    assert!(requests(&server)[0].body.get("expectedState").is_none());
}

#[test]
fn a_stale_snapshot_is_snapshot_stale_with_the_current_token() {
    let (url, _server) = start();
    assert_eq!(
        run(&url, "stale", Value::Null).expect("runs"),
        json!({"code": "snapshot_stale", "retryable": false, "token": "st:current"})
    );
}

#[test]
fn a_document_is_retried_once_with_the_same_key() {
    let (url, server) = start();
    assert_eq!(
        run(&url, "document", Value::Null).expect("stored"),
        json!({"naturalKey": "contract-7", "status": "stored"})
    );
    let seen = requests(&server);
    assert_eq!(seen.len(), 2, "one retry after the 503");
    assert_eq!(seen[0].idempotency_key, seen[1].idempotency_key, "the retry reuses the key");
    assert_eq!(
        seen[1].body,
        json!({"workspaceId": "W-1", "naturalKey": "contract-7", "title": "Contract 7", "type": "document",
               "chunks": [{"text": "…"}], "links": [], "meta": {"lang": "ru"}})
    );
}

#[test]
fn a_query_pages_through_every_result() {
    let (url, server) = start();
    let items = run(&url, "query", json!(10)).expect("query");
    assert_eq!(items, json!([{"key": "e1"}, {"key": "e2"}, {"key": "e3"}]));
    let bodies: Vec<Value> = requests(&server).into_iter().map(|r| r.body).collect();
    assert_eq!(bodies.len(), 3, "an empty page does not end the paging");
    assert_eq!(
        bodies[0],
        json!({"workspaceId": "W-1", "kinds": ["company"], "limit": 2, "where": [{"attribute": "okved", "op": "prefix", "value": "62.01"}]})
    );
    assert_eq!(bodies[1]["cursor"], "c1");
    assert_eq!(bodies[2]["cursor"], "c2");
}

#[test]
fn a_query_over_max_items_is_an_error_not_a_truncation() {
    let (url, _server) = start();
    let error = run(&url, "query", json!(2)).expect_err("too many");
    assert_eq!((error.code(), error.retryable()), ("knowledge_query_too_large", false));
}

#[test]
fn artifacts_are_read_with_their_media_type() {
    let (url, server) = start();
    let read = run(&url, "artifact", json!("A-1")).expect("read");
    assert_eq!(read, json!({"text": "Договор № 7", "mediaType": "text/plain; charset=utf-8", "sha256": "abc123"}));
    let seen = requests(&server);
    assert_eq!(
        (seen[0].method.as_str(), seen[0].path.as_str(), seen[0].query.as_deref()),
        ("GET", "/api/v1/artifacts/A-1/content", Some("forTask=T-9"))
    );
    let error = run(&url, "artifact", json!("A-404")).expect_err("unknown");
    assert_eq!((error.code(), error.retryable()), ("artifact_not_found", false));
}

#[test]
fn core_failures_map_to_errors() {
    let (url, server) = start();
    let error = run(&url, "recall", json!("broken")).expect_err("500");
    assert_eq!((error.code(), error.retryable()), ("core_unavailable", true));
    assert_eq!(requests(&server).len(), 1, "recall is not idempotent: no retry");
    let error = run(&url, "recall", json!("forbidden")).expect_err("403");
    assert_eq!(
        (error.code(), error.message(), error.retryable()),
        ("permission_denied", "no access to the workspace", false)
    );
    let error = run("http://127.0.0.1:9", "preview", Value::Null).expect_err("no server");
    assert_eq!((error.code(), error.retryable()), ("core_unavailable", true));
}

#[test]
fn without_a_core_address_the_call_is_config_missing() {
    let error = testing::call(&client::SKILL).no_env().invoke(json!({"op": "preview"})).expect_err("no core");
    assert_eq!((error.code(), error.retryable()), ("config_missing", true));
    assert!(error.message().contains("CONTROL_PLANE_URL"), "{}", error.message());
    let (url, server) = start();
    run(&format!("{url}/api/v1/"), "preview", Value::Null).expect("an address with the API path works too");
    assert_eq!(requests(&server)[0].path, "/api/v1/knowledge/snapshots:preview");
}
