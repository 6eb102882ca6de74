//! Processes through the real core and the claims package's host as its executor: the
//! claim-follow-up process classifies a claim, waits a week (a core whose clock is moved jumps
//! it), and writes to the customer once on the process basis; starting is idempotent by key; the
//! process basis is the core's alone, and a pending call whose step closed or whose instance was
//! cancelled is cancelled at claim.

use std::time::Duration;

use serde_json::{Value, json};
use skill_fixtures::Scratch;

use crate::api::token;
use crate::calls::{Backend, Core, core_serving};
use crate::claims::{Child, apply_package, executor, host, outbox};

/// The claims executor's token.
async fn runner(core: &Core) -> String {
    let installer = token(&core.engine, "process-installer", &["org.manage", "skills.execute"]).await;
    let issued = core.post(&installer, "/agents/claims-skills/tokens", &json!({})).await;
    issued.ok(201)["token"].as_str().expect("a token").to_owned()
}

/// `GET /process-instances/{id}` until `done` holds.
async fn until(core: &Core, reader: &str, id: &str, done: impl Fn(&Value) -> bool) -> Value {
    let mut last = Value::Null;
    for _ in 0..400 {
        last = core.get(reader, &format!("/process-instances/{id}")).await.ok(200).clone();
        if done(&last) {
            return last;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("the instance {id} never got there: {last}");
}

/// The last run of step `step` of an instance.
fn step<'a>(instance: &'a Value, step: &str) -> &'a Value {
    instance["steps"]
        .as_array()
        .and_then(|steps| steps.iter().rev().find(|s| s["step"] == step))
        .unwrap_or(&Value::Null)
}

async fn story(core: Core, label: &str) {
    let root = apply_package(&core).await;
    let runner = runner(&core).await;
    let sent = Scratch::new(&format!("{label}-outbox"));
    let _executor = executor(&host(), &root, &runner, &sent);
    let clerk = token(&core.engine, "clerk", &["tasks.write@claims", "tasks.read@claims"]).await;
    let input = json!({"claim": "C-11", "message": "My parcel is late.", "followUp": "Did your parcel arrive?"});
    let start = json!({"workspace": "claims", "input": input, "key": "C-11"});

    // Started once: the same key answers the same instance; another input under it is refused.
    let started = core.post(&clerk, "/processes/claim-follow-up:start", &start).await.ok(201).clone();
    let id = started["id"].as_str().expect("an id").to_owned();
    assert_eq!((started["process"].as_str(), started["status"].as_str()), (Some("claim-follow-up@1"), Some("running")));
    let again = core.post(&clerk, "/processes/claim-follow-up:start", &start).await;
    assert_eq!(again.ok(200)["id"], started["id"]);
    let mut other = start.clone();
    other["input"]["claim"] = json!("C-12");
    let refused = core.post(&clerk, "/processes/claim-follow-up:start", &other).await;
    assert_eq!((refused.status.as_u16(), refused.body["error"]["code"].as_str()), (409, Some("process_key_reuse")));

    // Classified, remembered, and waiting a week: nothing is sent yet.
    let waiting = until(&core, &clerk, &id, |i| step(i, "week")["status"] == "open").await;
    assert_eq!(step(&waiting, "classify")["status"], "done", "{waiting}");
    assert!(waiting["vars"]["category"].is_string(), "{waiting}");
    assert_eq!(waiting["vars"]["category"], step(&waiting, "classify")["output"]["category"]);
    assert!(step(&waiting, "week")["wakeAt"].is_string(), "{waiting}");
    assert!(outbox(&sent).is_empty());

    // A week later (the core's clock moved eight days): the timer fires within a second, the
    // follow-up is written once, on the process basis, and the instance completes.
    core.clock.advance(chrono::Duration::days(8));
    let done = until(&core, &clerk, &id, |i| i["status"] == "completed").await;
    assert_eq!(outbox(&sent), [("C-11".to_owned(), "Did your parcel arrive?".to_owned())]);
    let follow_up = step(&done, "follow-up");
    let call = core
        .get(&core.admin, &format!("/skill-invocations/{}", follow_up["invocationId"].as_str().unwrap_or_default()))
        .await
        .ok(200)
        .clone();
    let basis = &call["authorizationBasis"];
    assert_eq!(
        (basis["kind"].as_str(), basis["activityId"].as_str(), basis["step"].as_str()),
        (Some("process"), follow_up["id"].as_str(), Some("follow-up")),
        "{call}"
    );
    assert_eq!(basis["instanceId"].as_str(), Some(id.as_str()));
    assert!(call["idempotencyKey"].as_str().is_some_and(|key| key.starts_with("process:")), "{call}");
    // The console: the workspace's instances, and the instance's steps as a timeline.
    let console = crate::console::Console::new(&core);
    let (cookie, _) = console.sign_in(&clerk).await;
    let listed = console.get(Some(&cookie), "/console/processes?workspace=claims").await;
    assert!(listed.body.contains("claim-follow-up@1") && listed.body.contains("C-11"), "{}", listed.body);
    let page = console.get(Some(&cookie), &format!("/console/processes/{id}")).await;
    let call_link = format!("/console/calls/{}", follow_up["invocationId"].as_str().unwrap_or_default());
    for shown in ["follow-up", "week", "completed", call_link.as_str()] {
        assert!(page.body.contains(shown), "{shown}: {}", page.body);
    }
    assert!(!page.body.contains("Cancel the instance"), "an ended instance is not cancelled");

    // Moving it again sends nothing more.
    assert_eq!(core.engine.run_processes(core.engine.now()).await.expect("moves nothing"), 0);
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(outbox(&sent).len(), 1);
    let kinds: Vec<String> =
        done["steps"].as_array().expect("steps").iter().map(|s| format!("{}:{}", s["step"], s["status"])).collect();
    assert_eq!(
        kinds,
        [
            "\"classify\":\"done\"",
            "\"remember\":\"done\"",
            "\"week\":\"done\"",
            "\"follow-up\":\"done\"",
            "\"done\":\"done\""
        ]
    );
}

