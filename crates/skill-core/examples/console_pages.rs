//! How fast the console's pages are with many calls in the store (`cargo xtask bench console`):
//! a core on SQLite with 10,000 calls (1,000 of them on one task), served on 127.0.0.1, and each
//! page fetched 30 times by a signed-in operator — beside the API's JSON listing of the same
//! calls, the reference the queue page is built from. Prints a table and one JSON line.
//!
//! ```text
//! console_pages [CALLS]
//! ```

#![allow(clippy::print_stdout)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use skill_engine::{Actor, Engine, Origin, TokenRequest};

async fn actor(engine: &Engine, name: &str, grants: &[&str]) -> (String, Actor) {
    let request = TokenRequest {
        principal: name.to_owned(),
        kind: "person".to_owned(),
        grants: grants.iter().map(|g| (*g).to_owned()).collect(),
        label: String::new(),
        expires_at: None,
    };
    let token = engine.issue_token(&request, &Origin::default()).await.expect("a token").token;
    let actor = engine.authenticate(&token).await.expect("the token acts");
    (token, actor)
}

fn from<T: serde::de::DeserializeOwned>(value: Value) -> T {
    serde_json::from_value(value).expect("a request")
}

/// p50 and p95 of `times`, in milliseconds.
fn quantiles(mut times: Vec<Duration>) -> (f64, f64) {
    times.sort();
    let at = |q: f64| times[((times.len() as f64 - 1.0) * q).round() as usize].as_secs_f64() * 1000.0;
    (at(0.5), at(0.95))
}

#[tokio::main]
#[allow(
    clippy::too_many_lines,
    reason = "a measuring run is one script of phases (start, load, time each page, report), read top to bottom"
)]
async fn main() {
    let calls: usize = std::env::args().nth(1).and_then(|n| n.parse().ok()).unwrap_or(10_000);
    let folder = std::env::temp_dir().join(format!("console-pages-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&folder);
    let options = skill_store::StoreOptions { sqlite_full_sync: false, ..Default::default() };
    let store = skill_store::open(folder.to_str().expect("utf-8"), &options).await.expect("a store");
    let engine = Engine::new(store);
    engine.create_workspace("desk", "Desk", &Origin::default()).await.expect("a workspace");
    let (_, admin) = actor(&engine, "admin", &["org.manage"]).await;
    let (clerk_token, clerk) = actor(&engine, "clerk", &["skills.invoke", "tasks.write@desk"]).await;
    let (operator, _) = actor(&engine, "operator", &["org.read", "approvals.decide@desk"]).await;
    let skill = json!({"name": "claim.archive", "version": "1", "description": "Archives a claim.", "sideEffects": "none",
        "riskLevel": "low", "contract": {"inputs": {"type": "object"}, "outputs": {"type": "object"}, "timeoutSeconds": 5,
        "implementation": {"protocol": "local", "entrypoint": "claims.skills:archive"}}});
    engine.publish(&admin, &from(skill), None).await.expect("published");
    let task_type = json!({"key": "claim-archive", "version": "1", "customFields": {"claim": {"type": "string"}}, "approvalSchema": {"gates": {"default": {"outcomes":
        {"approved": [{"invokeSkill": {"skill": "claim.archive@1", "inputs": {"claim": "$.task.customFields.claim"}}}]}}}}});
    engine.publish_task_type(&admin, &from(task_type), None).await.expect("a task type");
    let task = engine
        .create_task(
            &clerk,
            &from(json!({"workspace": "desk", "taskType": "claim-archive@1", "title": "Archive C-1",
                         "customFields": {"claim": "C-1"}})),
            None,
        )
        .await
        .expect("a task");
    engine.request_approval(&clerk, &from(json!({"taskId": task.id})), None).await.expect("an approval");

    // The calls, 32 at a time; every tenth on the task (at most 1,000).
    let started = Instant::now();
    let engine = Arc::new(engine);
    let clerk = Arc::new(clerk);
    let mut workers = Vec::new();
    for worker in 0..32 {
        let (engine, clerk, task) = (Arc::clone(&engine), Arc::clone(&clerk), task.id.clone());
        workers.push(tokio::spawn(async move {
            for n in (worker..calls).step_by(32) {
                let on_task = n % 10 == 0 && n < 10_000;
                let request = json!({"inputs": {"claim": format!("C-{n}")}, "taskId": on_task.then_some(&task)});
                engine.invoke(&clerk, "claim.archive@1", &from(request), None).await.expect("invoked");
            }
        }));
    }
    for worker in workers {
        worker.await.expect("a worker");
    }
    let seeded = started.elapsed();
    let first = engine.invocations(&admin, &from(json!({"limit": 1}))).await.expect("calls").items.remove(0).id;

    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("a port");
    let root = format!("http://{}", listener.local_addr().expect("an address"));
    let app = skill_server::app((*engine).clone());
    tokio::spawn(async move { axum::serve(listener, app).await.expect("served") });
    let http = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().expect("a client");
    let signed = http
        .post(format!("{root}/console/sign-in"))
        .header("content-type", "application/x-www-form-urlencoded")
        .body(format!("token={operator}"))
        .send()
        .await
        .expect("signed in");
    let cookie =
        signed.headers()["set-cookie"].to_str().expect("ASCII").split(';').next().expect("a cookie").to_owned();

    let pages = [
        ("api: GET /skill-invocations?status=pending&limit=100", "/api/v1/skill-invocations?status=pending&limit=100"),
        ("console: queue", "/console/queue"),
        ("console: tasks", "/console/tasks"),
        ("console: task (1,000 calls, 100 shown)", &format!("/console/tasks/{}", task.id)),
        ("console: call", &format!("/console/calls/{first}")),
        ("console: catalog", "/console/catalog"),
        ("console: costs, 1 day", "/console/costs?days=1"),
    ];
    let mut rows = Vec::new();
    for (name, path) in pages {
        let mut times = Vec::new();
        let mut bytes = 0;
        for _ in 0..30 {
            let at = Instant::now();
            let request = http.get(format!("{root}{path}")).header("cookie", &cookie);
            let request = if path.starts_with("/api/") { request.bearer_auth(&clerk_token) } else { request };
            let answer = request.send().await.expect("answered");
            assert!(answer.status().is_success(), "{path}: {}", answer.status());
            bytes = answer.bytes().await.expect("a body").len();
            times.push(at.elapsed());
        }
        let (p50, p95) = quantiles(times);
        rows.push(json!({"page": name, "p50Ms": p50, "p95Ms": p95, "bytes": bytes}));
    }
    println!("{calls} calls seeded in {:.1} s", seeded.as_secs_f64());
    println!("{:<48} {:>9} {:>9} {:>9}", "page", "p50 ms", "p95 ms", "bytes");
    for row in &rows {
        println!(
            "{:<48} {:>9.2} {:>9.2} {:>9}",
            row["page"].as_str().unwrap_or_default(),
            row["p50Ms"].as_f64().unwrap_or_default(),
            row["p95Ms"].as_f64().unwrap_or_default(),
            row["bytes"]
        );
    }
    let ratio = rows[1]["p50Ms"].as_f64().unwrap_or_default() / rows[0]["p50Ms"].as_f64().unwrap_or(1.0);
    println!("queue page / API listing (p50): {ratio:.2}");
    println!("{}", json!({"calls": calls, "pages": rows, "queueOverApi": ratio}));
    let _ = std::fs::remove_dir_all(&folder);
}
