//! Requests a hostile client sends to the core, each refused with a clear answer and changing
//! nothing: how bodies are read, who learns what, cursors, schemas a skill cannot take, and the
//! data directory's permissions.

use std::os::unix::fs::PermissionsExt;

use reqwest::header::CONTENT_TYPE;
use serde_json::{Value, json};

use crate::api::{api, token};

fn leaf(name: &str, inputs: Value) -> Value {
    json!({"name": name, "version": "1", "sideEffects": "none", "riskLevel": "low",
           "contract": {"inputs": inputs, "outputs": {"type": "object"},
                        "implementation": {"protocol": "local", "entrypoint": "claims.skills:x"}}})
}

async fn send(base: &str, token: &str, media: Option<&str>, body: &str) -> (u16, Value) {
    let mut request =
        reqwest::Client::new().post(format!("{base}/api/v1/skills")).bearer_auth(token).body(body.to_owned());
    if let Some(media) = media {
        request = request.header(CONTENT_TYPE, media);
    }
    let answer = request.send().await.expect("answers");
    (answer.status().as_u16(), answer.json().await.unwrap_or(Value::Null))
}

fn code(answer: &(u16, Value)) -> (u16, &str) {
    (answer.0, answer.1["error"]["code"].as_str().unwrap_or_default())
}

#[tokio::test]
async fn bodies_are_read_strictly_and_only_for_callers_who_may_write() {
    let api = api().await;
    let good = leaf("a.b", json!({"type": "object"})).to_string();
    let json = Some("application/json");
    assert_eq!(code(&send(&api.base, &api.admin, None, &good).await), (415, "unsupported_media_type"));
    assert_eq!(code(&send(&api.base, &api.admin, Some("text/plain"), &good).await), (415, "unsupported_media_type"));
    let array = r#"["a.b", "1"]"#;
    let answer = send(&api.base, &api.admin, json, array).await;
    assert_eq!(code(&answer), (400, "invalid_request"));
    assert!(answer.1["error"]["message"].as_str().unwrap_or_default().contains("not an array"), "{}", answer.1);
    let twice = r#"{"name": "a.b", "name": "evil.x", "protocol": "http"}"#;
    let answer = send(&api.base, &api.admin, json, twice).await;
    assert_eq!(code(&answer), (400, "invalid_request"));
    assert!(answer.1["error"]["message"].as_str().unwrap_or_default().contains("appears twice"), "{}", answer.1);

    // A caller who may not publish learns nothing from the body's shape.
    let reader = token(&api.engine, "reader", &["org.read"]).await;
    for body in ["{", "[1]", r#"{"colour": "red"}"#] {
        assert_eq!(code(&send(&api.base, &reader, json, body).await), (403, "permission_denied"), "{body}");
    }
    // The scheme of the Authorization header is case-insensitive.
    for scheme in ["bearer", "BEARER", "Bearer"] {
        let answer = reqwest::Client::new()
            .get(format!("{}/api/v1/skills", api.base))
            .header("authorization", format!("{scheme} {}", api.admin))
            .send()
            .await
            .expect("answers");
        assert_eq!(answer.status().as_u16(), 200, "{scheme}");
    }
    assert_eq!(code(&send(&api.base, &api.admin, Some("application/json; charset=utf-8"), &good).await).0, 201);
    let events = api.engine.store().events(0, None, 100).await.expect("events");
    let published = events.iter().filter(|event| event.kind == "skill.registered").count();
    assert_eq!(published, 1, "only the good publication");
}

#[tokio::test]
async fn cursors_and_schemas_a_skill_cannot_take_are_refused() {
    let api = api().await;
    let json = Some("application/json");
    for garbage in ["garbage", "%27%20OR%201%3D1%20--", "00000000"] {
        let answer = reqwest::Client::new()
            .get(format!("{}/api/v1/skills?cursor={garbage}", api.base))
            .bearer_auth(&api.admin)
            .send()
            .await
            .expect("answers");
        let status = answer.status().as_u16();
        let body: Value = answer.json().await.expect("JSON");
        assert_eq!((status, body["error"]["details"]["field"].as_str()), (400, Some("cursor")), "{garbage}: {body}");
    }
    for inputs in [json!({"type": "string"}), json!({"type": ["array", "null"]})] {
        let answer = send(&api.base, &api.admin, json, &leaf("a.b", inputs.clone()).to_string()).await;
        assert_eq!(answer.0, 422, "{inputs}: {}", answer.1);
        assert!(answer.1["error"]["message"].as_str().unwrap_or_default().contains("JSON object"), "{}", answer.1);
    }
    let nullable = leaf("a.c", json!({"type": ["object", "null"]})).to_string();
    assert_eq!(send(&api.base, &api.admin, json, &nullable).await.0, 201);
}

