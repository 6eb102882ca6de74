//! Facts and work rules through the real core and the claims package's host as its executor: a
//! customer's message arrives as a fact, the claim-intake rule has it classified and starts one
//! claim-handling process for it, which opens the reply task — once, however often the fact is
//! sent and however many cores evaluate; a rule that ensures a task makes it with the fact as
//! its origin and the classification as its evidence; what a rule may not be is refused at every
//! door; the dry run and the loop guard.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use skill_fixtures::Scratch;

use crate::api::token;
use crate::calls::{Backend, Core, core_serving};
use crate::claims::{Child, apply_package, executor, host};

/// The package applied, its executor running: `(core, executor, reader)`; the reader reads facts
/// and tasks of the claims workspace.
async fn intake(core: &Core, label: &str) -> (Child, String, Scratch) {
    let root = apply_package(core).await;
    let installer = token(&core.engine, "intake-installer", &["org.manage", "skills.execute"]).await;
    let issued = core.post(&installer, "/agents/claims-skills/tokens", &json!({})).await;
    let runner = issued.ok(201)["token"].as_str().expect("a token").to_owned();
    let outbox = Scratch::new(&format!("{label}-outbox"));
    let child = executor(&host(), &root, &runner, &outbox);
    let reader = token(&core.engine, "reader", &["facts.read@claims", "tasks.read@claims"]).await;
    (child, reader, outbox)
}

