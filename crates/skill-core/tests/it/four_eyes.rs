//! Four eyes, as one rule over people and the provenance of work, attacked through the API on both
//! backends with the claims package, its host executing and a real outbox: whoever set a piece of
//! work in motion — started its process, sent the fact a rule made it from (directly, or through an
//! agent they operate), or operates the agent that asked — never decides what lets it write, and
//! nothing reaches the outbox until a second person does. A gate asked for one call covers that
//! call only; the journal of it all verifies, and explains each write with its second person.

use std::path::Path;

use serde_json::{Value, json};
use skill_fixtures::Scratch;

use crate::api::token;
use crate::calls::{Backend, Core, core_serving};
use crate::claims::{apply_package, executor_with, host, outbox};
use crate::processes::{decided_send, evaluation, model, model_env, review_of, runner, step, until};

#[tokio::test]
async fn nobody_decides_what_they_set_in_motion() {
    let (sqlite, postgres) = tokio::join!(
        core_serving(Backend::Sqlite, "four-eyes", None, Default::default()),
        core_serving(Backend::Postgres, "four-eyes", None, Default::default()),
    );
    tokio::join!(attacks(sqlite, "sqlite"), attacks(postgres, "postgres"));
}

/// Everyone who may decide in `claims`, and more.
const DECIDER: &[&str] = &[
    "skills.invoke",
    "tasks.write@claims",
    "tasks.read@claims",
    "approvals.decide@claims",
    "claims.reply@claims",
    "facts.write@claims",
    "facts.read@claims",
];

/// `POST /approvals/{id}:decide` as `who`: the status and the error's body.
async fn decide(core: &Core, who: &str, approval: &str, comment: &str) -> (u16, Value) {
    let body = json!({"outcome": "approved", "comment": comment});
    let answer = core.post(who, &format!("/approvals/{approval}:decide"), &body).await;
    (answer.status.as_u16(), answer.body["error"].clone())
}

/// The refusal the rule gives `who`, with the initiator it names.
async fn refused(core: &Core, who: &str, approval: &str, person: &str, role: &str) {
    let (status, error) = decide(core, who, approval, "mine").await;
    assert_eq!((status, error["code"].as_str()), (403, Some("decider_is_initiator")), "{error}");
    let initiator = &error["details"]["initiator"];
    assert_eq!((initiator["person"].as_str(), initiator["role"].as_str()), (Some(person), Some(role)), "{error}");
    assert!(error["message"].as_str().is_some_and(|m| m.contains("a second person decides")), "{error}");
}

/// The id of principal `name`.
async fn id_of(core: &Core, name: &str) -> String {
    core.engine.store().principal_by_name(name).await.expect("a principal").id
}

/// The pending gate of the review task the fact `key` started, through the claim-intake rule and
/// the claim-handling process.
async fn gate_of_fact(core: &Core, sender: &str, reader: &str, key: &str, claim: &str) -> (String, String) {
    let fact = json!({"workspace": "claims", "kind": "claim.received", "key": key, "source": "email",
                      "data": {"claim": claim, "text": "The courier never came."}});
    let fact_id = core.post(sender, "/facts", &fact).await.ok(201)["id"].as_str().expect("an id").to_owned();
    let evaluated = evaluation(core, reader, &fact_id, "claim-intake@1").await;
    assert_eq!(evaluated["status"], "done", "{evaluated}");
    let instance = evaluated["instanceIds"][0].as_str().expect("an instance").to_owned();
    let made = until(core, reader, &instance, |i| step(i, "review")["taskId"].is_string()).await;
    let task = step(&made, "review")["taskId"].as_str().expect("a task").to_owned();
    let gates = core.get(reader, &format!("/approvals?task={task}")).await.ok(200).clone();
    (gates["items"][0]["id"].as_str().expect("a gate").to_owned(), task)
}

