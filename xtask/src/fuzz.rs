//! `cargo xtask fuzz [SECONDS] [TARGET...]`: runs the coverage-guided fuzz targets of
//! `crates/skill-fuzz` under libFuzzer (`cargo fuzz` on the pinned stable toolchain, no
//! sanitizer: Rust's own checks catch what a sanitizer would in safe code), two at a time, each
//! for SECONDS (default 120) with memory and time limits, over `fuzz/corpus/<target>/`. Then
//! it merges each corpus down to the inputs that add coverage, so the committed corpus stays
//! small, and prints every target's executions, crashes and speed, with a total. A crash stops
//! with the input's path under `fuzz/artifacts/`.
//!
//! The merge keeps the corpus lean: the fewest inputs that together reach every edge any input
//! reaches (libFuzzer's set-cover merge, `-use_counters=0`: an edge counts once, whatever its hit
//! count); `crash-*` and `regression-*` inputs are always kept. `cargo xtask fuzz min
//! [TARGET...]` does only that.

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

fn build_targets() -> Result<()> {
    if Command::new("cargo").args(["fuzz", "--version"]).output().map_or(true, |o| !o.status.success()) {
        run("install cargo-fuzz", Command::new("cargo").args(["install", "cargo-fuzz", "--locked"]))?;
    }
    run("build the fuzz targets", cargo_fuzz().args(["build", "-s", "none", "-O"]))
}

pub(crate) fn fuzz(arguments: &[String]) -> Result<()> {
    if arguments.first().map(String::as_str) == Some("min") {
        let chosen: Vec<&str> = arguments.iter().skip(1).map(String::as_str).collect();
        build_targets()?;
        for target in if chosen.is_empty() { TARGETS.to_vec() } else { chosen } {
            minimize(target)?;
        }
        return Ok(());
    }
    let seconds: u64 = arguments.first().and_then(|s| s.parse().ok()).unwrap_or(120);
    let chosen: Vec<&str> = arguments.iter().skip(1).map(String::as_str).collect();
    let targets: Vec<&str> = if chosen.is_empty() { TARGETS.to_vec() } else { chosen };
    build_targets()?;
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
        minimize(target)?;
    }
    println!("\n{:<16} {:>12} {:>10} {:>8} {:>10}", "target", "executions", "exec/s", "peak MB", "slowest s");
    for row in rows {
        println!("{row}");
    }
    println!("total {total} executions, 0 crashes, 0 timeouts, 0 over the memory limits ({seconds} s per target)");
    Ok(())
}

/// Replaces `fuzz/corpus/<target>/` by the fewest of its inputs that reach every edge it
/// reaches (libFuzzer's set-cover merge, without hit counts), keeping crashes and regressions,
/// and prints what it kept.
fn minimize(target: &str) -> Result<()> {
    let corpus = workspace_root().join("fuzz/corpus").join(target);
    let lean = workspace_root().join("target/fuzz-merge").join(target);
    let _ = std::fs::remove_dir_all(&lean);
    std::fs::create_dir_all(&lean)?;
    let merged = Command::new(binary(target))
        .args(["-set_cover_merge=1", "-use_counters=0", "-rss_limit_mb=2048", "-timeout=10"])
        .arg(&lean)
        .arg(&corpus)
        .output()?;
    if !merged.status.success() {
        bail!("merging the corpus of {target} failed: {}", String::from_utf8_lossy(&merged.stderr));
    }
    let before = std::fs::read_dir(&corpus)?.count();
    for entry in std::fs::read_dir(&corpus)? {
        let entry = entry?;
        if kept_always(&entry.file_name().to_string_lossy()) {
            std::fs::copy(entry.path(), lean.join(entry.file_name()))?;
        }
    }
    std::fs::remove_dir_all(&corpus)?;
    std::fs::rename(&lean, &corpus)?;
    let (mut files, mut bytes) = (0, 0);
    for entry in std::fs::read_dir(&corpus)? {
        files += 1;
        bytes += entry?.metadata()?.len();
    }
    let summary = String::from_utf8_lossy(&merged.stderr);
    let reached = summary.lines().rev().find(|line| line.contains("new features added")).unwrap_or_default();
    println!("{target:<16} {files:>6} inputs kept of {before:>6} ({bytes} bytes): {}", reached.trim());
    Ok(())
}

/// An input the merge never drops: one that crashed once, or a regression written by hand.
fn kept_always(name: &str) -> bool {
    name.starts_with("crash-") || name.starts_with("regression-")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crashes_and_regressions_are_kept_whatever_they_reach() {
        assert!(kept_always("crash-5ba93c9db0cff93f52b521d7420e43f6eda2784f"));
        assert!(kept_always("regression-token-without-kid"));
        assert!(!kept_always("5ba93c9db0cff93f52b521d7420e43f6eda2784f"));
    }
}
