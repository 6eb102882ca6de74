//! The core's Prometheus metrics, scraped over HTTP from the endpoint `--metrics-listen` serves:
//! bounded labels whatever the catalog holds, and the calls' counts and latencies as they ran.
//! The recorder is the test process's (every core of this binary records into it), so the checks
//! are on what this test did at least, and on bounds that hold whatever the others did.

use std::collections::BTreeSet;

use serde_json::{Value, json};

use crate::api::executor_token;
use crate::calls::{Backend, core, local, test_allowance};

/// The scrape endpoint of this test process, started once.
async fn scrape_address() -> String {
    static ADDRESS: tokio::sync::OnceCell<String> = tokio::sync::OnceCell::const_new();
    ADDRESS
        .get_or_init(|| async {
            let handle = skill_http::metrics::install("core").expect("the recorder");
            let listener = skill_http::metrics::bind("127.0.0.1:0").await.expect("a port");
            let address = listener.local_addr().expect("an address").to_string();
            // On a thread of its own: each test has its own runtime, and this one outlives it.
            std::thread::spawn(move || {
                let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("a runtime");
                runtime.block_on(skill_http::metrics::serve(listener, handle, None));
            });
            address
        })
        .await
        .clone()
}

/// The series of a scrape: every line that is not a comment.
fn series(text: &str) -> Vec<&str> {
    text.lines().filter(|line| !line.is_empty() && !line.starts_with('#')).collect()
}

/// The values of `label` on the series of `metric`.
fn label_values(text: &str, metric: &str, label: &str) -> BTreeSet<String> {
    let key = format!("{label}=\"");
    series(text)
        .into_iter()
        .filter(|line| line.starts_with(&format!("{metric}{{")))
        .filter_map(|line| line.split(&key).nth(1).and_then(|rest| rest.split('"').next()).map(str::to_owned))
        .collect()
}

/// The sum of `metric`'s series whose labels include every one of `having`.
fn total(text: &str, metric: &str, having: &[&str]) -> f64 {
    series(text)
        .into_iter()
        .filter(|line| line.starts_with(&format!("{metric}{{")) && having.iter().all(|h| line.contains(h)))
        .filter_map(|line| line.rsplit(' ').next().and_then(|value| value.parse::<f64>().ok()))
        .sum()
}

