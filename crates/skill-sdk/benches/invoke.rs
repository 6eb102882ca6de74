//! Benchmark P1: an in-process call through the runtime (input validation, context, deadline,
//! output validation, cost) against the same function called directly with a serde round trip.
//! Also: how late the deadline fires. Prints a table and writes `target/bench/invoke.json`.
//!
//! Run with `cargo bench -p skill-sdk --bench invoke`.

#![allow(clippy::print_stdout)]

use std::time::{Duration, Instant};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use skill_sdk::{Invocation, SkillError, Transport, runtime, skill};

#[derive(Debug, Deserialize, JsonSchema)]
pub struct AddIn {
    pub a: i64,
    pub b: i64,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct AddOut {
    pub sum: i64,
}

fn sum(inputs: AddIn) -> AddOut {
    AddOut { sum: inputs.a.wrapping_add(inputs.b) }
}

/// Add two numbers.
#[skill("bench.add", version = "1", side_effects = "none", risk = "low")]
pub async fn add(inputs: AddIn) -> Result<AddOut, SkillError> {
    Ok(sum(inputs))
}

/// Add two numbers, synchronously (runs on the blocking pool).
#[skill("bench.add_sync", version = "1", side_effects = "none", risk = "low")]
pub fn add_sync(inputs: AddIn) -> Result<AddOut, SkillError> {
    Ok(sum(inputs))
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct Sleep {}

#[skill("bench.sleep", version = "1", side_effects = "none", risk = "low", timeout = 1)]
pub async fn sleep(_inputs: Sleep) -> Result<AddOut, SkillError> {
    tokio::time::sleep(Duration::from_secs(60)).await;
    Ok(AddOut { sum: 0 })
}

const CALLS: u32 = 200_000;
const ROUNDS: usize = 5;

/// Median nanoseconds per call over `ROUNDS` rounds of `calls` calls.
fn measure(calls: u32, mut one: impl FnMut(u32)) -> f64 {
    let mut rounds: Vec<f64> = (0..ROUNDS)
        .map(|_| {
            let started = Instant::now();
            for i in 0..calls {
                one(i);
            }
            started.elapsed().as_nanos() as f64 / f64::from(calls)
        })
        .collect();
    rounds.sort_by(f64::total_cmp);
    rounds[ROUNDS / 2]
}

fn main() {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
    let inputs = |i: u32| json!({"a": i64::from(i), "b": 7});

    let direct = measure(CALLS, |i| {
        let decoded: AddIn = serde_json::from_value(inputs(i)).expect("decodes");
        let encoded: Value = serde_json::to_value(sum(decoded)).expect("encodes");
        std::hint::black_box(encoded);
    });
    let through_runtime = measure(CALLS, |i| {
        let outcome = runtime.block_on(runtime::execute(&add::SKILL, inputs(i), Invocation::new(Transport::Direct)));
        std::hint::black_box(outcome.expect("runs"));
    });
    let multi = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().expect("runtime");
    let sync_calls = CALLS / 10;
    let through_runtime_sync = measure(sync_calls, |i| {
        let outcome = multi.block_on(runtime::execute(&add_sync::SKILL, inputs(i), Invocation::new(Transport::Direct)));
        std::hint::black_box(outcome.expect("runs"));
    });

    let mut late_ms: Vec<f64> = (0..5)
        .map(|_| {
            let started = Instant::now();
            let error = runtime
                .block_on(runtime::execute(&sleep::SKILL, json!({}), Invocation::new(Transport::Direct)))
                .expect_err("times out");
            assert_eq!(error.code(), "timeout");
            (started.elapsed().as_secs_f64() - 1.0) * 1000.0
        })
        .collect();
    late_ms.sort_by(f64::total_cmp);

    let overhead = through_runtime - direct;
    println!("\nP1: in-process invoke of a small skill, median of {ROUNDS} rounds");
    println!("{:<44} {:>12} {:>14}", "path", "ns per call", "calls/s");
    for (name, ns) in [
        ("direct call with serde round trip (reference)", direct),
        ("runtime::execute, async skill", through_runtime),
        ("runtime::execute, sync skill (blocking pool)", through_runtime_sync),
    ] {
        println!("{name:<44} {ns:>12.0} {:>14.0}", 1e9 / ns);
    }
    println!(
        "overhead of the runtime (async): {:.2} µs per call (bar ≤ 5 µs); ratio {:.1}×",
        overhead / 1000.0,
        through_runtime / direct
    );
    println!(
        "timeout fired late by: min {:.2} ms, median {:.2} ms, max {:.2} ms (of a 1 s deadline)",
        late_ms[0], late_ms[2], late_ms[4]
    );

    let result = json!({
        "benchmark": "P1",
        "calls": CALLS,
        "direct_ns": direct.round(),
        "runtime_async_ns": through_runtime.round(),
        "runtime_sync_ns": through_runtime_sync.round(),
        "overhead_us": (overhead / 10.0).round() / 100.0,
        "runtime_async_calls_per_second": (1e9 / through_runtime).round(),
        "timeout_late_ms": {"min": late_ms[0], "median": late_ms[2], "max": late_ms[4]},
    });
    let folder = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/bench");
    std::fs::create_dir_all(&folder).expect("bench folder");
    std::fs::write(folder.join("invoke.json"), format!("{result:#}\n")).expect("write result");
    println!("written {}", folder.join("invoke.json").display());
}
