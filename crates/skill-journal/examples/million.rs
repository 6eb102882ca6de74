//! How long rebuilding the journal's tree takes offline: hashes `N` entries of about 300 bytes
//! (default 1,000,000) into leaves, then every level of the tree and the root, then an inclusion proof for every 1,000th leaf
//! and its check. Prints one JSON line of timings.
//!
//! ```text
//! cargo run --release -p skill-journal --example million -- 1000000
//! ```

#![allow(clippy::print_stdout)]

use std::time::Instant;

use skill_journal::Nodes as _;
use skill_journal::tree::{inclusion_proof, leaf_hash, root, verify_inclusion};
use skill_journal::{Hash, Levels};

fn main() {
    let count: u64 = std::env::args().nth(1).and_then(|n| n.parse().ok()).unwrap_or(1_000_000);
    let started = Instant::now();
    let leaves: Vec<Hash> = (0..count)
        .map(|n| {
            let entry = format!(
                "{{\"actor\":\"01a243e7-5eb2-727f-be69-e50c52976439\",\"at\":\"2026-12-05T01:52:46.{n:06}Z\",\
                 \"data\":\"sha256:9c3a6d0f1e2b4a579c3a6d0f1e2b4a579c3a6d0f1e2b4a579c3a6d0f1e2b4a57\",\
                 \"id\":\"01a243e7-5eb2-727f-be69-{n:012}\",\"kind\":\"skill_invocation.succeeded\",\
                 \"request\":\"01a243e7-5f66-77cd-9bf6-9caa16d8b913\",\"subject\":\"skill_invocation:{n}\"}}"
            );
            leaf_hash(entry.as_bytes())
        })
        .collect();
    let hashed = started.elapsed();
    let tree = Levels::new(leaves);
    let top = root(&tree, count);
    let rooted = started.elapsed();
    let mut checked = 0;
    for index in (0..count).step_by(1000) {
        let proof = inclusion_proof(&tree, index, count);
        assert!(verify_inclusion(index, count, &tree.node(0, index), &proof, &top));
        checked += 1;
    }
    let proved = started.elapsed();
    println!(
        "{{\"entries\":{count},\"leavesSeconds\":{:.3},\"rootSeconds\":{:.3},\"proofs\":{checked},\"proofsSeconds\":{:.3}}}",
        hashed.as_secs_f64(),
        (rooted - hashed).as_secs_f64(),
        (proved - rooted).as_secs_f64()
    );
}
