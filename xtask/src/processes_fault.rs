//! The processes fault run (`cargo xtask fault processes`), on a release core over SQLite with
//! the demo host as its executor: 500 instances of a four-step process — an `echo@1` call, a
//! review task whose gate a person approves, the demo host's `record@1` published as an
//! external write (one effect file per idempotency key) on the review's decision, and an end —
//! while the executor is killed (`kill -9`) and restarted every 2.5 s and the core twice. It
//! checks that every instance completed, each ran each step once, and each wrote once:
//! `target/fault/processes.json`.

use std::collections::BTreeSet;
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{Result, bail};
use serde_json::{Value, json};

use crate::core_run::{Tokens, build, free_listen, output, person_token, publish_demo, release, start};
use crate::target_dir;

const INSTANCES: usize = 500;

/// A request; `None` when the core does not answer (it may be down).
fn call(method: &str, url: &str, token: &str, body: Option<&Value>) -> Option<Value> {
    let mut command = Command::new("curl");
    command.args(["-s", "--max-time", "10", "-X", method, "-H", &format!("Authorization: Bearer {token}")]);
    if let Some(body) = body {
        command.args(["-H", "Content-Type: application/json", "-d", &body.to_string()]);
    }
    serde_json::from_str(&output(command.arg(url)).ok()?).ok()
}

fn serve(db: &str, listen: &str) -> Command {
    let mut command = Command::new(release("skill-core"));
    command.args(["serve", "--db", db, "--listen", listen]).env("SKILL_LOG", "warn");
    command
}

fn execute(url: &str, runner: &str, effects: &std::path::Path) -> Command {
    let mut command = Command::new(release("examples/demo_host"));
    command
        .args(["execute", "--core", url, "--concurrency", "64", "--grace", "1"])
        .env("SKILL_CORE_TOKEN", runner)
        .env("DEMO_EFFECTS_DIR", effects)
        .env("SKILL_LOG", "warn,skill_host::execute=info");
    command
}

/// Every item of a listing, page after page.
fn all(url: &str, token: &str, path: &str) -> Option<Vec<Value>> {
    let mut items = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let page = match &cursor {
            Some(cursor) => call("GET", &format!("{url}/api/v1{path}&cursor={cursor}"), token, None)?,
            None => call("GET", &format!("{url}/api/v1{path}"), token, None)?,
        };
        items.extend(page.get("items")?.as_array()?.iter().cloned());
        cursor = page["nextCursor"].as_str().map(str::to_owned);
        if cursor.is_none() {
            return Some(items);
        }
    }
}

