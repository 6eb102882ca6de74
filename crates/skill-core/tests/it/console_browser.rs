//! The claims story in a real browser (Debian's Chromium, through ChromeDriver): a reviewer signs
//! in to the console, opens the claim's task, reads the drafted reply, sees that approving will
//! call `claim.send_reply@1` (an external write, high risk) with the claim and the comment,
//! approves with a comment, and watches the outcome's call succeed without reloading, while the
//! package's host — the local executor — sends one reply. A reader sees the task but no decision.
//! With `SKILL_CONSOLE_SCREENSHOTS` set (`cargo xtask screenshots`), the main pages are kept as
//! PNGs in that folder.

use serde_json::json;
use skill_fixtures::Scratch;

use crate::api::token;
use crate::calls::{Backend, core};
use crate::claims::{apply_package, desk, executor, host, outbox};
use crate::webdriver::Session;

#[tokio::test]
async fn a_reviewer_approves_in_the_browser_and_the_reply_is_sent_once() {
    let executable = host();
    let screenshots = std::env::var("SKILL_CONSOLE_SCREENSHOTS").ok();
    let screenshots = screenshots.as_deref();
    let core = core(Backend::Sqlite, "console-browser").await;
    let root = apply_package(&core).await;
    let (clerk, reviewer) = desk(&core).await;
    let reader = token(&core.engine, "reader", &["tasks.read@claims"]).await;
    let sent = Scratch::new("console-outbox");
    let _executor = executor(&executable, &root, &core.executor, &sent);

    // The clerk's task, the drafted reply as its artifact, and the gate approval it asks for.
    let task = core
        .post(
            &clerk,
            "/tasks",
            &json!({"workspace": "claims", "taskType": "claim-reply@1", "title": "Lost parcel, claim C-1002",
                    "customFields": {"claim": "C-1002"}}),
        )
        .await
        .ok(201)["id"]
        .as_str()
        .expect("id")
        .to_owned();
    let draft = "Dear Ms Lind, we are sorry your parcel was lost. We refund the full amount today.";
    core.post(
        &clerk,
        "/artifacts",
        &json!({"taskId": task, "type": "claim_draft", "name": "reply.txt", "mediaType": "text/plain", "text": draft}),
    )
    .await
    .ok(201);
    core.post(&clerk, "/approvals", &json!({"taskId": task, "comment": "Please check the amount."})).await.ok(201);

    let browser = Session::start(1280, 1200).await;
    // Sign in with the reviewer's token.
    browser.open(&format!("{root}/console/tasks")).await;
    assert!(browser.url().await.ends_with("/console/sign-in"), "signed out, the console asks to sign in");
    browser.screenshot(screenshots, "sign-in").await;
    browser.find("#token").await.type_text(&reviewer).await;
    browser.find("form button[type=submit]").await.click().await;
    browser.until_text("main h1", 10, |text| text == "Tasks").await;
    let cookies = browser.cookies().await;
    let session = cookies.iter().find(|c| c["name"] == "skill_console").expect("the session cookie");
    assert_eq!((session["httpOnly"].clone(), session["sameSite"].clone()), (json!(true), json!("Strict")));
    assert!(browser.find("#to-decide table.tasks").await.text().await.contains("clerk"));
    browser.screenshot(screenshots, "tasks").await;

    // The task: its drafted reply, and what approving will do.
    browser.find("table.tasks a").await.click().await;
    browser.until_text("main h1", 10, |text| text.contains("Lost parcel")).await;
    let artifacts = browser.find("#artifacts").await.text().await;
    assert!(artifacts.contains(draft), "the drafted reply is readable: {artifacts}");
    let preview = browser.find(".preview").await.text().await;
    for shown in ["claim.send_reply@1", "external_write", "risk high", "C-1002", "the text you write below"] {
        assert!(preview.contains(shown), "{shown} in: {preview}");
    }
    browser.screenshot(screenshots, "decision").await;
    if screenshots.is_some() {
        // The same page on a phone.
        let phone = Session::start(390, 844).await;
        phone.open(&format!("{root}/console/sign-in")).await;
        phone.find("#token").await.type_text(&reviewer).await;
        phone.find("form button[type=submit]").await.click().await;
        phone.until_text("main h1", 10, |text| text == "Tasks").await;
        phone.open(&format!("{root}/console/tasks/{task}")).await;
        phone.find(".preview").await;
        phone.screenshot(screenshots, "decision-phone").await;
    }

    // Approve with a comment, and watch the outcome's call succeed on the page.
    let comment = "We refund the full amount; sorry for the delay.";
    browser.find("form.decide textarea").await.type_text(comment).await;
    browser.find("button.approve").await.click().await;
    browser.until_text(".approval .decided", 10, |text| text.contains("decided by reviewer")).await;
    let calls = browser.until_text("#calls", 30, |text| text.contains("succeeded")).await;
    assert!(calls.contains("claim.send_reply@1"), "{calls}");
    assert!(calls.contains("sent"), "the call's output: {calls}");
    browser.until_text(".outcome", 30, |text| text.contains("succeeded")).await;
    browser.until_text("#artifacts", 10, |text| text.contains("skill_result")).await;
    browser.screenshot(screenshots, "task").await;
    assert_eq!(outbox(&sent), [("C-1002".to_owned(), comment.to_owned())], "one reply, with the comment");

    // The reply sent, the outcome closed the task. Another task asks for approval; signing out,
    // the reader sees it and no decision.
    core.until(&clerk, &format!("/tasks/{task}"), |t| t["status"] == "done").await;
    let task = core
        .post(
            &clerk,
            "/tasks",
            &json!({"workspace": "claims", "taskType": "claim-reply@1", "title": "Lost parcel, claim C-1003",
                    "customFields": {"claim": "C-1003"}, "approval": {"comment": "send it?"}}),
        )
        .await
        .ok(201)["id"]
        .as_str()
        .expect("id")
        .to_owned();
    browser.find("form.sign-out button").await.click().await;
    browser.until_text("main h1", 10, |text| text == "Sign in").await;
    browser.open(&format!("{root}/console/tasks/{task}")).await;
    assert!(browser.url().await.ends_with("/console/sign-in"), "the ended session opens nothing");
    browser.find("#token").await.type_text(&reader).await;
    browser.find("form button[type=submit]").await.click().await;
    browser.until_text("main h1", 10, |text| text == "Tasks").await;
    browser.open(&format!("{root}/console/tasks/{task}")).await;
    browser.until_text("main h1", 10, |text| text.contains("Lost parcel")).await;
    let pending = browser.find(".approval .badge.pending").await.text().await;
    assert_eq!(pending, "pending");
    assert!(
        browser.find(".preview").await.text().await.contains("claim.send_reply@1"),
        "the reader sees what it would do"
    );
    assert!(browser.all("button[name=outcome]").await.is_empty(), "no decision buttons for a reader");
    assert!(browser.find(".approval .note").await.text().await.contains("approvals.decide"));
    assert_eq!(outbox(&sent).len(), 1, "still one reply");

    // An operator's queue names why a call of an implementation no executor runs waits.
    core.publish(crate::calls::local("claim.archive", "none", (1, 0), &[])).await;
    let stuck = core.invoke(&clerk, "claim.archive@1", json!({"inputs": {"claim": "C-1002"}})).await.ok(201).clone();
    let operator = token(&core.engine, "operator", &["org.read"]).await;
    browser.find("form.sign-out button").await.click().await;
    browser.until_text("main h1", 10, |text| text == "Sign in").await;
    browser.find("#token").await.type_text(&operator).await;
    browser.find("form button[type=submit]").await.click().await;
    browser.until_text("main h1", 10, |text| text == "Tasks").await;
    browser.find("nav a[href='/console/queue']").await.click().await;
    let waiting = browser.until_text("#queue-pending", 10, |text| text.contains("claim.archive@1")).await;
    assert!(waiting.contains("no_executor") && waiting.contains("no executor session covers"), "{waiting}");
    browser.screenshot(screenshots, "queue").await;
    browser.open(&format!("{root}/console/calls/{}", stuck["id"].as_str().expect("id"))).await;
    let page = browser.until_text("#call", 10, |text| text.contains("skill.invocation_requested")).await;
    assert!(page.contains("no_executor"), "{page}");
    browser.screenshot(screenshots, "invocation").await;
}

