//! `cargo xtask fuzz [SECONDS] [TARGET...]`: runs the coverage-guided fuzz targets of
//! `crates/skill-fuzz` under libFuzzer (`cargo fuzz` on the pinned stable toolchain, no
//! sanitizer: Rust's own checks catch what a sanitizer would in safe code), two at a time, each
//! for SECONDS (default 120) with memory and time limits, over `fuzz/corpus/<target>/`. Then
//! it merges each corpus down to the inputs that add coverage, so the committed corpus stays
//! small, and prints every target's executions, crashes and speed, with a total. A crash stops
//! with the input's path under `fuzz/artifacts/`.

use std::process::{Child, Command, Stdio};

use anyhow::{Context, Result, bail};

use crate::{run, workspace_root};

const TARGETS: &[&str] = &["api_bodies", "contract", "skill_document", "package", "names", "token", "mcp"];
/// libFuzzer's limits: memory per process (MB), one allocation (MB), one input (seconds).
const LIMITS: &[&str] = &["-rss_limit_mb=2048", "-malloc_limit_mb=512", "-timeout=10", "-print_final_stats=1"];

/// Where a fuzzer's output goes.
fn log_path(target: &str) -> std::path::PathBuf {
    crate::target_dir().join(format!("fuzz-{target}.log"))
}

/// The fuzzer binary `cargo fuzz build -O` made for `target`.
fn binary(target: &str) -> std::path::PathBuf {
    workspace_root().join("fuzz/target/x86_64-unknown-linux-gnu/release").join(target)
}

fn cargo_fuzz() -> Command {
    let mut command = Command::new("cargo");
    command.current_dir(workspace_root().join("fuzz")).args(["+1.95.0", "fuzz"]);
    command
}

pub(crate) fn fuzz(arguments: &[String]) -> Result<()> {
    let seconds: u64 = arguments.first().and_then(|s| s.parse().ok()).unwrap_or(120);
    let chosen: Vec<&str> = arguments.iter().skip(1).map(String::as_str).collect();
    let targets: Vec<&str> = if chosen.is_empty() { TARGETS.to_vec() } else { chosen };
    if Command::new("cargo").args(["fuzz", "--version"]).output().map_or(true, |o| !o.status.success()) {
        run("install cargo-fuzz", Command::new("cargo").args(["install", "cargo-fuzz", "--locked"]))?;
    }
    run("build the fuzz targets", cargo_fuzz().args(["build", "-s", "none", "-O"]))?;
    let mut total = 0u64;
    let mut rows = Vec::new();
    for pair in targets.chunks(2) {
        let children: Vec<(&str, Child)> = pair
            .iter()
            .map(|target| {
                let corpus = workspace_root().join("fuzz/corpus").join(target);
                let artifacts = workspace_root().join("fuzz/artifacts").join(target);
                std::fs::create_dir_all(&artifacts)?;
                // The built binary itself: two `cargo fuzz run`s at once starve one another.
                let child = Command::new(binary(target))
                    .arg(format!("-artifact_prefix={}/", artifacts.display()))
                    .arg(format!("-max_total_time={seconds}"))
                    .args(LIMITS)
                    .arg(&corpus)
                    .stdout(Stdio::null())
                    // A file, not a pipe: an unread pipe would stall the fuzzer once it filled.
                    .stderr(std::fs::File::create(log_path(target))?)
                    .spawn()
                    .with_context(|| format!("start the fuzzer of {target}"))?;
                Ok((*target, child))
            })
            .collect::<Result<_>>()?;
        for (target, mut child) in children {
            let status = child.wait()?;
            let log = std::fs::read_to_string(log_path(target)).unwrap_or_default();
            let stat = |name: &str| {
                log.lines().find_map(|line| line.strip_prefix(&format!("stat::{name}:"))?.trim().parse::<u64>().ok())
            };
            if !status.success() {
                let tail: Vec<&str> = log.lines().rev().take(30).collect();
                bail!("{target} failed:\n{}", tail.into_iter().rev().collect::<Vec<_>>().join("\n"));
            }
            let runs = stat("number_of_executed_units").unwrap_or(0);
            let speed = stat("average_exec_per_sec").unwrap_or(0);
            let peak = stat("peak_rss_mb").unwrap_or(0);
            let slowest = stat("slowest_unit_time_sec").unwrap_or(0);
            total += runs;
            rows.push(format!("{target:<16} {runs:>12} {speed:>10} {peak:>8} {slowest:>10}"));
        }
    }
    for target in &targets {
        let corpus = workspace_root().join("fuzz/corpus").join(target);
        let merged = workspace_root().join("target/fuzz-merge").join(target);
        let _ = std::fs::remove_dir_all(&merged);
        std::fs::create_dir_all(&merged)?;
        let quiet = Command::new(binary(target)).arg("-merge=1").arg(&merged).arg(&corpus).output()?;
        if !quiet.status.success() {
            bail!("merging the corpus of {target} failed: {}", String::from_utf8_lossy(&quiet.stderr));
        }
        std::fs::remove_dir_all(&corpus)?;
        std::fs::rename(&merged, &corpus)?;
    }
    println!("\n{:<16} {:>12} {:>10} {:>8} {:>10}", "target", "executions", "exec/s", "peak MB", "slowest s");
    for row in rows {
        println!("{row}");
    }
    println!("total {total} executions, 0 crashes, 0 timeouts, 0 over the memory limits ({seconds} s per target)");
    Ok(())
}
