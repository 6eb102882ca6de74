//! `serve` as an operator runs it: the demo host as a process, configured by its environment,
//! refusing to start without token settings, and stopping gracefully on SIGTERM.

use crate::demo_binary;
mod execute;
use crate::tokens;

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::time::Duration;

use rustix::process::Signal;
use serde_json::{Value, json};
use skill_fixtures::{Output, Running};
use tokens::{AUDIENCE, ISSUER, JwksServer, good_claims, sign};

fn command(args: &[&str]) -> Command {
    let mut command = Command::new(demo_binary::demo_host());
    command
        .args(args)
        .env_remove("SKILL_SDK_IAM_ISSUER")
        .env_remove("SKILL_SDK_AUDIENCE")
        .env_remove("SKILL_SDK_JWKS_URL");
    command
}

/// Starts `serve` and waits for its "serving … on http://ADDRESS" line.
fn start(command: Command) -> (Running, String) {
    let mut host = Running::start(command, Output::Stderr);
    let address = host.address(20);
    (host, address)
}

#[test]
fn hosting_refuses_to_start_without_token_settings() {
    for transport in ["http", "mcp-http"] {
        let output = command(&["serve", transport, "--port", "0"]).output().expect("runs");
        assert_eq!(output.status.code(), Some(1), "{transport}");
        let stderr = String::from_utf8_lossy(&output.stderr);
        for expected in [
            "refusing to serve without token verification",
            "SKILL_SDK_IAM_ISSUER",
            "SKILL_SDK_AUDIENCE",
            "SKILL_SDK_JWKS_URL",
            "--allow-anonymous",
        ] {
            assert!(stderr.contains(expected), "{transport}: {expected} in {stderr}");
        }
    }
}

#[test]
fn a_port_in_use_is_named() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = taken.local_addr().expect("address").port().to_string();
    let output = command(&["serve", "http", "--host", "127.0.0.1", "--port", &port, "--allow-anonymous"])
        .output()
        .expect("runs");
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains(&format!("cannot listen on 127.0.0.1:{port}")), "{stderr}");
}

#[tokio::test]
async fn sigterm_lets_the_calls_in_flight_finish_then_exits_0() {
    let (host, address) = start(command(&["serve", "http", "--host", "127.0.0.1", "--port", "0", "--allow-anonymous"]));
    let url = format!("http://{address}/skills/slow@1");
    let call = tokio::spawn(async move {
        let response = reqwest::Client::new().post(url).body(r#"{"inputs": {"ms": 700}}"#).send().await?;
        Ok::<_, reqwest::Error>((response.status(), response.json::<Value>().await?))
    });
    tokio::time::sleep(Duration::from_millis(250)).await;
    host.signal(Signal::TERM);
    let (status, outputs) = call.await.expect("joined").expect("the call in flight is answered");
    assert_eq!(status, reqwest::StatusCode::OK);
    assert_eq!(outputs, json!({"slept_ms": 700}));

    let (code, lines) = tokio::task::spawn_blocking(move || host.wait()).await.expect("joined");
    assert_eq!(code, 0, "{lines:?}");
    assert!(lines.iter().any(|l| l.contains("stopping: waiting for the calls in flight")), "{lines:?}");
    let access = lines.iter().find(|l| l.contains("path=/skills/slow@1")).expect("an access log line");
    assert!(
        access.contains("request_id=") && access.contains("status=200") && access.contains("elapsed_ms="),
        "{access}"
    );
    assert!(std::net::TcpStream::connect(address).is_err(), "nothing listens any more");
}

/// The access log is buffered off the request path; a graceful stop writes every line out.
#[tokio::test]
async fn a_graceful_stop_writes_every_access_log_line() {
    let (host, address) = start(command(&["serve", "http", "--host", "127.0.0.1", "--port", "0", "--allow-anonymous"]));
    let client = reqwest::Client::new();
    for n in 0..300 {
        let response = client
            .post(format!("http://{address}/skills/echo@1"))
            .header("x-request-id", format!("line-{n}"))
            .body(r#"{"inputs": {"text": "a"}}"#)
            .send()
            .await
            .expect("answers");
        assert_eq!(response.status(), reqwest::StatusCode::OK);
    }
    let lines = tokio::task::spawn_blocking(move || host.stop(Signal::TERM)).await.expect("joined");
    let logged: std::collections::BTreeSet<&str> = lines
        .iter()
        .filter(|line| line.contains("path=/skills/echo@1"))
        .filter_map(|line| line.split("request_id=").nth(1)?.split(' ').next())
        .collect();
    assert_eq!(logged.len(), 300, "every request's line, once each");
    assert!(logged.contains("line-0") && logged.contains("line-299"));
}

#[tokio::test]
async fn the_token_settings_come_from_the_environment() {
    let jwks = JwksServer::start(&["rsa-1"]);
    let mut command = command(&["serve", "mcp-http", "--host", "127.0.0.1", "--port", "0"]);
    command
        .env("SKILL_SDK_IAM_ISSUER", ISSUER)
        .env("SKILL_SDK_AUDIENCE", AUDIENCE)
        .env("SKILL_SDK_JWKS_URL", &jwks.url);
    let (host, address) = start(command);
    let url = format!("http://{address}/mcp");
    let list = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}).to_string();
    let post = |token: Option<String>| {
        let mut request = reqwest::Client::new()
            .post(&url)
            .header("accept", "application/json, text/event-stream")
            .header("content-type", "application/json")
            .body(list.clone());
        if let Some(token) = token {
            request = request.bearer_auth(token);
        }
        request.send()
    };
    assert_eq!(post(None).await.expect("answers").status(), reqwest::StatusCode::UNAUTHORIZED);
    let response = post(Some(sign("rsa-1", &good_claims()))).await.expect("answers");
    assert_eq!(response.status(), reqwest::StatusCode::OK);
    let health = reqwest::get(format!("http://{address}/healthz")).await.expect("up");
    assert_eq!(health.status(), reqwest::StatusCode::OK, "health needs no token");
    host.signal(Signal::TERM);
    let (code, _) = tokio::task::spawn_blocking(move || host.wait()).await.expect("joined");
    assert_eq!(code, 0);
}

