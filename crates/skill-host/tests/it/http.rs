//! The HTTP host on 127.0.0.1 with tokens verified against a real JWKS server: every status
//! code, the processing order (token, skill, body), what reaches the skill, and calls that
//! outlive their caller.

use crate::demo;
use crate::tokens;

use std::sync::atomic::Ordering;
use std::time::Duration;

use reqwest::StatusCode;
use serde_json::{Value, json};
use skill_host::auth::{Access, Verifier};
use skill_host::http::HttpHost;
use skill_sdk::registry::Registry;
use tokens::{AUDIENCE, ISSUER, JwksServer, good_claims, sign};

const LIMIT: usize = 64 * 1024;

/// The demo host's skills: those this binary's other tests declare are linked too.
fn demo_skills() -> Registry {
    let linked = Registry::linked().expect("the linked skills");
    let demo = linked.skills().iter().copied().filter(|skill| skill.entrypoint().starts_with("it.demo:"));
    Registry::from_skills(demo.collect::<Vec<_>>()).expect("the demo skills")
}

struct Host {
    base: String,
    token: String,
    client: reqwest::Client,
    _jwks: JwksServer,
}

fn host() -> Host {
    let jwks = JwksServer::start(&["ec-1"]);
    let verifier = Verifier::new(ISSUER, AUDIENCE, &jwks.url).expect("configured");
    let registry = demo_skills();
    let base = skill_fixtures::serve(HttpHost::new(&registry, Access::verified(verifier), LIMIT).router());
    Host { base, token: sign("ec-1", &good_claims()), client: reqwest::Client::new(), _jwks: jwks }
}

impl Host {
    async fn post(&self, path: &str, token: Option<&str>, body: impl Into<reqwest::Body>) -> reqwest::Response {
        let mut request = self.client.post(format!("{}{path}", self.base)).body(body);
        if let Some(token) = token {
            request = request.bearer_auth(token);
        }
        request.send().await.expect("the host answers")
    }

    async fn call(&self, path: &str, body: Value) -> reqwest::Response {
        self.post(path, Some(&self.token), body.to_string()).await
    }
}

async fn envelope(response: reqwest::Response) -> (StatusCode, Value) {
    let status = response.status();
    (status, response.json::<Value>().await.expect("a JSON body"))
}

