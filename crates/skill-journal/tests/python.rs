//! A second, independent verifier: a Python script of the standard library only
//! (`tests/python/check.py`, with its own RFC 6962 and Ed25519 code) checks a checkpoint this
//! crate signed and the proofs it made, and finds a forged one.

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
