//! P14, part of `cargo xtask bench core`: the core and its executor at one saturating offered
//! rate, with metrics and traces off, then on (`--metrics-listen` on both, scraped every second,
//! and `OTEL_EXPORTER_OTLP_ENDPOINT` pointing at a local receiver that decodes every export), in
//! the order off, on, on, off so the database's growth weighs on both alike. The figure is the
//! throughput with both on over the throughput with both off.

use std::process::Command;

use anyhow::{Context, Result};
use serde_json::{Value, json};

use crate::core_run::{Process, release, start};
use crate::target_dir;

/// A free port of 127.0.0.1 (bound and let go: the process started next takes it).
fn free_port() -> Result<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

/// One pass: the ended calls per second and where the CPU went.
#[allow(
    clippy::too_many_arguments,
    reason = "the settings a comparison varies from pass to pass, each named at the call"
)]
fn pass(db: &str, caller: &str, executor: &str, rate: u64, seconds: &str, on: bool, n: usize) -> Result<Value> {
    let logs = target_dir().join("bench");
    let figures = logs.join(format!("telemetry-sink-{n}.json"));
    let _ = std::fs::remove_file(&figures);
    let (core_metrics, executor_metrics) = (free_port()?, free_port()?);
    let mut sink = None;
    let mut endpoint = String::new();
    if on {
        let (process, line) = start(
            Command::new(release("examples/otlp_sink"))
                .arg("--figures")
                .arg(&figures)
                .args(["--scrape", &format!("http://127.0.0.1:{core_metrics}/metrics")])
                .args(["--scrape", &format!("http://127.0.0.1:{executor_metrics}/metrics")]),
            &logs.join("telemetry-sink.log"),
            "receiving on http://",
        )?;
        endpoint = line.split("receiving on ").nth(1).context("the receiver's address")?.trim().to_owned();
        sink = Some(process);
    }
    let telemetry = |command: &mut Command, port: u16| {
        if on {
            command
                .args(["--metrics-listen", &format!("127.0.0.1:{port}")])
                .env("OTEL_EXPORTER_OTLP_ENDPOINT", &endpoint)
                .env("OTEL_BSP_SCHEDULE_DELAY", "1000");
        } else {
            command.env_remove("OTEL_EXPORTER_OTLP_ENDPOINT").env_remove("SKILL_METRICS_LISTEN");
        }
    };
    let mut core = Command::new(release("skill-core"));
    core.args(["serve", "--db", db, "--listen", "127.0.0.1:0"]).env("SKILL_LOG", "warn");
    telemetry(&mut core, core_metrics);
    let (core, line) = start(&mut core, &logs.join("telemetry-core.log"), " on http://")?;
    let address = line.split(" on http://").nth(1).and_then(|rest| rest.split('/').next()).context("an address")?;
    let url = format!("http://{address}");
    let mut host = Command::new(release("examples/demo_host"));
    host.args(["execute", "--core", &url, "--concurrency", "64", "--grace", "5"])
        .env("SKILL_CORE_TOKEN", executor)
        .env("SKILL_LOG", "warn,skill_host::execute=info");
    telemetry(&mut host, executor_metrics);
    let (host, _) = start(&mut host, &logs.join("telemetry-executor.log"), "executing the local skills")?;
    let cpu_before = crate::cpu::read(&[core.id()], &[host.id()]);
    let load = Command::new(release("examples/core_load"))
        .args(["--core", &url, "--token", caller, "--skill", "echo@1", "--rate", &rate.to_string()])
        .args(["--seconds", seconds])
        .stderr(std::process::Stdio::inherit())
        .output()?;
    let mut figures_of_load: Value = serde_json::from_slice(&load.stdout).context("the load generator's figures")?;
    figures_of_load["cpu"] = crate::cpu::since(&cpu_before, &[core.id()], &[host.id()]);
    drop::<(Process, Process)>((host, core));
    if let Some(sink) = sink {
        // The last scrape and export are in the file already (it is written at every change).
        drop(sink);
        let seen: Value = serde_json::from_str(&std::fs::read_to_string(&figures)?)?;
        figures_of_load["received"] = seen;
    }
    figures_of_load["telemetry"] = json!(on);
    Ok(figures_of_load)
}

/// Runs the four passes at `rate` and reports them with the ratio.
pub(crate) fn telemetry(db: &str, caller: &str, executor: &str, rate: u64, seconds: &str) -> Result<Value> {
    let mut passes = Vec::new();
    for (n, on) in [false, true, true, false].into_iter().enumerate() {
        let pass = pass(db, caller, executor, rate, seconds, on, n)?;
        eprintln!(
            "  P14 pass {n} ({}): {:>7.0} ended/s, p99 {:>7.1} ms; CPUs core {}, executor {}{}",
            if on { "metrics and traces on " } else { "metrics and traces off" },
            pass["throughput"].as_f64().unwrap_or(0.0),
            pass["p99"].as_f64().unwrap_or(0.0),
            pass["cpu"]["core"],
            pass["cpu"]["executor"],
            if on {
                format!(
                    "; {} spans in {} exports, {} scrapes ({} failed)",
                    pass["received"]["spans"],
                    pass["received"]["exports"],
                    pass["received"]["scrapes"],
                    pass["received"]["scrapeFailures"]
                )
            } else {
                String::new()
            }
        );
        passes.push(pass);
    }
    let mean = |on: bool| {
        let chosen: Vec<f64> = passes
            .iter()
            .filter(|pass| pass["telemetry"] == json!(on))
            .filter_map(|pass| pass["throughput"].as_f64())
            .collect();
        chosen.iter().sum::<f64>() / chosen.len().max(1) as f64
    };
    let (off, on) = (mean(false), mean(true));
    let ratio = if off > 0.0 { on / off } else { 0.0 };
    eprintln!(
        "P14: offered {rate}/s; ended {on:.0}/s with metrics and traces on, {off:.0}/s off: ratio {ratio:.3} (bar 0.95)"
    );
    Ok(json!({"rate": rate, "passes": passes, "on": on, "off": off, "ratio": ratio}))
}
