//! Waiting claims look on their own for calls no wake-up told them of (queued through another
//! core, a backoff ended): one look serves all the claims of one executor and declaration, and a
//! claim that finds a call that way wakes the next, so calls found on a look are taken at once,
//! not one per look.

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::StreamExt;
use serde_json::json;
use skill_engine::Engine;
use skill_fixtures::Scratch;

use crate::api::{executor_token, token};
use crate::calls::{local, test_allowance};

async fn serve(engine: &Engine) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("a port");
    let base = format!("http://{}/api/v1", listener.local_addr().expect("address"));
    tokio::spawn(skill_server::serve(engine.clone(), listener, Default::default()));
    base
}

#[tokio::test]
async fn a_claim_that_finds_calls_on_its_own_look_wakes_the_next() {
    let folder = Scratch::new("skill-core-looks");
    let store = skill_store::open(folder.path().to_str().expect("utf-8"), &Default::default()).await.expect("store");
    // Looks two seconds apart: calls taken one per look would take eight seconds for five.
    let every = Duration::from_secs(2);
    let serving = Engine::new(Arc::clone(&store)).with_look_again(every);
    // A second core on the same database: what it queues wakes no claim of the first.
    let other = Engine::new(Arc::clone(&store));
    let (here, there) = (serve(&serving).await, serve(&other).await);
    let admin = token(&serving, "admin", &["org.manage"]).await;
    let caller = token(&serving, "caller", &["skills.invoke"]).await;
    let executor = executor_token(&serving, "executor", &["skills.execute"], test_allowance()).await;
    let http = reqwest::Client::new();
    let post = |base: &str, token: &str, path: &str, body: serde_json::Value| {
        http.post(format!("{base}{path}")).bearer_auth(token).json(&body).send()
    };
    let published = post(&here, &admin, "/skills", local("claim.classify", "none", (1, 0), &[])).await.expect("sent");
    assert_eq!(published.status(), 201);

    let claim =
        json!({"protocols": ["local"], "localEntrypoints": ["claims.skills:claim_classify"], "waitSeconds": 20});
    let mut waiting: futures::stream::FuturesUnordered<_> =
        (0..8).map(|_| post(&here, &executor, "/skill-invocations:claim", claim.clone())).collect();
    // Every claim has looked once and waits.
    let mut answers = Vec::new();
    let settled = tokio::time::timeout(Duration::from_millis(300), waiting.next()).await;
    assert!(settled.is_err(), "nothing to take yet");
    for n in 0..5 {
        let body = json!({"inputs": {"claim": format!("c-{n}")}});
        let invoked = post(&there, &caller, "/skills/claim.classify@1:invoke", body).await.expect("sent");
        assert_eq!(invoked.status(), 201);
    }
    while answers.len() < 5 {
        let answer = waiting.next().await.expect("a claim").expect("answered");
        assert_eq!(answer.status(), 200, "a call taken");
        answers.push(Instant::now());
    }
    let spread = answers[4] - answers[0];
    assert!(spread < every / 2, "the five calls were taken one after another at once, not a look apiece: {spread:?}");
}
