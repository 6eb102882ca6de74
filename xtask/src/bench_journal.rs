//! `cargo xtask bench journal`: how long `skill-core journal verify` takes over an export of
//! 1,000,000 entries (the bar: under 10 s on this machine). The export is written by the journal
//! crate's `export_million` example as `journal export` writes one: calls with external writes on
//! approvals, five entries a call, with payloads and salts, a checkpoint every 256 entries. The
//! verify rebuilds the tree, checks every entry's stored hash and payload digest, every
//! checkpoint's signature and root, and the rules. Figures go to `target/bench/journal.json`.

use std::process::Command;
use std::time::Instant;

use anyhow::{Result, bail};
use serde_json::json;

use crate::core_run::release;
use crate::{run, target_dir};

const ENTRIES: &str = "1000000";

pub(crate) fn bench() -> Result<()> {
    let mut cargo = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
    cargo.args(["build", "--release", "--quiet", "-p", "skill-core", "--bin", "skill-core"]);
    cargo.args(["-p", "skill-journal", "--example", "export_million"]);
    run("build the core and the export writer (release)", &mut cargo)?;
    let folder = target_dir().join("bench").join("journal-export");
    let _ = std::fs::remove_dir_all(&folder);
    let started = Instant::now();
    let written = Command::new(release("examples/export_million")).arg(&folder).arg(ENTRIES).output()?;
    if !written.status.success() {
        bail!("the export was not written: {}", String::from_utf8_lossy(&written.stderr));
    }
    let writing = started.elapsed().as_secs_f64();
    let bytes = std::fs::metadata(folder.join("entries.jsonl"))?.len();
    let mut seconds = Vec::new();
    let mut said = String::new();
    for _ in 0..3 {
        let started = Instant::now();
        let verified = Command::new(release("skill-core")).args(["journal", "verify"]).arg(&folder).output()?;
        seconds.push(started.elapsed().as_secs_f64());
        said = String::from_utf8_lossy(&verified.stdout).trim().to_owned();
        if !verified.status.success() {
            bail!("the export does not verify: {said}");
        }
    }
    seconds.sort_by(f64::total_cmp);
    let figures = json!({
        "entries": 1_000_000, "exportBytes": bytes, "writeSeconds": writing,
        "verifySeconds": seconds, "medianSeconds": seconds[1], "bar": 10.0, "said": said,
    });
    std::fs::create_dir_all(target_dir().join("bench"))?;
    std::fs::write(target_dir().join("bench").join("journal.json"), serde_json::to_string_pretty(&figures)?)?;
    println!("{figures}");
    let _ = std::fs::remove_dir_all(&folder);
    Ok(())
}

/// The commit before the journal: what the journal's cost is measured against.
const BASELINE: &str = "e12baefa";
/// The offered rate of the cost's passes: above what either core sustains on this machine, so
/// each pass measures capacity.
const COST_RATE: u64 = 3200;

