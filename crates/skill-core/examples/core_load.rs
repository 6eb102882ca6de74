//! The load generator of the P4/P5 benchmark (`cargo xtask bench core`): invokes one skill
//! through the core's API at a fixed rate (open loop) for a while, waits until every call has
//! ended, then reads the calls back and prints one JSON line: how many, how fast they ended, and
//! the invoke→succeeded latencies from the core's own timestamps (`createdAt` → `finishedAt`).
//!
//! ```text
//! core_load --core http://127.0.0.1:8700 --token skp_… --skill echo@1 --rate 2000 --seconds 10
//! ```

#![allow(clippy::print_stdout)]

#[path = "support/figures.rs"]
mod figures;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

struct Args {
    core: String,
    token: String,
    skill: String,
    rate: u64,
    seconds: u64,
    connections: usize,
    /// With a prefix, call `n` carries the body key `<prefix><n>` and is sent again (the same
    /// key) until the core accepts it: a core that restarts loses no call.
    key_prefix: Option<String>,
}

fn args() -> Args {
    let mut args = Args {
        core: "http://127.0.0.1:8700".into(),
        token: String::new(),
        skill: "echo@1".into(),
        rate: 1000,
        seconds: 10,
        connections: 256,
        key_prefix: None,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let value = it.next().unwrap_or_else(|| panic!("{flag} needs a value"));
        match flag.as_str() {
            "--core" => args.core = value,
            "--token" => args.token = value,
            "--skill" => args.skill = value,
            "--rate" => args.rate = value.parse().expect("a rate"),
            "--seconds" => args.seconds = value.parse().expect("seconds"),
            "--connections" => args.connections = value.parse().expect("connections"),
            "--key-prefix" => args.key_prefix = Some(value),
            other => panic!("unknown flag {other}"),
        }
    }
    args
}

fn time(value: &Value) -> Option<chrono::DateTime<chrono::Utc>> {
    chrono::DateTime::parse_from_rfc3339(value.as_str()?).ok().map(|t| t.to_utc())
}

