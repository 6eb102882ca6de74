//! The load generator of the rules benchmark and fault run (`cargo xtask bench rules`, `cargo
//! xtask fault rules`): sends `--facts` facts of `--kind` to `--workspace` with `--clients` at
//! once (at most `--rate` a second when given), each one again until the core accepted it — a
//! core killed meanwhile is waited for — then waits until the rules ended every evaluation, and
//! prints one JSON line: how many were sent, accepted, the seconds from the first send to the
//! last evaluation's end, the rate, and how long evaluations took to resume after their call
//! ended (p50, p99, from a sample).
//!
//! ```text
//! rules_load --core http://127.0.0.1:8700 --token skp_… --workspace desk --kind bench.fact --facts 5000 --clients 32
//! ```

#![allow(clippy::print_stdout)]

#[path = "support/figures.rs"]
mod figures;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

struct Args {
    core: String,
    token: String,
    workspace: String,
    kind: String,
    facts: usize,
    clients: usize,
    rate: Option<f64>,
    prefix: String,
}

fn args() -> Args {
    let mut args = Args {
        core: "http://127.0.0.1:8700".into(),
        token: String::new(),
        workspace: "desk".into(),
        kind: "bench.fact".into(),
        facts: 1000,
        clients: 32,
        rate: None,
        prefix: "f".into(),
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let value = it.next().unwrap_or_else(|| panic!("{flag} needs a value"));
        match flag.as_str() {
            "--core" => args.core = value,
            "--token" => args.token = value,
            "--workspace" => args.workspace = value,
            "--kind" => args.kind = value,
            "--facts" => args.facts = value.parse().expect("a number of facts"),
            "--clients" => args.clients = value.parse().expect("a number of clients"),
            "--rate" => args.rate = Some(value.parse().expect("facts a second")),
            "--key-prefix" => args.prefix = value,
            other => panic!("unknown flag {other}"),
        }
    }
    args
}

fn millis(at: &Value) -> Option<f64> {
    chrono::DateTime::parse_from_rfc3339(at.as_str()?).ok().map(|at| at.timestamp_micros() as f64 / 1000.0)
}

#[tokio::main]
#[allow(
    clippy::too_many_lines,
    reason = "a load run is one script of phases (start, send facts, measure, report), read top to bottom"
)]
async fn main() {
    let args = Arc::new(args());
    let http = reqwest::Client::builder().pool_max_idle_per_host(64).build().expect("a client");
    let next = Arc::new(AtomicUsize::new(0));
    let retried = Arc::new(AtomicUsize::new(0));
    let started = Instant::now();
    let mut clients = Vec::new();
    for _ in 0..args.clients {
        let (args, http, next, retried) = (Arc::clone(&args), http.clone(), Arc::clone(&next), Arc::clone(&retried));
        clients.push(tokio::spawn(async move {
            let mut ids = Vec::new();
            loop {
                let n = next.fetch_add(1, Ordering::Relaxed);
                if n >= args.facts {
                    return ids;
                }
                if let Some(rate) = args.rate {
                    let due = started + Duration::from_secs_f64(n as f64 / rate);
                    tokio::time::sleep_until(due.into()).await;
                }
                let body = json!({"workspace": args.workspace, "kind": args.kind, "key": format!("{}{n}", args.prefix),
                                  "data": {"n": n, "text": format!("fact {n}")}});
                // Sent again until accepted: the same fact twice is one fact.
                loop {
                    let sent = http
                        .post(format!("{}/api/v1/facts", args.core))
                        .bearer_auth(&args.token)
                        .json(&body)
                        .send()
                        .await;
                    if let Ok(answer) = sent
                        && matches!(answer.status().as_u16(), 200 | 201)
                        && let Ok(fact) = answer.json::<Value>().await
                    {
                        ids.push(fact["id"].as_str().unwrap_or_default().to_owned());
                        break;
                    }
                    retried.fetch_add(1, Ordering::Relaxed);
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            }
        }));
    }
    let mut ids = Vec::new();
    for client in clients {
        ids.extend(client.await.expect("a client"));
    }
    let sent_in = started.elapsed().as_secs_f64();
    // Until every fact's evaluations ended: the journal's `rule.evaluation_ended` and
    // `rule.evaluated` (a not-matched one ends at once), counted from the start.
    let get = |path: String| {
        let (http, args) = (http.clone(), Arc::clone(&args));
        async move {
            let answer = http.get(format!("{}/api/v1{path}", args.core)).bearer_auth(&args.token).send().await.ok()?;
            answer.json::<Value>().await.ok()
        }
    };
    let (mut after, mut ended, mut evaluated) = (0i64, 0usize, 0usize);
    let mut last_end = started.elapsed().as_secs_f64();
    let deadline = Instant::now() + Duration::from_secs(600);
    while ended < ids.len() && Instant::now() < deadline {
        let Some(page) = get(format!("/events?after={after}&limit=1000")).await else {
            tokio::time::sleep(Duration::from_millis(200)).await;
            continue;
        };
        let items = page["items"].as_array().cloned().unwrap_or_default();
        for event in &items {
            after = after.max(event["seq"].as_i64().unwrap_or(after));
            match event["kind"].as_str() {
                Some("rule.evaluation_ended") => {
                    ended += 1;
                    last_end = started.elapsed().as_secs_f64();
                }
                Some("rule.evaluated") => evaluated += 1,
                _ => {}
            }
        }
        if items.is_empty() {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
    // How long an evaluation took to resume after its call ended, for a sample of the facts.
    let mut resumed = Vec::new();
    for id in ids.iter().step_by((ids.len() / 300).max(1)) {
        let Some(fact) = get(format!("/facts/{id}")).await else { continue };
        let Some(evaluation) = fact["evaluations"].as_array().and_then(|all| all.first()).cloned() else { continue };
        let Some(call) = evaluation["invocationId"].as_str() else { continue };
        let Some(call) = get(format!("/skill-invocations/{call}")).await else { continue };
        if let (Some(ended), Some(finished)) = (millis(&evaluation["endedAt"]), millis(&call["finishedAt"])) {
            resumed.push(ended - finished);
        }
    }
    resumed.sort_by(f64::total_cmp);
    let seconds = last_end;
    println!(
        "{}",
        json!({"facts": args.facts, "accepted": ids.len(), "retried": retried.load(Ordering::Relaxed),
               "sentSeconds": sent_in, "seconds": seconds, "evaluated": evaluated, "ended": ended,
               "perSecond": ids.len() as f64 / seconds.max(0.001),
               "resumeP50Ms": figures::percentile(&resumed, 0.5), "resumeP99Ms": figures::percentile(&resumed, 0.99),
               "resumeSamples": resumed.len()})
    );
}
