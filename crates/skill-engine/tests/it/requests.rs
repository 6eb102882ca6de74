//! Agents' requests under random interleavings: an agent asks (through the gateway's call) for
//! external writes; a person approves or rejects; the agent polls and withdraws; time makes them
//! expire; the core's worker advances them; an executor claims, completes and fails the calls;
//! the agent tries to spend an approval itself; the core restarts (a new engine over the same
//! store) — in random order, against the real engine on a real SQLite store. After every step:
//!
//! - no `external_write` call without an approved basis: every call of the write version names an
//!   approval that a person approved, requested by this agent for exactly this call;
//! - at most one call per approval, whatever was retried, polled or restarted;
//! - no call for a request that was rejected, withdrawn or expired;
//! - a request that ended as succeeded delivers its call's output to its agent's poll;
//!
//! and once the work settles, every approved request's result reaches its poller.
//!
//! `SKILL_REQUESTS_CASES` (default 40, in four shards that run at once) ×
//! `SKILL_REQUESTS_STEPS` (default 260) operations — 10,400 interleaved steps — from the seed
//! `SKILL_REQUESTS_SEED`.

use skill_api::Code;
use std::collections::BTreeMap;
use std::sync::Arc;

use chrono::{Duration, Utc};
use serde_json::{Value, json};
use skill_api::{
    AgentRequest, AgentTokenRequest, ApplyRequest, ApprovalStatus, Basis, CallStatus, ClientInfo, DecideRequest,
    InvokeRequest, Lifecycle, PackageRef, PublishRequest, RequestStatus,
};
use skill_engine::requests::GatewayCall;
use skill_engine::{Actor, Engine, Origin};
use skill_store::records::{InvocationFilter, SkillRecord};

use crate::random::{Rng, actor, env_number};

const WRITE: &str = "claim.send@1";

struct World {
    engine: Engine,
    agent: Actor,
    reviewer: Actor,
    executor: Actor,
    write: SkillRecord,
    folder: std::path::PathBuf,
}

impl Drop for World {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.folder);
    }
}

/// An engine over `store`, with the folder's blobs (a task-bound call's result is an artifact).
fn engine_over(store: Arc<dyn skill_store::Store>, folder: &std::path::Path) -> Engine {
    Engine::new(store).with_blobs(Arc::new(skill_store::FolderBlobs::new(folder.join("blobs"))))
}

async fn world(case: u64) -> World {
    let folder = std::env::temp_dir().join(format!("skill-engine-requests-{}-{case}", std::process::id()));
    let _ = std::fs::remove_dir_all(&folder);
    let options = skill_store::StoreOptions { sqlite_full_sync: false, ..Default::default() };
    let store = skill_store::open(folder.to_str().expect("utf-8"), &options).await.expect("store");
    let engine = engine_over(Arc::clone(&store), &folder);
    engine.create_workspace("desk", "desk", &Origin::default()).await.expect("workspace");
    let admin = actor(&engine, "admin", "person", &["org.manage", "skills.invoke", "skills.execute"]).await;
    let publish: PublishRequest = serde_json::from_value(json!({
        "name": "claim.send", "version": "1", "description": "Send.", "sideEffects": "external_write", "riskLevel": "high",
        "contract": {"inputs": {"type": "object"}, "outputs": {"type": "object"}, "timeoutSeconds": 5,
                     "idempotency": "natural", "retryPolicy": {"maxAttempts": 2, "backoffSeconds": 0},
                     "implementation": {"protocol": "local", "entrypoint": "model:send"}}
    }))
    .expect("a publish request");
    engine.publish(&admin, &publish, None).await.expect("published");
    let desk = AgentRequest {
        key: "desk-bot".into(),
        spec: json!({"identity": {"kind": "agent", "permissions": ["skills.invoke"]},
                     "skills": {"invoke": [WRITE]}, "requests": {"workspace": "desk", "expiresIn": "1h"}}),
    };
    let runner = AgentRequest {
        key: "runner".into(),
        spec: json!({"identity": {"kind": "executor", "permissions": ["skills.execute"]},
                     "executor": {"kind": "skills"}, "skills": {"protocols": ["local"], "local": ["model"]}}),
    };
    let apply = ApplyRequest {
        package: PackageRef { key: "desk".into(), version: "1".into() },
        install_hash: "a".repeat(64),
        create: Vec::new(),
        patch: Vec::new(),
        objects: serde_json::from_value(
            json!([{"kind": "Agent", "key": "desk-bot"}, {"kind": "Agent", "key": "runner"}]),
        )
        .expect("objects"),
        adopt: Vec::new(),
        settings_schema: None,
        task_types: Vec::new(),
        artifact_types: Vec::new(),
        agents: vec![desk, runner],
        rules: Vec::new(),
        processes: Vec::new(),
    };
    engine.apply_package(&admin, &apply, None).await.expect("applied");
    actor(&engine, "operator", "person", &["tasks.read@desk"]).await;
    let token = |key: &'static str| {
        let engine = engine.clone();
        async move {
            // The agent is operated by a person who cannot decide: the reviewer decides.
            let request = AgentTokenRequest { operated_by: Some("operator".into()), ..Default::default() };
            let issued = engine.issue_agent_token(None, key, &request, &Origin::default()).await.expect("token");
            engine.authenticate(&issued.token).await.expect("authenticates")
        }
    };
    let (agent, executor) = (token("desk-bot").await, token("runner").await);
    let reviewer = actor(&engine, "reviewer", "person", &["tasks.write@desk", "approvals.decide@desk"]).await;
    let write = engine.store().skill_version("claim.send", "1").await.expect("the version").skill;
    World { engine, agent, reviewer, executor, write, folder }
}

