//! A model-based test of the basis rules: random sequences of what people, executors and
//! operators do — create a task (with or without a gate), ask for, decide and withdraw
//! approvals, start and end runs, invoke with and without an approval or a run, close tasks,
//! disable a principal, claim, complete, fail, let leases expire — against the real engine on a
//! real SQLite store. A model of the work predicts the answer of every call (its status or the
//! exact refusal code); after every step the store is checked:
//!
//! - no `external_write` call is claimed without a basis valid at that moment;
//! - no call of a closed task is claimed on an approval or an execution basis;
//! - an approval is spent at most once per skill version;
//! - a run has at most one execution call.
//!
//! `SKILL_MODEL_CASES` (default 52, in four shards that run at once) × `SKILL_MODEL_STEPS`
//! (default 2,000) operations — 104,000 — from the seed `SKILL_MODEL_SEED` (default fixed); a
//! failure names the seed, the case and the step.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use chrono::{Duration, Utc};
use serde_json::json;
use skill_api::{
    ApprovalRequest, CloseTaskRequest, DecideRequest, DisableRequest, EndRunRequest, InvokeRequest, PublishRequest,
    RunRequest, TaskApproval, TaskRequest, TaskTypeRequest, WithdrawRequest,
};
use skill_engine::{Actor, Engine, Origin, TokenRequest};
use skill_store::records::InvocationFilter;

/// splitmix64: small, fast, and the same sequence on every machine.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }

    fn chance(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }

    fn pick<'a, T>(&mut self, items: &'a [T]) -> Option<&'a T> {
        if items.is_empty() { None } else { Some(&items[self.below(items.len())]) }
    }
}

fn env_number(name: &str, default: u64) -> u64 {
    std::env::var(name).ok().and_then(|value| value.parse().ok()).unwrap_or(default)
}

/// The skills of the model: two versions of one external write, and a read.
const SKILLS: [&str; 3] = ["claim.send@1", "claim.send@2", "claim.read@1"];

#[derive(Debug, Clone)]
struct Task {
    open: bool,
    /// Its type pins `claim.send@1` as its execution.
    execution: bool,
}

#[derive(Debug, Clone)]
struct Approval {
    task: String,
    gate: bool,
    /// pending, approved, rejected, withdrawn.
    status: &'static str,
    requester: usize,
}

#[derive(Debug, Clone)]
struct Run {
    task: String,
    owner: usize,
    running: bool,
}

#[derive(Debug, Clone)]
struct Call {
    status: String,
    fencing: i64,
    authority: usize,
}

/// What the model knows of the work.
#[derive(Default)]
struct Model {
    tasks: BTreeMap<String, Task>,
    approvals: BTreeMap<String, Approval>,
    runs: BTreeMap<String, Run>,
    calls: BTreeMap<String, Call>,
    /// (skill, approval) pairs an approval basis has spent.
    spent: BTreeSet<(String, String)>,
    /// Runs with an execution call.
    executed: BTreeSet<String>,
    disabled: BTreeSet<usize>,
}

impl Model {
    fn pending_gate(&self, task: &str) -> bool {
        self.approvals.values().any(|a| a.task == task && a.gate && a.status == "pending")
    }

