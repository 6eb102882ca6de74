//! The console over HTTP, as a browser without JavaScript uses it, on SQLite and PostgreSQL:
//! sign-in with a token for a session cookie, the task page with what deciding would do, the
//! decision, and the attacks that must change nothing — a forged form, a form from another
//! origin, a person without the right, a script in a task's field, a cookie replayed after
//! sign-out.

use reqwest::StatusCode;
use reqwest::header::{CONTENT_SECURITY_POLICY, COOKIE, LOCATION, ORIGIN, SET_COOKIE};
use serde_json::{Value, json};
use skill_engine::Origin;

use crate::api::token;
use crate::calls::{Core, each_backend};

/// A console answer: its status, headers and page.
pub(crate) struct Page {
    pub(crate) status: StatusCode,
    pub(crate) headers: reqwest::header::HeaderMap,
    pub(crate) body: String,
}

impl Page {
    /// Where a redirect points.
    pub(crate) fn location(&self) -> &str {
        self.headers.get(LOCATION).and_then(|v| v.to_str().ok()).unwrap_or_default()
    }

    /// The page's CSRF token (every form carries it).
    pub(crate) fn csrf(&self) -> String {
        let start = self.body.find("name=\"csrf\" value=\"").expect("a form with the session's token") + 19;
        self.body[start..].split('"').next().expect("a value").to_owned()
    }
}

/// A form body, `application/x-www-form-urlencoded`.
fn form(pairs: &[(&str, &str)]) -> String {
    let encode = |text: &str| {
        text.bytes()
            .map(|b| match b {
                b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => (b as char).to_string(),
                b' ' => "+".to_owned(),
                other => format!("%{other:02X}"),
            })
            .collect::<String>()
    };
    pairs.iter().map(|(k, v)| format!("{}={}", encode(k), encode(v))).collect::<Vec<_>>().join("&")
}

/// A client that does not follow redirects, as a test wants to see them.
pub(crate) struct Console {
    root: String,
    http: reqwest::Client,
}

impl Console {
    pub(crate) fn new(core: &Core) -> Self {
        let root = core.base.trim_end_matches("/api/v1").to_owned();
        let http = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().expect("a client");
        Self { root, http }
    }

    async fn answer(response: reqwest::Response) -> Page {
        let status = response.status();
        let headers = response.headers().clone();
        Page { status, headers, body: response.text().await.expect("a body") }
    }

    pub(crate) async fn get(&self, cookie: Option<&str>, path: &str) -> Page {
        let mut request = self.http.get(format!("{}{path}", self.root));
        if let Some(cookie) = cookie {
            request = request.header(COOKIE, cookie);
        }
        Self::answer(request.send().await.expect("the console answers")).await
    }

    pub(crate) async fn post(&self, cookie: Option<&str>, path: &str, pairs: &[(&str, &str)], origin: &str) -> Page {
        let mut request = self
            .http
            .post(format!("{}{path}", self.root))
            .header("content-type", "application/x-www-form-urlencoded")
            .header(ORIGIN, origin)
            .body(form(pairs));
        if let Some(cookie) = cookie {
            request = request.header(COOKIE, cookie);
        }
        Self::answer(request.send().await.expect("the console answers")).await
    }

    /// `GET path` on the core's root, with `Accept: accept` when given.
    pub(crate) async fn root_get(&self, path: &str, accept: Option<&str>) -> Page {
        let mut request = self.http.get(format!("{}{path}", self.root));
        if let Some(accept) = accept {
            request = request.header(reqwest::header::ACCEPT, accept);
        }
        Self::answer(request.send().await.expect("the core answers")).await
    }

    /// This console's own origin, as a browser sends it with a form.
    pub(crate) fn origin(&self) -> &str {
        &self.root
    }

    /// Signs in with `token`: the cookie to send back, and the `Set-Cookie` as sent.
    pub(crate) async fn sign_in(&self, token: &str) -> (String, String) {
        let answer = self.post(None, "/console/sign-in", &[("token", token)], self.origin()).await;
        assert_eq!((answer.status, answer.location()), (StatusCode::SEE_OTHER, "/console/tasks"), "{}", answer.body);
        let set = answer.headers.get(SET_COOKIE).expect("a session cookie").to_str().expect("ASCII").to_owned();
        (set.split(';').next().expect("name=value").to_owned(), set)
    }
}

