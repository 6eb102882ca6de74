//! Writes a journal export of `N` entries (default 1,000,000) to a folder, as `skill-core journal
//! export` writes one: calls with external writes, each on its own approval asked by one person
//! and decided by another, claimed and ended — five entries a call, each with its payload and
//! salt — and a checkpoint signed every 256 entries. `cargo xtask bench journal` times `skill-core
//! journal verify` on it.
//!
//! ```text
//! cargo run --release -p skill-journal --example export_million -- OUT [N]
//! ```

#![allow(clippy::print_stdout)]

use std::io::Write as _;

use serde_json::{Value, json};
use skill_journal::entry::{Entry, Event, clear_of};
use skill_journal::export::{CHECKPOINTS_FILE, ENTRIES_FILE, ExportedCheckpoint, ExportedEntry, KEY_FILE};
use skill_journal::tree::{Levels, leaf_hash, root};
use skill_journal::{Checkpoint, Signer};

/// The five events of call `n`.
fn call(n: u64) -> [(&'static str, String, Value); 5] {
    let (approval, call, task) = (format!("a-{n:012}"), format!("c-{n:012}"), format!("t-{n:012}"));
    [
        (
            "approval.requested",
            format!("approval:{approval}"),
            json!({"taskId": task, "gate": true, "requestedBy": "01a243e7-5eb2-727f-be69-e50c52976439", "callSkillId": null}),
        ),
        (
            "approval.decided",
            format!("approval:{approval}"),
            json!({"taskId": task, "outcome": "approved", "decidedBy": "01a243e7-5eb2-727f-be69-000000000002",
                   "tokenId": "01a243e7-5eb2-727f-be69-000000000003", "grants": ["approvals.decide@claims"],
                   "gate": true, "actions": 1}),
        ),
        (
            "skill.invocation_requested",
            format!("skill_invocation:{call}"),
            json!({"skillId": "s-1", "skill": "claim.send_reply", "version": "1", "sideEffects": "external_write",
                   "riskLevel": "medium", "requestedBy": {"kind": "principal", "ref": "core.execution"},
                   "taskId": task, "runId": null,
                   "authorizationBasis": {"kind": "approval", "approvalId": approval,
                                          "decidedBy": "01a243e7-5eb2-727f-be69-000000000002"}}),
        ),
        (
            "skill.invocation_claimed",
            format!("skill_invocation:{call}"),
            json!({"skillId": "s-1", "attempt": 1, "fencingToken": n, "leaseExpiresAt": "2026-12-05T01:53:46Z"}),
        ),
        (
            "skill.invocation_succeeded",
            format!("skill_invocation:{call}"),
            json!({"skillId": "s-1", "skill": "claim.send_reply", "version": "1", "attempt": 1, "taskId": task,
                   "runId": null, "artifactId": null, "cost": {"usd": 0}, "outputs": null}),
        ),
    ]
}

fn main() -> std::io::Result<()> {
    let mut args = std::env::args().skip(1);
    let out = std::path::PathBuf::from(args.next().expect("an output folder"));
    let count: u64 = args.next().and_then(|n| n.parse().ok()).unwrap_or(1_000_000);
    std::fs::create_dir_all(&out)?;
    let signer = Signer::generate("bench.example/journal").expect("a key");
    std::fs::write(out.join(KEY_FILE), format!("{}\n", signer.verifier().text()))?;
    let mut entries = std::io::BufWriter::new(std::fs::File::create(out.join(ENTRIES_FILE))?);
    let mut leaves = Vec::with_capacity(count as usize);
    let mut index = 0_u64;
    'calls: for n in 0.. {
        for (kind, subject, data) in call(n) {
            if index == count {
                break 'calls;
            }
            let clear = clear_of(kind, &data);
            let id = format!("01a243e7-5eb2-727f-be69-{index:012}");
            let at = format!("2026-12-05T01:52:46.{:06}Z", index % 1_000_000);
            let event = Event {
                id: &id,
                kind,
                subject: &subject,
                actor: Some("01a243e7-5eb2-727f-be69-e50c52976439"),
                request: None,
                at: &at,
                clear: &clear,
            };
            let salt = [(index % 251) as u8; 16];
            let entry = Entry::new(&event, &data, &salt);
            let leaf = leaf_hash(entry.bytes.as_bytes());
            leaves.push(leaf);
            let line = ExportedEntry {
                index,
                entry: entry.bytes,
                leaf_hash: Some(leaf),
                payload: Some(skill_journal::entry::canonical(&data)),
                salt: Some(salt.to_vec()),
            };
            writeln!(entries, "{}", line.line())?;
            index += 1;
        }
    }
    entries.flush()?;
    let tree = Levels::new(leaves);
    let mut checkpoints = String::new();
    let sizes = (1..=count / 256).map(|k| k * 256).chain((!count.is_multiple_of(256)).then_some(count));
    let mut signed = 0;
    for size in sizes {
        let checkpoint = Checkpoint { origin: "bench.example/journal".into(), size, root: root(&tree, size) };
        let line = ExportedCheckpoint { size, signed_at: String::new(), note: signer.sign(&checkpoint.body()) };
        checkpoints.push_str(&line.line());
        checkpoints.push('\n');
        signed += 1;
    }
    std::fs::write(out.join(CHECKPOINTS_FILE), checkpoints)?;
    println!("{{\"entries\":{count},\"checkpoints\":{signed}}}");
    Ok(())
}
