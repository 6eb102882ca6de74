//! `skill-sdk call` and `skill-sdk calls` against a core served by this test, with the claims
//! package applied and its host running as the local executor (`skill-sdk execute`).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use rustix::process::Signal;
use serde_json::Value;
use skill_fixtures::{Output as Stream, Running};

use crate::package::serve;

const SDK: &str = env!("CARGO_BIN_EXE_skill-sdk");

fn example() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/claims")
}

fn sdk(args: &[&str], core: &str, token: &str) -> Output {
    Command::new(SDK).args(args).args(["--core", core]).env("SKILL_CORE_TOKEN", token).output().expect("skill-sdk runs")
}

fn json(output: &Output) -> Value {
    serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|error| panic!("{error}: {}", String::from_utf8_lossy(&output.stdout)))
}

#[test]
fn a_person_calls_skills_through_the_core_and_lists_the_calls() {
    let core = serve("calls");
    let package = example().display().to_string();
    let applied = Command::new(SDK)
        .args(["package", "apply", "--package", &package, "--core", &core.url])
        .env("SKILL_CORE_TOKEN", &core.token)
        .output()
        .expect("skill-sdk runs");
    assert!(applied.status.success(), "{}", String::from_utf8_lossy(&applied.stderr));
    let caller = core.person("caller", &["skills.invoke", "claims.reply"]);
    let executor_token = core.executor("runner", &["skills.execute"], &["claims_integration"]);
    let mut executor = Command::new(SDK);
    executor
        .args(["execute", "--package", &package, "claims-integration", "--core", &core.url, "--grace", "2"])
        .env("SKILL_CORE_TOKEN", &executor_token);
    let mut executor = Running::start(executor, Stream::Stderr);
    executor.until(300, |line| line.contains("executing the local skills of this host"));

    let classified = sdk(
        &["call", "claim.classify@1", "--input", r#"{"text": "The courier lost my parcel."}"#, "--wait", "20"],
        &core.url,
        &caller,
    );
    assert_eq!(
        classified.status.code(),
        Some(0),
        "{}{}",
        String::from_utf8_lossy(&classified.stderr),
        String::from_utf8_lossy(&classified.stdout)
    );
    let classified = json(&classified);
    assert_eq!(
        (classified["status"].as_str(), classified["outputs"]["category"].as_str()),
        (Some("succeeded"), Some("delivery")),
        "{classified}"
    );

    // Refused by the core: the envelope, exit 1.
    let send = sdk(
        &[
            "call",
            "claim.send_reply@1",
            "--input",
            r#"{"claim": "c-1", "comment": "Sorry."}"#,
            "--idempotency-key",
            "k-1",
        ],
        &core.url,
        &caller,
    );
    assert_eq!(send.status.code(), Some(1));
    assert_eq!(json(&send)["error"]["code"], "skill_side_effect_not_authorized");
    let bad = sdk(&["call", "claim.classify@1", "--input", "{}"], &core.url, &caller);
    assert_eq!(
        (bad.status.code(), json(&bad)["error"]["code"].as_str().map(str::to_owned)),
        (Some(1), Some("invalid_skill_inputs".to_owned()))
    );
    let usage = sdk(&["call", "claim.classify@1", "--input", "[1]"], &core.url, &caller);
    assert_eq!(usage.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&usage.stderr).contains("--input"));

    // No executor: the call waits, and says why.
    executor.signal(Signal::TERM);
    let (code, lines) = executor.wait_within(30);
    assert_eq!(code, 0, "{lines:?}");
    let waiting = sdk(
        &["call", "claim.classify@1", "--input", r#"{"text": "Broken on arrival."}"#, "--wait", "1"],
        &core.url,
        &caller,
    );
    assert_eq!(waiting.status.code(), Some(3));
    assert_eq!(json(&waiting)["waiting"]["reason"], "no_executor");
    assert!(
        String::from_utf8_lossy(&waiting.stderr).contains("still pending"),
        "{}",
        String::from_utf8_lossy(&waiting.stderr)
    );

    let listed = sdk(&["calls", "--limit", "5"], &core.url, &caller);
    assert_eq!(listed.status.code(), Some(0));
    let text = String::from_utf8_lossy(&listed.stdout).into_owned();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 2, "{text}");
    assert!(
        lines[0].contains("claim.classify@1")
            && lines[0].contains("pending")
            && lines[0].contains("waiting: no_executor"),
        "{text}"
    );
    assert!(lines[1].contains("succeeded") && lines[1].contains("1/1"), "{text}");
    let page = json(&sdk(&["calls", "--status", "succeeded", "--json"], &core.url, &caller));
    assert_eq!(page["items"].as_array().map(Vec::len), Some(1));
}