/// What the model knows of one request: the decision a person took, if any.
#[derive(Debug, Clone)]
struct Asked {
    id: String,
    approval: String,
    inputs: Value,
    decided: Option<ApprovalStatus>,
    withdrawn: bool,
}

/// Every invariant over the store, after a step.
async fn check(w: &World, asked: &[Asked], at: &str) {
    let store = w.engine.store();
    let filter = InvocationFilter { limit: 10_000, ..Default::default() };
    let calls = store.invocations(&filter).await.expect(at);
    let mut per_approval: BTreeMap<String, usize> = BTreeMap::new();
    for call in calls.iter().filter(|call| call.skill_id == w.write.id) {
        let Some(Basis::Approval { approval_id, .. }) = &call.authorization_basis else {
            panic!("{at}: a write without an approval basis: {call:?}");
        };
        let approval = store.approval(approval_id).await.expect(at);
        assert_eq!(approval.status, ApprovalStatus::Approved, "{at}: a write on an approval a person did not approve");
        assert_eq!(approval.call_skill_id.as_deref(), Some(w.write.id.as_str()), "{at}");
        assert_eq!(approval.call_inputs.as_ref(), Some(&call.inputs), "{at}: a write with other inputs than asked");
        assert_eq!(
            (approval.requested_by.as_str(), call.authority_principal_id.as_str()),
            (w.agent.id(), w.agent.id()),
            "{at}"
        );
        *per_approval.entry(approval_id.clone()).or_default() += 1;
    }
    assert!(per_approval.values().all(|count| *count == 1), "{at}: an approval spent twice: {per_approval:?}");
    let requests = store.agent_requests_of(w.agent.id(), false, 100_000).await.expect(at);
    let requests: BTreeMap<&str, _> = requests.iter().map(|request| (request.id.as_str(), request)).collect();
    for request in asked {
        let stored =
            requests.get(request.id.as_str()).unwrap_or_else(|| panic!("{at}: request {} not kept", request.id));
        let called = per_approval.contains_key(&request.approval);
        if request.decided == Some(ApprovalStatus::Rejected) || request.withdrawn {
            assert!(!called, "{at}: a call for a request that was rejected or withdrawn");
        }
        if matches!(stored.status, RequestStatus::Rejected | RequestStatus::Expired | RequestStatus::Withdrawn) {
            assert!(!called, "{at}: a call for a request that ended {}", stored.status);
        }
        // (What the agent's poll shows of it is checked by the polls and once the work settles.)
        if stored.status == RequestStatus::Succeeded {
            let call = stored.invocation_id.as_ref().and_then(|id| calls.iter().find(|call| call.id == *id));
            assert!(
                call.and_then(|call| call.output.as_ref()).is_some(),
                "{at}: a succeeded request without its output"
            );
        }
    }
}

