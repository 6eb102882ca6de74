//! The MCP host driven by rmcp's client: over stdio (the demo host as a child process) and over
//! streamable HTTP on 127.0.0.1 with tokens checked against a real JWKS server.

use crate::demo;
use crate::demo_binary;
use crate::tokens;

use rmcp::model::{CallToolRequestParams, CallToolResult, ContentBlock, MetaObject, RequestMetaObject};
use rmcp::service::RunningService;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{RoleClient, ServiceExt};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use skill_host::auth::{Access, Verifier};
use skill_host::mcp::McpHost;
use skill_host::mcp_http::{self, AllowedHosts};
use skill_sdk::registry::Registry;
use skill_sdk::{Skill, SkillError, skill};
use tokens::{AUDIENCE, ISSUER, JwksServer, good_claims, sign};
use tokio_util::sync::CancellationToken;

#[derive(Debug, Deserialize, JsonSchema)]
pub(crate) struct Empty {}

#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct Done {}

/// A second version of the demo's echo.
#[skill("echo", version = "2", side_effects = "none", risk = "low")]
pub(crate) fn echo_two(_inputs: Empty) -> Result<Done, SkillError> {
    Ok(Done {})
}

/// A skill whose name is the tool name of the demo's `orders/cancel`.
#[skill("orders.cancel", version = "1", side_effects = "none", risk = "low")]
pub(crate) fn dotted(_inputs: Empty) -> Result<Done, SkillError> {
    Ok(Done {})
}

fn demo_skills() -> Registry {
    let skills: [&'static Skill; 7] = [
        &demo::echo::SKILL,
        &demo::whoami::SKILL,
        &demo::slow::SKILL,
        &demo::refuse::SKILL,
        &demo::flaky::SKILL,
        &demo::crash::SKILL,
        &demo::cancel::SKILL,
    ];
    Registry::from_skills(skills).expect("the demo skills")
}

type Client = RunningService<RoleClient, ()>;

async fn stdio_client() -> Client {
    let mut command = tokio::process::Command::new(demo_binary::demo_host());
    command.args(["serve", "mcp-stdio"]).env("SKILL_LOG", "warn");
    ().serve(TokioChildProcess::new(command).expect("the host starts")).await.expect("the MCP session opens")
}

fn call(tool: &str, arguments: Value, meta: Value) -> CallToolRequestParams {
    let mut params = CallToolRequestParams::new(tool.to_owned())
        .with_arguments(arguments.as_object().cloned().expect("arguments are an object"));
    if let Value::Object(meta) = meta {
        params.meta = Some(RequestMetaObject(MetaObject(meta)));
    }
    params
}

fn text(result: &CallToolResult) -> &str {
    assert_eq!(result.content.len(), 1, "exactly one block: {result:?}");
    match &result.content[0] {
        ContentBlock::Text(block) => &block.text,
        other => panic!("a text block, got {other:?}"),
    }
}

fn error_of(result: &CallToolResult) -> Value {
    assert_eq!(result.is_error, Some(true), "{result:?}");
    assert!(result.structured_content.is_none());
    let envelope: Value = serde_json::from_str(text(result)).expect("the envelope is JSON");
    envelope["error"].clone()
}

#[tokio::test]
async fn tools_carry_the_contract_schemas_annotations_and_policy() {
    let client = stdio_client().await;
    let tools = client.list_all_tools().await.expect("tools/list");
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    assert_eq!(names, ["crash", "echo", "echo-sync", "flaky", "orders.cancel", "record", "refuse", "slow", "whoami"]);

    let echo = tools.iter().find(|t| t.name == "echo").expect("echo");
    let contract = demo::echo::SKILL.contract().expect("contract");
    assert_eq!(Value::Object((*echo.input_schema).clone()), *contract.inputs());
    assert_eq!(echo.output_schema.as_deref().map(|s| Value::Object(s.clone())), Some(contract.outputs().clone()));
    assert_eq!(echo.description.as_deref(), Some("Return the text unchanged; costs one op."));
    let hints = echo.annotations.as_ref().expect("annotations");
    assert_eq!(
        (hints.read_only_hint, hints.destructive_hint, hints.idempotent_hint, hints.open_world_hint),
        (Some(true), Some(false), Some(true), Some(true))
    );

    let cancel = tools.iter().find(|t| t.name == "orders.cancel").expect("the namespaced skill");
    let hints = cancel.annotations.as_ref().expect("annotations");
    assert_eq!(
        (hints.read_only_hint, hints.destructive_hint, hints.idempotent_hint, hints.open_world_hint),
        (Some(false), Some(true), Some(false), Some(true)),
        "a write deduplicated by its key is not idempotent in its arguments"
    );
    let meta = Value::Object(cancel.meta.as_ref().expect("_meta").0.clone());
    assert_eq!(meta["skill/ref"], "orders/cancel@2");
    assert_eq!(meta["skill/version"], "2");
    assert_eq!(meta["skill/policy"]["sideEffects"], "external_write");
    assert_eq!(meta["skill/policy"]["riskLevel"], "high");
    assert_eq!(meta["skill/policy"]["idempotency"], "required");
    assert_eq!(meta["skill/policy"]["requiredPermissions"], json!(["orders.cancel"]));
    assert_eq!(meta["skill/policy"]["costModel"], json!({"unit": "call", "estimate": 1}));
    client.cancel().await.expect("closes");
}

