//! The fault run: 2,000 calls of the demo host's `record@1` (one effect per idempotency key: a
//! file named by the key) through a core on SQLite or PostgreSQL, while the executor is killed
//! (`kill -9`) and restarted every 2.5 s and the core is killed and restarted once. It checks that
//! every call ends `succeeded`, none is lost, no key made two effects, and no fencing token was
//! handed out twice for one call; figures go to `target/fault/<backend>.json`.
//!
//! With `--replicas N` (PostgreSQL) N cores serve one database: the calls are invoked through the
//! first, each replica has an executor of its own (so calls queued through one are claimed
//! through another), and the second replica is killed and restarted, then the first.
//!
//! `cargo xtask fault [sqlite|postgres] [--replicas N]`

use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use serde_json::{Value, json};

use crate::core_run::{Tokens, build, output, publish_demo, release, start};
use crate::target_dir;

const CALLS_PER_SECOND: &str = "100";
const SECONDS: &str = "20";
const EXPECTED: usize = 2000;

/// `GET url` with `token`, as JSON.
fn get(token: &str, url: &str) -> Result<Value> {
    let answer = output(Command::new("curl").args(["-s", "-H", &format!("Authorization: Bearer {token}"), url]))?;
    Ok(serde_json::from_str(&answer)?)
}

