//! `cargo xtask bench drivers`: the two SQLite drivers of the store side by side on the
//! transaction a call's hot path makes (`crates/skill-store/examples/sqlite_drivers.rs`): sqlx
//! with one writing connection, rusqlite on a writer thread one transaction at a time, and
//! rusqlite with group commit (the store's hot path). Prints a table and writes
//! `target/bench/drivers.json`.

use std::process::Command;

use anyhow::{Context, Result};
use serde_json::{Value, json};

use crate::core_run::{output, release};
use crate::{cargo, run, target_dir};

/// Transactions per driver, and writers at once.
const TRANSACTIONS: &str = "20000";
const WRITERS: &str = "32";

pub(crate) fn bench() -> Result<()> {
    run(
        "build the drivers' benchmark (release)",
        cargo().args(["build", "--release", "--quiet", "-p", "skill-store", "--example", "sqlite_drivers"]),
    )?;
    let folder = target_dir().join("bench").join("drivers");
    let said = output(Command::new(release("examples/sqlite_drivers")).arg(&folder).args([TRANSACTIONS, WRITERS]))?;
    let runs: Vec<Value> =
        said.lines().map(serde_json::from_str).collect::<Result<_, _>>().context("the benchmark's JSON lines")?;
    let rate = |run: &Value| run["perSecond"].as_f64().unwrap_or(0.0);
    let sqlx = runs.iter().find(|run| run["driver"] == "sqlx").map_or(1.0, rate).max(1.0);
    println!("\nSQLite drivers: the hot path's transaction, {TRANSACTIONS} by {WRITERS} writers at once, release");
    println!("{:<40} {:>10} {:>14} {:>9}", "driver", "tx/s", "CPU µs per tx", "× sqlx");
    for run in &runs {
        println!(
            "{:<40} {:>10} {:>14} {:>9.1}",
            run["driver"].as_str().unwrap_or_default(),
            rate(run),
            run["cpuMicrosPerTransaction"].as_f64().unwrap_or(0.0),
            rate(run) / sqlx
        );
    }
    let report = json!({"transactions": TRANSACTIONS, "writers": WRITERS, "runs": runs});
    std::fs::write(target_dir().join("bench").join("drivers.json"), serde_json::to_vec_pretty(&report)?)?;
    Ok(())
}
