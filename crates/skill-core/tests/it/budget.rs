//! The statement budget of a call on PostgreSQL: what the database runs for one call's life —
//! invoke, claim, complete, the result read — through the real API, counted by the database
//! itself (`pg_stat_statements`, which the test command's server loads). The core here serves
//! its API without its background workers, so every statement counted is a request's. The budget
//! counts what the core sends; what the journal's deferred trigger runs at each commit (each
//! event's leaf and hashes, on the `journal_` tables the core's requests never name) is counted
//! apart, with a budget of its own.

use std::collections::BTreeMap;
use std::process::Command;

use serde_json::{Value, json};
use skill_engine::Engine;

use crate::api::{executor_token, token};
use crate::calls::{local, postgres_database, test_allowance};

/// Each statement the database ran, by its normalized text: how many times.
fn statements(url: &str) -> BTreeMap<String, i64> {
    let query = "SELECT calls, regexp_replace(query, '\\s+', ' ', 'g') FROM pg_stat_statements \
                 WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database()) \
                 AND query NOT LIKE '%pg_stat_statements%'";
    let output = Command::new("psql").args([url, "-qAt", "-F", "\t", "-c", query]).output().expect("psql runs");
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter_map(|line| line.split_once('\t'))
        .map(|(calls, text)| (text.to_owned(), calls.parse().unwrap_or(0)))
        .fold(BTreeMap::new(), |mut all, (text, calls)| {
            *all.entry(text).or_default() += calls;
            all
        })
}

/// What ran between two readings: each statement's text and how many times — the core's own
/// (`journal: false`) or the journal trigger's.
fn ran_of(before: &BTreeMap<String, i64>, after: &BTreeMap<String, i64>, journal: bool) -> Vec<(String, i64)> {
    after
        .iter()
        .map(|(text, calls)| (text.clone(), calls - before.get(text).copied().unwrap_or(0)))
        .filter(|(text, calls)| *calls > 0 && text.contains("journal_") == journal)
        .collect()
}

fn ran(before: &BTreeMap<String, i64>, after: &BTreeMap<String, i64>) -> Vec<(String, i64)> {
    ran_of(before, after, false)
}

struct Served {
    base: String,
    url: String,
    admin: String,
    caller: String,
    executor: String,
    http: reqwest::Client,
}

impl Served {
    async fn post(&self, token: &str, path: &str, body: &Value) -> (u16, Value) {
        let answer =
            self.http.post(format!("{}{path}", self.base)).bearer_auth(token).json(body).send().await.expect("answers");
        let status = answer.status().as_u16();
        (status, answer.json().await.unwrap_or(Value::Null))
    }

    async fn get(&self, token: &str, path: &str) -> (u16, Value) {
        let answer = self.http.get(format!("{}{path}", self.base)).bearer_auth(token).send().await.expect("answers");
        (answer.status().as_u16(), answer.json().await.unwrap_or(Value::Null))
    }

    /// One call's life, each phase's statements.
    async fn life(&self, key: &str) -> Vec<(&'static str, Vec<(String, i64)>)> {
        let mut phases = Vec::new();
        let mut before = statements(&self.url);
        let first = before.clone();
        let body = json!({"inputs": {"claim": key}, "idempotencyKey": key});
        let (status, call) = self.post(&self.caller, "/skills/claim.classify@1:invoke", &body).await;
        assert_eq!(status, 201, "{call}");
        let mut after = statements(&self.url);
        phases.push(("invoke", ran(&before, &after)));
        before = after;
        let claim = json!({"protocols": ["local"], "localEntrypoints": ["claims.skills:claim_classify"]});
        let (status, claimed) = self.post(&self.executor, "/skill-invocations:claim", &claim).await;
        assert_eq!(status, 200, "{claimed}");
        after = statements(&self.url);
        phases.push(("claim", ran(&before, &after)));
        before = after;
        let id = claimed["invocation"]["id"].as_str().expect("an id").to_owned();
        let done = json!({"fencingToken": claimed["invocation"]["fencingToken"], "output": {"label": "delivery"}});
        let (status, completed) = self.post(&self.executor, &format!("/skill-invocations/{id}:complete"), &done).await;
        assert_eq!(status, 200, "{completed}");
        after = statements(&self.url);
        phases.push(("complete", ran(&before, &after)));
        before = after;
        let (status, read) = self.get(&self.caller, &format!("/skill-invocations/{id}")).await;
        assert_eq!((status, read["status"].as_str()), (200, Some("succeeded")), "{read}");
        after = statements(&self.url);
        phases.push(("read", ran(&before, &after)));
        phases.push(("journal (its trigger, at the commits above)", ran_of(&first, &after, true)));
        phases
    }
}