#[tokio::test]
async fn calls_over_stdio_carry_meta_and_report_outputs_cost_and_errors() {
    let client = stdio_client().await;

    let result = client.call_tool(call("echo", json!({"text": "čaj ☕"}), json!({}))).await.expect("tools/call");
    assert_eq!(result.is_error, Some(false));
    assert_eq!(result.structured_content, Some(json!({"text": "čaj ☕"})));
    assert_eq!(text(&result), r#"{"text":"čaj ☕"}"#, "the same JSON, Unicode kept");
    let meta = result.meta.as_ref().expect("_meta");
    assert_eq!(meta.0["skill/cost"], json!({"units": {"ops": 1.0}}));

    let settings = json!({"package": "demo", "version": "1", "values": {"tier": "gold"}});
    let meta = json!({"skill/invocationId": "inv-7", "skill/idempotencyKey": "key-7", "skill/settings": settings});
    let result = client.call_tool(call("whoami", json!({}), meta)).await.expect("tools/call");
    let seen = result.structured_content.expect("outputs");
    assert_eq!(seen["invocation_id"], "inv-7");
    assert_eq!(seen["idempotency_key"], "key-7");
    assert_eq!(seen["settings"], json!({"tier": "gold"}));
    assert_eq!(seen["transport"], "mcp");
    assert_eq!(seen["caller"], Value::Null, "stdio has no token");
    assert_eq!(seen["request_id"], Value::Null, "stdio has no HTTP request");
    assert!(result.meta.is_none(), "no cost reported, no _meta");

    // Empty or non-string ids are not used; malformed settings are no settings (as over HTTP).
    for settings in [json!(42), json!("x"), json!([1])] {
        let meta = json!({"skill/invocationId": "", "skill/idempotencyKey": 9, "skill/settings": settings});
        let seen = client.call_tool(call("whoami", json!({}), meta)).await.expect("tools/call").structured_content;
        let seen = seen.expect("outputs");
        assert_eq!((seen["invocation_id"].clone(), seen["idempotency_key"].clone()), (Value::Null, Value::Null));
        assert_eq!(seen["settings"], json!({}), "{settings}");
    }

    let error = error_of(&client.call_tool(call("refuse", json!({"order": "A-1"}), json!({}))).await.expect("call"));
    assert_eq!(error["code"], "order_unknown");
    assert_eq!(error["message"], "no order A-1 — nothing to do");
    assert_eq!(error["details"], json!({"order": "A-1"}));

    let error = error_of(&client.call_tool(call("echo", json!({"text": 7}), json!({}))).await.expect("call"));
    assert_eq!(error["code"], "input_contract_violation");

    let error = error_of(&client.call_tool(call("flaky", json!({}), json!({}))).await.expect("call"));
    assert_eq!((error["code"].clone(), error["retryable"].clone()), (json!("upstream_busy"), json!(true)));

    let error = error_of(&client.call_tool(call("nope", json!({}), json!({}))).await.expect("not a protocol error"));
    assert_eq!(error["code"], "skill_not_hosted");
    client.cancel().await.expect("closes");
}

struct HttpMcp {
    url: String,
    token: String,
    _jwks: JwksServer,
}

fn http_mcp() -> HttpMcp {
    let jwks = JwksServer::start(&["ed-1"]);
    let verifier = Verifier::new(ISSUER, AUDIENCE, &jwks.url).expect("configured");
    let host = McpHost::new(&demo_skills(), "demo").expect("no clashes");
    let allowed = AllowedHosts::defaults_for("127.0.0.1");
    let router = mcp_http::router(host, Access::verified(verifier), &allowed, 1 << 20, CancellationToken::new());
    let base = skill_fixtures::serve(router);
    HttpMcp { url: format!("{base}/mcp"), token: sign("ed-1", &good_claims()), _jwks: jwks }
}

#[tokio::test]
async fn streamable_http_serves_rmcp_clients_with_a_token() {
    let server = http_mcp();
    let config = StreamableHttpClientTransportConfig::with_uri(server.url.clone()).auth_header(server.token.clone());
    let client = ().serve(StreamableHttpClientTransport::from_config(config)).await.expect("the MCP session opens");
    assert_eq!(client.list_all_tools().await.expect("tools/list").len(), 7);
    let result = client.call_tool(call("whoami", json!({}), json!({"skill/invocationId": "h-1"}))).await.expect("call");
    let seen = result.structured_content.expect("outputs");
    assert_eq!(seen["invocation_id"], "h-1");
    assert_eq!(seen["caller"]["sub"], "agent-7", "the verified claims reach the skill");
    assert_eq!(seen["request_id"].as_str().map(str::len), Some(36), "the HTTP request's id: {seen}");
    let result = client.call_tool(call("echo", json!({"text": "x"}), json!({}))).await.expect("call");
    assert_eq!(result.meta.expect("_meta").0["skill/cost"], json!({"units": {"ops": 1.0}}));
    client.cancel().await.expect("closes");
}

async fn raw_post(url: &str, token: Option<&str>, host: Option<&str>) -> reqwest::Response {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}});
    let mut request = reqwest::Client::new()
        .post(url)
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json")
        .body(body.to_string());
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    if let Some(host) = host {
        request = request.header("host", host);
    }
    request.send().await.expect("the host answers")
}