#[allow(clippy::too_many_lines)]
async fn attacks(core: Core, label: &str) {
    let root = apply_package(&core).await;
    let sent = Scratch::new(&format!("four-eyes-{label}-outbox"));
    let (base, _) = model().await;
    let llm = model_env(&base);
    let _executor = executor_with(&host(), &root, &runner(&core).await, &sent, &llm);
    core.post(&core.admin, "/processes", &decided_send()).await.ok(201);
    // Three people who may each decide in `claims`: ana, bo and cy.
    let ana = token(&core.engine, "ana", DECIDER).await;
    let bo = token(&core.engine, "bo", DECIDER).await;
    let cy = token(&core.engine, "cy", DECIDER).await;
    let reader = token(&core.engine, "reader", &["facts.read@claims", "tasks.read@claims"]).await;
    // Who installs agents and issues their tokens, for the person who operates each.
    let grants = [
        "org.manage",
        "skills.invoke",
        "claims.reply",
        "tasks.write@claims",
        "facts.write@claims",
        "approvals.decide@claims",
    ];
    let admin = token(&core.engine, "agent-admin", &grants).await;
    let (ana_id, bo_id) = (id_of(&core, "ana").await, id_of(&core, "bo").await);

    // 1. The starter of an instance approves its review gate: refused, nothing sent.
    let (instance, review, gate) = review_of(&core, &ana, "C-started").await;
    refused(&core, &ana, &gate, &ana_id, "started").await;
    let task = core.get(&ana, &format!("/tasks/{review}")).await.ok(200).clone();
    assert_eq!(task["initiators"][0]["person"].as_str(), Some(ana_id.as_str()), "set in motion by ana: {task}");
    assert_eq!(task["initiators"][0]["via"][0].as_str(), Some(format!("instance:{instance}").as_str()), "{task}");

    // The console says who set it in motion, and shows ana no form, saying why; bo gets it.
    let console = crate::console::Console::new(&core);
    let form = format!("/console/approvals/{gate}/decide");
    let (cookie, _) = console.sign_in(&ana).await;
    let page = console.get(Some(&cookie), &format!("/console/tasks/{review}")).await;
    assert!(page.body.contains("Set in motion by") && page.body.contains("ana started instance:"), "{}", page.body);
    assert!(page.body.contains("You do not decide this approval") && !page.body.contains(&form), "{}", page.body);
    let (cookie, _) = console.sign_in(&bo).await;
    assert!(console.get(Some(&cookie), &format!("/console/tasks/{review}")).await.body.contains(&form));

    // 2. The sender of a fact approves the gate of the work the fact made: refused.
    let (from_fact, _) = gate_of_fact(&core, &bo, &reader, "m-sent", "C-sent").await;
    refused(&core, &bo, &from_fact, &bo_id, "sent").await;

    // 2b. …and through an agent they operate: cy runs a mail agent that sends facts.
    let mailbot =
        json!({"key": "mailbot", "spec": {"identity": {"kind": "agent", "permissions": ["facts.write@claims"]}}});
    let apply = skill_api::ApplyRequest {
        package: skill_api::PackageRef { key: "mail".into(), version: "1".into() },
        install_hash: "c".repeat(64),
        create: Vec::new(),
        patch: Vec::new(),
        objects: serde_json::from_value(json!([{"kind": "Agent", "key": "mailbot"}])).expect("objects"),
        adopt: Vec::new(),
        settings_schema: None,
        task_types: Vec::new(),
        artifact_types: Vec::new(),
        agents: vec![serde_json::from_value(mailbot).expect("an agent")],
        rules: Vec::new(),
        processes: Vec::new(),
    };
    let installer = core.engine.authenticate(&admin).await.expect("the admin");
    core.engine.apply_package(&installer, &apply, None).await.expect("the mail agent");
    let mail = core.post(&admin, "/agents/mailbot/tokens", &json!({"operatedBy": "cy"})).await.ok(201).clone();
    let cy_id = id_of(&core, "cy").await;
    assert_eq!(mail["operatedBy"]["id"].as_str(), Some(cy_id.as_str()), "cy operates it: {mail}");
    let own = core.post(&admin, "/agents/mailbot/tokens", &json!({})).await.ok(201).clone();
    assert_eq!(own["operatedBy"]["name"].as_str(), Some("agent-admin"), "else the person asking: {own}");
    for (named, code) in [("mailbot", "invalid_operator"), ("nobody", "invalid_operator")] {
        let refused = core.post(&admin, "/agents/mailbot/tokens", &json!({"operatedBy": named})).await;
        assert_eq!((refused.status.as_u16(), refused.body["error"]["code"].as_str()), (422, Some(code)), "{named}");
    }
    let mail = mail["token"].as_str().expect("a token").to_owned();
    let (through_agent, _) = gate_of_fact(&core, &mail, &reader, "m-agent", "C-agent").await;
    refused(&core, &cy, &through_agent, &cy_id, "sent").await;
    let (_, error) = decide(&core, &cy, &through_agent, "mine").await;
    assert!(error["details"]["initiator"]["agent"].is_string(), "the agent it came through is named: {error}");

    // 3. The person operating an agent approves its request: refused.
    let desk = core.post(&admin, "/agents/claims-desk/tokens", &json!({"operatedBy": "ana"})).await.ok(201)["token"]
        .as_str()
        .expect("a token")
        .to_owned();
    let asked = core
        .invoke(
            &desk,
            "claim.send_reply@1",
            json!({"inputs": {"claim": "C-asked", "comment": "hi"}, "idempotencyKey": "k-asked"}),
        )
        .await;
    assert_eq!(asked.status.as_u16(), 403, "an agent's write has no basis of its own: {}", asked.body);
    let requested = crate::gateway::request_write(&core, &desk, "C-asked").await;
    let gates = core.get(&bo, &format!("/approvals?task={requested}")).await.ok(200).clone();
    let request_gate = gates["items"][0]["id"].as_str().expect("the request's gate").to_owned();
    refused(&core, &ana, &request_gate, &ana_id, "asked").await;
    // 3b. …nor whoever had that token issued for ana: they held its secret, and count too.
    let admin_id = id_of(&core, "agent-admin").await;
    refused(&core, &admin, &request_gate, &admin_id, "asked").await;

    // 3c. The person who decides an agent's one-call gate does not make that call through a token
    // of the agent they had issued: refused; the agent's own operator's token makes it.
    let handling = skill_api::AgentTokenRequest { operated_by: Some("ana".into()), ..Default::default() };
    let by_ana = core.engine.issue_agent_token(None, "claims-handling", &handling, &Default::default()).await;
    let by_ana = by_ana.expect("a token for ana").token;
    core.post(&core.admin, "/task-types", &json!({"key": "plain", "version": "1"})).await.ok(201);
    let body = json!({"workspace": "claims", "taskType": "plain@1", "title": "A claim to answer"});
    let made = core.post(&ana, "/tasks", &body).await.ok(201)["id"].as_str().expect("a task").to_owned();
    let inputs = json!({"claim": "C-maker", "comment": "Sent once."});
    let asked = json!({"taskId": made, "call": {"skill": "claim.send_reply@1", "inputs": inputs}});
    let one_call = core.post(&by_ana, "/approvals", &asked).await.ok(201)["id"].as_str().expect("a gate").to_owned();
    assert_eq!(decide(&core, &admin, &one_call, "Send it.").await.0, 200, "admin set none of it in motion");
    let own = core.post(&admin, "/agents/claims-handling/tokens", &json!({"operatedBy": "bo"})).await.ok(201).clone();
    let own = own["token"].as_str().expect("a token").to_owned();
    let call = json!({"inputs": inputs, "idempotencyKey": "k-maker", "taskId": made, "approvalId": one_call});
    let refused = core.post(&own, "/skills/claim.send_reply@1:invoke", &call).await;
    assert_eq!(refused.status.as_u16(), 403, "{}", refused.body);
    assert_eq!(refused.body["error"]["details"]["reason"].as_str(), Some("decider_is_initiator"), "{}", refused.body);
    core.post(&by_ana, "/skills/claim.send_reply@1:invoke", &call).await.ok(201);

    // 4. A gate asked for one call on a type whose approved outcome sends: it covers that call
    // only, and the type's outcome is not run.
    let body = json!({"workspace": "claims", "taskType": "claim-reply@1", "title": "A claim",
                      "customFields": {"claim": "C-call", "message": "Where is it?"}});
    let clerk_task = core.post(&ana, "/tasks", &body).await.ok(201)["id"].as_str().expect("a task").to_owned();
    let call = json!({"taskId": clerk_task, "call": {"skill": "claim.lookup@1", "inputs": {"claim": "C-call"}}});
    let for_call = core.post(&ana, "/approvals", &call).await.ok(201)["id"].as_str().expect("an approval").to_owned();
    let (status, error) = decide(&core, &ana, &for_call, "mine").await;
    assert_eq!((status, error["code"].as_str()), (403, Some("self_approval_refused")), "{error}");
    let decided = core
        .post(&bo, &format!("/approvals/{for_call}:decide"), &json!({"outcome": "approved", "comment": "ok"}))
        .await
        .ok(200)
        .clone();
    assert!(decided["outcome"].is_null(), "a call's gate runs no outcome: {decided}");

    // Nothing of any attack was sent.
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    for claim in ["C-started", "C-sent", "C-agent", "C-asked", "C-call"] {
        assert!(!outbox(&sent).iter().any(|(sent, _)| sent == claim), "{claim}: {:?}", outbox(&sent));
    }

    // The second person decides: each write is made once.
    assert_eq!(decide(&core, &bo, &gate, "From the second person.").await.0, 200);
    let done = until(&core, &ana, &instance, |i| i["status"] == "completed").await;
    assert_eq!(step(&done, "send")["approvalId"].as_str(), Some(gate.as_str()));
    assert_eq!(decide(&core, &cy, &from_fact, "Sent by cy.").await.0, 200);
    assert_eq!(decide(&core, &ana, &through_agent, "Sent by ana.").await.0, 200);
    assert_eq!(decide(&core, &bo, &request_gate, "").await.0, 200);
    let mut written = Vec::new();
    for _ in 0..200 {
        written = outbox(&sent);
        let claims: Vec<&str> = written.iter().map(|(claim, _)| claim.as_str()).collect();
        if ["C-started", "C-sent", "C-agent", "C-asked", "C-maker"].iter().all(|claim| claims.contains(claim)) {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert!(written.contains(&("C-sent".to_owned(), "Sent by cy.".to_owned())), "{written:?}");
    assert!(written.contains(&("C-agent".to_owned(), "Sent by ana.".to_owned())), "{written:?}");
    assert!(written.iter().any(|(claim, _)| claim == "C-asked"), "{written:?}");
    assert_eq!(written.iter().filter(|(claim, _)| claim == "C-maker").count(), 1, "{written:?}");
    assert!(!written.iter().any(|(claim, _)| claim == "C-call"), "{written:?}");

    // The journal agrees: every write stood on a second person's decision, and says who set the
    // work in motion and who decided.
    verify_clean(&core, label);
    let call = step(&done, "send")["invocationId"].as_str().expect("the write").to_owned();
    let (code, explained, err) = crate::journal::core(&["journal", "explain", "--db", &core.target, &call]);
    assert_eq!(code, 0, "explain: {err}");
    assert!(explained.contains("set in motion: ana (") && explained.contains(") started instance:"), "{explained}");
    assert!(explained.contains("approved by bo"), "{explained}");
    assert!(explained.contains("the four-eyes rule holds"), "{explained}");

    // An agent acts for its person only while that person may act: cy leaves, mailbot stops, and
    // the request cy's desk agent made waits for nobody (withdrawn, never decided, never sent).
    let desk_cy = core.post(&admin, "/agents/claims-desk/tokens", &json!({"operatedBy": "cy"})).await.ok(201).clone();
    let desk_cy = desk_cy["token"].as_str().expect("a token").to_owned();
    let left_task = crate::gateway::request_write(&core, &desk_cy, "C-left").await;
    let gates = core.get(&bo, &format!("/approvals?task={left_task}")).await.ok(200).clone();
    let left_gate = gates["items"][0]["id"].as_str().expect("the request's gate").to_owned();
    // …and a task cy's handling agent made, its gate approved after cy left, writes nothing.
    let handling = core.post(&admin, "/agents/claims-handling/tokens", &json!({"operatedBy": "cy"})).await;
    let handling_cy = handling.ok(201)["token"].as_str().expect("a token").to_owned();
    let send = json!({"workspace": "claims", "taskType": "claim-send@1", "title": "A reply",
                      "customFields": {"claim": "C-gate-left", "reply": "Sent after cy left."}, "approval": {}});
    let gated = core.post(&handling_cy, "/tasks", &send).await.ok(201)["id"].as_str().expect("a task").to_owned();
    let gates = core.get(&bo, &format!("/approvals?task={gated}")).await.ok(200).clone();
    let gate_left = gates["items"][0]["id"].as_str().expect("the task's gate").to_owned();
    let disable = json!({"principal": "cy", "reason": "left"});
    core.post(&admin, "/principals:disable", &disable).await.ok(200);
    assert_eq!(decide(&core, &bo, &gate_left, "After cy left.").await.0, 200, "bo decides; nothing is written");
    for token in [&mail, &desk_cy] {
        let stopped = core.get(token, "/facts?workspace=claims").await;
        assert_eq!(stopped.status.as_u16(), 401, "{}", stopped.body);
        assert_eq!(stopped.body["error"]["details"]["reason"].as_str(), Some("operator_disabled"), "{}", stopped.body);
    }
    let (status, said) = crate::gateway::rpc(&core, &desk_cy, "tools/list", "", json!({}), false).await;
    assert_eq!((status, said["error"]["details"]["reason"].as_str()), (401, Some("operator_disabled")), "{said}");
    let left = core.get(&bo, &format!("/approvals/{left_gate}")).await.ok(200).clone();
    assert_eq!(left["status"].as_str(), Some("withdrawn"), "{left}");
    assert_ne!(decide(&core, &bo, &left_gate, "Too late.").await.0, 200);
    // A token stops with whoever had it issued, too.
    let issuer = token(&core.engine, "desk-admin", &["org.manage", "skills.invoke", "claims.reply"]).await;
    let issued = core.post(&issuer, "/agents/claims-desk/tokens", &json!({"operatedBy": "bo"})).await.ok(201).clone();
    let issued = issued["token"].as_str().expect("a token").to_owned();
    core.get(&issued, "/facts?workspace=claims").await.refused(403, "permission_denied");
    core.post(&admin, "/principals:disable", &json!({"principal": "desk-admin", "reason": "left"})).await.ok(200);
    let stopped = core.get(&issued, "/facts?workspace=claims").await;
    assert_eq!(stopped.body["error"]["details"]["reason"].as_str(), Some("issuer_disabled"), "{}", stopped.body);
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    let done = until_task(&core, &bo, &gated).await;
    assert_eq!(done["status"].as_str(), Some("failed"), "its execution lost its basis: {done}");
    for claim in ["C-left", "C-gate-left"] {
        assert!(!outbox(&sent).iter().any(|(sent, _)| sent == claim), "{claim}: {:?}", outbox(&sent));
    }
}

/// The task `id` once it is no longer open (at most 20 s).
async fn until_task(core: &Core, who: &str, id: &str) -> Value {
    for _ in 0..400 {
        let task = core.get(who, &format!("/tasks/{id}")).await.ok(200).clone();
        if task["status"] != "open" {
            return task;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    panic!("the task {id} stayed open")
}

/// `journal export` of `core`'s database, then `journal verify`: exit 0, no finding.
fn verify_clean(core: &Core, label: &str) {
    let folder = Scratch::new(&format!("four-eyes-{label}-export"));
    let out = folder.path().join("export");
    let (code, _, err) = crate::journal::core(&["journal", "export", "--db", &core.target, "--out", &text(&out)]);
    assert_eq!(code, 0, "export: {err}");
    // This core signs no checkpoint: any key checks none, and the rules are checked all the same.
    let key_file = folder.path().join("key");
    let (code, key, err) = crate::journal::core(&["journal", "keygen", "--out", &text(&key_file)]);
    assert_eq!(code, 0, "keygen: {err}");
    let (code, out, err) = crate::journal::core(&["journal", "verify", &text(&out), "--key", key.trim()]);
    assert_eq!(code, 0, "verify: {out}{err}");
}

fn text(path: &Path) -> String {
    path.display().to_string()
}