/// One step; answers what it did.
async fn step(w: &mut World, asked: &mut Vec<Asked>, rng: &mut Rng, at: &str) -> &'static str {
    let engine = w.engine.clone();
    let pick = |rng: &mut Rng, asked: &[Asked]| (!asked.is_empty()).then(|| rng.below(asked.len()));
    match rng.below(100) {
        0..=17 => {
            let inputs = json!({"n": rng.below(1_000_000)});
            let client = ClientInfo { name: "model".into(), version: "1".into() };
            let called = engine
                .gateway_call(&w.agent, &w.write, inputs.as_object().cloned().unwrap_or_default(), None, &client, None)
                .await
                .expect(at);
            let GatewayCall::Requested(request) = called else { panic!("{at}: an agent's write without a basis ran") };
            asked.push(Asked {
                id: request.id,
                approval: request.approval_id,
                inputs,
                decided: None,
                withdrawn: false,
            });
            "ask"
        }
        18..=29 => {
            let Some(i) = pick(rng, asked) else { return "nothing to poll" };
            let seen = engine.agent_request(&w.agent, &asked[i].id).await.expect(at);
            assert_eq!(seen.inputs, asked[i].inputs, "{at}");
            if seen.status == RequestStatus::Succeeded {
                assert!(
                    seen.call.and_then(|call| call.output).is_some(),
                    "{at}: a succeeded request polled without its output"
                );
            }
            "poll"
        }
        30..=45 => {
            let Some(i) = pick(rng, asked) else { return "nothing to decide" };
            let outcome = if rng.below(10) < 7 { "approved" } else { "rejected" };
            let request: DecideRequest = serde_json::from_value(json!({"outcome": outcome})).expect("decide");
            match engine.decide(&w.reviewer, &asked[i].approval, &request, None).await {
                Ok(decided) => {
                    assert!(asked[i].decided.is_none() && !asked[i].withdrawn, "{at}: decided twice");
                    asked[i].decided = Some(decided.status);
                    "decide"
                }
                Err(error) => {
                    assert!(
                        asked[i].decided.is_some()
                            || asked[i].withdrawn
                            || error.code == Code::InvalidStatusTransition
                            || error.class == skill_engine::Class::Conflict,
                        "{at}: {error:?}"
                    );
                    "decide refused"
                }
            }
        }
        46..=53 => {
            let Some(i) = pick(rng, asked) else { return "nothing to withdraw" };
            match engine.withdraw_agent_request(&w.agent, &asked[i].id, None).await {
                Ok(_) => {
                    assert!(asked[i].decided.is_none(), "{at}: a decided request withdrawn");
                    asked[i].withdrawn = true;
                    "withdraw"
                }
                Err(error) => {
                    assert_eq!(error.code, Code::RequestDecided, "{at}: {error:?}");
                    "withdraw refused"
                }
            }
        }
        54 => {
            engine.run_agent_requests(Utc::now() + Duration::hours(2)).await.expect(at);
            // What was pending expired: the model learns it from the store.
            for request in asked.iter_mut() {
                let stored = engine.store().agent_request(&request.id).await.expect(at);
                if stored.status == RequestStatus::Expired {
                    request.withdrawn = true;
                }
            }
            "expire"
        }
        55..=71 => {
            engine.run_agent_requests(Utc::now()).await.expect(at);
            "worker"
        }
        72..=83 => {
            let request = serde_json::from_value(json!({"protocols": ["local"], "localEntrypoints": ["model:send"]}))
                .expect("claim");
            match engine.claim(&w.executor, &request, None).await.expect(at) {
                Some(_) => "claim",
                None => "nothing to claim",
            }
        }
        84..=94 => {
            let filter = InvocationFilter { limit: 10_000, ..Default::default() };
            let running: Vec<_> = engine
                .store()
                .invocations(&filter)
                .await
                .expect(at)
                .into_iter()
                .filter(|call| call.status == CallStatus::Running)
                .collect();
            let Some(call) = running.get(rng.below(running.len())).filter(|_| !running.is_empty()) else {
                return "nothing running";
            };
            if rng.below(10) < 8 {
                let done =
                    serde_json::from_value(json!({"fencingToken": call.fencing_token, "output": {"sent": true}}))
                        .expect("complete");
                engine.complete(&w.executor, &call.id, &done, None).await.expect(at);
                "complete"
            } else {
                let failed = serde_json::from_value(
                    json!({"fencingToken": call.fencing_token, "error": {"code": "boom", "retryable": true}}),
                )
                .expect("fail");
                engine.fail(&w.executor, &call.id, &failed, None).await.expect(at);
                "fail"
            }
        }
        95..=97 => {
            // The agent tries to spend an approval itself: never a second call, never a call of
            // its own.
            let Some(i) = pick(rng, asked) else { return "nothing to attack" };
            let stored = engine.store().agent_request(&asked[i].id).await.expect(at);
            let request = InvokeRequest {
                inputs: asked[i].inputs.as_object().cloned(),
                task_id: Some(stored.task_id),
                approval_id: Some(asked[i].approval.clone()),
                ..InvokeRequest::default()
            };
            assert!(
                engine.invoke(&w.agent, WRITE, &request, None).await.is_err(),
                "{at}: the agent spent an approval itself"
            );
            "attack"
        }
        _ => {
            // A restart: nothing of the requests lived in the engine.
            w.engine = engine_over(Arc::clone(engine.store()), &w.folder);
            "restart"
        }
    }
}

