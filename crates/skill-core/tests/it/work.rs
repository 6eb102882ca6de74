//! Work through a real server, on SQLite and on PostgreSQL: task types, tasks, runs, approvals
//! and comments with every code; the invoke path's steps 8–13 (the basis of an external write)
//! and the re-check at claim; the outcome of an approved gate carried out with the decider's
//! authority; a task carried out by its type's execution; read-only gating of agents.

use serde_json::{Value, json};
use skill_engine::Origin;

use crate::api::token;
use crate::calls::{Core, each_backend, local};

/// A core with two workspaces (`desk`, `other`), the claims skills and three task types, and
/// the people who work there.
struct Desk {
    core: Core,
    /// skills.invoke, tasks.write in desk.
    writer: String,
    /// approvals.decide, tasks.write in desk, skills.invoke.
    decider: String,
    /// skills.invoke, tasks.write in other.
    outsider: String,
}

const SEND: &str = "claims.skills:claim_send";

fn reply_type() -> Value {
    json!({"key": "claim-reply", "version": "1", "displayName": "Reply to a claim",
           "customFields": {"claim": {"type": "string", "maxLength": 10}},
           "approvalSchema": {"gates": {"default": {"outcomes": {"approved": [
               {"invokeSkill": {"skill": "claim.send@1",
                                "inputs": {"claim": "$.task.customFields.claim", "comment": "$.approval.comment"},
                                "expect": {"label": "sent"},
                                "onSuccess": [{"setTaskStatus": "done"}, {"addComment": "The reply was sent."}],
                                "onFailure": [{"addComment": "Sending the reply failed."}]}}]}}}}})
}

async fn desk(core: Core, label: &str) -> Desk {
    for key in ["desk", "other"] {
        core.engine.create_workspace(key, key, &Origin::default()).await.expect("workspace");
    }
    let writer = token(&core.engine, &format!("writer-{label}"), &["skills.invoke", "tasks.write@desk"]).await;
    let decider = token(
        &core.engine,
        &format!("decider-{label}"),
        &["skills.invoke", "tasks.write@desk", "approvals.decide@desk"],
    )
    .await;
    let outsider = token(&core.engine, &format!("outsider-{label}"), &["skills.invoke", "tasks.write@other"]).await;
    core.publish(local("claim.classify", "none", (1, 0), &[])).await;
    core.publish(local("claim.send", "external_write", (1, 0), &[])).await;
    let mut second = local("claim.send", "external_write", (1, 0), &[]);
    second["version"] = json!("2");
    core.publish(second).await;
    core.post(
        &core.admin,
        "/task-types",
        &json!({"key": "plain", "version": "1",
        "customFields": {"claim": {"type": "string"}}}),
    )
    .await
    .ok(201);
    core.post(&core.admin, "/task-types", &reply_type()).await.ok(201);
    core.post(
        &core.admin,
        "/task-types",
        &json!({"key": "auto", "version": "1",
        "customFields": {"claim": {"type": "string"}},
        "execution": {"skill": "claim.send", "version": "1"}}),
    )
    .await
    .ok(201);
    Desk { core, writer, decider, outsider }
}

impl Desk {
    async fn task(&self, task_type: &str, claim: &str) -> String {
        let body =
            json!({"workspace": "desk", "taskType": task_type, "title": "A claim", "customFields": {"claim": claim}});
        id(self.core.post(&self.writer, "/tasks", &body).await.ok(201))
    }

    /// A task of `task_type` asked for with its gate, and the gate approved: an execution that
    /// writes runs only then.
    async fn approved_task(&self, task_type: &str, claim: &str) -> String {
        let body = json!({"workspace": "desk", "taskType": task_type, "title": "A claim",
                          "customFields": {"claim": claim}, "approval": {"comment": "send?"}});
        let task = id(self.core.post(&self.writer, "/tasks", &body).await.ok(201));
        let listed = self.core.get(&self.writer, &format!("/approvals?task={task}")).await.ok(200).clone();
        let gate = id(&listed["items"][0]);
        let decide = json!({"outcome": "approved", "comment": "ok"});
        self.core.post(&self.decider, &format!("/approvals/{gate}:decide"), &decide).await.ok(200);
        task
    }

    async fn approved(&self, task: &str) -> String {
        let approval = id(self.core.post(&self.writer, "/approvals", &json!({"taskId": task})).await.ok(201));
        self.core
            .post(
                &self.decider,
                &format!("/approvals/{approval}:decide"),
                &json!({"outcome": "approved", "comment": "ok"}),
            )
            .await
            .ok(200);
        approval
    }

    /// Claims only `call` (local, the send skill), or nothing: the claim's answer.
    async fn claim_send(&self, call: &str) -> crate::calls::Reply {
        self.core.claim(json!({"protocols": ["local"], "localEntrypoints": [SEND], "invocationId": call})).await
    }

    /// Claims `call` and completes it with `output`.
    async fn run_send(&self, call: &str, output: Value) {
        self.claim_send(call).await.ok(200);
        let report = json!({"fencingToken": 1, "output": output});
        self.core.act(&self.core.executor, call, "complete", report).await.ok(200);
    }

    /// The approval once its outcome has ended.
    async fn outcome_ended(&self, approval: &str) -> Value {
        let path = format!("/approvals/{approval}");
        self.core.until(&self.writer, &path, |a| a["outcome"]["status"] != "running").await
    }

    async fn call(&self, id: &str) -> Value {
        self.core.get(&self.core.admin, &format!("/skill-invocations/{id}")).await.ok(200).clone()
    }

    /// A gate on `task` asked by the writer for one call of `skill` with `inputs`, approved.
    async fn approved_for(&self, task: &str, skill: &str, inputs: Value) -> String {
        let body = json!({"taskId": task, "call": {"skill": skill, "inputs": inputs}});
        let approval = id(self.core.post(&self.writer, "/approvals", &body).await.ok(201));
        let decide = json!({"outcome": "approved", "comment": "ok"});
        self.core.post(&self.decider, &format!("/approvals/{approval}:decide"), &decide).await.ok(200);
        approval
    }
}

fn id(value: &Value) -> String {
    value["id"].as_str().expect("an id").to_owned()
}

