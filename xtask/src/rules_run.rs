//! The rules benchmark and fault run (`cargo xtask bench rules`, `cargo xtask fault rules`), on a
//! release core over SQLite with the demo host as its executor: a rule on `bench.fact` facts,
//! acting as an agent that may call `echo@1` and make tasks in `desk`, interprets each fact
//! with `echo@1` and ensures one `bench-task@1` task per fact.
//!
//! - The benchmark sends 5,000 facts with 32 clients and reports facts per second from the first
//!   send to the last evaluation's end (bar ≥ 500), then 1,000 at 50 a second and how long an
//!   evaluation takes to resume after its call ended (p99 bar ≤ 50 ms): `target/bench/rules.json`.
//! - The fault run sends 1,000 facts at 50 a second while the executor is killed (`kill -9`) and
//!   restarted every 2.5 s and the core twice, and checks that every fact was evaluated exactly
//!   once, each made one task, and none is lost: `target/fault/rules.json`.

use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use serde_json::{Value, json};

use crate::core_run::{Process, Tokens, build, free_listen, output, person_token, publish_demo, release, start};
use crate::target_dir;

const FACTS_PER_SECOND_BAR: f64 = 500.0;
const RESUME_P99_BAR_MS: f64 = 50.0;

fn curl(method: &str, url: &str, token: &str, body: Option<&Value>) -> Result<Value> {
    let mut command = Command::new("curl");
    command.args(["-s", "-X", method, "-H", &format!("Authorization: Bearer {token}")]);
    if let Some(body) = body {
        command.args(["-H", "Content-Type: application/json", "-d", &body.to_string()]);
    }
    let answer = output(command.arg(url))?;
    serde_json::from_str(&answer).with_context(|| format!("{url} answered {answer}"))
}

/// A core with the rule, its executor, and the token facts are sent with.
struct Setup {
    db: String,
    url: String,
    listen: String,
    sender: String,
    runner: String,
    core: Process,
    executor: Process,
}

fn serve(db: &str, listen: &str) -> Command {
    let mut command = Command::new(release("skill-core"));
    command.args(["serve", "--db", db, "--listen", listen]).env("SKILL_LOG", "warn");
    command
}

fn execute(url: &str, runner: &str) -> Command {
    let mut command = Command::new(release("examples/demo_host"));
    command
        .args(["execute", "--core", url, "--concurrency", "64", "--grace", "1"])
        .env("SKILL_CORE_TOKEN", runner)
        .env("SKILL_LOG", "warn,skill_host::execute=info");
    command
}

fn setup(folder: &std::path::Path) -> Result<Setup> {
    build(
        "build the core, the demo host and the load generators (release)",
        &["-p", "skill-core", "--example", "rules_load"],
    )?;
    let _ = std::fs::remove_dir_all(folder);
    std::fs::create_dir_all(folder)?;
    let db = folder.join("data").display().to_string();
    let core = release("skill-core");
    let Tokens { admin: _, caller: _, executor: runner } = Tokens::create(&db)?;
    output(Command::new(&core).args(["workspace", "create", "--db", &db, "--key", "desk"]))?;
    let installer = person_token(&db, "installer", &["org.manage", "skills.invoke", "tasks.write@desk"])?;
    let sender = person_token(&db, "sender", &["facts.write@desk", "org.read"])?;
    let listen = free_listen()?;
    let url = format!("http://{listen}");
    let (core_process, _) = start(&mut serve(&db, &listen), &folder.join("core.log"), " on http://")?;
    publish_demo(&url, &installer, "echo@1")?;
    let api = |path: &str| format!("{url}/api/v1{path}");
    let task_type = json!({"key": "bench-task", "version": "1", "customFields": {"n": {"type": "integer"}}});
    curl("POST", &api("/task-types"), &installer, Some(&task_type))?;
    let apply = json!({"package": {"key": "bench", "version": "1"}, "installHash": "c".repeat(64),
        "objects": [{"kind": "Agent", "key": "bench-intake"}],
        "agents": [{"key": "bench-intake", "spec": {
            "identity": {"kind": "agent", "permissions": ["skills.invoke", "tasks.write@desk"]},
            "skills": {"invoke": ["echo@1"]}}}],
        "rules": [{"key": "bench-rule", "spec": {"version": "1", "identity": {"agent": "bench-intake"},
            "on": {"kind": "bench.fact", "when": "fact.data.n >= 0"},
            "interpretation": {"skill": "echo@1", "inputs": {"text": "$.fact.data.text"}},
            "ensureWork": [{"task": {"type": "bench-task@1", "workKey": "$.fact.key",
                                     "title": "{{$.interpretation.output.text}}",
                                     "customFields": {"n": "$.fact.data.n"}}}]}}]});
    let applied = curl("POST", &api("/packages:apply"), &installer, Some(&apply))?;
    if applied.get("error").is_some() {
        bail!("applying the rule failed: {applied}");
    }
    let (executor, _) = start(&mut execute(&url, &runner), &folder.join("executor.log"), "executing the local skills")?;
    Ok(Setup { db, url, listen, sender, runner, core: core_process, executor })
}

