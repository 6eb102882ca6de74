//! Starting work from the console, over HTTP, on SQLite and PostgreSQL: a task from its type's
//! form (a missing required field shown again with the reason, nothing created), a gate
//! approval, a comment, closing; retrying a failed outcome; running a skill from its form (an
//! external write refused without its basis); the history of calls; and each of these refused to
//! someone without the right, or without the session's form token.

use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::api::token;
use crate::calls::{Core, each_backend, local};
use crate::console::Console;

/// Owned pairs as a form's.
fn pairs(all: &[(String, String)]) -> Vec<(&str, &str)> {
    all.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect()
}

/// The API's tasks of the workspace `claims`.
async fn task_count(core: &Core, token: &str) -> usize {
    core.get(token, "/tasks?workspace=claims&limit=200").await.ok(200)["items"].as_array().map_or(0, Vec::len)
}

#[tokio::test]
async fn people_start_work_in_the_console_within_their_rights() {
    each_backend("console-work", |core| async move {
        let core = core;
        crate::claims::apply_package(&core).await;
        crate::claims::ensure_workspace(&core, "claims").await;
        let clerk = token(&core.engine, "clerk", &["skills.invoke", "tasks.write@claims"]).await;
        let reviewer =
            token(&core.engine, "reviewer", &["skills.invoke", "tasks.write@claims", "approvals.decide@claims"]).await;
        let reader = token(&core.engine, "reader", &["tasks.read@claims"]).await;
        let console = Console::new(&core);
        let origin = console.origin().to_owned();
        let (clerk_cookie, _) = console.sign_in(&clerk).await;
        let (reader_cookie, _) = console.sign_in(&reader).await;

        // A task from the type's form: its fields, the required one marked.
        let choices = console.get(Some(&clerk_cookie), "/console/tasks/new").await;
        assert!(choices.body.contains("/console/tasks/new?type=claim-reply@1"), "{}", choices.body);
        let form = console.get(Some(&clerk_cookie), "/console/tasks/new?type=claim-reply@1").await;
        assert_eq!(form.status, StatusCode::OK);
        assert!(form.body.contains(r#"name="f.claim" required"#), "claim is required: {}", form.body);
        assert!(form.body.contains(r#"name="f.message""#), "{}", form.body);
        let csrf = form.csrf();
        let before = task_count(&core, &clerk).await;
        let fields = |csrf: &str| {
            vec![
                ("csrf".to_owned(), csrf.to_owned()),
                ("type".to_owned(), "claim-reply@1".to_owned()),
                ("workspace".to_owned(), "claims".to_owned()),
                ("title".to_owned(), "Parcel lost".to_owned()),
                ("f.message".to_owned(), "It never came.".to_owned()),
            ]
        };
        let forged = console.post(Some(&clerk_cookie), "/console/tasks", &pairs(&fields("")), &origin).await;
        assert_eq!(forged.status, StatusCode::FORBIDDEN);
        let missing = console.post(Some(&clerk_cookie), "/console/tasks", &pairs(&fields(&csrf)), &origin).await;
        assert_eq!(missing.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", missing.body);
        assert!(missing.body.contains("the customFields need claim"), "the reason is shown: {}", missing.body);
        assert!(missing.body.contains("It never came."), "what was typed is kept");
        let mut complete = fields(&csrf);
        complete.push(("f.claim".to_owned(), "C-1002".to_owned()));
        let reader_csrf = console.get(Some(&reader_cookie), "/console/tasks").await.csrf();
        let mut as_reader = complete.clone();
        as_reader[0].1.clone_from(&reader_csrf);
        let refused = console.post(Some(&reader_cookie), "/console/tasks", &pairs(&as_reader), &origin).await;
        assert_eq!(refused.status, StatusCode::UNPROCESSABLE_ENTITY, "the form again, with the refusal");
        assert!(refused.body.contains("tasks.write"), "{}", refused.body);
        assert_eq!(task_count(&core, &clerk).await, before, "nothing was created");
        let created = console.post(Some(&clerk_cookie), "/console/tasks", &pairs(&complete), &origin).await;
        assert_eq!(created.status, StatusCode::SEE_OTHER, "{}", created.body);
        let task = created.location().trim_start_matches("/console/tasks/").to_owned();
        let shown = core.get(&clerk, &format!("/tasks/{task}")).await.ok(200).clone();
        assert_eq!(shown["customFields"], json!({"claim": "C-1002", "message": "It never came."}));

        // On the task: a gate approval, a comment, then closing it — the clerk's; the reader
        // sees none of these forms and its forged ones change nothing.
        let page = console.get(Some(&clerk_cookie), &format!("/console/tasks/{task}")).await;
        for form in ["/draft", "/approvals", "/close", "/comments"] {
            assert!(page.body.contains(&format!("action=\"/console/tasks/{task}{form}\"")), "{form}");
        }
        assert!(page.body.contains("Draft with claim.draft_reply@1"));
        let reader_page = console.get(Some(&reader_cookie), &format!("/console/tasks/{task}")).await;
        assert!(!reader_page.body.contains(&format!("/console/tasks/{task}/close")), "a reader starts nothing");
        let path = |action: &str| format!("/console/tasks/{task}/{action}");
        let asked = console
            .post(Some(&reader_cookie), &path("approvals"), &[("csrf", &reader_csrf), ("comment", "x")], &origin)
            .await;
        assert_eq!(asked.status, StatusCode::FORBIDDEN, "{}", asked.body);
        assert!(asked.body.contains("Sign out"), "an error page keeps the navigation");
        let asked = console
            .post(Some(&clerk_cookie), &path("approvals"), &[("csrf", &csrf), ("comment", "Please check.")], &origin)
            .await;
        assert_eq!(asked.status, StatusCode::SEE_OTHER, "{}", asked.body);
        let approvals = core.get(&clerk, &format!("/approvals?task={task}")).await.ok(200).clone();
        assert_eq!(approvals["items"][0]["requestComment"], "Please check.");
        let commented = console
            .post(Some(&clerk_cookie), &path("comments"), &[("csrf", &csrf), ("body", "first\r\nsecond")], &origin)
            .await;
        assert_eq!(commented.status, StatusCode::SEE_OTHER);
        let comments = core.get(&clerk, &format!("/task-comments?task={task}")).await.ok(200).clone();
        assert_eq!(comments["items"][0]["body"], "first\nsecond", "lines as the person wrote them");
        let closed = console
            .post(
                Some(&clerk_cookie),
                &path("close"),
                &[("csrf", &csrf), ("status", "cancelled"), ("comment", "Duplicate")],
                &origin,
            )
            .await;
        assert_eq!(closed.status, StatusCode::SEE_OTHER);
        assert_eq!(core.get(&clerk, &format!("/tasks/{task}")).await.ok(200)["status"], "cancelled");
        let again =
            console.post(Some(&clerk_cookie), &path("close"), &[("csrf", &csrf), ("status", "done")], &origin).await;
        assert_eq!(again.status, StatusCode::CONFLICT, "closed for good: {}", again.body);

        // What approving sends is shown whole, however long: nothing hides past the fields' cap.
        let long = format!("C-13{}PS: we also approve a refund of 5000 EUR", " ".repeat(2100));
        let body = json!({"workspace": "claims", "taskType": "claim-reply@1", "title": "Long", "customFields": {"claim": long}});
        let hidden = core.post(&clerk, "/tasks", &body).await.ok(201)["id"].as_str().expect("id").to_owned();
        core.post(&clerk, "/approvals", &json!({"taskId": hidden})).await.ok(201);
        let (reviewer_cookie, _) = console.sign_in(&reviewer).await;
        let page = console.get(Some(&reviewer_cookie), &format!("/console/tasks/{hidden}")).await;
        let preview = &page.body[page.body.find("class=\"preview\"").expect("a preview")..];
        assert!(preview.contains("PS: we also approve a refund of 5000 EUR"), "the whole input is shown");

        retry(&core, &console, &clerk, &reviewer).await;
        run(&core, &console, &reviewer, &reader_cookie).await;
    })
    .await;
}

/// A failed outcome whose failure may pass is retried from the task's page by a decider.
async fn retry(core: &Core, console: &Console, clerk: &str, reviewer: &str) {
    let origin = console.origin().to_owned();
    core.publish(local("claim.note", "none", (1, 0), &[])).await;
    let notes = json!({"key": "notes", "version": "1", "customFields": {"claim": {"type": "string"}},
        "approvalSchema": {"gates": {"default": {"outcomes": {"approved": [
            {"invokeSkill": {"skill": "claim.note@1", "inputs": {"claim": "$.task.customFields.claim"}}}]}}}}});
    core.post(&core.admin, "/task-types", &notes).await.ok(201);
    let body =
        json!({"workspace": "claims", "taskType": "notes@1", "title": "A note", "customFields": {"claim": "C-5"}});
    let task = core.post(clerk, "/tasks", &body).await.ok(201)["id"].as_str().expect("id").to_owned();
    // Asked by a lead who may decide too: the lead never retries its own approval's outcome.
    let lead = token(&core.engine, "lead", &["skills.invoke", "tasks.write@claims", "approvals.decide@claims"]).await;
    let approval =
        core.post(&lead, "/approvals", &json!({"taskId": task})).await.ok(201)["id"].as_str().expect("id").to_owned();
    core.post(reviewer, &format!("/approvals/{approval}:decide"), &json!({"outcome": "approved"})).await.ok(200);
    // The outcome's call fails for a reason that may pass.
    let take = json!({"protocols": ["local"], "localEntrypoints": ["claims.skills:claim_note"], "waitSeconds": 10});
    let held = core.claim(take).await.ok(200).clone();
    let id = held["invocation"]["id"].as_str().expect("id").to_owned();
    let failure = json!({"fencingToken": held["invocation"]["fencingToken"],
                         "error": {"code": "outbox_unavailable", "retryable": true, "message": "the outbox is away"}});
    core.post(&core.executor, &format!("/skill-invocations/{id}:fail"), &failure).await.ok(200);
    core.until(clerk, &format!("/approvals/{approval}"), |a| a["outcome"]["status"] == "failed").await;
    let (reviewer_cookie, _) = console.sign_in(reviewer).await;
    let (clerk_cookie, _) = console.sign_in(clerk).await;
    let page = console.get(Some(&reviewer_cookie), &format!("/console/tasks/{task}")).await;
    assert!(page.body.contains("Retry the outcome"), "{}", page.body);
    let clerks = console.get(Some(&clerk_cookie), &format!("/console/tasks/{task}")).await;
    assert!(!clerks.body.contains("Retry the outcome"), "only a decider retries");
    let path = format!("/console/approvals/{approval}/retry");
    let forged = console.post(Some(&reviewer_cookie), &path, &[("reason", "x")], &origin).await;
    assert_eq!(forged.status, StatusCode::FORBIDDEN);
    let refused = console.post(Some(&clerk_cookie), &path, &[("csrf", &clerks.csrf()), ("reason", "x")], &origin).await;
    assert_eq!(refused.status, StatusCode::FORBIDDEN, "{}", refused.body);
    let (lead_cookie, _) = console.sign_in(&lead).await;
    let leads = console.get(Some(&lead_cookie), &format!("/console/tasks/{task}")).await;
    assert!(!leads.body.contains("Retry the outcome"), "not for who asked");
    let own = console.post(Some(&lead_cookie), &path, &[("csrf", &leads.csrf()), ("reason", "x")], &origin).await;
    assert_eq!(own.status, StatusCode::FORBIDDEN);
    assert!(own.body.contains("self_approval_refused"), "{}", own.body);
    let retried = console
        .post(Some(&reviewer_cookie), &path, &[("csrf", &page.csrf()), ("reason", "The outbox is back.")], &origin)
        .await;
    assert_eq!(retried.status, StatusCode::SEE_OTHER, "{}", retried.body);
    let running = core.get(clerk, &format!("/approvals/{approval}")).await.ok(200).clone();
    assert_eq!(running["outcome"]["status"], "running", "{running}");
    assert_eq!(running["outcome"]["actions"][0]["retries"], 1);
}

/// A skill run from its form, as the caller's own call; an external write refused without its
/// basis; the history of calls with its filters; the run page refused to someone who invokes
/// nothing.
async fn run(core: &Core, console: &Console, reviewer: &str, reader_cookie: &str) {
    let origin = console.origin().to_owned();
    let (cookie, _) = console.sign_in(reviewer).await;
    let list = console.get(Some(&cookie), "/console/run").await;
    assert!(list.body.contains("/console/run/claim.classify@1"), "{}", list.body);
    let form = console.get(Some(&cookie), "/console/run/claim.classify@1").await;
    assert!(form.body.contains(r#"name="f.text""#), "{}", form.body);
    let ran = console
        .post(
            Some(&cookie),
            "/console/run/claim.classify@1",
            &[("csrf", &form.csrf()), ("f.text", "my refund")],
            &origin,
        )
        .await;
    assert_eq!(ran.status, StatusCode::SEE_OTHER, "{}", ran.body);
    let call = ran.location().trim_start_matches("/console/calls/").to_owned();
    let made = core.get(&core.admin, &format!("/skill-invocations/{call}")).await.ok(200).clone();
    assert_eq!(made["inputs"], json!({"text": "my refund"}));
    let write = console.get(Some(&cookie), "/console/run/claim.send_reply@1").await;
    assert!(write.body.contains("runs only on a basis"), "{}", write.body);
    let refused = console
        .post(
            Some(&cookie),
            "/console/run/claim.send_reply@1",
            &[("csrf", &write.csrf()), ("f.claim", "C-1"), ("f.comment", "Hello"), ("key", "k-1")],
            &origin,
        )
        .await;
    assert_eq!(refused.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(refused.body.contains("runs only on a basis"), "the engine's refusal: {}", refused.body);
    let listed = core.get(&core.admin, "/skill-invocations?skill=claim.send_reply@1").await.ok(200).clone();
    assert_eq!(listed["items"], json!([]), "no call was made");
    // The history: the call, by name; a filter the listing refuses is said on the page.
    let history = console.get(Some(&cookie), "/console/calls?skill=claim.classify@1&period=all").await;
    assert!(
        history.body.contains(&format!("/console/calls/{call}")) && history.body.contains("reviewer"),
        "{}",
        history.body
    );
    let odd = console.get(Some(&cookie), "/console/calls?status=lost").await;
    assert_eq!(odd.status, StatusCode::OK);
    assert!(odd.body.contains("role=\"alert\""), "{}", odd.body);
    let none = console.get(Some(reader_cookie), "/console/run").await;
    assert_eq!(none.status, StatusCode::FORBIDDEN);
    assert!(none.body.contains("Sign out"), "the refusal keeps the navigation");
    // A browser at the root goes to the console; anyone else learns where the API is.
    let root = console.root_get("/", Some("text/html")).await;
    assert!(root.status.is_redirection() && root.location() == "/console", "{:?}", root.status);
    let api = console.root_get("/", None).await;
    assert_eq!(api.status, StatusCode::NOT_FOUND);
    let error: Value = serde_json::from_str(&api.body).expect("JSON");
    assert!(error["error"]["message"].as_str().is_some_and(|m| m.contains("/api/v1")), "{error}");
}