#[tokio::test]
async fn task_types_are_checked_at_publication_and_never_change() {
    each_backend("work-types", |core| async move {
        let desk = desk(core, "types").await;
        let core = &desk.core;
        let publish = |body: Value| async move { core.post(&core.admin, "/task-types", &body).await };
        publish(reply_type()).await.refused(409, "task_type_exists");
        publish(json!({"key": "Bad Key", "version": "1"})).await.refused(422, "invalid_task_type");
        publish(json!({"key": "x", "version": "1", "customFields": {"a": {"type": "no-such-type"}}}))
            .await
            .refused(422, "invalid_task_type");
        // Who may publish, and the writer cannot.
        core.post(&desk.writer, "/task-types", &json!({"key": "x", "version": "1"}))
            .await
            .refused(403, "permission_denied");
        // Execution: each reason.
        for (execution, reason) in [
            (json!({"skill": "claim.nothing", "version": "1"}), "not_found"),
            (json!({"skill": "claim.send@1", "version": "1"}), "malformed"),
            (json!({"skill": "claim.send", "version": "1", "inputs": "customFields"}), "malformed"),
            (json!({"skill": "claim.send", "version": "1", "inputs": {"9bad": "$.x"}}), "malformed"),
        ] {
            let answer = publish(json!({"key": "x", "version": "1", "execution": execution})).await;
            assert_eq!(answer.refused(422, "invalid_task_execution").body["error"]["details"]["reason"], reason);
        }
        core.publish(json!({"name": "claim.legacy", "version": "1", "protocol": "custom"})).await;
        let legacy =
            publish(json!({"key": "x", "version": "1", "execution": {"skill": "claim.legacy", "version": "1"}})).await;
        assert_eq!(legacy.refused(422, "invalid_task_execution").body["error"]["details"]["reason"], "no_contract");
        core.disable("claim.send@2").await;
        let disabled =
            publish(json!({"key": "x", "version": "1", "execution": {"skill": "claim.send", "version": "2"}})).await;
        assert_eq!(disabled.refused(422, "invalid_task_execution").body["error"]["details"]["reason"], "disabled");
        // Outcomes: a known skill, pinned when it writes.
        let outcome = |skill: &str| {
            json!({"key": "x", "version": "1", "approvalSchema": {"gates": {"default": {"outcomes": {"approved": [
                {"invokeSkill": {"skill": skill}}]}}}}})
        };
        publish(outcome("claim.nothing@1")).await.refused(422, "unknown_reference");
        let unpinned = publish(outcome("claim.send")).await;
        assert_eq!(
            unpinned.refused(422, "unpinned_external_write").body["error"]["details"]["field"],
            "approvalSchema.gates.default.outcomes.approved[0].invokeSkill.skill"
        );
        // Acceptance: an external write only after a human or llm_judge decision with the same when.
        let acceptance = |criteria: Value| json!({"key": "x", "version": "1", "acceptance": criteria});
        let undecided = publish(acceptance(json!([
            {"kind": "deterministic", "spec": {"skill": "claim.send@1"}}])))
        .await;
        assert_eq!(
            undecided.refused(422, "invalid_acceptance_spec").body["error"]["details"]["cause"],
            "external_write_without_decision"
        );
        publish(acceptance(json!([{"kind": "human", "when": "done"},
            {"kind": "deterministic", "when": "sent", "spec": {"skill": "claim.send@1"}}])))
        .await
        .refused(422, "invalid_acceptance_spec");
        publish(acceptance(json!([{"kind": "human", "when": "sent"},
            {"kind": "deterministic", "when": "sent", "spec": {"skill": "claim.send@1"}}])))
        .await
        .ok(201);
        // Read by key@version, by key (newest), by id; listed; readable with tasks.read somewhere.
        let by_version = core.get(&desk.writer, "/task-types/claim-reply@1").await.ok(200).clone();
        assert_eq!(by_version["spec"]["approvalSchema"], reply_type()["approvalSchema"]);
        assert_eq!(core.get(&desk.writer, "/task-types/claim-reply").await.ok(200)["id"], by_version["id"]);
        let mut second = reply_type();
        second["version"] = json!("2");
        let newer = core.post(&core.admin, "/task-types", &second).await.ok(201).clone();
        assert_eq!(
            core.get(&desk.writer, "/task-types/claim-reply").await.ok(200)["id"],
            newer["id"],
            "a key: its newest"
        );
        let by_id = core.get(&desk.writer, &format!("/task-types/{}", by_version["id"].as_str().expect("id"))).await;
        assert_eq!(by_id.ok(200)["key"], "claim-reply");
        assert_eq!(
            core.get(&desk.outsider, "/task-types?key=auto").await.ok(200)["items"][0]["execution"]["inputs"],
            "$.customFields"
        );
        core.get(&core.executor, "/task-types").await.refused(403, "permission_denied");
        core.get(&desk.writer, "/task-types/nothing@1").await.refused(404, "not_found");
    })
    .await;
}