/// The work settles: the worker and the executor run until nothing moves; every approved request
/// ended, and a succeeded one's output reaches its poller.
async fn settle(w: &World, asked: &[Asked], at: &str) {
    for _ in 0..100 {
        w.engine.run_agent_requests(Utc::now()).await.expect(at);
        // The executor finishes what it holds and takes what waits.
        let filter = InvocationFilter { limit: 10_000, ..Default::default() };
        let running: Vec<_> = w
            .engine
            .store()
            .invocations(&filter)
            .await
            .expect(at)
            .into_iter()
            .filter(|call| call.status == CallStatus::Running)
            .collect();
        for call in &running {
            let done = serde_json::from_value(json!({"fencingToken": call.fencing_token, "output": {"sent": true}}))
                .expect("complete");
            w.engine.complete(&w.executor, &call.id, &done, None).await.expect(at);
        }
        let request =
            serde_json::from_value(json!({"protocols": ["local"], "localEntrypoints": ["model:send"]})).expect("claim");
        let claimed = w.engine.claim(&w.executor, &request, None).await.expect(at);
        if let Some(claimed) = &claimed {
            let done = serde_json::from_value(
                json!({"fencingToken": claimed.invocation.fencing_token, "output": {"sent": true}}),
            )
            .expect("complete");
            w.engine.complete(&w.executor, &claimed.invocation.id, &done, None).await.expect(at);
        }
        let open = w.engine.store().open_agent_requests(1000).await.expect(at);
        if running.is_empty()
            && claimed.is_none()
            && open.iter().all(|request| request.status == RequestStatus::Pending)
        {
            break;
        }
    }
    for request in asked.iter().filter(|request| request.decided == Some(ApprovalStatus::Approved)) {
        let seen = w.engine.agent_request(&w.agent, &request.id).await.expect(at);
        assert!(seen.status.is_terminal(), "{at}: an approved request never ended: {seen:?}");
        if seen.status == RequestStatus::Succeeded {
            assert_eq!(seen.call.and_then(|call| call.output), Some(json!({"sent": true})), "{at}");
        }
    }
}

const SHARDS: u64 = 4;

#[allow(clippy::print_stderr)]
async fn shard(n: u64) {
    let all = env_number("SKILL_REQUESTS_CASES", 40);
    let steps = env_number("SKILL_REQUESTS_STEPS", 260);
    let seed = env_number("SKILL_REQUESTS_SEED", 0x5EED_0029);
    let started = std::time::Instant::now();
    let mut totals: BTreeMap<&'static str, u64> = BTreeMap::new();
    let mut requests = 0;
    for case in (0..all).filter(|case| case % SHARDS == n) {
        let mut rng = Rng(seed ^ case.wrapping_mul(0x9E37_79B9));
        let mut w = world(case).await;
        let mut asked = Vec::new();
        for index in 0..steps {
            let at = format!("seed {seed:#x} case {case} step {index}");
            let did = step(&mut w, &mut asked, &mut rng, &at).await;
            *totals.entry(did).or_default() += 1;
            check(&w, &asked, &at).await;
        }
        settle(&w, &asked, &format!("seed {seed:#x} case {case} settled")).await;
        check(&w, &asked, &format!("seed {seed:#x} case {case} settled")).await;
        requests += asked.len();
    }
    eprintln!("requests shard {n}: {requests} requests, {totals:?} in {:?}", started.elapsed());
    for needed in ["ask", "decide", "withdraw", "expire", "worker", "claim", "complete", "attack", "restart"] {
        assert!(totals.get(needed).copied().unwrap_or(0) > 0, "the interleavings never reached {needed}: {totals:?}");
    }
}

#[tokio::test]
async fn random_requests_never_write_without_a_persons_approval_0() {
    shard(0).await;
}

#[tokio::test]
async fn random_requests_never_write_without_a_persons_approval_1() {
    shard(1).await;
}

#[tokio::test]
async fn random_requests_never_write_without_a_persons_approval_2() {
    shard(2).await;
}

#[tokio::test]
async fn random_requests_never_write_without_a_persons_approval_3() {
    shard(3).await;
}