#[tokio::main]
#[allow(
    clippy::too_many_lines,
    reason = "a load run is one script of phases (start, offer calls, measure, report), read top to bottom"
)]
async fn main() {
    let args = args();
    let client = reqwest::Client::builder().pool_max_idle_per_host(args.connections).build().expect("a client");
    let url = format!("{}/api/v1/skills/{}:invoke", args.core, args.skill);
    let limit = Arc::new(tokio::sync::Semaphore::new(args.connections));
    let (accepted, refused, skipped) =
        (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
    let invoke_ms = Arc::new(std::sync::Mutex::new(Vec::new()));
    let start = Instant::now();
    let since =
        (chrono::Utc::now() - chrono::Duration::milliseconds(10)).to_rfc3339_opts(chrono::SecondsFormat::Micros, true);
    let total = args.rate * args.seconds;
    let every = Duration::from_secs_f64(1.0 / args.rate as f64);
    let mut tasks = tokio::task::JoinSet::new();
    for n in 0..total {
        let due = start + every.mul_f64(n as f64);
        tokio::time::sleep_until(due.into()).await;
        // Open loop: a call that cannot start because every connection is busy is counted, not queued.
        let Ok(permit) = Arc::clone(&limit).try_acquire_owned() else {
            skipped.fetch_add(1, Ordering::Relaxed);
            continue;
        };
        let (client, url, token) = (client.clone(), url.clone(), args.token.clone());
        let (accepted, refused, invoke_ms) = (Arc::clone(&accepted), Arc::clone(&refused), Arc::clone(&invoke_ms));
        let key = args.key_prefix.as_ref().map(|prefix| format!("{prefix}{n}"));
        tasks.spawn(async move {
            let sent = Instant::now();
            let mut body = json!({"inputs": {"text": format!("call {n}")}});
            if let Some(key) = &key {
                body["inputs"] = json!({});
                body["idempotencyKey"] = json!(key);
            }
            loop {
                let answer = client.post(&url).bearer_auth(&token).json(&body).send().await;
                match answer.map(|answer| answer.status().as_u16()) {
                    Ok(201 | 200) => {
                        accepted.fetch_add(1, Ordering::Relaxed);
                        invoke_ms.lock().expect("lock").push(sent.elapsed().as_secs_f64() * 1000.0);
                        break;
                    }
                    // Keyed: the same call again until the core takes it.
                    Ok(status) if key.is_some() && (status >= 500 || status == 408) => {}
                    Err(_) if key.is_some() => {}
                    _ => {
                        refused.fetch_add(1, Ordering::Relaxed);
                        break;
                    }
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            drop(permit);
        });
    }
    while tasks.join_next().await.is_some() {}
    let offered_for = start.elapsed().as_secs_f64();

    // Wait until nothing is pending or running, then read every call back (newest first).
    let list = format!("{}/api/v1/skill-invocations", args.core);
    let deadline = Instant::now() + Duration::from_secs(300);
    loop {
        let mut open = 0;
        for status in ["pending", "running"] {
            let Ok(answer) =
                client.get(format!("{list}?status={status}&limit=1")).bearer_auth(&args.token).send().await
            else {
                // The core is restarting: look again.
                open += 1;
                continue;
            };
            let page: Value = answer.json().await.unwrap_or(Value::Null);
            open += page["items"].as_array().map_or(1, Vec::len);
        }
        if open == 0 || Instant::now() > deadline {
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let (mut latencies, mut first, mut last, mut succeeded, mut failed) = (Vec::new(), None, None, 0u64, 0u64);
    let mut retried = 0u64;
    let mut keys = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        // Only this run's calls.
        let since = since.replace('+', "%2B");
        let url = match &cursor {
            Some(cursor) => format!("{list}?limit=200&since={since}&cursor={cursor}"),
            None => format!("{list}?limit=200&since={since}"),
        };
        let page: Value = client
            .get(url)
            .bearer_auth(&args.token)
            .send()
            .await
            .expect("the core answers")
            .json()
            .await
            .expect("JSON");
        for call in page["items"].as_array().into_iter().flatten() {
            match call["status"].as_str() {
                Some("succeeded") => succeeded += 1,
                _ => failed += 1,
            }
            if call["attempt"].as_i64().unwrap_or(0) > 1 {
                retried += 1;
            }
            if let Some(key) = call["idempotencyKey"].as_str() {
                keys.push(key.to_owned());
            }
            if let (Some(created), Some(finished)) = (time(&call["createdAt"]), time(&call["finishedAt"])) {
                latencies.push((finished - created).num_microseconds().unwrap_or(0) as f64 / 1000.0);
                first = Some(first.map_or(created, |f: chrono::DateTime<chrono::Utc>| f.min(created)));
                last = Some(last.map_or(finished, |l: chrono::DateTime<chrono::Utc>| l.max(finished)));
            }
        }
        cursor = page["nextCursor"].as_str().map(str::to_owned);
        if cursor.is_none() {
            break;
        }
    }
    latencies.sort_by(f64::total_cmp);
    let mut invoke_ms = invoke_ms.lock().expect("lock").clone();
    invoke_ms.sort_by(f64::total_cmp);
    let span = match (first, last) {
        (Some(first), Some(last)) => (last - first).num_microseconds().unwrap_or(1) as f64 / 1e6,
        _ => 0.0,
    };
    let result = json!({
        "rate": args.rate, "seconds": args.seconds, "offeredFor": offered_for,
        "accepted": accepted.load(Ordering::Relaxed), "refused": refused.load(Ordering::Relaxed),
        "skipped": skipped.load(Ordering::Relaxed), "succeeded": succeeded, "failed": failed,
        "throughput": if span > 0.0 { succeeded as f64 / span } else { 0.0 },
        "p50": figures::percentile(&latencies, 0.5), "p99": figures::percentile(&latencies, 0.99), "max": latencies.last().copied().unwrap_or(0.0),
        "invokeP50": figures::percentile(&invoke_ms, 0.5), "invokeP99": figures::percentile(&invoke_ms, 0.99),
        "retried": retried, "keys": keys.len(),
        "distinctKeys": keys.iter().collect::<std::collections::BTreeSet<_>>().len(),
    });
    println!("{result}");
}