/// `GET /facts/{id}` until the rules are done with it (every evaluation ended).
async fn settled(core: &Core, reader: &str, id: &str) -> Value {
    for _ in 0..300 {
        let fact = core.get(reader, &format!("/facts/{id}")).await.ok(200).clone();
        let open = fact["evaluations"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|e| matches!(e["status"].as_str(), Some("matched" | "waiting")));
        if fact["evaluatedAt"].is_string() && !open {
            return fact;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("the fact {id} was never settled");
}

fn message(key: &str, claim: &str, text: &str) -> Value {
    json!({"workspace": "claims", "kind": "claim.received", "key": key, "source": "email",
           "data": {"claim": claim, "text": text}})
}

async fn story(core: Core, label: &str) {
    let (_executor, reader, _outbox) = intake(&core, label).await;
    let mailbox = token(&core.engine, "mailbox", &["facts.write@claims"]).await;

    // A customer's message becomes one reply task, classified, with the fact as its origin.
    let first = core.post(&mailbox, "/facts", &message("m-1", "C-7", "The courier never came.")).await;
    let first = first.ok(201).clone();
    let fact = settled(&core, &reader, first["id"].as_str().expect("an id")).await;
    let evaluation = &fact["evaluations"][0];
    assert_eq!(
        (evaluation["rule"].as_str(), evaluation["status"].as_str()),
        (Some("claim-intake@1"), Some("done")),
        "{fact}"
    );
    assert_eq!(evaluation["taskIds"], json!([]), "{fact}");
    let instance = evaluation["instanceIds"][0].as_str().expect("an instance").to_owned();
    // The process opens the reply task, with the rule's classification.
    let mut started = Value::Null;
    for _ in 0..300 {
        started = core.get(&reader, &format!("/process-instances/{instance}")).await.ok(200).clone();
        let review = started["steps"].as_array().into_iter().flatten().find(|s| s["step"] == "review");
        if review.is_some_and(|r| r["taskId"].is_string()) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!((started["process"].as_str(), started["key"].as_str()), (Some("claim-handling@1"), Some("message:m-1")));
    let review = started["steps"].as_array().into_iter().flatten().find(|s| s["step"] == "review").cloned();
    let task_id = review.and_then(|r| r["taskId"].as_str().map(str::to_owned)).expect("the review's task");
    let task = core.get(&reader, &format!("/tasks/{task_id}")).await.ok(200).clone();
    assert_eq!(task["title"], "Claim C-7: delivery", "{task}");
    assert_eq!(task["customFields"], json!({"claim": "C-7", "message": "The courier never came."}));
    // The interpretation's call was the rule's, as its agent, keyed by rule and fact.
    let call = core
        .get(&core.admin, &format!("/skill-invocations/{}", evaluation["invocationId"].as_str().unwrap_or_default()))
        .await;
    let call = call.ok(200).clone();
    assert_eq!(
        (call["requestedBy"]["kind"].as_str(), call["status"].as_str()),
        (Some("rule"), Some("succeeded")),
        "{call}"
    );
    assert!(call["idempotencyKey"].as_str().is_some_and(|key| key.starts_with("rule:")), "{call}");
    // Its result is kept as evidence in the workspace (no task of the rule's to hold it).
    let artifact = evaluation["artifactId"].as_str().expect("evidence");
    let evidence = core.get(&reader, &format!("/artifacts/{artifact}")).await.ok(200).clone();
    assert_eq!((evidence["type"].as_str(), evidence["taskId"].as_str()), (Some("skill_result"), None), "{evidence}");

    // The console: the workspace's facts, the fact's page with what the rule made of it, and on
    // the task's page the process it belongs to.
    let console = crate::console::Console::new(&core);
    let (cookie, _) = console.sign_in(&reader).await;
    let listed = console.get(Some(&cookie), "/console/facts?workspace=claims").await;
    assert!(listed.body.contains("claim.received") && listed.body.contains("m-1"), "{}", listed.body);
    let fact_id = first["id"].as_str().unwrap_or_default();
    let page = console.get(Some(&cookie), &format!("/console/facts/{fact_id}")).await;
    assert!(page.body.contains("claim-intake@1") && page.body.contains("The courier never came."), "{}", page.body);
    let page = console.get(Some(&cookie), &format!("/console/tasks/{task_id}")).await;
    assert!(
        page.body.contains("The process it belongs to")
            && page.body.contains(&format!("/console/processes/{instance}")),
        "{}",
        page.body
    );

    // The same fact again is the same fact; other data under its key is refused.
    let again = core.post(&mailbox, "/facts", &message("m-1", "C-7", "The courier never came.")).await;
    assert_eq!(again.ok(200)["id"], first["id"]);
    let other = core.post(&mailbox, "/facts", &message("m-1", "C-7", "Something else.")).await;
    assert_eq!((other.status.as_u16(), other.body["error"]["code"].as_str()), (409, Some("fact_conflict")));

    // Thirty messages while a second core evaluates the same database at once: each is
    // evaluated once, and starts one instance.
    let store = skill_store::open(&core.target, &Default::default()).await.expect("the same database");
    let second = skill_engine::Engine::new(store)
        .with_blobs(Arc::new(skill_store::FolderBlobs::new(core.folder().join("blobs"))));
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let racing = {
        let (second, stop) = (second.clone(), Arc::clone(&stop));
        tokio::spawn(async move {
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                second.run_rule_evaluations(chrono::Utc::now()).await.expect("the second core evaluates");
                tokio::time::sleep(Duration::from_millis(2)).await;
            }
        })
    };
    let mut ids = Vec::new();
    for n in 0..30 {
        let sent = core
            .post(&mailbox, "/facts", &message(&format!("m-{}", n + 2), &format!("C-{n}"), "My parcel is late."))
            .await;
        ids.push(sent.ok(201)["id"].as_str().expect("an id").to_owned());
        // And each sent twice.
        core.post(&mailbox, "/facts", &message(&format!("m-{}", n + 2), &format!("C-{n}"), "My parcel is late."))
            .await
            .ok(200);
    }
    for id in &ids {
        let fact = settled(&core, &reader, id).await;
        let evaluations = fact["evaluations"].as_array().expect("evaluations");
        assert_eq!(evaluations.len(), 1, "one evaluation per rule: {fact}");
        assert_eq!(evaluations[0]["status"], "done", "{fact}");
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    racing.await.expect("the second core stopped");
    let listed = core.get(&reader, "/process-instances?workspace=claims&limit=200").await.ok(200).clone();
    let keys: Vec<&str> = listed["items"].as_array().expect("items").iter().filter_map(|t| t["key"].as_str()).collect();
    assert_eq!(keys.len(), 31, "one instance per message: {keys:?}");
    let events = core.get(&core.admin, "/events?limit=1000").await.ok(200).clone();
    let evaluated = events["items"].as_array().into_iter().flatten().filter(|e| e["kind"] == "rule.evaluated").count();
    assert_eq!(evaluated, 31, "one evaluation per fact, journaled once");
}

#[tokio::test]
async fn a_customers_message_starts_one_claim_handling_on_sqlite() {
    story(core_serving(Backend::Sqlite, "rules", None, Default::default()).await, "rules-sqlite").await;
}

#[tokio::test]
async fn a_customers_message_starts_one_claim_handling_on_postgres() {
    story(core_serving(Backend::Postgres, "rules", None, Default::default()).await, "rules-postgres").await;
}

/// What a rule may not be is refused with its code and path, writing nothing; a fact is checked
/// as it arrives; the dry run says what a rule would make of a fact; a fact from work that rules
/// made more than eight times in a row stops its evaluation.
#[tokio::test]
async fn rules_and_facts_keep_to_their_rules() {
    let core = core_serving(Backend::Sqlite, "rules-refusals", None, Default::default()).await;
    let (_executor, reader, _outbox) = intake(&core, "rules-refusals").await;
    let rule = |interpretation: Value, when: &str, task_type: &str, agent: &str| {
        json!({"key": "audit", "spec": {"version": "1", "identity": {"agent": agent},
               "on": {"kind": "claim.received", "when": when}, "interpretation": interpretation,
               "ensureWork": [{"task": {"type": task_type, "workKey": "$.fact.key", "title": "Audit"}}]}})
    };
    let classify = json!({"skill": "claim.classify@1", "inputs": {"text": "$.fact.data.text"}});
    let cases = [
        (
            rule(json!({"skill": "claim.send_reply@1"}), "true", "claim-reply@1", "claims-intake"),
            "rule_skill_side_effects",
            "spec.interpretation.skill",
        ),
        (
            rule(json!({"skill": "claim.classify"}), "true", "claim-reply@1", "claims-intake"),
            "invalid_rule_interpretation",
            "spec.interpretation.skill",
        ),
        (
            rule(json!({"skill": "claim.classify@9"}), "true", "claim-reply@1", "claims-intake"),
            "unknown_skill",
            "spec.interpretation.skill",
        ),
        (
            rule(classify.clone(), "true", "claim-audit@1", "claims-intake"),
            "unknown_reference",
            "spec.ensureWork[0].task.type",
        ),
        (rule(classify.clone(), "true", "claim-reply@1", "nobody"), "unknown_reference", "spec.identity.agent"),
        (rule(classify.clone(), "true", "claim-reply@1", "claims-skills"), "invalid_rule", "spec.identity.agent"),
        (
            rule(classify.clone(), "fact.data.amount >", "claim-reply@1", "claims-intake"),
            "invalid_condition",
            "spec.on.when",
        ),
        (
            rule(classify.clone(), "facts.size() > 0", "claim-reply@1", "claims-intake"),
            "invalid_condition",
            "spec.on.when",
        ),
        (
            rule(json!({"skill": "claim.lookup@1"}), "true", "claim-reply@1", "claims-intake"),
            "skills_invoke_not_permitted",
            "spec.identity.agent",
        ),
    ];
    for (body, code, path) in cases {
        let answer = core.post(&core.admin, "/rules", &body).await;
        assert_eq!(
            (answer.body["error"]["code"].as_str(), answer.body["error"]["details"]["path"].as_str()),
            (Some(code), Some(path)),
            "{}",
            answer.body
        );
    }
    // Through a package's apply too (the core's check, whatever the installer's tooling did).
    let writes = rule(json!({"skill": "claim.send_reply@1"}), "true", "claim-reply@1", "claims-intake");
    let apply = json!({"package": {"key": "audits", "version": "1"}, "installHash": "d".repeat(64),
                       "objects": [], "rules": [writes]});
    let answer = core.post(&core.admin, "/packages:apply", &apply).await;
    assert_eq!(
        (answer.body["error"]["code"].as_str(), answer.body["error"]["details"]["item"].as_str()),
        (Some("rule_skill_side_effects"), Some("rules[0]")),
        "{}",
        answer.body
    );
    // What would exhaust the core: brackets nested deeper than 24, a macro inside another's body.
    let deep = format!("{}true{}", "(".repeat(30), ")".repeat(30));
    let nested = "fact.data.items.exists(i, fact.data.items.exists(j, i != j && i == j))";
    for when in [deep.as_str(), nested] {
        let answer =
            core.post(&core.admin, "/rules", &rule(classify.clone(), when, "claim-reply@1", "claims-intake")).await;
        assert_eq!(answer.body["error"]["code"], "invalid_condition", "{when}: {}", answer.body);
    }
    let bad = core
        .post(&core.admin, "/rules", &rule(classify.clone(), "1 +\n  + 2 >", "claim-reply@1", "claims-intake"))
        .await;
    assert!(bad.body["error"]["details"]["line"].as_u64().is_some_and(|line| line >= 1), "{}", bad.body);
    assert!(bad.body["error"]["details"]["column"].as_u64().is_some_and(|column| column >= 1), "{}", bad.body);
    let listed = core.get(&core.admin, "/rules").await.ok(200).clone();
    assert_eq!(listed["items"].as_array().map(Vec::len), Some(1), "only the package's rule: {listed}");

    // A fact is checked as it arrives.
    let mailbox = token(&core.engine, "mailbox", &["facts.write@claims", "tasks.read@claims"]).await;
    crate::claims::ensure_workspace(&core, "elsewhere").await;
    let stranger = token(&core.engine, "stranger", &["facts.write@elsewhere"]).await;
    let send = |body: Value| {
        let core = &core;
        let mailbox = mailbox.clone();
        async move { core.post(&mailbox, "/facts", &body).await }
    };
    let refused = send(json!({"workspace": "claims", "kind": "Claim Received", "key": "k", "data": {}})).await;
    assert_eq!((refused.status.as_u16(), refused.body["error"]["details"]["field"].as_str()), (422, Some("kind")));
    let refused = send(json!({"workspace": "claims", "kind": "claim.received", "key": "a\u{7}b", "data": {}})).await;
    assert_eq!(refused.body["error"]["details"]["field"], "key");
    let refused = send(
        json!({"workspace": "claims", "kind": "claim.received", "key": "k", "data": {}, "occurredAt": "yesterday"}),
    )
    .await;
    assert_eq!(refused.body["error"]["details"]["field"], "occurredAt");
    let big = "x".repeat(300 * 1024);
    let refused =
        send(json!({"workspace": "claims", "kind": "claim.received", "key": "k", "data": {"text": big}})).await;
    assert_eq!((refused.status.as_u16(), refused.body["error"]["code"].as_str()), (413, Some("fact_too_large")));
    let refused = core.post(&stranger, "/facts", &message("k", "C-1", "hi")).await;
    assert_eq!(refused.status.as_u16(), 403);
    let none = core.get(&reader, "/facts?workspace=claims").await.ok(200).clone();
    assert_eq!(none["items"], json!([]), "nothing refused was recorded");
    // The keys of the core's own calls are its alone.
    let squat = json!({"inputs": {"text": "x"}, "idempotencyKey": "rule:anything:else"});
    let answer = core.post(&core.caller, "/skills/claim.classify@1:invoke", &squat).await;
    assert_eq!(answer.body["error"]["code"], "invalid_idempotency_key", "{}", answer.body);
    // A fact of a workspace the rule's agent does not work in is not for the rule: nothing of it
    // reaches the agent.
    let elsewhere = json!({"workspace": "elsewhere", "kind": "claim.received", "key": "secret-1",
                           "data": {"claim": "C-1", "text": "Not for the claims desk."}});
    let sent = core.post(&stranger, "/facts", &elsewhere).await.ok(201).clone();
    let admin_reads = token(&core.engine, "auditor", &["facts.read"]).await;
    let fact = settled(&core, &admin_reads, sent["id"].as_str().unwrap_or_default()).await;
    assert_eq!(fact["evaluations"], json!([]), "{fact}");
    // Nor does a reader of the claims workspace read it.
    let hidden = core.get(&reader, &format!("/facts/{}", sent["id"].as_str().unwrap_or_default())).await;
    assert_eq!(hidden.status.as_u16(), 404);
    // The same fact sent eight times at once is one fact, recorded once.
    let same = message("burst-1", "C-3", "Sent at once.");
    let sends = (0..8).map(|_| core.post(&mailbox, "/facts", &same));
    let answers = futures::future::join_all(sends).await;
    let created = answers.iter().filter(|answer| answer.status.as_u16() == 201).count();
    let ids: std::collections::BTreeSet<String> =
        answers.iter().map(|answer| answer.body["id"].as_str().unwrap_or_default().to_owned()).collect();
    assert!(answers.iter().all(|answer| matches!(answer.status.as_u16(), 200 | 201)), "every send answered");
    assert_eq!((created, ids.len()), (1, 1), "one recorded, the others answered with it");
    // Settled first, so the snapshot below is not changed by the rules' own worker.
    settled(&core, &reader, ids.iter().next().map(String::as_str).unwrap_or_default()).await;
    // The dry run is for who reads the organisation's rules.
    let refused = core
        .post(
            &mailbox,
            "/rules/claim-intake:evaluate",
            &json!({"fact": {"workspace": "claims", "kind": "k", "data": {}}}),
        )
        .await;
    assert_eq!(refused.status.as_u16(), 403);
    // A cursor of another workspace is no cursor of this listing.
    let crossed =
        core.get(&reader, &format!("/facts?workspace=claims&cursor={}", sent["id"].as_str().unwrap_or_default())).await;
    assert_eq!(crossed.status.as_u16(), 400);

    // The dry run writes nothing.
    let before = core.get(&reader, "/facts?workspace=claims").await.ok(200).clone();
    let dry = json!({"fact": {"workspace": "claims", "kind": "claim.received", "key": "x", "data": {"claim": "C-9", "text": "Broken vase"}}});
    let answer = core.post(&core.admin, "/rules/claim-intake:evaluate", &dry).await.ok(200).clone();
    assert_eq!(
        (answer["matched"].as_bool(), answer["condition"]["value"].as_bool()),
        (Some(true), Some(true)),
        "{answer}"
    );
    assert_eq!(answer["call"]["inputs"], json!({"text": "Broken vase"}));
    assert_eq!(
        (answer["processes"][0]["process"].as_str(), answer["processes"][0]["workKey"].as_str()),
        (Some("claim-handling@1"), Some("message:x")),
        "{answer}"
    );
    let unmatched = json!({"fact": {"workspace": "claims", "kind": "claim.received", "data": {"text": "no claim"}}});
    let answer = core.post(&core.admin, "/rules/claim-intake@1:evaluate", &unmatched).await.ok(200).clone();
    assert_eq!((answer["matched"].as_bool(), answer["call"].is_null()), (Some(false), true), "{answer}");
    let none = core.get(&reader, "/facts?workspace=claims").await.ok(200).clone();
    assert_eq!(none, before, "the dry run wrote nothing");

    // A rule without interpretation on `loop.step` facts: each fact produced by the last one's
    // task; past eight in a row the evaluation stops.
    let looping = json!({"key": "loop", "spec": {"version": "1", "identity": {"agent": "claims-intake"},
        "on": {"kind": "loop.step"},
        "ensureWork": [{"task": {"type": "claim-reply@1", "workKey": "loop:{{$.fact.key}}", "title": "Step {{$.fact.key}}",
                                 "customFields": {"claim": "$.fact.key", "message": "$.fact.key"}}}]}});
    core.post(&core.admin, "/rules", &looping).await.ok(201);
    let again = core.post(&core.admin, "/rules", &looping).await;
    assert_eq!((again.status.as_u16(), again.body["error"]["code"].as_str()), (409, Some("rule_exists")));
    let mut cause: Option<String> = None;
    let mut last = Value::Null;
    for step in 0..10 {
        let mut body = json!({"workspace": "claims", "kind": "loop.step", "key": format!("s{step}"), "data": {}});
        if let Some(task) = &cause {
            body["causedByTask"] = json!(task);
        }
        let sent = core.post(&mailbox, "/facts", &body).await.ok(201).clone();
        assert_eq!(sent["depth"], step, "{sent}");
        last = settled(&core, &reader, sent["id"].as_str().unwrap_or_default()).await;
        cause = last["evaluations"][0]["taskIds"][0].as_str().map(str::to_owned);
        if step == 0 {
            // A task a rule made says why it exists: the fact, on its page.
            let console = crate::console::Console::new(&core);
            let (cookie, _) = console.sign_in(&reader).await;
            let page =
                console.get(Some(&cookie), &format!("/console/tasks/{}", cause.clone().unwrap_or_default())).await;
            let fact = sent["id"].as_str().unwrap_or_default();
            assert!(
                page.body.contains("Why it exists") && page.body.contains(&format!("/console/facts/{fact}")),
                "{}",
                page.body
            );
        }
    }
    let stopped = &last["evaluations"][0];
    assert_eq!(
        (stopped["status"].as_str(), stopped["error"]["code"].as_str()),
        (Some("failed"), Some("rule_loop_suspected")),
        "{last}"
    );
}

/// An interpretation that no executor takes: after 24 hours its call is cancelled and the
/// evaluation expires (`rule_skill_wait_expired`); no work is made.
#[tokio::test]
async fn an_interpretation_that_never_ends_expires() {
    let core = core_serving(Backend::Sqlite, "rules-expiry", None, Default::default()).await;
    apply_package(&core).await;
    let mailbox = token(&core.engine, "mailbox", &["facts.write@claims"]).await;
    let reader = token(&core.engine, "reader", &["facts.read@claims", "tasks.read@claims"]).await;
    let sent = core.post(&mailbox, "/facts", &message("late-1", "C-5", "Nobody runs this.")).await.ok(201).clone();
    let id = sent["id"].as_str().unwrap_or_default().to_owned();
    let mut waiting = Value::Null;
    for _ in 0..200 {
        waiting = core.get(&reader, &format!("/facts/{id}")).await.ok(200).clone();
        if waiting["evaluations"][0]["status"] == "waiting" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(waiting["evaluations"][0]["status"], "waiting", "{waiting}");
    // A day later, nothing has run it.
    let later = chrono::Utc::now() + chrono::Duration::hours(25);
    core.engine.run_rule_evaluations(later).await.expect("a pass");
    let expired = core.get(&reader, &format!("/facts/{id}")).await.ok(200).clone();
    let evaluation = &expired["evaluations"][0];
    assert_eq!(
        (evaluation["status"].as_str(), evaluation["error"]["code"].as_str()),
        (Some("expired"), Some("rule_skill_wait_expired")),
        "{expired}"
    );
    assert_eq!(evaluation["taskIds"], json!([]));
    let call = core
        .get(&core.admin, &format!("/skill-invocations/{}", evaluation["invocationId"].as_str().unwrap_or_default()))
        .await;
    assert_eq!(call.ok(200)["status"], "cancelled");
    let tasks = core.get(&reader, "/tasks?workspace=claims").await.ok(200).clone();
    assert_eq!(tasks["items"], json!([]), "no work");
}

/// A condition too costly for its fact — a large list joined to itself again and again, or
/// copied or read whole at every step of a loop over it — is refused before it runs: each
/// evaluation fails with `rule_condition_too_costly` at once and makes no work, while a condition
/// that goes over the same list once has its value.
#[tokio::test]
async fn a_condition_too_costly_for_its_fact_fails_before_it_runs() {
    let core = core_serving(Backend::Sqlite, "rules-costly", None, Default::default()).await;
    apply_package(&core).await;
    let joined = format!("size({}) > 0", vec!["fact.data.xs"; 100].join(" + "));
    let conditions = [
        ("joined", joined.as_str()),
        ("copied", "fact.data.xs.map(x, fact.data.xs).size() > 0"),
        ("read", "fact.data.xs.map(x, fact.data.xs.size()).size() > 0"),
        ("once", "fact.data.xs.exists(x, x == 7)"),
    ];
    for (key, when) in conditions {
        let rule = json!({"key": key, "spec": {"version": "1", "identity": {"agent": "claims-intake"},
                          "on": {"kind": "numbers.sent", "when": when},
                          "ensureWork": [{"task": {"type": "claim-reply@1", "workKey": "$.fact.key", "title": "Numbers",
                                                   "customFields": {"claim": "$.fact.key"}}}]}});
        core.post(&core.admin, "/rules", &rule).await.ok(201);
    }
    let mailbox = token(&core.engine, "mailbox", &["facts.write@claims"]).await;
    let reader = token(&core.engine, "reader", &["facts.read@claims", "tasks.read@claims"]).await;
    let numbers =
        json!({"workspace": "claims", "kind": "numbers.sent", "key": "n-1", "data": {"xs": vec![7; 100_000]}});
    let started = std::time::Instant::now();
    let sent = core.post(&mailbox, "/facts", &numbers).await.ok(201).clone();
    let fact = settled(&core, &reader, sent["id"].as_str().expect("an id")).await;
    assert!(started.elapsed() < Duration::from_secs(10), "{:?}", started.elapsed());
    let evaluations = fact["evaluations"].as_array().expect("evaluations");
    let mut outcomes: Vec<(String, String, String)> = evaluations
        .iter()
        .map(|e| {
            let text = |value: &Value| value.as_str().unwrap_or_default().to_owned();
            (text(&e["rule"]), text(&e["status"]), text(&e["error"]["code"]))
        })
        .collect();
    outcomes.sort();
    let costly = |rule: &str| (format!("{rule}@1"), "failed".to_owned(), "rule_condition_too_costly".to_owned());
    assert_eq!(
        outcomes,
        [costly("copied"), costly("joined"), ("once@1".to_owned(), "done".to_owned(), String::new()), costly("read")],
        "{evaluations:?}"
    );
    let error = evaluations.iter().find(|e| e["rule"] == "joined@1").cloned();
    let message = error.as_ref().and_then(|e| e["error"]["message"].as_str()).unwrap_or_default();
    assert!(message.contains("nothing was evaluated"), "{message}");
}
