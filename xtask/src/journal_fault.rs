//! The journal's crash run: calls of the demo host's `record@1` flow through a core on SQLite or
//! PostgreSQL (the load generator invoking, the executor claiming and completing, the core
//! signing checkpoints), while the core is killed (`kill -9`) at a random moment of its work and
//! started again, 1,000 times by default. Then it checks what the journal promises: as many leaves
//! as events, their indices gap-free, every complete subtree's hash stored, and the export
//! verifying against every checkpoint signed between the kills. Figures go to
//! `target/fault/journal-<backend>.json`.
//!
//! `cargo xtask fault journal [sqlite|postgres] [--kills N]`

use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use serde_json::json;

use crate::core_run::{Tokens, build, output, publish_demo, release, start};
use crate::target_dir;

/// The counts that must agree, from SQL on the database.
const COUNTS: &str = "SELECT (SELECT count(*) FROM events), (SELECT count(*) FROM journal_leaves), \
     (SELECT size FROM journal_head), (SELECT coalesce(max(idx), -1) + 1 FROM journal_leaves), \
     (SELECT count(*) FROM events e LEFT JOIN journal_leaves l ON l.event_seq = e.seq WHERE l.idx IS NULL), \
     (SELECT count(*) FROM journal_nodes), (SELECT count(*) FROM journal_checkpoints)";

/// The counts of [`COUNTS`], by the database's own client.
fn counts(backend: &str, db: &str) -> Result<Vec<u64>> {
    let text = match backend {
        "sqlite" => {
            let file = std::path::Path::new(db).join("core.db");
            let script = format!(
                "import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); print('|'.join(str(v) for v in c.execute(\"{COUNTS}\").fetchone()))"
            );
            output(Command::new("python3").args(["-c", &script, &file.display().to_string()]))?
        }
        _ => output(Command::new("psql").args([db, "-At", "-c", COUNTS]))?,
    };
    text.trim().split('|').map(|n| n.parse::<u64>().with_context(|| format!("a count in {text:?}"))).collect()
}

/// How many rows `journal_nodes` holds for a tree of `size` leaves: every complete subtree.
fn nodes_of(size: u64) -> u64 {
    (0..64).map(|level| size >> level).sum()
}

#[allow(
    clippy::too_many_lines,
    reason = "a fault run is one script: start, kill mid-write at random, then verify, read top to bottom"
)]
pub(crate) fn journal_fault(backend: &str, kills: usize) -> Result<()> {
    build("build the core, the demo host and the load generator (release)", &[])?;
    let folder = target_dir().join("fault").join(format!("journal-{backend}"));
    let _ = std::fs::remove_dir_all(&folder);
    let effects = folder.join("effects");
    std::fs::create_dir_all(&effects)?;
    let mut postgres = None;
    let db = match backend {
        "sqlite" => folder.join("data").display().to_string(),
        "postgres" => {
            let server = crate::postgres::Postgres::start_durable()?;
            let url = server.database("skill_journal_fault")?;
            postgres = Some(server);
            url
        }
        other => bail!("the journal's crash run is on sqlite or postgres, not {other}"),
    };
    let core = release("skill-core");
    let key = folder.join("journal.key");
    output(Command::new(&core).args(["journal", "keygen", "--name", "fault.example/journal", "--out"]).arg(&key))?;
    let Tokens { admin, caller, executor: executor_token } = Tokens::create(&db)?;
    let listen = crate::core_run::free_listen()?;
    let url = format!("http://{listen}");
    let log = folder.join("core.log");
    let serve = || {
        let mut command = Command::new(&core);
        command.args(["serve", "--db", &db, "--listen", &listen, "--journal-key"]).arg(&key).env("SKILL_LOG", "warn");
        command
    };
    let mut served = start(&mut serve(), &log, " on http://")?.0;
    publish_demo(&url, &admin, "record@1")?;
    let _executor = start(
        Command::new(release("examples/demo_host"))
            .args(["execute", "--core", &url, "--concurrency", "16", "--grace", "1"])
            .env("SKILL_CORE_TOKEN", &executor_token)
            .env("DEMO_EFFECTS_DIR", &effects)
            .env("SKILL_LOG", "warn,skill_host::execute=info"),
        &folder.join("executor.log"),
        "executing the local skills",
    )?
    .0;
    // Invoking all along (a refused invoke while the core is down is only a lost request).
    let _load = crate::core_run::Process::spawned(
        Command::new(release("examples/core_load"))
            .args(["--core", &url, "--token", &caller, "--skill", "record@1", "--rate", "200", "--seconds", "100000"])
            .args(["--key-prefix", "journal-"])
            .stdout(std::process::Stdio::null())
            .stderr(std::fs::File::create(folder.join("load.log"))?),
    )?;
    let started = Instant::now();
    // A pseudo-random moment of the core's work, from the clock (no seeded generator needed).
    let mut seed = u64::from(started.elapsed().subsec_nanos()) | 1;
    for kill in 0..kills {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        std::thread::sleep(Duration::from_millis(50 + seed % 350));
        served.kill();
        served = start(&mut serve(), &log, " on http://")?.0;
        if kill % 100 == 99 {
            let now = counts(backend, &db)?;
            eprintln!("    {} kills, {} events, {} leaves", kill + 1, now[0], now[1]);
        }
    }
    let elapsed = started.elapsed().as_secs_f64();
    // The last core signs what the others left: a second or two with nothing killed.
    std::thread::sleep(Duration::from_secs(3));
    drop(_load);
    std::thread::sleep(Duration::from_secs(2));
    drop(served);
    let [events, leaves, head, next, orphans, nodes, checkpoints] = counts(backend, &db)?[..] else {
        bail!("seven counts")
    };
    let export = folder.join("export");
    output(Command::new(&core).args(["journal", "export", "--db", &db, "--out"]).arg(&export))?;
    let verified = Command::new(&core).args(["journal", "verify"]).arg(&export).output()?;
    let said = String::from_utf8_lossy(&verified.stdout).trim().to_owned();
    let figures = json!({
        "backend": backend, "kills": kills, "seconds": elapsed, "events": events, "leaves": leaves, "head": head,
        "nextIndex": next, "eventsWithoutLeaf": orphans, "nodes": nodes, "nodesExpected": nodes_of(leaves),
        "checkpoints": checkpoints, "verify": said, "verifyExit": verified.status.code(),
    });
    std::fs::write(folder.with_extension("json"), serde_json::to_string_pretty(&figures)?)?;
    println!("{figures}");
    drop(postgres);
    if events != leaves || leaves != head || head != next || orphans != 0 {
        bail!("the journal lost its count: {figures}");
    }
    if nodes != nodes_of(leaves) {
        bail!("the tree's hashes are not all stored: {figures}");
    }
    if !verified.status.success() || checkpoints < 2 {
        bail!("the export does not verify against the checkpoints signed between the kills: {figures}");
    }
    Ok(())
}
