//! Remote skills end to end: the demo skills served by the skill host over TLS (a throwaway CA),
//! verifying tokens against the core's JWKS; calls invoked through the core and finished by the
//! `skill-core executor` process, which gets audience tokens from the core.

#[path = "../../../skill-host/examples/demo_host/skills.rs"]
mod demo;

use std::process::Command;
use std::time::Duration;

use serde_json::{Value, json};
use skill_fixtures::{Output, Running, Scratch};
use skill_host::auth::{Access, Verifier};
use skill_host::http::HttpHost;
use skill_sdk::registry::Registry;

use crate::calls::{Core, each_backend};

const AUDIENCE: &str = "demo-api";

/// A CA and a certificate for `localhost` it signed, as PEM files in `folder`:
/// (`ca.pem`, `cert.pem`, `key.pem`).
pub(crate) fn certificates(folder: &Scratch) {
    let ca_key = rcgen::KeyPair::generate().expect("a CA key");
    let mut ca = rcgen::CertificateParams::new(Vec::<String>::new()).expect("CA params");
    ca.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    ca.distinguished_name.push(rcgen::DnType::CommonName, "skill test CA");
    let ca_cert = ca.self_signed(&ca_key).expect("the CA");
    let issuer = rcgen::Issuer::new(ca, ca_key);
    let key = rcgen::KeyPair::generate().expect("a key");
    let leaf = rcgen::CertificateParams::new(vec!["localhost".to_owned()]).expect("params");
    let cert = leaf.signed_by(&key, &issuer).expect("signed");
    folder.write("ca.pem", &ca_cert.pem());
    folder.write("cert.pem", &cert.pem());
    folder.write("key.pem", &key.serialize_pem());
}

/// Serves the demo skills over https on 127.0.0.1 with tokens checked against the core's
/// JWKS; returns the port.
async fn host(core: &Core, folder: &Scratch) -> u16 {
    let root = core.base.trim_end_matches("/api/v1");
    let registry =
        Registry::from_skills([&demo::echo::SKILL, &demo::whoami::SKILL, &demo::flaky::SKILL, &demo::refuse::SKILL])
            .expect("the demo skills");
    let verifier = Verifier::new(root, AUDIENCE, &format!("{root}/.well-known/jwks.json")).expect("a verifier");
    let router = HttpHost::new(&registry, Access::verified(verifier), 1 << 20).router();
    let tls =
        skill_http::Tls::from_pem_files(&folder.path().join("cert.pem"), &folder.path().join("key.pem")).expect("TLS");
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("a port");
    let port = listener.local_addr().expect("address").port();
    tokio::spawn(skill_http::serve_tls(listener, router, skill_http::Limits::default(), tls, std::future::pending()));
    port
}

fn http_skill(name: &str, port: u16, inputs: Value, attempts: u32) -> Value {
    json!({"name": name, "version": "1", "description": "A demo skill over https.", "sideEffects": "none",
           "riskLevel": "low",
           "contract": {"inputs": inputs, "outputs": {"type": "object"}, "timeoutSeconds": 5,
                        "retryPolicy": {"maxAttempts": attempts, "backoffSeconds": 0},
                        "implementation": {"protocol": "http", "endpoint": format!("https://localhost:{port}/skills/{name}@1"),
                                           "auth": {"audience": AUDIENCE, "scopes": ["demo.call"]}}}})
}

impl Core {
    /// `skill-core executor` for this core with `args`, the audience and the test CA, once it
    /// runs.
    fn executor_process(&self, folder: &Scratch, args: &[&str]) -> Running {
        self.executor_said(folder, args).0
    }

    /// [`Core::executor_process`], with the lines it wrote until then.
    fn executor_said(&self, folder: &Scratch, args: &[&str]) -> (Running, Vec<String>) {
        let root = self.base.trim_end_matches("/api/v1");
        let mut command = Command::new(env!("CARGO_BIN_EXE_skill-core"));
        command
            .args(["executor", "--core", root, "--audience", AUDIENCE])
            .args(args)
            .arg("--ca-file")
            .arg(folder.path().join("ca.pem"))
            .env("SKILL_CORE_TOKEN", &self.executor)
            .env("SKILL_LOG", "info");
        let mut running = Running::start(command, Output::Stderr);
        let said = running.until(30, |line| line.contains("executing remote skills"));
        (running, said)
    }