/// Requests that only wait never hide one that can move: behind more waiting requests than the
/// worker looks at in one pass, an approved one is called in the next pass.
#[tokio::test]
async fn waiting_requests_never_hide_an_approved_one() {
    let w = world(1000).await;
    let client = ClientInfo { name: "model".into(), version: "1".into() };
    // A second agent, whose one request comes after all of the first's.
    let admin = actor(&w.engine, "operator", "person", &["org.manage", "skills.invoke"]).await;
    let second = AgentRequest {
        key: "desk-bot-2".into(),
        spec: json!({"identity": {"kind": "agent", "permissions": ["skills.invoke"]},
                     "skills": {"invoke": [WRITE]}, "requests": {"workspace": "desk"}}),
    };
    let apply = ApplyRequest {
        package: PackageRef { key: "desk2".into(), version: "1".into() },
        install_hash: "c".repeat(64),
        create: Vec::new(),
        patch: Vec::new(),
        objects: serde_json::from_value(json!([{"kind": "Agent", "key": "desk-bot-2"}])).expect("objects"),
        adopt: Vec::new(),
        settings_schema: None,
        task_types: Vec::new(),
        artifact_types: Vec::new(),
        agents: vec![second],
        rules: Vec::new(),
        processes: Vec::new(),
    };
    w.engine.apply_package(&admin, &apply, None).await.expect("applied");
    let request = AgentTokenRequest { operated_by: Some("operator".into()), ..Default::default() };
    let issued = w.engine.issue_agent_token(None, "desk-bot-2", &request, &Origin::default()).await.expect("token");
    let other = w.engine.authenticate(&issued.token).await.expect("authenticates");
    for n in 0..100 {
        let inputs = json!({"n": n}).as_object().cloned().unwrap_or_default();
        w.engine.gateway_call(&w.agent, &w.write, inputs, None, &client, None).await.expect("asked");
    }
    let inputs = json!({"n": "last"}).as_object().cloned().unwrap_or_default();
    let called = w.engine.gateway_call(&other, &w.write, inputs, None, &client, None).await.expect("asked");
    let GatewayCall::Requested(last) = called else { panic!("a write ran without a basis") };
    let approve: DecideRequest = serde_json::from_value(json!({"outcome": "approved"})).expect("decide");
    w.engine.decide(&w.reviewer, &last.approval_id, &approve, None).await.expect("decided");
    let moved = w.engine.run_agent_requests(Utc::now()).await.expect("a pass");
    assert_eq!(moved, 1, "the approved request moved in one pass");
    let seen = w.engine.agent_request(&other, &last.id).await.expect("the request");
    assert_eq!(seen.status, RequestStatus::Approved);
    assert!(seen.invocation_id.is_some(), "its call was made");
}

