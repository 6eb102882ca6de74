//! The load generator of the gateway benchmark (`cargo xtask bench mcp-core`): closed loop, a
//! number of clients each making one call after another for a while, through one of three
//! paths, and one JSON line of what it saw.
//!
//! - `mcp`: `tools/call` of a read-only tool through the core's `/mcp` (the answer is the call's
//!   end);
//! - `rest`: the same skill through `POST /api/v1/skills/{ref}:invoke`, then `GET` of the call
//!   until it ended (a poll from 1 ms, doubling, at most 20 ms apart);
//! - `request`: `tools/call` of a writing tool by an agent whose client declares the MCP Tasks
//!   extension: the time until the request (a task, a gate approval, the row) is created and
//!   answered, one after another.
//!
//! ```text
//! gateway_load --core http://127.0.0.1:8700 --token skp_… --mode mcp --tool echo --skill echo@1 --clients 16 --seconds 10
//! ```

#![allow(clippy::print_stdout)]

#[path = "support/figures.rs"]
mod figures;

use std::time::{Duration, Instant};

use serde_json::{Value, json};

struct Args {
    core: String,
    token: String,
    mode: String,
    tool: String,
    skill: String,
    clients: usize,
    seconds: u64,
}

fn args() -> Args {
    let mut args = Args {
        core: "http://127.0.0.1:8700".into(),
        token: String::new(),
        mode: "mcp".into(),
        tool: "echo".into(),
        skill: "echo@1".into(),
        clients: 16,
        seconds: 10,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let value = it.next().unwrap_or_else(|| panic!("{flag} needs a value"));
        match flag.as_str() {
            "--core" => args.core = value,
            "--token" => args.token = value,
            "--mode" => args.mode = value,
            "--tool" => args.tool = value,
            "--skill" => args.skill = value,
            "--clients" => args.clients = value.parse().expect("a number of clients"),
            "--seconds" => args.seconds = value.parse().expect("seconds"),
            other => panic!("unknown flag {other}"),
        }
    }
    args
}

/// One `tools/call` through `/mcp`; whether it answered the tool's result (not an error).
async fn mcp_call(client: &reqwest::Client, args: &Args, n: u64, tasks: bool, arguments: Value) -> bool {
    let capabilities = if tasks { json!({"extensions": {"io.modelcontextprotocol/tasks": {}}}) } else { json!({}) };
    let body = json!({"jsonrpc": "2.0", "id": n, "method": "tools/call", "params": {
        "name": args.tool, "arguments": arguments,
        "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                  "io.modelcontextprotocol/clientCapabilities": capabilities,
                  "io.modelcontextprotocol/clientInfo": {"name": "gateway_load", "version": "1"}}}});
    let answer = client
        .post(format!("{}/mcp", args.core))
        .bearer_auth(&args.token)
        .header("Accept", "application/json, text/event-stream")
        .header("MCP-Protocol-Version", "2026-07-28")
        .header("Mcp-Method", "tools/call")
        .header("Mcp-Name", &args.tool)
        .json(&body)
        .send()
        .await;
    let Ok(answer) = answer else { return false };
    let text = answer.text().await.unwrap_or_default();
    let message: Value = text
        .lines()
        .filter_map(|line| line.strip_prefix("data: "))
        .rfind(|data| !data.trim().is_empty())
        .and_then(|data| serde_json::from_str(data).ok())
        .unwrap_or(Value::Null);
    let result = &message["result"];
    if tasks { result["resultType"] == "task" } else { result["isError"] == false }
}

/// One call through the REST API: invoke, then read it until it ended.
async fn rest_call(client: &reqwest::Client, args: &Args, n: u64) -> bool {
    let invoke = client
        .post(format!("{}/api/v1/skills/{}:invoke", args.core, args.skill))
        .bearer_auth(&args.token)
        .json(&json!({"inputs": {"text": format!("call {n}")}}))
        .send()
        .await;
    let Ok(invoke) = invoke else { return false };
    let call: Value = invoke.json().await.unwrap_or(Value::Null);
    let Some(id) = call["id"].as_str() else { return false };
    let mut pause = Duration::from_millis(1);
    for _ in 0..2000 {
        let read =
            client.get(format!("{}/api/v1/skill-invocations/{id}", args.core)).bearer_auth(&args.token).send().await;
        let Ok(read) = read else { return false };
        let call: Value = read.json().await.unwrap_or(Value::Null);
        match call["status"].as_str() {
            Some("succeeded") => return true,
            Some("failed" | "cancelled") => return false,
            _ => {}
        }
        tokio::time::sleep(pause).await;
        pause = (pause * 2).min(Duration::from_millis(20));
    }
    false
}

#[tokio::main]
async fn main() {
    let args = std::sync::Arc::new(args());
    let client = reqwest::Client::builder().pool_max_idle_per_host(args.clients.max(1)).build().expect("a client");
    if args.mode == "request" {
        let mut latencies = Vec::new();
        let mut refused = 0;
        for n in 0..200u64 {
            let started = Instant::now();
            let ok = mcp_call(&client, &args, n, true, json!({"order": format!("O-{n}")})).await;
            latencies.push(started.elapsed().as_secs_f64() * 1000.0);
            if !ok {
                refused += 1;
            }
        }
        latencies.sort_by(f64::total_cmp);
        let result = json!({"mode": "request", "requests": latencies.len(), "refused": refused,
                            "p50": figures::percentile(&latencies, 0.5), "p95": figures::percentile(&latencies, 0.95),
                            "p99": figures::percentile(&latencies, 0.99)});
        println!("{result}");
        return;
    }
    let deadline = Instant::now() + Duration::from_secs(args.seconds);
    let mut workers = tokio::task::JoinSet::new();
    for worker in 0..args.clients {
        let (client, args) = (client.clone(), std::sync::Arc::clone(&args));
        workers.spawn(async move {
            let (mut latencies, mut failed) = (Vec::new(), 0u64);
            let mut n = (worker as u64) << 32;
            while Instant::now() < deadline {
                n += 1;
                let started = Instant::now();
                let ok = match args.mode.as_str() {
                    "rest" => rest_call(&client, &args, n).await,
                    _ => mcp_call(&client, &args, n, false, json!({"text": format!("call {n}")})).await,
                };
                if ok {
                    latencies.push(started.elapsed().as_secs_f64() * 1000.0);
                } else {
                    failed += 1;
                }
            }
            (latencies, failed)
        });
    }
    let started = Instant::now();
    let (mut latencies, mut failed) = (Vec::new(), 0);
    while let Some(done) = workers.join_next().await {
        let (mine, lost) = done.expect("a worker");
        latencies.extend(mine);
        failed += lost;
    }
    let elapsed = started.elapsed().as_secs_f64().max(args.seconds as f64);
    latencies.sort_by(f64::total_cmp);
    let result = json!({"mode": args.mode, "clients": args.clients, "calls": latencies.len(), "failed": failed,
                        "perSecond": latencies.len() as f64 / elapsed,
                        "p50": figures::percentile(&latencies, 0.5), "p99": figures::percentile(&latencies, 0.99)});
    println!("{result}");
}