#[tokio::test]
async fn tasks_runs_approvals_and_comments_keep_their_rules() {
    each_backend("work-model", |core| async move {
        let desk = desk(core, "model").await;
        let core = &desk.core;
        let create = |token: &str, body: Value| {
            let token = token.to_owned();
            async move { core.post(&token, "/tasks", &body).await }
        };
        let body = json!({"workspace": "desk", "taskType": "claim-reply@1", "title": "Claim C-1", "customFields": {"claim": "C-1"}});
        let task = create(&desk.writer, body.clone()).await.ok(201).clone();
        assert_eq!((task["status"].clone(), task["taskType"]["key"].clone()), (json!("open"), json!("claim-reply")));
        let task_id = id(&task);
        create(&desk.outsider, body.clone()).await.refused(403, "permission_denied");
        create(&core.executor, body.clone()).await.refused(403, "permission_denied");
        create(&desk.writer, json!({"workspace": "nowhere", "taskType": "plain", "title": "t"})).await.refused(404, "not_found");
        create(&desk.writer, json!({"workspace": "desk", "taskType": "nothing", "title": "t"})).await.refused(404, "not_found");
        for fields in [json!({"claim": 7}), json!({"claim": "far too long a claim"}), json!({"other": "x"})] {
            let bad = json!({"workspace": "desk", "taskType": "claim-reply@1", "title": "t", "customFields": fields});
            create(&desk.writer, bad).await.refused(422, "invalid_custom_fields");
        }
        create(&desk.writer, json!({"workspace": "desk", "taskType": "plain", "title": ""})).await.refused(400, "invalid_request");
        // A field the type's work reads into a required input, missing: refused when the task is
        // created, naming it — not when an approved outcome fails and spends the approval.
        for (kind, work) in [("claim-reply@1", "approved gate outcome calls claim.send@1"), ("auto@1", "execution calls claim.send@1")] {
            let missing = json!({"workspace": "desk", "taskType": kind, "title": "t", "customFields": {}});
            let refused = create(&desk.writer, missing).await;
            let error = &refused.refused(400, "custom_field_required").body["error"];
            assert_eq!(error["details"]["field"], "customFields.claim", "{error}");
            assert!(error["message"].as_str().is_some_and(|m| m.contains(work) && m.contains("claim")), "{error}");
        }
        // Custom fields are bounded: bytes and keys, each refused naming the limit.
        core.post(&core.admin, "/task-types", &json!({"key": "free", "version": "1", "customFields": {"notes": {}}})).await.ok(201);
        let many: serde_json::Map<String, Value> = (0..1001).map(|n| (format!("k{n}"), json!(n))).collect();
        for (notes, limit) in [(json!("x".repeat(70_000)), "bytes"), (Value::Object(many), "keys")] {
            let bad = json!({"workspace": "desk", "taskType": "free@1", "title": "t", "customFields": {"notes": notes}});
            let refused = create(&desk.writer, bad).await;
            assert_eq!(refused.refused(422, "custom_fields_too_large").body["error"]["details"]["limit"], limit);
        }
        // Visible in its workspace only; listed there.
        core.get(&desk.outsider, &format!("/tasks/{task_id}")).await.refused(404, "not_found");
        assert_eq!(core.get(&desk.decider, &format!("/tasks/{task_id}")).await.ok(200)["id"], task_id);
        assert_eq!(core.get(&desk.writer, "/tasks?workspace=desk").await.ok(200)["items"][0]["id"], task_id);
        assert_eq!(core.get(&desk.outsider, "/tasks").await.ok(200)["items"], json!([]));
        core.get(&desk.outsider, "/tasks?workspace=desk").await.refused(403, "permission_denied");
        core.get(&desk.writer, "/tasks?status=closed").await.refused(422, "invalid_status");
        core.get(&core.executor, "/tasks").await.refused(403, "permission_denied");

        // Runs: owned, one running per owner and task, ended once.
        let run = core.post(&desk.writer, "/runs", &json!({"taskId": task_id})).await.ok(201).clone();
        let run_id = id(&run);
        let twice = core.post(&desk.writer, "/runs", &json!({"taskId": task_id})).await;
        assert_eq!(twice.refused(409, "run_already_running").body["error"]["details"]["runId"], run_id);
        core.post(&desk.outsider, "/runs", &json!({"taskId": task_id})).await.refused(404, "not_found");
        core.post(&desk.decider, &format!("/runs/{run_id}:end"), &json!({"status": "succeeded"}))
            .await
            .refused(403, "run_owner_mismatch");
        core.post(&desk.writer, &format!("/runs/{run_id}:end"), &json!({"status": "done"})).await.refused(422, "invalid_status");
        let ended = core.post(&desk.writer, &format!("/runs/{run_id}:end"), &json!({"status": "succeeded", "result": {"n": 1}})).await;
        assert_eq!(ended.ok(200)["status"], "succeeded");
        core.post(&desk.writer, &format!("/runs/{run_id}:end"), &json!({"status": "failed"})).await.refused(409, "run_not_active");
        assert_eq!(core.get(&desk.decider, &format!("/runs/{run_id}")).await.ok(200)["result"], json!({"n": 1}));

        // Approvals: never decided by the requester; only with approvals.decide; once.
        let approval = id(core.post(&desk.writer, "/approvals", &json!({"taskId": task_id, "gate": false, "comment": "please"})).await.ok(201));
        let decide = |token: &str, body: Value| {
            let (token, path) = (token.to_owned(), format!("/approvals/{approval}:decide"));
            async move { core.post(&token, &path, &body).await }
        };
        let approve = json!({"outcome": "approved", "comment": "fine"});
        decide(&desk.writer, approve.clone()).await.refused(403, "permission_denied");
        let own = id(core.post(&desk.decider, "/approvals", &json!({"taskId": task_id, "gate": false})).await.ok(201));
        core.post(&desk.decider, &format!("/approvals/{own}:decide"), &approve).await.refused(403, "self_approval_refused");
        decide(&desk.decider, json!({"outcome": "maybe"})).await.refused(422, "invalid_outcome");
        decide(&desk.outsider, approve.clone()).await.refused(403, "permission_denied");
        let decided = decide(&desk.decider, approve.clone()).await.ok(200).clone();
        assert_eq!((decided["status"].clone(), decided["comment"].clone(), decided["outcome"].clone()),
                   (json!("approved"), json!("fine"), Value::Null), "a non-gate approval runs no outcome");
        decide(&desk.decider, approve.clone()).await.refused(409, "approval_not_pending");
        // Withdrawn by the requester or a decider, once.
        let path = format!("/approvals/{approval}:withdraw");
        core.post(&desk.outsider, &path, &json!({})).await.refused(404, "not_found");
        assert_eq!(core.post(&desk.writer, &path, &json!({"reason": "wrong claim"})).await.ok(200)["status"], "withdrawn");
        core.post(&desk.writer, &path, &json!({})).await.refused(409, "approval_not_withdrawable");
        let listed = core.get(&desk.decider, &format!("/approvals?task={task_id}")).await.ok(200).clone();
        assert_eq!(listed["items"].as_array().map(Vec::len), Some(2));
        core.get(&desk.outsider, &format!("/approvals?task={task_id}")).await.refused(404, "not_found");

        // An approval decided before the close stands after it.
        let standing = id(core.post(&desk.writer, "/approvals", &json!({"taskId": task_id, "gate": false})).await.ok(201));
        core.post(&desk.decider, &format!("/approvals/{standing}:decide"), &approve).await.ok(200);

        // Comments, then the close: for good.
        core.post(&desk.writer, "/task-comments", &json!({"taskId": task_id, "body": "looking"})).await.ok(201);
        core.post(&desk.writer, "/task-comments", &json!({"taskId": task_id, "body": ""})).await.refused(400, "invalid_request");
        core.post(&desk.writer, &format!("/tasks/{task_id}:close"), &json!({"status": "open"})).await.refused(422, "invalid_status");
        let closed = core.post(&desk.writer, &format!("/tasks/{task_id}:close"), &json!({"status": "done", "comment": "answered"})).await;
        assert_eq!(closed.ok(200)["status"], "done");
        core.post(&desk.writer, &format!("/tasks/{task_id}:close"), &json!({"status": "cancelled"})).await.refused(409, "task_terminal");
        core.post(&desk.writer, "/runs", &json!({"taskId": task_id})).await.refused(409, "task_terminal");
        core.post(&desk.writer, "/approvals", &json!({"taskId": task_id})).await.refused(409, "task_terminal");
        // Its pending approval went with it (withdrawn by the core: no one decides it, no list
        // shows it); the approved one stands, and is not withdrawn after.
        let gone = core.get(&desk.decider, &format!("/approvals/{own}")).await.ok(200).clone();
        assert_eq!((gone["status"].as_str(), gone["withdrawnBy"].as_str()), (Some("withdrawn"), None), "{gone}");
        core.post(&desk.writer, &format!("/approvals/{standing}:withdraw"), &json!({})).await.refused(409, "task_terminal");
        assert_eq!(core.get(&desk.decider, &format!("/approvals/{standing}")).await.ok(200)["status"], "approved");
        let comments = core.get(&desk.decider, &format!("/task-comments?task={task_id}")).await.ok(200).clone();
        let bodies: Vec<&str> = comments["items"].as_array().expect("items").iter().filter_map(|c| c["body"].as_str()).collect();
        assert_eq!(bodies, ["wrong claim", "looking", "answered"]);
        // Every change left its event.
        let events = core.engine.store().events(0, Some(&format!("task:{task_id}")), 50).await.expect("events");
        let kinds: Vec<&str> = events.iter().map(|e| e.kind.as_str()).collect();
        assert_eq!(kinds, ["task.created", "task.commented", "task.commented", "task.closed", "task.commented"]);
    })
    .await;
}