fn load(setup: &Setup, facts: usize, clients: usize, rate: Option<f64>) -> Result<Command> {
    let mut command = Command::new(release("examples/rules_load"));
    command.args([
        "--core",
        &setup.url,
        "--token",
        &setup.sender,
        "--workspace",
        "desk",
        "--kind",
        "bench.fact",
        "--facts",
        &facts.to_string(),
        "--clients",
        &clients.to_string(),
    ]);
    if let Some(rate) = rate {
        command.args(["--rate", &rate.to_string()]);
    }
    Ok(command)
}

pub(crate) fn bench_rules() -> Result<()> {
    let folder = target_dir().join("bench").join("rules");
    let setup = setup(&folder)?;
    // As fast as the core takes them: the sustained rate. Then at 50 a second, below it: how
    // long an evaluation waits after its call ended when nothing queues before it.
    let result: Value = serde_json::from_str(&output(&mut load(&setup, 5000, 32, None)?)?)?;
    let mut paced = load(&setup, 1000, 8, Some(50.0))?;
    paced.args(["--key-prefix", "paced-"]);
    let paced: Value = serde_json::from_str(&output(&mut paced)?)?;
    let per_second = result["perSecond"].as_f64().unwrap_or(0.0);
    let p99 = paced["resumeP99Ms"].as_f64().unwrap_or(f64::MAX);
    let summary = json!({"load": result, "paced": paced, "factsPerSecondBar": FACTS_PER_SECOND_BAR, "resumeP99BarMs": RESUME_P99_BAR_MS,
                         "withinBars": per_second >= FACTS_PER_SECOND_BAR && p99 <= RESUME_P99_BAR_MS});
    let file = target_dir().join("bench").join("rules.json");
    std::fs::write(&file, serde_json::to_string_pretty(&summary)?)?;
    eprintln!(
        "rules: {per_second:.0} facts/s to their tasks (bar {FACTS_PER_SECOND_BAR}); an evaluation resumes {p99:.1} ms p99 after its call ended (bar {RESUME_P99_BAR_MS} ms) → {}",
        file.display()
    );
    drop(setup);
    Ok(())
}