#[tokio::test]
async fn a_claim_is_followed_up_once_on_sqlite() {
    story(core_serving(Backend::Sqlite, "processes", None, Default::default()).await, "processes-sqlite").await;
}

#[tokio::test]
async fn a_claim_is_followed_up_once_on_postgres() {
    story(core_serving(Backend::Postgres, "processes", None, Default::default()).await, "processes-postgres").await;
}

/// The process basis is the core's alone; a pending write whose instance was cancelled or whose
/// step closed before an executor took it is cancelled at claim, and nothing is sent.
#[tokio::test]
async fn the_process_basis_holds_only_while_its_step_is_open() {
    let core = core_serving(Backend::Sqlite, "processes-basis", None, Default::default()).await;
    let root = apply_package(&core).await;
    let installer =
        token(&core.engine, "basis-installer", &["org.manage", "claims.reply", "skills.invoke", "tasks.write@claims"])
            .await;
    let send_now = json!({"key": "send-now", "spec": {"version": "1", "identity": {"agent": "claims-follow-up"},
        "steps": [{"id": "send", "call": {"skill": "claim.send_reply@1",
                   "input": {"claim": "$.input.claim", "comment": "$.input.text"}}}]}});
    core.post(&installer, "/processes", &send_now).await.ok(201);
    let clerk = token(&core.engine, "clerk", &["tasks.write@claims", "tasks.read@claims", "skills.invoke"]).await;

    // A caller cannot take a process step's key, nor write as the process's agent without it.
    let taken = core
        .post(
            &clerk,
            "/skills/claim.classify@1:invoke",
            &json!({"inputs": {"text": "x"}, "idempotencyKey": "process:x"}),
        )
        .await;
    assert_eq!(
        (taken.status.as_u16(), taken.body["error"]["code"].as_str()),
        (422, Some("invalid_idempotency_key")),
        "{}",
        taken.body
    );
    let agent = core.post(&installer, "/agents/claims-follow-up/tokens", &json!({})).await;
    let agent = agent.ok(201)["token"].as_str().expect("a token").to_owned();
    let direct = core
        .post(
            &agent,
            "/skills/claim.send_reply@1:invoke",
            &json!({"inputs": {"claim": "C-1", "comment": "hi"}, "idempotencyKey": "mine-1"}),
        )
        .await;
    assert_eq!(
        (direct.status.as_u16(), direct.body["error"]["code"].as_str()),
        (403, Some("skill_side_effect_not_authorized")),
        "{}",
        direct.body
    );

    // Two instances whose write waits for an executor: one is cancelled, the other's step is
    // closed (as when its instance moved on).
    let mut calls = Vec::new();
    let mut ids = Vec::new();
    for key in ["cancelled", "closed"] {
        let start = json!({"workspace": "claims", "key": key, "input": {"claim": format!("C-{key}"), "text": "hello"}});
        let started = core.post(&clerk, "/processes/send-now:start", &start).await.ok(201).clone();
        let id = started["id"].as_str().expect("an id").to_owned();
        let pending = until(&core, &clerk, &id, |i| step(i, "send")["invocationId"].is_string()).await;
        calls.push(step(&pending, "send")["invocationId"].as_str().expect("a call").to_owned());
        ids.push(id);
    }
    // Cancelled by a person in the console (the form carries the session's token).
    let console = crate::console::Console::new(&core);
    let (cookie, _) = console.sign_in(&clerk).await;
    let page = console.get(Some(&cookie), &format!("/console/processes/{}", ids[0])).await;
    assert!(page.body.contains("Cancel the instance"), "{}", page.body);
    let action = format!("/console/processes/{}/cancel", ids[0]);
    let forged = console.post(Some(&cookie), &action, &[("reason", "x"), ("csrf", "nope")], console.origin()).await;
    assert_ne!(forged.status.as_u16(), 303, "a form without the session's token changes nothing");
    let csrf = page.csrf();
    let reason = [("reason", "the customer called"), ("csrf", csrf.as_str())];
    let posted = console.post(Some(&cookie), &action, &reason, console.origin()).await;
    assert_eq!(posted.status.as_u16(), 303, "{}", posted.body);
    let cancelled = core.get(&clerk, &format!("/process-instances/{}", ids[0])).await.ok(200).clone();
    assert_eq!(cancelled["error"]["message"], "the customer called");
    assert_eq!(
        (cancelled["status"].as_str(), step(&cancelled, "send")["status"].as_str()),
        (Some("cancelled"), Some("closed"))
    );
    let twice = core.post(&clerk, &format!("/process-instances/{}:cancel", ids[0]), &json!({"reason": "again"})).await;
    assert_eq!((twice.status.as_u16(), twice.body["error"]["code"].as_str()), (409, Some("instance_ended")));
    let blank = core.post(&clerk, &format!("/process-instances/{}:cancel", ids[1]), &json!({"reason": " "})).await;
    assert_eq!(blank.status.as_u16(), 400);
    // The second instance's step closes while its instance runs on.
    let store = skill_store::open(&core.target, &Default::default()).await.expect("the same database");
    let open = skill_store::ProcessStore::steps(&*store, &ids[1])
        .await
        .expect("steps")
        .into_iter()
        .find(|s| s.step_id == "send")
        .expect("send");
    let closed = skill_store::records::StepRecord {
        status: skill_api::StepStatus::Closed,
        row_version: open.row_version + 1,
        ended_at: Some(chrono::Utc::now()),
        ..open
    };
    skill_store::WorkStore::write_work(&*store, &[skill_store::records::WorkChange::UpdateStep(closed)], &[])
        .await
        .expect("closed");

    let sent = Scratch::new("processes-basis-outbox");
    let _executor: Child = executor(&host(), &root, &runner(&core).await, &sent);
    for (call, reason) in calls.iter().zip(["process_cancelled", "process_step_closed"]) {
        let mut last = Value::Null;
        for _ in 0..200 {
            last = core.get(&core.admin, &format!("/skill-invocations/{call}")).await.ok(200).clone();
            if last["status"] == "cancelled" {
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        assert_eq!(
            (last["status"].as_str(), last["error"]["code"].as_str(), last["error"]["message"].as_str()),
            (Some("cancelled"), Some("basis_revoked"), Some(reason)),
            "{last}"
        );
    }
    assert!(outbox(&sent).is_empty(), "nothing was written");
}

/// What a process may not be is refused with its code and path at publication; an instance's
/// input and key are checked; a reader of another workspace sees no instance.
#[tokio::test]
async fn processes_keep_to_their_rules() {
    let core = core_serving(Backend::Sqlite, "processes-refusals", None, Default::default()).await;
    apply_package(&core).await;
    let installer = token(&core.engine, "refusal-installer", &["org.manage"]).await;
    let process = |steps: Value, agent: &str| json!({"key": "p", "spec": {"version": "1", "identity": {"agent": agent}, "steps": steps}});
    let cases = [
        (
            process(json!([{"id": "a", "call": {"skill": "claim.classify"}}]), "claims-follow-up"),
            "invalid_process",
            "spec.steps[0].call.skill",
        ),
        (
            process(json!([{"id": "a", "call": {"skill": "claim.nothing@1"}}]), "claims-follow-up"),
            "unknown_skill",
            "spec.steps[0].call.skill",
        ),
        (
            process(json!([{"id": "a", "call": {"skill": "claim.draft_reply@1"}}]), "claims-follow-up"),
            "skills_invoke_not_permitted",
            "spec.identity.agent",
        ),
        (
            process(json!([{"id": "a", "task": {"type": "claim-nothing@1", "title": "t"}}]), "claims-follow-up"),
            "unknown_reference",
            "spec.steps[0].task.type",
        ),
        (process(json!([{"id": "a", "wait": {"for": "1d"}}]), "nobody"), "unknown_reference", "spec.identity.agent"),
        (
            process(
                json!([{"id": "a", "switch": {"cases": [{"when": "fact.x", "next": "a"}], "default": "a"}}]),
                "claims-follow-up",
            ),
            "invalid_condition",
            "spec.steps[0].switch.cases[0].when",
        ),
        (
            process(json!([{"id": "a", "wait": {"for": "1d"}, "next": "b"}]), "claims-follow-up"),
            "invalid_process",
            "spec.steps[0].next",
        ),
    ];
    for (body, code, path) in cases {
        let refused = core.post(&installer, "/processes", &body).await;
        assert_eq!(
            (
                refused.status.as_u16(),
                refused.body["error"]["code"].as_str(),
                refused.body["error"]["details"]["path"].as_str()
            ),
            (422, Some(code), Some(path)),
            "{body}: {}",
            refused.body
        );
    }
    let listed = core.get(&core.admin, "/processes").await.ok(200).clone();
    assert_eq!(listed["items"].as_array().map(Vec::len), Some(1), "only the package's: {listed}");

    let clerk = token(&core.engine, "clerk", &["tasks.write@claims", "tasks.read@claims"]).await;
    for (input, status) in [(json!([1]), 422), (json!({"big": "x".repeat(300 * 1024)}), 413)] {
        let refused = core
            .post(&clerk, "/processes/claim-follow-up:start", &json!({"workspace": "claims", "input": input}))
            .await;
        assert_eq!((refused.status.as_u16(), refused.body["error"]["code"].as_str()), (status, Some("invalid_input")));
    }
    let bidi = core
        .post(
            &clerk,
            "/processes/claim-follow-up:start",
            &json!({"workspace": "claims", "input": {}, "key": "a\u{202e}b"}),
        )
        .await;
    assert_eq!(bidi.status.as_u16(), 422);
    // A clerk of another workspace cannot have the process's agent work (and write) there.
    crate::claims::ensure_workspace(&core, "elsewhere").await;
    let other_clerk = token(&core.engine, "other-clerk", &["tasks.write@elsewhere", "tasks.read@elsewhere"]).await;
    let foreign = core
        .post(
            &other_clerk,
            "/processes/claim-follow-up:start",
            &json!({"workspace": "elsewhere", "input": {"claim": "C-1"}}),
        )
        .await;
    assert_eq!(
        (foreign.status.as_u16(), foreign.body["error"]["details"]["agent"].as_str()),
        (403, Some("claims-follow-up")),
        "{}",
        foreign.body
    );
    let none = core.get(&other_clerk, "/process-instances?workspace=elsewhere").await.ok(200).clone();
    assert_eq!(none["items"].as_array().map(Vec::len), Some(0), "nothing was started");
    let outsider = token(&core.engine, "outsider", &["facts.read@claims"]).await;
    let elsewhere =
        core.post(&outsider, "/processes/claim-follow-up:start", &json!({"workspace": "claims", "input": {}})).await;
    assert_eq!(elsewhere.status.as_u16(), 403);
    let started = core
        .post(&clerk, "/processes/claim-follow-up:start", &json!({"workspace": "claims", "input": {"claim": "C-1"}}))
        .await
        .ok(201)
        .clone();
    let unseen =
        core.get(&outsider, &format!("/process-instances/{}", started["id"].as_str().unwrap_or_default())).await;
    assert_eq!(unseen.status.as_u16(), 404);
    let listed = core.get(&clerk, "/process-instances?workspace=claims").await.ok(200).clone();
    assert_eq!(listed["items"].as_array().map(Vec::len), Some(1));
}

/// A work rule starts a process instance once per work key: two messages about one claim start
/// one instance, with the fact and the interpretation as its input; the dry run shows it.
#[tokio::test]
async fn a_rule_starts_one_instance_per_work_key() {
    let core = core_serving(Backend::Sqlite, "processes-rule", None, Default::default()).await;
    let root = apply_package(&core).await;
    let sent = Scratch::new("processes-rule-outbox");
    let _executor = executor(&host(), &root, &runner(&core).await, &sent);
    let installer = token(&core.engine, "rule-installer", &["org.manage"]).await;
    let rule = json!({"key": "follow-up-intake", "spec": {"version": "1", "identity": {"agent": "claims-intake"},
        "on": {"kind": "claim.received"},
        "interpretation": {"skill": "claim.classify@1", "inputs": {"text": "$.fact.data.text"}},
        "ensureWork": [{"process": {"process": "claim-follow-up@1", "workKey": "claim:{{$.fact.data.claim}}",
                                     "input": {"claim": "$.fact.data.claim", "message": "$.fact.data.text",
                                               "followUp": "Is all well?", "category": "$.interpretation.output.category"}}}]}});
    core.post(&installer, "/rules", &rule).await.ok(201);
    let mut unknown = rule.clone();
    unknown["key"] = json!("other");
    unknown["spec"]["ensureWork"][0]["process"]["process"] = json!("claim-nothing@1");
    let refused = core.post(&installer, "/rules", &unknown).await;
    assert_eq!(
        (
            refused.status.as_u16(),
            refused.body["error"]["code"].as_str(),
            refused.body["error"]["details"]["path"].as_str()
        ),
        (422, Some("unknown_reference"), Some("spec.ensureWork[0].process.process")),
        "{}",
        refused.body
    );
    let dry = core
        .post(
            &core.admin,
            "/rules/follow-up-intake:evaluate",
            &json!({"fact": {"workspace": "claims", "kind": "claim.received",
              "key": "x", "data": {"claim": "C-40", "text": "Where is it?"}}}),
        )
        .await
        .ok(200)
        .clone();
    assert_eq!(
        (dry["processes"][0]["process"].as_str(), dry["processes"][0]["workKey"].as_str()),
        (Some("claim-follow-up@1"), Some("claim:C-40")),
        "{dry}"
    );

    let mailbox = token(&core.engine, "mailbox", &["facts.write@claims"]).await;
    let reader = token(&core.engine, "reader", &["facts.read@claims", "tasks.read@claims"]).await;
    let mut instances = Vec::new();
    for key in ["m-1", "m-2"] {
        let fact = json!({"workspace": "claims", "kind": "claim.received", "key": key,
                          "data": {"claim": "C-40", "text": "Where is my parcel?"}});
        let id = core.post(&mailbox, "/facts", &fact).await.ok(201)["id"].as_str().expect("an id").to_owned();
        let mut last = Value::Null;
        for _ in 0..300 {
            last = core.get(&reader, &format!("/facts/{id}")).await.ok(200).clone();
            let ours = last["evaluations"].as_array().into_iter().flatten().find(|e| e["rule"] == "follow-up-intake@1");
            if ours.is_some_and(|e| e["status"] == "done") {
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let ours = last["evaluations"].as_array().into_iter().flatten().find(|e| e["rule"] == "follow-up-intake@1");
        let ours = ours.unwrap_or_else(|| panic!("no evaluation: {last}"));
        assert_eq!(ours["status"], "done", "{last}");
        instances.push(ours["instanceIds"][0].as_str().expect("an instance").to_owned());
    }
    assert_eq!(instances[0], instances[1], "one instance per work key");
    let instance = core.get(&reader, &format!("/process-instances/{}", instances[0])).await.ok(200).clone();
    assert_eq!(
        (instance["key"].as_str(), instance["input"]["claim"].as_str(), instance["input"]["followUp"].as_str()),
        (Some("claim:C-40"), Some("C-40"), Some("Is all well?")),
        "{instance}"
    );
    assert!(instance["input"]["category"].is_string(), "the interpretation's output: {instance}");
    let listed = core.get(&reader, "/process-instances?workspace=claims&process=claim-follow-up").await.ok(200).clone();
    assert_eq!(listed["items"].as_array().map(Vec::len), Some(1), "{listed}");
}
