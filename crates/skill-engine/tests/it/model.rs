//! A model-based test of the four-eyes rule and the basis rules: random sequences of what
//! people, agents, executors, operators and the core's own workers do — create a task (with or
//! without a gate), ask for approvals (some for one call), decide them (the deciders bob and
//! carol, and alice and the agents, who may not), withdraw them, start and end runs, invoke with
//! and without an approval or a run, close tasks, disable a principal, claim, complete, fail, let
//! leases expire; send facts (people, and agents operated by alice and by carol, some caused by a
//! task) that rules turn into reply tasks and process instances; agents asking for writes through
//! the gateway; start and cancel instances of a process whose review gate decides a write — and
//! let the core carry out outcomes, executions, rules, requests and processes — against the real
//! engine on a real SQLite store. The model computes, on its own, the persons who set each piece
//! of work in motion (carried fact → rule → instance → task → approval, an agent counting as its
//! operator) and predicts the answer of every call and decision; after every step the store is
//! checked:
//!
//! - **the rule** (`rule`): every external write claimed stands on a decision by a person who
//!   holds `approvals.decide` in the workspace, is not among its work's initiators as the model
//!   computes them (which are also those the core recorded), and decided exactly that call;
//! - no `external_write` call is claimed without a basis valid at that moment;
//! - no call of a closed task is claimed on an approval or an execution basis;
//! - no external write on an approval other than its outcome's (the version and inputs its
//!   decision fixed, with the decider's authority) or its requested call's (by its requester:
//!   a person, or the agent whose request it is);
//! - no execution after a rejected or withdrawn gate, and no execution write without an approved
//!   one (an approval asked for one call is no gate of the task's execution);
//! - the execution basis is the core's alone: only its execution principal holds it;
//! - an approval is spent at most once per skill version; a task's execution writes at most once;
//! - a call on a process basis is the process agent's, of exactly what its open step fixed,
//!   claimed only while that step is open in a running instance, on a gate of a task of the
//!   instance that closed done, approved by someone who did not set the instance in motion —
//!   once per step run;
//!
//! and at the end of each case, `journal verify` over the store's journal agrees with the model:
//! no finding, the same external writes, the same deciders.
//!
//! `SKILL_MODEL_CASES` (default 52, in four shards that run at once) × `SKILL_MODEL_STEPS`
//! (default 2,000) operations — 104,000 — from the seed `SKILL_MODEL_SEED` (default fixed). A
//! failing case is shrunk to the shortest sequence of its steps that still fails (`shrink`),
//! reported step by step with the seed, and replayed alone with `SKILL_MODEL_REPLAY`.

use skill_api::Code;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use chrono::{Duration, Utc};
use serde_json::{Value, json};
use skill_api::{
    AgentRequest, ApplyRequest, ApprovalRequest, ApprovalStatus, Basis, CallStatus, CancelInstanceRequest,
    CloseTaskRequest, DecideRequest, DisableRequest, EndRunRequest, ExecutorAllowance, InstanceStatus, InvokeRequest,
    PackageRef, ProcessRequest, PublishRequest, RequestedCall, RunRequest, RunStatus, StartRequest, StepStatus,
    TaskApproval, TaskRequest, TaskStatus, TaskTypeRequest, WithdrawRequest,
};
use skill_engine::{Actor, Engine, Origin, TokenRequest};
use skill_store::records::{InvocationFilter, InvocationRecord, TaskFilter};

mod callers;
mod rule;
mod shrink;

use crate::random::{Rng, actor, env_number};

/// The skills of the model: two versions of one external write, and a read.
const SKILLS: [&str; 3] = ["claim.send@1", "claim.send@2", "claim.read@1"];
/// The task types: no execution; the send as the execution; a gate whose approval sends.
const TYPES: [&str; 3] = ["plain@1", "auto@1", "reply@1"];

#[derive(Debug, Clone)]
struct Task {
    open: bool,
    /// `plain@1`, `auto@1` or `reply@1`.
    kind: &'static str,
    /// The people who set it in motion: its creator, or its instance's starter.
    initiators: BTreeSet<usize>,
}

#[derive(Debug, Clone)]
struct Approval {
    task: String,
    gate: bool,
    status: ApprovalStatus,
    requester: usize,
    /// The call it was asked for: the skill and the inputs' `n`.
    call: Option<(&'static str, u64)>,
    /// Who set its work in motion: its requester (a person's) and its task's initiators. None of
    /// them decides it.
    initiators: BTreeSet<usize>,
    /// The person who decided it.
    decided_by: Option<usize>,
}

impl Approval {
    /// An approval `requester` asked for on `task`, with the initiators the rule says.
    fn asked(task: &str, of: &Task, gate: bool, requester: usize, call: Option<(&'static str, u64)>) -> Self {
        let mut initiators = of.initiators.clone();
        if requester < PEOPLE.len() {
            initiators.insert(requester);
        }
        Self {
            task: task.to_owned(),
            gate,
            status: ApprovalStatus::Pending,
            requester,
            call,
            initiators,
            decided_by: None,
        }
    }
}

/// Who asked for the review gates a process's agent asks for: no person.
const AGENT: usize = usize::MAX;

#[derive(Debug, Clone)]
struct Instance {
    /// Its starter, or the initiators of the fact a rule started it for.
    initiators: BTreeSet<usize>,
    running: bool,
}

#[derive(Debug, Clone)]
struct Run {
    task: String,
    owner: usize,
    running: bool,
}

#[derive(Debug, Clone)]
struct Call {
    status: CallStatus,
    fencing: i64,
    /// The person whose authority it has, if a person's.
    authority: Option<usize>,
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
    disabled: BTreeSet<usize>,
    instances: BTreeMap<String, Instance>,
    /// The facts whose rule evaluations have not ended yet, with their initiators.
    facts: BTreeMap<String, BTreeSet<usize>>,
}

impl Model {
    /// `task` closed: its pending approvals are withdrawn with it (no one decides a closed
    /// task's gate).
    fn close(&mut self, task: &str) {
        self.tasks.get_mut(task).expect("known").open = false;
        for approval in self.approvals.values_mut().filter(|a| a.task == task && a.status == ApprovalStatus::Pending) {
            approval.status = ApprovalStatus::Withdrawn;
        }
    }

