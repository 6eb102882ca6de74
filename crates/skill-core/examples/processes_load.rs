//! The load generator of the processes benchmark (`cargo xtask bench processes`): starts
//! `--instances` instances of `--process` in `--workspace` with `--clients` at once (at most
//! `--rate` a second when given), each start sent again until the core accepted it, then waits
//! until every instance ended, and prints one JSON line: how many started and completed, the
//! seconds from the first start to the last end, the rate, and how long the core took from one
//! call step's end to the next step's call (p50, p99, from a sample).
//!
//! ```text
//! processes_load --core http://127.0.0.1:8700 --token skp_… --workspace desk --process bench-process --instances 3000 --clients 32
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
    process: String,
    instances: usize,
    clients: usize,
    rate: Option<f64>,
    prefix: String,
}

fn args() -> Args {
    let mut args = Args {
        core: "http://127.0.0.1:8700".into(),
        token: String::new(),
        workspace: "desk".into(),
        process: "bench-process".into(),
        instances: 1000,
        clients: 32,
        rate: None,
        prefix: "i".into(),
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let value = it.next().unwrap_or_else(|| panic!("{flag} needs a value"));
        match flag.as_str() {
            "--core" => args.core = value,
            "--token" => args.token = value,
            "--workspace" => args.workspace = value,
            "--process" => args.process = value,
            "--instances" => args.instances = value.parse().expect("a number of instances"),
            "--clients" => args.clients = value.parse().expect("a number of clients"),
            "--rate" => args.rate = Some(value.parse().expect("instances a second")),
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
                if n >= args.instances {
                    return ids;
                }
                if let Some(rate) = args.rate {
                    let due = started + Duration::from_secs_f64(n as f64 / rate);
                    tokio::time::sleep_until(due.into()).await;
                }
                let body = json!({"workspace": args.workspace, "key": format!("{}{n}", args.prefix),
                                  "input": {"n": n, "text": format!("instance {n}")}});
                // Sent again until accepted: a start with the same key is the same instance.
                loop {
                    let sent = http
                        .post(format!("{}/api/v1/processes/{}:start", args.core, args.process))
                        .bearer_auth(&args.token)
                        .json(&body)
                        .send()
                        .await;
                    if let Ok(answer) = sent
                        && matches!(answer.status().as_u16(), 200 | 201)
                        && let Ok(instance) = answer.json::<Value>().await
                    {
                        ids.push(instance["id"].as_str().unwrap_or_default().to_owned());
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
    let get = |path: String| {
        let (http, args) = (http.clone(), Arc::clone(&args));
        async move {
            let answer = http.get(format!("{}/api/v1{path}", args.core)).bearer_auth(&args.token).send().await.ok()?;
            answer.json::<Value>().await.ok()
        }
    };
    // Until every instance ended: the journal's `process.ended`, counted from the start.
    let mine: std::collections::HashSet<String> = ids.iter().map(|id| format!("process_instance:{id}")).collect();
    let (mut after, mut ended, mut completed) = (0i64, 0usize, 0usize);
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
            if event["kind"] == "process.ended" && event["subject"].as_str().is_some_and(|s| mine.contains(s)) {
                ended += 1;
                if event["data"]["status"] == "completed" {
                    completed += 1;
                }
                last_end = started.elapsed().as_secs_f64();
            }
        }
        if items.is_empty() {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
    // From one call step's end to the next step's call, for a sample of the instances.
    let mut gaps = Vec::new();
    for id in ids.iter().step_by((ids.len() / 100).max(1)) {
        let Some(instance) = get(format!("/process-instances/{id}")).await else { continue };
        let calls: Vec<String> = instance["steps"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|step| step["invocationId"].as_str().map(str::to_owned))
            .collect();
        let mut previous_end = None;
        for call in calls {
            let Some(call) = get(format!("/skill-invocations/{call}")).await else { break };
            if let (Some(end), Some(made)) = (previous_end, millis(&call["createdAt"])) {
                gaps.push(made - end);
            }
            previous_end = millis(&call["finishedAt"]);
        }
    }
    gaps.sort_by(f64::total_cmp);
    let seconds = last_end;
    println!(
        "{}",
        json!({"instances": args.instances, "started": ids.len(), "retried": retried.load(Ordering::Relaxed),
               "sentSeconds": sent_in, "seconds": seconds, "ended": ended, "completed": completed,
               "perSecond": ids.len() as f64 / seconds.max(0.001),
               "stepGapP50Ms": figures::percentile(&gaps, 0.5), "stepGapP99Ms": figures::percentile(&gaps, 0.99),
               "gapSamples": gaps.len()})
    );
}