/// The approval's status, as the API shows it.
async fn approval_status(core: &Core, token: &str, id: &str) -> String {
    core.get(token, &format!("/approvals/{id}")).await.ok(200)["status"].as_str().expect("a status").to_owned()
}

#[tokio::test]
async fn people_decide_in_the_console_and_nothing_else_changes_anything() {
    each_backend("console", |core| async move {
        let core = core;
        crate::claims::apply_package(&core).await;
        crate::claims::ensure_workspace(&core, "claims").await;
        let clerk = token(&core.engine, "clerk", &["skills.invoke", "tasks.write@claims"]).await;
        let reviewer = token(&core.engine, "reviewer", &["skills.invoke", "approvals.decide@claims"]).await;
        let reader = token(&core.engine, "reader", &["tasks.read@claims"]).await;
        // A task whose field holds a script, and a gate approval asked by the clerk.
        let hostile = "<script>alert('x')</script><img src=x onerror=alert(1)>";
        let task = core
            .post(
                &clerk,
                "/tasks",
                &json!({"workspace": "claims", "taskType": "claim-reply@1", "title": "Claim <b>C-7</b>",
                        "customFields": {"claim": hostile}}),
            )
            .await
            .ok(201)["id"]
            .as_str()
            .expect("id")
            .to_owned();
        let approval = core.post(&clerk, "/approvals", &json!({"taskId": task})).await.ok(201)["id"]
            .as_str()
            .expect("id")
            .to_owned();
        let console = Console::new(&core);

        // Signing in: a bad token and an agent's are refused; a person's gives a session cookie.
        let bad = console.post(None, "/console/sign-in", &[("token", "skp_nothing")], console.origin()).await;
        assert_eq!(bad.status, StatusCode::UNAUTHORIZED);
        assert!(bad.headers.get(SET_COOKIE).is_none());
        let agent = crate::api::token_of_kind(&core.engine, "robot", "agent", &["tasks.read@claims"]).await;
        let refused = console.post(None, "/console/sign-in", &[("token", &agent)], console.origin()).await;
        assert_eq!(refused.status, StatusCode::FORBIDDEN, "{}", refused.body);
        let (cookie, set) = console.sign_in(&reviewer).await;
        for attribute in ["HttpOnly", "SameSite=Strict", "Path=/console", "Max-Age=43"] {
            assert!(set.contains(attribute), "{set}");
        }
        assert!(!set.contains("Secure"), "served over http: {set}");
        let unsigned = console.get(None, "/console/tasks").await;
        assert_eq!((unsigned.status, unsigned.location()), (StatusCode::SEE_OTHER, "/console/sign-in"));

        // The task list and the task page, with what approving would do.
        let tasks = console.get(Some(&cookie), "/console/tasks").await;
        assert_eq!(tasks.status, StatusCode::OK);
        let policy = tasks.headers.get(CONTENT_SECURITY_POLICY).and_then(|v| v.to_str().ok()).unwrap_or_default();
        assert!(policy.contains("script-src 'self'") && policy.contains("frame-ancestors 'none'"), "{policy}");
        assert!(tasks.body.contains("yours to decide"), "{}", tasks.body);
        assert!(tasks.body.contains("Claim &lt;b&gt;C-7&lt;/b&gt;"), "the title is escaped");
        let page = console.get(Some(&cookie), &format!("/console/tasks/{task}")).await;
        assert_eq!(page.status, StatusCode::OK);
        for shown in
            ["claim.send_reply@1", "external_write", "risk high", "the text you write below", "$.approval.comment"]
        {
            assert!(page.body.contains(shown), "{shown} in the preview");
        }
        assert!(!page.body.contains("<script>alert"), "a field's script is never markup");
        assert!(!page.body.contains("<img src=x"), "nor its tags");
        assert!(page.body.contains("&lt;script&gt;alert("), "it is shown as text");
        assert!(page.body.contains("name=\"outcome\" value=\"approved\""), "the decider has the buttons");
        let csrf = page.csrf();

        // Forged forms change nothing: no token, another session's token, another origin.
        let path = format!("/console/approvals/{approval}/decide");
        let without =
            console.post(Some(&cookie), &path, &[("outcome", "approved"), ("csrf", "")], console.origin()).await;
        assert_eq!(without.status, StatusCode::FORBIDDEN);
        let missing = console.post(Some(&cookie), &path, &[("outcome", "approved")], console.origin()).await;
        assert_eq!(missing.status, StatusCode::FORBIDDEN, "a form without the token is refused the same way");
        let (reader_cookie, _) = console.sign_in(&reader).await;
        let reader_page = console.get(Some(&reader_cookie), &format!("/console/tasks/{task}")).await;
        assert_eq!(reader_page.status, StatusCode::OK, "a reader sees the task");
        assert!(reader_page.body.contains("claim.send_reply@1"), "and what approving would do");
        assert!(!reader_page.body.contains("name=\"outcome\""), "but no decision buttons");
        let reader_csrf = reader_page.csrf();
        let crossed = console
            .post(Some(&cookie), &path, &[("outcome", "approved"), ("csrf", &reader_csrf)], console.origin())
            .await;
        assert_eq!(crossed.status, StatusCode::FORBIDDEN);
        let foreign = console
            .post(Some(&cookie), &path, &[("outcome", "approved"), ("csrf", &csrf)], "https://evil.example")
            .await;
        assert_eq!(foreign.status, StatusCode::FORBIDDEN);
        // The reader forges the decision with its own session: the engine refuses it.
        let forged = console
            .post(Some(&reader_cookie), &path, &[("outcome", "approved"), ("csrf", &reader_csrf)], console.origin())
            .await;
        assert_eq!(forged.status, StatusCode::FORBIDDEN, "{}", forged.body);
        assert_eq!(approval_status(&core, &clerk, &approval).await, "pending", "nothing was decided");

        // The decision, with a comment; then the page shows the outcome.
        let comment = "Refund in full <3";
        let decided = console
            .post(
                Some(&cookie),
                &path,
                &[("outcome", "approved"), ("comment", comment), ("csrf", &csrf)],
                console.origin(),
            )
            .await;
        assert_eq!(decided.status, StatusCode::SEE_OTHER, "{}", decided.body);
        assert!(decided.location().starts_with(&format!("/console/tasks/{task}")), "{}", decided.location());
        assert_eq!(approval_status(&core, &clerk, &approval).await, "approved");
        let after = console.get(Some(&cookie), &format!("/console/tasks/{task}")).await;
        assert!(after.body.contains("Refund in full &lt;3"), "the comment, escaped");
        assert!(after.body.contains("call claim.send_reply@1"), "the outcome's action");
        let again =
            console.post(Some(&cookie), &path, &[("outcome", "rejected"), ("csrf", &csrf)], console.origin()).await;
        assert_eq!(again.status, StatusCode::CONFLICT, "decided once");

        // Sign-out ends the session: the cookie replayed signs nobody in and decides nothing.
        let out = console.post(Some(&cookie), "/console/sign-out", &[("csrf", &csrf)], console.origin()).await;
        assert_eq!((out.status, out.location()), (StatusCode::SEE_OTHER, "/console/sign-in"));
        assert!(out.headers.get(SET_COOKIE).and_then(|v| v.to_str().ok()).is_some_and(|v| v.contains("Max-Age=0")));
        let replayed = console.get(Some(&cookie), &format!("/console/tasks/{task}")).await;
        assert_eq!((replayed.status, replayed.location()), (StatusCode::SEE_OTHER, "/console/sign-in"));
        let second = core.post(&clerk, "/approvals", &json!({"taskId": task})).await.ok(201)["id"]
            .as_str()
            .expect("id")
            .to_owned();
        let late = format!("/console/approvals/{second}/decide");
        let replay =
            console.post(Some(&cookie), &late, &[("outcome", "approved"), ("csrf", &csrf)], console.origin()).await;
        assert_eq!(replay.status, StatusCode::SEE_OTHER);
        assert_eq!(approval_status(&core, &clerk, &second).await, "pending", "the replayed cookie decided nothing");
        // A revoked token ends the sessions made from it, too.
        let tokens = core.engine.store().principal_by_name("reader").await.expect("reader");
        let reader_tokens = core.engine.store().tokens(&tokens.id).await.expect("tokens");
        core.engine.revoke_token(&reader_tokens[0].id, &Origin::default()).await.expect("revoked");
        let revoked = console.get(Some(&reader_cookie), "/console/tasks").await;
        assert_eq!(revoked.status, StatusCode::SEE_OTHER);
    })
    .await;
}