    /// Sets what the tests' executor may run.
    async fn allow(&self, allowance: Value) {
        let allowance: skill_api::ExecutorAllowance = serde_json::from_value(allowance).expect("an allowance");
        self.engine.allow_executor(None, "executor", &allowance, None).await.expect("allowed");
    }

    /// The call `id` once it ended (within 20 s).
    async fn ended(&self, id: &str) -> Value {
        for _ in 0..200 {
            let call = self.get(&self.admin, &format!("/skill-invocations/{id}")).await.ok(200).clone();
            if matches!(call["status"].as_str(), Some("succeeded" | "failed" | "cancelled")) {
                return call;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        panic!("the call {id} did not end");
    }
}

#[test]
fn a_key_that_is_not_the_certificates_is_refused_by_name() {
    let folder = Scratch::new("skill-core-remote-tls");
    certificates(&folder);
    let cert = folder.path().join("cert.pem");
    let wrong = skill_http::Tls::from_pem_files(&cert, &folder.path().join("ca.pem")).expect_err("not a key");
    assert!(wrong.starts_with("--tls-key "), "{wrong}");
    let other = rcgen::KeyPair::generate().expect("a key");
    folder.write("other.pem", &other.serialize_pem());
    let mismatch = skill_http::Tls::from_pem_files(&cert, &folder.path().join("other.pem")).expect_err("mismatch");
    assert!(mismatch.contains("do not go together"), "{mismatch}");
    let none = skill_http::Tls::from_pem_files(&folder.path().join("key.pem"), &folder.path().join("key.pem"));
    assert!(none.expect_err("no certificate").starts_with("--tls-cert "));
}

#[tokio::test]
async fn http_skills_run_through_the_executor_with_the_cores_tokens() {
    each_backend("remote-http", |core| async move {
        let folder = Scratch::new("skill-core-remote-http");
        certificates(&folder);
        let port = host(&core, &folder).await;
        let text = json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]});
        core.publish(http_skill("echo", port, text.clone(), 1)).await;
        core.publish(http_skill("whoami", port, json!({"type": "object"}), 1)).await;
        core.publish(http_skill("flaky", port, json!({"type": "object"}), 3)).await;
        core.publish(http_skill("refuse", port, json!({"type": "object"}), 3)).await;

        let root = core.base.trim_end_matches("/api/v1").to_owned();
        let origin = format!("https://localhost:{port}");
        core.allow(json!({"protocols": ["http"], "httpOrigins": [origin], "audiences": [AUDIENCE]})).await;
        let (executor, said) = core.executor_said(
            &folder,
            &[
                "--http-origin",
                &origin,
                "--private-host",
                "localhost",
                "--concurrency",
                "2",
                "--metrics-listen",
                "127.0.0.1:0",
            ],
        );
        let metrics = said.iter().find_map(|line| line.strip_prefix("metrics at ")).expect("its metrics").to_owned();

        // Output, cost, and what reached the skill: the call's id and key, the token's claims.
        let echo = core.invoke(&core.caller, "echo@1", json!({"inputs": {"text": "hello"}})).await.ok(201).clone();
        let echo = core.ended(echo["id"].as_str().expect("id")).await;
        assert_eq!(
            (echo["status"].clone(), echo["output"].clone()),
            (json!("succeeded"), json!({"text": "hello"})),
            "{echo}"
        );
        assert_eq!(echo["cost"]["units"]["ops"], json!(1.0), "{echo}");
        // Without traces a call names none.
        assert!(echo.get("traceId").is_none(), "{echo}");
        let who = core
            .invoke(&core.caller, "whoami@1", json!({"inputs": {}, "idempotencyKey": "who-1"}))
            .await
            .ok(201)
            .clone();
        let id = who["id"].as_str().expect("id").to_owned();
        let who = core.ended(&id).await;
        let output = &who["output"];
        assert_eq!(
            (output["invocation_id"].clone(), output["idempotency_key"].clone()),
            (json!(id), json!("who-1")),
            "{who}"
        );
        assert_eq!(output["caller"]["aud"], AUDIENCE);
        assert_eq!(output["caller"]["iss"], json!(root));
        assert_eq!(output["caller"]["scope"], "demo.call");
        assert_eq!(output["transport"], "http");
        // Each call carries a token of its own, naming it.
        assert_eq!(output["caller"]["invocation_id"], json!(id));
        let again = core.invoke(&core.caller, "whoami@1", json!({"inputs": {}})).await.ok(201).clone();
        let again = core.ended(again["id"].as_str().expect("id")).await;
        assert_ne!(again["output"]["caller"]["jti"], output["caller"]["jti"], "a token per call");
        assert_eq!(again["output"]["caller"]["invocation_id"], again["id"]);

        // A retryable skill error is retried until the attempts run out; a refusal fails at once
        // with the skill's own code.
        let flaky = core.invoke(&core.caller, "flaky@1", json!({"inputs": {}})).await.ok(201).clone();
        let flaky = core.ended(flaky["id"].as_str().expect("id")).await;
        assert_eq!(
            (
                flaky["status"].clone(),
                flaky["attempt"].clone(),
                flaky["error"]["code"].clone(),
                flaky["error"]["retryable"].clone()
            ),
            (json!("failed"), json!(3), json!("upstream_busy"), json!(true)),
            "{flaky}"
        );
        let refused = core.invoke(&core.caller, "refuse@1", json!({"inputs": {"order": "o-9"}})).await.ok(201).clone();
        let refused = core.ended(refused["id"].as_str().expect("id")).await;
        assert_eq!(
            (refused["status"].clone(), refused["attempt"].clone(), refused["error"]["code"].clone()),
            (json!("failed"), json!(1), json!("order_unknown")),
            "{refused}"
        );
        // A catalog entry aimed at another skill's route gets nothing there: its token names the
        // entry's version, not the route's.
        let mut peek = http_skill("peek", port, text.clone(), 1);
        peek["contract"]["implementation"]["endpoint"] = json!(format!("https://localhost:{port}/skills/echo@1"));
        core.publish(peek).await;
        let aimed = core.invoke(&core.caller, "peek@1", json!({"inputs": {"text": "sneaky"}})).await.ok(201).clone();
        let aimed = core.ended(aimed["id"].as_str().expect("id")).await;
        assert_eq!(
            (aimed["status"].clone(), aimed["error"]["code"].clone()),
            (json!("failed"), json!("token_for_another_call")),
            "{aimed}"
        );
        // Its metrics: its slots, and the calls it ran by how they ended (flaky's three attempts
        // and the two refusals failed; three completed).
        let text = reqwest::get(&metrics).await.expect("answers").text().await.expect("text");
        let value = |series: &str| skill_fixtures::sample(&text, series);
        let outcome =
            |word: &str| value(&format!("skills_executor_calls_total{{component=\"executor\",outcome=\"{word}\"}}"));
        assert_eq!((outcome("completed"), outcome("failed")), (Some(3.0), Some(5.0)), "{text}");
        assert_eq!(value("skills_executor_slots{component=\"executor\",state=\"all\"}"), Some(2.0), "{text}");
        assert_eq!(value("skills_executor_slots{component=\"executor\",state=\"used\"}"), Some(0.0), "{text}");
        // One session for all its workers, closed at the stop (the core answers meanwhile: the
        // wait runs off the test's runtime).
        executor.signal(rustix::process::Signal::TERM);
        let (code, lines) = tokio::task::spawn_blocking(move || executor.wait_within(30)).await.expect("waited");
        assert_eq!(code, 0, "the executor stops cleanly: {lines:?}");
        assert_eq!(lines.iter().filter(|line| line.contains("executor session opened")).count(), 1, "{lines:?}");
        assert!(lines.iter().any(|line| line.contains("executor session closed")), "{lines:?}");

        // The same executor without `localhost` listed as private: the name resolves to a
        // loopback address, so the call is refused before any connection, and not retried.
        let guarded = core.executor_process(&folder, &["--http-origin", &origin]);
        let echo = core.invoke(&core.caller, "echo@1", json!({"inputs": {"text": "again"}})).await.ok(201).clone();
        let echo = core.ended(echo["id"].as_str().expect("id")).await;
        assert_eq!(
            (
                echo["status"].clone(),
                echo["attempt"].clone(),
                echo["error"]["code"].clone(),
                echo["error"]["retryable"].clone()
            ),
            (json!("failed"), json!(1), json!("endpoint_address_forbidden"), json!(false)),
            "{echo}"
        );
        let message = echo["error"]["message"].as_str().unwrap_or_default();
        assert!(message.contains("127.0.0.1") || message.contains("::1"), "{echo}");
        guarded.signal(rustix::process::Signal::TERM);
        let (code, _) = tokio::task::spawn_blocking(move || guarded.wait_within(30)).await.expect("waited");
        assert_eq!(code, 0);
    })
    .await;
}

