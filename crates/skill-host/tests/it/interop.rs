//! Clients from other ecosystems drive the demo host over stdio and over streamable HTTP: the
//! Python `mcp` client (`tests/it/support/mcp_interop.py`) and the TypeScript MCP SDK's client
//! (`tests/it/support/mcp_interop.cjs`, which also checks every `structuredContent` against the
//! tool's `outputSchema` itself). Each script reports what it saw; these tests judge it.
//!
//! Needs a Python with `mcp` 2.3.0 (`SKILL_TEST_PYTHON`, else `python3`) and Node.js with
//! `@modelcontextprotocol/sdk` installed in `SKILL_TEST_NODE`; `cargo xtask setup` provides
//! both and the test command sets the variables.

use crate::demo_binary;
use crate::tokens;

use std::process::Command;

use serde_json::{Value, json};
use skill_fixtures::{Output, Running};
use tokens::{AUDIENCE, ISSUER, JwksServer, good_claims, sign};

/// A client from another ecosystem, and the prefix of the invocation ids it sends.
#[derive(Debug, Clone, Copy)]
enum Peer {
    Python,
    TypeScript,
}

impl Peer {
    fn prefix(self) -> &'static str {
        match self {
            Self::Python => "py",
            Self::TypeScript => "ts",
        }
    }
}

fn observe(peer: Peer, args: &[&str]) -> Value {
    let mut command = match peer {
        Peer::Python => {
            let mut command = Command::new(std::env::var("SKILL_TEST_PYTHON").unwrap_or_else(|_| "python3".to_owned()));
            command.arg(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/it/support/mcp_interop.py"));
            command
        }
        Peer::TypeScript => {
            let mut command = Command::new("node");
            command.arg(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/it/support/mcp_interop.cjs"));
            command
        }
    };
    let output = command.args(args).output().expect("the client runs");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "the {peer:?} client failed (cargo xtask setup installs it; SKILL_TEST_PYTHON, SKILL_TEST_NODE): {stderr}"
    );
    serde_json::from_slice(&output.stdout).unwrap_or_else(|e| panic!("a JSON report: {e}; stderr: {stderr}"))
}

fn error_of(result: &Value) -> Value {
    assert_eq!(result["isError"], true, "{result}");
    let blocks = result["content"].as_array().expect("content");
    assert_eq!(blocks.len(), 1, "one text block: {result}");
    assert_eq!(blocks[0]["type"], "text");
    let envelope: Value = serde_json::from_str(blocks[0]["text"].as_str().expect("text")).expect("JSON");
    envelope["error"].clone()
}

/// What both transports must show every client.
fn judge(peer: Peer, seen: &Value) {
    let thrown: Vec<String> = seen
        .as_object()
        .expect("a report")
        .iter()
        .filter(|(_, result)| result.get("thrown").is_some())
        .map(|(name, result)| format!("{name}: {}", result["thrown"]))
        .collect();
    assert!(thrown.is_empty(), "the client refused answers (its own outputSchema check included): {thrown:?}");
    let tools = seen["tools"].as_array().expect("tools");
    let names: Vec<&str> = tools.iter().filter_map(|t| t["name"].as_str()).collect();
    assert_eq!(names, ["crash", "echo", "echo-sync", "flaky", "orders.cancel", "record", "refuse", "slow", "whoami"]);
    let echo = &tools[1];
    assert_eq!(echo["inputSchema"]["required"], json!(["text"]));
    assert_eq!(echo["outputSchema"]["properties"]["text"]["type"], "string");
    assert_eq!(echo["annotations"]["readOnlyHint"], true);
    assert_eq!(echo["_meta"]["skill/version"], "1");
    let cancel = &tools[4];
    assert_eq!(cancel["annotations"]["destructiveHint"], true);
    assert_eq!(cancel["_meta"]["skill/policy"]["sideEffects"], "external_write");

    assert_eq!(seen["echo"]["structuredContent"], json!({"text": "héllo ☕"}));
    assert_eq!(seen["echo"]["content"][0]["text"], r#"{"text":"héllo ☕"}"#);
    // JavaScript has one number type: 1.0 arrives as 1.
    assert_eq!(seen["echo"]["_meta"]["skill/cost"]["units"]["ops"].as_f64(), Some(1.0), "{}", seen["echo"]);
    assert_eq!(seen["echo"]["isError"], false);

    let whoami = &seen["whoami"]["structuredContent"];
    assert_eq!(whoami["invocation_id"], format!("{}-2", peer.prefix()));
    assert_eq!(whoami["idempotency_key"], format!("key-{}-2", peer.prefix()));
    assert_eq!(whoami["settings"], json!({"tier": "gold"}));
    let ignored = &seen["whoami_empty_meta"]["structuredContent"];
    assert_eq!((&ignored["invocation_id"], &ignored["idempotency_key"]), (&Value::Null, &Value::Null));

    assert_eq!(error_of(&seen["refuse"])["code"], "order_unknown");
    assert_eq!(error_of(&seen["refuse"])["details"], json!({"order": "A-1"}));
    assert_eq!(error_of(&seen["bad_inputs"])["code"], "input_contract_violation");
    assert_eq!(error_of(&seen["unknown"])["code"], "skill_not_hosted");
    assert_eq!(seen["cancel"]["structuredContent"], json!({"order": "A-2", "cancelled": true}));
}

fn over_stdio(peer: Peer) {
    let host = demo_binary::demo_host();
    let seen = observe(peer, &["stdio", host.to_str().expect("a UTF-8 path")]);
    judge(peer, &seen);
    assert_eq!(seen["whoami"]["structuredContent"]["caller"], Value::Null);
}

fn over_streamable_http(peer: Peer) -> Value {
    let jwks = JwksServer::start(&["ec-1"]);
    let mut command = Command::new(demo_binary::demo_host());
    command
        .args(["serve", "mcp-http", "--host", "127.0.0.1", "--port", "0"])
        .env("SKILL_SDK_IAM_ISSUER", ISSUER)
        .env("SKILL_SDK_AUDIENCE", AUDIENCE)
        .env("SKILL_SDK_JWKS_URL", &jwks.url);
    let mut host = Running::start(command, Output::Stderr);
    let address = host.address(30);

    let token = sign("ec-1", &good_claims());
    let seen = observe(peer, &["http", &format!("http://{address}/mcp"), &token]);
    host.kill();

    judge(peer, &seen);
    assert_eq!(seen["whoami"]["structuredContent"]["caller"]["sub"], "agent-7");
    seen
}

#[test]
fn the_python_client_drives_the_host_over_stdio() {
    over_stdio(Peer::Python);
}

#[test]
fn the_python_client_drives_the_host_over_streamable_http_with_a_token() {
    let seen = over_streamable_http(Peer::Python);
    assert_eq!(seen["no_token"]["status"], 401);
    assert_eq!(seen["no_token"]["body"]["error"]["code"], "missing_authorization");
    assert!(seen["no_token"]["www_authenticate"].as_str().is_some_and(|h| h.starts_with("Bearer ")));
}

#[test]
fn the_typescript_client_drives_the_host_over_stdio() {
    over_stdio(Peer::TypeScript);
}

#[test]
fn the_typescript_client_drives_the_host_over_streamable_http_with_a_token() {
    let seen = over_streamable_http(Peer::TypeScript);
    assert_eq!(seen["protocolVersion"], "2025-11-25", "the newest protocol is negotiated");
}