#[tokio::test]
async fn an_external_write_runs_only_on_a_basis() {
    each_backend("work-basis", |core| async move {
        let desk = desk(core, "basis").await;
        let core = &desk.core;
        let task = desk.task("plain", "C-1").await;
        let send = |token: &str, version: &str, body: Value| {
            let (token, reference) = (token.to_owned(), format!("claim.send@{version}"));
            async move { core.invoke(&token, &reference, body).await }
        };
        // 10. task-bound: tasks.write in the task's workspace (another's task is not there at all).
        let classify = json!({"inputs": {"claim": "c"}, "taskId": task});
        core.invoke(&desk.outsider, "claim.classify@1", classify.clone()).await.refused(404, "not_found");
        let reader = token(&core.engine, "reader-basis", &["skills.invoke", "tasks.read@desk"]).await;
        core.invoke(&reader, "claim.classify@1", classify.clone()).await.refused(403, "permission_denied");
        // 11. the contract's permissions, on the task's workspace.
        core.publish(local("claim.audit", "none", (1, 0), &["audit.read"])).await;
        let audit = json!({"inputs": {"claim": "c"}, "taskId": task});
        let denied = core.invoke(&desk.writer, "claim.audit@1", audit.clone()).await;
        let workspace = core.get(&desk.writer, &format!("/tasks/{task}")).await.ok(200)["workspaceId"].clone();
        assert_eq!(denied.refused(403, "skill_permission_denied").body["error"]["details"]["resource"], workspace);
        let auditor =
            token(&core.engine, "auditor-basis", &["skills.invoke", "tasks.write@desk", "audit.read@desk"]).await;
        core.invoke(&auditor, "claim.audit@1", audit).await.ok(201);
        // An approvalId means nothing to a skill that does not write.
        let read_call = core
            .invoke(
                &desk.writer,
                "claim.classify@1",
                json!({"inputs": {"claim": "c"}, "taskId": task, "approvalId": "x"}),
            )
            .await;
        assert_eq!(read_call.ok(201)["authorizationBasis"], Value::Null);

        // 13. no basis: no approval, a pending one, a rejected one, another task's, not a gate.
        send(&desk.writer, "1", json!({"inputs": {"claim": "c"}}))
            .await
            .refused(403, "skill_side_effect_not_authorized");
        let bare = send(&desk.writer, "1", json!({"inputs": {"claim": "c"}, "taskId": task})).await;
        assert_eq!(
            bare.refused(403, "skill_side_effect_not_authorized").body["error"]["details"]["sideEffects"],
            "external_write"
        );
        let pending = id(core.post(&desk.writer, "/approvals", &json!({"taskId": task})).await.ok(201));
        let on = |approval: &str| json!({"inputs": {"claim": "c"}, "taskId": task, "approvalId": approval});
        send(&desk.writer, "1", on(&pending)).await.refused(403, "skill_side_effect_not_authorized");
        core.post(&desk.decider, &format!("/approvals/{pending}:decide"), &json!({"outcome": "rejected"}))
            .await
            .ok(200);
        send(&desk.writer, "1", on(&pending)).await.refused(403, "skill_side_effect_not_authorized");
        let elsewhere = desk.task("plain", "C-2").await;
        let foreign = desk.approved(&elsewhere).await;
        send(&desk.writer, "1", on(&foreign)).await.refused(403, "skill_side_effect_not_authorized");
        let not_gate = id(core.post(&desk.writer, "/approvals", &json!({"taskId": task, "gate": false})).await.ok(201));
        core.post(&desk.decider, &format!("/approvals/{not_gate}:decide"), &json!({"outcome": "approved"}))
            .await
            .ok(200);
        send(&desk.writer, "1", on(&not_gate)).await.refused(403, "skill_side_effect_not_authorized");
        send(&desk.writer, "1", on("no-such-approval")).await.refused(403, "skill_side_effect_not_authorized");

        // An approved gate covers only what was decided: a gate asked for nothing covers no call
        // of its requester, and says what it does cover.
        let approval = desk.approved(&task).await;
        let uncovered = send(&desk.writer, "1", on(&approval)).await;
        let details = &uncovered.refused(403, "approval_does_not_cover").body["error"]["details"];
        assert_eq!((details["approvalId"].clone(), details["covers"].clone()), (json!(approval), json!([])));
        // A gate asked for one call: exactly that call, by its requester, once.
        let asked = json!({"claim": "k"});
        let approval = desk.approved_for(&task, "claim.send@1", asked.clone()).await;
        let on = |approval: &str, inputs: &Value| json!({"inputs": inputs, "taskId": task, "approvalId": approval});
        let other = send(&desk.writer, "1", on(&approval, &json!({"claim": "other"}))).await;
        let covers = &other.refused(403, "approval_does_not_cover").body["error"]["details"]["covers"];
        assert_eq!(covers, &json!([{"skill": "claim.send@1", "inputs": asked, "by": "requester"}]));
        send(&desk.decider, "1", on(&approval, &asked)).await.refused(403, "approval_does_not_cover");
        send(&desk.writer, "2", on(&approval, &asked)).await.refused(403, "approval_does_not_cover");
        let first = send(&desk.writer, "1", on(&approval, &asked)).await.ok(201).clone();
        assert_eq!(
            first["authorizationBasis"],
            json!({"kind": "approval", "approvalId": approval, "decidedBy": first["authorizationBasis"]["decidedBy"]})
        );
        assert_eq!(first["taskId"], task);
        // Once, whatever became of the call; a repeat of the same key is no second use.
        core.act(&desk.writer, &id(&first), "cancel", json!({})).await.ok(200);
        let again = send(&desk.writer, "1", on(&approval, &asked)).await;
        let details = &again.refused(409, "approval_already_used").body["error"]["details"];
        assert_eq!((details["approvalId"].clone(), details["skill"].clone()), (json!(approval), json!("claim.send@1")));
        let approval = desk.approved_for(&task, "claim.send@2", asked.clone()).await;
        let keyed = json!({"inputs": asked, "taskId": task, "approvalId": approval, "idempotencyKey": "send-k"});
        let second_version = send(&desk.writer, "2", keyed.clone()).await.ok(201).clone();
        assert_eq!(send(&desk.writer, "2", keyed).await.ok(200)["id"], second_version["id"]);
        // What a call is asked for is checked when asking: a named version, inputs it takes.
        let writer = &desk.writer;
        let ask = |call: Value| {
            let body = json!({"taskId": task, "call": call});
            async move { core.post(writer, "/approvals", &body).await }
        };
        ask(json!({"skill": "claim.send", "inputs": asked})).await.refused(400, "invalid_request");
        ask(json!({"skill": "claim.send@1", "inputs": {"claim": "far too long a claim"}}))
            .await
            .refused(400, "invalid_skill_inputs");
        ask(json!({"skill": "claim.nothing@1", "inputs": {}})).await.refused(404, "not_found");

        // Closed: task_terminal, before the approval is looked at.
        let approval = desk.approved_for(&task, "claim.send@1", json!({"claim": "z"})).await;
        core.post(&desk.writer, &format!("/tasks/{task}:close"), &json!({"status": "done"})).await.ok(200);
        send(&desk.writer, "1", on(&approval, &json!({"claim": "z"}))).await.refused(409, "task_terminal");
    })
    .await;
}

#[tokio::test]
async fn runs_and_executions_bound_the_calls_made_in_them() {
    each_backend("work-runs", |core| async move {
        let desk = desk(core, "runs").await;
        let core = &desk.core;
        let task = desk.task("plain", "C-1").await;
        let other = desk.task("plain", "C-2").await;
        let run = id(core.post(&desk.writer, "/runs", &json!({"taskId": task})).await.ok(201));
        let theirs = id(core.post(&desk.decider, "/runs", &json!({"taskId": task})).await.ok(201));
        let classify = |body: Value| core.invoke(&desk.writer, "claim.classify@1", body);
        // 8. the caller's own running run.
        classify(json!({"inputs": {"claim": "c"}, "runId": theirs})).await.refused(403, "run_owner_mismatch");
        classify(json!({"inputs": {"claim": "c"}, "runId": "no-such-run"})).await.refused(404, "not_found");
        // 9. the run's task is the task.
        let mismatch = classify(json!({"inputs": {"claim": "c"}, "runId": run, "taskId": other})).await;
        mismatch.refused(422, "invocation_mismatch");
        let in_run = classify(json!({"inputs": {"claim": "c"}, "runId": run})).await.ok(201).clone();
        assert_eq!(
            (in_run["taskId"].clone(), in_run["requestedBy"].clone()),
            (json!(task), json!({"kind": "run", "ref": run}))
        );
        core.post(&desk.writer, &format!("/runs/{run}:end"), &json!({"status": "cancelled"})).await.ok(200);
        classify(json!({"inputs": {"claim": "c"}, "runId": run})).await.refused(409, "run_not_active");

        // An execution-pinned type: a person's own run never carries the task's execution. The
        // pinned version's call is refused, naming why, whatever its inputs; a call that does
        // not write is made, on no basis.
        let body = json!({"workspace": "desk", "taskType": "auto", "title": "A claim",
                          "customFields": {"claim": "C-3"}, "approval": {"comment": "send?"}});
        let auto = id(core.post(&desk.writer, "/tasks", &body).await.ok(201));
        let run = id(core.post(&desk.writer, "/runs", &json!({"taskId": auto})).await.ok(201));
        for claim in ["C-3", "other"] {
            let body = json!({"inputs": {"claim": claim}, "runId": run, "idempotencyKey": format!("e-{claim}")});
            let own = core.invoke(&desk.writer, "claim.send@1", body).await;
            let details = &own.refused(403, "skill_side_effect_not_authorized").body["error"]["details"];
            assert_eq!(details["reason"], "execution_is_the_cores", "{claim}");
        }
        let read = core.invoke(&desk.writer, "claim.classify@1", json!({"inputs": {"claim": "c"}, "runId": run})).await;
        assert_eq!(read.ok(201)["authorizationBasis"], Value::Null);
    })
    .await;
}