/// The demo skills over MCP (streamable HTTP) behind TLS, tokens checked; returns the port.
async fn mcp_host(core: &Core, folder: &Scratch) -> u16 {
    let root = core.base.trim_end_matches("/api/v1");
    let registry = Registry::from_skills([&demo::echo::SKILL, &demo::whoami::SKILL, &demo::flaky::SKILL])
        .expect("the demo skills");
    let verifier = Verifier::new(root, AUDIENCE, &format!("{root}/.well-known/jwks.json")).expect("a verifier");
    let host = skill_host::mcp::McpHost::new(&registry, "demo").expect("tools");
    let allowed = skill_host::mcp_http::AllowedHosts::defaults_for("127.0.0.1");
    let stop = tokio_util::sync::CancellationToken::new();
    let router = skill_host::mcp_http::router(host, Access::verified(verifier), &allowed, 1 << 20, stop);
    let tls =
        skill_http::Tls::from_pem_files(&folder.path().join("cert.pem"), &folder.path().join("key.pem")).expect("TLS");
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("a port");
    let port = listener.local_addr().expect("address").port();
    tokio::spawn(skill_http::serve_tls(listener, router, skill_http::Limits::default(), tls, std::future::pending()));
    port
}

fn mcp_skill(name: &str, endpoint: &str, tool: &str, audience: Option<&str>, attempts: u32) -> Value {
    let mut implementation = json!({"protocol": "mcp", "endpoint": endpoint, "entrypoint": tool});
    if let Some(audience) = audience {
        implementation["auth"] = json!({"audience": audience, "scopes": ["demo.call"]});
    }
    json!({"name": name, "version": "1", "description": "A tool of an MCP server.", "sideEffects": "none",
           "riskLevel": "low",
           "contract": {"inputs": {"type": "object"}, "outputs": {"type": "object"}, "timeoutSeconds": 20,
                        "retryPolicy": {"maxAttempts": attempts, "backoffSeconds": 0},
                        "implementation": implementation}})
}

