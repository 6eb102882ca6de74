//! The one promise, attacked: nothing writes to the outside world without the decision a person
//! took, and only what they decided. Each attack below is one a clerk (any `tasks.write` holder),
//! a requester or a second executor can try through the API; each is performed against the
//! claims package with its host running as the executor and a real outbox, on SQLite and on
//! PostgreSQL, and shown to send nothing the reviewer did not approve.

use std::path::Path;

use serde_json::{Value, json};
use skill_fixtures::Scratch;

use crate::api::executor_token;
use crate::calls::{Core, Reply, each_backend};
use crate::claims::{apply_package, desk, executor, host, outbox};

#[tokio::test]
async fn nobody_sends_what_a_person_did_not_approve() {
    let executable = host();
    each_backend("attacks", |core| {
        let executable = executable.clone();
        async move { attacks(core, &executable).await }
    })
    .await;
}

/// The claims desk under attack: the clerk asks, the reviewer decides.
struct Desk<'a> {
    core: &'a Core,
    clerk: String,
    reviewer: String,
}

impl Desk<'_> {
    async fn task(&self, kind: &str, fields: Value, gate: bool) -> String {
        let mut body = json!({"workspace": "claims", "taskType": kind, "title": "A claim", "customFields": fields});
        if gate {
            body["approval"] = json!({"comment": "send this?"});
        }
        id(self.core.post(&self.clerk, "/tasks", &body).await.ok(201))
    }

    async fn gate(&self, task: &str) -> String {
        let listed = self.core.get(&self.clerk, &format!("/approvals?task={task}")).await.ok(200).clone();
        let pending = listed["items"].as_array().expect("items").iter().rev().find(|a| a["status"] == "pending");
        id(pending.expect("a pending gate"))
    }

    async fn decide(&self, approval: &str, outcome: &str, comment: &str) -> Value {
        let body = json!({"outcome": outcome, "comment": comment});
        self.core.post(&self.reviewer, &format!("/approvals/{approval}:decide"), &body).await.ok(200).clone()
    }

    async fn send(&self, token: &str, body: Value) -> Reply {
        self.core.invoke(token, "claim.send_reply@1", body).await
    }

    /// Lets the core's workers take every step they would now, a few times over.
    async fn settle(&self) {
        for _ in 0..5 {
            let now = chrono::Utc::now();
            self.core.engine.run_outcomes(now).await.expect("outcomes");
            self.core.engine.run_executions(now).await.expect("executions");
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
    }
}

fn id(value: &Value) -> String {
    value["id"].as_str().expect("an id").to_owned()
}

fn reason(reply: &Reply) -> String {
    reply.body["error"]["details"]["reason"].as_str().unwrap_or_default().to_owned()
}