    /// What invoking `skill` with inputs `{n}` as `person` with these ids answers: `Ok(basis
    /// kind)` or the code. A person's own call never has the execution basis.
    fn predict(
        &self,
        person: usize,
        skill: &str,
        n: u64,
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
        if skill == "claim.read@1" {
            return Ok(None);
        }
        let Some(task) = task else { return Err("skill_side_effect_not_authorized") };
        let Some(approval) = approval else { return Err("skill_side_effect_not_authorized") };
        if !self.tasks[&task].open {
            return Err("task_terminal");
        }
        let Some(a) =
            self.approvals.get(approval).filter(|a| a.status == ApprovalStatus::Approved && a.gate && a.task == task)
        else {
            return Err("skill_side_effect_not_authorized");
        };
        if a.call.is_none_or(|(asked, asked_n)| asked != skill || asked_n != n) || a.requester != person {
            return Err("approval_does_not_cover");
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
    /// alice and carol write tasks, invoke and send facts; bob and carol decide.
    people: Vec<Actor>,
    /// The agents that ask for writes and send facts: `desk-bot` (operated by alice) and
    /// `side-bot` (by carol).
    agents: Vec<Actor>,
    /// Their tokens, to show one refused once its operator is disabled.
    agent_tokens: Vec<String>,
    executor: Actor,
    /// Principal ids: the people's, in order; the core's execution principal's once known.
    ids: Vec<String>,
    /// The principal the process runs as.
    agent: String,
    /// The workspace's id.
    desk: String,
    /// `claim.send@1`, the write agents ask for.
    write: skill_store::records::SkillRecord,
    _folder: Folder,
}

struct Folder(std::path::PathBuf);

/// The model's time: it starts at the system's and moves one microsecond each time it is read,
/// so however slow the machine, no lease or timeout runs out on its own — only the step that
/// lets leases run out moves it past them.
#[derive(Debug)]
struct Ticking(std::sync::atomic::AtomicI64);

impl Ticking {
    fn new() -> Self {
        Self(std::sync::atomic::AtomicI64::new(Utc::now().timestamp_micros()))
    }
}

impl skill_engine::Clock for Ticking {
    fn now(&self) -> skill_store::records::Time {
        let micros = self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        chrono::DateTime::from_timestamp_micros(micros).expect("a time in range")
    }
}

impl Drop for Folder {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
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
    static WORLDS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let nth = WORLDS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let folder = std::env::temp_dir().join(format!("skill-engine-model-{}-{case}-{nth}", std::process::id()));
    let _ = std::fs::remove_dir_all(&folder);
    let options = skill_store::StoreOptions { sqlite_full_sync: false, ..Default::default() };
    let store = skill_store::open(folder.to_str().expect("utf-8"), &options).await.expect("store");
    let blobs = Arc::new(skill_store::FolderBlobs::new(folder.join("blobs")));
    let engine = Engine::new(Arc::clone(&store)).with_blobs(blobs).with_clock(Arc::new(Ticking::new()));
    let desk = engine.create_workspace("desk", "desk", &Origin::default()).await.expect("workspace").id;
    let admin = actor(&engine, "admin", "person", &["org.manage"]).await;
    // alice writes and sends facts; bob writes and decides; carol does all three.
    let people = vec![
        actor(&engine, "alice", "person", &["skills.invoke", "tasks.write@desk", "facts.write@desk"]).await,
        actor(&engine, "bob", "person", &["skills.invoke", "tasks.write@desk", "approvals.decide@desk"]).await,
        actor(&engine, "carol", "person", &["skills.invoke", "tasks.write@desk", "facts.write@desk", DECIDE_DESK])
            .await,
    ];
    actor(&engine, "executor", "executor", &["skills.execute"]).await;
    let allowed =
        ExecutorAllowance { protocols: vec!["local".into()], local: vec!["model".into()], ..Default::default() };
    engine.allow_executor(None, "executor", &allowed, None).await.expect("allowed");
    let executor = {
        let request = TokenRequest {
            principal: "executor".into(),
            kind: "executor".into(),
            grants: Vec::new(),
            label: String::new(),
            expires_at: None,
        };
        let issued = engine.issue_token(&request, &Origin::default()).await.expect("token");
        engine.authenticate(&issued.token).await.expect("authenticates")
    };
    for reference in SKILLS {
        let (name, version) = reference.split_once('@').expect("name@version");
        let side_effects = if name == "claim.send" { "external_write" } else { "none" };
        engine.publish(&admin, &leaf(name, version, side_effects), None).await.expect("published");
    }
    let reply = json!({"gates": {"default": {"outcomes": {"approved": [
        {"invokeSkill": {"skill": "claim.send@1", "inputs": {"n": "$.task.customFields.n"},
                         "onSuccess": [{"setTaskStatus": "done"}]}}]}}}});
    for (key, execution, approval_schema) in [
        ("plain", None, None),
        ("auto", Some(json!({"skill": "claim.send", "version": "1", "inputs": {"n": "$.customFields.n"}})), None),
        ("reply", None, Some(reply)),
    ] {
        let request = TaskTypeRequest {
            key: key.to_owned(),
            version: "1".to_owned(),
            custom_fields: json!({"n": {"type": "integer"}}).as_object().cloned(),
            execution,
            approval_schema,
            ..Default::default()
        };
        engine.publish_task_type(&admin, &request, None).await.expect("a type");
    }
    // A process: a review task whose gate its agent asks for, then the write it decides.
    let review = TaskTypeRequest {
        key: "review".to_owned(),
        version: "1".to_owned(),
        custom_fields: json!({"n": {"type": "integer"}}).as_object().cloned(),
        ..Default::default()
    };
    let agent = AgentRequest {
        key: "proc-bot".into(),
        spec: json!({"identity": {"kind": "agent", "permissions": ["skills.invoke", "tasks.write@desk", "tasks.read@desk"]},
                     "skills": {"invoke": ["claim.send@1"]}}),
    };
    let process = ProcessRequest {
        key: "decided-send".into(),
        spec: json!({"version": "1", "identity": {"agent": "proc-bot"}, "steps": [
            {"id": "review", "task": {"type": "review@1", "title": "Review {{$.input.n}}",
                                      "customFields": {"n": "$.input.n"}, "approval": {}}},
            {"id": "send", "call": {"skill": "claim.send@1", "decidedBy": "review",
                                    "input": {"n": "$.steps.review.output.customFields.n"},
                                    "retry": {"attempts": 2, "backoff": "0s"}}}]}),
    };
    let mut agents = vec![agent];
    agents.extend(callers::agents());
    let objects = agents.iter().map(|agent| json!({"kind": "Agent", "key": agent.key})).collect();
    let apply = ApplyRequest {
        package: PackageRef { key: "model".into(), version: "1".into() },
        install_hash: "b".repeat(64),
        create: Vec::new(),
        patch: Vec::new(),
        objects: serde_json::from_value(Value::Array(objects)).expect("objects"),
        adopt: Vec::new(),
        settings_schema: None,
        task_types: vec![review],
        artifact_types: Vec::new(),
        agents,
        rules: callers::rules(),
        processes: vec![process],
    };
    let installer = actor(
        &engine,
        "installer",
        "person",
        &["org.manage", "skills.invoke", "tasks.write@desk", "tasks.read@desk", "facts.write@desk"],
    )
    .await;
    engine.apply_package(&installer, &apply, None).await.expect("the process applied");
    let agent = engine.store().agent("proc-bot").await.expect("the agent").principal_id;
    let ids = people.iter().map(|person| person.id().to_owned()).collect();
    let (agents, agent_tokens) = callers::tokens(&engine).await;
    let write = engine.store().skill_version("claim.send", "1").await.expect("the version").skill;
    World { engine, admin, people, agents, agent_tokens, executor, ids, agent, desk, write, _folder: Folder(folder) }
}

/// The refusal code of an engine answer, or `ok`.
fn code<T>(result: &Result<T, skill_engine::EngineError>) -> &'static str {
    match result {
        Ok(_) => "ok",
        Err(error) => error.code.as_str(),
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
    if let Some(replay) = std::env::var("SKILL_MODEL_REPLAY").ok().filter(|_| n == 0) {
        let case = shrink::replayed(seed, &replay);
        if let Err(failed) = shrink::attempt(case.clone(), false).await {
            panic!("{}", shrink::report(&case, case.steps.len(), &failed, 0));
        }
        return;
    }
    let mine: Vec<u64> = (0..all).filter(|case| case % SHARDS == n).collect();
    let cases = mine.len() as u64;
    for case in mine {
        let case = Case::new(seed, case, steps, Flaw::None);
        match shrink::attempt(case.clone(), false).await {
            Ok(counted) => {
                for (kind, count) in counted {
                    *totals.entry(kind).or_default() += count;
                }
            }
            Err(failed) => {
                // Said at once: the shrinking that follows takes minutes, and a run cut short
                // still shows what failed.
                eprintln!("case {} failed at step {}, shrinking it: {}", case.case, failed.at, failed.message);
                let (shortest, failure, replays) = shrink::shrink(&case, failed).await;
                panic!("{}", shrink::report(&shortest, case.steps.len(), &failure, replays));
            }
        }
    }
    let operations: u64 = totals.iter().filter(|(kind, _)| !kind.starts_with('+')).map(|(_, n)| n).sum();
    assert_eq!(operations, cases * steps, "every step is one operation");
    // The sequences reach the interesting states, or the test proves little.
    for (kind, at_least) in [
        ("claimed", cases * 50),
        // Rare by nature: a call must wait long enough for its basis to go (about one a case).
        ("+cancelled at claim", cases / 4),
        ("invoke refused", cases * 50),
        ("invoke accepted", cases * 30),
        ("+execution call", cases),
        ("+outcome call", cases),
        ("+requested call", cases / 2),
        ("+does not cover", cases),
        ("+execution write claimed", cases / 2),
        ("+process write claimed", cases),
        ("+write not decided", cases),
        // The other callers: rules make tasks and instances from people's and agents' facts;
        // agents' requests are decided and called.
        ("+rule task", cases * 10),
        ("+rule instance", cases * 10),
        ("agent's fact sent", cases * 10),
        ("+request call", cases * 3),
        ("+write claimed", cases * 10),
    ] {
        assert!(totals.get(kind).copied().unwrap_or(0) >= at_least, "too few `{kind}`: {totals:?}");
    }
    eprintln!("model shard {n}: {operations} operations in {:.1} s: {totals:?}", started.elapsed().as_secs_f64());
}

fn count(totals: &mut BTreeMap<&'static str, u64>, kind: &'static str) {
    *totals.entry(kind).or_default() += 1;
}

/// One case: its seed and number, the seed of each of its steps (each step draws only from its
/// own, so any subsequence replays as it would have run), and the flaw the model carries.
#[derive(Debug, Clone)]
pub(crate) struct Case {
    pub(crate) seed: u64,
    pub(crate) case: u64,
    pub(crate) steps: Vec<u64>,
    pub(crate) flaw: Flaw,
}

impl Case {
    fn new(seed: u64, case: u64, steps: u64, flaw: Flaw) -> Self {
        let mut rng = Rng(seed ^ case.wrapping_mul(0x1000_0000_01B3));
        Self { seed, case, steps: (0..steps).map(|_| rng.next()).collect(), flaw }
    }
}

/// A mistake the harness's own test puts into the model, to see it caught and shrunk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Flaw {
    None,
    /// The model believes one may decide an approval one asked for, or work one set in motion.
    SelfDecision,
}

const PEOPLE: [&str; 3] = ["alice", "bob", "carol"];
/// Who may decide in the workspace.
const DECIDE_DESK: &str = "approvals.decide@desk";
/// The people who hold it: bob and carol.
const DECIDERS: [usize; 2] = [1, 2];

/// What a step's roll does, as people read it (`{who}` is the step's person).
fn operation(roll: usize) -> &'static str {
    match roll {
        0..=7 => "{who} creates a task",
        8..=16 => "{who} asks for an approval",
        17..=26 => "{decider} decides a pending approval",
        27..=30 => "{who} withdraws an approval",
        31..=34 => "{who} starts a run",
        35..=37 => "{who} ends a run",
        38..=60 => "{who} invokes a skill",
        61..=63 => "{who} closes a task",
        64 => "the operator disables carol or bob (late in a case; else leases expire)",
        65..=70 => "the core's workers run",
        71..=82 => "the executor claims a call",
        83..=93 => "the executor finishes a call",
        100..=105 => "{who} starts a process instance",
        110..=115 => "{who} sends a fact (sometimes caused by a task)",
        116..=119 => "an agent sends a fact",
        120..=125 => "an agent asks for a write",
        106..=108 => "{who} cancels a process instance",
        _ => "the leases run out",
    }
}

#[allow(clippy::too_many_lines)]
pub(crate) async fn run_case(case: &Case, totals: &mut BTreeMap<&'static str, u64>, trail: &shrink::Trail) {
    let (seed, steps) = (case.seed, case.steps.len());
    let mut w = world(case.case).await;
    let mut m = Model::default();
    for (step, step_seed) in case.steps.iter().enumerate() {
        let rng = &mut Rng(*step_seed);
        let at = format!("seed {seed:#x}, case {}, step {step}", case.case);
        // A disabled person acts no more: someone else does.
        let person = match rng.below(3) {
            disabled if m.disabled.contains(&disabled) => 0,
            person => person,
        };
        let roll = rng.below(126);
        // Who decides, if this step decides: mostly the deciders; sometimes alice, who may not, or
        // an agent, who never does.
        let decider = [1, 1, 1, 1, 2, 2, 2, 0, 3, 4][Rng(step_seed ^ 0xDEC1_DE00).below(10)];
        let named = PEOPLE.get(decider).copied().unwrap_or_else(|| ["desk-bot", "side-bot"][decider - PEOPLE.len()]);
        let doing = format!(
            "{} [step seed {step_seed:#x}]",
            operation(roll).replace("{who}", PEOPLE[person]).replace("{decider}", named)
        );
        trail.lock().expect("the trail").push(doing.clone());
        let kind: &'static str = 'step: {
            match roll {
                0..=7 => {
                    let kind = TYPES[rng.below(3)];
                    let gate = rng.chance(50);
                    let request = TaskRequest {
                        workspace: "desk".to_owned(),
                        task_type: kind.to_owned(),
                        title: "A claim".to_owned(),
                        custom_fields: Some(json!({"n": rng.below(3)}).as_object().cloned().expect("an object")),
                        approval: gate.then(TaskApproval::default),
                    };
                    let task = w.engine.create_task(&w.people[person], &request, None).await.expect(&at);
                    let made = Task { open: true, kind, initiators: BTreeSet::from([person]) };
                    if gate {
                        let listed = w
                            .engine
                            .approvals(&w.people[1], &skill_api::OfTaskQuery { task: task.id.clone() })
                            .await
                            .expect(&at);
                        let approval = Approval::asked(&task.id, &made, true, person, None);
                        m.approvals.insert(listed.items[0].id.clone(), approval);
                    }
                    m.tasks.insert(task.id.clone(), made);
                    "task created"
                }
                8..=16 => {
                    let open: Vec<String> = m.tasks.iter().filter(|(_, t)| t.open).map(|(id, _)| id.clone()).collect();
                    let Some(task) = rng.pick(&open).cloned() else {
                        break 'step "nothing to do";
                    };
                    let gate = rng.chance(85);
                    let call = rng.chance(45).then(|| (SKILLS[rng.below(3)], rng.below(3) as u64));
                    let request = ApprovalRequest {
                        task_id: task.clone(),
                        gate: Some(gate),
                        comment: None,
                        call: call.map(|(skill, n)| RequestedCall {
                            skill: skill.to_owned(),
                            inputs: json!({"n": n}).as_object().cloned().expect("an object"),
                        }),
                    };
                    let result = w.engine.request_approval(&w.people[person], &request, None).await;
                    // A call is asked for on a gate, and never of the version the type's approved outcome
                    // calls (the approval covers one call of a version).
                    let outcome_calls =
                        m.tasks[&task].kind == "reply@1" && call.is_some_and(|(skill, _)| skill == "claim.send@1");
                    let expected = if call.is_some() && (!gate || outcome_calls) { "invalid_request" } else { "ok" };
                    assert_eq!(code(&result), expected, "{at}: an approval asked for {call:?}, gate {gate}");
                    if let Ok(approval) = result {
                        let asked = Approval::asked(&task, &m.tasks[&task], gate, person, call);
                        m.approvals.insert(approval.id, asked);
                    }
                    "approval requested"
                }
                17..=26 => {
                    let pending: Vec<String> = m
                        .approvals
                        .iter()
                        .filter(|(_, a)| a.status == ApprovalStatus::Pending)
                        .map(|(id, _)| id.clone())
                        .collect();
                    let Some(id) = rng.pick(&pending).cloned() else {
                        break 'step "nothing to do";
                    };
                    let outcome = if rng.chance(75) { "approved" } else { "rejected" };
                    let decide = DecideRequest { outcome: outcome.to_owned(), comment: None };
                    let acting = w.people.get(decider).unwrap_or_else(|| &w.agents[decider - PEOPLE.len()]);
                    let result = w.engine.decide(acting, &id, &decide, None).await;
                    let approval = &m.approvals[&id];
                    // The four-eyes rule: a decider never decides what it asked for or set in motion.
                    let expected = if decider >= PEOPLE.len() && m.tasks[&approval.task].kind == "request" {
                        // No agent sees an agent's request: decided and handled by people.
                        "not_found"
                    } else if !DECIDERS.contains(&decider) {
                        "permission_denied"
                    } else if approval.requester == decider && case.flaw != Flaw::SelfDecision {
                        "self_approval_refused"
                    } else if approval.initiators.contains(&decider) && case.flaw != Flaw::SelfDecision {
                        "decider_is_initiator"
                    } else if !m.tasks[&approval.task].open {
                        "task_terminal"
                    } else if m.disabled.contains(&decider) {
                        // The decider's own actor, read before they were disabled: the database refuses.
                        "principal_disabled"
                    } else {
                        "ok"
                    };
                    assert_eq!(code(&result), expected, "{at}: decide {id} by {decider}");
                    if let Ok(decided) = result {
                        // What the decision reserved: the reply's send, with the task's own inputs.
                        let reserved: Vec<&Value> =
                            decided.outcome.iter().flat_map(|o| &o.actions).filter_map(|a| a.inputs.as_ref()).collect();
                        // A gate asked for one call covers that call only: the type's outcome is not run.
                        let reply = approval.gate
                            && approval.call.is_none()
                            && outcome == "approved"
                            && m.tasks[&approval.task].kind == "reply@1";
                        assert_eq!(reserved.len(), usize::from(reply), "{at}: the outcome reserved its call");
                        let decided = m.approvals.get_mut(&id).expect("known");
                        decided.status =
                            if outcome == "approved" { ApprovalStatus::Approved } else { ApprovalStatus::Rejected };
                        decided.decided_by = Some(decider);
                    }
                    "approval decided"
                }
                27..=30 => {
                    let live: Vec<String> = m
                        .approvals
                        .iter()
                        .filter(|(_, a)| {
                            matches!(a.status, ApprovalStatus::Pending | ApprovalStatus::Approved)
                                && a.requester == person
                        })
                        .map(|(id, _)| id.clone())
                        .collect();
                    let Some(id) = rng.pick(&live).cloned() else {
                        break 'step "nothing to do";
                    };
                    let result = w.engine.withdraw(&w.people[person], &id, &WithdrawRequest::default(), None).await;
                    // A closed task's decision stands.
                    let open = m.tasks[&m.approvals[&id].task].open;
                    assert_eq!(code(&result), if open { "ok" } else { "task_terminal" }, "{at}: withdraw {id}");
                    if open {
                        m.approvals.get_mut(&id).expect("known").status = ApprovalStatus::Withdrawn;
                    }
                    "approval withdrawn"
                }
                31..=34 => {
                    let open: Vec<String> = m.tasks.iter().filter(|(_, t)| t.open).map(|(id, _)| id.clone()).collect();
                    let Some(task) = rng.pick(&open).cloned() else {
                        break 'step "nothing to do";
                    };
                    let result =
                        w.engine.start_run(&w.people[person], &RunRequest { task_id: task.clone() }, None).await;
                    let busy = m.runs.values().any(|r| r.task == task && r.owner == person && r.running);
                    assert_eq!(code(&result), if busy { "run_already_running" } else { "ok" }, "{at}");
                    if let Ok(run) = result {
                        m.runs.insert(run.id, Run { task, owner: person, running: true });
                    }
                    "run started"
                }
                35..=37 => {
                    let mine: Vec<String> = m
                        .runs
                        .iter()
                        .filter(|(_, r)| r.running && r.owner == person)
                        .map(|(id, _)| id.clone())
                        .collect();
                    let Some(id) = rng.pick(&mine).cloned() else {
                        break 'step "nothing to do";
                    };
                    let request = EndRunRequest { status: "succeeded".to_owned(), result: None, error: None };
                    w.engine.end_run(&w.people[person], &id, &request, None).await.expect(&at);
                    m.runs.get_mut(&id).expect("known").running = false;
                    "run ended"
                }
                38..=60 => invoke(&w, &mut m, rng, person, &at, totals).await,
                61..=63 => {
                    let open: Vec<String> = m.tasks.iter().filter(|(_, t)| t.open).map(|(id, _)| id.clone()).collect();
                    // Often a review whose gate was approved: done, as a reviewer would close it.
                    let reviewed: Vec<String> = open
                        .iter()
                        .filter(|id| {
                            m.tasks[*id].kind == "review@1"
                                && m.approvals.values().any(|a| a.task == **id && a.status == ApprovalStatus::Approved)
                        })
                        .cloned()
                        .collect();
                    let (task, status) = match rng.pick(&reviewed).cloned().filter(|_| rng.chance(70)) {
                        Some(task) => (task, "done".to_owned()),
                        None => {
                            let Some(task) = rng.pick(&open).cloned() else {
                                break 'step "nothing to do";
                            };
                            (task, ["done", "failed", "cancelled"][rng.below(3)].to_owned())
                        }
                    };
                    w.engine
                        .close_task(&w.people[person], &task, &CloseTaskRequest { status, comment: None }, None)
                        .await
                        .expect(&at);
                    m.close(&task);
                    "task closed"
                }
                64 if step > steps / 2 && rng.chance(10) => {
                    // carol or bob (who decides) leaves: the waiting and running calls on their
                    // authority are cancelled, and so are the waiting ones that stand on bob's
                    // decisions (an approval he decided, a gate he approved).
                    let who = if rng.chance(50) { 1 } else { 2 };
                    if m.disabled.contains(&who) {
                        break 'step "nothing to do";
                    }
                    let request = DisableRequest { principal: PEOPLE[who].to_owned(), reason: "offboarded".to_owned() };
                    let mut standing = BTreeSet::new();
                    for (id, call) in &m.calls {
                        let stored = w.engine.store().invocation(id).await.expect(&at);
                        if call.status == CallStatus::Pending && decides(&w, &stored, PEOPLE[who], &at).await {
                            standing.insert(id.clone());
                        }
                    }
                    w.engine.disable_principal(&w.admin, &request, None).await.expect(&at);
                    m.disabled.insert(who);
                    // The requests an agent made for them and nobody decided yet are withdrawn,
                    // with their tasks.
                    let withdrawn: Vec<String> = m
                        .tasks
                        .iter()
                        .filter(|(id, task)| {
                            task.open
                                && task.kind == "request"
                                && task.initiators.contains(&who)
                                && m.approvals.values().any(|a| {
                                    a.task == **id && a.requester >= PEOPLE.len() && a.status == ApprovalStatus::Pending
                                })
                        })
                        .map(|(id, _)| id.clone())
                        .collect();
                    for task in withdrawn {
                        m.close(&task);
                        count(totals, "+request withdrawn: operator disabled");
                    }
                    for (id, call) in &mut m.calls {
                        let on_authority = call.authority == Some(who)
                            && matches!(call.status, CallStatus::Pending | CallStatus::Running);
                        if on_authority || standing.contains(id) {
                            let stored = w.engine.store().invocation(id).await.expect(&at);
                            assert_eq!(
                                (stored.status, stored.error.as_ref().map(|e| e.code.as_str())),
                                (CallStatus::Cancelled, Some("basis_revoked")),
                                "{at}: {id} stood on {}",
                                PEOPLE[who]
                            );
                            call.status = CallStatus::Cancelled;
                            count(
                                totals,
                                if on_authority {
                                    "+cancelled: authority disabled"
                                } else {
                                    "+cancelled: decider disabled"
                                },
                            );
                        }
                    }
                    "principal disabled"
                }
                65..=70 => {
                    // The core carries out what it carries out itself: outcomes, then executions.
                    w.engine.run_rule_evaluations(w.engine.now()).await.expect(&at);
                    w.engine.run_agent_requests(w.engine.now()).await.expect(&at);
                    w.engine.run_outcomes(w.engine.now()).await.expect(&at);
                    w.engine.run_executions(w.engine.now()).await.expect(&at);
                    w.engine.run_processes(w.engine.now()).await.expect(&at);
                    callers::learn(&w, &mut m, &at, totals).await;
                    learn(&mut w, &mut m, &at, totals).await;
                    "workers ran"
                }
                71..=82 => claim(&w, &mut m, &at, totals).await,
                83..=93 => {
                    let running: Vec<String> = m
                        .calls
                        .iter()
                        .filter(|(_, c)| c.status == CallStatus::Running)
                        .map(|(id, _)| id.clone())
                        .collect();
                    let Some(id) = rng.pick(&running).cloned() else {
                        break 'step "nothing to do";
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
                100..=105 => {
                    let request =
                        StartRequest { workspace: "desk".to_owned(), input: json!({"n": rng.below(3)}), key: None };
                    let started = w.engine.start_process(&w.people[person], "decided-send@1", &request, None).await;
                    let started = started.expect(&at);
                    m.instances.insert(started.id, Instance { initiators: BTreeSet::from([person]), running: true });
                    "instance started"
                }
                106..=108 => {
                    let ids: Vec<String> = m.instances.keys().cloned().collect();
                    let Some(id) = rng.pick(&ids).cloned() else {
                        break 'step "nothing to do";
                    };
                    // The task the instance waits for, if any: cancelled with it.
                    let steps = skill_store::ProcessStore::steps(&**w.engine.store(), &id).await.expect(&at);
                    let waited = steps.iter().find(|s| s.status == StepStatus::Open).and_then(|s| s.task_id.clone());
                    let request = CancelInstanceRequest { reason: "changed our mind".to_owned() };
                    let result = w.engine.cancel_instance(&w.people[person], &id, &request, None).await;
                    let stored = w.engine.store().instance(&id).await.expect(&at);
                    let running = m.instances[&id].running && stored.status == InstanceStatus::Cancelled;
                    let expected = if m.instances[&id].running && running { "ok" } else { "instance_ended" };
                    assert_eq!(code(&result), expected, "{at}: cancel {id} ({:?})", stored.status);
                    m.instances.get_mut(&id).expect("known").running = false;
                    if let Some(task) =
                        waited.filter(|task| expected == "ok" && m.tasks.get(task).is_some_and(|t| t.open))
                    {
                        let closed = w.engine.store().task(&task).await.expect(&at);
                        assert_eq!(
                            closed.status,
                            TaskStatus::Cancelled,
                            "{at}: the instance's task is cancelled with it"
                        );
                        m.close(&task);
                        count(totals, "+task cancelled with its instance");
                    }
                    "instance cancelled"
                }
                110..=115 => callers::person_sends(&w, &mut m, rng, person, &at).await,
                116..=119 => callers::agent_sends(&w, &mut m, rng, &at).await,
                120..=125 => callers::agent_asks(&w, &mut m, rng, &at).await,
                _ => {
                    // Leases run out: every running call is back in the queue or failed.
                    let moved = w.engine.expire_leases(w.engine.now() + Duration::hours(2)).await.expect(&at);
                    let running = m.calls.values().filter(|c| c.status == CallStatus::Running).count();
                    // (One sweep handles a batch; more would wait for the next.)
                    assert_eq!(moved, running.min(100), "{at}: every running call's lease ended");
                    for (id, call) in &mut m.calls {
                        if call.status == CallStatus::Running {
                            call.status = w.engine.store().invocation(id).await.expect(&at).status;
                        }
                    }
                    "leases expired"
                }
            }
        };
        count(totals, kind);
        if let Some(last) = trail.lock().expect("the trail").last_mut() {
            *last = format!("{doing} → {kind}");
        }
    }
    trail.lock().expect("the trail").push("the whole store checked at the end".to_owned());
    check_whole(&w, &m, case.case).await;
}

/// A person's call: mostly coherent ones (a run of one's own, an approval of the same task, the
/// inputs an approval was asked for), some of anything; the model predicts the answer.
async fn invoke(
    w: &World,
    m: &mut Model,
    rng: &mut Rng,
    person: usize,
    at: &str,
    totals: &mut BTreeMap<&'static str, u64>,
) -> &'static str {
    let tasks: Vec<String> = m.tasks.keys().cloned().collect();
    let all_runs: Vec<String> = m.runs.keys().cloned().collect();
    let (mut skill, mut run, mut approval, mut n) = (SKILLS[rng.below(3)], None, None, rng.below(3) as u64);
    let task;
    match rng.below(12) {
        10 | 11 => {
            // The call an approval of one's own was asked for, as asked.
            let asked: Vec<(String, &'static str, u64)> = m
                .approvals
                .iter()
                .filter(|(_, a)| a.requester == person && a.status == ApprovalStatus::Approved)
                .filter_map(|(id, a)| a.call.map(|(skill, n)| (id.clone(), skill, n)))
                .collect();
            let picked = rng.pick(&asked).cloned();
            task = picked.as_ref().map(|(id, _, _)| m.approvals[id].task.clone());
            if let Some((id, asked, asked_n)) = picked {
                (approval, skill, n) = (Some(id), asked, asked_n);
            }
        }
        0..=2 => {
            let mine: Vec<String> =
                m.runs.iter().filter(|(_, r)| r.owner == person && r.running).map(|(id, _)| id.clone()).collect();
            run = rng.pick(&mine).cloned();
            task = run.as_ref().map(|r| m.runs[r].task.clone());
            skill = if rng.chance(70) { "claim.send@1" } else { skill };
        }
        3..=7 => {
            task = rng.pick(&tasks).cloned();
            let near: Vec<String> =
                m.approvals.iter().filter(|(_, a)| Some(&a.task) == task.as_ref()).map(|(id, _)| id.clone()).collect();
            approval = rng.pick(&near).cloned();
            skill = if rng.chance(80) { ["claim.send@1", "claim.send@2"][rng.below(2)] } else { skill };
            // Often exactly the call the approval was asked for.
            if let Some((asked, asked_n)) = approval.as_ref().and_then(|a| m.approvals[a].call)
                && rng.chance(70)
            {
                (skill, n) = (asked, asked_n);
            }
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
    let expected = m.predict(person, skill, n, task.as_deref(), run.as_deref(), approval.as_deref());
    let request = InvokeRequest {
        inputs: Some(json!({"n": n}).as_object().cloned().expect("an object")),
        idempotency_key: None,
        task_id: task.clone(),
        run_id: run.clone(),
        approval_id: approval.clone(),
    };
    let result = w.engine.invoke(&w.people[person], skill, &request, None).await;
    match (&expected, &result) {
        (Ok(kind), Ok(invoked)) => {
            let call = &invoked.invocation;
            let basis = call.authorization_basis.as_ref().map(Basis::kind);
            assert_eq!(basis, *kind, "{at}: the basis of {skill}");
            if *kind == Some("approval") {
                assert!(m.spent.insert((skill.to_owned(), approval.clone().expect("an approval"))), "{at}");
                count(totals, "+requested call");
            }
            m.calls.insert(call.id.clone(), Call { status: CallStatus::Pending, fencing: 0, authority: Some(person) });
            "invoke accepted"
        }
        (Err(wanted), Err(error)) => {
            assert_eq!(
                error.code.as_str(),
                *wanted,
                "{at}: {skill} n={n} task={task:?} run={run:?} approval={approval:?}"
            );
            if error.code == Code::ApprovalDoesNotCover {
                count(totals, "+does not cover");
            }
            "invoke refused"
        }
        _ => panic!(
            "{at}: {skill} n={n} task={task:?} run={run:?} approval={approval:?}: expected {expected:?}, got {:?}",
            result.map(|i| i.invocation.id)
        ),
    }
}

/// After the core's workers: the calls they made and cancelled, and the tasks they closed, as
/// the store has them; each new call with a basis is the core's own (an outcome's, with the
/// decider's authority; an execution's, by the execution principal).
async fn learn(w: &mut World, m: &mut Model, at: &str, totals: &mut BTreeMap<&'static str, u64>) {
    let store = w.engine.store();
    let filter = InvocationFilter { limit: 100_000, ..InvocationFilter::default() };
    for call in store.invocations(&filter).await.expect(at) {
        let known = m.calls.get_mut(&call.id);
        if let Some(known) = known {
            known.status = call.status;
            continue;
        }
        match &call.authorization_basis {
            Some(Basis::Execution { .. }) => {
                let authority = store.principal(&call.authority_principal_id).await.expect(at);
                assert_eq!(authority.name, "core.execution", "{at}: an execution call not the core's");
                if w.ids.len() == 3 {
                    w.ids.push(authority.id);
                }
                count(totals, "+execution call");
            }
            Some(Basis::Approval { approval_id: approval, .. }) => {
                let skill = store.skill(&call.skill_id).await.expect(at).skill;
                let reference = format!("{}@{}", skill.name, skill.version);
                assert!(m.spent.insert((reference, approval.clone())), "{at}: an approval spent twice");
                let known = &m.approvals[approval];
                if let Some(agent) = known.requester.checked_sub(PEOPLE.len()).filter(|_| known.requester != AGENT) {
                    // An agent's request, approved: its call, of what it asked, as the agent.
                    assert_eq!(
                        call.authority_principal_id,
                        w.agents[agent].id(),
                        "{at}: a request's call not its agent's"
                    );
                    count(totals, "+request call");
                } else {
                    let decider = known.decided_by.expect("a decided approval");
                    assert_eq!(
                        call.authority_principal_id, w.ids[decider],
                        "{at}: an outcome acts with the decider's authority"
                    );
                    count(totals, "+outcome call");
                }
            }
            Some(Basis::Process { instance_id, activity_id, .. }) => {
                assert_eq!(call.authority_principal_id, w.agent, "{at}: a process call not its agent's");
                // A retry's key names the first run, whose key its skill is given.
                let steps = store.steps(instance_id).await.expect(at);
                let run = steps.iter().find(|s| s.id == *activity_id).expect("its step run");
                let first = steps.iter().find(|s| s.step_id == run.step_id && s.attempt == 1).expect("the first run");
                let key = if run.attempt > 1 {
                    count(totals, "+process retry");
                    format!("process:{}:retry-{}", first.id, run.attempt - 1)
                } else {
                    format!("process:{}", run.id)
                };
                assert_eq!(call.idempotency_key.as_deref(), Some(key.as_str()), "{at}");
                count(totals, "+process call");
            }
            None => {}
        }
        let authority = w.ids.iter().take(3).position(|id| *id == call.authority_principal_id);
        m.calls.insert(call.id.clone(), Call { status: call.status, fencing: call.fencing_token, authority });
    }
    let open = TaskFilter { status: Some(TaskStatus::Open), limit: 100_000, ..TaskFilter::default() };
    let open: BTreeSet<String> = store.tasks(&open).await.expect(at).into_iter().map(|task| task.id).collect();
    let closed: Vec<String> =
        m.tasks.iter().filter(|(id, task)| task.open && !open.contains(*id)).map(|(id, _)| id.clone()).collect();
    for id in closed {
        m.close(&id);
    }
    // Every pending approval is as the model says (a closed task's pending gates were withdrawn
    // with it), read a task at a time; the workers move no other, and all are checked at the end.
    let moving: BTreeSet<&String> =
        m.approvals.values().filter(|a| a.status == ApprovalStatus::Pending).map(|approval| &approval.task).collect();
    for task in moving {
        for stored in store.approvals(task).await.expect(at) {
            let Some(approval) = m.approvals.get(&stored.id) else { continue };
            assert_eq!(stored.status, approval.status, "{at}: approval {}", stored.id);
        }
    }
    // The review tasks the running instances made, and the gates their agent asked for (an ended
    // instance moves no more: checked at the end).
    let running: Vec<String> = m.instances.iter().filter(|(_, i)| i.running).map(|(id, _)| id.clone()).collect();
    let listed = store.instances(&w.desk, None, None, None, 100_000).await.expect(at);
    let mut listed: BTreeMap<String, _> = listed.into_iter().map(|instance| (instance.id.clone(), instance)).collect();
    let mut steps_of: BTreeMap<String, Vec<_>> = BTreeMap::new();
    for step in store.steps_of(&running).await.expect(at) {
        steps_of.entry(step.instance_id.clone()).or_default().push(step);
    }
    for (id, instance) in m.instances.iter_mut().filter(|(_, instance)| instance.running) {
        let stored = listed.remove(id).unwrap_or_else(|| panic!("{at}: instance {id} not listed"));
        let steps = steps_of.remove(id).unwrap_or_default();
        let undecided = stored.error.as_ref().is_some_and(|e| e.code == "process_write_not_decided");
        if instance.running && undecided {
            // Refused for want of a decision: its review closed otherwise than done, or no one but
            // those who set it in motion approved it.
            let review =
                steps.iter().rev().find(|s| s.action == skill_api::StepKind::Task).and_then(|s| s.task_id.clone());
            let review = review.expect("a review ran");
            let done = store.task(&review).await.expect(at).status == TaskStatus::Done;
            let initiators: Vec<&String> = instance.initiators.iter().map(|person| &w.ids[*person]).collect();
            let gates = store.approvals(&review).await.expect(at);
            let gates: Vec<_> = gates.iter().filter(|a| a.gate && a.call_skill_id.is_none()).collect();
            // A rejection stands; else an approval by another person decides.
            let decided = !gates.iter().any(|a| a.status == ApprovalStatus::Rejected)
                && gates.iter().any(|a| {
                    a.status == ApprovalStatus::Approved
                        && a.decided_by.as_ref().is_some_and(|d| !initiators.contains(&d))
                });
            assert!(!(done && decided), "{at}: {id} refused its write though another person decided it");
            count(totals, "+write not decided");
        }
        if instance.running && stored.status == InstanceStatus::Completed {
            count(totals, "+instance completed");
        }
        instance.running = stored.status == InstanceStatus::Running;
        for step in steps {
            let Some(task) = step.task_id.filter(|task| !m.tasks.contains_key(task)) else { continue };
            let open = store.task(&task).await.expect(at).status == TaskStatus::Open;
            for approval in store.approvals(&task).await.expect(at) {
                assert_eq!(approval.requested_by, w.agent, "{at}: a review's gate is its agent's");
                let review = Task { open, kind: "review@1", initiators: instance.initiators.clone() };
                let asked = Approval { status: approval.status, ..Approval::asked(&task, &review, true, AGENT, None) };
                m.approvals.insert(approval.id, asked);
            }
            m.tasks.insert(task, Task { open, kind: "review@1", initiators: instance.initiators.clone() });
            count(totals, "+review task");
        }
    }
}

/// Whether a call on the process basis is covered now: its step's row open in a running
/// instance, fixing its version, inputs and approval; the approval an approved gate of a task an
/// earlier step of the instance closed done, decided by a person other than the starter; the
/// process's agent its authority.
async fn process_covered(w: &World, call: &InvocationRecord, at: &str, now: bool) -> bool {
    let store = w.engine.store();
    let Some(Basis::Process { instance_id, activity_id, approval_id, decided_by, .. }) = &call.authorization_basis
    else {
        return false;
    };
    let instance = store.instance(instance_id).await.expect(at);
    let steps = store.steps(instance_id).await.expect(at);
    let Some(step) = steps.iter().find(|s| s.id == *activity_id) else { return false };
    let canonical = skill_contract::export::canonical_json;
    let fixed = step.skill_id.as_deref() == Some(call.skill_id.as_str())
        && step.inputs.as_ref().map(canonical) == Some(canonical(&call.inputs))
        && step.approval_id.as_deref() == Some(approval_id.as_str());
    let live = instance.status == InstanceStatus::Running && step.status == StepStatus::Open;
    let approval = store.approval(approval_id).await.expect(at);
    let reviewed = steps.iter().any(|s| {
        s.action == skill_api::StepKind::Task
            && s.status == StepStatus::Done
            && s.task_id.as_deref() == Some(approval.task_id.as_str())
    });
    let task_done = store.task(&approval.task_id).await.expect(at).status == TaskStatus::Done;
    // Approved when the call is claimed; at the end, it may have been withdrawn since.
    let stands = approval.status == ApprovalStatus::Approved || (!now && approval.status == ApprovalStatus::Withdrawn);
    let decided = approval.gate
        && stands
        && approval.call_skill_id.is_none()
        && approval.decided_by.as_deref() == Some(decided_by.as_str())
        && *decided_by != instance.started_by;
    fixed && (live || !now) && reviewed && task_done && decided && call.authority_principal_id == w.agent
}

/// Whether `call`'s approval basis covers it exactly: its outcome's reserved call, with the
/// decider's authority, or its requested call, by its requester.
async fn covered(w: &World, call: &InvocationRecord, at: &str) -> bool {
    let store = w.engine.store();
    let id = call.authorization_basis.as_ref().and_then(Basis::approval_id).expect("an approval");
    let approval = store.approval(id).await.expect(at);
    let canonical = skill_contract::export::canonical_json;
    let outcome = store.actions(id).await.expect(at).iter().any(|action| {
        action.skill_id.as_deref() == Some(call.skill_id.as_str())
            && action.inputs.as_ref().map(canonical) == Some(canonical(&call.inputs))
            && approval.decided_by.as_deref() == Some(call.authority_principal_id.as_str())
    });
    let requested = approval.call_skill_id.as_deref() == Some(call.skill_id.as_str())
        && approval.call_inputs.as_ref().map(canonical) == Some(canonical(&call.inputs))
        && approval.requested_by == call.authority_principal_id;
    outcome || requested
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
        m.calls.iter().filter(|(_, c)| c.status == CallStatus::Pending).map(|(id, _)| id.clone()).collect();
    for id in pending {
        let stored = store.invocation(&id).await.expect(at);
        if stored.status != CallStatus::Cancelled {
            continue;
        }
        let error = stored.error.clone().expect("a cancelled call says why");
        assert_eq!(error.code, "basis_revoked", "{at}: {id}");
        let reason = error.message.as_str();
        let basis = stored.authorization_basis.clone();
        let task_open = stored.task_id.as_ref().is_none_or(|t| m.tasks[t].open);
        let gates = match &stored.task_id {
            Some(task) => gates(w, task, at).await,
            None => Vec::new(),
        };
        let lost = match (&basis, reason) {
            (_, "task_terminal") => {
                !task_open
                    || store.task(stored.task_id.as_deref().unwrap_or_default()).await.expect(at).status
                        != TaskStatus::Open
            }
            (Some(Basis::Approval { approval_id, .. }), "approval_withdrawn") => {
                m.approvals[approval_id].status != ApprovalStatus::Approved
            }
            (Some(Basis::Execution { .. }), "approval_withdrawn") => !gates
                .iter()
                .any(|s| matches!(s, ApprovalStatus::Approved | ApprovalStatus::Pending | ApprovalStatus::Rejected)),
            (Some(Basis::Execution { .. }), "gate_rejected") => gates.contains(&ApprovalStatus::Rejected),
            (Some(_), "decider_disabled") => decider_disabled(w, &stored, at).await,
            // A person an agent asked for it for is disabled (carol, operating side-bot).
            (Some(basis), "operator_disabled") => {
                let initiators = match basis {
                    Basis::Approval { approval_id, .. } => store.approval(approval_id).await.expect(at).initiators,
                    Basis::Execution { task_id, .. } => store.task(task_id).await.expect(at).initiators,
                    Basis::Process { .. } => Vec::new(),
                };
                let mut gone = false;
                for initiator in initiators.iter().filter(|initiator| initiator.agent.is_some()) {
                    gone |= store.principal(&initiator.person).await.expect(at).disabled_at.is_some();
                }
                gone
            }
            (Some(Basis::Process { approval_id, .. }), "approval_withdrawn") => {
                store.approval(approval_id).await.expect(at).status != ApprovalStatus::Approved
            }
            (Some(Basis::Process { instance_id, .. }), "process_cancelled") => {
                store.instance(instance_id).await.expect(at).status == InstanceStatus::Cancelled
            }
            (Some(Basis::Process { instance_id, activity_id, .. }), "process_step_closed") => {
                let steps = store.steps(instance_id).await.expect(at);
                steps.iter().any(|s| s.id == *activity_id && s.status != StepStatus::Open)
                    || store.instance(instance_id).await.expect(at).status != InstanceStatus::Running
            }
            (Some(Basis::Execution { .. }), "run_not_active") => {
                store.run(stored.run_id.as_deref().expect("a run")).await.expect(at).status != RunStatus::Running
            }
            _ => false,
        };
        assert!(lost, "{at}: {id} cancelled for {reason} though its basis holds ({gates:?})");
        m.calls.get_mut(&id).expect("known").status = CallStatus::Cancelled;
        count(totals, "+cancelled at claim");
    }
    let Some(claimed) = claimed else { return "claimed nothing" };
    let call = store.invocation(&claimed.invocation.id).await.expect(at);
    let writes = claimed.skill.side_effects.writes();
    let basis = call.authorization_basis.clone();
    if writes {
        assert!(basis.is_some(), "{at}: an external write claimed without a basis");
        rule::second_person(w, m, &call, at, true).await;
        count(totals, "+write claimed");
    }
    if let Some(task) = &call.task_id
        && basis.is_some()
    {
        let stored = store.task(task).await.expect(at);
        assert_eq!(stored.status, TaskStatus::Open, "{at}: a call of a closed task claimed on a basis");
    }
    assert!(!decider_disabled(w, &call, at).await, "{at}: a call claimed on the decision of a disabled person");
    match &basis {
        Some(Basis::Approval { approval_id, .. }) => {
            let approval = store.approval(approval_id).await.expect(at);
            assert!(
                approval.status == ApprovalStatus::Approved
                    && approval.gate
                    && Some(&approval.task_id) == call.task_id.as_ref(),
                "{at}: {approval:?}"
            );
            assert!(covered(w, &call, at).await, "{at}: an external write on an approval that does not cover it");
        }
        Some(Basis::Process { .. }) => {
            assert!(process_covered(w, &call, at, true).await, "{at}: a process write claimed without its basis");
            count(totals, "+process write claimed");
        }
        Some(Basis::Execution { .. }) => {
            let run = store.run(call.run_id.as_deref().expect("a run")).await.expect(at);
            assert_eq!(run.status, RunStatus::Running, "{at}: an execution call of an ended run claimed");
            let owner = store.principal(&run.owner_principal_id).await.expect(at);
            assert_eq!(owner.name, "core.execution", "{at}: an execution in a run not the core's");
            let gates = gates(w, &run.task_id, at).await;
            let open = !gates.iter().any(|s| matches!(s, ApprovalStatus::Pending | ApprovalStatus::Rejected))
                && (gates.contains(&ApprovalStatus::Approved) || (gates.is_empty() && !writes));
            assert!(
                open,
                "{at}: an execution claimed without an approved gate, or past a pending, rejected or withdrawn one: {gates:?}"
            );
            if writes {
                count(totals, "+execution write claimed");
            }
        }
        None => {}
    }
    let known = m.calls.get_mut(&call.id).expect("a call the model knows");
    assert_eq!(known.status, CallStatus::Pending, "{at}: only a pending call is claimed");
    known.status = CallStatus::Running;
    known.fencing = call.fencing_token;
    "claimed"
}

/// The people whose decisions `call` stands on: the decider of its approval, or those who
/// approved its task's gate (for an execution).
async fn deciders(w: &World, call: &InvocationRecord, at: &str) -> Vec<skill_store::records::Principal> {
    let store = w.engine.store();
    let ids: Vec<String> = match &call.authorization_basis {
        Some(Basis::Approval { approval_id, .. }) => {
            store.approval(approval_id).await.expect(at).decided_by.into_iter().collect()
        }
        Some(Basis::Execution { task_id, .. }) => store
            .approvals(task_id)
            .await
            .expect(at)
            .into_iter()
            .filter(|a| a.gates_the_task() && a.status == ApprovalStatus::Approved)
            .filter_map(|a| a.decided_by)
            .collect(),
        // A process step stands on the decision of its review's gate.
        Some(Basis::Process { approval_id, .. }) => {
            store.approval(approval_id).await.expect(at).decided_by.into_iter().collect()
        }
        None => Vec::new(),
    };
    let mut people = Vec::new();
    for id in ids {
        people.push(store.principal(&id).await.expect(at));
    }
    people
}

/// Whether a person whose decision `call` stands on is disabled.
async fn decider_disabled(w: &World, call: &InvocationRecord, at: &str) -> bool {
    deciders(w, call, at).await.iter().any(|person| person.disabled_at.is_some())
}

/// Whether `call` stands on a decision of the person named `name`.
async fn decides(w: &World, call: &InvocationRecord, name: &str, at: &str) -> bool {
    deciders(w, call, at).await.iter().any(|person| person.name == name)
}

/// The statuses of a task's gates (not the approvals asked for one call).
async fn gates(w: &World, task: &str, at: &str) -> Vec<ApprovalStatus> {
    let approvals = w.engine.store().approvals(task).await.expect(at);
    approvals.into_iter().filter(|a| a.gates_the_task()).map(|a| a.status).collect()
}

/// At the end of a case, the whole store: one call per approval and version, each covered by its
/// approval; one execution call per run, and one that may have written per task, each the core's.
async fn check_whole(w: &World, m: &Model, case: u64) {
    let at = format!("case {case}, at the end");
    let filter = InvocationFilter { limit: 100_000, ..InvocationFilter::default() };
    let calls = w.engine.store().invocations(&filter).await.expect("calls");
    assert_eq!(calls.len(), m.calls.len(), "{at}: the model knows every call");
    for (id, approval) in &m.approvals {
        let stored = w.engine.store().approval(id).await.expect("approval");
        assert_eq!(stored.status, approval.status, "{at}: approval {id}");
    }
    for (id, instance) in &m.instances {
        let stored = w.engine.store().instance(id).await.expect("instance");
        assert_eq!(stored.status == InstanceStatus::Running, instance.running, "{at}: instance {id}");
    }
    // The rule, for every write asked for, and journal verify agreeing.
    let mut written = Vec::new();
    for call in &calls {
        if w.engine
            .store()
            .skill(&call.skill_id)
            .await
            .expect("its skill")
            .skill
            .side_effects
            .is_some_and(|effects| effects.writes())
        {
            rule::second_person(w, m, call, &at, false).await;
            written.push(call);
        }
    }
    rule::journal_agrees(w, m, &written, &at).await;
    let mut approvals = BTreeSet::new();
    let mut runs = BTreeSet::new();
    let mut writes = BTreeSet::new();
    let mut activities = BTreeSet::new();
    for call in &calls {
        let Some(basis) = &call.authorization_basis else { continue };
        match basis {
            Basis::Approval { approval_id, .. } => {
                assert!(
                    approvals.insert((call.skill_id.clone(), approval_id.clone())),
                    "{at}: an approval spent twice for one version"
                );
                assert!(covered(w, call, &at).await, "{at}: an approval call it does not cover");
            }
            Basis::Execution { .. } => {
                assert!(runs.insert(call.run_id.clone()), "{at}: a run with two execution calls");
                if !(call.status == CallStatus::Cancelled && call.attempt == 0) {
                    assert!(writes.insert(call.task_id.clone()), "{at}: a task whose execution wrote twice");
                }
                let authority = w.engine.store().principal(&call.authority_principal_id).await.expect("principal");
                assert_eq!(authority.name, "core.execution", "{at}");
            }
            Basis::Process { activity_id, .. } => {
                assert!(activities.insert(activity_id.clone()), "{at}: a step run with two calls");
                assert!(process_covered(w, call, &at, false).await, "{at}: a process call its basis does not cover");
            }
        }
    }
}