    /// What invoking `skill` as `person` with these ids answers: `Ok(basis kind)` or the code.
    fn predict(
        &self,
        person: usize,
        skill: &str,
        task: Option<&str>,
        run: Option<&str>,
        approval: Option<&str>,
    ) -> Result<Option<&'static str>, &'static str> {
        let run = run.map(|id| (id, &self.runs[id]));
        if let Some((_, run)) = run {
            if run.owner != person {
                return Err("run_owner_mismatch");
            }
            if !run.running {
                return Err("run_not_active");
            }
        }
        let task = match (task, run) {
            (Some(task), Some((_, run))) if run.task != task => return Err("invocation_mismatch"),
            (Some(task), _) => Some(task.to_owned()),
            (None, Some((_, run))) => Some(run.task.clone()),
            (None, None) => None,
        };
        let candidate = match (&task, run) {
            (Some(task), Some(_)) => self.tasks[task].execution && skill == "claim.send@1",
            _ => false,
        };
        if skill == "claim.read@1" {
            return Ok(candidate.then_some("execution"));
        }
        let Some(task) = task else { return Err("skill_side_effect_not_authorized") };
        let open = self.tasks[&task].open;
        let Some(approval) = approval else {
            if !candidate {
                return Err("skill_side_effect_not_authorized");
            }
            if !open {
                return Err("task_terminal");
            }
            if self.pending_gate(&task) {
                return Err("approval_required");
            }
            if self.executed.contains(run.map(|(id, _)| id).unwrap_or_default()) {
                return Err("execution_already_invoked");
            }
            return Ok(Some("execution"));
        };
        if !open {
            return Err("task_terminal");
        }
        match self.approvals.get(approval) {
            Some(a) if a.status == "approved" && a.gate && a.task == task => {}
            _ => return Err("skill_side_effect_not_authorized"),
        }
        if self.spent.contains(&(skill.to_owned(), approval.to_owned())) {
            return Err("approval_already_used");
        }
        Ok(Some("approval"))
    }
}

/// One case's world: the engine on a fresh database, the people and the executor.
struct World {
    engine: Engine,
    admin: Actor,
    /// alice and carol write tasks and invoke; bob decides (and writes).
    people: Vec<Actor>,
    executor: Actor,
    _folder: Folder,
}

struct Folder(std::path::PathBuf);

impl Drop for Folder {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

async fn actor(engine: &Engine, name: &str, grants: &[&str]) -> Actor {
    let request = TokenRequest {
        principal: name.to_owned(),
        kind: "person".to_owned(),
        grants: grants.iter().map(|g| (*g).to_owned()).collect(),
        label: String::new(),
        expires_at: None,
    };
    let issued = engine.issue_token(&request, &Origin::default()).await.expect("token");
    engine.authenticate(&issued.token).await.expect("authenticates")
}

fn leaf(name: &str, version: &str, side_effects: &str) -> PublishRequest {
    serde_json::from_value(json!({
        "name": name, "version": version, "description": "A model skill.", "sideEffects": side_effects,
        "riskLevel": "low",
        "contract": {"inputs": {"type": "object"}, "outputs": {"type": "object"}, "timeoutSeconds": 5,
                     "idempotency": "natural", "retryPolicy": {"maxAttempts": 2, "backoffSeconds": 0},
                     "implementation": {"protocol": "local", "entrypoint": format!("model:{}", name.replace('.', "_"))}}
    }))
    .expect("a publish request")
}

async fn world(case: u64) -> World {
    let folder = std::env::temp_dir().join(format!("skill-engine-model-{}-{case}", std::process::id()));
    let _ = std::fs::remove_dir_all(&folder);
    let options = skill_store::StoreOptions { sqlite_full_sync: false, ..Default::default() };
    let store = skill_store::open(folder.to_str().expect("utf-8"), &options).await.expect("store");
    let blobs = Arc::new(skill_store::FolderBlobs::new(folder.join("blobs")));
    let engine = Engine::new(Arc::clone(&store)).with_blobs(blobs);
    engine.create_workspace("desk", "desk", &Origin::default()).await.expect("workspace");
    let admin = actor(&engine, "admin", &["org.manage"]).await;
    let writer = ["skills.invoke", "tasks.write@desk"];
    let people = vec![
        actor(&engine, "alice", &writer).await,
        actor(&engine, "bob", &["skills.invoke", "tasks.write@desk", "approvals.decide@desk"]).await,
        actor(&engine, "carol", &writer).await,
    ];
    let executor = actor(&engine, "executor", &["skills.execute"]).await;
    for reference in SKILLS {
        let (name, version) = reference.split_once('@').expect("name@version");
        let side_effects = if name == "claim.send" { "external_write" } else { "none" };
        engine.publish(&admin, &leaf(name, version, side_effects), None).await.expect("published");
    }
    for (key, execution) in [("plain", None), ("auto", Some(json!({"skill": "claim.send", "version": "1"})))] {
        let request = TaskTypeRequest { key: key.to_owned(), version: "1".to_owned(), execution, ..Default::default() };
        engine.publish_task_type(&admin, &request, None).await.expect("a type");
    }
    World { engine, admin, people, executor, _folder: Folder(folder) }
}

/// The refusal code of an engine answer, or `ok`.
fn code<T>(result: &Result<T, skill_engine::EngineError>) -> &'static str {
    match result {
        Ok(_) => "ok",
        Err(error) => error.code,
    }
}