#[tokio::test]
async fn a_hundred_skills_and_three_executors_stay_within_a_thousand_series() {
    let address = scrape_address().await;
    let scrape = || async {
        let answer = reqwest::get(format!("http://{address}/metrics")).await.expect("the scrape answers");
        assert_eq!(answer.status(), 200);
        let kind = answer.headers()["content-type"].to_str().expect("text").to_owned();
        assert!(kind.starts_with("text/plain; version=0.0.4"), "{kind}");
        answer.text().await.expect("a body")
    };
    let before = scrape().await;
    let core = core(Backend::Sqlite, "metrics-series").await;
    let mut entrypoints = Vec::new();
    for n in 0..100 {
        let mut skill = local(&format!("metered.s{n}"), "none", (2, 0), &[]);
        skill["contract"]["implementation"]["entrypoint"] = json!(format!("claims.metered:s{n}"));
        entrypoints.push(format!("claims.metered:s{n}"));
        core.publish(skill).await;
    }
    let mut ids = Vec::new();
    for n in 0..100 {
        let call = core.invoke(&core.caller, &format!("metered.s{n}@1"), json!({"inputs": {"claim": "c"}})).await;
        ids.push(call.ok(201)["id"].as_str().expect("an id").to_owned());
    }
    // What waits, read from the database: no executor session covers the calls yet.
    core.engine.record_backlog().await.expect("the backlog");
    let waiting = scrape().await;
    let gauge = |metric: &str, having: &[&str]| total(&waiting, metric, having);
    assert_eq!(gauge("skills_calls_open", &["state=\"pending\""]), 100.0);
    assert_eq!(gauge("skills_calls_open", &["state=\"running\""]), 0.0);
    assert_eq!(gauge("skills_calls_waiting", &["reason=\"no_executor\""]), 100.0);
    assert_eq!(gauge("skills_calls_waiting", &["reason=\"queued\""]), 0.0);
    assert_eq!(gauge("skills_approvals_pending", &[]), 0.0);
    // The connections of this core's SQLite: its pools, each open at least as much as idle.
    for pool in ["reader", "writer", "calls"] {
        let (open, idle) = (
            gauge("skills_db_connections", &[&format!("pool=\"{pool}\""), "state=\"open\""]),
            gauge("skills_db_connections", &[&format!("pool=\"{pool}\""), "state=\"idle\""]),
        );
        assert!(open >= 1.0 && idle <= open, "{pool}: {open} open, {idle} idle");
    }
    let executors = [
        core.executor.clone(),
        executor_token(&core.engine, "zulu", &["skills.execute"], test_allowance()).await,
        executor_token(&core.engine, "yankee", &["skills.execute"], test_allowance()).await,
    ];
    // Each executor takes its share; a tenth of the calls fail once and are retried.
    let mut ended = 0;
    let mut turn = 0;
    while ended < 100 {
        let executor = &executors[turn % 3];
        turn += 1;
        assert!(turn < 400, "the calls were not all claimed");
        let body = json!({"protocols": ["local"], "localEntrypoints": entrypoints, "maxCalls": 8});
        let claimed = core.post(executor, "/skill-invocations:claim", &body).await;
        if claimed.status == 204 {
            continue;
        }
        let claimed = claimed.ok(200).clone();
        let calls: Vec<Value> = std::iter::once(claimed["invocation"].clone())
            .chain(claimed["more"].as_array().into_iter().flatten().map(|more| more["invocation"].clone()))
            .collect();
        for call in calls {
            let id = call["id"].as_str().expect("an id");
            let token = call["fencingToken"].clone();
            let index = ids.iter().position(|known| known == id).expect("one of ours");
            if index % 10 == 0 && call["attempt"] == 1 {
                let failure =
                    json!({"fencingToken": token, "error": {"code": "busy", "message": "later", "retryable": true}});
                core.act(executor, id, "fail", failure).await.ok(200);
            } else {
                core.act(executor, id, "complete", json!({"fencingToken": token, "output": {"label": "ok"}}))
                    .await
                    .ok(200);
                ended += 1;
            }
        }
    }
    core.engine.record_backlog().await.expect("the backlog");
    let after = scrape().await;
    assert_eq!(total(&after, "skills_calls_open", &["state=\"pending\""]), 0.0, "every call ended");
    assert_eq!(total(&after, "skills_calls_waiting", &["reason=\"no_executor\""]), 0.0, "a gauge reads what is now");
    let all = series(&after);
    assert!(all.len() <= 1_000, "{} series", all.len());
    // A skill is a label for the first sixteen seen, `other` after: never a hundred.
    for metric in [
        "skills_call_attempts_total",
        "skills_call_duration_seconds_count",
        "skills_call_schedule_to_start_seconds_count",
    ] {
        let skills = label_values(&after, metric, "skill");
        assert!(skills.len() <= 17, "{metric}: {skills:?}");
        assert!(skills.contains("other"), "{metric}: past sixteen skills, the rest are `other`: {skills:?}");
    }
    // No id, input or principal name in any label; routes by their template.
    for line in &all {
        assert!(!ids.iter().any(|id| line.contains(id.as_str())), "an id in {line}");
        assert!(!line.contains("zulu") && !line.contains("yankee"), "a principal's name in {line}");
    }
    let routes = label_values(&after, "skills_http_requests_total", "route");
    assert!(routes.iter().all(|route| route.starts_with('/') || route == "unmatched"), "{routes:?}");
    // What this test did, at least: 110 attempts (ten retried), 100 ends, ten retries.
    let grew = |metric: &str, having: &[&str]| total(&after, metric, having) - total(&before, metric, having);
    assert!(grew("skills_call_attempts_total", &[]) >= 110.0, "attempts");
    assert!(grew("skills_call_retries_total", &[]) >= 10.0, "retries");
    assert!(grew("skills_call_duration_seconds_count", &["outcome=\"succeeded\""]) >= 100.0, "ends");
    assert!(grew("skills_call_schedule_to_start_seconds_count", &[]) >= 110.0, "waits");
    assert!(grew("skills_http_requests_total", &["route=\"/api/v1/skills\"", "status=\"201\""]) >= 100.0, "publishes");
    assert!(after.contains("skills_build_info{component=\"core\""), "build info");
    // The scrape address answers nothing else.
    let other = reqwest::get(format!("http://{address}/api/v1/skills")).await.expect("answers");
    assert_eq!(other.status(), 404);
}
