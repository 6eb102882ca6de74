//! A second, independent verifier: Python scripts of the standard library only, with their own
//! RFC 6962 and Ed25519 code. `tests/python/check.py` checks a checkpoint this crate signed and
//! the proofs it made, and finds a forged one; `tests/python/export.py` checks a whole export (the
//! one `skill-core journal export` writes) and names what was changed in it.

use std::process::Command;

use serde_json::{Value, json};
use skill_journal::tree::{consistency_proof, inclusion_proof, leaf_hash, root};
use skill_journal::{Checkpoint, Hash, Signer};

fn hex(hash: &Hash) -> String {
    hash.iter().map(|b| format!("{b:02x}")).collect()
}

/// Runs the checker on `cases`: its exit code and what it printed.
fn check(cases: &Value) -> (i32, String) {
    let folder = std::env::temp_dir().join(format!("skill-journal-python-{}", std::process::id()));
    std::fs::create_dir_all(&folder).expect("a folder");
    let file = folder.join(format!("cases-{}.json", cases["tag"].as_str().unwrap_or("x")));
    std::fs::write(&file, cases.to_string()).expect("written");
    let python = std::env::var("SKILL_TEST_PYTHON").unwrap_or_else(|_| "python3".to_owned());
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/python/check.py");
    let output = Command::new(python).arg(script).arg(&file).output().expect("Python runs");
    let _ = std::fs::remove_file(&file);
    (
        output.status.code().unwrap_or(-1),
        format!("{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr)),
    )
}

#[test]
fn the_python_verifier_agrees_and_catches_a_forgery() {
    let entries: Vec<Vec<u8>> = (0_u32..21).map(|n| format!("{{\"entry\":{n}}}").into_bytes()).collect();
    let leaves: Vec<Hash> = entries.iter().map(|entry| leaf_hash(entry)).collect();
    let size = leaves.len() as u64;
    let signer = Signer::generate("skills.test").expect("a key");
    let checkpoint = Checkpoint { origin: "skills.test/journal".into(), size, root: root(&leaves[..], size) };
    let note = signer.sign(&checkpoint.body());
    let inclusion: Vec<Value> = [(0, 1), (0, 21), (5, 8), (13, 21), (20, 21), (16, 17)]
        .iter()
        .map(|&(index, size)| json!({"index": index, "size": size, "proof": inclusion_proof(&leaves[..], index, size).iter().map(hex).collect::<Vec<_>>()}))
        .collect();
    let consistency: Vec<Value> = [(1, 21), (4, 21), (6, 8), (7, 21), (16, 21), (20, 21), (21, 21)]
        .iter()
        .map(|&(first, second)| json!({"first": first, "second": second, "proof": consistency_proof(&leaves[..], first, second).iter().map(hex).collect::<Vec<_>>()}))
        .collect();
    let cases = json!({
        "tag": "good",
        "entries": entries.iter().map(|entry| entry.iter().map(|b| format!("{b:02x}")).collect::<String>()).collect::<Vec<_>>(),
        "origin": "skills.test/journal",
        "vkey": signer.verifier().text(),
        "note": note,
        "inclusion": inclusion,
        "consistency": consistency,
    });
    let (code, said) = check(&cases);
    assert_eq!(code, 0, "{said}");

    // A rewritten history re-signed by another key, a changed proof, a changed size: each found.
    let mut forged = cases.clone();
    forged["tag"] = json!("forged");
    forged["note"] = json!(Signer::generate("skills.test").expect("a key").sign(&checkpoint.body()));
    let first =
        forged["inclusion"][3]["proof"][0].as_str().expect("a hash").replacen('0', "1", 1).replacen('a', "b", 1);
    forged["inclusion"][3]["proof"][0] = json!(first);
    forged["consistency"][2]["second"] = json!(9);
    let (code, said) = check(&forged);
    assert_eq!(code, 1, "{said}");
    assert!(said.contains("the checkpoint: no signature by the key"), "{said}");
    assert!(said.contains("inclusion of 13 in 21"), "{said}");
    assert!(said.contains("consistency of 6 with 9"), "{said}");
}

/// Writes an export of `entries` (each with its payload) signed by `signer` at each of `sizes`.
fn write_export(folder: &std::path::Path, signer: &Signer, entries: &[(String, Value)], sizes: &[u64]) {
    use skill_journal::entry::{Entry, Event, clear_of};
    use skill_journal::export::{ExportedCheckpoint, ExportedEntry};
    std::fs::create_dir_all(folder).expect("a folder");
    let mut lines = String::new();
    let mut leaves = Vec::new();
    for (index, (kind, data)) in entries.iter().enumerate() {
        let clear = clear_of(kind, data);
        let id = format!("e-{index}");
        let subject = format!("task:t-{index}");
        let event = Event {
            id: &id,
            kind,
            subject: &subject,
            actor: None,
            request: None,
            at: "2026-12-05T00:00:00.000000Z",
            clear: &clear,
        };
        let salt = [index as u8; 16];
        let entry = Entry::new(&event, data, &salt);
        leaves.push(entry.leaf());
        let line = ExportedEntry {
            index: index as u64,
            leaf_hash: Some(entry.leaf()),
            entry: entry.bytes,
            payload: Some(skill_journal::entry::canonical(data)),
            salt: Some(salt.to_vec()),
        };
        lines.push_str(&line.line());
        lines.push('\n');
    }
    std::fs::write(folder.join("entries.jsonl"), lines).expect("written");
    let mut notes = String::new();
    for &size in sizes {
        let checkpoint =
            Checkpoint { origin: signer.verifier().name().to_owned(), size, root: root(&leaves[..], size) };
        notes.push_str(
            &ExportedCheckpoint { size, signed_at: String::new(), note: signer.sign(&checkpoint.body()) }.line(),
        );
        notes.push('\n');
    }
    std::fs::write(folder.join("checkpoints.jsonl"), notes).expect("written");
    std::fs::write(folder.join("key.txt"), signer.verifier().text()).expect("written");
}

fn check_export(folder: &std::path::Path, more: &[&str]) -> (i32, String) {
    let python = std::env::var("SKILL_TEST_PYTHON").unwrap_or_else(|_| "python3".to_owned());
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/python/export.py");
    let output = Command::new(python).arg(script).arg(folder).args(more).output().expect("Python runs");
    (
        output.status.code().unwrap_or(-1),
        format!("{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr)),
    )
}

#[test]
fn the_python_verifier_reads_an_export_and_finds_what_was_changed_in_it() {
    let folder = std::env::temp_dir().join(format!("skill-journal-export-{}", std::process::id()));
    let signer = Signer::generate("skills.test/journal").expect("a key");
    let entries: Vec<(String, Value)> = (0..13)
        .map(|n| {
            (
                "task.closed".to_owned(),
                json!({"n": n, "reason": "the customer wrote \"é\"\n", "nested": {"b": [1, null, true], "a": "x"}}),
            )
        })
        .collect();
    write_export(&folder, &signer, &entries, &[5, 13]);
    let (code, said) = check_export(&folder, &[]);
    assert_eq!(code, 0, "{said}");
    assert!(said.contains("13 entries, 2 checkpoints and 0 proofs hold; 0 payloads erased"), "{said}");

    // A payload changed, then the entry beside its stored hash: each named by its index.
    let text = std::fs::read_to_string(folder.join("entries.jsonl")).expect("read");
    let original: Vec<String> = text.lines().map(str::to_owned).collect();
    let changed = |field: &str, from: &str, to: &str| {
        let mut lines = original.clone();
        let mut line: Value = serde_json::from_str(&lines[4]).expect("JSON");
        line[field] = json!(line[field].as_str().expect("a string").replace(from, to));
        lines[4] = line.to_string();
        std::fs::write(folder.join("entries.jsonl"), lines.join("\n") + "\n").expect("written");
    };
    changed("payload", "\"n\":4", "\"n\":40");
    let (code, said) = check_export(&folder, &[]);
    assert_eq!(code, 2, "{said}");
    assert!(said.contains("index 4: the payload is not the one its digest commits to"), "{said}");
    changed("entry", "task:t-4", "task:t-X");
    let (code, said) = check_export(&folder, &[]);
    assert_eq!(code, 2, "{said}");
    assert!(said.contains("index 4: the entry does not hash to its stored leaf"), "{said}");
    assert!(said.contains("index 0: the entries do not hash to the checkpoint of 5"), "{said}");
    // The tail cut, against a checkpoint kept elsewhere.
    write_export(&folder, &signer, &entries[..11], &[5]);
    let trusted = folder.join("trusted.note");
    let all = folder.join("all");
    write_export(&all, &signer, &entries, &[13]);
    let line = std::fs::read_to_string(all.join("checkpoints.jsonl")).expect("read");
    let note: Value = serde_json::from_str(line.trim()).expect("JSON");
    std::fs::write(&trusted, note["note"].as_str().expect("a note")).expect("written");
    let (code, said) = check_export(&folder, &["--trust", &trusted.display().to_string()]);
    assert_eq!(code, 2, "{said}");
    assert!(said.contains("index 11: the trusted checkpoint signs 13 entries, the export holds 11"), "{said}");
    // What cannot be read is a line, not a traceback: no key, and a line that is not an entry.
    let (code, said) = check_export(&folder, &["--key", "not-a-key"]);
    assert_eq!(code, 1, "{said}");
    assert!(said.contains("the key is not name+id+key") && !said.contains("Traceback"), "{said}");
    std::fs::write(folder.join("entries.jsonl"), "{\"index\": 0.0, \"entry\": \"{}\"}\n").expect("written");
    let (code, said) = check_export(&folder, &[]);
    assert_eq!(code, 2, "{said}");
    assert!(said.contains("index 0: the line cannot be read") && !said.contains("Traceback"), "{said}");
    let _ = std::fs::remove_dir_all(&folder);
}