// Four shards of the cases, so the test's cases run on every core.
#[tokio::test]
async fn random_work_never_writes_without_a_basis_0() {
    shard(0).await;
}

#[tokio::test]
async fn random_work_never_writes_without_a_basis_1() {
    shard(1).await;
}

#[tokio::test]
async fn random_work_never_writes_without_a_basis_2() {
    shard(2).await;
}

#[tokio::test]
async fn random_work_never_writes_without_a_basis_3() {
    shard(3).await;
}

const SHARDS: u64 = 4;

/// The cases `n`, `n + 4`, `n + 8`, … of the run; what they did goes to stderr (`--nocapture`).
#[allow(clippy::print_stderr)]
async fn shard(n: u64) {
    let all = env_number("SKILL_MODEL_CASES", 52);
    let steps = env_number("SKILL_MODEL_STEPS", 2_000);
    let seed = env_number("SKILL_MODEL_SEED", 0x5EED_0001);
    let started = std::time::Instant::now();
    let mut totals: BTreeMap<&'static str, u64> = BTreeMap::new();
    let mine: Vec<u64> = (0..all).filter(|case| case % SHARDS == n).collect();
    let cases = mine.len() as u64;
    for case in mine {
        let mut rng = Rng(seed ^ case.wrapping_mul(0x1000_0000_01B3));
        run_case(case, steps, &mut rng, &mut totals, seed).await;
    }
    let operations: u64 = totals.iter().filter(|(kind, _)| !kind.starts_with('+')).map(|(_, n)| n).sum();
    assert_eq!(operations, cases * steps, "every step is one operation");
    // The sequences reach the interesting states, or the test proves little.
    for (kind, at_least) in [
        ("claimed", cases * 50),
        ("+cancelled at claim", cases),
        ("invoke refused", cases * 50),
        ("invoke accepted", cases * 50),
        ("+execution call", cases),
    ] {
        assert!(totals.get(kind).copied().unwrap_or(0) >= at_least, "too few `{kind}`: {totals:?}");
    }
    eprintln!("model shard {n}: {operations} operations in {:.1} s: {totals:?}", started.elapsed().as_secs_f64());
}