#[tokio::test]
async fn streamable_http_checks_the_token_of_every_request_before_mcp() {
    let server = http_mcp();
    let response = raw_post(&server.url, None, None).await;
    assert_eq!(response.status(), reqwest::StatusCode::UNAUTHORIZED);
    assert!(response.headers().contains_key("www-authenticate"));
    let body: Value = response.json().await.expect("the envelope");
    assert_eq!(body["error"]["code"], "missing_authorization");

    let expired = sign("ed-1", &json!({"iss": ISSUER, "aud": AUDIENCE, "exp": tokens::now() - 3600}));
    let body: Value = raw_post(&server.url, Some(&expired), None).await.json().await.expect("the envelope");
    assert_eq!(body["error"]["code"], "token_expired");

    let response = raw_post(&server.url, Some(&server.token), None).await;
    assert_eq!(response.status(), reqwest::StatusCode::OK);
    let body: Value = response.json().await.expect("JSON-RPC");
    assert_eq!(body["result"]["tools"].as_array().map(Vec::len), Some(7));
}

#[tokio::test]
async fn streamable_http_refuses_hosts_it_was_not_told_about() {
    let server = http_mcp();
    let response = raw_post(&server.url, Some(&server.token), Some("attacker.example")).await;
    assert!(response.status().is_client_error(), "{}", response.status());
    assert_eq!(raw_post(&server.url, Some(&server.token), Some("localhost")).await.status(), reqwest::StatusCode::OK);
}

#[test]
fn two_versions_of_one_skill_or_one_tool_name_are_refused_at_start() {
    let two_versions = Registry::from_skills([&demo::echo::SKILL, &echo_two::SKILL]).expect("distinct refs");
    let error = McpHost::new(&two_versions, "demo").expect_err("refused").to_string();
    assert!(
        error.contains("two versions of one skill") && error.contains("echo@1") && error.contains("echo@2"),
        "{error}"
    );

    let same_tool = Registry::from_skills([&demo::cancel::SKILL, &dotted::SKILL]).expect("distinct refs");
    let error = McpHost::new(&same_tool, "demo").expect_err("refused").to_string();
    assert!(error.contains("orders/cancel@2") && error.contains("orders.cancel@1"), "{error}");
    assert!(error.contains("`orders.cancel`"), "{error}");
}