#[tokio::test]
async fn cookies_are_secure_when_the_console_is_reached_over_https() {
    let folder = skill_fixtures::Scratch::new("console-secure");
    let store = skill_store::open(folder.path().to_str().expect("utf-8"), &Default::default()).await.expect("store");
    let engine = skill_engine::Engine::new(store);
    let person = token(&engine, "ana", &["tasks.read"]).await;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("a port");
    let root = format!("http://{}", listener.local_addr().expect("address"));
    let options = skill_server::console::Options { secure_cookies: true, ..Default::default() };
    let served = tokio::spawn(async move {
        axum::serve(listener, skill_server::app_with(engine, options)).await.expect("served");
    });
    let http = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().expect("a client");
    let answer = http
        .post(format!("{root}/console/sign-in"))
        .header("content-type", "application/x-www-form-urlencoded")
        .body(form(&[("token", &person)]))
        .send()
        .await
        .expect("answers");
    let set = answer.headers().get(SET_COOKIE).and_then(|v| v.to_str().ok()).unwrap_or_default().to_owned();
    assert!(set.contains("; Secure") && set.contains("HttpOnly"), "{set}");
    served.abort();
}

#[tokio::test]
async fn operators_see_why_calls_wait_what_they_did_and_the_catalog() {
    each_backend("console-operators", |core| async move {
        let core = core;
        crate::claims::apply_package(&core).await;
        crate::claims::ensure_workspace(&core, "claims").await;
        core.engine.grant_execution(&["claims.reply"]).await.expect("the execution principal may reply");
        let clerk = token(&core.engine, "clerk", &["skills.invoke", "tasks.write@claims", "claims.reply@claims"]).await;
        let operator = token(&core.engine, "operator", &["org.read"]).await;
        let console = Console::new(&core);
        let reviewer = token(&core.engine, "reviewer", &["skills.invoke", "approvals.decide@claims"]).await;
        // No executor runs: an approved execution's send waits for one; a gate asked afterwards
        // holds it.
        let task = |claim: &str| {
            let (core, clerk, reviewer) = (&core, &clerk, &reviewer);
            let body = json!({"workspace": "claims", "taskType": "claim-send@1", "title": format!("Send {claim}"),
                              "customFields": {"claim": claim, "reply": "Sorry."}, "approval": {}});
            async move {
                let id = core.post(clerk, "/tasks", &body).await.ok(201)["id"].as_str().expect("id").to_owned();
                let gates = core.get(clerk, &format!("/approvals?task={id}")).await.ok(200).clone();
                let gate = gates["items"][0]["id"].as_str().expect("a gate").to_owned();
                core.post(reviewer, &format!("/approvals/{gate}:decide"), &json!({"outcome": "approved"}))
                    .await
                    .ok(200);
                id
            }
        };
        let waiting = task("C-1").await;
        let held = task("C-2").await;
        let waiting_call = core.calls_of(&waiting, 1).await.remove(0);
        core.calls_of(&held, 1).await;
        core.post(&clerk, "/approvals", &json!({"taskId": held})).await.ok(201);
        // A skill whose description is a script.
        let mut hostile = crate::calls::local("claim.hostile", "none", (1, 0), &[]);
        hostile["description"] = json!("<script>alert('catalog')</script> Finds <b>things</b>.");
        core.publish(hostile).await;

        // An executor's session that ran one call with a cost.
        core.publish(crate::calls::local("claim.archive", "none", (1, 0), &[])).await;
        core.invoke(&clerk, "claim.archive@1", json!({"inputs": {"claim": "C-9"}, "taskId": waiting})).await.ok(201);
        let session = core
            .post(
                &core.executor,
                "/executor-sessions",
                &json!({"capabilities": ["skills.protocol.local"], "ttlSeconds": 60}),
            )
            .await
            .ok(201)["id"]
            .as_str()
            .expect("id")
            .to_owned();
        let take =
            json!({"protocols": ["local"], "localEntrypoints": ["claims.skills:claim_archive"], "sessionId": session});
        let claimed = core.claim(take).await.ok(200).clone();
        let archived = claimed["invocation"]["id"].as_str().expect("a claimed call").to_owned();
        let report = json!({"fencingToken": 1, "sessionId": session, "output": {"label": "archived"},
                            "cost": {"units": {"page": 2.5}}});
        core.act(&core.executor, &archived, "complete", report).await.ok(200);

        let (cookie, _) = console.sign_in(&operator).await;
        let executors = console.get(Some(&cookie), "/console/executors").await;
        assert_eq!(executors.status, StatusCode::OK, "{}", executors.body);
        for shown in [session.as_str(), "claims.skills:claim_archive", "active", "executor"] {
            assert!(executors.body.contains(shown), "{shown} on the executors' page");
        }
        let costs = console.get(Some(&cookie), "/console/costs?days=1").await;
        assert_eq!(costs.status, StatusCode::OK, "{}", costs.body);
        assert!(
            costs.body.contains("claim.archive@1") && costs.body.contains("units.page</code> 2.5"),
            "{}",
            costs.body
        );
        assert!(costs.body.contains(&format!("/console/tasks/{waiting}")), "per task too");
        assert_eq!(console.get(Some(&cookie), "/console/costs?days=2").await.status, StatusCode::BAD_REQUEST);
        let queue = console.get(Some(&cookie), "/console/queue").await;
        assert_eq!(queue.status, StatusCode::OK, "{}", queue.body);
        assert!(queue.body.contains("Every call of the core."));
        assert!(queue.body.contains("no_executor"), "a call nobody covers says so");
        assert!(queue.body.contains("local:claims_integration.skills:send_reply"), "and names what to run");
        assert!(queue.body.contains("held_for_approval"), "a held execution says so");
        // The call's page: what was asked, on what basis, and its events.
        let id = waiting_call["id"].as_str().expect("id");
        let call = console.get(Some(&cookie), &format!("/console/calls/{id}")).await;
        assert_eq!(call.status, StatusCode::OK, "{}", call.body);
        for shown in ["claim.send_reply@1", "execution", "skill.invocation_requested", "C-1", "no_executor"] {
            assert!(call.body.contains(shown), "{shown} on the call's page");
        }
        // The catalog: the hostile description is text.
        let catalog = console.get(Some(&cookie), "/console/catalog").await;
        assert_eq!(catalog.status, StatusCode::OK);
        assert!(catalog.body.contains("claim.send_reply@1") && catalog.body.contains("claim.import_rows@1"));
        assert!(!catalog.body.contains("<script>alert('catalog')"), "never markup");
        assert!(catalog.body.contains("&lt;script&gt;alert("), "shown as text");
        let skill = console.get(Some(&cookie), "/console/skills/claim.send_reply@1").await;
        assert_eq!(skill.status, StatusCode::OK, "{}", skill.body);
        for shown in ["external_write", "risk high", "claims", "Resolved tools", "timeoutSeconds"] {
            assert!(skill.body.contains(shown), "{shown} on the skill's page");
        }
        // A composite: what discovery says of it.
        core.publish(json!({"name": "claims.archivist", "version": "1", "includes": ["claim.archive@1"]})).await;
        let composite = console.get(Some(&cookie), "/console/skills/claims.archivist@1").await;
        assert_eq!(composite.status, StatusCode::OK, "{}", composite.body);
        for shown in ["composite", "<dt>Read-only</dt><dd>true</dd>", "<dt>Tools</dt><dd>1</dd>", "claim.archive"] {
            assert!(composite.body.contains(shown), "{shown} on the composite's page: {}", composite.body);
        }
        let hostile_page = console.get(Some(&cookie), "/console/skills/claim.hostile@1").await;
        assert!(
            !hostile_page.body.contains("<script>alert('catalog')") && hostile_page.body.contains("&lt;b&gt;things")
        );

        // The clerk is no operator: no catalog, and the queue of its own calls.
        let (clerk_cookie, _) = console.sign_in(&clerk).await;
        for page in ["/console/catalog", "/console/executors", "/console/costs"] {
            assert_eq!(console.get(Some(&clerk_cookie), page).await.status, StatusCode::FORBIDDEN, "{page}");
        }
        let own = console.get(Some(&clerk_cookie), "/console/queue").await;
        assert!(own.body.contains("Your calls"), "{}", own.body);
        // A task's reader reads the calls of its tasks.
        let reader = token(&core.engine, "reader", &["tasks.read@claims"]).await;
        let (reader_cookie, _) = console.sign_in(&reader).await;
        assert_eq!(console.get(Some(&reader_cookie), &format!("/console/calls/{id}")).await.status, StatusCode::OK);
        let outsider = token(&core.engine, "outsider", &["skills.invoke"]).await;
        let (outsider_cookie, _) = console.sign_in(&outsider).await;
        assert_eq!(
            console.get(Some(&outsider_cookie), &format!("/console/calls/{id}")).await.status,
            StatusCode::NOT_FOUND
        );
    })
    .await;
}

