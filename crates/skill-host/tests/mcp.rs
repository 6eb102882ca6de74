//! The MCP host driven by rmcp's client: over stdio (the demo host as a child process) and over
//! streamable HTTP on 127.0.0.1 with tokens checked against a real JWKS server.

#[path = "../examples/demo_host/skills.rs"]
mod demo;
#[path = "support/demo.rs"]
mod demo_binary;
#[path = "support/tokens.rs"]
mod tokens;

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
    assert_eq!(names, ["crash", "echo", "echo-sync", "flaky", "orders.cancel", "refuse", "slow", "whoami"]);

    let echo = tools.iter().find(|t| t.name == "echo").expect("echo");
    let contract = demo::echo::SKILL.contract().expect("contract");
    assert_eq!(Value::Object((*echo.input_schema).clone()), *contract.inputs());
    assert_eq!(echo.output_schema.as_deref().map(|s| Value::Object(s.clone())), Some(contract.outputs().clone()));
    assert_eq!(echo.description.as_deref(), Some("Return the text unchanged; costs one op."));
    let hints = echo.annotations.as_ref().expect("annotations");
    assert_eq!(
        (hints.read_only_hint, hints.destructive_hint, hints.idempotent_hint, hints.open_world_hint),
        (Some(true), Some(false), Some(true), Some(false))
    );

    let cancel = tools.iter().find(|t| t.name == "orders.cancel").expect("the namespaced skill");
    let hints = cancel.annotations.as_ref().expect("annotations");
    assert_eq!(
        (hints.read_only_hint, hints.destructive_hint, hints.idempotent_hint, hints.open_world_hint),
        (Some(false), Some(true), Some(true), Some(true))
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