#[allow(clippy::too_many_lines)]
async fn attacks(core: Core, executable: &Path) {
    let root = apply_package(&core).await;
    let (clerk, reviewer) = desk(&core).await;
    core.engine.grant("core.execution", "claims.reply", &skill_engine::Origin::default()).await.expect("granted");
    let folder = Scratch::new("claims-attacks-outbox");
    let _executor = executor(executable, &root, &core.executor, &folder);
    let desk = Desk { core: &core, clerk: clerk.clone(), reviewer: reviewer.clone() };
    let sent = || outbox(&folder);

    // 1. A rejected gate: the reviewer says "do not send this" — the execution never runs, the
    //    task fails for it, nothing is sent.
    let rejected = desk.task("claim-send@1", json!({"claim": "C-1", "reply": "Rejected text"}), true).await;
    let gate = desk.gate(&rejected).await;
    desk.decide(&gate, "rejected", "do not send this").await;
    let failed = core.until(&clerk, &format!("/tasks/{rejected}"), |t| t["status"] != "open").await;
    assert_eq!((failed["status"].clone(), failed["closeReason"].clone()), (json!("failed"), json!("gate_rejected")));
    desk.settle().await;
    assert!(core.calls_of(&rejected, 0).await.is_empty(), "no call was made");

    // 2. The requester withdraws its own pending gate: nothing was decided, so nothing is sent;
    //    the task waits for a gate a person approves.
    let withdrawn = desk.task("claim-send@1", json!({"claim": "C-2", "reply": "Withdrawn text"}), true).await;
    let gate = desk.gate(&withdrawn).await;
    core.post(&clerk, &format!("/approvals/{gate}:withdraw"), &json!({})).await.ok(200);
    desk.settle().await;
    assert_eq!(core.get(&clerk, &format!("/tasks/{withdrawn}")).await.ok(200)["status"], "open");
    assert!(core.calls_of(&withdrawn, 0).await.is_empty(), "no call was made");

    // 3. The clerk's own run on an execution-pinned task, with its own text and with the task's:
    //    a person's run never carries the task's execution.
    let held = desk.task("claim-send@1", json!({"claim": "C-3", "reply": "The task's text"}), true).await;
    for round in 0..3 {
        // 4. … however many runs it starts.
        let run = id(core.post(&clerk, "/runs", &json!({"taskId": held})).await.ok(201));
        for (claim, text) in [("C-3", "The task's text"), ("C-9", "Attacker's text")] {
            let body = json!({"inputs": {"claim": claim, "comment": text}, "runId": run,
                              "idempotencyKey": format!("own-{round}-{claim}")});
            let own = desk.send(&clerk, body).await;
            own.refused(403, "skill_side_effect_not_authorized");
            assert_eq!(reason(&own), "execution_is_the_cores", "round {round}");
        }
        core.post(&clerk, &format!("/runs/{run}:end"), &json!({"status": "cancelled"})).await.ok(200);
    }

    // 5. A gate approved on a claim-import task (its type names no send) covers no send.
    let import = desk.task("claim-import@1", json!({"artifact": "none", "scope": "north"}), true).await;
    let asked = id(core.post(&clerk, "/approvals", &json!({"taskId": import})).await.ok(201));
    desk.decide(&asked, "approved", "fine").await;
    let body = json!({"inputs": {"claim": "C-5", "comment": "Sent on an import's approval"}, "taskId": import,
                      "approvalId": asked, "idempotencyKey": "import-send"});
    let uncovered = desk.send(&clerk, body).await;
    let covers = &uncovered.refused(403, "approval_does_not_cover").body["error"]["details"]["covers"];
    assert_eq!(covers, &json!([]), "an approval whose type's outcome names no skill covers nothing");

    // 6. The requester races the outcome: while the reviewer decides, it invokes with the
    //    approval (its own text, and the same text): the outcome's call is the only one, every
    //    round.
    for round in 0..20 {
        let claim = format!("R-{round}");
        let task = desk.task("claim-reply@1", json!({"claim": claim}), false).await;
        let approval = id(core.post(&clerk, "/approvals", &json!({"taskId": task})).await.ok(201));
        let comment = format!("The reviewer's reply {round}");
        let racing = (0..4).map(|n| {
            let text = if n % 2 == 0 { format!("Attacker {round}/{n}") } else { comment.clone() };
            let body = json!({"inputs": {"claim": claim, "comment": text}, "taskId": task, "approvalId": approval,
                              "idempotencyKey": format!("race-{round}-{n}")});
            desk.send(&clerk, body)
        });
        let (decided, answers) =
            tokio::join!(desk.decide(&approval, "approved", &comment), futures::future::join_all(racing));
        assert_eq!(decided["status"], "approved");
        for answer in &answers {
            let code = answer.body["error"]["code"].as_str().unwrap_or_default();
            assert!(
                matches!(code, "skill_side_effect_not_authorized" | "approval_does_not_cover"),
                "round {round}: the requester's call was not refused: {}",
                answer.body
            );
        }
        let ended =
            core.until(&clerk, &format!("/approvals/{approval}"), |a| a["outcome"]["status"] != "running").await;
        assert_eq!(ended["outcome"]["status"], "succeeded", "round {round}: {ended}");
        let calls = core.calls_of(&task, 1).await;
        assert_eq!(calls.len(), 1, "round {round}: the outcome's call only");
        assert_eq!(calls[0]["inputs"]["comment"], json!(comment));
    }

    // 7. A second skills.execute token cannot take the send (the operator allowed it nothing, or
    //    only the remote lookup) and report a made-up "sent".
    let claim_send = json!({"protocols": ["local"], "localEntrypoints": ["claims_integration.skills:send_reply"]});
    let rogue = crate::api::token_of_kind(&core.engine, "rogue-executor", "executor", &["skills.execute"]).await;
    let refused = core.post(&rogue, "/skill-invocations:claim", &claim_send).await;
    refused.refused(403, "executor_not_allowed");
    let lookup_only = json!({"protocols": ["http"], "httpOrigins": ["https://lookup.example"]});
    let narrow = executor_token(&core.engine, "lookup-executor", &["skills.execute"], lookup_only).await;
    core.post(&narrow, "/skill-invocations:claim", &claim_send).await.refused(403, "executor_not_allowed");

    // 8. An audience token for a call the executor does not hold: none.
    let classify = core.invoke(&clerk, "claim.classify@1", json!({"inputs": {"text": "A parcel is lost."}})).await;
    let other = id(classify.ok(201));
    let ask = json!({"invocationId": other, "fencingToken": 1});
    core.post(&narrow, "/audience-tokens", &ask).await.refused(404, "not_found");
    core.post(&rogue, "/audience-tokens", &ask).await.refused(404, "not_found");

    // 9. An agent (or anyone with tasks.write) creates an execution-pinned task without a gate:
    //    nothing was decided, so nothing is sent — the execution waits for a gate a person approves.
    let agent = crate::api::token_of_kind(&core.engine, "claims-agent", "agent", &["tasks.write@claims"]).await;
    let body = json!({"workspace": "claims", "taskType": "claim-send@1", "title": "By an agent",
                      "customFields": {"claim": "C-9002", "reply": "An agent alone sent this"}});
    let ungated = id(core.post(&agent, "/tasks", &body).await.ok(201));
    desk.settle().await;
    assert!(core.calls_of(&ungated, 0).await.is_empty(), "no call without a decision");
    // 10. A requested call of the version the type's outcome calls would share the outcome's one
    //     call: refused when asked.
    let reply_task = desk.task("claim-reply@1", json!({"claim": "C-10"}), false).await;
    let ask = json!({"taskId": reply_task, "call": {"skill": "claim.send_reply@1",
                                                    "inputs": {"claim": "C-10", "comment": "Mine"}}});
    let shared = core.post(&clerk, "/approvals", &ask).await;
    assert_eq!(shared.refused(400, "invalid_request").body["error"]["details"]["field"], "call.skill");
    // 11. The reviewer of an execution's gate sees what approving does: the send, with the task's
    //     text; rejecting fails the task.
    let reviewing = core.engine.authenticate(&reviewer).await.expect("the reviewer");
    let gate = desk.gate(&held).await;
    let approving = core.engine.outcome_preview(&reviewing, &gate, "approved", "").await.expect("a preview");
    let call = approving.iter().find_map(|action| action.call.clone()).expect("the execution's call");
    assert_eq!(
        (call.skill.as_str(), call.version.map(|v| v.side_effects.as_str()), call.inputs.get("comment").cloned()),
        ("claim.send_reply@1", Some("external_write"), Some(json!("The task's text")))
    );
    let rejecting = core.engine.outcome_preview(&reviewing, &gate, "rejected", "").await.expect("a preview");
    assert_eq!(rejecting[0].action["closeReason"], "gate_rejected");
    // 12. An import task naming another workspace's artifact: the core's execution reads nothing
    //     of that workspace, whatever its own reach.
    core.engine.create_workspace("secret", "Secret", &skill_engine::Origin::default()).await.expect("workspace");
    let hr = crate::api::token(&core.engine, "hr", &["tasks.write@secret"]).await;
    let csv = "claim,customer,status\nS-1,SECRET-CUSTOMER,open\n";
    let secret = json!({"workspace": "secret", "type": "claims_register", "name": "secret.csv",
                        "mediaType": "text/csv", "text": csv});
    let secret = id(core.post(&hr, "/artifacts", &secret).await.ok(201));
    let import = desk.task("claim-import@1", json!({"artifact": secret, "scope": "stolen"}), false).await;
    let ended = core.until(&clerk, &format!("/tasks/{import}"), |t| t["status"] != "open").await;
    assert_eq!(ended["status"], "failed", "{ended}");
    let claims = core.engine.store().workspace_by_key("claims").await.expect("claims").id;
    let known = core.engine.store().knowledge_entities(&claims, None, None, 100).await.expect("entities");
    assert!(known.iter().all(|entity| entity.key != "S-1"), "nothing of the secret register was imported");

    // The outbox holds the reviewers' replies, each once, and nothing else.
    desk.settle().await;
    let mut expected: Vec<(String, String)> =
        (0..20).map(|round| (format!("R-{round}"), format!("The reviewer's reply {round}"))).collect();
    expected.sort();
    assert_eq!(sent(), expected, "only what the reviewer approved was sent");

    // The withdrawn task still sends once a person approves a gate for it — its own text, once.
    let gate = id(core.post(&clerk, "/approvals", &json!({"taskId": withdrawn})).await.ok(201));
    desk.decide(&gate, "approved", "yes").await;
    let done = core.until(&clerk, &format!("/tasks/{withdrawn}"), |t| t["status"] != "open").await;
    assert_eq!(done["status"], "done", "{done}");
    let messages = sent();
    assert!(messages.contains(&("C-2".to_owned(), "Withdrawn text".to_owned())), "{messages:?}");
    assert_eq!(messages.len(), 21, "{messages:?}");
}
