//! Where a benchmark round's CPU went: the core, its executors, the PostgreSQL server and the
//! rest (the load generators and whatever else runs), from `/proc`, so a figure says what
//! limits it on this machine.

use std::time::Instant;

/// CPU ticks (user and system) of process `pid`; 0 when it is gone.
fn ticks(pid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // The fields after the command's name (which may hold spaces) in parentheses.
    let rest = stat.rsplit_once(')').map(|(_, rest)| rest).unwrap_or_default();
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let field = |n: usize| fields.get(n).and_then(|value| value.parse::<u64>().ok()).unwrap_or(0);
    // utime and stime are the 14th and 15th fields of the line, the 12th and 13th after the name.
    field(11) + field(12)
}

/// CPU ticks of every process named `postgres` (the server and its backends).
fn postgres_ticks() -> u64 {
    let Ok(entries) = std::fs::read_dir("/proc") else { return 0 };
    entries
        .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| std::fs::read_to_string(format!("/proc/{pid}/comm")).is_ok_and(|comm| comm.trim() == "postgres"))
        .map(ticks)
        .sum()
}

/// Busy and idle ticks of the whole machine.
fn machine() -> (u64, u64) {
    let stat = std::fs::read_to_string("/proc/stat").unwrap_or_default();
    let line = stat.lines().next().unwrap_or_default();
    let values: Vec<u64> = line.split_whitespace().skip(1).filter_map(|value| value.parse().ok()).collect();
    let idle = values.get(3).copied().unwrap_or(0) + values.get(4).copied().unwrap_or(0);
    (values.iter().sum::<u64>() - idle, idle)
}

fn ticks_per_second() -> f64 {
    std::process::Command::new("getconf")
        .arg("CLK_TCK")
        .output()
        .ok()
        .and_then(|out| String::from_utf8_lossy(&out.stdout).trim().parse().ok())
        .unwrap_or(100.0)
}

/// A reading of the CPU used so far.
pub(crate) struct Reading {
    at: Instant,
    cores: u64,
    executors: u64,
    postgres: u64,
    busy: u64,
    idle: u64,
}

pub(crate) fn read(cores: &[u32], executors: &[u32]) -> Reading {
    let (busy, idle) = machine();
    Reading {
        at: Instant::now(),
        cores: cores.iter().copied().map(ticks).sum(),
        executors: executors.iter().copied().map(ticks).sum(),
        postgres: postgres_ticks(),
        busy,
        idle,
    }
}

/// The CPUs each part used on average since `before` (2.0 is two whole cores), as JSON.
pub(crate) fn since(before: &Reading, cores: &[u32], executors: &[u32]) -> serde_json::Value {
    let after = read(cores, executors);
    let seconds = after.at.duration_since(before.at).as_secs_f64().max(1e-9);
    let per = ticks_per_second() * seconds;
    let used = |a: u64, b: u64| ((a.saturating_sub(b)) as f64 / per * 100.0).round() / 100.0;
    let busy = used(after.busy, before.busy);
    let (core, executor, postgres) = (
        used(after.cores, before.cores),
        used(after.executors, before.executors),
        used(after.postgres, before.postgres),
    );
    serde_json::json!({
        "core": core, "executor": executor, "postgres": postgres,
        "rest": ((busy - core - executor - postgres).max(0.0) * 100.0).round() / 100.0,
        "idle": used(after.idle, before.idle),
    })
}
