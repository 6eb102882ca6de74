//! `docs/openapi.json` is what `skill-core openapi` prints, so every API change shows in a diff.

use std::process::Command;

use crate::running::CORE;

#[test]
fn the_committed_openapi_document_is_the_printed_one() {
    let output = Command::new(CORE).arg("openapi").output().expect("skill-core runs");
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let printed = String::from_utf8(output.stdout).expect("UTF-8");
    let file = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/openapi.json");
    let committed = std::fs::read_to_string(&file).unwrap_or_default();
    assert!(
        committed == printed,
        "docs/openapi.json differs from `skill-core openapi`: run `cargo run -p skill-core -- openapi > docs/openapi.json` and commit it"
    );
}