#[allow(clippy::too_many_lines)]
async fn run_case(case: u64, steps: u64, rng: &mut Rng, totals: &mut BTreeMap<&'static str, u64>, seed: u64) {
    let w = world(case).await;
    let mut m = Model::default();
    let desk = || "desk".to_owned();
    for step in 0..steps {
        let at = format!("seed {seed:#x}, case {case}, step {step}");
        // A disabled person acts no more: someone else does.
        let person = match rng.below(3) {
            disabled if m.disabled.contains(&disabled) => 0,
            person => person,
        };
        let roll = rng.below(100);
        let kind: &'static str = match roll {
            0..=7 => {
                let execution = rng.chance(40);
                let gate = rng.chance(30);
                let request = TaskRequest {
                    workspace: desk(),
                    task_type: if execution { "auto@1" } else { "plain@1" }.to_owned(),
                    title: "A claim".to_owned(),
                    custom_fields: None,
                    approval: gate.then(TaskApproval::default),
                };
                let task = w.engine.create_task(&w.people[person], &request, None).await.expect(&at);
                m.tasks.insert(task.id.clone(), Task { open: true, execution });
                if gate {
                    let listed = w
                        .engine
                        .approvals(&w.admin_reader(), &skill_api::OfTaskQuery { task: task.id.clone() })
                        .await
                        .expect(&at);
                    let id = listed.items[0].id.clone();
                    m.approvals
                        .insert(id, Approval { task: task.id, gate: true, status: "pending", requester: person });
                }
                "task created"
            }
            8..=15 => {
                let open: Vec<String> = m.tasks.iter().filter(|(_, t)| t.open).map(|(id, _)| id.clone()).collect();
                let Some(task) = rng.pick(&open).cloned() else {
                    continue_step(totals, "nothing to do");
                    continue;
                };
                let gate = rng.chance(80);
                let request = ApprovalRequest { task_id: task.clone(), gate: Some(gate), comment: None, call: None };
                let approval = w.engine.request_approval(&w.people[person], &request, None).await.expect(&at);
                m.approvals.insert(approval.id, Approval { task, gate, status: "pending", requester: person });
                "approval requested"
            }
            16..=25 => {
                let pending: Vec<String> =
                    m.approvals.iter().filter(|(_, a)| a.status == "pending").map(|(id, _)| id.clone()).collect();
                let Some(id) = rng.pick(&pending).cloned() else {
                    continue_step(totals, "nothing to do");
                    continue;
                };
                let outcome = if rng.chance(80) { "approved" } else { "rejected" };
                let decider = &w.people[1];
                let result = w
                    .engine
                    .decide(decider, &id, &DecideRequest { outcome: outcome.to_owned(), comment: None }, None)
                    .await;
                let approval = &m.approvals[&id];
                let expected = if m.disabled.contains(&1) {
                    "skipped"
                } else if approval.requester == 1 {
                    "self_approval_refused"
                } else if !m.tasks[&approval.task].open {
                    "task_terminal"
                } else {
                    "ok"
                };
                if expected == "skipped" {
                    continue_step(totals, "skipped (disabled)");
                    continue;
                }
                assert_eq!(code(&result), expected, "{at}: decide {id}");
                if expected == "ok" {
                    m.approvals.get_mut(&id).expect("known").status =
                        if outcome == "approved" { "approved" } else { "rejected" };
                }
                "approval decided"
            }
            26..=29 => {
                let live: Vec<String> = m
                    .approvals
                    .iter()
                    .filter(|(_, a)| matches!(a.status, "pending" | "approved") && a.requester == person)
                    .map(|(id, _)| id.clone())
                    .collect();
                let Some(id) = rng.pick(&live).cloned() else {
                    continue_step(totals, "nothing to do");
                    continue;
                };
                w.engine.withdraw(&w.people[person], &id, &WithdrawRequest::default(), None).await.expect(&at);
                m.approvals.get_mut(&id).expect("known").status = "withdrawn";
                "approval withdrawn"
            }
            30..=35 => {
                let open: Vec<String> = m.tasks.iter().filter(|(_, t)| t.open).map(|(id, _)| id.clone()).collect();
                let Some(task) = rng.pick(&open).cloned() else {
                    continue_step(totals, "nothing to do");
                    continue;
                };
                let result = w.engine.start_run(&w.people[person], &RunRequest { task_id: task.clone() }, None).await;
                let busy = m.runs.values().any(|r| r.task == task && r.owner == person && r.running);
                assert_eq!(code(&result), if busy { "run_already_running" } else { "ok" }, "{at}");
                if let Ok(run) = result {
                    m.runs.insert(run.id, Run { task, owner: person, running: true });
                }
                "run started"
            }
            36..=39 => {
                let mine: Vec<String> =
                    m.runs.iter().filter(|(_, r)| r.running && r.owner == person).map(|(id, _)| id.clone()).collect();
                let Some(id) = rng.pick(&mine).cloned() else {
                    continue_step(totals, "nothing to do");
                    continue;
                };
                let request = EndRunRequest { status: "succeeded".to_owned(), result: None, error: None };
                w.engine.end_run(&w.people[person], &id, &request, None).await.expect(&at);
                m.runs.get_mut(&id).expect("known").running = false;
                "run ended"
            }
            40..=64 => {
                // Mostly coherent calls (a run of one's own, an approval of the same task), some
                // of anything.
                let tasks: Vec<String> = m.tasks.keys().cloned().collect();
                let all_runs: Vec<String> = m.runs.keys().cloned().collect();
                let (mut skill, mut run, mut approval) = (SKILLS[rng.below(3)], None, None);
                let task;
                match rng.below(10) {
                    0..=3 => {
                        let mine: Vec<String> = m
                            .runs
                            .iter()
                            .filter(|(_, r)| r.owner == person && r.running)
                            .map(|(id, _)| id.clone())
                            .collect();
                        run = rng.pick(&mine).cloned();
                        task = run.as_ref().map(|r| m.runs[r].task.clone());
                        skill = if rng.chance(70) { "claim.send@1" } else { skill };
                        if rng.chance(30) {
                            let near: Vec<String> = m
                                .approvals
                                .iter()
                                .filter(|(_, a)| Some(&a.task) == task.as_ref())
                                .map(|(id, _)| id.clone())
                                .collect();
                            approval = rng.pick(&near).cloned();
                        }
                    }
                    4..=7 => {
                        task = rng.pick(&tasks).cloned();
                        let near: Vec<String> = m
                            .approvals
                            .iter()
                            .filter(|(_, a)| Some(&a.task) == task.as_ref())
                            .map(|(id, _)| id.clone())
                            .collect();
                        approval = rng.pick(&near).cloned();
                        skill = if rng.chance(80) { ["claim.send@1", "claim.send@2"][rng.below(2)] } else { skill };
                    }
                    _ => {
                        task = if rng.chance(70) { rng.pick(&tasks).cloned() } else { None };
                        run = if rng.chance(50) { rng.pick(&all_runs).cloned() } else { None };
                        let ids: Vec<String> = m.approvals.keys().cloned().collect();
                        approval = if rng.chance(50) { rng.pick(&ids).cloned() } else { None };
                    }
                }
                // With a run and no task: the run's task.
                let task = if run.is_some() && rng.chance(50) { None } else { task };
                let expected = m.predict(person, skill, task.as_deref(), run.as_deref(), approval.as_deref());
                let request = InvokeRequest {
                    inputs: Some(serde_json::Map::new()),
                    idempotency_key: None,
                    task_id: task.clone(),
                    run_id: run.clone(),
                    approval_id: approval.clone(),
                };
                let result = w.engine.invoke(&w.people[person], skill, &request, None).await;
                match (&expected, &result) {
                    (Ok(kind), Ok(invoked)) => {
                        let basis = invoked
                            .invocation
                            .authorization_basis
                            .as_ref()
                            .and_then(|b| b["kind"].as_str())
                            .map(str::to_owned);
                        assert_eq!(basis.as_deref(), *kind, "{at}: the basis of {skill}");
                        let call = &invoked.invocation;
                        match kind {
                            Some("approval") => {
                                assert!(
                                    m.spent.insert((skill.to_owned(), approval.clone().expect("an approval"))),
                                    "{at}"
                                );
                            }
                            Some("execution") => {
                                assert!(
                                    m.executed.insert(call.run_id.clone().expect("a run")),
                                    "{at}: a second execution call"
                                );
                            }
                            _ => {}
                        }
                        m.calls.insert(
                            call.id.clone(),
                            Call { status: "pending".to_owned(), fencing: 0, authority: person },
                        );
                        if *kind == Some("execution") {
                            *totals.entry("+execution call").or_default() += 1;
                        }
                        "invoke accepted"
                    }
                    (Err(wanted), Err(error)) => {
                        assert_eq!(
                            error.code, *wanted,
                            "{at}: {skill} task={task:?} run={run:?} approval={approval:?}"
                        );
                        "invoke refused"
                    }
                    _ => panic!(
                        "{at}: {skill} task={task:?} run={run:?} approval={approval:?}: expected {expected:?}, got {:?}",
                        result.map(|i| i.invocation.id)
                    ),
                }
            }
            65..=68 => {
                let open: Vec<String> = m.tasks.iter().filter(|(_, t)| t.open).map(|(id, _)| id.clone()).collect();
                let Some(task) = rng.pick(&open).cloned() else {
                    continue_step(totals, "nothing to do");
                    continue;
                };
                let status = ["done", "failed", "cancelled"][rng.below(3)].to_owned();
                w.engine
                    .close_task(&w.people[person], &task, &CloseTaskRequest { status, comment: None }, None)
                    .await
                    .expect(&at);
                m.tasks.get_mut(&task).expect("known").open = false;
                "task closed"
            }
            69 if step > steps / 2 && rng.chance(10) && !m.disabled.contains(&2) => {
                // carol leaves: her waiting and running calls are cancelled.
                let request = DisableRequest { principal: "carol".to_owned(), reason: "offboarded".to_owned() };
                w.engine.disable_principal(&w.admin, &request, None).await.expect(&at);
                m.disabled.insert(2);
                for (id, call) in &mut m.calls {
                    if call.authority == 2 && matches!(call.status.as_str(), "pending" | "running") {
                        let stored = w.engine.store().invocation(id).await.expect(&at);
                        assert_eq!(
                            (stored.status.as_str(), stored.error.as_ref().map(|e| e["code"].clone())),
                            ("cancelled", Some(json!("basis_revoked"))),
                            "{at}"
                        );
                        call.status = "cancelled".to_owned();
                    }
                }
                "principal disabled"
            }
            70..=81 => claim(&w, &mut m, &at, totals).await,
            82..=93 => {
                let running: Vec<String> =
                    m.calls.iter().filter(|(_, c)| c.status == "running").map(|(id, _)| id.clone()).collect();
                let Some(id) = rng.pick(&running).cloned() else {
                    continue_step(totals, "nothing to do");
                    continue;
                };
                let fencing = m.calls[&id].fencing;
                let answer = if rng.chance(70) {
                    let request = serde_json::from_value(json!({"fencingToken": fencing, "output": {"ok": true}}))
                        .expect("complete");
                    w.engine.complete(&w.executor, &id, &request, None).await.expect(&at)
                } else {
                    let retryable = rng.chance(50);
                    let request = serde_json::from_value(
                        json!({"fencingToken": fencing, "error": {"code": "boom", "retryable": retryable}}),
                    )
                    .expect("fail");
                    w.engine.fail(&w.executor, &id, &request, None).await.expect(&at)
                };
                m.calls.get_mut(&id).expect("known").status = answer.status;
                "call finished"
            }
            _ => {
                // Leases run out: every running call is back in the queue or failed.
                let moved = w.engine.expire_leases(Utc::now() + Duration::hours(2)).await.expect(&at);
                let running = m.calls.values().filter(|c| c.status == "running").count();
                // (One sweep handles a batch; more would wait for the next.)
                assert_eq!(moved, running.min(100), "{at}: every running call's lease ended");
                for (id, call) in &mut m.calls {
                    if call.status == "running" {
                        call.status = w.engine.store().invocation(id).await.expect(&at).status;
                    }
                }
                "leases expired"
            }
        };
        *totals.entry(kind).or_default() += 1;
    }
    check_spent(&w, &m, case).await;
}

