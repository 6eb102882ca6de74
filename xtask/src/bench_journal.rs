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