#[tokio::test]
async fn mcp_tools_run_through_the_executor_over_http_and_stdio() {
    each_backend("remote-mcp", |core| async move {
        let folder = Scratch::new("skill-core-remote-mcp");
        certificates(&folder);
        let port = mcp_host(&core, &folder).await;
        let endpoint = format!("https://localhost:{port}/mcp");
        core.publish(mcp_skill("demo.echo", &endpoint, "echo", Some(AUDIENCE), 1)).await;
        core.publish(mcp_skill("demo.whoami", &endpoint, "whoami", Some(AUDIENCE), 1)).await;
        core.publish(mcp_skill("demo.flaky", &endpoint, "flaky", Some(AUDIENCE), 2)).await;
        core.publish(mcp_skill("claims.classify", "stdio:claims", "classify", None, 1)).await;
        core.publish(mcp_skill("claims.busy", "stdio:claims", "busy", None, 2)).await;
        core.publish(mcp_skill("claims.explode", "stdio:claims", "explode", None, 3)).await;
        core.publish(mcp_skill("claims.environment", "stdio:claims", "environment", None, 1)).await;
        core.publish(mcp_skill("claims.process", "stdio:claims", "process", None, 1)).await;

        // Our own host over stdio: the claims package's host binary, `serve mcp-stdio`.
        let claims = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/claims");
        let host = skill_package::host_crate::locate_own(std::path::Path::new(claims)).expect("the claims host");
        let host = tokio::task::spawn_blocking(move || skill_package::host_crate::build(&host))
            .await
            .expect("built")
            .expect("the claims host builds");
        core.publish(mcp_skill("claims.host_classify", "stdio:claims-host", "claim.classify", None, 1)).await;

        let python = std::env::var("SKILL_TEST_PYTHON").unwrap_or_else(|_| "python3".to_owned());
        let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/fastmcp_claims.py");
        let servers = json!({
            "claims": {"command": python, "args": [script], "env": {"CLAIMS_REGION": "eu"}},
            "claims-host": {"command": host, "args": ["serve", "mcp-stdio"], "env": {"SKILL_LOG": "warn"}},
        })
        .to_string();
        let origin = format!("https://localhost:{port}");
        core.allow(json!({"protocols": ["mcp"], "mcpOrigins": [origin, "stdio:claims", "stdio:claims-host"],
                          "audiences": [AUDIENCE]}))
            .await;
        let executor = core.executor_process(
            &folder,
            &["--mcp-origin", &origin, "--mcp-servers", &servers, "--private-host", "localhost", "--concurrency", "2"],
        );

        let run = |skill: &'static str, body: Value| {
            let core = &core;
            async move {
                let call = core.invoke(&core.caller, skill, body).await.ok(201).clone();
                core.ended(call["id"].as_str().expect("id")).await
            }
        };
        // Our host over MCP: output, cost (`_meta["skill/cost"]`), ids and the token's claims.
        let echo = run("demo.echo@1", json!({"inputs": {"text": "hej"}})).await;
        assert_eq!(
            (echo["status"].clone(), echo["output"].clone()),
            (json!("succeeded"), json!({"text": "hej"})),
            "{echo}"
        );
        assert_eq!(echo["cost"]["units"]["ops"], json!(1.0), "{echo}");
        let who = run("demo.whoami@1", json!({"inputs": {}, "idempotencyKey": "who-mcp"})).await;
        let output = &who["output"];
        assert_eq!(
            (output["invocation_id"].clone(), output["idempotency_key"].clone()),
            (who["id"].clone(), json!("who-mcp"))
        );
        assert_eq!(output["caller"]["aud"], AUDIENCE, "{who}");
        let flaky = run("demo.flaky@1", json!({"inputs": {}})).await;
        assert_eq!(
            (flaky["status"].clone(), flaky["attempt"].clone(), flaky["error"]["code"].clone()),
            (json!("failed"), json!(2), json!("upstream_busy")),
            "{flaky}"
        );

        // Our host over stdio, started by the executor for the call.
        let hosted =
            run("claims.host_classify@1", json!({"inputs": {"text": "I want a refund for my broken phone"}})).await;
        assert_eq!(hosted["status"], "succeeded", "{hosted}");
        assert!(hosted["output"].as_object().is_some_and(|output| !output.is_empty()), "{hosted}");

        // A foreign server (FastMCP over stdio): an answer, an envelope refusal retried, and a
        // plain tool failure that is not.
        let classified = run("claims.classify@1", json!({"inputs": {"text": "a refund please"}})).await;
        assert_eq!(classified["output"], json!({"label": "refund"}), "{classified}");
        let busy = run("claims.busy@1", json!({"inputs": {}})).await;
        assert_eq!(
            (
                busy["status"].clone(),
                busy["attempt"].clone(),
                busy["error"]["code"].clone(),
                busy["error"]["retryable"].clone()
            ),
            (json!("failed"), json!(2), json!("claims_busy"), json!(true)),
            "{busy}"
        );
        let exploded = run("claims.explode@1", json!({"inputs": {}})).await;
        assert_eq!(
            (exploded["status"].clone(), exploded["attempt"].clone(), exploded["error"]["code"].clone()),
            (json!("failed"), json!(1), json!("tool_error")),
            "{exploded}"
        );
        assert!(
            exploded["error"]["message"].as_str().unwrap_or_default().contains("the ledger is on fire"),
            "{exploded}"
        );

        // The server does not see the executor's environment (its core token), only the basics
        // and its own variables.
        let environment = run("claims.environment@1", json!({"inputs": {}})).await;
        let names: Vec<&str> =
            environment["output"]["names"].as_array().expect("names").iter().filter_map(Value::as_str).collect();
        assert!(names.contains(&"CLAIMS_REGION"), "{names:?}");
        assert!(
            !names.iter().any(|name| name.starts_with("SKILL_") || name.starts_with("CONTROL_PLANE_")),
            "{names:?}"
        );

        // The server keeps running between calls: one process serves them all.
        let first = run("claims.process@1", json!({"inputs": {}})).await;
        let second = run("claims.process@1", json!({"inputs": {}})).await;
        assert!(first["output"]["pid"].is_u64(), "{first}");
        assert_eq!(first["output"]["pid"], second["output"]["pid"], "one server process");

        executor.signal(rustix::process::Signal::TERM);
        let (code, lines) = tokio::task::spawn_blocking(move || executor.wait_within(30)).await.expect("waited");
        assert_eq!(code, 0, "the executor stops cleanly: {lines:?}");
        // It stopped with the executor.
        let pid = first["output"]["pid"].as_u64().and_then(|pid| i32::try_from(pid).ok()).expect("a pid");
        let alive = rustix::process::test_kill_process(rustix::process::Pid::from_raw(pid).expect("a pid")).is_ok();
        assert!(!alive, "the stdio server {pid} outlived the executor");
    })
    .await;
}