/// What a hostile agent and careless people meet: an agent's key names one request; an agent
/// has at most a hundred waiting; it sees only its own; a request whose task is closed, or whose
/// decider is disabled before the call, calls nothing; nobody makes a request task by hand.
#[tokio::test]
async fn a_request_keeps_to_its_rules() {
    let w = world(1001).await;
    let client = ClientInfo { name: "mod\u{202e}el\u{7}\u{61c}\u{2028}\u{feff}".into(), version: "1".into() };
    let ask = |n: u64, key: Option<&str>| {
        let (engine, agent, write, client) = (w.engine.clone(), w.agent.clone(), w.write.clone(), client.clone());
        let key = key.map(str::to_owned);
        async move {
            let inputs = json!({"n": n}).as_object().cloned().unwrap_or_default();
            engine.gateway_call(&agent, &write, inputs, key, &client, None).await.map(|called| match called {
                GatewayCall::Requested(request) => *request,
                GatewayCall::Called(_) => panic!("a write ran without a basis"),
            })
        }
    };
    // The same key is the same request; another call under it is refused; a blank key too.
    let first = ask(1, Some("k-1")).await.expect("asked");
    assert_eq!(ask(1, Some("k-1")).await.expect("again").id, first.id);
    assert_eq!(ask(2, Some("k-1")).await.expect_err("another call").code, Code::IdempotencyKeyReuse);
    assert_eq!(ask(3, Some("  ")).await.expect_err("a blank key").code, Code::InvalidIdempotencyKey);
    assert_eq!(first.client.name, "model", "what a client says of itself is shown without tricks");

    // Another agent (or anybody's agent) does not see it; a person who reads tasks does.
    let other = {
        // An agent made by hand acts only with a token naming the person who operates it.
        let request = skill_engine::TokenRequest {
            principal: "other-bot".into(),
            kind: "agent".into(),
            grants: vec!["skills.invoke".into()],
            label: String::new(),
            expires_at: None,
        };
        let refused = w.engine.issue_token(&request, &Origin::default()).await.expect_err("names nobody");
        assert_eq!(
            (refused.code.as_str(), refused.details["field"].as_str()),
            ("operator_required", Some("operatedBy"))
        );
        let issued = w
            .engine
            .issue_token_for(&request, Some("operator"), &Origin::default())
            .await
            .expect("operated by a person");
        let operated = w.engine.authenticate(&issued.token).await.expect("authenticates");
        let operator = w.engine.store().principal_by_name("operator").await.expect("the operator").id;
        assert_eq!(operated.operator(), Some(operator.as_str()), "the token names who operates the agent");
        let refused =
            w.engine.issue_token_for(&request, Some("other-bot"), &Origin::default()).await.expect_err("an agent");
        assert_eq!(refused.code, Code::InvalidOperator, "an agent is operated by a person, not by an agent");
        operated
    };
    assert_eq!(w.engine.agent_request(&other, &first.id).await.expect_err("hidden").code, Code::NotFound);
    assert!(w.engine.agent_request(&w.reviewer, &first.id).await.is_ok());

    // Its task closed by a person: withdrawn, nothing called.
    let close = serde_json::from_value(json!({"status": "cancelled"})).expect("close");
    w.engine.close_task(&w.reviewer, &first.task_id, &close, None).await.expect("closed");
    w.engine.run_agent_requests(Utc::now()).await.expect("a pass");
    let seen = w.engine.agent_request(&w.agent, &first.id).await.expect("seen");
    assert_eq!((seen.status, seen.invocation_id), (RequestStatus::Withdrawn, None));

    // Approved, then its decider disabled before the call is made: failed, nothing called.
    let second = ask(4, None).await.expect("asked");
    let approve: DecideRequest = serde_json::from_value(json!({"outcome": "approved"})).expect("decide");
    w.engine.decide(&w.reviewer, &second.approval_id, &approve, None).await.expect("approved");
    let admin = actor(&w.engine, "operator", "person", &["org.manage"]).await;
    let disable = serde_json::from_value(json!({"principal": "reviewer", "reason": "compromised"})).expect("disable");
    w.engine.disable_principal(&admin, &disable, None).await.expect("disabled");
    w.engine.run_agent_requests(Utc::now()).await.expect("a pass");
    let seen = w.engine.agent_request(&w.agent, &second.id).await.expect("seen");
    assert_eq!((seen.status, seen.invocation_id), (RequestStatus::Failed, None));

    // At most a hundred waiting.
    for n in 0..100 {
        ask(100 + n, None).await.expect("asked");
    }
    assert_eq!(ask(999, None).await.expect_err("the hundred and first").code, Code::TooManyRequests);

    // Nobody publishes the request type, in any version.
    let admin = actor(&w.engine, "publisher", "person", &["org.manage"]).await;
    let look_alike: skill_api::TaskTypeRequest =
        serde_json::from_value(json!({"key": "agent-request", "version": "2"})).expect("a type");
    let refused = w.engine.publish_task_type(&admin, &look_alike, None).await.expect_err("reserved");
    assert_eq!(refused.code, Code::TaskTypeReserved);
    // Nobody makes an agent-request task by hand.
    let person = actor(&w.engine, "clerk", "person", &["tasks.write@desk"]).await;
    let forged = serde_json::from_value(json!({"workspace": "desk", "taskType": "agent-request@1", "title": "forged",
                                               "customFields": {"agent": "desk-bot"}}))
    .expect("a task");
    assert_eq!(w.engine.create_task(&person, &forged, None).await.expect_err("reserved").code, Code::TaskTypeReserved);
}

/// The cap holds when an agent asks many times at once: the database counts, not the code.
#[tokio::test]
async fn an_agent_asking_at_once_stays_within_its_hundred() {
    let w = world(1002).await;
    let client = ClientInfo { name: "model".into(), version: "1".into() };
    let ask = |n: u64| {
        let (engine, agent, write, client) = (w.engine.clone(), w.agent.clone(), w.write.clone(), client.clone());
        async move {
            let inputs = json!({"n": n}).as_object().cloned().unwrap_or_default();
            engine.gateway_call(&agent, &write, inputs, None, &client, None).await
        }
    };
    let asked = futures::future::join_all((0..130).map(ask)).await;
    let made = asked.iter().filter(|answer| answer.is_ok()).count();
    let refused: Vec<_> = asked.iter().filter_map(|answer| answer.as_ref().err()).collect();
    assert!(refused.iter().all(|error| error.code == Code::TooManyRequests), "{refused:?}");
    assert_eq!(made, 100, "exactly a hundred waiting");
}

