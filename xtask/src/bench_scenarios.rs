//! Benchmark P12: `skill-sdk package test` (release) on a copy of the claims package with 100
//! scenario tests — its four tests repeated, and four of a process whose only step waits 24 hours
//! (`advance: 24h`). The whole command is timed, start to exit; the runner's own times say what
//! each kind of test cost. Prints a table and writes `target/bench/scenarios.json`.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use serde_json::{Value, json};

use crate::{cargo, run, target_dir, workspace_root};

const TESTS: usize = 100;
const WAITS: usize = 4;
const RUNS: usize = 5;
/// The bars of `shared/design/performance.md`, P12.
const BAR: Duration = Duration::from_secs(10);
const WAIT_BAR: Duration = Duration::from_millis(100);

const WAIT_PROCESS: &str = "apiVersion: taimen.ai/v1
kind: Process
key: bench-wait
spec:
  version: '1'
  description: Waits a day, then ends.
  identity:
    agent: claims-handling
  steps:
  - id: day
    wait:
      for: 24h
  - id: done
    end:
      status: completed
";

const WAIT_TEST: &str = "name: a day's wait NN
subject: process
process: bench-wait
given:
  workspace: claims
steps:
- start:
    input: {}
- expect:
    step: day
- advance: 24h
- expect:
    status: completed
";

/// The claims package without its integration crate, its tests repeated to `TESTS - WAITS`, and
/// `WAITS` tests of the day's wait.
fn package(folder: &Path) -> Result<()> {
    let example = workspace_root().join("examples/claims");
    let _ = std::fs::remove_dir_all(folder);
    for sub in ["skills", "task-types", "artifact-types", "agents", "rules", "processes", "tests"] {
        std::fs::create_dir_all(folder.join(sub))?;
        if sub == "tests" {
            continue;
        }
        for entry in std::fs::read_dir(example.join(sub))? {
            let entry = entry?;
            std::fs::copy(entry.path(), folder.join(sub).join(entry.file_name()))?;
        }
    }
    std::fs::copy(example.join("package.yaml"), folder.join("package.yaml"))?;
    std::fs::write(folder.join("processes/bench-wait.yaml"), WAIT_PROCESS)?;
    let mut claims: Vec<_> = std::fs::read_dir(example.join("tests"))?.collect::<Result<_, _>>()?;
    claims.sort_by_key(std::fs::DirEntry::file_name);
    for n in 0..TESTS - WAITS {
        let source = &claims[n % claims.len()];
        let stem = source.file_name().to_string_lossy().replace(".test.yaml", "");
        std::fs::copy(source.path(), folder.join(format!("tests/{stem}-{n:03}.test.yaml")))?;
    }
    for n in 0..WAITS {
        let text = WAIT_TEST.replace("NN", &n.to_string());
        std::fs::write(folder.join(format!("tests/wait-{n:03}.test.yaml")), text)?;
    }
    Ok(())
}

fn ms(seconds: f64) -> f64 {
    seconds * 1000.0
}

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

pub(crate) fn bench() -> Result<()> {
    let root = target_dir().join("bench");
    let folder = root.join("scenarios").join("claims");
    package(&folder)?;
    // `package test` runs the scenarios in the skill-core beside skill-sdk.
    run(
        "build skill-sdk and skill-core (release)",
        cargo().args(["build", "--release", "--quiet", "-p", "skill-cli", "-p", "skill-core"]),
    )?;
    let binary = target_dir().join("release/skill-sdk");
    let mut walls = Vec::new();
    let mut runner = Vec::new();
    let mut waits = Vec::new();
    let mut others = Vec::new();
    for _ in 0..RUNS {
        let started = Instant::now();
        let output = Command::new(&binary)
            .args(["package", "test", "--skip-contracts", "--json", "--package"])
            .arg(&folder)
            .output()
            .context("running skill-sdk")?;
        walls.push(started.elapsed().as_secs_f64());
        let report: Value = serde_json::from_slice(&output.stdout).with_context(|| {
            format!(
                "the report: {}{}",
                String::from_utf8_lossy(&output.stdout),
                String::from_utf8_lossy(&output.stderr)
            )
        })?;
        let scenarios = &report["scenarios"];
        if !output.status.success() || scenarios["passed"] != json!(TESTS) {
            bail!("not every test passed: {report}");
        }
        runner.push(scenarios["seconds"].as_f64().unwrap_or_default());
        for test in scenarios["tests"].as_array().into_iter().flatten() {
            let seconds = test["seconds"].as_f64().unwrap_or_default();
            let is_wait = test["file"].as_str().is_some_and(|file| file.starts_with("tests/wait-"));
            if is_wait { waits.push(seconds) } else { others.push(seconds) }
        }
    }
    let wall = median(&mut walls);
    let runner = median(&mut runner);
    let wait = median(&mut waits);
    let wait_max = waits.last().copied().unwrap_or_default();
    let other = median(&mut others);
    let other_max = others.last().copied().unwrap_or_default();
    let verdict = |met: bool| if met { "met" } else { "MISSED" };
    println!("\nP12: skill-sdk package test, {TESTS} tests ({WAITS} of a 24 h wait), {RUNS} runs, release");
    println!("{:<34} {:>10} {:>10} {:>8}", "measure", "median", "max", "bar");
    println!(
        "{:<34} {:>8.2} s {:>8.2} s {:>8}",
        "whole command, start to exit",
        wall,
        walls.last().copied().unwrap_or_default(),
        verdict(wall <= BAR.as_secs_f64())
    );
    println!("{:<34} {:>8.2} s {:>10} {:>8}", "the runner (template + 100 tests)", runner, "", "-");
    println!("{:<34} {:>7.1} ms {:>7.1} ms {:>8}", "a claims test", ms(other), ms(other_max), "-");
    println!(
        "{:<34} {:>7.1} ms {:>7.1} ms {:>8}",
        "a test covering a 24 h wait",
        ms(wait),
        ms(wait_max),
        verdict(wait_max <= WAIT_BAR.as_secs_f64())
    );
    let result = json!({
        "benchmark": "P12", "tests": TESTS, "runs": RUNS, "bar_seconds": BAR.as_secs_f64(),
        "wall_seconds_median": wall, "runner_seconds_median": runner,
        "claims_test_ms_median": ms(other), "claims_test_ms_max": ms(other_max),
        "wait_24h_test_ms_median": ms(wait), "wait_24h_test_ms_max": ms(wait_max),
        "wait_bar_ms": ms(WAIT_BAR.as_secs_f64()),
    });
    std::fs::write(root.join("scenarios.json"), format!("{result}\n"))?;
    println!("written {}", root.join("scenarios.json").display());
    Ok(())
}