/// `cargo xtask bench journal-cost [sqlite|postgres] [--baseline REV]`: P4's path (invoke →
/// executor claim → complete) with the journal against the same path built from the commit before
/// it, at a saturating offered rate, in the order before, journal, journal, before — each pass on
/// a fresh database (on PostgreSQL, a fresh database of one durable server). The figure is the
/// ended calls per second with the journal over without.
pub(crate) fn cost(backend: &str, baseline: Option<&str>) -> Result<()> {
    let baseline = baseline.unwrap_or(BASELINE);
    crate::core_run::build("build the core, the demo host and the load generator (release)", &[])?;
    let source = target_dir().join("baseline-src");
    if !source.exists() {
        run(
            "check out the commit before the journal",
            Command::new("git").args(["worktree", "add", "--detach"]).arg(&source).arg(baseline),
        )?;
    }
    let baseline_target = target_dir().join("baseline");
    let mut cargo = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
    cargo
        .current_dir(&source)
        .args(["build", "--release", "--quiet", "-p", "skill-core", "--bin", "skill-core", "--target-dir"])
        .arg(&baseline_target);
    run("build the core of the commit before the journal (release)", &mut cargo)?;
    let before = baseline_target.join("release").join("skill-core");
    let after = release("skill-core");
    let folder = target_dir().join("bench").join(format!("journal-cost-{backend}"));
    let _ = std::fs::remove_dir_all(&folder);
    std::fs::create_dir_all(&folder)?;
    let server = match backend {
        "sqlite" => None,
        "postgres" => Some(crate::postgres::Postgres::start_durable()?),
        other => bail!("the journal's cost is measured on sqlite or postgres, not {other}"),
    };
    let mut passes = Vec::new();
    for (n, journal) in [false, true, true, false].into_iter().enumerate() {
        let core = if journal { &after } else { &before };
        let pass_folder = folder.join(format!("pass-{n}"));
        let db = match &server {
            Some(server) => server.database(&format!("journal_cost_{n}"))?,
            None => pass_folder.join("data").display().to_string(),
        };
        let pass = cost_pass(core, &db, &pass_folder, journal)?;
        eprintln!(
            "  pass {n} ({}): {:>7.0} ended/s, p50 {:>6.1} ms, p99 {:>7.1} ms",
            if journal { "with the journal   " } else { "before the journal" },
            pass["throughput"].as_f64().unwrap_or(0.0),
            pass["p50"].as_f64().unwrap_or(0.0),
            pass["p99"].as_f64().unwrap_or(0.0),
        );
        passes.push(pass);
    }
    let mean = |journal: bool| {
        let chosen: Vec<f64> = passes
            .iter()
            .filter(|pass| pass["journal"] == json!(journal))
            .filter_map(|pass| pass["throughput"].as_f64())
            .collect();
        chosen.iter().sum::<f64>() / chosen.len().max(1) as f64
    };
    let (without, with) = (mean(false), mean(true));
    let ratio = if without > 0.0 { with / without } else { 0.0 };
    let figures = json!({"backend": backend, "baseline": baseline, "rate": COST_RATE, "passes": passes,
                         "without": without, "with": with, "ratio": ratio, "bar": 0.95});
    std::fs::write(
        target_dir().join("bench").join(format!("journal-cost-{backend}.json")),
        serde_json::to_string_pretty(&figures)?,
    )?;
    drop(server);
    eprintln!(
        "the journal's cost on P4 ({backend}): {with:.0} ended/s with it, {without:.0} without: ratio {ratio:.3} (bar 0.95)"
    );
    Ok(())
}

/// One pass of `core` on the fresh database `db`, its logs in `folder`.
fn cost_pass(core: &std::path::Path, db: &str, folder: &std::path::Path, journal: bool) -> Result<serde_json::Value> {
    let db = db.to_owned();
    std::fs::create_dir_all(folder)?;
    let crate::core_run::Tokens { admin, caller, executor } = crate::core_run::Tokens::create_with(core, &db)?;
    let mut serve = Command::new(core);
    serve.args(["serve", "--db", &db, "--listen", "127.0.0.1:0"]).env("SKILL_LOG", "warn");
    if journal {
        let key = folder.join("journal.key");
        crate::core_run::output(Command::new(core).args(["journal", "keygen", "--out"]).arg(&key))?;
        serve.arg("--journal-key").arg(&key);
    }
    let (served, line) = crate::core_run::start(&mut serve, &folder.join("core.log"), " on http://")?;
    let address = line.split(" on http://").nth(1).and_then(|rest| rest.split('/').next()).unwrap_or_default();
    let url = format!("http://{address}");
    crate::core_run::publish_demo(&url, &admin, "echo@1")?;
    let (host, _) = crate::core_run::start(
        Command::new(release("examples/demo_host"))
            .args(["execute", "--core", &url, "--concurrency", "64", "--grace", "5"])
            .env("SKILL_CORE_TOKEN", &executor)
            .env("SKILL_LOG", "warn,skill_host::execute=info"),
        &folder.join("executor.log"),
        "executing the local skills",
    )?;
    let load = Command::new(release("examples/core_load"))
        .args(["--core", &url, "--token", &caller, "--skill", "echo@1", "--rate", &COST_RATE.to_string()])
        .args(["--seconds", "10"])
        .stderr(std::process::Stdio::inherit())
        .output()?;
    let mut figures: serde_json::Value = serde_json::from_slice(&load.stdout)?;
    drop((host, served));
    figures["journal"] = json!(journal);
    Ok(figures)
}
