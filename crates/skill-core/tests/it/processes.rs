//! Processes through the real core and the claims package's host as its executor, with a local
//! model speaking the OpenAI-compatible protocol: a customer's message arrives as a fact, the
//! claim-intake rule starts the claim-handling process, which opens the reply task with its
//! draft; a person approves the reply in the console and it is sent once; a week later (a core
//! whose clock is moved jumps it) the follow-up is sent once on the process basis, standing on
//! that person's decision. The process basis is the core's alone, and never without a person's
//! decision: a pending call whose step closed or whose instance was cancelled is cancelled at
//! claim, and a write whose review was decided by its own starter, or by no one, is never made.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use serde_json::{Value, json};
use skill_fixtures::Scratch;

use crate::api::token;
use crate::calls::{Backend, Core, core_serving};
use crate::claims::{Child, apply_package, executor, executor_with, host, outbox};

/// The claims executor's token.
pub(crate) async fn runner(core: &Core) -> String {
    let installer = token(&core.engine, "process-installer", &["org.manage", "skills.execute"]).await;
    let issued = core.post(&installer, "/agents/claims-skills/tokens", &json!({})).await;
    issued.ok(201)["token"].as_str().expect("a token").to_owned()
}

/// A model on loopback speaking the OpenAI-compatible protocol: every completion is a draft
/// quoting the customer. Answers its base URL and how many completions it made.
pub(crate) async fn model() -> (String, Arc<AtomicUsize>) {
    let asked = Arc::new(AtomicUsize::new(0));
    let counted = asked.clone();
    let answer = move |axum::Json(body): axum::Json<Value>| {
        let counted = counted.clone();
        async move {
            counted.fetch_add(1, Ordering::SeqCst);
            let prompt = body["messages"]
                .as_array()
                .and_then(|messages| messages.iter().rev().find(|m| m["role"] == "user"))
                .and_then(|m| m["content"].as_str())
                .unwrap_or_default()
                .to_owned();
            let content = json!({"draft": format!("We are sorry to read: {prompt} We are on it.")}).to_string();
            axum::Json(json!({"id": "c-1", "object": "chat.completion", "model": "test-model",
                "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": content}}],
                "usage": {"prompt_tokens": 10, "completion_tokens": 10, "total_tokens": 20}}))
        }
    };
    let app = axum::Router::new().route("/v1/chat/completions", axum::routing::post(answer));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("a port");
    let base = format!("http://{}/v1", listener.local_addr().expect("an address"));
    tokio::spawn(async move { axum::serve(listener, app).await });
    (base, asked)
}