/// A decision stops counting once its decider is disabled, even after the core queued the call:
/// disabling cancels the waiting call, and a claim re-checks the decider in its own transaction
/// (a call queued while the principal was being disabled is not made either).
#[tokio::test]
async fn a_disabled_decider_stops_a_queued_call() {
    let w = world(1003).await;
    let client = ClientInfo { name: "model".into(), version: "1".into() };
    let second = actor(&w.engine, "second", "person", &["tasks.write@desk", "approvals.decide@desk"]).await;
    let admin = actor(&w.engine, "operator", "person", &["org.manage"]).await;
    let claim =
        serde_json::from_value(json!({"protocols": ["local"], "localEntrypoints": ["model:send"]})).expect("claim");
    let queued = |n: u64, decider: Actor| {
        let (engine, agent, write, client) = (w.engine.clone(), w.agent.clone(), w.write.clone(), client.clone());
        async move {
            let inputs = json!({"n": n}).as_object().cloned().unwrap_or_default();
            let called = engine.gateway_call(&agent, &write, inputs, None, &client, None).await.expect("asked");
            let GatewayCall::Requested(request) = called else { panic!("a write ran without a basis") };
            let approve: DecideRequest = serde_json::from_value(json!({"outcome": "approved"})).expect("decide");
            engine.decide(&decider, &request.approval_id, &approve, None).await.expect("approved");
            engine.run_agent_requests(Utc::now()).await.expect("a pass");
            let seen = engine.agent_request(&agent, &request.id).await.expect("seen");
            let call = seen.invocation_id.clone().expect("the call is queued");
            (seen.id, call)
        }
    };

    // Disabled through the API: the queued call is among those it cancelled.
    let (request, call) = queued(1, w.reviewer.clone()).await;
    let disable = serde_json::from_value(json!({"principal": "reviewer", "reason": "compromised"})).expect("disable");
    let disabled = w.engine.disable_principal(&admin, &disable, None).await.expect("disabled");
    assert_eq!(disabled.cancelled_calls, vec![call.clone()]);
    assert!(w.engine.claim(&w.executor, &claim, None).await.expect("a claim").is_none(), "nothing to make");
    let stored = w.engine.store().invocation(&call).await.expect("the call");
    assert_eq!(stored.status, CallStatus::Cancelled);
    assert_eq!(
        stored.error.as_ref().map(|e| (json!(e.code), json!(e.message))),
        Some((json!("basis_revoked"), json!("decider_disabled")))
    );
    w.engine.run_agent_requests(Utc::now()).await.expect("a pass");
    let seen = w.engine.agent_request(&w.agent, &request).await.expect("seen");
    assert_eq!(seen.status, RequestStatus::Failed);

    // Disabled under the cancelling (only the principal's row changes): the claim refuses it.
    let (request, call) = queued(2, second.clone()).await;
    w.engine.store().disable_principal(second.id(), Utc::now(), &[], &[]).await.expect("disabled");
    assert!(w.engine.claim(&w.executor, &claim, None).await.expect("a claim").is_none(), "nothing to make");
    let stored = w.engine.store().invocation(&call).await.expect("the call");
    assert_eq!((stored.status, stored.attempt), (CallStatus::Cancelled, 0), "never started");
    assert_eq!(stored.error.as_ref().map(|e| e.message.as_str()), Some("decider_disabled"));
    w.engine.run_agent_requests(Utc::now()).await.expect("a pass");
    let seen = w.engine.agent_request(&w.agent, &request).await.expect("seen");
    assert_eq!((seen.status, seen.call.map(|call| call.status)), (RequestStatus::Failed, Some(CallStatus::Cancelled)));
}

/// An agent acts for its person only while that person may act: a call of its request queued
/// when the person operating the agent is disabled is never made (the claim cancels it,
/// `operator_disabled`), nor one approved after.
#[tokio::test]
async fn a_disabled_operator_stops_the_agents_requests() {
    let w = world(1004).await;
    let client = ClientInfo { name: "model".into(), version: "1".into() };
    let claim =
        serde_json::from_value(json!({"protocols": ["local"], "localEntrypoints": ["model:send"]})).expect("claim");
    let ask = |n: u64| {
        let (engine, agent, write, client) = (w.engine.clone(), w.agent.clone(), w.write.clone(), client.clone());
        async move {
            let inputs = json!({"n": n}).as_object().cloned().unwrap_or_default();
            let called = engine.gateway_call(&agent, &write, inputs, None, &client, None).await.expect("asked");
            let GatewayCall::Requested(request) = called else { panic!("a write ran without a basis") };
            request
        }
    };
    let queued = ask(1).await;
    let waiting = ask(2).await;
    let approve: DecideRequest = serde_json::from_value(json!({"outcome": "approved"})).expect("decide");
    w.engine.decide(&w.reviewer, &queued.approval_id, &approve, None).await.expect("approved");
    w.engine.run_agent_requests(Utc::now()).await.expect("a pass");
    let seen = w.engine.agent_request(&w.agent, &queued.id).await.expect("seen");
    let call = seen.invocation_id.clone().expect("the call is queued");
    // The operator's row changes alone (as a disable that committed meanwhile leaves it).
    let operator = w.engine.store().principal_by_name("operator").await.expect("the operator");
    w.engine.store().disable_principal(&operator.id, Utc::now(), &[], &[]).await.expect("disabled");
    assert!(w.engine.claim(&w.executor, &claim, None).await.expect("a claim").is_none(), "nothing to make");
    let stored = w.engine.store().invocation(&call).await.expect("the call");
    assert_eq!((stored.status, stored.attempt), (CallStatus::Cancelled, 0), "never started");
    assert_eq!(stored.error.as_ref().map(|e| e.message.as_str()), Some("operator_disabled"));
    // A request still waiting then (a disable through the API withdraws it at once) is approved
    // in vain: its call is never made.
    w.engine.decide(&w.reviewer, &waiting.approval_id, &approve, None).await.expect("approved");
    w.engine.run_agent_requests(Utc::now()).await.expect("a pass");
    let left = w.engine.store().agent_request(&waiting.id).await.expect("the request");
    assert_eq!((left.status, left.invocation_id), (RequestStatus::Failed, None));
    // The agent's token lets nobody in, and a wait already under way answers it no more.
    let refused = w.engine.still_holds(&w.agent).await;
    assert!(refused.is_err(), "the agent acts no more for a disabled person");
    let waited = w.engine.wait_for_request(&w.agent, &queued.id, std::time::Duration::from_millis(10)).await;
    let error = waited.expect_err("a wait answers a disabled person's agent no more");
    assert_eq!(
        (error.code.as_str(), error.details.get("reason").and_then(Value::as_str)),
        ("invalid_token", Some("operator_disabled"))
    );
}