#[tokio::test]
async fn success_is_the_outputs_object_with_the_cost_in_a_header() {
    let host = host();
    let response = host.call("/skills/echo@1", json!({"inputs": {"text": "čaj ☕"}})).await;
    assert_eq!(response.status(), StatusCode::OK);
    let cost = response.headers()["x-skill-cost"].to_str().expect("ASCII").to_owned();
    assert_eq!(cost, r#"{"units":{"ops":1.0}}"#);
    assert!(response.headers().contains_key("x-request-id"));
    assert_eq!(response.json::<Value>().await.expect("JSON"), json!({"text": "čaj ☕"}));

    // No cost reported: no header.
    let response = host.call("/skills/whoami@1", json!({"inputs": {}})).await;
    assert_eq!(response.status(), StatusCode::OK);
    assert!(!response.headers().contains_key("x-skill-cost"));
}

#[tokio::test]
async fn the_skill_sees_the_verified_caller_the_ids_and_the_settings() {
    let host = host();
    let body = json!({
        "invocationId": "inv-1",
        "idempotencyKey": "key-1",
        "settings": {"package": "demo", "version": "1", "values": {"tier": "gold"}},
        "inputs": {},
    });
    let response = host
        .client
        .post(format!("{}/skills/whoami@1", host.base))
        .bearer_auth(&host.token)
        .header("x-request-id", "trace-7")
        .body(body.to_string())
        .send()
        .await
        .expect("answers");
    let (status, outputs) = envelope(response).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(outputs["request_id"], "trace-7", "the request id reaches the skill (and its log span)");
    assert_eq!(outputs["caller"]["sub"], "agent-7");
    assert_eq!(outputs["caller"]["iss"], ISSUER);
    assert_eq!(outputs["invocation_id"], "inv-1");
    assert_eq!(outputs["idempotency_key"], "key-1");
    assert_eq!(outputs["settings"], json!({"tier": "gold"}));
    assert_eq!(outputs["transport"], "http");
}

#[tokio::test]
async fn a_token_issued_for_one_call_serves_that_call_only() {
    let host = host();
    let mut claims = good_claims();
    claims["invocation_id"] = json!("inv-1");
    let bound = sign("ec-1", &claims);
    let body = |id: Value| json!({"invocationId": id, "inputs": {}}).to_string();
    let ok = host.post("/skills/whoami@1", Some(&bound), body(json!("inv-1"))).await;
    assert_eq!(ok.status(), StatusCode::OK);
    // … and for its skill only: a token issued for a read serves no write on the same host.
    claims["endpoint"] = json!("https://svc.example/prefix/skills/echo@1");
    let for_echo = sign("ec-1", &claims);
    let (status, refused) = envelope(host.post("/skills/whoami@1", Some(&for_echo), body(json!("inv-1"))).await).await;
    assert_eq!((status, refused["error"]["code"].clone()), (StatusCode::FORBIDDEN, json!("token_for_another_call")));
    assert_eq!(
        host.post(
            "/skills/echo@1",
            Some(&for_echo),
            json!({"invocationId": "inv-1", "inputs": {"text": "x"}}).to_string()
        )
        .await
        .status(),
        StatusCode::OK
    );
    // A catalog entry aimed at another skill's route: the token names the entry's version, and
    // the route's is another — refused even with the route's own endpoint.
    claims["endpoint"] = json!("https://svc.example/prefix/skills/whoami@1");
    claims["skill"] = json!("claim.peek@1");
    let aimed = sign("ec-1", &claims);
    let (status, refused) = envelope(host.post("/skills/whoami@1", Some(&aimed), body(json!("inv-1"))).await).await;
    assert_eq!((status, refused["error"]["code"].clone()), (StatusCode::FORBIDDEN, json!("token_for_another_call")));
    assert!(refused["error"]["message"].as_str().is_some_and(|m| m.contains("skill")), "{refused}");
    claims["skill"] = json!("whoami@1");
    let named = sign("ec-1", &claims);
    assert_eq!(host.post("/skills/whoami@1", Some(&named), body(json!("inv-1"))).await.status(), StatusCode::OK);
    for other in [json!("inv-2"), Value::Null] {
        let (status, refused) = envelope(host.post("/skills/whoami@1", Some(&bound), body(other.clone())).await).await;
        assert_eq!(
            (status, refused["error"]["code"].clone()),
            (StatusCode::FORBIDDEN, json!("token_for_another_call")),
            "{other}"
        );
    }
}

#[tokio::test]
async fn refusals_crashes_and_retryable_failures_have_their_statuses() {
    let host = host();
    let cases = [
        ("/skills/refuse@1", json!({"order": "A-1"}), StatusCode::UNPROCESSABLE_ENTITY, "order_unknown", false),
        ("/skills/echo@1", json!({"text": 7}), StatusCode::UNPROCESSABLE_ENTITY, "input_contract_violation", false),
        ("/skills/flaky@1", json!({}), StatusCode::SERVICE_UNAVAILABLE, "upstream_busy", true),
        ("/skills/crash@1", json!({}), StatusCode::INTERNAL_SERVER_ERROR, "skill_error", false),
        ("/skills/crash@1", json!({"panic": true}), StatusCode::INTERNAL_SERVER_ERROR, "skill_error", false),
    ];
    for (path, inputs, expected, code, retryable) in cases {
        let (status, body) = envelope(host.call(path, json!({ "inputs": inputs })).await).await;
        assert_eq!(status, expected, "{path} {body}");
        assert_eq!(body["error"]["code"], code, "{path} {body}");
        assert_eq!(body["error"]["retryable"], retryable, "{path}");
    }
    // A crash tells the caller what kind of error it was, never its text.
    let (_, body) = envelope(host.call("/skills/crash@1", json!({"inputs": {}})).await).await;
    assert_eq!(body["error"]["message"], "std::io::error::Error");
    assert!(!body.to_string().contains("nonexistent"), "{body}");
}

#[tokio::test]
async fn bad_bodies_are_400_and_name_what_to_send() {
    let host = host();
    let cases: [(&str, &str); 4] = [
        ("{", "not JSON"),
        ("[1, 2]", "must be a JSON object"),
        ("{}", "no `inputs`"),
        (r#"{"inputs": [1]}"#, "`inputs` must be a JSON object"),
    ];
    for (body, expected) in cases {
        let (status, envelope) = envelope(host.post("/skills/echo@1", Some(&host.token), body).await).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
        assert_eq!(envelope["error"]["code"], "bad_request");
        let message = envelope["error"]["message"].as_str().expect("a message");
        assert!(message.contains(expected), "{body}: {message}");
    }
}

/// Serving without tokens is a choice made by name: `Access::Anonymous` lets a caller in with no
/// token (and the skill sees no caller), where a verified host refuses the same request.
#[tokio::test]
async fn anonymous_serving_is_named_and_a_verified_host_refuses_no_token() {
    let registry = demo_skills();
    let open = skill_fixtures::serve(HttpHost::new(&registry, Access::Anonymous, LIMIT).router());
    let client = reqwest::Client::new();
    let response =
        client.post(format!("{open}/skills/whoami@1")).body(r#"{"inputs": {}}"#).send().await.expect("answers");
    let (status, outputs) = envelope(response).await;
    assert_eq!((status, outputs["caller"].clone()), (StatusCode::OK, Value::Null));
    let host = host();
    let (status, body) = envelope(host.post("/skills/whoami@1", None, r#"{"inputs": {}}"#).await).await;
    assert_eq!((status, body["error"]["code"].as_str()), (StatusCode::UNAUTHORIZED, Some("missing_authorization")));
}

/// One rule for every transport (the reference's): a malformed `settings` is no settings, and an
/// id or key that is not a non-empty string is not used — the call goes ahead (MCP: `mcp.rs`).
#[tokio::test]
async fn malformed_ids_and_settings_are_ignored_not_refused() {
    let host = host();
    for extra in [
        json!({"settings": 42}),
        json!({"settings": "x"}),
        json!({"settings": [1]}),
        json!({"settings": {"values": [1]}}),
        json!({"invocationId": 7, "idempotencyKey": false}),
        json!({"invocationId": "", "idempotencyKey": {}}),
    ] {
        let mut body = json!({"inputs": {}});
        body.as_object_mut().expect("an object").extend(extra.as_object().expect("an object").clone());
        let (status, outputs) = envelope(host.call("/skills/whoami@1", body.clone()).await).await;
        assert_eq!(status, StatusCode::OK, "{body}: {outputs}");
        assert_eq!(outputs["settings"], json!({}), "{body}");
        assert_eq!((outputs["invocation_id"].clone(), outputs["idempotency_key"].clone()), (Value::Null, Value::Null));
    }
}

#[tokio::test]
async fn tokens_are_checked_first_then_the_skill_then_the_body() {
    let host = host();
    let big = format!(r#"{{"inputs": {{"text": "{}"}}}}"#, "x".repeat(LIMIT));

    // Without a token an unknown skill is 401, not 404, and says how to authenticate.
    let response = host.post("/skills/nope@1", None, "{").await;
    assert_eq!(response.status(), StatusCode::UNAUTHORIZED);
    let challenge = response.headers()["www-authenticate"].to_str().expect("ASCII").to_owned();
    assert!(challenge.starts_with("Bearer "), "{challenge}");
    let (_, body) = envelope(response).await;
    assert_eq!(
        body["error"],
        json!({"code": "missing_authorization", "message": "missing_authorization", "retryable": false, "details": null,
               "error_type": "permission_denied", "skill_name": ""})
    );
    assert_eq!(host.post("/skills/echo@1", Some("not.a.token"), big.clone()).await.status(), StatusCode::UNAUTHORIZED);

    // With a token: the skill before the body.
    let (status, body) = envelope(host.post("/skills/nope@1", Some(&host.token), big.clone()).await).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(body["error"]["code"], "skill_not_hosted");
    let (status, _) = envelope(host.post("/skills/nope@1", Some(&host.token), "{").await).await;
    assert_eq!(status, StatusCode::NOT_FOUND);

    // Then the body's size, then its shape.
    let (status, body) = envelope(host.post("/skills/echo@1", Some(&host.token), big).await).await;
    assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE);
    assert_eq!(body["error"]["code"], "payload_too_large");
    assert_eq!(body["error"]["details"]["limitBytes"], LIMIT);
}

#[tokio::test]
async fn an_unreachable_key_set_is_503_and_retryable() {
    let registry = demo_skills();
    let verifier = Verifier::new(ISSUER, AUDIENCE, "http://127.0.0.1:9/jwks.json").expect("configured");
    let base = skill_fixtures::serve(HttpHost::new(&registry, Access::verified(verifier), LIMIT).router());
    let response = reqwest::Client::new()
        .post(format!("{base}/skills/echo@1"))
        .bearer_auth(sign("ec-1", &good_claims()))
        .body(r#"{"inputs": {"text": "x"}}"#)
        .send()
        .await
        .expect("answers");
    let (status, body) = envelope(response).await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(body["error"]["code"], "verification_unavailable");
    assert_eq!(body["error"]["retryable"], true);
}

#[tokio::test]
async fn listing_and_health_need_no_token() {
    let host = host();
    let client = &host.client;
    let health: Value =
        client.get(format!("{}/healthz", host.base)).send().await.expect("up").json().await.expect("JSON");
    assert_eq!(health, json!({"status": "ok"}));
    let listing: Value =
        client.get(format!("{}/skills", host.base)).send().await.expect("up").json().await.expect("JSON");
    let refs: Vec<&str> =
        listing["skills"].as_array().expect("skills").iter().filter_map(|s| s["ref"].as_str()).collect();
    assert_eq!(
        refs,
        [
            "crash@1",
            "echo-sync@1",
            "echo@1",
            "flaky@1",
            "orders/cancel@2",
            "record@1",
            "refuse@1",
            "slow@1",
            "whoami@1"
        ]
    );
    assert_eq!(
        listing["skills"][4],
        json!({"ref": "orders/cancel@2", "name": "orders/cancel", "version": "2", "path": "/skills/orders/cancel@2"})
    );

    // A namespaced skill is reachable at its path.
    let response = host
        .client
        .post(format!("{}/skills/orders/cancel@2", host.base))
        .bearer_auth(&host.token)
        .body(r#"{"inputs": {"order": "A-9"}, "idempotencyKey": "k-9"}"#)
        .send()
        .await
        .expect("answers");
    assert_eq!(response.status(), StatusCode::OK);
}

#[tokio::test]
async fn request_ids_are_taken_from_callers_when_plain_and_made_otherwise() {
    let host = host();
    let get = |id: &'static str| host.client.get(format!("{}/healthz", host.base)).header("x-request-id", id).send();
    let response = get("trace-42").await.expect("up");
    assert_eq!(response.headers()["x-request-id"], "trace-42");
    let response = get("has spaces").await.expect("up");
    let made = response.headers()["x-request-id"].to_str().expect("ASCII");
    assert_ne!(made, "has spaces");
    assert_eq!(made.len(), 36, "a UUID: {made}");
}

#[tokio::test]
async fn a_call_whose_caller_hangs_up_still_runs_to_its_end() {
    let host = host();
    let before = demo::SLOW_CALLS_DONE.load(Ordering::SeqCst);
    let hung_up = host
        .client
        .post(format!("{}/skills/slow@1", host.base))
        .bearer_auth(&host.token)
        .timeout(Duration::from_millis(100))
        .body(r#"{"inputs": {"ms": 400}}"#)
        .send()
        .await;
    assert!(hung_up.is_err_and(|e| e.is_timeout()), "the client gave up first");
    tokio::time::sleep(Duration::from_millis(900)).await;
    assert!(demo::SLOW_CALLS_DONE.load(Ordering::SeqCst) > before, "the call ran to its end");
}