#[allow(
    clippy::too_many_lines,
    reason = "a fault run is one script: start, kill and restart at random, then count, read top to bottom"
)]
pub(crate) fn fault(backend: &str, replicas: usize) -> Result<()> {
    build("build the core, the demo host and the load generator (release)", &[])?;
    let name = if replicas > 1 { format!("{backend}-{replicas}") } else { backend.to_owned() };
    let folder = target_dir().join("fault").join(&name);
    let _ = std::fs::remove_dir_all(&folder);
    let effects = folder.join("effects");
    std::fs::create_dir_all(&effects)?;
    let mut postgres = None;
    let db = match backend {
        "sqlite" => folder.join("data").display().to_string(),
        "postgres" => {
            let server = crate::postgres::Postgres::start_durable()?;
            let url = server.database("skill_fault")?;
            postgres = Some(server);
            url
        }
        other => bail!("the fault run is on sqlite or postgres, not {other}"),
    };
    let core = release("skill-core");
    let Tokens { admin, caller, executor: executor_token } = Tokens::create(&db)?;
    let mut listens = Vec::new();
    for _ in 0..replicas {
        let probe = std::net::TcpListener::bind("127.0.0.1:0")?;
        listens.push(probe.local_addr()?.to_string());
    }
    let urls: Vec<String> = listens.iter().map(|listen| format!("http://{listen}")).collect();
    let url = urls[0].clone();
    let core_log = |replica: usize| folder.join(format!("core-{replica}.log"));
    let serve = |replica: usize| {
        let mut command = Command::new(&core);
        command.args(["serve", "--db", &db, "--listen", &listens[replica]]).env("SKILL_LOG", "warn");
        command
    };
    let mut cores = Vec::new();
    for replica in 0..replicas {
        cores.push(start(&mut serve(replica), &core_log(replica), " on http://")?.0);
    }
    publish_demo(&url, &admin, "record@1")?;
    let executor_log = |replica: usize| folder.join(format!("executor-{replica}.log"));
    let execute = |replica: usize| {
        let mut command = Command::new(release("examples/demo_host"));
        command
            .args(["execute", "--core", &urls[replica], "--concurrency", "16", "--grace", "1"])
            .env("SKILL_CORE_TOKEN", &executor_token)
            .env("DEMO_EFFECTS_DIR", &effects)
            .env("SKILL_LOG", "warn,skill_host::execute=info");
        command
    };
    let mut executors = Vec::new();
    for replica in 0..replicas {
        executors.push(start(&mut execute(replica), &executor_log(replica), "executing the local skills")?.0);
    }
    let load_out = folder.join("load.json");
    let mut load = Command::new(release("examples/core_load"))
        .args([
            "--core",
            &url,
            "--token",
            &caller,
            "--skill",
            "record@1",
            "--rate",
            CALLS_PER_SECOND,
            "--seconds",
            SECONDS,
            "--key-prefix",
            "fault-",
        ])
        .stdout(std::fs::File::create(&load_out)?)
        .stderr(std::fs::File::create(folder.join("load.log"))?)
        .spawn()?;
    let started = Instant::now();
    let (mut executor_kills, mut core_kills) = (0, 0);
    while load.try_wait()?.is_none() {
        std::thread::sleep(Duration::from_millis(2500));
        if load.try_wait()?.is_some() || started.elapsed() > Duration::from_secs(400) {
            break;
        }
        for executor in &mut executors {
            executor.kill();
        }
        executor_kills += 1;
        // The third round kills the last replica (the only one, with one); with more, the fifth
        // kills the first, which takes the invokes.
        let killed = match executor_kills {
            3 => Some(replicas - 1),
            5 if replicas > 1 => Some(0),
            _ => None,
        };
        if let Some(replica) = killed {
            cores[replica].kill();
            core_kills += 1;
            std::thread::sleep(Duration::from_millis(500));
            cores[replica] = start(&mut serve(replica), &core_log(replica), " on http://")?.0;
        }
        for (replica, executor) in executors.iter_mut().enumerate() {
            *executor = start(&mut execute(replica), &executor_log(replica), "executing the local skills")?.0;
        }
    }
    let _ = load.wait();
    let elapsed = started.elapsed().as_secs_f64();
    let load: Value = serde_json::from_str(&std::fs::read_to_string(&load_out)?).context("the load's figures")?;

    // Every claim's fencing token, per call, from the journal.
    let mut claims: std::collections::BTreeMap<String, Vec<i64>> = std::collections::BTreeMap::new();
    let mut after = 0i64;
    loop {
        let page = get(&admin, &format!("{url}/api/v1/events?after={after}&limit=1000"))?;
        let items = page["items"].as_array().cloned().unwrap_or_default();
        if items.is_empty() {
            break;
        }
        for event in &items {
            after = after.max(event["seq"].as_i64().unwrap_or(after));
            if event["kind"] == "skill.invocation_claimed" {
                let subject = event["subject"].as_str().unwrap_or_default().to_owned();
                claims.entry(subject).or_default().push(event["data"]["fencingToken"].as_i64().unwrap_or(-1));
            }
        }
    }
    let reused = claims.values().filter(|tokens| {
        let distinct: std::collections::BTreeSet<_> = tokens.iter().collect();
        distinct.len() != tokens.len() || tokens.windows(2).any(|pair| pair[1] <= pair[0])
    });
    let reused = reused.count();
    let claims_total: usize = claims.values().map(Vec::len).sum();
    let effects_made = std::fs::read_dir(&effects)?.count();
    drop(executors);
    drop(cores);
    drop(postgres);

    let report = json!({
        "backend": backend, "replicas": replicas, "calls": EXPECTED, "seconds": elapsed, "executorKills": executor_kills, "coreKills": core_kills,
        "accepted": load["accepted"], "succeeded": load["succeeded"], "failed": load["failed"], "refused": load["refused"],
        "callsRetried": load["retried"], "distinctKeys": load["distinctKeys"], "effects": effects_made,
        "claims": claims_total, "callsClaimed": claims.len(), "fencingTokensReused": reused,
    });
    std::fs::create_dir_all(target_dir().join("fault"))?;
    std::fs::write(target_dir().join("fault").join(format!("{name}.json")), serde_json::to_string_pretty(&report)?)?;
    eprintln!("fault run ({name}): {report}");
    let mut wrong = Vec::new();
    if load["succeeded"].as_u64() != Some(EXPECTED as u64) || load["failed"] != 0 {
        wrong.push(format!("{} of {EXPECTED} calls succeeded, {} did not", load["succeeded"], load["failed"]));
    }
    if load["distinctKeys"].as_u64() != Some(EXPECTED as u64) || load["keys"].as_u64() != Some(EXPECTED as u64) {
        wrong.push(format!("{} calls for {} keys: a call was lost or doubled", load["keys"], load["distinctKeys"]));
    }
    if effects_made != EXPECTED {
        wrong.push(format!("{effects_made} effects for {EXPECTED} keys"));
    }
    if reused > 0 {
        wrong.push(format!("{reused} calls were handed the same fencing token twice"));
    }
    if !wrong.is_empty() {
        bail!("the fault run found: {}", wrong.join("; "));
    }
    Ok(())
}