#[tokio::test]
async fn the_data_directory_is_the_owners_alone() {
    let scratch = skill_fixtures::Scratch::new("skill-core-perms");
    let folder = scratch.path().join("data");
    let store = skill_store::open(folder.to_str().expect("utf-8"), &Default::default()).await.expect("store");
    drop(store);
    let mode = |path: &std::path::Path| std::fs::metadata(path).expect("exists").permissions().mode() & 0o777;
    assert_eq!(mode(&folder), 0o700);
    assert_eq!(mode(&folder.join("core.db")), 0o600);
}

#[tokio::test]
async fn a_composite_tool_names_its_server_by_a_safe_address() {
    let api = api().await;
    let json = Some("application/json");
    let composite = |name: &str, server: &str| {
        json!({"name": name, "version": "1", "tools": [{"name": "find", "source": "mcp", "server": server,
                                                        "writes": false, "riskLevel": "low"}]})
        .to_string()
    };
    for (server, expected) in [
        ("javascript:alert(1)", "invalid_skill_document"),
        ("https://user:secret@mcp.example/mcp", "secret_material_rejected"),
        ("https://mcp.example/mcp?access_token=abc", "secret_material_rejected"),
        ("stdio:", "invalid_skill_document"),
    ] {
        let answer = send(&api.base, &api.admin, json, &composite("a.bad", server)).await;
        assert_eq!(code(&answer), (422, expected), "{server}: {}", answer.1);
    }
    for (name, server) in [("a.http", "https://mcp.example/mcp"), ("a.stdio", "stdio:crm")] {
        let answer = send(&api.base, &api.admin, json, &composite(name, server)).await;
        assert_eq!(answer.0, 201, "{server}: {}", answer.1);
    }
}

#[tokio::test]
async fn every_refusal_of_a_route_has_the_envelope() {
    let api = api().await;
    let client = reqwest::Client::new();
    let answer =
        client.delete(format!("{}/api/v1/skills", api.base)).bearer_auth(&api.admin).send().await.expect("answers");
    assert_eq!(answer.status().as_u16(), 405);
    let body: Value = answer.json().await.expect("an envelope");
    assert_eq!(body["error"]["code"], "method_not_allowed", "{body}");
    assert_eq!(body["error"]["details"]["allowed"], json!(["POST", "GET"]), "{body}");
    assert!(body["error"]["requestId"].is_string(), "{body}");
    for path in
        ["/api/v1/packages/claims?colour=red", "/api/v1/skills/a.b@1?debug=1", "/api/v1/principals/x/skills?all"]
    {
        let answer = client.get(format!("{}{path}", api.base)).bearer_auth(&api.admin).send().await.expect("answers");
        assert_eq!(answer.status().as_u16(), 400, "{path}");
        let body: Value = answer.json().await.expect("an envelope");
        assert_eq!(body["error"]["code"], "invalid_request", "{path}: {body}");
    }
    let answer = client.get(format!("{}/api/v1/nowhere/at/all", api.base)).send().await.expect("answers");
    assert_eq!(answer.status().as_u16(), 404);
    assert_eq!(answer.json::<Value>().await.expect("an envelope")["error"]["code"], "not_found");
}

#[tokio::test]
async fn no_credential_is_published_anywhere_in_a_version_or_an_assignment() {
    let api = api().await;
    let json = Some("application/json");
    let pem = "see -----BEGIN PRIVATE KEY----- MIIEvQ";
    let jwt = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2lnbmF0dXJl";
    let mut with_default =
        leaf("a.jwt", json!({"type": "object", "properties": {"t": {"type": "string", "default": jwt}}}));
    with_default["description"] = json!("fine");
    let mut with_pem = leaf("a.pem", json!({"type": "object"}));
    with_pem["description"] = json!(pem);
    let row = json!({"name": "a.row", "protocol": "http", "config": {"mode": "sk_live_0123456789abcdefghijkl"}});
    let mut signed = leaf("a.sig", json!({"type": "object"}));
    signed["contract"]["implementation"] =
        json!({"protocol": "http", "endpoint": "https://blob.example/f?sv=1&sig=abcdef"});
    for (body, field) in [
        (with_pem, "description"),
        (with_default, "contract.inputs.properties.t.default"),
        (row, "config.mode"),
        (signed, "contract.implementation.endpoint"),
    ] {
        let answer = send(&api.base, &api.admin, json, &body.to_string()).await;
        assert_eq!(code(&answer), (422, "secret_material_rejected"), "{field}: {}", answer.1);
        assert_eq!(answer.1["error"]["details"]["field"], field, "{}", answer.1);
        assert!(!answer.1.to_string().contains("sk_live_0123"), "the secret is not echoed");
    }
    let published = send(&api.base, &api.admin, json, &leaf("a.ok", json!({"type": "object"})).to_string()).await;
    assert_eq!(published.0, 201, "{}", published.1);
    let principal = token(&api.engine, "bot", &["skills.invoke"]).await;
    let bot = api.engine.authenticate(&principal).await.expect("bot").id().to_owned();
    let assign = reqwest::Client::new()
        .post(format!("{}/api/v1/principals/{bot}/skills", api.base))
        .bearer_auth(&api.admin)
        .json(&json!({"skillId": "a.ok@1", "metadata": {"password": "hunter2"}}))
        .send()
        .await
        .expect("answers");
    assert_eq!(assign.status().as_u16(), 422);
    let body: Value = assign.json().await.expect("JSON");
    assert_eq!(body["error"]["details"]["field"], "metadata.password", "{body}");
}