#[tokio::test]
async fn a_waiting_call_whose_basis_is_gone_is_cancelled_when_claimed() {
    each_backend("work-recheck", |core| async move {
        let desk = desk(core, "recheck").await;
        let core = &desk.core;
        let writer = &desk.writer;
        let send = |task: &str, approval: &str, key: &str| {
            let body = json!({"inputs": {"claim": "c"}, "taskId": task, "approvalId": approval, "idempotencyKey": key});
            async move { id(core.invoke(writer, "claim.send@1", body).await.ok(201)) }
        };
        let approved = |task: String| {
            let desk = &desk;
            async move { desk.approved_for(&task, "claim.send@1", json!({"claim": "c"})).await }
        };
        // Withdrawn while it waited.
        let task = desk.task("plain", "C-1").await;
        let approval = approved(task.clone()).await;
        let call = send(&task, &approval, "w-1").await;
        core.post(&desk.decider, &format!("/approvals/{approval}:withdraw"), &json!({})).await.ok(200);
        assert_eq!(desk.claim_send(&call).await.status.as_u16(), 204);
        let cancelled = desk.call(&call).await;
        assert_eq!(
            (cancelled["status"].clone(), cancelled["error"]["code"].clone(), cancelled["error"]["message"].clone()),
            (json!("cancelled"), json!("basis_revoked"), json!("approval_withdrawn"))
        );
        assert_eq!(cancelled["error"]["details"]["initiator"], "system");
        // Its task closed while it waited.
        let task = desk.task("plain", "C-2").await;
        let approval = approved(task.clone()).await;
        let call = send(&task, &approval, "t-1").await;
        core.post(&desk.writer, &format!("/tasks/{task}:close"), &json!({"status": "cancelled"})).await.ok(200);
        assert_eq!(desk.claim_send(&call).await.status.as_u16(), 204);
        assert_eq!(desk.call(&call).await["error"]["message"], "task_terminal");
        // Still valid: taken.
        let task = desk.task("plain", "C-3").await;
        let approval = approved(task.clone()).await;
        let call = send(&task, &approval, "ok-1").await;
        let taken = desk.claim_send(&call).await;
        assert_eq!(taken.ok(200)["invocation"]["id"], call);
        // A call already taken is not revoked by a later withdrawal: its executor finishes it.
        core.post(&desk.decider, &format!("/approvals/{approval}:withdraw"), &json!({})).await.ok(200);
        let done =
            core.act(&core.executor, &call, "complete", json!({"fencingToken": 1, "output": {"label": "sent"}})).await;
        assert_eq!(done.ok(200)["status"], "succeeded");

        // The task's execution, queued by the core once its gate was approved: the approval taken
        // back decides nothing any more — the call is cancelled (at claim, or by the core), its run
        // ends, and the task waits for a new gate.
        let auto = desk.approved_task("auto", "C-4").await;
        let queued = id(&desk.core.calls_of(&auto, 1).await[0]);
        let listed = core.get(&desk.writer, &format!("/approvals?task={auto}")).await.ok(200).clone();
        let gate = id(&listed["items"][0]);
        core.post(&desk.writer, &format!("/approvals/{gate}:withdraw"), &json!({})).await.ok(200);
        assert_eq!(desk.claim_send(&queued).await.status.as_u16(), 204);
        let withdrawn = desk.call(&queued).await;
        assert_eq!(
            (withdrawn["status"].clone(), withdrawn["error"]["message"].clone()),
            (json!("cancelled"), json!("approval_withdrawn"))
        );
        let run = withdrawn["runId"].as_str().expect("a run").to_owned();
        let ended = core.until(&desk.writer, &format!("/runs/{run}"), |run| run["status"] != "running").await;
        assert_eq!(
            (ended["status"].clone(), ended["error"]["code"].clone()),
            (json!("cancelled"), json!("gate_withdrawn"))
        );
        assert_eq!(core.get(&desk.writer, &format!("/tasks/{auto}")).await.ok(200)["status"], "open", "it waits");
        // A new gate approved: the core makes the task's one execution call again, and it runs.
        let gate = desk.approved(&auto).await;
        let calls = desk.core.calls_of(&auto, 2).await;
        let again = id(&calls[1]);
        assert_eq!(desk.claim_send(&again).await.ok(200)["invocation"]["id"], again, "{gate}");
        // Rejected while it waits: cancelled at claim naming the gate, and the task fails for it.
        let auto = desk.approved_task("auto", "C-5").await;
        let queued = id(&desk.core.calls_of(&auto, 1).await[0]);
        let gate = id(core.post(&desk.writer, "/approvals", &json!({"taskId": auto})).await.ok(201));
        core.post(&desk.decider, &format!("/approvals/{gate}:decide"), &json!({"outcome": "rejected"})).await.ok(200);
        let failed = core.until(&desk.writer, &format!("/tasks/{auto}"), |task| task["status"] != "open").await;
        assert_eq!(
            (failed["status"].clone(), failed["closeReason"].clone()),
            (json!("failed"), json!("gate_rejected"))
        );
        assert_eq!(desk.claim_send(&queued).await.status.as_u16(), 204);
        assert_eq!(desk.call(&queued).await["error"]["message"], "gate_rejected");
        // A version disabled while its call waited: cancelled, even without a basis.
        let plain = id(core.invoke(&desk.writer, "claim.classify@1", json!({"inputs": {"claim": "c"}})).await.ok(201));
        core.disable("claim.classify@1").await;
        let classify = json!({"protocols": ["local"], "localEntrypoints": ["claims.skills:claim_classify"],
                              "invocationId": plain});
        assert_eq!(core.claim(classify).await.status.as_u16(), 204);
        let disabled = desk.call(&plain).await;
        assert_eq!(
            (disabled["error"]["code"].clone(), disabled["error"]["message"].clone()),
            (json!("basis_revoked"), json!("skill_disabled"))
        );
    })
    .await;
}

