//! The processes benchmark (`cargo xtask bench processes`), on a release core over SQLite with
//! the demo host as its executor: a process of three `echo@1` call steps (each reading the one
//! before), run by an agent that may call it. It starts 3,000 instances with 32 clients and
//! reports instances a second from the first start to the last end (bar ≥ 300), then 300 at 20 a
//! second and the gap from one call's end to the next step's call (p50 bar ≤ 10 ms):
//! `target/bench/processes.json`.

use std::process::Command;

use anyhow::{Result, bail};
use serde_json::{Value, json};

use crate::core_run::{Process, Tokens, build, free_listen, output, person_token, publish_demo, release, start};
use crate::target_dir;

const INSTANCES_PER_SECOND_BAR: f64 = 300.0;
const STEP_GAP_P50_BAR_MS: f64 = 10.0;

fn curl(method: &str, url: &str, token: &str, body: Option<&Value>) -> Result<Value> {
    let mut command = Command::new("curl");
    command.args(["-s", "-X", method, "-H", &format!("Authorization: Bearer {token}")]);
    if let Some(body) = body {
        command.args(["-H", "Content-Type: application/json", "-d", &body.to_string()]);
    }
    Ok(serde_json::from_str(&output(command.arg(url))?)?)
}

/// A core with the process, its executor, and the token instances are started with.
struct Setup {
    url: String,
    starter: String,
    _core: Process,
    _executor: Process,
}

fn setup(folder: &std::path::Path) -> Result<Setup> {
    build(
        "build the core, the demo host and the load generators (release)",
        &["-p", "skill-core", "--example", "processes_load"],
    )?;
    let _ = std::fs::remove_dir_all(folder);
    std::fs::create_dir_all(folder)?;
    let db = folder.join("data").display().to_string();
    let core = release("skill-core");
    let Tokens { admin: _, caller: _, executor: runner } = Tokens::create(&db)?;
    output(Command::new(&core).args(["workspace", "create", "--db", &db, "--key", "desk"]))?;
    let installer = person_token(&db, "installer", &["org.manage", "skills.invoke", "tasks.write@desk"])?;
    let starter = person_token(&db, "starter", &["tasks.write@desk", "org.read"])?;
    let listen = free_listen()?;
    let url = format!("http://{listen}");
    let mut serve = Command::new(&core);
    serve.args(["serve", "--db", &db, "--listen", &listen]).env("SKILL_LOG", "warn");
    let (core_process, _) = start(&mut serve, &folder.join("core.log"), " on http://")?;
    publish_demo(&url, &installer, "echo@1")?;
    let call = |text: &str| json!({"skill": "echo@1", "input": {"text": text}});
    let apply = json!({"package": {"key": "bench", "version": "1"}, "installHash": "d".repeat(64),
        "objects": [{"kind": "Agent", "key": "bench-runner"}],
        "agents": [{"key": "bench-runner", "spec": {
            "identity": {"kind": "agent", "permissions": ["skills.invoke", "tasks.write@desk"]},
            "skills": {"invoke": ["echo@1"]}}}],
        "processes": [{"key": "bench-process", "spec": {"version": "1", "identity": {"agent": "bench-runner"},
            "steps": [{"id": "one", "call": call("$.input.text")},
                      {"id": "two", "call": call("$.steps.one.output.text")},
                      {"id": "three", "call": call("$.steps.two.output.text")}]}}]});
    let applied = curl("POST", &format!("{url}/api/v1/packages:apply"), &installer, Some(&apply))?;
    if applied.get("error").is_some() {
        bail!("applying the process failed: {applied}");
    }
    let mut execute = Command::new(release("examples/demo_host"));
    execute
        .args(["execute", "--core", &url, "--concurrency", "64", "--grace", "1"])
        .env("SKILL_CORE_TOKEN", &runner)
        .env("SKILL_LOG", "warn,skill_host::execute=info");
    let (executor, _) = start(&mut execute, &folder.join("executor.log"), "executing the local skills")?;
    Ok(Setup { url, starter, _core: core_process, _executor: executor })
}

fn load(setup: &Setup, instances: usize, clients: usize, rate: Option<f64>, prefix: &str) -> Result<Value> {
    let mut command = Command::new(release("examples/processes_load"));
    command.args([
        "--core",
        &setup.url,
        "--token",
        &setup.starter,
        "--workspace",
        "desk",
        "--process",
        "bench-process",
        "--instances",
        &instances.to_string(),
        "--clients",
        &clients.to_string(),
        "--key-prefix",
        prefix,
    ]);
    if let Some(rate) = rate {
        command.args(["--rate", &rate.to_string()]);
    }
    Ok(serde_json::from_str(&output(&mut command)?)?)
}

pub(crate) fn bench_processes() -> Result<()> {
    let folder = target_dir().join("bench").join("processes");
    let setup = setup(&folder)?;
    // As fast as the core takes them: the sustained rate. Then at 20 a second, below it: the gap
    // between one step's call ending and the next step's call, when nothing queues before it.
    let result = load(&setup, 3000, 32, None, "load-")?;
    let paced = load(&setup, 300, 8, Some(20.0), "paced-")?;
    let per_second = result["perSecond"].as_f64().unwrap_or(0.0);
    let p50 = paced["stepGapP50Ms"].as_f64().unwrap_or(f64::MAX);
    let summary = json!({"load": result, "paced": paced, "instancesPerSecondBar": INSTANCES_PER_SECOND_BAR,
                         "stepGapP50BarMs": STEP_GAP_P50_BAR_MS,
                         "withinBars": per_second >= INSTANCES_PER_SECOND_BAR && p50 <= STEP_GAP_P50_BAR_MS});
    let file = target_dir().join("bench").join("processes.json");
    std::fs::write(&file, serde_json::to_string_pretty(&summary)?)?;
    eprintln!(
        "processes: {per_second:.0} instances/s of three call steps (bar {INSTANCES_PER_SECOND_BAR}); one step's call follows the last one's end {p50:.1} ms p50 (bar {STEP_GAP_P50_BAR_MS} ms) → {}",
        file.display()
    );
    Ok(())
}