#[allow(
    clippy::too_many_lines,
    reason = "a fault run is one script: start, kill and restart at random, then count, read top to bottom"
)]
pub(crate) fn fault_processes() -> Result<()> {
    build("build the core and the demo host (release)", &[])?;
    let folder = target_dir().join("fault").join("processes-run");
    let _ = std::fs::remove_dir_all(&folder);
    let effects = folder.join("effects");
    std::fs::create_dir_all(&effects)?;
    let db = folder.join("data").display().to_string();
    let core = release("skill-core");
    let Tokens { admin: _, caller: _, executor: runner } = Tokens::create(&db)?;
    output(Command::new(&core).args(["workspace", "create", "--db", &db, "--key", "desk"]))?;
    let installer =
        person_token(&db, "installer", &["org.manage", "skills.invoke", "tasks.write@desk", "tasks.read@desk"])?;
    let starter = person_token(&db, "starter", &["tasks.write@desk", "tasks.read@desk"])?;
    let reviewer = person_token(&db, "reviewer", &["tasks.write@desk", "tasks.read@desk", "approvals.decide@desk"])?;
    let listen = free_listen()?;
    let url = format!("http://{listen}");
    let api = |path: &str| format!("{url}/api/v1{path}");
    let mut core_process = start(&mut serve(&db, &listen), &folder.join("core.log"), " on http://")?.0;
    publish_demo(&url, &installer, "echo@1")?;
    // record@1 as a write to the outside world: one effect per idempotency key.
    let contract = output(Command::new(release("examples/demo_host")).args(["contract", "record@1"]))?;
    let record = json!({"name": "record", "version": "1", "description": "One effect per key.",
                        "sideEffects": "external_write", "riskLevel": "high",
                        "contract": serde_json::from_str::<Value>(&contract)?});
    let published = call("POST", &api("/skills"), &installer, Some(&record));
    if published.as_ref().and_then(|p| p.get("id")).is_none() {
        bail!("publishing record@1 failed: {published:?}");
    }
    let apply = json!({"package": {"key": "fault", "version": "1"}, "installHash": "e".repeat(64),
        "objects": [{"kind": "Agent", "key": "fault-runner"}],
        "taskTypes": [{"key": "fault-review", "version": "1", "customFields": {"n": {"type": "integer"}}}],
        "agents": [{"key": "fault-runner", "spec": {
            "identity": {"kind": "agent", "permissions": ["skills.invoke", "tasks.write@desk", "tasks.read@desk"]},
            "skills": {"invoke": ["echo@1", "record@1"]}}}],
        "processes": [{"key": "fault-process", "spec": {"version": "1", "identity": {"agent": "fault-runner"},
            "steps": [
                {"id": "prepare", "call": {"skill": "echo@1", "input": {"text": "$.input.text"}}},
                {"id": "review", "task": {"type": "fault-review@1", "title": "Review {{$.input.text}}",
                                          "customFields": {"n": "$.input.n"}, "approval": {}}},
                {"id": "send", "call": {"skill": "record@1", "decidedBy": "review", "input": {}}},
                {"id": "done", "end": {"status": "completed"}}]}}]});
    let applied = call("POST", &api("/packages:apply"), &installer, Some(&apply));
    if applied.as_ref().is_none_or(|a| a.get("error").is_some()) {
        bail!("applying the process failed: {applied:?}");
    }
    let mut executor =
        start(&mut execute(&url, &runner, &effects), &folder.join("executor.log"), "executing the local skills")?.0;

    // Start, review, and kill, until every instance completed.
    let started_at = Instant::now();
    let (mut started, mut executor_kills, mut core_kills, mut decided, mut closed) = (0usize, 0, 0, 0usize, 0usize);
    let mut last_kill = Instant::now();
    let mut completed = 0usize;
    while completed < INSTANCES && started_at.elapsed() < Duration::from_secs(900) {
        while started < INSTANCES && started_at.elapsed().as_secs_f64() * 50.0 > started as f64 {
            let body = json!({"workspace": "desk", "key": format!("fault-{started}"),
                              "input": {"text": format!("instance {started}"), "n": started}});
            match call("POST", &api("/processes/fault-process:start"), &starter, Some(&body)) {
                Some(answer) if answer.get("id").is_some() => started += 1,
                _ => break,
            }
        }
        // A person reviews each open task: approves its gate, then closes it done.
        for task in all(&url, &reviewer, "/tasks?workspace=desk&status=open&limit=200").unwrap_or_default() {
            let id = task["id"].as_str().unwrap_or_default();
            let gates = call("GET", &api(&format!("/approvals?task={id}")), &reviewer, None);
            for gate in gates.and_then(|g| g["items"].as_array().cloned()).unwrap_or_default() {
                if gate["status"] == "pending" {
                    let path = format!("/approvals/{}:decide", gate["id"].as_str().unwrap_or_default());
                    let body = json!({"outcome": "approved", "comment": "fine"});
                    if call("POST", &api(&path), &reviewer, Some(&body)).is_some_and(|a| a.get("id").is_some()) {
                        decided += 1;
                    }
                }
            }
            let body = json!({"status": "done"});
            if call("POST", &api(&format!("/tasks/{id}:close")), &reviewer, Some(&body))
                .is_some_and(|a| a["status"] == "done")
            {
                closed += 1;
            }
        }
        if last_kill.elapsed() >= Duration::from_millis(2500) && executor_kills < 40 {
            last_kill = Instant::now();
            executor.kill();
            executor_kills += 1;
            if matches!(executor_kills, 3 | 7) {
                core_process.kill();
                core_kills += 1;
                std::thread::sleep(Duration::from_millis(500));
                core_process = start(&mut serve(&db, &listen), &folder.join("core.log"), " on http://")?.0;
            }
            executor = start(
                &mut execute(&url, &runner, &effects),
                &folder.join("executor.log"),
                "executing the local skills",
            )?
            .0;
        }
        completed = all(&url, &starter, "/process-instances?workspace=desk&status=completed&limit=200")
            .map_or(completed, |items| items.len());
        std::thread::sleep(Duration::from_millis(200));
    }
    let seconds = started_at.elapsed().as_secs_f64();

    // What the core holds, and what was written.
    let instances = all(&url, &starter, "/process-instances?workspace=desk&limit=200").unwrap_or_default();
    let mut twice = Vec::new();
    let mut keys = BTreeSet::new();
    let mut not_completed = 0usize;
    for instance in &instances {
        let id = instance["id"].as_str().unwrap_or_default();
        if instance["status"] != "completed" {
            not_completed += 1;
        }
        let read = call("GET", &api(&format!("/process-instances/{id}")), &starter, None).unwrap_or_default();
        let steps = read["steps"].as_array().cloned().unwrap_or_default();
        let mut seen = BTreeSet::new();
        for step in &steps {
            if !seen.insert(step["step"].as_str().unwrap_or_default().to_owned()) {
                twice.push(format!("{id}: {}", step["step"]));
            }
            if step["step"] == "send" {
                keys.insert(format!("process:{}", step["id"].as_str().unwrap_or_default()));
            }
        }
    }
    let written: BTreeSet<String> = std::fs::read_dir(&effects)?
        .filter_map(std::result::Result::ok)
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .collect();
    drop(executor);
    drop(core_process);
    let report = json!({"instances": INSTANCES, "started": started, "listed": instances.len(),
        "notCompleted": not_completed, "stepsRunTwice": twice.len(), "effects": written.len(),
        "effectsOfSendSteps": written.intersection(&keys).count(), "gatesApproved": decided, "tasksClosed": closed,
        "executorKills": executor_kills, "coreKills": core_kills, "seconds": seconds});
    std::fs::create_dir_all(target_dir().join("fault"))?;
    std::fs::write(target_dir().join("fault").join("processes.json"), serde_json::to_string_pretty(&report)?)?;
    eprintln!("fault run (processes): {report}");
    let mut wrong = Vec::new();
    if instances.len() != INSTANCES || not_completed > 0 {
        wrong.push(format!("{} instances, {not_completed} not completed, of {INSTANCES}", instances.len()));
    }
    if !twice.is_empty() {
        wrong.push(format!("steps run twice: {}", twice.join(", ")));
    }
    if written.len() != INSTANCES || written != keys {
        wrong.push(format!("{} effects written for {} send steps", written.len(), keys.len()));
    }
    if !wrong.is_empty() {
        bail!("the processes fault run found: {}", wrong.join("; "));
    }
    Ok(())
}