/// At a phone's width (390 px), a clerk creates a task from its type's form, runs a skill from
/// its input form and reads the result, and finds the call in the history — every page fitting
/// the screen, nothing to scroll sideways.
#[tokio::test]
async fn a_clerk_works_from_the_console_on_a_phone() {
    let executable = host();
    let screenshots = std::env::var("SKILL_CONSOLE_SCREENSHOTS").ok();
    let screenshots = screenshots.as_deref();
    let core = core(Backend::Sqlite, "console-phone").await;
    let root = apply_package(&core).await;
    let (clerk, _) = desk(&core).await;
    let sent = Scratch::new("console-phone-outbox");
    let _executor = executor(&executable, &root, &core.executor, &sent);

    let phone = Session::start(390, 844).await;
    phone.open(&format!("{root}/console/sign-in")).await;
    phone.find("#token").await.type_text(&clerk).await;
    phone.find("form button[type=submit]").await.click().await;
    phone.until_text("main h1", 10, |text| text == "Tasks").await;
    assert!(phone.fits().await, "the tasks page fits a phone");

    // A task from the type's form.
    phone.find("a[href='/console/tasks/new']").await.click().await;
    phone.find("a[href='/console/tasks/new?type=claim-reply@1']").await.click().await;
    phone.until_text("main h1", 10, |text| text.contains("Reply to a customer claim")).await;
    phone.find("#new-workspace").await.choose("claims").await;
    phone.find("#new-title").await.type_text("Broken kettle").await;
    phone.find("#new-claim").await.type_text("C-1001").await;
    phone.find("#new-message").await.type_text("The kettle I bought is broken.").await;
    assert!(phone.fits().await, "the new task form fits a phone");
    phone.screenshot(screenshots, "new-task-phone").await;
    phone.find("form.work button[type=submit]").await.click().await;
    phone.until_text("main h1", 10, |text| text.contains("Broken kettle")).await;
    let fields = phone.find("#fields").await.text().await;
    assert!(fields.contains("C-1001") && fields.contains("The kettle I bought is broken."), "{fields}");
    assert!(phone.fits().await, "a task's page fits a phone");
    phone.screenshot(screenshots, "task-phone").await;

    // A skill run from its input form; its page shows the result as it comes.
    phone.find("nav a[href='/console/run']").await.click().await;
    phone.find("a[href='/console/run/claim.classify@1']").await.click().await;
    phone.find("textarea[name='f.text']").await.type_text("The item arrived broken, I want a refund").await;
    phone.screenshot(screenshots, "run-phone").await;
    phone.find("form.work button[type=submit]").await.click().await;
    let call = phone.until_text("#call", 20, |text| text.contains("succeeded")).await;
    assert!(call.contains("\"category\": \"refund\""), "{call}");
    assert!(call.contains("clerk"), "the caller by name: {call}");
    assert!(phone.fits().await, "a call's page fits a phone");

    // The history: the call, succeeded; a filter that matches nothing says so.
    phone.find("nav a[href='/console/calls']").await.click().await;
    let listed = phone.until_text("main", 10, |text| text.contains("claim.classify@1")).await;
    assert!(listed.contains("succeeded") && listed.contains("clerk"), "{listed}");
    assert!(phone.fits().await, "the history fits a phone");
    phone.screenshot(screenshots, "calls-phone").await;
    phone.find("#f-status").await.choose("failed").await;
    phone.find("form.filters button").await.click().await;
    phone.until_text("main", 10, |text| text.contains("No call matches.")).await;
}
