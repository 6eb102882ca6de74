//! The claims story end to end, on SQLite and on PostgreSQL: the `examples/claims` package
//! applied through the API (its skills and task types), its host running as the local executor,
//! people in a workspace. A reply is sent only on a basis: once a person approved it (the
//! approval's outcome sends it, once), or as a task's execution after its gate was decided. A
//! register import reads its CSV artifact and applies its snapshot at the state it previewed.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use skill_engine::Origin;
use skill_fixtures::Scratch;
use skill_sdk::core::http::HttpCore;
use skill_sdk::core::{CoreAccess, KnowledgeRoute, stale_state_token};

use crate::api::{executor_token, token};
use crate::calls::{Core, each_backend};

/// The state token of an empty knowledge slot.
const EMPTY_SLOT: &str = "st:44136fa355b3678a";

/// The claims package's folder.
fn package() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/claims")
}

/// The package's host binary, built with cargo as `skill-core dev` builds it.
pub(crate) fn host() -> PathBuf {
    let host = skill_package::host_crate::locate_own(&package()).expect("the claims crate");
    skill_package::host_crate::build(&host).expect("the claims host builds")
}

/// A child process killed when dropped.
pub(crate) struct Child(std::process::Child);

impl Drop for Child {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The messages in the outbox: `(claim, reply)`, sorted.
pub(crate) fn outbox(folder: &Scratch) -> Vec<(String, String)> {
    outbox_in(folder.path())
}

/// The messages in the outbox folder `folder`: `(claim, reply)`, sorted.
pub(crate) fn outbox_in(folder: &Path) -> Vec<(String, String)> {
    let mut sent: Vec<(String, String)> = std::fs::read_dir(folder)
        .expect("the outbox")
        .filter(|entry| entry.as_ref().is_ok_and(|entry| !entry.file_name().to_string_lossy().starts_with('.')))
        .map(|entry| {
            let text = std::fs::read_to_string(entry.expect("an entry").path()).expect("a message");
            let message: Value = serde_json::from_str(&text).expect("JSON");
            (
                message["claim"].as_str().unwrap_or_default().to_owned(),
                message["reply"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect();
    sent.sort();
    sent
}

#[tokio::test]
async fn a_person_approves_the_reply_and_the_outcome_sends_it_once() {
    let executable = host();
    each_backend("claims-story", |core| {
        let executable = executable.clone();
        async move { story(core, &executable).await }
    })
    .await;
}

/// The claims package, applied as `skill-sdk package apply` does (its skills, artifact types and
/// task types); applying it again publishes nothing twice. Answers the core's root address.
pub(crate) async fn apply_package(core: &Core) -> String {
    let loaded = skill_package::load(&package()).expect("the package");
    let root = core.base.trim_end_matches("/api/v1").to_owned();
    // The installer holds what the package's agents are granted, and their requests' workspace
    // exists.
    ensure_workspace(core, "claims").await;
    let grants = ["org.manage", "skills.invoke", "skills.execute", "claims.reply", "tasks.write@claims"];
    let installer = crate::api::token(&core.engine, "installer", &grants).await;
    let client = skill_client::Client::new(&root, installer).expect("a client");
    let changes = skill_package::plan(&loaded, &client, &[]).await.expect("a plan");
    skill_package::apply(&loaded, &client, &changes, |_| {}).await.expect("applied");
    let types = core.get(&core.admin, "/task-types").await.ok(200).clone();
    let keys: Vec<&str> = types["items"].as_array().expect("items").iter().filter_map(|t| t["key"].as_str()).collect();
    assert_eq!(keys, ["claim-import", "claim-reply", "claim-send"], "{types}");
    let changes = skill_package::plan(&loaded, &client, &[]).await.expect("a plan");
    let again = skill_package::apply(&loaded, &client, &changes, |_| {}).await.expect("applied again");
    assert_eq!(again, skill_package::Applied::Already);
    root
}

/// The package's host as the local executor of the core at `root`, with `token`.
pub(crate) fn executor(executable: &Path, root: &str, token: &str, outbox: &Scratch) -> Child {
    executor_with(executable, root, token, outbox, &[])
}

/// [`executor`] with more of the host's environment (a model: `SKILL_LLM_*`).
pub(crate) fn executor_with(
    executable: &Path,
    root: &str,
    token: &str,
    outbox: &Scratch,
    env: &[(&str, &str)],
) -> Child {
    Child(
        std::process::Command::new(executable)
            .args(["execute", "--core", root, "--concurrency", "2", "--grace", "5"])
            .envs(env.iter().copied())
            .env("SKILL_CORE_TOKEN", token)
            .env("CLAIMS_OUTBOX_DIR", outbox.path())
            .env_remove("CONTROL_PLANE_URL")
            .env_remove("CONTROL_PLANE_SERVER")
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("the host executes"),
    )
}

/// The workspace `key`, created unless the package's apply made it already.
pub(crate) async fn ensure_workspace(core: &Core, key: &str) {
    if core.engine.store().workspace_by_key(key).await.is_err() {
        core.engine.create_workspace(key, "Claims desk", &Origin::default()).await.expect("workspace");
    }
}

/// The workspace `claims` with its clerk (who asks) and reviewer (who decides): their tokens.
pub(crate) async fn desk(core: &Core) -> (String, String) {
    crate::claims::ensure_workspace(core, "claims").await;
    let clerk = token(&core.engine, "clerk", &["skills.invoke", "tasks.write@claims", "claims.reply@claims"]).await;
    let reviewer = token(
        &core.engine,
        "reviewer",
        &["skills.invoke", "tasks.write@claims", "claims.reply@claims", "approvals.decide@claims"],
    )
    .await;
    (clerk, reviewer)
}

async fn story(core: Core, executable: &Path) {
    let root = apply_package(&core).await;
    let (clerk, reviewer) = desk(&core).await;
    core.engine.grant_execution(&["claims.reply"]).await.expect("the execution principal may reply");
    let outbox_folder = Scratch::new("claims-outbox");
    // A task of `kind` with `fields`, and `more` of the request (its gate).
    let task = |kind: &str, fields: Value, more: Value| {
        let mut body = json!({"workspace": "claims", "taskType": kind, "title": "A claim", "customFields": fields});
        body.as_object_mut().expect("an object").extend(more.as_object().cloned().unwrap_or_default());
        let (core, clerk) = (&core, &clerk);
        async move { core.post(clerk, "/tasks", &body).await.ok(201)["id"].as_str().expect("an id").to_owned() }
    };
    let decide = |approval: &str, comment: &str| {
        let (core, reviewer) = (&core, &reviewer);
        let path = format!("/approvals/{approval}:decide");
        let body = json!({"outcome": "approved", "comment": comment});
        async move { core.post(reviewer, &path, &body).await.ok(200).clone() }
    };
    let ask = |task: &str| {
        let (core, clerk) = (&core, &clerk);
        let body = json!({"taskId": task});
        async move { core.post(clerk, "/approvals", &body).await.ok(201)["id"].as_str().expect("an id").to_owned() }
    };

    // Before any executor runs: an approved reply waits in the queue, and its approval is withdrawn.
    let withdrawn_task = task("claim-reply@1", json!({"claim": "C-1001"}), json!({})).await;
    let withdrawn = ask(&withdrawn_task).await;
    decide(&withdrawn, "Refund in full.").await;
    let waiting = core.calls_of(&withdrawn_task, 1).await.remove(0);
    assert_eq!(waiting["status"], "pending");
    core.post(&reviewer, &format!("/approvals/{withdrawn}:withdraw"), &json!({"reason": "wrong amount"})).await.ok(200);

    // The package's host as the local executor.
    let _executor = executor(executable, &root, &core.executor, &outbox_folder);
    let cancelled = core
        .until(&core.admin, &format!("/skill-invocations/{}", waiting["id"].as_str().expect("id")), |call| {
            call["status"] != "pending"
        })
        .await;
    assert_eq!(
        (cancelled["status"].clone(), cancelled["error"]["code"].clone(), cancelled["error"]["message"].clone()),
        (json!("cancelled"), json!("basis_revoked"), json!("approval_withdrawn")),
        "claimed, and cancelled because its basis is gone"
    );

    // The story: a claim task; the external write refused without an approval.
    let claim = task("claim-reply@1", json!({"claim": "C-1002"}), json!({})).await;
    let send = |token: &str, body: Value| {
        let (core, token) = (&core, token.to_owned());
        async move { core.invoke(&token, "claim.send_reply@1", body).await }
    };
    let inputs = json!({"claim": "C-1002", "comment": "Sent without asking"});
    send(&clerk, json!({"inputs": inputs, "taskId": claim, "idempotencyKey": "k-1"}))
        .await
        .refused(403, "skill_side_effect_not_authorized");
    // A gate approval, decided by another person with a comment: the outcome sends the reply.
    let approval = ask(&claim).await;
    let comment = "We refund the full amount; sorry for the delay.";
    let decided = decide(&approval, comment).await;
    assert_eq!(decided["outcome"]["status"], "running");
    let ended = core.until(&clerk, &format!("/approvals/{approval}"), |a| a["outcome"]["status"] != "running").await;
    assert_eq!(
        (ended["outcome"]["status"].clone(), ended["outcome"]["reaction"].clone()),
        (json!("succeeded"), json!("onSuccess")),
        "{ended}"
    );
    assert_eq!(
        outbox(&outbox_folder),
        [("C-1002".to_owned(), comment.to_owned())],
        "one message, the claim and the comment"
    );
    let sent = core.calls_of(&claim, 1).await;
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0]["status"], "succeeded");
    assert_eq!(sent[0]["output"]["status"], "sent");
    let comments = core.get(&clerk, &format!("/task-comments?task={claim}")).await.ok(200).clone();
    assert_eq!(comments["items"][0]["body"], "The approved reply was sent.", "the outcome's reaction");
    // The reply sent, the outcome closed the task: no further write on it, whatever the approval.
    let closed = core.get(&clerk, &format!("/tasks/{claim}")).await.ok(200).clone();
    assert_eq!(closed["status"], "done", "{closed}");
    let again = json!({"inputs": {"claim": "C-1002", "comment": comment}, "taskId": claim, "approvalId": approval, "idempotencyKey": "k-2"});
    send(&clerk, again).await.refused(409, "task_terminal");
    assert_eq!(outbox(&outbox_folder).len(), 1, "still one message");

    // An execution-pinned type with a gate asked with the task: nothing is sent before the decision.
    let reply = "Your replacement ships today.";
    let execution = task(
        "claim-send@1",
        json!({"claim": "C-2001", "reply": reply}),
        json!({"approval": {"comment": "send this?"}}),
    )
    .await;
    let run =
        core.post(&clerk, "/runs", &json!({"taskId": execution})).await.ok(201)["id"].as_str().expect("id").to_owned();
    let own =
        send(&clerk, json!({"inputs": {"claim": "C-2001", "comment": reply}, "runId": run, "idempotencyKey": "e-1"}))
            .await;
    assert_eq!(
        own.refused(403, "skill_side_effect_not_authorized").body["error"]["details"]["reason"],
        "execution_is_the_cores",
        "a clerk's own run never sends the task's reply"
    );
    let gate = core.get(&clerk, &format!("/approvals?task={execution}")).await.ok(200)["items"][0]["id"]
        .as_str()
        .expect("id")
        .to_owned();
    decide(&gate, "Yes.").await;
    // The core's execution worker sends it, and the task is done.
    let done = core.until(&clerk, &format!("/tasks/{execution}"), |t| t["status"] != "open").await;
    assert_eq!(done["status"], "done", "{done}");
    core.post(&clerk, &format!("/runs/{run}:end"), &json!({"status": "cancelled"})).await.ok(200);
    let messages = outbox(&outbox_folder);
    assert!(messages.contains(&("C-2001".to_owned(), reply.to_owned())), "{messages:?}");
    assert_eq!(messages.len(), 2, "the approved reply and the execution's: {messages:?}");
}

#[tokio::test]
async fn an_import_reads_its_register_and_applies_it_at_the_state_it_saw() {
    let executable = host();
    each_backend("claims-import", |core| {
        let executable = executable.clone();
        async move { import(core, &executable).await }
    })
    .await;
}

/// The reference's "import rows" example through the core: a task-bound call of
/// `claim.import_rows@1`, run by the package's host with the executor's own account, reads the
/// task's CSV artifact, previews the snapshot and applies it at the preview's state token.
async fn import(core: Core, executable: &Path) {
    let root = apply_package(&core).await;
    crate::claims::ensure_workspace(&core, "claims").await;
    core.engine.create_workspace("other", "Another desk", &Origin::default()).await.expect("workspace");
    let workspace = core.engine.store().workspace_by_key("claims").await.expect("the workspace").id;
    let clerk = token(&core.engine, "clerk", &["tasks.write@claims", "knowledge.write@claims"]).await;
    let outsider = token(&core.engine, "outsider", &["tasks.write@other", "knowledge.write@other"]).await;
    // The executor's account: it runs the skills and imports into the workspace's knowledge.
    let allowance = json!({"protocols": ["local"], "local": ["claims_integration"]});
    let account =
        executor_token(&core.engine, "claims-executor", &["skills.execute", "knowledge.write@claims"], allowance).await;
    let outbox = Scratch::new("claims-import-outbox");
    let _executor = executor(executable, &root, &account, &outbox);

    let upload = |text: &str| {
        let (core, clerk) = (&core, &clerk);
        let body = json!({"workspace": "claims", "type": "claims_register", "name": "register.csv",
                          "mediaType": "text/csv", "text": text});
        async move { core.post(clerk, "/artifacts", &body).await.ok(201)["id"].as_str().expect("an id").to_owned() }
    };
    // An import task of `artifact`, run to its end: the task and its artifacts by type.
    let run_import = |artifact: String| {
        let (core, clerk) = (&core, &clerk);
        let body = json!({"workspace": "claims", "taskType": "claim-import@1", "title": "Import the register",
                          "customFields": {"artifact": artifact, "scope": "north"}});
        async move {
            let task = core.post(clerk, "/tasks", &body).await.ok(201)["id"].as_str().expect("an id").to_owned();
            let ended = core.until(clerk, &format!("/tasks/{task}"), |t| t["status"] != "open").await;
            let listed = core.get(clerk, &format!("/artifacts?task={task}")).await.ok(200)["items"].clone();
            let by_type = |kind: &str| listed.as_array().expect("a list").iter().find(|a| a["type"] == kind).cloned();
            (ended, by_type("skill_result"), by_type("claim.import_report"))
        }
    };
    let content = |token: &str, artifact: &Value| {
        let (core, token) = (&core, token.to_owned());
        let path = format!("/artifacts/{}/content", artifact["id"].as_str().expect("an id"));
        async move { core.get(&token, &path).await }
    };

    // The first import opens every claim of the register.
    let register = "claim,customer,status\nC-1,Ada Lind,open\nC-2,\"Berg, Jonas\",closed\n";
    let (task, result, report) = run_import(upload(register).await).await;
    assert_eq!(task["status"], "done", "{task}");
    let result = result.expect("the call's result is an artifact of the task");
    let report = report.expect("the typed output is an artifact of its type");
    assert_eq!(result["metadata"]["outputs"]["report"]["status"], "created", "{result}");
    let read = content(&clerk, &report).await.ok(200).clone();
    assert_eq!(read, json!({"rows": 2, "opened": 2, "closed": 0, "changed": 0, "unchanged": 0}));
    let output = content(&clerk, &result).await.ok(200)["output"].clone();
    let token_after = output["state_token"].as_str().expect("the slot's state").to_owned();

    // The same snapshot previewed again opens nothing and reports the state the import left;
    // applying at the state the import's preview saw (the empty slot) is stale.
    let http = HttpCore::new(&root, Some(clerk.clone())).expect("the SDK's core client");
    let snapshot = json!({"workspaceId": workspace, "pack": "claims", "source": "claims-register.csv", "scope": "north",
    "entities": [
        {"kind": "claim", "key": "C-1", "attributes": {"customer": "Ada Lind", "status": "open"}},
        {"kind": "claim", "key": "C-2", "attributes": {"customer": "Berg, Jonas", "status": "closed"}},
    ]});
    let timeout = std::time::Duration::from_secs(10);
    let preview = http.knowledge(KnowledgeRoute::Preview, snapshot.clone(), timeout).await.expect("a preview");
    assert_eq!(
        (preview["opened"].clone(), preview["unchanged"].clone(), preview["stateToken"].clone()),
        (json!(0), json!(2), json!(token_after))
    );
    let mut old = snapshot;
    old["expectedState"] = json!(EMPTY_SLOT);
    let stale = http.knowledge(KnowledgeRoute::Apply, old, timeout).await.expect_err("the old token");
    assert_eq!(stale_state_token(&stale), Some(token_after.as_str()), "{stale:?}");

    // A changed register: C-1 gone, C-2's status changed, C-3 new.
    let changed = "claim,customer,status\r\nC-2,\"Berg, Jonas\",reopened\r\nC-3,Eva Holm,open\r\n";
    let (task, _, report) = run_import(upload(changed).await).await;
    assert_eq!(task["status"], "done", "{task}");
    let read = content(&clerk, &report.expect("a report")).await.ok(200).clone();
    assert_eq!(read, json!({"rows": 2, "opened": 1, "closed": 1, "changed": 1, "unchanged": 0}));
    let found = http
        .knowledge(KnowledgeRoute::Query, json!({"workspaceId": workspace, "kinds": ["claim"]}), timeout)
        .await
        .expect("a page");
    let statuses: Vec<(Value, Value)> = found["items"]
        .as_array()
        .expect("items")
        .iter()
        .map(|item| (item["key"].clone(), item["attributes"]["status"].clone()))
        .collect();
    assert_eq!(statuses, [(json!("C-2"), json!("reopened")), (json!("C-3"), json!("open"))]);

    // The result is the task's people's to read, and nobody's of another workspace.
    content(&clerk, &result).await.ok(200);
    content(&outsider, &result).await.refused(404, "artifact_not_found");
    core.get(&outsider, &format!("/artifacts/{}", result["id"].as_str().expect("id")))
        .await
        .refused(404, "artifact_not_found");

    // A register that is not one fails the call with the line, and the task with it; the
    // knowledge stays as the last import left it.
    let (task, result, _) = run_import(upload("claim,customer\nC-9,Nobody\n").await).await;
    assert_eq!((task["status"].clone(), result), (json!("failed"), None), "{task}");
    let calls = core.calls_of(task["id"].as_str().expect("id"), 1).await;
    assert_eq!(
        (calls[0]["status"].clone(), calls[0]["error"]["code"].clone(), calls[0]["error"]["details"]["line"].clone()),
        (json!("failed"), json!("invalid_csv"), json!(1))
    );
    let again = http
        .knowledge(KnowledgeRoute::Query, json!({"workspaceId": workspace, "kinds": ["claim"]}), timeout)
        .await
        .expect("a page");
    assert_eq!(again["items"].as_array().map(Vec::len), Some(2));
}

#[tokio::test]
async fn an_outcome_failed_by_a_missing_folder_is_retried_once_the_folder_exists() {
    let executable = host();
    each_backend("claims-retry", |core| {
        let executable = executable.clone();
        async move { retried(core, &executable).await }
    })
    .await;
}

/// The approved reply fails to send (the outbox folder is missing), its approval is not spent: a
/// decider retries the outcome once the folder exists, and exactly one reply goes out, under the
/// same approval. A failure that will not pass cannot be retried; nobody but a decider retries.
async fn retried(core: Core, executable: &Path) {
    let root = apply_package(&core).await;
    let (clerk, reviewer) = desk(&core).await;
    let scratch = Scratch::new("claims-retry");
    let folder = scratch.path().join("outbox");
    let _executor = Child(
        std::process::Command::new(executable)
            .args(["execute", "--core", &root, "--concurrency", "2", "--grace", "5"])
            .env("SKILL_CORE_TOKEN", &core.executor)
            .env("CLAIMS_OUTBOX_DIR", &folder)
            .env_remove("CONTROL_PLANE_URL")
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("the host executes"),
    );
    let body = json!({"workspace": "claims", "taskType": "claim-reply@1", "title": "C-1002",
                      "customFields": {"claim": "C-1002"}});
    let task = core.post(&clerk, "/tasks", &body).await.ok(201)["id"].as_str().expect("id").to_owned();
    let approval =
        core.post(&clerk, "/approvals", &json!({"taskId": task})).await.ok(201)["id"].as_str().expect("id").to_owned();
    let reply = "We refund the full amount.";
    let decided = json!({"outcome": "approved", "comment": reply});
    core.post(&reviewer, &format!("/approvals/{approval}:decide"), &decided).await.ok(200);
    let retry = |token: &str| {
        let (core, token, path) = (&core, token.to_owned(), format!("/approvals/{approval}:retry"));
        async move { core.post(&token, &path, &json!({"reason": "the outbox folder exists now"})).await }
    };
    // While the call still retries on its own, the outcome runs: nothing to retry yet.
    let running = retry(&reviewer).await;
    assert_eq!(running.refused(409, "outcome_not_retryable").body["error"]["details"]["reason"], "running");
    let path = format!("/approvals/{approval}");
    let mut failed = Value::Null;
    for _ in 0..1_800 {
        failed = core.get(&clerk, &path).await.ok(200).clone();
        if failed["outcome"]["status"] != "running" {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    let action = failed["outcome"]["actions"][0].clone();
    assert_eq!(
        (failed["outcome"]["status"].clone(), action["status"].clone(), action["error"]["code"].clone()),
        (json!("failed"), json!("failed"), json!("outbox_unavailable")),
        "{failed}"
    );
    assert_eq!((action["retryable"].clone(), action["attempts"].clone()), (json!(true), json!(1)), "{action}");
    let first_call = action["invocationId"].as_str().expect("its call").to_owned();
    // Only a decider retries; the clerk who asked only reads.
    retry(&clerk).await.refused(403, "permission_denied");
    std::fs::create_dir_all(&folder).expect("the outbox folder");
    // Two retries at once: one is made, the other finds the outcome running again.
    let (first, second) = tokio::join!(retry(&reviewer), retry(&reviewer));
    let (made, raced) = if first.status.as_u16() == 200 { (first, second) } else { (second, first) };
    let again = made.ok(200).clone();
    assert_eq!(again["outcome"]["status"], "running", "{again}");
    assert_eq!(raced.refused(409, "outcome_not_retryable").body["error"]["details"]["reason"], "running");
    let ended = core.until(&clerk, &path, |a| a["outcome"]["status"] != "running").await;
    let action = ended["outcome"]["actions"][0].clone();
    assert_eq!(
        (
            ended["outcome"]["status"].clone(),
            action["status"].clone(),
            action["attempts"].clone(),
            action["retries"].clone()
        ),
        (json!("succeeded"), json!("succeeded"), json!(2), json!(1)),
        "{ended}"
    );
    let second_call = action["invocationId"].as_str().expect("its call").to_owned();
    assert_ne!(first_call, second_call, "a retry is a new call");
    let call = core.get(&core.admin, &format!("/skill-invocations/{second_call}")).await.ok(200).clone();
    assert_eq!(
        (call["authorizationBasis"]["approvalId"].clone(), call["authorizationBasis"]["retry"].clone()),
        (json!(approval), json!(1)),
        "the same approval, its first retry: {call}"
    );
    assert_eq!(call["idempotencyKey"], format!("approval-outcome:{approval}:0:retry-1"));
    let messages = outbox_in(&folder);
    assert_eq!(messages, [("C-1002".to_owned(), reply.to_owned())], "one reply, the approved text");
    // The retry is an attempt at the same effect: the skill was given the first call's key, so an
    // earlier attempt that wrote after all would have been found, not written twice.
    let first_key: String = format!("approval-outcome:{approval}:0").bytes().map(|b| format!("{b:02x}")).collect();
    let files: Vec<String> = std::fs::read_dir(&folder)
        .expect("the outbox")
        .filter_map(Result::ok)
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(files, [format!("{first_key}.json")], "written under the first call's key");
    // A succeeded outcome closed its task, and is not retried; the reason was kept on the task;
    // the journal has it.
    retry(&reviewer).await.refused(409, "task_terminal");
    let comments = core.get(&clerk, &format!("/task-comments?task={task}")).await.ok(200).clone();
    let bodies: Vec<&str> =
        comments["items"].as_array().expect("items").iter().filter_map(|c| c["body"].as_str()).collect();
    assert!(bodies.contains(&"the outbox folder exists now"), "{bodies:?}");
    assert!(bodies.contains(&"The approved reply was sent."), "the retried action reacted: {bodies:?}");
    let events = core.get(&core.admin, &format!("/events?subject=approval:{approval}")).await.ok(200).clone();
    let retried: Vec<&Value> =
        events["items"].as_array().expect("items").iter().filter(|e| e["kind"] == "approval.outcome_retried").collect();
    assert_eq!(retried.len(), 1, "journaled once: {retried:?}");

    // A failure that will not pass: the decider lacks the contract's permission.
    let hasty = token(&core.engine, "hasty", &["skills.invoke", "tasks.write@claims", "approvals.decide@claims"]).await;
    let task = core.post(&clerk, "/tasks", &body).await.ok(201)["id"].as_str().expect("id").to_owned();
    let refused =
        core.post(&clerk, "/approvals", &json!({"taskId": task})).await.ok(201)["id"].as_str().expect("id").to_owned();
    core.post(&hasty, &format!("/approvals/{refused}:decide"), &decided).await.ok(200);
    let ended = core.until(&clerk, &format!("/approvals/{refused}"), |a| a["outcome"]["status"] != "running").await;
    assert_eq!(ended["outcome"]["actions"][0]["error"]["code"], "skill_permission_denied", "{ended}");
    assert_eq!(ended["outcome"]["actions"][0]["retryable"], false);
    let final_failure = core.post(&reviewer, &format!("/approvals/{refused}:retry"), &json!({})).await;
    assert_eq!(final_failure.refused(409, "outcome_not_retryable").body["error"]["details"]["reason"], "not_retryable");
    assert_eq!(outbox_in(&folder).len(), 1, "still one reply");
}
