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

use crate::core_run::{Process, Tokens, build, output, publish_demo, release, start};
use crate::run;
use crate::target_dir;

/// The offered rates, calls per second, in turn until one is not sustained.
const RATES: &[u64] = &[100, 200, 300, 400, 600, 800, 1200, 1600, 2000, 2400, 3200, 4000, 4800];
const SECONDS: &str = "10";
/// P4's latency bar: p99 invoke→succeeded at most this many milliseconds.
const P99_BAR_MS: f64 = 20.0;
/// The queue peers on SQLite: (script in xtask/bench, jobs, workers). Worker counts are each
/// peer's best of a few tried on a 2-core machine (huey 1–16 threads, DBOS 4–64).
const SQLITE_PEERS: &[(&str, &str, &str)] = &[("queue_huey.py", "5000", "8"), ("queue_dbos.py", "1000", "64")];
/// The queue peers on PostgreSQL, each run with every worker count listed and its best kept:
/// (peer, jobs, worker counts).
const POSTGRES_PEERS: &[(&str, &str, &[&str])] =
    &[("pgqueuer", "4000", &["8", "32", "64"]), ("graphile-worker", "4000", &["8", "32", "64"])];

#[allow(
    clippy::too_many_lines,
    reason = "a benchmark is one script: our path and each peer in the same run, then the ratios, read top to bottom"
)]
pub(crate) fn bench_core(backend: &str, replicas: usize, soak: bool) -> Result<()> {
    let name = if replicas > 1 { format!("{backend}-{replicas}") } else { backend.to_owned() };
    build(
        "build the core, the demo host, the load generator and the reference (release)",
        &[
            "-p",
            "skill-store",
            "--example",
            "commit_rate",
            "--example",
            "claim_plan",
            "-p",
            "skill-core",
            "--example",
            "otlp_sink",
        ],
    )?;
    let folder = target_dir().join("bench").join(format!("core-{name}"));
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
            // The server counts what it runs, planning too, for the report of where its time went.
            run(
                "count the statements",
                Command::new("psql").args([
                    url.as_str(),
                    "-q",
                    "-c",
                    "CREATE EXTENSION pg_stat_statements",
                    "-c",
                    "ALTER DATABASE skill_bench SET pg_stat_statements.track_planning = on",
                ]),
            )?;
            postgres = Some(server);
            (url, json!({"pgbenchSimpleUpdateTps": tps}))
        }
        other => bail!("bench core runs on sqlite or postgres, not {other}"),
    };
    let core = release("skill-core");
    let Tokens { admin, caller, executor } = Tokens::create(&db)?;
    // A caller per load generator: each reads back the calls made with its own token.
    let mut callers = vec![caller];
    for replica in 1..replicas {
        callers.push(crate::core_run::person_token(&db, &format!("caller-{replica}"), &["skills.invoke"])?);
    }
    // Each replica serves the one database, with an executor of its own.
    let (mut cores, mut executors, mut urls) = (Vec::new(), Vec::new(), Vec::new());
    for replica in 0..replicas {
        let (process, line) = start(
            Command::new(&core).args(["serve", "--db", &db, "--listen", "127.0.0.1:0"]).env("SKILL_LOG", "warn"),
            &target_dir().join("bench").join(format!("core-{name}-{replica}.log")),
            " on http://",
        )?;
        cores.push(process);
        let address = line.split(" on http://").nth(1).and_then(|rest| rest.split('/').next()).context("an address")?;
        urls.push(format!("http://{address}"));
    }
    publish_demo(&urls[0], &admin, "echo@1")?;
    for (replica, url) in urls.iter().enumerate() {
        executors.push(
            start(
                Command::new(release("examples/demo_host"))
                    .args(["execute", "--core", url, "--concurrency", "64", "--grace", "5"])
                    .env("SKILL_CORE_TOKEN", &executor)
                    .env("SKILL_LOG", "warn,skill_host::execute=info"),
                &target_dir().join("bench").join(format!("executor-{name}-{replica}.log")),
                "executing the local skills",
            )?
            .0,
        );
    }
    let mut rounds = Vec::new();
    let core_pids: Vec<u32> = cores.iter().map(Process::id).collect();
    let executor_pids: Vec<u32> = executors.iter().map(Process::id).collect();
    for rate in RATES {
        let cpu_before = crate::cpu::read(&core_pids, &executor_pids);
        // The rate split over the replicas, a load generator each, all at once.
        let loads = urls
            .iter()
            .zip(&callers)
            .map(|(url, caller)| {
                Command::new(release("examples/core_load"))
                    .args(["--core", url, "--token", caller, "--skill", "echo@1", "--rate"])
                    .arg((rate / replicas as u64).to_string())
                    .args(["--seconds", SECONDS])
                    .stdout(std::process::Stdio::piped())
                    .stderr(std::process::Stdio::inherit())
                    .spawn()
            })
            .collect::<std::io::Result<Vec<_>>>()?;
        let mut parts = Vec::new();
        for load in loads {
            let out = load.wait_with_output()?;
            parts.push(serde_json::from_slice::<Value>(&out.stdout).context("a load generator's figures")?);
        }
        let mut result = combined(*rate, &parts);
        result["cpu"] = crate::cpu::since(&cpu_before, &core_pids, &executor_pids);
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
        eprintln!(
            "                   CPUs used: core {}, executor {}, PostgreSQL {}, load and the rest {}, idle {}",
            result["cpu"]["core"],
            result["cpu"]["executor"],
            result["cpu"]["postgres"],
            result["cpu"]["rest"],
            result["cpu"]["idle"]
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
    let kept = |r: &Value| {
        r["skipped"] == 0
            && r["refused"] == 0
            && r["failed"] == 0
            && r["throughput"].as_f64().unwrap_or(0.0) >= 0.95 * r["rate"].as_f64().unwrap_or(f64::MAX)
    };
    let sustained = rounds
        .iter()
        .filter(|r| kept(r))
        .max_by(|a, b| a["rate"].as_u64().cmp(&b["rate"].as_u64()))
        .cloned()
        .unwrap_or(Value::Null);
    // Within the bar: the highest such rate whose p99 invoke→succeeded is at most 20 ms.
    let within_bar = rounds
        .iter()
        .filter(|r| kept(r) && r["p99"].as_f64().is_some_and(|p| p <= P99_BAR_MS))
        .max_by(|a, b| a["rate"].as_u64().cmp(&b["rate"].as_u64()))
        .cloned()
        .unwrap_or(Value::Null);
    let soak = match &postgres {
        Some(_) if soak && replicas == 1 => crate::soak::soak(&db, &urls[0], &callers[0])?,
        _ => Value::Null,
    };
    drop(executors);
    drop(cores);
    // P14: metrics and traces on against off, at the rate the rounds could not keep up with
    // (the last one offered).
    let telemetry = match rounds.last().and_then(|round| round["rate"].as_u64()) {
        Some(rate) if replicas == 1 => crate::bench_telemetry::telemetry(&db, &callers[0], &executor, rate, SECONDS)?,
        _ => Value::Null,
    };
    let server_time = match &postgres {
        Some(_) => server_time(&db)?,
        None => Value::Null,
    };
    // The bloat guard: the claim's plan and time on the table as the rounds left it, then with
    // a million ended calls more.
    let bloat = match &postgres {
        Some(_) if replicas == 1 => bloat(&db)?,
        _ => Value::Null,
    };
    let peers = match &postgres {
        None => queue_peers(&folder)?,
        Some(server) if replicas == 1 => postgres_peers(server)?,
        Some(_) => Vec::new(),
    };
    let base = reference.as_object().and_then(|r| r.values().next()).and_then(Value::as_f64).unwrap_or(0.0);
    let ratio = |round: &Value| round["throughput"].as_f64().map(|t| if base > 0.0 { t / base } else { 0.0 });
    let ahead = peers
        .iter()
        .all(|peer| within_bar["throughput"].as_f64().unwrap_or(0.0) > peer["throughput"].as_f64().unwrap_or(f64::MAX));
    let report = json!({"backend": backend, "replicas": replicas, "bloat": bloat, "soak": soak, "serverTime": server_time, "reference": reference, "rounds": rounds, "sustained": sustained,
                        "sustainedWithinP99Bar": within_bar, "ratioToReference": ratio(&sustained),
                        "ratioWithinP99Bar": ratio(&within_bar), "peers": peers, "aheadOfEveryPeer": ahead,
                        "telemetry": telemetry});
    let figure = |round: &Value| {
        format!(
            "{} calls/s (p99 {} ms, ratio {})",
            round["throughput"].as_f64().map_or("none".into(), |t| format!("{t:.0}")),
            round["p99"].as_f64().map_or("-".into(), |p| format!("{p:.1}")),
            ratio(round).map_or("-".into(), |r| format!("{r:.2}"))
        )
    };
    eprintln!("P4 {name}: reference {reference}");
    eprintln!("  sustained, every call ended at the offered rate: {}", figure(&sustained));
    eprintln!("  sustained with p99 ≤ {P99_BAR_MS} ms:                {}", figure(&within_bar));
    for peer in &peers {
        eprintln!(
            "  peer {:<16} {:>6.0} jobs/s (p50 {:.1} ms, p99 {:.1} ms; {} jobs, saturated)",
            peer["peer"].as_str().unwrap_or("?"),
            peer["throughput"].as_f64().unwrap_or(0.0),
            peer["p50"].as_f64().unwrap_or(0.0),
            peer["p99"].as_f64().unwrap_or(0.0),
            peer["jobs"],
        );
    }
    if !peers.is_empty() {
        eprintln!("  ahead of every queue peer (within the p99 bar): {ahead}");
    }
    std::fs::write(
        target_dir().join("bench").join(format!("core-{name}.json")),
        serde_json::to_string_pretty(&report)?,
    )?;
    drop(postgres);
    Ok(())
}

/// How many ended calls the bloat guard adds.
const ENDED_CALLS: u64 = 1_000_000;

/// The claim's plan (`EXPLAIN (ANALYZE, BUFFERS)`) on the database `db` as it is, then after
/// [`ENDED_CALLS`] succeeded calls are added (copies of one the rounds made) and the table is
/// analyzed; both plans printed, their execution times returned.
fn bloat(db: &str) -> Result<Value> {
    // The entrypoint the rounds' calls name, as the executor admits it.
    let target = output(Command::new("psql").args([db, "-qAt", "-c", "SELECT target FROM skill_invocations LIMIT 1"]))?;
    let target = target.trim();
    let plan = || -> Result<(String, f64)> {
        let plan = output(Command::new(release("examples/claim_plan")).args([db, target]))?;
        let time = plan
            .lines()
            .find_map(|line| line.trim().strip_prefix("Execution Time: "))
            .and_then(|rest| rest.trim_end_matches(" ms").parse().ok())
            .context("the plan's execution time")?;
        Ok((plan, time))
    };
    let (before, before_ms) = plan()?;
    eprintln!("the claim's plan, {} calls in the table:\n{before}", rows(db)?);
    let copies = format!(
        "CREATE TEMP TABLE ended AS SELECT i.* FROM (SELECT * FROM skill_invocations WHERE status = 'succeeded' \
         LIMIT 1) i, generate_series(1, {ENDED_CALLS}); \
         UPDATE ended SET id = gen_random_uuid()::text, idempotency_key = NULL; \
         INSERT INTO skill_invocations SELECT * FROM ended; ANALYZE skill_invocations;"
    );
    run("add a million ended calls", Command::new("psql").args([db, "-q", "-v", "ON_ERROR_STOP=1", "-c", &copies]))?;
    let (after, after_ms) = plan()?;
    eprintln!("the claim's plan, {} calls in the table:\n{after}", rows(db)?);
    eprintln!(
        "  the claim's candidate query: {before_ms:.3} ms, then {after_ms:.3} ms with {ENDED_CALLS} more ended calls"
    );
    Ok(json!({"endedCallsAdded": ENDED_CALLS, "claimMsBefore": before_ms, "claimMsAfter": after_ms,
              "planBefore": before, "planAfter": after}))
}

/// How many calls the table holds.
fn rows(db: &str) -> Result<String> {
    Ok(output(Command::new("psql").args([db, "-qAt", "-c", "SELECT count(*) FROM skill_invocations"]))?
        .trim()
        .to_owned())
}

/// The figures of one round from its load generators' (one per replica): the calls and
/// throughputs added up, the latencies the worst of theirs.
fn combined(rate: u64, parts: &[Value]) -> Value {
    let sum = |key: &str| parts.iter().map(|part| part[key].as_f64().unwrap_or(0.0)).sum::<f64>();
    let worst = |key: &str| parts.iter().map(|part| part[key].as_f64().unwrap_or(0.0)).fold(0.0, f64::max);
    let count = |key: &str| parts.iter().map(|part| part[key].as_u64().unwrap_or(0)).sum::<u64>();
    if let [one] = parts {
        return one.clone();
    }
    json!({"rate": rate, "throughput": sum("throughput"), "p50": worst("p50"), "p99": worst("p99"),
           "invokeP99": worst("invokeP99"), "skipped": count("skipped"), "refused": count("refused"),
           "failed": count("failed"), "loadGenerators": parts})
}

/// Where the PostgreSQL server's time went over the rounds: the statements that took the most
/// (planning and running), each with its count and its mean time; printed and returned.
fn server_time(db: &str) -> Result<Value> {
    let query = "SELECT json_agg(s) FROM (SELECT calls, round((total_plan_time / NULLIF(calls, 0))::numeric, 3) AS plan_ms, \
                 round((total_exec_time / NULLIF(calls, 0))::numeric, 3) AS run_ms, \
                 round((total_plan_time + total_exec_time)::numeric) AS total_ms, \
                 left(regexp_replace(query, '\\s+', ' ', 'g'), 100) AS statement FROM pg_stat_statements \
                 WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database()) \
                 ORDER BY total_plan_time + total_exec_time DESC LIMIT 12) s";
    let rows: Value = serde_json::from_str(&output(Command::new("psql").args([db, "-qAt", "-c", query]))?)?;
    eprintln!("where the server's time went (the rounds): calls, mean planning and running (ms), total (ms)");
    for row in rows.as_array().into_iter().flatten() {
        eprintln!(
            "  {:>8} {:>7} {:>7} {:>8}  {}",
            row["calls"],
            row["plan_ms"],
            row["run_ms"],
            row["total_ms"],
            row["statement"].as_str().unwrap_or_default()
        );
    }
    Ok(rows)
}

/// Runs the queue peers on the PostgreSQL server of the run, each worker count on a fresh
/// database, and returns each peer's best figures (with the worker count that gave them).
fn postgres_peers(server: &crate::postgres::Postgres) -> Result<Vec<Value>> {
    let python = crate::virtualenv("bench-python", "xtask/bench/queue-requirements.txt")?;
    let node = crate::node_packages("bench-node", "xtask/bench/node", "the Node.js queue peer")?;
    let mut figures = Vec::new();
    for (peer, jobs, counts) in POSTGRES_PEERS {
        let mut best: Option<Value> = None;
        for workers in *counts {
            let url = server.database(&format!("peer_{}_{workers}", peer.replace('-', "_")))?;
            let mut command = if *peer == "pgqueuer" {
                let mut command = Command::new(&python);
                command.arg(crate::workspace_root().join("xtask/bench/queue_pgqueuer.py"));
                command
            } else {
                let mut command = Command::new("node");
                command.arg(crate::workspace_root().join("xtask/bench/node/queue_graphile.js"));
                command.env("NODE_PATH", node.join("node_modules"));
                command
            };
            let answer = output(command.args([url.as_str(), jobs, workers]))?;
            let line = answer.lines().last().context("a peer prints its figures")?;
            let mut figure: Value = serde_json::from_str(line).with_context(|| format!("{peer} printed {line:?}"))?;
            figure["workers"] = json!(workers.parse::<u32>().unwrap_or(0));
            eprintln!(
                "  peer {peer} with {workers} workers: {:.0} jobs/s",
                figure["throughput"].as_f64().unwrap_or(0.0)
            );
            let better = best.as_ref().is_none_or(|best| {
                figure["throughput"].as_f64().unwrap_or(0.0) > best["throughput"].as_f64().unwrap_or(0.0)
            });
            if better {
                best = Some(figure);
            }
        }
        figures.extend(best);
    }
    Ok(figures)
}

/// Runs the durable queue peers on SQLite (installed from PyPI into `target/bench-python`), each
/// on a fresh database in `folder`, and returns their figures.
fn queue_peers(folder: &std::path::Path) -> Result<Vec<Value>> {
    let python = crate::virtualenv("bench-python", "xtask/bench/queue-requirements.txt")?;
    let mut figures = Vec::new();
    for (script, jobs, workers) in SQLITE_PEERS {
        let database = folder.join(format!("{script}.db"));
        let answer = output(
            Command::new(&python)
                .arg(crate::workspace_root().join("xtask/bench").join(script))
                .arg(&database)
                .args([jobs, workers]),
        )?;
        let line = answer.lines().last().context("a peer prints its figures")?;
        figures.push(serde_json::from_str(line).with_context(|| format!("{script} printed {line:?}"))?);
    }
    Ok(figures)
}