/// The checks of the random test are not vacuous: a write forged straight into the store —
/// one without a basis, which only the engine refuses — fails them, while the honest history
/// before it passes.
#[tokio::test]
async fn the_checks_catch_a_forged_write() {
    let w = world(1004).await;
    let client = ClientInfo { name: "model".into(), version: "1".into() };
    let inputs = json!({"n": 1});
    let called = w
        .engine
        .gateway_call(&w.agent, &w.write, inputs.as_object().cloned().unwrap_or_default(), None, &client, None)
        .await
        .expect("asked");
    let GatewayCall::Requested(request) = called else { panic!("a write ran without a basis") };
    let approve: DecideRequest = serde_json::from_value(json!({"outcome": "approved"})).expect("decide");
    let decided = w.engine.decide(&w.reviewer, &request.approval_id, &approve, None).await.expect("approved");
    w.engine.run_agent_requests(Utc::now()).await.expect("a pass");
    let asked = vec![Asked {
        id: request.id.clone(),
        approval: request.approval_id.clone(),
        inputs,
        decided: Some(decided.status),
        withdrawn: false,
    }];
    check(&w, &asked, "honest").await;

    let made = w.engine.agent_request(&w.agent, &request.id).await.expect("seen").invocation_id.expect("a call");
    let mut forged = w.engine.store().invocation(&made).await.expect("the call");
    forged.id = uuid::Uuid::now_v7().to_string();
    forged.idempotency_key = None;
    forged.authorization_basis = None;
    let event = skill_store::records::Event {
        seq: 0,
        id: uuid::Uuid::now_v7().to_string(),
        kind: "skill.invoked".into(),
        subject: format!("invocation:{}", forged.id),
        data: json!({}),
        actor_id: Some(w.agent.id().to_owned()),
        request_id: None,
        created_at: Utc::now(),
    };
    w.engine.store().insert_invocation(&forged, &event).await.expect("the store takes what the engine refuses");
    let caught = tokio::spawn(async move { check(&w, &asked, "forged").await }).await;
    assert!(caught.is_err_and(|error| error.is_panic()), "a write without a basis went unnoticed");
}

/// Withdrawing does not make room without end: an agent makes at most 500 requests an hour.
#[tokio::test]
async fn an_agent_asks_at_most_five_hundred_times_an_hour() {
    let w = world(1005).await;
    let client = ClientInfo { name: "model".into(), version: "1".into() };
    for n in 0..skill_engine::requests::MAX_REQUESTS_PER_HOUR {
        let inputs = json!({"n": n}).as_object().cloned().unwrap_or_default();
        let called = w.engine.gateway_call(&w.agent, &w.write, inputs, None, &client, None).await.expect("asked");
        let GatewayCall::Requested(request) = called else { panic!("a write ran without a basis") };
        w.engine.withdraw_agent_request(&w.agent, &request.id, None).await.expect("withdrawn");
    }
    let inputs = json!({"n": -1}).as_object().cloned().unwrap_or_default();
    let refused =
        w.engine.gateway_call(&w.agent, &w.write, inputs, None, &client, None).await.expect_err("one too many");
    assert_eq!(refused.code, Code::TooManyRequests);
    assert_eq!(refused.details["lastHour"], 500);
}
