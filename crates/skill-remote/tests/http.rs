//! The `http` wire contract against a real HTTP server on 127.0.0.1: what the endpoint receives,
//! how each answer becomes an outcome, and the guard in front of every connection.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::IntoResponse;
use axum::routing::post;
use futures::future::BoxFuture;
use serde_json::{Value, json};
use skill_api::ClaimOut;
use skill_executor::{Outcome, Runner};
use skill_remote::guard::{Lookup, SystemLookup};
use skill_remote::{Config, Remote};

/// What the endpoint saw: the bodies of `/echo` and the paths it was asked for.
#[derive(Debug, Default, Clone)]
struct Seen(Arc<Mutex<Vec<Request>>>);

/// A request as the endpoint saw it: path, body, `Authorization`, `Host`.
type Request = (String, Value, Option<String>, Option<String>);

async fn endpoint(
    State(seen): State<Seen>,
    uri: axum::http::Uri,
    headers: HeaderMap,
    body: String,
) -> axum::response::Response {
    let path = uri.path().to_owned();
    let body: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
    let auth = headers.get("authorization").and_then(|v| v.to_str().ok()).map(str::to_owned);
    let host = headers.get("host").and_then(|v| v.to_str().ok()).map(str::to_owned);
    seen.0.lock().expect("seen").push((path.clone(), body.clone(), auth, host));
    match path.as_str() {
        "/echo" => ([("x-skill-cost", r#"{"usd": 0.25, "tokens": 12}"#)], axum::Json(json!({"echo": body["inputs"]})))
            .into_response(),
        "/moved" => (StatusCode::FOUND, [("location", "/elsewhere")]).into_response(),
        "/busy" => (
            StatusCode::SERVICE_UNAVAILABLE,
            axum::Json(
                json!({"error": {"code": "claim_locked", "message": "the claim is being edited", "retryable": true}}),
            ),
        )
            .into_response(),
        "/refused" => (
            StatusCode::UNPROCESSABLE_ENTITY,
            axum::Json(json!({"error": {"code": "claim_closed", "message": "closed", "retryable": false}})),
        )
            .into_response(),
        "/missing" => (StatusCode::NOT_FOUND, "no skill at /srv/skills/x here").into_response(),
        "/broken" => (StatusCode::BAD_GATEWAY, "upstream down").into_response(),
        "/slow" => {
            tokio::time::sleep(Duration::from_secs(3)).await;
            axum::Json(json!({})).into_response()
        }
        "/list" => axum::Json(json!([1, 2])).into_response(),
        _ => StatusCode::IM_A_TEAPOT.into_response(),
    }
}

async fn serve() -> (u16, Seen) {
    let seen = Seen::default();
    let app = Router::new().route("/{*path}", post(endpoint)).with_state(seen.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let port = listener.local_addr().expect("address").port();
    tokio::spawn(async move { axum::serve(listener, app).await.expect("serve") });
    (port, seen)
}

fn claimed(endpoint: &str, audience: Option<&str>, timeout: u64) -> ClaimOut {
    let mut implementation = json!({"protocol": "http", "endpoint": endpoint, "entrypoint": null});
    if let Some(audience) = audience {
        implementation["auth"] = json!({"audience": audience, "scopes": ["claims.read"]});
    }
    serde_json::from_value(json!({
        "invocation": {
            "id": "0190c5d4-0000-7000-8000-000000000001", "skillId": "s-1", "skill": {"name": "claim.lookup", "version": "1"},
            "inputs": {"claim": "C-7"}, "requestedBy": {"kind": "principal", "ref": "p-1"}, "authorityPrincipalId": "p-1",
            "authorizationBasis": null, "idempotencyKey": "k-7", "status": "running", "attempt": 1, "maxAttempts": 3,
            "availableAt": "2026-12-01T00:00:00Z", "output": null, "error": null, "cost": null, "fencingToken": 1,
            "executorPrincipalId": "e-1", "executorSessionId": null, "leaseExpiresAt": "2026-12-01T00:01:00Z",
            "heartbeatAt": null, "taskId": null, "runId": null, "artifactId": null, "createdAt": "2026-12-01T00:00:00Z",
            "updatedAt": "2026-12-01T00:00:00Z", "startedAt": null, "finishedAt": null
        },
        "skill": {"id": "s-1", "name": "claim.lookup", "version": "1", "protocol": "http", "sideEffects": "none",
                  "riskLevel": "low", "contract": {"timeoutSeconds": timeout, "implementation": implementation}},
        "settings": {"package": "claims", "version": "1.0.0", "schemaRevision": 1, "values": {"region": "eu"}}
    }))
    .expect("a claim")
}

fn remote(origins: &[String], private: &[&str], lookup: Arc<dyn Lookup>) -> Remote {
    let config = Config {
        protocols: vec!["http".into()],
        http_origins: origins.to_vec(),
        audiences: vec!["claims-api".into()],
        private_hosts: private.iter().map(|h| (*h).to_owned()).collect(),
        ..Config::default()
    };
    Remote::new(&config, lookup, None).expect("a runner")
}

fn failure(outcome: Outcome) -> (String, bool, Value) {
    match outcome {
        Outcome::Fail(error) => (error.code, error.retryable, error.details.unwrap_or(Value::Null)),
        Outcome::Complete { output, .. } => panic!("completed with {output:?}"),
    }
}

#[tokio::test]
async fn the_endpoint_gets_the_call_and_its_answers_become_outcomes() {
    let (port, seen) = serve().await;
    let origin = format!("http://127.0.0.1:{port}");
    let runner = remote(std::slice::from_ref(&origin), &["127.0.0.1"], Arc::new(SystemLookup));
    assert_eq!(runner.declared().http_origins, std::slice::from_ref(&origin));

    match runner.run(claimed(&format!("{origin}/echo"), None, 5)).await {
        Outcome::Complete { output, cost } => {
            assert_eq!(Value::Object(output), json!({"echo": {"claim": "C-7"}}));
            assert_eq!(cost.map(Value::Object), Some(json!({"usd": 0.25, "tokens": 12})));
        }
        Outcome::Fail(error) => panic!("{error:?}"),
    }
    let (path, body, auth, _) = seen.0.lock().expect("seen")[0].clone();
    assert_eq!(path, "/echo");
    assert_eq!(
        body,
        json!({"invocationId": "0190c5d4-0000-7000-8000-000000000001", "idempotencyKey": "k-7",
               "settings": {"region": "eu"}, "inputs": {"claim": "C-7"}})
    );
    assert_eq!(auth, None, "no audience, no token");

    let (code, retryable, details) = failure(runner.run(claimed(&format!("{origin}/busy"), None, 5)).await);
    assert_eq!((code.as_str(), retryable, details["status"].clone()), ("claim_locked", true, json!(503)));
    let (code, retryable, _) = failure(runner.run(claimed(&format!("{origin}/refused"), None, 5)).await);
    assert_eq!((code.as_str(), retryable), ("claim_closed", false));
    let (code, retryable, details) = failure(runner.run(claimed(&format!("{origin}/missing"), None, 5)).await);
    assert_eq!((code.as_str(), retryable), ("http_404", false));
    assert_eq!(details, json!({"status": 404, "body": "no skill at <path> here", "bodyTruncated": false}));
    let (code, retryable, _) = failure(runner.run(claimed(&format!("{origin}/broken"), None, 5)).await);
    assert_eq!((code.as_str(), retryable), ("http_502", true));
    let (code, retryable, _) = failure(runner.run(claimed(&format!("{origin}/list"), None, 5)).await);
    assert_eq!((code.as_str(), retryable), ("output_contract_violation", false));

    // A redirect is an answer, not an instruction: nothing is asked of /elsewhere.
    let (code, retryable, details) = failure(runner.run(claimed(&format!("{origin}/moved"), None, 5)).await);
    assert_eq!((code.as_str(), retryable, details["status"].clone()), ("unexpected_status", false, json!(302)));
    assert!(seen.0.lock().expect("seen").iter().all(|(path, ..)| path != "/elsewhere"));

    let (code, retryable, _) = failure(runner.run(claimed(&format!("{origin}/slow"), None, 1)).await);
    assert_eq!((code.as_str(), retryable), ("timeout", true));
}

#[tokio::test]
async fn the_guard_refuses_what_is_not_allowed_or_not_public() {
    let (port, seen) = serve().await;
    let origin = format!("http://127.0.0.1:{port}");
    let named = format!("http://localhost:{port}");

    // Loopback not listed as private: refused before any connection, as an address or by name
    // (`localhost` resolves to 127.0.0.1 through the system's resolver).
    let closed = remote(&[origin.clone(), named.clone()], &[], Arc::new(SystemLookup));
    for endpoint in [format!("{origin}/echo"), format!("{named}/echo")] {
        let (code, retryable, _) = failure(closed.run(claimed(&endpoint, None, 5)).await);
        assert_eq!((code.as_str(), retryable), ("endpoint_address_forbidden", false), "{endpoint}");
    }
    // A name that resolves to the cloud metadata address.
    #[derive(Debug)]
    struct Table(HashMap<String, Vec<IpAddr>>);
    impl Lookup for Table {
        fn lookup(&self, host: String) -> BoxFuture<'static, std::io::Result<Vec<IpAddr>>> {
            let found = self.0.get(&host).cloned().unwrap_or_default();
            Box::pin(async move { Ok(found) })
        }
    }
    let metadata = format!("http://metadata.test:{port}");
    let table = Table(HashMap::from([
        ("metadata.test".to_owned(), vec!["169.254.169.254".parse().expect("ip")]),
        ("inside.test".to_owned(), vec!["127.0.0.1".parse().expect("ip")]),
    ]));
    let inside = format!("http://inside.test:{port}");
    let mapped = remote(&[metadata.clone(), inside.clone()], &["inside.test"], Arc::new(table));
    let (code, _, _) = failure(mapped.run(claimed(&format!("{metadata}/echo"), None, 5)).await);
    assert_eq!(code, "endpoint_address_forbidden");
    assert!(seen.0.lock().expect("seen").is_empty(), "no request left");

    // A listed private host is admitted, and the request keeps its name.
    match mapped.run(claimed(&format!("{inside}/echo"), None, 5)).await {
        Outcome::Complete { output, .. } => assert_eq!(Value::Object(output), json!({"echo": {"claim": "C-7"}})),
        Outcome::Fail(error) => panic!("{error:?}"),
    }
    let host = seen.0.lock().expect("seen").last().and_then(|(.., host)| host.clone());
    assert_eq!(host, Some(format!("inside.test:{port}")), "connected to the checked address, by name");

    // An origin not in the allow-list: retryable, another executor may be allowed.
    let (code, retryable, _) =
        failure(closed.run(claimed(&format!("http://127.0.0.1:{}/echo", port + 1), None, 5)).await);
    assert_eq!((code.as_str(), retryable), ("endpoint_not_allowed", true));
    // A token only over https; an audience this executor may not get is retryable elsewhere.
    let open = remote(&[origin.clone(), "https://svc.test".into()], &["127.0.0.1"], Arc::new(SystemLookup));
    let (code, retryable, _) = failure(open.run(claimed(&format!("{origin}/echo"), Some("claims-api"), 5)).await);
    assert_eq!((code.as_str(), retryable), ("insecure_endpoint", false));
    let (code, retryable, _) = failure(open.run(claimed("https://svc.test/echo", Some("billing-api"), 5)).await);
    assert_eq!((code.as_str(), retryable), ("audience_not_allowed", true));
    let (code, retryable, _) = failure(open.run(claimed("https://svc.test/echo", Some("claims-api"), 5)).await);
    assert_eq!((code.as_str(), retryable), ("executor_auth_unavailable", true), "no token issuer yet");
    // Nobody listening: a transport error, retryable.
    let unused = std::net::TcpListener::bind("127.0.0.1:0").expect("bind").local_addr().expect("address").port();
    let gone = remote(&[format!("http://127.0.0.1:{unused}")], &["127.0.0.1"], Arc::new(SystemLookup));
    let (code, retryable, _) = failure(gone.run(claimed(&format!("http://127.0.0.1:{unused}/echo"), None, 5)).await);
    assert_eq!((code.as_str(), retryable), ("transport_error", true));
}