#[tokio::test]
async fn a_page_is_bounded_in_bytes_and_the_cursor_goes_on_from_where_it_stopped() {
    let api = api().await;
    let json = Some("application/json");
    let big = "x".repeat(400 * 1024);
    for n in 0..12 {
        let inputs = json!({"type": "object", "description": big});
        let answer = send(&api.base, &api.admin, json, &leaf(&format!("big.s{n:02}"), inputs).to_string()).await;
        assert_eq!(answer.0, 201, "{}", answer.1);
    }
    let client = reqwest::Client::new();
    let (mut seen, mut cursor, mut pages) = (Vec::new(), None::<String>, 0);
    loop {
        let mut url = format!("{}/api/v1/skills?limit=200", api.base);
        if let Some(cursor) = &cursor {
            url.push_str(&format!("&cursor={cursor}"));
        }
        let bytes = client.get(url).bearer_auth(&api.admin).send().await.expect("answers").bytes().await.expect("body");
        assert!(bytes.len() <= skill_engine::MAX_PAGE_BYTES + 64 * 1024, "a page of {} bytes", bytes.len());
        let page: Value = serde_json::from_slice(&bytes).expect("JSON");
        seen.extend(
            page["items"]
                .as_array()
                .expect("items")
                .iter()
                .map(|item| item["name"].as_str().expect("a name").to_owned()),
        );
        pages += 1;
        match page["nextCursor"].as_str() {
            Some(next) => cursor = Some(next.to_owned()),
            None => break,
        }
    }
    assert!(pages >= 2, "12 versions of 400 KiB do not fit one page");
    let expected: Vec<String> = (0..12).map(|n| format!("big.s{n:02}")).collect();
    assert_eq!(seen, expected, "every version once, in order, across the pages");
}

#[tokio::test]
async fn a_body_far_over_the_limit_gets_the_413_answer_not_a_reset() {
    let api = api().await;
    // Larger than the apply route's 32 MiB: the client is still sending when the core refuses.
    let huge = format!(r#"{{"package": {{"key": "p", "version": "1"}}, "note": "{}"}}"#, "x".repeat(40 * 1024 * 1024));
    let answer = reqwest::Client::new()
        .post(format!("{}/api/v1/packages:apply", api.base))
        .bearer_auth(&api.admin)
        .header(CONTENT_TYPE, "application/json")
        .body(huge)
        .send()
        .await
        .expect("the core answers instead of resetting the connection");
    assert_eq!(answer.status().as_u16(), 413);
    let body: Value = answer.json().await.expect("an envelope");
    assert_eq!(body["error"]["details"]["limitBytes"], skill_api::MAX_APPLY_BYTES, "{body}");
}

#[tokio::test]
async fn re_assigning_with_new_metadata_changes_it_and_says_so() {
    let api = api().await;
    let json = Some("application/json");
    assert_eq!(send(&api.base, &api.admin, json, &leaf("a.ok", json!({"type": "object"})).to_string()).await.0, 201);
    let bot_token = token(&api.engine, "bot", &["skills.invoke"]).await;
    let bot = api.engine.authenticate(&bot_token).await.expect("bot").id().to_owned();
    let client = reqwest::Client::new();
    let assign = |metadata: Value| {
        client
            .post(format!("{}/api/v1/principals/{bot}/skills", api.base))
            .bearer_auth(&api.admin)
            .json(&json!({"skillId": "a.ok@1", "metadata": metadata}))
            .send()
    };
    let mut answers = Vec::new();
    for metadata in [json!({"why": "triage"}), json!({"why": "triage"}), json!({"why": "escalations"})] {
        let answer = assign(metadata).await.expect("answers");
        let status = answer.status().as_u16();
        let body: Value = answer.json().await.expect("JSON");
        answers.push((status, body["created"].as_bool(), body["updated"].as_bool()));
    }
    assert_eq!(
        answers,
        [(201, Some(true), Some(false)), (200, Some(false), Some(false)), (200, Some(false), Some(true))]
    );
    let held: Value = client
        .get(format!("{}/api/v1/principals/{bot}/skills", api.base))
        .bearer_auth(&api.admin)
        .send()
        .await
        .expect("answers")
        .json()
        .await
        .expect("JSON");
    assert_eq!(held["items"][0]["metadata"], json!({"why": "escalations"}));
}