/// What the 2025-11-25 transport and JSON-RPC require where rmcp alone answers otherwise:
/// a foreign or `null` Origin is 403, a body that is not JSON is 400 with `-32700` and
/// `"id": null`, and malformed `tools/call` params are `-32602` (not `-32601`) with the id.
#[tokio::test]
async fn streamable_http_refuses_foreign_origins_and_names_malformed_messages() {
    let host = McpHost::new(&demo_skills(), "demo").expect("no clashes");
    let allowed = AllowedHosts::defaults_for("127.0.0.1");
    let router = mcp_http::router(host, Access::Anonymous, &allowed, 1 << 20, CancellationToken::new());
    let url = format!("{}/mcp", skill_fixtures::serve(router));
    let client = reqwest::Client::new();
    let post = |body: String, origin: Option<&str>| {
        let mut request = client
            .post(&url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(body);
        if let Some(origin) = origin {
            request = request.header("origin", origin);
        }
        async move {
            let response = request.send().await.expect("answers");
            let status = response.status().as_u16();
            (status, response.json::<Value>().await.unwrap_or(Value::Null))
        }
    };
    let list = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}).to_string();
    for foreign in ["http://evil.example", "null", "http://127.0.0.1.evil.example:80", "file://"] {
        let (status, body) = post(list.clone(), Some(foreign)).await;
        assert_eq!(status, 403, "Origin: {foreign}");
        assert_eq!(body["id"], Value::Null, "{body}");
    }
    let port = url.split(':').nth(2).and_then(|rest| rest.split('/').next()).expect("a port");
    for own in [format!("http://127.0.0.1:{port}"), "http://localhost".to_owned(), "https://[::1]:9".to_owned()] {
        let (status, body) = post(list.clone(), Some(&own)).await;
        assert_eq!(status, 200, "Origin: {own}: {body}");
        assert!(body["result"]["tools"].is_array(), "{body}");
    }

    let (status, body) = post("{\"jsonrpc\": ".to_owned(), None).await;
    assert_eq!((status, body["error"]["code"].clone(), body["id"].clone()), (400, json!(-32700), Value::Null));
    for params in [json!({"name": "echo", "arguments": [1]}), json!({"arguments": {}}), json!([1])] {
        let call = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": params});
        let (status, body) = post(call.to_string(), None).await;
        assert_eq!(
            (status, body["error"]["code"].clone(), body["id"].clone()),
            (200, json!(-32602), json!(7)),
            "{params}"
        );
    }
}

/// The same screen over stdio: every malformed line gets an answer with an `id` (`null` when the
/// message has none), and well-formed traffic still reaches rmcp.
#[tokio::test]
async fn stdio_answers_malformed_lines_with_an_id() {
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

    let mut child = tokio::process::Command::new(demo_binary::demo_host())
        .args(["serve", "mcp-stdio"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("the host starts");
    let mut stdin = child.stdin.take().expect("stdin");
    let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
    let mut exchange = async |line: String| {
        stdin.write_all(format!("{line}\n").as_bytes()).await.expect("written");
        let answer = tokio::time::timeout(std::time::Duration::from_secs(10), lines.next_line()).await;
        let answer = answer.expect("an answer in time").expect("readable").expect("a line");
        serde_json::from_str::<Value>(&answer).expect("JSON")
    };
    let cases = [
        ("{".to_owned(), -32700, Value::Null),
        (r#"{"id": 3, "method": "ping"}"#.to_owned(), -32600, json!(3)),
        (r#"{"hello": "world"}"#.to_owned(), -32600, Value::Null),
        (
            json!({"jsonrpc": "2.0", "id": "c-1", "method": "tools/call", "params": {"name": "echo", "arguments": [1]}})
                .to_string(),
            -32602,
            json!("c-1"),
        ),
    ];
    for (line, code, id) in cases {
        let answer = exchange(line.clone()).await;
        let object = answer.as_object().expect("an object");
        assert!(object.contains_key("id"), "the error names an id, null if need be: {answer}");
        assert_eq!((answer["error"]["code"].clone(), answer["id"].clone()), (json!(code), id), "{line}");
    }
    let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}});
    let answer = exchange(initialize.to_string()).await;
    assert_eq!(answer["id"], 1);
    assert!(answer["result"]["serverInfo"].is_object(), "rmcp still answers what is well-formed: {answer}");
}