async fn served() -> Served {
    let url = postgres_database("budget");
    let created = Command::new("psql")
        .args([url.as_str(), "-q", "-c", "CREATE EXTENSION IF NOT EXISTS pg_stat_statements"])
        .output()
        .expect("psql runs");
    assert!(created.status.success(), "{}", String::from_utf8_lossy(&created.stderr));
    let store = skill_store::open(&url, &Default::default()).await.expect("store");
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("a port");
    let root = format!("http://{}", listener.local_addr().expect("address"));
    let engine = Engine::new(store).with_issuer(&root);
    // The API alone: no sweep, outcome, rule or process worker runs a statement of its own —
    // only the listening connection a serving core keeps, which lets it keep the reads by key.
    std::mem::forget(engine.listen_to_other_cores().await.expect("listens"));
    let app = skill_server::app(engine.clone());
    tokio::spawn(skill_http::serve(listener, app, Default::default(), std::future::pending()));
    let admin = token(&engine, "admin", &["org.manage"]).await;
    let caller = token(&engine, "caller", &["skills.invoke"]).await;
    let executor = executor_token(&engine, "executor", &["skills.execute"], test_allowance()).await;
    let served = Served { base: format!("{root}/api/v1"), url, admin, caller, executor, http: reqwest::Client::new() };
    let (status, published) =
        served.post(&served.admin, "/skills", &local("claim.classify", "none", (1, 0), &[])).await;
    assert_eq!(status, 201, "{published}");
    served
}

#[tokio::test]
#[allow(clippy::print_stdout)] // the counts, for `--nocapture`
async fn a_calls_life_on_postgres_runs_within_its_statement_budget() {
    let served = served().await;
    // The first call warms what a core keeps (compiled schemas, a version's timeout).
    served.life("warm").await;
    let phases = served.life("counted").await;
    let mut report = String::new();
    let mut total = 0;
    for (phase, ran) in &phases {
        let count: i64 = ran.iter().map(|(_, calls)| calls).sum();
        if !phase.starts_with("journal") {
            total += count;
        }
        report.push_str(&format!("{phase}: {count} statements\n"));
        for (text, calls) in ran {
            report.push_str(&format!("  {calls} × {}\n", text.chars().take(110).collect::<String>()));
        }
    }
    println!("{report}total: {total}");
    assert!(total <= BUDGET, "one call's life ran {total} statements, over the budget of {BUDGET}:\n{report}");

    // 32 calls moving at once: each phase's requests sent together.
    let before = statements(&served.url);
    let keys: Vec<String> = (0..32).map(|n| format!("batch-{n}")).collect();
    let served = &served;
    let invoked = futures::future::join_all(keys.iter().map(|key| async move {
        let body = json!({"inputs": {"claim": key}, "idempotencyKey": key});
        served.post(&served.caller, "/skills/claim.classify@1:invoke", &body).await
    }))
    .await;
    assert!(invoked.iter().all(|(status, _)| *status == 201), "{invoked:?}");
    let claim = json!({"protocols": ["local"], "localEntrypoints": ["claims.skills:claim_classify"]});
    let claimed =
        futures::future::join_all((0..32).map(|_| served.post(&served.executor, "/skill-invocations:claim", &claim)))
            .await;
    assert!(claimed.iter().all(|(status, _)| *status == 200), "{claimed:?}");
    let completed = futures::future::join_all(claimed.iter().map(|(_, claimed)| {
        let id = claimed["invocation"]["id"].as_str().unwrap_or_default().to_owned();
        let done = json!({"fencingToken": claimed["invocation"]["fencingToken"], "output": {"label": "delivery"}});
        async move { served.post(&served.executor, &format!("/skill-invocations/{id}:complete"), &done).await }
    }))
    .await;
    assert!(completed.iter().all(|(status, _)| *status == 200), "{completed:?}");
    let after = statements(&served.url);
    let all: i64 = ran(&before, &after).iter().map(|(_, calls)| calls).sum();
    let each = all as f64 / 32.0;
    println!("32 calls at once (invoke, claim, complete): {all} statements, {each:.2} per call");
    assert!(each <= BUDGET_AT_ONCE, "{each:.2} statements per call when 32 move at once, over {BUDGET_AT_ONCE}");
    let journal = ran_of(&before, &after, true);
    let inside: i64 = journal.iter().map(|(_, calls)| calls).sum();
    let per_call = inside as f64 / 32.0;
    println!("  and {inside} by the journal's trigger at their commits, {per_call:.2} per call");
    assert!(
        per_call <= JOURNAL_AT_ONCE,
        "{per_call:.2} journal statements per call, over {JOURNAL_AT_ONCE}: {journal:?}"
    );
}

/// The statements one call's life may run, all phases together: a guard against a phase that
/// grows; what each phase runs is printed (`--nocapture`) and written in `docs/calls.md`.
const BUDGET: i64 = 10;
/// Per call, when 32 calls' invokes, claims and completions arrive together (no result read):
/// 5.3 measured, the invokes and the completions that arrive together written a few per statement.
const BUDGET_AT_ONCE: f64 = 6.0;
/// Per call, what the journal's deferred trigger runs at the commits of those (three events a
/// call, each: the head read under its lock, its leaf, the head grown, its hash, and on average
/// one parent with the read of its sibling): 17.9 measured.
const JOURNAL_AT_ONCE: f64 = 19.0;