#[tokio::test]
async fn the_tasks_page_lists_every_approval_waiting_for_the_viewer_and_pages_the_rest() {
    each_backend("console-pages", |core| async move {
        let core = core;
        crate::claims::apply_package(&core).await;
        crate::claims::ensure_workspace(&core, "claims").await;
        let clerk = token(&core.engine, "clerk", &["skills.invoke", "tasks.write@claims"]).await;
        let reviewer = token(&core.engine, "reviewer", &["skills.invoke", "approvals.decide@claims"]).await;
        let create = |title: String, fields: Value| {
            let (core, clerk) = (&core, &clerk);
            let body =
                json!({"workspace": "claims", "taskType": "claim-reply@1", "title": title, "customFields": fields});
            async move { core.post(clerk, "/tasks", &body).await.ok(201)["id"].as_str().expect("id").to_owned() }
        };
        // The oldest task asks for a decision, and holds a long field; 230 tasks come after it.
        let long = "L".repeat(5_000);
        let oldest = create("The oldest claim".to_owned(), json!({"claim": long})).await;
        core.post(&clerk, "/approvals", &json!({"taskId": oldest})).await.ok(201);
        for n in 0..230 {
            create(format!("Claim {n}"), json!({"claim": format!("C-{n}")})).await;
        }
        let console = Console::new(&core);
        let (cookie, _) = console.sign_in(&reviewer).await;
        let page = console.get(Some(&cookie), "/console/tasks").await;
        assert_eq!(page.status, StatusCode::OK);
        let waiting = page.body.split("All tasks").next().expect("the page");
        assert!(waiting.contains("Waiting for your decision") && waiting.contains("The oldest claim"), "{waiting}");
        assert_eq!(page.body.matches("<tr>").count(), 1 + 1 + 1 + 50, "a header and a row each, and 50 tasks");
        // The next pages, through their links, reach the oldest task.
        let mut next = page.body.clone();
        let mut seen = 0;
        while let Some(at) = next.find("/console/tasks?cursor=") {
            let link: String = next[at..].chars().take_while(|c| *c != '"').collect();
            next = console.get(Some(&cookie), &link).await.body;
            seen += 1;
            assert!(seen < 10, "pages end");
        }
        assert_eq!(seen, 4, "231 tasks, 50 a page");
        assert!(next.contains("The oldest claim"));
        // A long field is shown in part, saying so.
        let task = console.get(Some(&cookie), &format!("/console/tasks/{oldest}")).await;
        assert!(task.body.contains("shown in part: 2000 of 5000 characters"), "{}", task.body.len());
        let fields = &task.body[task.body.find("id=\"fields\"").expect("the fields")..];
        let fields = &fields[..fields.find("</section>").expect("their end")];
        assert!(!fields.contains(&"L".repeat(2_001)), "the fields are shown in part");
    })
    .await;
}