#[allow(
    clippy::too_many_lines,
    reason = "a fault run is one script: start, kill and restart at random, then count, read top to bottom"
)]
pub(crate) fn fault_rules() -> Result<()> {
    const FACTS: usize = 1000;
    let folder = target_dir().join("fault").join("rules-run");
    let mut setup = setup(&folder)?;
    let mut running = load(&setup, FACTS, 8, Some(50.0))?
        .stdout(std::fs::File::create(folder.join("load.json"))?)
        .stderr(std::fs::File::create(folder.join("load.log"))?)
        .spawn()?;
    let started = Instant::now();
    let (mut executor_kills, mut core_kills) = (0, 0);
    while running.try_wait()?.is_none() && started.elapsed() < Duration::from_secs(600) {
        std::thread::sleep(Duration::from_millis(2500));
        setup.executor.kill();
        executor_kills += 1;
        if matches!(executor_kills, 2 | 5) {
            setup.core.kill();
            core_kills += 1;
            std::thread::sleep(Duration::from_millis(500));
            setup.core = start(&mut serve(&setup.db, &setup.listen), &folder.join("core.log"), " on http://")?.0;
        }
        setup.executor =
            start(&mut execute(&setup.url, &setup.runner), &folder.join("executor.log"), "executing the local skills")?
                .0;
    }
    let _ = running.wait();
    let load: Value =
        serde_json::from_str(&std::fs::read_to_string(folder.join("load.json"))?).context("the load's figures")?;

    // What the core holds: every fact, its evaluations, the tasks, the journal.
    let api = |path: &str| format!("{}/api/v1{path}", setup.url);
    let (mut facts, mut evaluations, mut done, mut cursor) = (0usize, 0usize, 0usize, None::<String>);
    let mut tasks_of_facts = std::collections::BTreeSet::new();
    loop {
        let path = match &cursor {
            Some(cursor) => format!("/facts?workspace=desk&limit=200&cursor={cursor}"),
            None => "/facts?workspace=desk&limit=200".to_owned(),
        };
        let page = curl("GET", &api(&path), &setup.sender, None)?;
        for fact in page["items"].as_array().cloned().unwrap_or_default() {
            facts += 1;
            let read =
                curl("GET", &api(&format!("/facts/{}", fact["id"].as_str().unwrap_or_default())), &setup.sender, None)?;
            for evaluation in read["evaluations"].as_array().cloned().unwrap_or_default() {
                evaluations += 1;
                if evaluation["status"] == "done" {
                    done += 1;
                }
                for task in evaluation["taskIds"].as_array().cloned().unwrap_or_default() {
                    tasks_of_facts.insert(task.as_str().unwrap_or_default().to_owned());
                }
            }
        }
        cursor = page["nextCursor"].as_str().map(str::to_owned);
        if cursor.is_none() {
            break;
        }
    }
    let mut evaluated_events = 0usize;
    let mut after = 0i64;
    loop {
        let page = curl("GET", &api(&format!("/events?after={after}&limit=1000")), &setup.sender, None)?;
        let items = page["items"].as_array().cloned().unwrap_or_default();
        if items.is_empty() {
            break;
        }
        for event in &items {
            after = after.max(event["seq"].as_i64().unwrap_or(after));
            if event["kind"] == "rule.evaluated" {
                evaluated_events += 1;
            }
        }
    }
    drop(setup);
    let report = json!({"facts": FACTS, "recorded": facts, "evaluations": evaluations, "done": done,
        "distinctTasks": tasks_of_facts.len(), "evaluatedEvents": evaluated_events,
        "executorKills": executor_kills, "coreKills": core_kills, "load": load,
        "seconds": started.elapsed().as_secs_f64()});
    std::fs::create_dir_all(target_dir().join("fault"))?;
    std::fs::write(target_dir().join("fault").join("rules.json"), serde_json::to_string_pretty(&report)?)?;
    eprintln!("fault run (rules): {report}");
    let mut wrong = Vec::new();
    if facts != FACTS {
        wrong.push(format!("{facts} facts recorded of {FACTS} sent"));
    }
    if evaluations != FACTS || done != FACTS || evaluated_events != FACTS {
        wrong.push(format!("{evaluations} evaluations ({done} done, {evaluated_events} journaled) for {FACTS} facts"));
    }
    if tasks_of_facts.len() != FACTS {
        wrong.push(format!("{} tasks for {FACTS} facts", tasks_of_facts.len()));
    }
    if !wrong.is_empty() {
        bail!("the rules fault run found: {}", wrong.join("; "));
    }
    Ok(())
}