/// The host's environment for the model at `base` (from [`model`]).
pub(crate) fn model_env(base: &str) -> [(&'static str, &str); 4] {
    [
        ("SKILL_LLM_PROVIDER", "openai"),
        ("SKILL_LLM_BASE_URL", base),
        ("SKILL_LLM_API_KEY", "test-key"),
        ("SKILL_LLM_MODELS", "test-model"),
    ]
}

/// `GET /process-instances/{id}` until `done` holds.
pub(crate) async fn until(core: &Core, reader: &str, id: &str, done: impl Fn(&Value) -> bool) -> Value {
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

/// `GET /skill-invocations/{id}` until it ended.
async fn ended_call(core: &Core, id: &str) -> Value {
    let mut last = Value::Null;
    for _ in 0..400 {
        last = core.get(&core.admin, &format!("/skill-invocations/{id}")).await.ok(200).clone();
        if matches!(last["status"].as_str(), Some("succeeded" | "failed" | "cancelled")) {
            return last;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("the call {id} never ended: {last}");
}

/// The last run of step `step` of an instance.
pub(crate) fn step<'a>(instance: &'a Value, step: &str) -> &'a Value {
    instance["steps"]
        .as_array()
        .and_then(|steps| steps.iter().rev().find(|s| s["step"] == step))
        .unwrap_or(&Value::Null)
}

/// The fact's evaluation by `rule`, once it ended.
pub(crate) async fn evaluation(core: &Core, reader: &str, fact: &str, rule: &str) -> Value {
    let mut last = Value::Null;
    for _ in 0..300 {
        last = core.get(reader, &format!("/facts/{fact}")).await.ok(200).clone();
        let ours = last["evaluations"].as_array().into_iter().flatten().find(|e| e["rule"] == rule);
        if let Some(ours) = ours.filter(|e| matches!(e["status"].as_str(), Some("done" | "failed"))) {
            return ours.clone();
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("{rule} never ended its evaluation of {fact}: {last}");
}

async fn story(core: Core, label: &str) {
    let root = apply_package(&core).await;
    let runner = runner(&core).await;
    let sent = Scratch::new(&format!("{label}-outbox"));
    let (base, asked) = model().await;
    let llm = model_env(&base);
    let _executor = executor_with(&host(), &root, &runner, &sent, &llm);
    let mailbox = token(&core.engine, "mailbox", &["facts.write@claims"]).await;
    let reader = token(&core.engine, "reader", &["facts.read@claims", "tasks.read@claims"]).await;
    let reviewer = token(
        &core.engine,
        "reviewer",
        &["skills.invoke", "tasks.write@claims", "tasks.read@claims", "claims.reply@claims", "approvals.decide@claims"],
    )
    .await;

    // A customer's message: the rule classifies it and starts the process, once per message.
    let fact = json!({"workspace": "claims", "kind": "claim.received", "key": "m-11", "source": "email",
                      "data": {"claim": "C-11", "text": "The courier never came."}});
    let fact_id = core.post(&mailbox, "/facts", &fact).await.ok(201)["id"].as_str().expect("an id").to_owned();
    let evaluated = evaluation(&core, &reader, &fact_id, "claim-intake@1").await;
    assert_eq!(evaluated["status"], "done", "{evaluated}");
    let id = evaluated["instanceIds"][0].as_str().expect("an instance").to_owned();
    core.post(&mailbox, "/facts", &fact).await.ok(200);

    // The review: a claim-reply task made by the process's agent, its gate asked for, its draft
    // made by the model on the task.
    let reviewing = until(&core, &reader, &id, |i| {
        step(i, "review")["taskId"].is_string() && step(i, "review")["invocationId"].is_string()
    })
    .await;
    assert_eq!(
        (reviewing["process"].as_str(), reviewing["key"].as_str()),
        (Some("claim-handling@1"), Some("message:m-11"))
    );
    assert_eq!(reviewing["vars"]["category"], "delivery", "the rule's classification: {reviewing}");
    assert_eq!(step(&reviewing, "classify"), &Value::Null, "not classified twice");
    let task_id = step(&reviewing, "review")["taskId"].as_str().expect("a task").to_owned();
    let task = core.get(&reader, &format!("/tasks/{task_id}")).await.ok(200).clone();
    assert_eq!(task["title"], "Claim C-11: delivery", "{task}");
    assert_eq!(task["customFields"], json!({"claim": "C-11", "message": "The courier never came."}));
    let draft = ended_call(&core, step(&reviewing, "review")["invocationId"].as_str().unwrap_or_default()).await;
    assert_eq!(
        (draft["status"].as_str(), draft["taskId"].as_str()),
        (Some("succeeded"), Some(task_id.as_str())),
        "{draft}"
    );
    assert!(draft["output"]["draft"].as_str().is_some_and(|d| d.contains("The courier never came.")), "{draft}");
    assert_eq!(asked.load(Ordering::SeqCst), 1);
    let artifacts = core.get(&reader, &format!("/artifacts?task={task_id}")).await.ok(200).clone();
    assert!(
        artifacts["items"].as_array().into_iter().flatten().any(|a| a["skillInvocationId"] == draft["id"]),
        "the draft is the task's artifact: {artifacts}"
    );
    let approvals = core.get(&reader, &format!("/approvals?task={task_id}")).await.ok(200).clone();
    let gate = approvals["items"][0].clone();
    assert_eq!((gate["status"].as_str(), gate["gate"].as_bool()), (Some("pending"), Some(true)), "{approvals}");
    assert!(outbox(&sent).is_empty(), "nothing is sent before a person decides");

    // A person approves the reply in the console, from the draft, edited.
    let console = crate::console::Console::new(&core);
    let (cookie, _) = console.sign_in(&reviewer).await;
    let page = console.get(Some(&cookie), &format!("/console/tasks/{task_id}")).await;
    assert!(
        page.body.contains("We are sorry to read: The courier never came."),
        "the box starts from the draft: {}",
        page.body
    );
    let csrf = page.csrf();
    let decide = format!("/console/approvals/{}/decide", gate["id"].as_str().unwrap_or_default());
    let reply = "We are sorry: your parcel left our depot today.";
    let form = [("outcome", "approved"), ("comment", reply), ("csrf", csrf.as_str())];
    let decided = console.post(Some(&cookie), &decide, &form, console.origin()).await;
    assert_eq!(decided.status.as_u16(), 303, "{}", decided.body);

    // The reply is sent once, the task closes, and the instance waits a week.
    let waiting = until(&core, &reader, &id, |i| step(i, "week")["status"] == "open").await;
    assert_eq!(outbox(&sent), [("C-11".to_owned(), reply.to_owned())]);
    let review = step(&waiting, "review");
    assert_eq!(
        (review["output"]["status"].as_str(), review["output"]["approval"]["id"].as_str()),
        (Some("done"), gate["id"].as_str()),
        "{waiting}"
    );
    assert!(step(&waiting, "week")["wakeAt"].is_string(), "{waiting}");

    // A week later (the core's clock moved eight days): the timer fires within a second, the
    // follow-up is written once, on the process basis and the reviewer's decision.
    core.clock.advance(chrono::Duration::days(8));
    let done = until(&core, &reader, &id, |i| i["status"] == "completed").await;
    let written = outbox(&sent);
    assert_eq!(written.len(), 2, "{written:?}");
    assert!(written.contains(&("C-11".to_owned(), reply.to_owned())), "{written:?}");
    assert!(
        written.iter().any(|(claim, text)| claim == "C-11" && text.starts_with("A week ago we answered your claim.")),
        "{written:?}"
    );
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
    assert_eq!(basis["approvalId"], gate["id"], "it stands on the reviewer's decision: {call}");
    let decision = core.get(&reader, &format!("/approvals/{}", gate["id"].as_str().unwrap_or_default())).await;
    assert_eq!(basis["decidedBy"], decision.ok(200)["decidedBy"]);
    assert_eq!(follow_up["approvalId"], gate["id"]);
    assert!(call["idempotencyKey"].as_str().is_some_and(|key| key.starts_with("process:")), "{call}");

    // The console: the workspace's instances, the instance's steps as a timeline, and on the
    // task's page the process that made it.
    let (cookie, _) = console.sign_in(&reviewer).await;
    let listed = console.get(Some(&cookie), "/console/processes?workspace=claims").await;
    assert!(listed.body.contains("claim-handling@1") && listed.body.contains("message:m-11"), "{}", listed.body);
    let page = console.get(Some(&cookie), &format!("/console/processes/{id}")).await;
    let call_link = format!("/console/calls/{}", follow_up["invocationId"].as_str().unwrap_or_default());
    let task_link = format!("/console/tasks/{task_id}");
    for shown in ["follow-up", "week", "review", "completed", call_link.as_str(), task_link.as_str()] {
        assert!(page.body.contains(shown), "{shown}: {}", page.body);
    }
    assert!(!page.body.contains("Cancel the instance"), "an ended instance is not cancelled");
    let task_page = console.get(Some(&cookie), &task_link).await;
    assert!(task_page.body.contains(&format!("/console/processes/{id}")), "why it exists: {}", task_page.body);

    // Moving it again sends nothing more.
    assert_eq!(core.engine.run_processes(core.engine.now()).await.expect("moves nothing"), 0);
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(outbox(&sent).len(), 2);
    let kinds: Vec<String> =
        done["steps"].as_array().expect("steps").iter().map(|s| format!("{}:{}", s["step"], s["status"])).collect();
    let kinds: Vec<&str> = kinds.iter().map(String::as_str).collect();
    assert_eq!(
        kinds,
        [
            "\"classified\":\"done\"",
            "\"known\":\"done\"",
            "\"review\":\"done\"",
            "\"replied\":\"done\"",
            "\"week\":\"done\"",
            "\"follow-up\":\"done\"",
            "\"done\":\"done\""
        ]
    );
}

#[tokio::test]
async fn a_claim_is_handled_from_message_to_follow_up_on_sqlite() {
    story(core_serving(Backend::Sqlite, "processes", None, Default::default()).await, "processes-sqlite").await;
}

#[tokio::test]
async fn a_claim_is_handled_from_message_to_follow_up_on_postgres() {
    story(core_serving(Backend::Postgres, "processes", None, Default::default()).await, "processes-postgres").await;
}

/// A process that asks for a review, then writes on its decision: `decided-send`.
pub(crate) fn decided_send() -> Value {
    json!({"key": "decided-send", "spec": {"version": "1", "identity": {"agent": "claims-handling"},
        "steps": [
            {"id": "review", "task": {"type": "claim-reply@1", "title": "Review {{$.input.claim}}",
                                      "customFields": {"claim": "$.input.claim"}, "approval": {"comment": "Decide"}}},
            {"id": "send", "call": {"skill": "claim.send_reply@1", "decidedBy": "review",
                "input": {"claim": "$.steps.review.output.customFields.claim", "comment": "hello"}}}]}})
}

/// Starts `decided-send` for `claim` as `starter`; answers the instance and its review's task and
/// gate once made.
pub(crate) async fn review_of(core: &Core, starter: &str, claim: &str) -> (String, String, String) {
    let start = json!({"workspace": "claims", "key": claim, "input": {"claim": claim}});
    let started = core.post(starter, "/processes/decided-send:start", &start).await.ok(201).clone();
    let id = started["id"].as_str().expect("an id").to_owned();
    let made = until(core, starter, &id, |i| step(i, "review")["taskId"].is_string()).await;
    let task = step(&made, "review")["taskId"].as_str().expect("a task").to_owned();
    let gates = core.get(starter, &format!("/approvals?task={task}")).await.ok(200).clone();
    let gate = gates["items"][0]["id"].as_str().expect("a gate").to_owned();
    (id, task, gate)
}

/// The process basis is the core's alone and stands on a person's decision; a pending write
/// whose instance was cancelled or whose step closed before an executor took it is cancelled at
/// claim, and nothing is sent.
#[tokio::test]
async fn the_process_basis_holds_only_while_its_step_is_open() {
    let core = core_serving(Backend::Sqlite, "processes-basis", None, Default::default()).await;
    let root = apply_package(&core).await;
    core.post(&core.admin, "/processes", &decided_send()).await.ok(201);
    let clerk = token(&core.engine, "clerk", &["tasks.write@claims", "tasks.read@claims", "skills.invoke"]).await;
    let reviewer = token(
        &core.engine,
        "reviewer",
        &["tasks.write@claims", "tasks.read@claims", "approvals.decide@claims", "claims.reply@claims", "skills.invoke"],
    )
    .await;

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
    let installer = token(
        &core.engine,
        "basis-installer",
        &["org.manage", "claims.reply", "skills.invoke", "tasks.read@claims", "tasks.write@claims"],
    )
    .await;
    let agent = core.post(&installer, "/agents/claims-handling/tokens", &json!({})).await;
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

    // Two instances whose write, decided by the reviewer, waits for an executor (none runs yet:
    // the review's own outcome waits too, and its task is closed by hand): one is cancelled, the
    // other's step is closed (as when its instance moved on).
    let mut calls = Vec::new();
    let mut ids = Vec::new();
    for key in ["C-cancelled", "C-closed"] {
        let (id, task, gate) = review_of(&core, &clerk, key).await;
        core.post(&reviewer, &format!("/approvals/{gate}:decide"), &json!({"outcome": "approved", "comment": "ok"}))
            .await
            .ok(200);
        core.post(&clerk, &format!("/tasks/{task}:close"), &json!({"status": "done"})).await.ok(200);
        let pending = until(&core, &clerk, &id, |i| step(i, "send")["invocationId"].is_string()).await;
        let call = step(&pending, "send")["invocationId"].as_str().expect("a call").to_owned();
        let made = core.get(&core.admin, &format!("/skill-invocations/{call}")).await.ok(200).clone();
        assert_eq!(made["authorizationBasis"]["approvalId"].as_str(), Some(gate.as_str()), "{made}");
        calls.push(call);
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
        let last = ended_call(&core, call).await;
        assert_eq!(
            (last["status"].as_str(), last["error"]["code"].as_str(), last["error"]["message"].as_str()),
            (Some("cancelled"), Some("basis_revoked"), Some(reason)),
            "{last}"
        );
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(outbox(&sent).is_empty(), "nothing was written");
}

/// A process writes only what a person other than its starter decided: a write that reads what
/// the starter gave is refused at publication; a review its starter approved, or one closed
/// without an approved gate, makes no call (the database refuses such a basis too: the store's
/// conformance case).
#[tokio::test]
async fn a_process_writes_only_what_another_person_decided() {
    let core = core_serving(Backend::Sqlite, "processes-decided", None, Default::default()).await;
    let root = apply_package(&core).await;
    let sent = Scratch::new("processes-decided-outbox");
    let _executor = executor(&host(), &root, &runner(&core).await, &sent);
    core.post(&core.admin, "/processes", &decided_send()).await.ok(201);

    // Publication: a write with no decision, or reading what the starter gave, is refused.
    let mut undecided = decided_send();
    undecided["key"] = json!("undecided");
    undecided["spec"]["steps"][1]["call"].as_object_mut().expect("a call").remove("decidedBy");
    let mut starters = decided_send();
    starters["key"] = json!("starters-text");
    starters["spec"]["steps"][1]["call"]["input"]["comment"] = json!("$.input.text");
    let mut instance_key = decided_send();
    instance_key["key"] = json!("instance-key");
    instance_key["spec"]["steps"][1]["call"]["input"]["comment"] = json!("$.instance.key");
    let mut not_a_task = decided_send();
    not_a_task["key"] = json!("not-a-task");
    not_a_task["spec"]["steps"][1]["call"]["decidedBy"] = json!("send");
    for (body, path) in [
        (undecided, "spec.steps[1].call.decidedBy"),
        (starters, "spec.steps[1].call.input.comment"),
        (instance_key, "spec.steps[1].call.input.comment"),
        (not_a_task, "spec.steps[1].call.decidedBy"),
    ] {
        let refused = core.post(&core.admin, "/processes", &body).await;
        assert_eq!(
            (
                refused.status.as_u16(),
                refused.body["error"]["code"].as_str(),
                refused.body["error"]["details"]["path"].as_str()
            ),
            (422, Some("invalid_process"), Some(path)),
            "{}",
            refused.body
        );
    }

    // A lead who may decide starts an instance and approves its review: refused (they set it in
    // motion); the review closed without a second person's decision: no write.
    let lead = token(
        &core.engine,
        "lead",
        &["tasks.write@claims", "tasks.read@claims", "approvals.decide@claims", "claims.reply@claims", "skills.invoke"],
    )
    .await;
    let (own, own_task, gate) = review_of(&core, &lead, "C-own").await;
    let mine = core
        .post(&lead, &format!("/approvals/{gate}:decide"), &json!({"outcome": "approved", "comment": "mine"}))
        .await;
    assert_eq!((mine.status.as_u16(), mine.body["error"]["code"].as_str()), (403, Some("decider_is_initiator")));
    core.post(&lead, &format!("/tasks/{own_task}:close"), &json!({"status": "done"})).await.ok(200);
    let failed = until(&core, &lead, &own, |i| i["status"] == "failed").await;
    assert_eq!(
        (failed["error"]["code"].as_str(), step(&failed, "send")["invocationId"].as_str()),
        (Some("process_write_not_decided"), None),
        "{failed}"
    );
    // A review closed without an approved gate (its gate rejected): no write.
    let reviewer = token(
        &core.engine,
        "reviewer",
        &["tasks.write@claims", "tasks.read@claims", "approvals.decide@claims", "claims.reply@claims", "skills.invoke"],
    )
    .await;
    // (A rejection stands: a new gate asked for after it and approved decides nothing.)
    let (rejected, task, gate) = review_of(&core, &lead, "C-rejected").await;
    core.post(&reviewer, &format!("/approvals/{gate}:decide"), &json!({"outcome": "rejected"})).await.ok(200);
    let again = core.post(&lead, "/approvals", &json!({"taskId": task, "comment": "please"})).await.ok(201).clone();
    let again = again["id"].as_str().unwrap_or_default();
    core.post(&reviewer, &format!("/approvals/{again}:decide"), &json!({"outcome": "approved"})).await.ok(200);
    core.post(&lead, &format!("/tasks/{task}:close"), &json!({"status": "done"})).await.ok(200);
    let failed = until(&core, &lead, &rejected, |i| i["status"] == "failed").await;
    assert_eq!(failed["error"]["code"], "process_write_not_decided", "{failed}");
    // A review its reviewer approved: one write, on the decision.
    let (decided, _, gate) = review_of(&core, &lead, "C-decided").await;
    core.post(&reviewer, &format!("/approvals/{gate}:decide"), &json!({"outcome": "approved", "comment": "fine"}))
        .await
        .ok(200);
    let done = until(&core, &lead, &decided, |i| i["status"] == "completed").await;
    assert_eq!(step(&done, "send")["approvalId"].as_str(), Some(gate.as_str()));
    // One decision, one write: a process that loops back to its write makes it once.
    let mut looping = decided_send();
    looping["key"] = json!("decided-loop");
    looping["spec"]["steps"][1]["next"] = json!("send");
    core.post(&core.admin, "/processes", &looping).await.ok(201);
    let start = json!({"workspace": "claims", "key": "C-loop", "input": {"claim": "C-loop"}});
    let id =
        core.post(&lead, "/processes/decided-loop:start", &start).await.ok(201)["id"].as_str().expect("id").to_owned();
    let made = until(&core, &lead, &id, |i| step(i, "review")["taskId"].is_string()).await;
    let task = step(&made, "review")["taskId"].as_str().expect("a task").to_owned();
    let gates = core.get(&lead, &format!("/approvals?task={task}")).await.ok(200).clone();
    let gate_id = gates["items"][0]["id"].as_str().expect("a gate").to_owned();
    core.post(&reviewer, &format!("/approvals/{gate_id}:decide"), &json!({"outcome": "approved"})).await.ok(200);
    core.post(&lead, &format!("/tasks/{task}:close"), &json!({"status": "done"})).await.ok(200);
    let looped = until(&core, &lead, &id, |i| i["status"] == "failed").await;
    assert_eq!(looped["error"]["code"], "process_write_not_decided", "{looped}");
    let sends: Vec<&Value> = looped["steps"].as_array().into_iter().flatten().filter(|s| s["step"] == "send").collect();
    assert_eq!(sends.iter().filter(|s| s["invocationId"].is_string()).count(), 1, "{looped}");
    // A decision taken after its task closed is refused, whatever the order of the requests: the
    // close withdrew the pending gate.
    let (_, task, gate) = review_of(&core, &lead, "C-late").await;
    core.post(&lead, &format!("/tasks/{task}:close"), &json!({"status": "done"})).await.ok(200);
    let late = core.post(&reviewer, &format!("/approvals/{gate}:decide"), &json!({"outcome": "approved"})).await;
    assert_eq!((late.status.as_u16(), late.body["error"]["code"].as_str()), (409, Some("approval_not_pending")));
    // The person behind a chain is its starter: a task type that starts the process, its task
    // made by the lead, whose review the lead approves, writes nothing.
    let chained = json!({"key": "claim-decided", "version": "1", "customFields": {"claim": {"type": "string"}},
                         "process": {"process": "decided-send@1", "input": {"claim": "$.customFields.claim"}}});
    core.post(&core.admin, "/task-types", &chained).await.ok(201);
    let body = json!({"workspace": "claims", "taskType": "claim-decided@1", "title": "C-chain", "customFields": {"claim": "C-chain"}});
    let outer = core.post(&lead, "/tasks", &body).await.ok(201)["id"].as_str().expect("id").to_owned();
    let listed = core.get(&lead, "/process-instances?workspace=claims&process=decided-send").await.ok(200).clone();
    let inner = listed["items"].as_array().into_iter().flatten().find(|i| i["key"] == format!("task:{outer}"));
    let inner = inner.and_then(|i| i["id"].as_str()).expect("the instance the task started").to_owned();
    let made = until(&core, &lead, &inner, |i| step(i, "review")["taskId"].is_string()).await;
    let review = step(&made, "review")["taskId"].as_str().expect("a task").to_owned();
    let gates = core.get(&lead, &format!("/approvals?task={review}")).await.ok(200).clone();
    let gate_id = gates["items"][0]["id"].as_str().expect("a gate").to_owned();
    let mine = core.post(&lead, &format!("/approvals/{gate_id}:decide"), &json!({"outcome": "approved"})).await;
    assert_eq!((mine.status.as_u16(), mine.body["error"]["code"].as_str()), (403, Some("decider_is_initiator")));
    core.post(&lead, &format!("/tasks/{review}:close"), &json!({"status": "done"})).await.ok(200);
    let failed = until(&core, &lead, &inner, |i| i["status"] == "failed").await;
    assert_eq!(failed["error"]["code"], "process_write_not_decided", "{failed}");

    let written = outbox(&sent);
    assert!(written.contains(&("C-decided".to_owned(), "hello".to_owned())), "{written:?}");
    // (The review's own type sends its approved comment too: the process's write is "hello".)
    let process_writes = |of: &str| written.iter().filter(|(claim, text)| claim == of && text == "hello").count();
    assert_eq!(process_writes("C-loop"), 1, "{written:?}");
    assert_eq!((process_writes("C-chain"), process_writes("C-late")), (0, 0), "{written:?}");
    assert!(!written.iter().any(|(claim, text)| claim == "C-own" && text == "hello"), "{written:?}");
    assert_eq!(process_writes("C-rejected"), 0, "{written:?}");
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
            process(json!([{"id": "a", "call": {"skill": "claim.classify"}}]), "claims-handling"),
            "invalid_process",
            "spec.steps[0].call.skill",
        ),
        (
            process(json!([{"id": "a", "call": {"skill": "claim.nothing@1"}}]), "claims-handling"),
            "unknown_skill",
            "spec.steps[0].call.skill",
        ),
        (
            process(json!([{"id": "a", "call": {"skill": "claim.lookup@1"}}]), "claims-handling"),
            "skills_invoke_not_permitted",
            "spec.identity.agent",
        ),
        (
            process(json!([{"id": "a", "task": {"type": "claim-nothing@1", "title": "t"}}]), "claims-handling"),
            "unknown_reference",
            "spec.steps[0].task.type",
        ),
        (process(json!([{"id": "a", "wait": {"for": "1d"}}]), "nobody"), "unknown_reference", "spec.identity.agent"),
        (
            process(
                json!([{"id": "a", "switch": {"cases": [{"when": "fact.x", "next": "a"}], "default": "a"}}]),
                "claims-handling",
            ),
            "invalid_condition",
            "spec.steps[0].switch.cases[0].when",
        ),
        (
            process(json!([{"id": "a", "wait": {"for": "1d"}, "next": "b"}]), "claims-handling"),
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
        let refused =
            core.post(&clerk, "/processes/claim-handling:start", &json!({"workspace": "claims", "input": input})).await;
        assert_eq!((refused.status.as_u16(), refused.body["error"]["code"].as_str()), (status, Some("invalid_input")));
    }
    let bidi = core
        .post(
            &clerk,
            "/processes/claim-handling:start",
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
            "/processes/claim-handling:start",
            &json!({"workspace": "elsewhere", "input": {"claim": "C-1"}}),
        )
        .await;
    assert_eq!(
        (foreign.status.as_u16(), foreign.body["error"]["details"].get("agent")),
        (403, None),
        "the agent is named only to who may read the process: {}",
        foreign.body
    );
    let other_reader = token(&core.engine, "other-reader", &["tasks.write@elsewhere", "org.read"]).await;
    let named = core
        .post(
            &other_reader,
            "/processes/claim-handling:start",
            &json!({"workspace": "elsewhere", "input": {"claim": "C-1"}}),
        )
        .await;
    assert_eq!(
        (named.status.as_u16(), named.body["error"]["details"]["agent"].as_str()),
        (403, Some("claims-handling")),
        "{}",
        named.body
    );
    let none = core.get(&other_clerk, "/process-instances?workspace=elsewhere").await.ok(200).clone();
    assert_eq!(none["items"].as_array().map(Vec::len), Some(0), "nothing was started");
    let outsider = token(&core.engine, "outsider", &["facts.read@claims"]).await;
    let elsewhere =
        core.post(&outsider, "/processes/claim-handling:start", &json!({"workspace": "claims", "input": {}})).await;
    assert_eq!(elsewhere.status.as_u16(), 403);
    let started = core
        .post(&clerk, "/processes/claim-handling:start", &json!({"workspace": "claims", "input": {"claim": "C-1"}}))
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
        "on": {"kind": "claim.escalated"},
        "interpretation": {"skill": "claim.classify@1", "inputs": {"text": "$.fact.data.text"}},
        "ensureWork": [{"process": {"process": "claim-handling@1", "workKey": "claim:{{$.fact.data.claim}}",
                                     "input": {"claim": "$.fact.data.claim", "message": "$.fact.data.text",
                                               "escalated": true, "category": "$.interpretation.output.category"}}}]}});
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
            &json!({"fact": {"workspace": "claims", "kind": "claim.escalated",
              "key": "x", "data": {"claim": "C-40", "text": "Where is it?"}}}),
        )
        .await
        .ok(200)
        .clone();
    assert_eq!(
        (dry["processes"][0]["process"].as_str(), dry["processes"][0]["workKey"].as_str()),
        (Some("claim-handling@1"), Some("claim:C-40")),
        "{dry}"
    );

    let mailbox = token(&core.engine, "mailbox", &["facts.write@claims"]).await;
    let reader = token(&core.engine, "reader", &["facts.read@claims", "tasks.read@claims"]).await;
    let mut instances = Vec::new();
    for key in ["m-1", "m-2"] {
        let fact = json!({"workspace": "claims", "kind": "claim.escalated", "key": key,
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
        (instance["key"].as_str(), instance["input"]["claim"].as_str(), instance["input"]["escalated"].as_bool()),
        (Some("claim:C-40"), Some("C-40"), Some(true)),
        "{instance}"
    );
    assert!(instance["input"]["category"].is_string(), "the interpretation's output: {instance}");
    let listed = core.get(&reader, "/process-instances?workspace=claims&process=claim-handling").await.ok(200).clone();
    assert_eq!(listed["items"].as_array().map(Vec::len), Some(1), "{listed}");
}

/// A task type that names a process starts an instance with every task of it, in the task's
/// transaction (key `task:<id>`, input read from the task); the process must exist when the type
/// is published, and its agent may work where the task is made, or the task is refused.
#[tokio::test]
async fn a_task_type_starts_its_process_with_each_task() {
    let core = core_serving(Backend::Sqlite, "processes-task-type", None, Default::default()).await;
    apply_package(&core).await;
    let watch = json!({"key": "claim-watch", "spec": {"version": "1", "identity": {"agent": "claims-handling"},
        "steps": [{"id": "note", "set": {"claim": "$.input.claim"}}, {"id": "later", "wait": {"for": "1d"}}]}});
    core.post(&core.admin, "/processes", &watch).await.ok(201);
    let task_type = |process: &str| {
        json!({"key": "claim-watched", "version": "1", "customFields": {"claim": {"type": "string"}},
               "process": {"process": process, "input": {"claim": "$.customFields.claim", "task": "$.id"}}})
    };
    let unknown = core.post(&core.admin, "/task-types", &task_type("claim-nothing@1")).await;
    assert_eq!(
        (
            unknown.status.as_u16(),
            unknown.body["error"]["code"].as_str(),
            unknown.body["error"]["details"]["path"].as_str()
        ),
        (422, Some("unknown_reference"), Some("process.process")),
        "{}",
        unknown.body
    );
    let unpinned = core.post(&core.admin, "/task-types", &task_type("claim-watch")).await;
    assert_eq!(unpinned.status.as_u16(), 422, "{}", unpinned.body);
    core.post(&core.admin, "/task-types", &task_type("claim-watch@1")).await.ok(201);

    let clerk = token(&core.engine, "clerk", &["tasks.write@claims", "tasks.read@claims"]).await;
    let body = json!({"workspace": "claims", "taskType": "claim-watched@1", "title": "Watch C-5",
                      "customFields": {"claim": "C-5"}});
    let task = core.post(&clerk, "/tasks", &body).await.ok(201)["id"].as_str().expect("an id").to_owned();
    let listed = core.get(&clerk, "/process-instances?workspace=claims&process=claim-watch").await.ok(200).clone();
    let instance = &listed["items"][0];
    assert_eq!(
        (instance["key"].as_str(), instance["input"]["claim"].as_str(), instance["input"]["task"].as_str()),
        (Some(format!("task:{task}").as_str()), Some("C-5"), Some(task.as_str())),
        "{listed}"
    );
    let id = instance["id"].as_str().expect("an id").to_owned();
    let waiting = until(&core, &clerk, &id, |i| step(i, "later")["status"] == "open").await;
    assert_eq!(waiting["vars"]["claim"], "C-5", "{waiting}");

    // Where the process's agent may not work, the task is refused and nothing is written.
    crate::claims::ensure_workspace(&core, "elsewhere").await;
    let other = token(&core.engine, "other-clerk", &["tasks.write@elsewhere", "tasks.read@elsewhere"]).await;
    let mut elsewhere = body.clone();
    elsewhere["workspace"] = json!("elsewhere");
    let refused = core.post(&other, "/tasks", &elsewhere).await;
    assert_eq!(
        (refused.status.as_u16(), refused.body["error"]["details"]["reason"].as_str()),
        (403, Some("the process's agent may not work in this workspace")),
        "{}",
        refused.body
    );
    assert!(refused.body["error"]["details"].get("agent").is_none(), "named only to who reads processes");
    let none = core.get(&other, "/tasks?workspace=elsewhere").await.ok(200).clone();
    assert_eq!(none["items"].as_array().map(Vec::len), Some(0), "no task: {none}");

    // A task type and a process that start each other stop after eight in a row.
    let installer = token(
        &core.engine,
        "chain-installer",
        &["org.manage", "claims.reply", "skills.invoke", "tasks.read@claims", "tasks.write@claims"],
    )
    .await;
    let apply = json!({"package": {"key": "chain", "version": "1"}, "installHash": "f".repeat(64), "objects": [],
        "taskTypes": [{"key": "again", "version": "1", "process": {"process": "again-process@1", "input": {"task": "$.id"}}}],
        "processes": [{"key": "again-process", "spec": {"version": "1", "identity": {"agent": "claims-handling"},
            "steps": [{"id": "a", "task": {"type": "again@1", "title": "again"}}]}}]});
    let applied = core.post(&installer, "/packages:apply", &apply).await;
    assert!(applied.status.is_success(), "{}", applied.body);
    core.post(&clerk, "/tasks", &json!({"workspace": "claims", "taskType": "again@1", "title": "seed"})).await.ok(201);
    let mut last = Value::Null;
    for _ in 0..200 {
        last = core
            .get(&clerk, "/process-instances?workspace=claims&process=again-process&limit=200")
            .await
            .ok(200)
            .clone();
        if last["items"].as_array().into_iter().flatten().any(|i| i["status"] == "failed") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let items = last["items"].as_array().cloned().unwrap_or_default();
    let failed: Vec<&Value> = items.iter().filter(|i| i["status"] == "failed").collect();
    assert_eq!(failed.len(), 1, "{last}");
    assert_eq!(failed[0]["error"]["code"], "process_loop_suspected", "{last}");
    tokio::time::sleep(Duration::from_millis(500)).await;
    let after =
        core.get(&clerk, "/process-instances?workspace=claims&process=again-process&limit=200").await.ok(200).clone();
    assert_eq!(after["items"].as_array().map(Vec::len), Some(items.len()), "no more: {after}");
    assert!(items.len() <= 9, "{} instances", items.len());
}

/// Cancelling an instance cancels the task it waits for (no decision is taken on it after); a
/// call step's retries wait longer each time (the backoff, doubled), each a new call with its
/// own key; an instance's steps are read a page at a time.
#[tokio::test]
async fn cancelling_closes_the_task_and_retries_back_off() {
    let core = core_serving(Backend::Sqlite, "processes-cancel-retry", None, Default::default()).await;
    let root = apply_package(&core).await;
    core.post(&core.admin, "/processes", &decided_send()).await.ok(201);
    let clerk = token(&core.engine, "clerk", &["tasks.write@claims", "tasks.read@claims", "skills.invoke"]).await;
    let reviewer = token(
        &core.engine,
        "reviewer",
        &["tasks.write@claims", "tasks.read@claims", "approvals.decide@claims", "claims.reply@claims"],
    )
    .await;
    let (id, task, gate) = review_of(&core, &clerk, "C-gone").await;
    let cancelled =
        core.post(&clerk, &format!("/process-instances/{id}:cancel"), &json!({"reason": "withdrawn"})).await;
    assert_eq!(cancelled.ok(200)["status"], "cancelled");
    let closed = core.get(&clerk, &format!("/tasks/{task}")).await.ok(200).clone();
    assert_eq!(
        (closed["status"].as_str(), closed["closeReason"].as_str()),
        (Some("cancelled"), Some("process_cancelled")),
        "{closed}"
    );
    // Its gate went with it: withdrawn by the core, so no one decides it.
    assert_eq!(core.get(&reviewer, &format!("/approvals/{gate}")).await.ok(200)["status"], "withdrawn");
    let late = core.post(&reviewer, &format!("/approvals/{gate}:decide"), &json!({"outcome": "approved"})).await;
    assert_eq!(
        (late.status.as_u16(), late.body["error"]["code"].as_str()),
        (409, Some("approval_not_pending")),
        "{}",
        late.body
    );

    // A draft with no model: every call fails (llm_not_configured); three attempts, 10 s, then 20 s apart.
    let retrying = json!({"key": "retrying", "spec": {"version": "1", "identity": {"agent": "claims-handling"},
        "steps": [{"id": "draft", "call": {"skill": "claim.draft_reply@1", "input": {"claim": "$.input.claim"},
                                           "retry": {"attempts": 3, "backoff": "10s"}}}]}});
    core.post(&core.admin, "/processes", &retrying).await.ok(201);
    let sent = Scratch::new("processes-retry-outbox");
    let _executor: Child = executor(&host(), &root, &runner(&core).await, &sent);
    let start = json!({"workspace": "claims", "key": "R-1", "input": {"claim": "late again"}});
    let started = core.post(&clerk, "/processes/retrying:start", &start).await.ok(201).clone();
    let id = started["id"].as_str().expect("an id").to_owned();
    let runs = |instance: &Value| instance["steps"].as_array().map_or(0, Vec::len);
    let time = |value: &Value| chrono::DateTime::parse_from_rfc3339(value.as_str().expect("a time")).expect("RFC 3339");
    let mut keys = Vec::new();
    for (attempt, backoff) in [(1, 10), (2, 20)] {
        let waiting = until(&core, &clerk, &id, |i| runs(i) == attempt + 1).await;
        let failed = &waiting["steps"][attempt - 1];
        assert_eq!(
            (failed["status"].as_str(), failed["error"]["code"].as_str()),
            (Some("failed"), Some("llm_not_configured"))
        );
        let again = &waiting["steps"][attempt];
        assert_eq!((again["attempt"].as_u64(), again["invocationId"].as_str()), (Some(attempt as u64 + 1), None));
        let waited = time(&again["wakeAt"]) - time(&failed["endedAt"]);
        assert_eq!(waited.num_seconds(), backoff, "{waiting}");
        assert_eq!(waiting["wakeAt"], again["wakeAt"], "the instance looks again then");
        let call = core
            .get(&core.admin, &format!("/skill-invocations/{}", failed["invocationId"].as_str().unwrap_or_default()))
            .await;
        keys.push(call.ok(200)["idempotencyKey"].as_str().expect("a key").to_owned());
        tokio::time::sleep(Duration::from_millis(300)).await;
        let still = core.get(&clerk, &format!("/process-instances/{id}")).await.ok(200).clone();
        assert!(still["steps"][attempt]["invocationId"].is_null(), "no call before its time: {still}");
        core.clock.advance(chrono::Duration::seconds(backoff));
    }
    let failed = until(&core, &clerk, &id, |i| i["status"] == "failed").await;
    assert_eq!((runs(&failed), failed["error"]["code"].as_str()), (3, Some("process_step_failed")), "{failed}");
    let first = failed["steps"][0]["id"].as_str().expect("an id");
    assert_eq!(keys, [format!("process:{first}"), format!("process:{first}:retry-1")]);

    // The steps a page at a time.
    let page = core.get(&clerk, &format!("/process-instances/{id}?stepsLimit=2")).await.ok(200).clone();
    assert_eq!((runs(&page), page["stepsNext"].as_i64()), (2, Some(2)), "{page}");
    let rest = core.get(&clerk, &format!("/process-instances/{id}?stepsAfter=2&stepsLimit=2")).await.ok(200).clone();
    assert_eq!(
        (runs(&rest), rest["steps"][0]["attempt"].as_i64(), rest.get("stepsNext")),
        (1, Some(3), None),
        "{rest}"
    );
    for (query, field) in
        [("stepsLimit=0", "stepsLimit"), ("stepsAfter=-1", "stepsAfter"), ("stepsLimit=abc", "stepsLimit")]
    {
        let refused = core.get(&clerk, &format!("/process-instances/{id}?{query}")).await;
        assert_eq!(
            (refused.status.as_u16(), refused.body["error"]["details"]["field"].as_str()),
            (400, Some(field)),
            "{query}: {}",
            refused.body
        );
    }

    // Retries due at once that loop back through onFailure are a loop like any other: the
    // instance fails after 1,000 steps without a wait, it does not run hot.
    let looping = json!({"key": "looping", "spec": {"version": "1", "identity": {"agent": "claims-handling"},
        "steps": [{"id": "c", "call": {"skill": "claim.classify@1", "input": {"text": 123},
                                       "retry": {"attempts": 10, "backoff": "0s"}, "onFailure": "c"}}]}});
    core.post(&core.admin, "/processes", &looping).await.ok(201);
    let start = json!({"workspace": "claims", "key": "L-1", "input": {}});
    let started = core.post(&clerk, "/processes/looping:start", &start).await.ok(201).clone();
    let id = started["id"].as_str().expect("an id").to_owned();
    let ended = until(&core, &clerk, &id, |i| i["status"] != "running").await;
    assert_eq!(
        (ended["status"].as_str(), ended["error"]["code"].as_str()),
        (Some("failed"), Some("process_loop_suspected")),
        "{}",
        ended["error"]
    );
    let last = core.get(&clerk, &format!("/process-instances/{id}?stepsAfter=990")).await.ok(200).clone();
    let runs = last["steps"].as_array().map_or(0, Vec::len) + 990;
    assert!(runs <= 1001, "it stopped at the guard, not later: {runs} step runs");
}