#[test]
fn mcp_over_stdio_ends_with_its_input_and_keeps_stdout_for_the_protocol() {
    let mut child = command(&["serve", "mcp-stdio"])
        .env("SKILL_LOG", "info")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("starts");
    let mut stdin = child.stdin.take().expect("stdin");
    let messages = [
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}}),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "echo", "arguments": {"text": "hi"}}}),
    ];
    for message in messages {
        writeln!(stdin, "{message}").expect("written");
    }
    let mut stdout = BufReader::new(child.stdout.take().expect("stdout"));
    let mut answers = Vec::new();
    while answers.len() < 2 {
        let mut line = String::new();
        assert!(stdout.read_line(&mut line).expect("reads") > 0, "the host answers before closing");
        let answer: Value =
            serde_json::from_str(&line).unwrap_or_else(|e| panic!("stdout holds only JSON-RPC: {line}: {e}"));
        answers.push(answer);
    }
    assert_eq!(answers[1]["result"]["structuredContent"], json!({"text": "hi"}));
    drop(stdin);
    let output = child.wait_with_output().expect("exits");
    assert_eq!(output.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&output.stderr).contains("serving 9 skills over mcp-stdio"));
}

/// Stalled clients past the connection bound leave the host answering; a body that never
/// arrives is cut at its deadline, and SIGTERM does not wait for it.
#[test]
fn stalled_clients_cannot_hold_the_host() {
    use skill_fixtures::slow;
    let (host, address) = start(command(&[
        "serve",
        "http",
        "--host",
        "127.0.0.1",
        "--port",
        "0",
        "--allow-anonymous",
        "--max-connections",
        "16",
        "--body-timeout",
        "1",
    ]));
    let _half_open = slow::half_headers(&address, 50);
    let mut late = slow::stalled_body(&address, "/skills/echo@1", &[], 200, 5);
    assert_eq!(slow::get(&address, "/healthz", 5).map(|(status, _)| status), Some(200));
    let answer = slow::read_to_close(&mut late, Duration::from_secs(5)).expect("answered and closed");
    assert!(answer.starts_with("HTTP/1.1 408") && answer.contains("request_timeout"), "{answer}");

    let mut stalled = slow::stalled_body(&address, "/skills/echo@1", &[], 200, 5);
    std::thread::sleep(Duration::from_millis(200));
    host.signal(Signal::TERM);
    let (code, lines) = host.wait_within(5);
    assert_eq!(code, 0, "{lines:?}");
    let answer = slow::read_to_close(&mut stalled, Duration::from_secs(2)).expect("closed");
    assert!(answer.starts_with("HTTP/1.1 503") && answer.contains("\"retryable\":true"), "{answer}");
}

#[tokio::test]
async fn metrics_count_the_calls_by_skill_and_outcome_and_the_requests_by_route() {
    let mut host = Running::start(
        command(&[
            "serve",
            "http",
            "--host",
            "127.0.0.1",
            "--port",
            "0",
            "--allow-anonymous",
            "--metrics-listen",
            "127.0.0.1:0",
        ]),
        Output::Stderr,
    );
    let metrics = host.until(20, |line| line.starts_with("metrics at http://")).pop().expect("the metrics line");
    let metrics = metrics.trim_start_matches("metrics at ").to_owned();
    let address = host.address(20);
    let http = reqwest::Client::new();
    let call = |inputs: &'static str| {
        let request = http.post(format!("http://{address}/skills/slow@1")).body(inputs);
        async move { request.send().await.expect("answers").status() }
    };
    assert_eq!(call(r#"{"inputs": {"ms": 1}}"#).await, 200);
    assert_eq!(call(r#"{"inputs": {"ms": 2}}"#).await, 200);
    assert_eq!(call(r#"{"inputs": {"ms": "soon"}}"#).await, 422, "inputs the contract refuses");
    let missing =
        http.post(format!("http://{address}/skills/nothing-here@9")).body("{}").send().await.expect("answers");
    assert_eq!(missing.status(), 404);
    let text = http.get(&metrics).send().await.expect("answers").text().await.expect("text");
    let value = |series: &str| skill_fixtures::sample(&text, series);
    assert_eq!(
        value(r#"skills_host_calls_total{component="host",skill="slow@1",outcome="succeeded"}"#),
        Some(2.0),
        "{text}"
    );
    assert_eq!(value(r#"skills_host_calls_total{component="host",skill="slow@1",outcome="refused"}"#), Some(1.0));
    assert_eq!(
        value(r#"skills_host_call_duration_seconds_count{component="host",skill="slow@1",outcome="succeeded"}"#),
        Some(2.0)
    );
    let route = r#"skills_http_requests_total{component="host",method="POST",route="/skills/{*reference}",status="#;
    assert_eq!(value(&format!("{route}\"200\"}}")), Some(2.0), "{text}");
    assert_eq!(value(&format!("{route}\"422\"}}")), Some(1.0), "{text}");
    assert_eq!(value(&format!("{route}\"404\"}}")), Some(1.0), "{text}");
    assert!(!text.contains("nothing-here"), "a route's template, never the path sent: {text}");
    host.stop(Signal::TERM);
}
