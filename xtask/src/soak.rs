//! The open-reader soak of `cargo xtask bench core postgres --soak`: calls offered at a steady
//! rate for ten seconds with nothing else open, then for two minutes while another connection
//! holds a transaction open (its snapshot keeps every row the calls' updates leave dead from being
//! vacuumed — what long reports and forgotten `psql` sessions do to a queue's table), then ten
//! seconds more once it ends. Each 10-s turn prints the latencies and the dead rows of the calls'
//! table, so what the held snapshot costs the claim shows turn by turn.

use std::process::Command;
use std::time::Duration;

use anyhow::{Context, Result};
use serde_json::{Value, json};

use crate::core_run::{output, release};

/// The offered rate: one the core sustains within its latency bar on this machine.
const RATE: &str = "200";
/// How long the reader holds its transaction.
const HELD_SECONDS: u64 = 120;

pub(crate) fn soak(db: &str, core: &str, caller: &str) -> Result<Value> {
    eprintln!("==> soak: {RATE} calls/s, then {HELD_SECONDS} s with a reader's transaction open, then without");
    let mut turns = vec![turn(db, core, caller, "before")?];
    let mut reader = Command::new("psql")
        .args([
            db,
            "-q",
            "-c",
            &format!(
                "BEGIN ISOLATION LEVEL REPEATABLE READ; SELECT count(*) FROM skill_invocations; \
                 SELECT pg_sleep({HELD_SECONDS}); COMMIT;"
            ),
        ])
        .stdout(std::process::Stdio::null())
        .spawn()
        .context("psql starts")?;
    std::thread::sleep(Duration::from_millis(500));
    for _ in 0..HELD_SECONDS / 10 {
        turns.push(turn(db, core, caller, "reader open")?);
    }
    reader.wait()?;
    for _ in 0..2 {
        turns.push(turn(db, core, caller, "after")?);
    }
    Ok(json!({"rate": RATE, "heldSeconds": HELD_SECONDS, "turns": turns}))
}

/// Ten seconds of calls at [`RATE`]: their figures, the phase and the table's dead rows after.
fn turn(db: &str, core: &str, caller: &str, phase: &str) -> Result<Value> {
    let figures = output(Command::new(release("examples/core_load")).args([
        "--core",
        core,
        "--token",
        caller,
        "--skill",
        "echo@1",
        "--rate",
        RATE,
        "--seconds",
        "10",
    ]))?;
    let mut figures: Value = serde_json::from_str(&figures).context("the load generator's figures")?;
    let dead = output(Command::new("psql").args([
        db,
        "-qAt",
        "-c",
        "SELECT n_dead_tup FROM pg_stat_user_tables WHERE relname = 'skill_invocations'",
    ]))?;
    figures["phase"] = json!(phase);
    figures["deadRows"] = json!(dead.trim().parse::<u64>().unwrap_or(0));
    eprintln!(
        "  {phase:<12} {:>5.0} ended/s, p50 {:>6.1} ms, p99 {:>6.1} ms, {} failed, dead rows {}",
        figures["throughput"].as_f64().unwrap_or(0.0),
        figures["p50"].as_f64().unwrap_or(0.0),
        figures["p99"].as_f64().unwrap_or(0.0),
        figures["failed"],
        figures["deadRows"],
    );
    Ok(figures)
}
