//! The gateway benchmark (`cargo xtask bench mcp-core`, beside P3): a read-only `tools/call`
//! through the core's `/mcp` against the same skill invoked through `POST …:invoke` and read
//! until it ended (ratio ≥ 0.8), and how long creating an agent's pending request takes (p95 ≤
//! 100 ms). Release builds, a fresh SQLite core, the demo host as the local executor, an agent
//! declared by a package apply. Results go to `target/bench/mcp-core.json`.

use std::process::Command;

use anyhow::{Context, Result, bail};
use serde_json::{Value, json};

use crate::core_run::{Tokens, build, output, publish_demo, release, start};
use crate::target_dir;

const SECONDS: &str = "10";
const CLIENTS: &str = "16";
/// The bars: the gateway's calls per second over the API's, and the request's p95.
const RATIO_BAR: f64 = 0.8;
const REQUEST_P95_BAR_MS: f64 = 100.0;

fn curl(method: &str, url: &str, token: &str, body: &Value) -> Result<Value> {
    let answer = output(Command::new("curl").args([
        "-s",
        "-X",
        method,
        "-H",
        &format!("Authorization: Bearer {token}"),
        "-H",
        "Content-Type: application/json",
        "-d",
        &body.to_string(),
        url,
    ]))?;
    serde_json::from_str(&answer).with_context(|| format!("{url} answered {answer}"))
}

#[allow(
    clippy::too_many_lines,
    reason = "a benchmark is one script: the gateway and the direct path in the same run, then the ratios"
)]
pub(crate) fn bench_gateway() -> Result<()> {
    build(
        "build the core, the demo host and the load generators (release)",
        &["-p", "skill-core", "--example", "gateway_load"],
    )?;
    let folder = target_dir().join("bench").join("mcp-core");
    let _ = std::fs::remove_dir_all(&folder);
    std::fs::create_dir_all(&folder)?;
    let db = folder.join("data").display().to_string();
    let core = release("skill-core");
    let Tokens { admin: _, caller, executor } = Tokens::create(&db)?;
    output(Command::new(&core).args(["workspace", "create", "--db", &db, "--key", "desk"]))?;
    let installer = output(Command::new(&core).args([
        "token",
        "create",
        "--db",
        &db,
        "--name",
        "installer",
        "--grant",
        "org.manage",
        "--grant",
        "skills.invoke",
        "--grant",
        "orders.cancel",
    ]))?;
    let (_core, line) = start(
        Command::new(&core).args(["serve", "--db", &db, "--listen", "127.0.0.1:0"]).env("SKILL_LOG", "warn"),
        &folder.join("core.log"),
        " on http://",
    )?;
    let address = line.split(" on http://").nth(1).and_then(|rest| rest.split('/').next()).context("an address")?;
    let url = format!("http://{address}");
    publish_demo(&url, &installer, "echo@1")?;
    let contract = output(Command::new(release("examples/demo_host")).args(["contract", "orders/cancel@2"]))?;
    let cancel = json!({"name": "orders/cancel", "version": "2", "description": "Cancel an order.",
                        "sideEffects": "external_write", "riskLevel": "high",
                        "contract": serde_json::from_str::<Value>(&contract)?});
    curl("POST", &format!("{url}/api/v1/skills"), &installer, &cancel)?;
    let apply = json!({"package": {"key": "bench", "version": "1"}, "installHash": "b".repeat(64),
        "objects": [{"kind": "Agent", "key": "bench-agent"}],
        "agents": [{"key": "bench-agent", "spec": {
            "identity": {"kind": "agent", "permissions": ["skills.invoke", "orders.cancel"]},
            "skills": {"invoke": ["echo@1", "orders/cancel@2"]},
            "requests": {"workspace": "desk"}}}]});
    let applied = curl("POST", &format!("{url}/api/v1/packages:apply"), &installer, &apply)?;
    if applied.get("error").is_some() {
        bail!("applying the agent failed: {applied}");
    }
    let agent = curl("POST", &format!("{url}/api/v1/agents/bench-agent/tokens"), &installer, &json!({}))?;
    let agent = agent["token"].as_str().context("an agent token")?.to_owned();
    let (_executor, _) = start(
        Command::new(release("examples/demo_host"))
            .args(["execute", "--core", &url, "--concurrency", "64", "--grace", "5"])
            .env("SKILL_CORE_TOKEN", &executor)
            .env("SKILL_LOG", "warn,skill_host::execute=info"),
        &folder.join("executor.log"),
        "executing the local skills",
    )?;
    let load = |mode: &str, token: &str, tool: &str| -> Result<Value> {
        let result = output(Command::new(release("examples/gateway_load")).args([
            "--core",
            &url,
            "--token",
            token,
            "--mode",
            mode,
            "--tool",
            tool,
            "--skill",
            "echo@1",
            "--clients",
            CLIENTS,
            "--seconds",
            SECONDS,
        ]))?;
        let result: Value = serde_json::from_str(&result)?;
        eprintln!("  {mode:>8}: {result}");
        Ok(result)
    };
    // The reference path first, then the gateway, with the same clients and the same skill.
    let rest = load("rest", &caller, "echo")?;
    let mcp = load("mcp", &agent, "echo")?;
    let request = load("request", &agent, "orders.cancel")?;
    let per_second = |result: &Value| result["perSecond"].as_f64().unwrap_or(0.0);
    let ratio = if per_second(&rest) > 0.0 { per_second(&mcp) / per_second(&rest) } else { 0.0 };
    let p95 = request["p95"].as_f64().unwrap_or(f64::MAX);
    let summary = json!({"rest": rest, "mcp": mcp, "request": request, "ratio": ratio, "ratioBar": RATIO_BAR,
                         "requestP95Ms": p95, "requestP95BarMs": REQUEST_P95_BAR_MS,
                         "withinBars": ratio >= RATIO_BAR && p95 <= REQUEST_P95_BAR_MS});
    let file = target_dir().join("bench").join("mcp-core.json");
    std::fs::write(&file, serde_json::to_string_pretty(&summary)?)?;
    eprintln!(
        "mcp-core: gateway {:.0} calls/s vs API {:.0} calls/s (ratio {ratio:.2}, bar {RATIO_BAR}); a pending request p95 {p95:.1} ms (bar {REQUEST_P95_BAR_MS} ms) → {}",
        per_second(&mcp),
        per_second(&rest),
        file.display()
    );
    Ok(())
}
