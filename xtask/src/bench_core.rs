//! Benchmark P4 (and P5's first part): invoke → executor claim → complete through the real API
//! and a real executor process, every step durable.
//!
//! `cargo xtask bench core [sqlite|postgres]` builds `skill-core`, the demo host and the load
//! generator (`crates/skill-core/examples/core_load.rs`) in release mode, serves a core on a fresh
//! database, publishes `echo@1`, runs the demo host as the local executor, and offers calls at
//! rising rates (open loop, 10 s each, up to the first rate it does not sustain); every call's
//! invoke→succeeded time comes from the core's own timestamps. The reference in the same run: raw single-row durable commits per second on
//! the same disk (SQLite, WAL, `synchronous=FULL`: `crates/skill-store/examples/commit_rate.rs`), or
//! `pgbench -N` TPS on the same PostgreSQL server (fsync on). Results go to
//! `target/bench/core-<backend>.json`.

use std::process::Command;

use anyhow::{Context, Result, bail};
use serde_json::{Value, json};

use crate::core_run::{Tokens, build, output, publish_demo, release, start};
use crate::target_dir;

/// The offered rates, calls per second, in turn until one is not sustained.
const RATES: &[u64] = &[100, 200, 400, 800, 1200, 1600, 2000, 2400, 3200, 4000, 4800];
const SECONDS: &str = "10";

pub(crate) fn bench_core(backend: &str) -> Result<()> {
    build(
        "build the core, the demo host, the load generator and the reference (release)",
        &["-p", "skill-store", "--example", "commit_rate"],
    )?;
    let folder = target_dir().join("bench").join(format!("core-{backend}"));
    let _ = std::fs::remove_dir_all(&folder);
    std::fs::create_dir_all(&folder)?;
    let mut postgres = None;
    let (db, reference) = match backend {
        "sqlite" => {
            let raw = output(Command::new(release("examples/commit_rate")).arg(folder.join("raw")).arg("5"))?;
            let raw: Value = serde_json::from_str(&raw)?;
            (folder.join("data").display().to_string(), json!({"rawCommitsPerSecond": raw["perSecond"]}))
        }
        "postgres" => {
            let server = crate::postgres::Postgres::start_durable()?;
            let tps = server.pgbench_simple_update()?;
            let url = server.database("skill_bench")?;
            postgres = Some(server);
            (url, json!({"pgbenchSimpleUpdateTps": tps}))
        }
        other => bail!("bench core runs on sqlite or postgres, not {other}"),
    };
    let core = release("skill-core");
    let Tokens { admin, caller, executor } = Tokens::create(&db)?;
    let (_core, line) = start(
        Command::new(&core).args(["serve", "--db", &db, "--listen", "127.0.0.1:0"]).env("SKILL_LOG", "warn"),
        &target_dir().join("bench").join(format!("core-{backend}.log")),
        " on http://",
    )?;
    let address = line.split(" on http://").nth(1).and_then(|rest| rest.split('/').next()).context("an address")?;
    let url = format!("http://{address}");
    publish_demo(&url, &admin, "echo@1")?;
    let (_executor, _) = start(
        Command::new(release("examples/demo_host"))
            .args(["execute", "--core", &url, "--concurrency", "64", "--grace", "5"])
            .env("SKILL_CORE_TOKEN", &executor)
            .env("SKILL_LOG", "warn,skill_host::execute=info"),
        &target_dir().join("bench").join(format!("executor-{backend}.log")),
        "executing the local skills",
    )?;
    let mut rounds = Vec::new();
    for rate in RATES {
        let result = output(Command::new(release("examples/core_load")).args([
            "--core",
            &url,
            "--token",
            &caller,
            "--skill",
            "echo@1",
            "--rate",
            &rate.to_string(),
            "--seconds",
            SECONDS,
        ]))?;
        let result: Value = serde_json::from_str(&result)?;
        eprintln!(
            "  offered {rate:>5}/s: {:>7.0} ended/s, p50 {:>7.1} ms, p99 {:>7.1} ms, invoke p99 {:>6.1} ms, {} skipped, {} refused, {} failed",
            result["throughput"].as_f64().unwrap_or(0.0),
            result["p50"].as_f64().unwrap_or(0.0),
            result["p99"].as_f64().unwrap_or(0.0),
            result["invokeP99"].as_f64().unwrap_or(0.0),
            result["skipped"],
            result["refused"],
            result["failed"],
        );
        let kept_up = result["skipped"] == 0
            && result["refused"] == 0
            && result["failed"] == 0
            && result["throughput"].as_f64().unwrap_or(0.0) >= 0.95 * *rate as f64;
        rounds.push(result);
        if !kept_up {
            break;
        }
    }
    // Sustained: the highest offered rate whose calls all ended, at that rate (within 5 %).
    let sustained = rounds
        .iter()
        .filter(|r| {
            r["skipped"] == 0
                && r["refused"] == 0
                && r["failed"] == 0
                && r["throughput"].as_f64().unwrap_or(0.0) >= 0.95 * r["rate"].as_f64().unwrap_or(f64::MAX)
        })
        .max_by(|a, b| a["rate"].as_u64().cmp(&b["rate"].as_u64()))
        .cloned()
        .unwrap_or(Value::Null);
    let base = reference.as_object().and_then(|r| r.values().next()).and_then(Value::as_f64).unwrap_or(0.0);
    let ratio = sustained["throughput"].as_f64().map(|t| if base > 0.0 { t / base } else { 0.0 });
    let report = json!({"backend": backend, "reference": reference, "rounds": rounds, "sustained": sustained,
                        "ratioToReference": ratio});
    eprintln!(
        "P4 {backend}: sustained {} calls/s (p99 {} ms); reference {reference}; ratio {}",
        sustained["throughput"].as_f64().map_or("none".into(), |t| format!("{t:.0}")),
        sustained["p99"].as_f64().map_or("-".into(), |p| format!("{p:.1}")),
        ratio.map_or("-".into(), |r| format!("{r:.2}"))
    );
    std::fs::write(
        target_dir().join("bench").join(format!("core-{backend}.json")),
        serde_json::to_string_pretty(&report)?,
    )?;
    drop(postgres);
    Ok(())
}