fn continue_step(totals: &mut BTreeMap<&'static str, u64>, kind: &'static str) {
    *totals.entry(kind).or_default() += 1;
}

/// One claim, checked: what it took had a basis valid now; what it cancelled had lost it.
async fn claim(w: &World, m: &mut Model, at: &str, totals: &mut BTreeMap<&'static str, u64>) -> &'static str {
    let request = serde_json::from_value(json!({"protocols": ["local"],
        "localEntrypoints": ["model:claim_send", "model:claim_read"]}))
    .expect("a claim");
    let claimed = w.engine.claim(&w.executor, &request, None).await.expect(at);
    let store = w.engine.store();
    // Whatever the claim cancelled on the way lost its basis.
    let pending: Vec<String> =
        m.calls.iter().filter(|(_, c)| c.status == "pending").map(|(id, _)| id.clone()).collect();
    for id in pending {
        let stored = store.invocation(&id).await.expect(at);
        if stored.status == "cancelled" {
            let error = stored.error.clone().unwrap_or_default();
            assert_eq!(error["code"], "basis_revoked", "{at}: {id}");
            let reason = error["message"].as_str().unwrap_or_default();
            let basis = stored.authorization_basis.clone().unwrap_or_default();
            let task_open = stored.task_id.as_ref().is_none_or(|t| m.tasks[t].open);
            let lost = match reason {
                "task_terminal" => !task_open,
                "approval_withdrawn" => {
                    basis["approvalId"].as_str().is_none_or(|a| m.approvals[a].status != "approved")
                }
                "run_not_active" => stored.run_id.as_ref().is_some_and(|r| !m.runs[r].running),
                _ => false,
            };
            assert!(lost, "{at}: {id} cancelled for {reason} though its basis holds");
            m.calls.get_mut(&id).expect("known").status = "cancelled".to_owned();
            *totals.entry("+cancelled at claim").or_default() += 1;
        }
    }
    let Some(claimed) = claimed else { return "claimed nothing" };
    let call = store.invocation(&claimed.invocation.id).await.expect(at);
    let writes = claimed.skill.side_effects == "external_write";
    let basis = call.authorization_basis.clone();
    let kind = basis.as_ref().and_then(|b| b["kind"].as_str()).unwrap_or_default().to_owned();
    if writes {
        assert!(basis.is_some(), "{at}: an external write claimed without a basis");
    }
    if let Some(task) = &call.task_id
        && !kind.is_empty()
    {
        let stored = store.task(task).await.expect(at);
        assert_eq!(stored.status, "open", "{at}: a call of a closed task claimed on a basis");
    }
    match kind.as_str() {
        "approval" => {
            let approval =
                store.approval(basis.as_ref().and_then(|b| b["approvalId"].as_str()).expect("an id")).await.expect(at);
            assert!(
                approval.status == "approved" && approval.gate && Some(&approval.task_id) == call.task_id.as_ref(),
                "{at}: {approval:?}"
            );
        }
        "execution" => {
            let run = store.run(call.run_id.as_deref().expect("a run")).await.expect(at);
            assert_eq!(run.status, "running", "{at}: an execution call of an ended run claimed");
            if writes {
                let gates = store.approvals(&run.task_id).await.expect(at);
                assert!(!gates.iter().any(|a| a.gate && a.status == "pending"), "{at}: claimed past a pending gate");
            }
        }
        "" => {}
        other => panic!("{at}: a basis of kind {other}"),
    }
    let known = m.calls.get_mut(&call.id).expect("a call the model made");
    assert_eq!(known.status, "pending", "{at}: only a pending call is claimed");
    known.status = "running".to_owned();
    known.fencing = call.fencing_token;
    "claimed"
}

/// At the end of a case, the whole store: one call per approval and version, one execution call
/// per run.
async fn check_spent(w: &World, m: &Model, case: u64) {
    let filter = InvocationFilter { limit: 100_000, ..InvocationFilter::default() };
    let calls = w.engine.store().invocations(&filter).await.expect("calls");
    assert_eq!(calls.len(), m.calls.len(), "case {case}: the model knows every call");
    let mut approvals = BTreeSet::new();
    let mut runs = BTreeSet::new();
    for call in &calls {
        let Some(basis) = &call.authorization_basis else { continue };
        match basis["kind"].as_str() {
            Some("approval") => assert!(
                approvals.insert((call.skill_id.clone(), basis["approvalId"].as_str().unwrap_or_default().to_owned())),
                "case {case}: an approval spent twice for one version"
            ),
            Some("execution") => {
                assert!(runs.insert(call.run_id.clone()), "case {case}: a run with two execution calls");
            }
            _ => {}
        }
    }
}

impl World {
    /// Someone who reads every task (the decider).
    fn admin_reader(&self) -> Actor {
        self.people[1].clone()
    }
}