#[tokio::test]
async fn the_core_carries_out_a_task_its_type_pins_to_a_skill() {
    each_backend("work-execution", |core| async move {
        let desk = desk(core, "execution").await;
        let core = &desk.core;
        // A task whose execution writes, asked for without a gate: nothing was decided, so nothing
        // is called — until a person approves a gate.
        let task = desk.task("auto", "C-9").await;
        for _ in 0..3 {
            core.engine.run_executions(chrono::Utc::now()).await.expect("a pass");
        }
        assert!(desk.core.calls_of(&task, 0).await.is_empty(), "no call without a decision");
        let first = id(core.post(&desk.writer, "/approvals", &json!({"taskId": task})).await.ok(201));
        core.post(&desk.decider, &format!("/approvals/{first}:decide"), &json!({"outcome": "approved"})).await.ok(200);
        // The execution worker starts a run and calls the pinned version with the task's fields.
        let call = desk.core.calls_of(&task, 1).await.remove(0);
        let run = call["runId"].as_str().expect("a run").to_owned();
        assert_eq!(call["idempotencyKey"], format!("execution:{run}"));
        assert_eq!(call["inputs"], json!({"claim": "C-9"}));
        assert_eq!(call["authorizationBasis"]["kind"], "execution");
        let worker = core.get(&desk.writer, &format!("/runs/{run}")).await.ok(200)["ownerPrincipalId"].clone();
        assert_eq!(call["authorityPrincipalId"], worker);
        // A gate requested while the call waits holds it at claim, and the decision frees it.
        let gate = id(core.post(&desk.writer, "/approvals", &json!({"taskId": task})).await.ok(201));
        let call_id = id(&call);
        assert_eq!(desk.claim_send(&call_id).await.status.as_u16(), 204);
        assert_eq!(desk.call(&call_id).await["status"], "pending", "held, not cancelled");
        core.post(&desk.decider, &format!("/approvals/{gate}:decide"), &json!({"outcome": "approved"})).await.ok(200);
        assert_eq!(desk.claim_send(&call_id).await.ok(200)["invocation"]["id"], call_id);
        core.act(&core.executor, &call_id, "complete", json!({"fencingToken": 1, "output": {"label": "sent"}}))
            .await
            .ok(200);
        // The run ends with the call's result, and the task is done.
        let ended = desk.core.until(&desk.writer, &format!("/runs/{run}"), |run| run["status"] != "running").await;
        assert_eq!(
            (ended["status"].clone(), ended["result"]["skillInvocationId"].clone()),
            (json!("succeeded"), json!(call_id))
        );
        assert_eq!(core.get(&desk.writer, &format!("/tasks/{task}")).await.ok(200)["status"], "done");
        // A failed call fails the run and the task.
        let failing = desk.approved_task("auto", "C-10").await;
        let call = id(&desk.core.calls_of(&failing, 1).await[0]);
        desk.claim_send(&call).await.ok(200);
        let error = json!({"fencingToken": 1, "error": {"code": "mailbox_full", "message": "no room"}});
        core.act(&core.executor, &call, "fail", error).await.ok(200);
        let task = desk.core.until(&desk.writer, &format!("/tasks/{failing}"), |task| task["status"] != "open").await;
        assert_eq!(task["status"], "failed");
        // Exactly one execution call per task: the worker never made a second.
        assert_eq!(desk.core.calls_of(&failing, 1).await.len(), 1);
        // A call nobody runs within the execution's bound is cancelled, and the task fails.
        let waiting = desk.approved_task("auto", "C-11").await;
        let call = id(&desk.core.calls_of(&waiting, 1).await[0]);
        let later = chrono::Utc::now() + chrono::Duration::hours(1);
        for _ in 0..100 {
            core.engine.run_executions(later).await.expect("a pass");
            if core.get(&desk.writer, &format!("/tasks/{waiting}")).await.ok(200)["status"] != "open" {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
        let cancelled = desk.call(&call).await;
        assert_eq!(
            (cancelled["status"].clone(), cancelled["error"]["message"].clone()),
            (json!("cancelled"), json!("execution_deadline"))
        );
        assert_eq!(core.get(&desk.writer, &format!("/tasks/{waiting}")).await.ok(200)["status"], "failed");
    })
    .await;
}

#[tokio::test]
async fn an_approved_gate_sends_with_the_deciders_authority_once() {
    each_backend("work-outcome", |core| async move {
        let desk = desk(core, "outcome").await;
        let core = &desk.core;
        let task = desk.task("claim-reply@1", "C-7").await;
        let approval = id(core.post(&desk.writer, "/approvals", &json!({"taskId": task})).await.ok(201));
        let body = json!({"outcome": "approved", "comment": "Apologise and refund."});
        let decided = core.post(&desk.decider, &format!("/approvals/{approval}:decide"), &body).await.ok(200).clone();
        assert_eq!(decided["outcome"]["status"], "running");
        // The outcome's call: the decider's authority, the approval as basis, inputs from the task
        // and the decision, the outcome's key.
        let call = desk.core.calls_of(&task, 1).await.remove(0);
        let decider = decided["decidedBy"].clone();
        assert_eq!(call["authorityPrincipalId"], decider);
        assert_eq!(call["requestedBy"], json!({"kind": "principal", "ref": decider}));
        assert_eq!(call["idempotencyKey"], format!("approval-outcome:{approval}:0"));
        assert_eq!(
            call["authorizationBasis"],
            json!({"kind": "approval", "approvalId": approval, "decidedBy": decider})
        );
        assert_eq!(call["inputs"], json!({"claim": "C-7", "comment": "Apologise and refund."}));
        // The approval covers that call only, made by the core: the decider's own call, with the
        // same inputs or others, is not it.
        for inputs in [json!({"claim": "C-7", "comment": "Apologise and refund."}), json!({"claim": "C-7"})] {
            let again = json!({"inputs": inputs, "taskId": task, "approvalId": approval});
            let refused = core.invoke(&desk.decider, "claim.send@1", again).await;
            let covers = &refused.refused(403, "approval_does_not_cover").body["error"]["details"]["covers"];
            assert_eq!(
                covers,
                &json!([{"skill": "claim.send@1", "by": "outcome",
                         "inputs": {"claim": "C-7", "comment": "Apologise and refund."}}])
            );
        }
        assert_eq!(
            decided["outcome"]["actions"][0]["inputs"],
            json!({"claim": "C-7", "comment": "Apologise and refund."})
        );
        // The call runs; its success with the expected output runs onSuccess: the task is done, with a comment.
        let call_id = id(&call);
        desk.run_send(&call_id, json!({"label": "sent"})).await;
        let ended = desk.outcome_ended(&approval).await;
        assert_eq!(
            (ended["outcome"]["status"].clone(), ended["outcome"]["reaction"].clone()),
            (json!("succeeded"), json!("onSuccess"))
        );
        assert_eq!(ended["outcome"]["actions"][0]["invocationId"], call_id);
        assert_eq!(core.get(&desk.writer, &format!("/tasks/{task}")).await.ok(200)["status"], "done");
        let comments = core.get(&desk.writer, &format!("/task-comments?task={task}")).await.ok(200).clone();
        assert_eq!(comments["items"][0]["body"], "The reply was sent.");
        assert_eq!(comments["items"][0]["authorPrincipalId"], decider);
        assert_eq!(desk.core.calls_of(&task, 1).await.len(), 1, "sent once");

        // An output that does not meet `expect`: onFailure, and the task stays open.
        let task = desk.task("claim-reply@1", "C-8").await;
        let approval = desk.approved(&task).await;
        let call = id(&desk.core.calls_of(&task, 1).await[0]);
        desk.run_send(&call, json!({"label": "queued"})).await;
        let ended = desk.outcome_ended(&approval).await;
        assert_eq!(
            (ended["outcome"]["status"].clone(), ended["outcome"]["reaction"].clone()),
            (json!("failed"), json!("onFailure"))
        );
        assert_eq!(ended["outcome"]["actions"][0]["error"]["code"], "expectation_not_met");
        assert_eq!(core.get(&desk.writer, &format!("/tasks/{task}")).await.ok(200)["status"], "open");

        // Withdrawn before it was claimed: the call is cancelled at claim, neither branch runs.
        let task = desk.task("claim-reply@1", "C-9").await;
        let approval = desk.approved(&task).await;
        let call = id(&desk.core.calls_of(&task, 1).await[0]);
        core.post(&desk.decider, &format!("/approvals/{approval}:withdraw"), &json!({})).await.ok(200);
        assert_eq!(desk.claim_send(&call).await.status.as_u16(), 204);
        let ended = desk.outcome_ended(&approval).await;
        assert_eq!(
            (ended["outcome"]["status"].clone(), ended["outcome"]["reaction"].clone()),
            (json!("skipped"), Value::Null)
        );

        // Nobody claims it for a day: cancelled by the system, and the failure branch runs.
        let task = desk.task("claim-reply@1", "C-10").await;
        let approval = desk.approved(&task).await;
        let call = id(&desk.core.calls_of(&task, 1).await[0]);
        // (A pass a day later; the background pass may be noting the call at the same moment.)
        let mut cancelled = desk.call(&call).await;
        for _ in 0..100 {
            core.engine.run_outcomes(chrono::Utc::now() + skill_engine::work::SKILL_WAIT).await.expect("a pass");
            cancelled = desk.call(&call).await;
            if cancelled["status"] != "pending" {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
        assert_eq!(
            (cancelled["status"].clone(), cancelled["error"]["code"].clone()),
            (json!("cancelled"), json!("approval_outcome_skill_wait_expired"))
        );
        let ended = desk.outcome_ended(&approval).await;
        assert_eq!(ended["outcome"]["reaction"], "onFailure");
    })
    .await;
}

#[tokio::test]
async fn an_agent_calls_only_what_its_assignments_grant() {
    each_backend("work-gating", |core| async move {
        let desk = desk(core, "gating").await;
        let core = &desk.core;
        core.publish(json!({"name": "claims.desk", "version": "1", "includes": ["claim.classify@1", "claim.send@1"]}))
            .await;
        let request = skill_engine::TokenRequest {
            principal: "triage-bot".to_owned(),
            kind: "agent".to_owned(),
            grants: vec!["skills.invoke".to_owned(), "tasks.write@desk".to_owned()],
            label: String::new(),
            expires_at: None,
        };
        let operator = crate::api::agent_operator(&core.engine).await;
        let agent = core.engine.issue_token_for(&request, Some(operator), &Origin::default()).await.expect("token");
        let (bot, bot_id) = (agent.token, agent.principal.id);
        let task = desk.task("plain", "C-1").await;
        // The agent asks for a decision on its own call; a person approves it.
        let ask = json!({"taskId": task, "call": {"skill": "claim.send@1", "inputs": {"claim": "c"}}});
        let approval = id(core.post(&bot, "/approvals", &ask).await.ok(201));
        core.post(&desk.decider, &format!("/approvals/{approval}:decide"), &json!({"outcome": "approved"}))
            .await
            .ok(200);
        let classify = json!({"inputs": {"claim": "c"}});
        let send = json!({"inputs": {"claim": "c"}, "taskId": task, "approvalId": approval});
        // Nothing assigned: nothing granted.
        let refused = core.invoke(&bot, "claim.classify@1", classify.clone()).await;
        let details = &refused.refused(403, "tool_not_authorized").body["error"]["details"];
        assert_eq!(
            (details["skill"].clone(), details["reason"].clone()),
            (json!("claim.classify@1"), json!("not_assigned"))
        );
        // The composite assigned read-only: its reading tool is granted, its writing one never.
        let path = format!("/principals/{bot_id}/skills");
        let assign = |body: Value| {
            let path = &path;
            async move { core.post(&core.admin, path, &body).await }
        };
        assign(json!({"skillId": "claims.desk@1", "readOnly": true})).await.ok(201);
        core.invoke(&bot, "claim.classify@1", classify.clone()).await.ok(201);
        let write = core.invoke(&bot, "claim.send@1", send.clone()).await;
        assert_eq!(write.refused(403, "tool_not_authorized").body["error"]["details"]["reason"], "read_only");
        // The same composite with writing allowed: the basis rules still apply, and then it runs.
        assert_eq!(assign(json!({"skillId": "claims.desk@1"})).await.ok(200)["updated"], true);
        assert_eq!(core.invoke(&bot, "claim.send@1", send.clone()).await.ok(201)["authorityPrincipalId"], bot_id);
        // A person is not gated by assignments.
        core.invoke(&desk.writer, "claim.classify@1", classify).await.ok(201);
    })
    .await;
}

#[tokio::test]
async fn an_execution_writes_its_typed_outputs_as_artifacts_of_their_types() {
    each_backend("work-typed-outputs", |core| async move {
        let desk = desk(core, "typed").await;
        let core = &desk.core;
        let summary = json!({"key": "claim.summary", "version": "1", "maxBytes": 200,
            "metadataSchema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}});
        core.post(&core.admin, "/artifact-types", &summary).await.ok(201);
        core.post(&core.admin, "/artifact-types", &summary).await.refused(409, "artifact_type_exists");
        let label = json!({"key": "claim.label", "version": "1", "mediaTypes": ["text/plain"]});
        core.post(&core.admin, "/artifact-types", &label).await.ok(201);
        let bad = json!({"key": "x", "version": "1", "mediaTypes": ["plain"]});
        let answer = core.post(&core.admin, "/artifact-types", &bad).await;
        assert_eq!(answer.refused(422, "invalid_artifact_type").body["error"]["details"]["field"], "mediaTypes[0]");
        let read = core.get(&desk.writer, "/artifact-types/claim.summary").await.ok(200).clone();
        assert_eq!((read["version"].clone(), read["mediaTypes"].clone()), (json!("1"), json!(["application/json"])));

        // A task type's slots name published types; each key once.
        let slots = json!([
            {"key": "summary", "type": "claim.summary", "required": true},
            {"key": "label", "type": "claim.label"},
            {"key": "notes", "type": "claim.summary"},
            {"key": "extra", "type": "claim.summary", "required": true},
            {"key": "memo", "type": "claim.summary"}]);
        let typed = |outputs: Value| {
            json!({"key": "summarized", "version": "1", "customFields": {"claim": {"type": "string"}},
                   "execution": {"skill": "claim.send", "version": "1"}, "artifactSchema": {"outputs": outputs}})
        };
        let unknown = core.post(&core.admin, "/task-types", &typed(json!([{"key": "a", "type": "nope"}]))).await;
        assert_eq!(
            unknown.refused(422, "unknown_reference").body["error"]["details"]["field"],
            "artifactSchema.outputs[0].type"
        );
        let twice = json!([{"key": "a", "type": "claim.label"}, {"key": "a", "type": "claim.label"}]);
        let twice = core.post(&core.admin, "/task-types", &typed(twice)).await;
        assert_eq!(
            twice.refused(422, "invalid_task_type").body["error"]["details"]["field"],
            "artifactSchema.outputs[1].key"
        );
        core.post(&core.admin, "/task-types", &typed(slots)).await.ok(201);

        // One call: each slot created, rejected with its reason, missing or absent; the call succeeds.
        let task = desk.approved_task("summarized", "C-1").await;
        let call = id(&core.calls_of(&task, 1).await[0]);
        desk.run_send(&call, json!({"label": "sent", "summary": {"text": "Paid"}, "notes": {"text": 5}})).await;
        let done = desk.call(&call).await;
        assert_eq!(done["status"], "succeeded");
        let listed = core.get(&desk.writer, &format!("/artifacts?task={task}")).await.ok(200)["items"].clone();
        let result =
            listed.as_array().expect("a list").iter().find(|a| a["type"] == "skill_result").expect("a result").clone();
        assert_eq!(done["artifactId"], result["id"]);
        let outputs = result["metadata"]["outputs"].clone();
        let status = |key: &str| (outputs[key]["status"].clone(), outputs[key]["code"].clone());
        assert_eq!(status("summary").0, "created");
        assert_eq!(status("label"), (json!("rejected"), json!("media_type_not_allowed")));
        assert_eq!(status("notes"), (json!("rejected"), json!("invalid_output_value")));
        assert_eq!(status("extra").0, "missing");
        assert_eq!(status("memo").0, "absent");
        let made = core
            .get(&desk.writer, &format!("/artifacts/{}", outputs["summary"]["artifactId"].as_str().expect("an id")))
            .await
            .ok(200)
            .clone();
        assert_eq!(
            (
                made["type"].clone(),
                made["name"].clone(),
                made["metadata"]["output"].clone(),
                made["supersedesId"].clone()
            ),
            (json!("claim.summary"), json!("summary.json"), json!("summary"), Value::Null)
        );
        assert_eq!(
            (made["runId"].clone(), made["authorPrincipalId"].clone()),
            (done["runId"].clone(), done["authorityPrincipalId"].clone())
        );
        let content = core
            .get(&desk.writer, &format!("/artifacts/{}/content", made["id"].as_str().expect("id")))
            .await
            .ok(200)
            .clone();
        assert_eq!(content, json!({"text": "Paid"}));
        assert_eq!(listed.as_array().map(Vec::len), Some(2), "the summary and the result, nothing rejected");

        // A person's artifact of the type fits it; a typed output then supersedes it, and a second
        // slot of the same type supersedes the first.
        let other = desk.approved_task("summarized", "C-2").await;
        let call = id(&core.calls_of(&other, 1).await[0]);
        let upload = |media: &str, metadata: Value, text: String| {
            json!({"taskId": other, "type": "claim.summary", "name": "draft.json", "mediaType": media,
                   "metadata": metadata, "text": text})
        };
        let wrong =
            core.post(&desk.writer, "/artifacts", &upload("text/plain", json!({"text": "d"}), "{}".into())).await;
        assert_eq!(wrong.refused(422, "media_type_not_allowed").body["error"]["details"]["field"], "mediaType");
        let wrong = core.post(&desk.writer, "/artifacts", &upload("application/json", json!({}), "{}".into())).await;
        assert_eq!(wrong.refused(422, "invalid_artifact_metadata").body["error"]["details"]["field"], "metadata");
        let big = core
            .post(&desk.writer, "/artifacts", &upload("application/json", json!({"text": "d"}), "x".repeat(201)))
            .await;
        big.refused(413, "artifact_too_large");
        let draft = id(core
            .post(&desk.writer, "/artifacts", &upload("application/json", json!({"text": "d"}), "{}".into()))
            .await
            .ok(201));
        let long = "x".repeat(300);
        desk.run_send(
            &call,
            json!({"label": "sent", "summary": {"text": "Final"}, "notes": {"text": long}, "extra": {"text": "e"}}),
        )
        .await;
        let result = desk.call(&call).await["artifactId"].as_str().expect("a result").to_owned();
        let outputs =
            core.get(&desk.writer, &format!("/artifacts/{result}")).await.ok(200)["metadata"]["outputs"].clone();
        assert_eq!(
            (outputs["notes"]["status"].clone(), outputs["notes"]["code"].clone()),
            (json!("rejected"), json!("artifact_too_large"))
        );
        let summary = outputs["summary"]["artifactId"].as_str().expect("created").to_owned();
        let extra = outputs["extra"]["artifactId"].as_str().expect("created").to_owned();
        for (id, supersedes) in [(&summary, &draft), (&extra, &summary)] {
            let read = core.get(&desk.writer, &format!("/artifacts/{id}")).await.ok(200)["supersedesId"].clone();
            assert_eq!(read, json!(supersedes));
        }
        // The succeeded event lists the same statuses.
        let events = core.get(&core.admin, &format!("/events?subject=skill_invocation:{call}")).await.ok(200).clone();
        let events = events["items"].as_array().expect("events").clone();
        let succeeded = events.iter().find(|e| e["kind"] == "skill.invocation_succeeded").expect("its event");
        assert_eq!(succeeded["data"]["outputs"]["summary"]["artifactId"], json!(summary));
    })
    .await;
}

/// A decision is a person's: no agent or executor ever holds `approvals.decide` (the database
/// refuses the grant), so two robots — one asking, one deciding — never send without a person.
#[tokio::test]
async fn only_a_person_decides_an_approval() {
    each_backend("work-people-decide", |core| async move {
        let desk = desk(core, "people").await;
        let core = &desk.core;
        let task = desk.task("claim-reply@1", "C-3").await;
        let approval = core.post(&desk.writer, "/approvals", &json!({"taskId": task})).await.ok(201)["id"]
            .as_str()
            .expect("id")
            .to_owned();
        let grants = ["skills.invoke", "tasks.write@desk", "approvals.decide@desk"];
        // A robot never even holds the permission: the core refuses the grant (and so would the
        // database).
        for kind in ["agent", "executor"] {
            let request = skill_engine::TokenRequest {
                principal: format!("robot-{kind}"),
                kind: kind.into(),
                grants: grants.map(String::from).to_vec(),
                label: String::new(),
                expires_at: None,
            };
            let refused = core.engine.issue_token(&request, &Default::default()).await.expect_err("refused");
            assert_eq!(
                (refused.code.as_str(), refused.class),
                ("agent_permission_forbidden", skill_engine::Class::Forbidden)
            );
            assert_eq!(refused.details["permission"], "approvals.decide");
            let robot = crate::api::token_of_kind(&core.engine, &format!("robot-{kind}"), kind, &grants[..2]).await;
            for verb in ["decide", "withdraw", "retry"] {
                let body = if verb == "decide" { json!({"outcome": "approved"}) } else { json!({}) };
                let refused = core.post(&robot, &format!("/approvals/{approval}:{verb}"), &body).await;
                assert_eq!(refused.status.as_u16(), 403, "{kind} {verb}: {}", refused.body);
            }
        }
        assert_eq!(core.get(&desk.writer, &format!("/approvals/{approval}")).await.ok(200)["status"], "pending");
        core.post(&desk.decider, &format!("/approvals/{approval}:decide"), &json!({"outcome": "approved"}))
            .await
            .ok(200);
    })
    .await;
}

/// Two cores on one PostgreSQL database, each running its outcome worker, race over 200 gates
/// approved through one or the other: every outcome's call is made once, every reply is sent
/// once and every task closes once.
#[tokio::test]
async fn two_cores_carry_out_200_decided_outcomes_each_once() {
    let first = crate::calls::core(crate::calls::Backend::Postgres, "race").await;
    let desk = desk(first, "race").await;
    let core = &desk.core;
    // The second core: the same database, its own workers and API.
    let store = skill_store::open(&core.target, &Default::default()).await.expect("the same database");
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("a port");
    let second = format!("http://{}/api/v1", listener.local_addr().expect("address"));
    let other = skill_engine::Engine::new(store);
    tokio::spawn(skill_server::serve_with(
        other.clone(),
        listener,
        Default::default(),
        Default::default(),
        std::future::pending(),
    ));
    let http = reqwest::Client::new();
    let (mut tasks, mut gates) = (Vec::new(), Vec::new());
    for n in 0..200 {
        let body = json!({"workspace": "desk", "taskType": "claim-reply", "title": "A claim",
                          "customFields": {"claim": format!("c-{n}")}, "approval": {"comment": "send?"}});
        let task = id(core.post(&desk.writer, "/tasks", &body).await.ok(201));
        let listed = core.get(&desk.writer, &format!("/approvals?task={task}")).await.ok(200).clone();
        gates.push(id(&listed["items"][0]));
        tasks.push(task);
    }
    // All decided at once, through one core or the other (each wakes its own worker), while the
    // two cores also carry out the outcomes themselves at the same moment, over and over: both
    // invoke the same actions at once.
    let decisions = futures::future::join_all(gates.iter().enumerate().map(|(n, gate)| {
        let base = if n % 2 == 0 { core.base.clone() } else { second.clone() };
        let request = http
            .post(format!("{base}/approvals/{gate}:decide"))
            .bearer_auth(&desk.decider)
            .json(&json!({"outcome": "approved", "comment": "ok"}));
        async move { request.send().await.expect("answers").status().as_u16() }
    }));
    let racing = async {
        for _ in 0..20 {
            let now = core.engine.now();
            let _ = tokio::join!(core.engine.run_outcomes(now), other.run_outcomes(now));
        }
    };
    let (decided, ()) = tokio::join!(decisions, racing);
    assert!(decided.iter().all(|status| *status == 200), "{decided:?}");
    // An executor runs whatever send is queued until every task is closed.
    let mut sent = 0;
    for _ in 0..2000 {
        let claim = json!({"protocols": ["local"], "localEntrypoints": [SEND], "waitSeconds": 1});
        let claimed = core.claim(claim).await;
        if claimed.status == reqwest::StatusCode::OK {
            let call = id(&claimed.body["invocation"]);
            let report =
                json!({"fencingToken": claimed.body["invocation"]["fencingToken"], "output": {"label": "sent"}});
            core.act(&core.executor, &call, "complete", report).await.ok(200);
            sent += 1;
        } else if sent == 200 {
            break;
        }
    }
    let send = core.get(&core.admin, "/skills/claim.send@1").await.ok(200)["id"].as_str().expect("id").to_owned();
    let filter = skill_store::records::InvocationFilter { skill_id: Some(send), limit: 1000, ..Default::default() };
    let calls = core.engine.store().invocations(&filter).await.expect("calls");
    let per_task: std::collections::BTreeMap<String, usize> =
        calls.iter().fold(std::collections::BTreeMap::new(), |mut all, call| {
            *all.entry(call.task_id.clone().unwrap_or_default()).or_default() += 1;
            all
        });
    assert_eq!((calls.len(), per_task.len(), sent), (200, 200, 200), "one send per task, each run once");
    assert!(per_task.values().all(|count| *count == 1));
    for task in &tasks {
        let read = core.until(&desk.writer, &format!("/tasks/{task}"), |t| t["status"] != "open").await;
        assert_eq!(read["status"], "done", "{read}");
        let comments = core.get(&desk.writer, &format!("/task-comments?task={task}")).await.ok(200).clone();
        let said = comments["items"].as_array().into_iter().flatten().filter(|c| c["body"] == "The reply was sent.");
        assert_eq!(said.count(), 1, "the outcome's comment once: {comments}");
    }
}
