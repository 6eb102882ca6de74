//! `skill-sdk package test`: the claims package's own scenario tests pass through every stage;
//! copies broken on purpose fail with the code, the path in the test file, and what was expected
//! against what happened.

use std::process::Command;

use serde_json::Value;

use crate::package::{Copy, SDK, core_binary, example, serve, text};

/// `package test --json` on `copy` (`extra` arguments after): the exit code and the report.
fn tested(copy: &Copy, extra: &[&str]) -> (Option<i32>, Value) {
    let mut args = vec!["test", "--json"];
    args.extend_from_slice(extra);
    let output = copy.sdk(&args, None);
    let report = serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|error| panic!("JSON ({error}): {} {}", text(&output.stdout), text(&output.stderr)));
    (output.status.code(), report)
}

/// The outcome of the test named `name`.
fn outcome<'a>(report: &'a Value, file: &str) -> &'a Value {
    report["scenarios"]["tests"]
        .as_array()
        .and_then(|tests| tests.iter().find(|test| test["file"] == file))
        .unwrap_or_else(|| panic!("no outcome of {file}: {report}"))
}

fn stage<'a>(report: &'a Value, name: &str) -> &'a str {
    report["stages"]
        .as_array()
        .and_then(|stages| stages.iter().find(|stage| stage["stage"] == name))
        .and_then(|stage| stage["status"].as_str())
        .unwrap_or_default()
}

#[test]
fn the_claims_package_passes_every_stage() {
    let junit = skill_fixtures::Scratch::new("skill-package-test-junit");
    let file = junit.path().join("junit.xml");
    // The package as it is in the repository: its integration crate is built and its skill
    // files compared with the code, then the check, then the scenarios — in the skill-core
    // beside skill-sdk, found without being named.
    core_binary();
    let output = Command::new(SDK)
        .args(["package", "test", "--package"])
        .arg(example())
        .arg("--junit")
        .arg(&file)
        .env_remove("CI")
        .env_remove("SKILL_CORE_BIN")
        .output()
        .expect("skill-sdk runs");
    let said = text(&output.stdout);
    assert_eq!(output.status.code(), Some(0), "{said}{}", text(&output.stderr));
    for line in ["contracts  passed", "check      passed", "scenarios  passed   4 passed, 0 failed"] {
        assert!(said.contains(line), "{line:?} in {said}");
    }
    assert!(said.contains("ok   a claim is answered, then followed up once a week later"), "{said}");
    let xml = std::fs::read_to_string(&file).expect("the JUnit file");
    assert_eq!(xml.matches("<testcase ").count(), 4, "{xml}");
    assert!(xml.contains("failures=\"0\"") && !xml.contains("<failure"), "{xml}");
}

#[test]
fn broken_scenarios_fail_saying_where_and_why() {
    // A mock output outside the skill's output schema, before any step runs.
    let copy = Copy::new("scenario-schema");
    copy.edit("tests/claim-reply.test.yaml", "{status: sent, message_id: m-1}", "{status: lost, message_id: m-1}");
    let (code, report) = tested(&copy, &[]);
    assert_eq!((code, stage(&report, "scenarios")), (Some(1), "failed"));
    let failure = &outcome(&report, "tests/claim-reply.test.yaml")["failure"];
    assert_eq!(
        (failure["code"].as_str(), failure["path"].as_str()),
        (Some("mock_output_invalid"), Some("mocks.skills.claim.send_reply@1[0].output")),
        "{failure}"
    );
    assert!(failure["message"].as_str().is_some_and(|m| m.contains("/status")), "{failure}");
    assert_eq!(outcome(&report, "tests/claim-handling.test.yaml")["passed"], true, "the others still pass");

    // A call no mock answers: a failure naming the version, with the hint; with
    // --allow-unmocked a warning, and the reply is never sent (so the task stays open).
    let copy = Copy::new("scenario-unmocked");
    copy.edit(
        "tests/claim-reply.test.yaml",
        "    claim.send_reply@1:\n    - output: {status: sent, message_id: m-1}\n",
        "    {}\n",
    );
    copy.edit("tests/claim-reply.test.yaml", "mocks:\n  skills:\n    {}\n", "");
    let (code, report) = tested(&copy, &[]);
    assert_eq!(code, Some(1));
    let failure = &outcome(&report, "tests/claim-reply.test.yaml")["failure"];
    assert_eq!(failure["code"], "unmocked_skill_call", "{failure}");
    assert!(failure["message"].as_str().is_some_and(|m| m.contains("claim.send_reply@1")), "{failure}");
    assert_eq!(failure["hint"].as_str().map(|h| h.starts_with("add mocks.skills.claim.send_reply@1")), Some(true));
    let (code, report) = tested(&copy, &["--allow-unmocked"]);
    let test = outcome(&report, "tests/claim-reply.test.yaml");
    assert_eq!(code, Some(1));
    assert_eq!(test["warnings"][0]["code"], "unmocked_skill_call", "{test}");
    assert_eq!(
        (test["failure"]["code"].as_str(), test["failure"]["path"].as_str(), test["failure"]["actual"].as_str()),
        (Some("expectation_failed"), Some("steps[2].expect.status"), Some("open")),
        "{test}"
    );

    // A wrong expectation: where, what was expected, what happened.
    let copy = Copy::new("scenario-expect");
    copy.edit("tests/claim-handling.test.yaml", "    step: review\n", "    step: week\n");
    let (code, report) = tested(&copy, &[]);
    assert_eq!(code, Some(1));
    let failure = &outcome(&report, "tests/claim-handling.test.yaml")["failure"];
    assert_eq!(
        (failure["path"].as_str(), failure["expected"].as_str(), failure["actual"].as_str()),
        (Some("steps[1].expect.step"), Some("week"), Some("review")),
        "{failure}"
    );
    // An external write where none is expected is named, with its inputs.
    let copy = Copy::new("scenario-write");
    copy.edit("tests/claim-reply.test.yaml", "    status: done\n", "    status: done\n    noSideEffects: true\n");
    let (_, report) = tested(&copy, &[]);
    let failure = &outcome(&report, "tests/claim-reply.test.yaml")["failure"];
    assert_eq!(failure["path"], "steps[2].expect.noSideEffects", "{failure}");
    assert_eq!(failure["actual"][0]["skill"], "claim.send_reply@1", "{failure}");

    // A rule that would request an external write never reaches the scenarios: the check refuses it.
    let copy = Copy::new("scenario-rule");
    copy.edit("rules/claim-intake.yaml", "skill: claim.classify@1", "skill: claim.send_reply@1");
    let (code, report) = tested(&copy, &[]);
    assert_eq!((code, stage(&report, "check"), stage(&report, "scenarios")), (Some(1), "failed", "skipped"));

    // A test file that cannot be read fails as itself, and says why; the rest run.
    let copy = Copy::new("scenario-invalid");
    copy.edit("tests/claim-reply-rejected.test.yaml", "- approve:", "- verify:");
    std::fs::write(copy.package().join("tests/broken.test.yaml"), "name: [unclosed").expect("a file");
    let (code, report) = tested(&copy, &[]);
    assert_eq!(code, Some(1));
    let failure = &outcome(&report, "tests/claim-reply-rejected.test.yaml")["failure"];
    assert_eq!((failure["code"].as_str(), failure["path"].as_str()), (Some("invalid_test"), Some("steps[0].verify")));
    assert_eq!(outcome(&report, "tests/broken.test.yaml")["failure"]["code"], "invalid_test");
    assert_eq!(report["scenarios"]["passed"], 3, "{report}");

    // --only runs the tests whose file or name holds the text: a file's part, a name's part.
    let (code, report) = tested(&copy, &["--only", "claim-reply.", "--only", "classified"]);
    let files: Vec<&str> =
        report["scenarios"]["tests"].as_array().into_iter().flatten().filter_map(|t| t["file"].as_str()).collect();
    assert_eq!(files, ["tests/claim-intake.test.yaml", "tests/claim-reply.test.yaml"], "{report}");
    assert_eq!(code, Some(0), "{report}");
    let (code, report) = tested(&copy, &["--only", "no-such-test"]);
    assert_eq!((code, stage(&report, "scenarios")), (Some(1), "failed"), "{report}");
    assert!(report.to_string().contains("no-such-test"), "{report}");
}

/// What a run came to, test by test, without the times: `(file, passed, code, path, expected,
/// actual)`.
fn results(report: &Value) -> Vec<(String, bool, Value, Value, Value, Value)> {
    let tests = report["scenarios"]["tests"].as_array().cloned().unwrap_or_else(|| panic!("tests: {report}"));
    tests
        .iter()
        .map(|test| {
            let failure = &test["failure"];
            (
                test["file"].as_str().unwrap_or_default().to_owned(),
                test["passed"] == true,
                failure["code"].clone(),
                failure["path"].clone(),
                failure["expected"].clone(),
                failure["actual"].clone(),
            )
        })
        .collect()
}

#[test]
fn the_same_tests_run_on_a_core_alike_and_leave_nothing_there() {
    let core = serve("scenarios");
    let at = Some((core.url.as_str(), core.token.as_str()));
    let copy = Copy::new("scenario-core");
    let applied = copy.sdk(&["apply"], at);
    assert_eq!(applied.status.code(), Some(0), "{}", text(&applied.stderr));
    let clerk = core.person("clerk", &["skills.invoke", "tasks.write@claims"]);
    let before = core.row_counts();
    assert!(before["skills"] >= 5 && before["events"] > 0, "{before:?}");

    // The claims package's tests: passed alike, on this process's scratch core and on the core's.
    let on_core = |copy: &Copy| {
        let output = copy.sdk(&["test", "--json"], at);
        let report: Value = serde_json::from_slice(&output.stdout)
            .unwrap_or_else(|error| panic!("JSON ({error}): {} {}", text(&output.stdout), text(&output.stderr)));
        (output.status.code(), report)
    };
    let (code, embedded) = tested(&copy, &[]);
    assert_eq!(code, Some(0), "{embedded}");
    let (code, remote) = on_core(&copy);
    assert_eq!(code, Some(0), "{remote}");
    assert_eq!(results(&remote), results(&embedded));
    assert_eq!(results(&remote).len(), 4);

    // A wrong expectation fails alike: the same path, expected and actual.
    copy.edit("tests/claim-handling.test.yaml", "    step: review\n", "    step: week\n");
    let (code, embedded) = tested(&copy, &[]);
    assert_eq!(code, Some(1));
    let (code, remote) = on_core(&copy);
    assert_eq!(code, Some(1));
    assert_eq!(results(&remote), results(&embedded));
    assert!(results(&remote).iter().any(|test| test.3 == "steps[1].expect.step"), "{remote}");
    copy.edit("tests/claim-handling.test.yaml", "    step: week\n", "    step: review\n");

    // A skill changed without a new version: the core runs the tests with the version it has
    // published (so the mock still fits it), and says the package's differs.
    copy.edit("skills/claim.send_reply.yaml", "const: sent", "const: delivered");
    let (_, embedded) = tested(&copy, &[]);
    assert_eq!(outcome(&embedded, "tests/claim-reply.test.yaml")["failure"]["code"], "mock_output_invalid");
    let (code, remote) = on_core(&copy);
    assert_eq!(code, Some(0), "{remote}");
    let warnings = remote["scenarios"]["warnings"].as_array().cloned().unwrap_or_default();
    assert_eq!(warnings.len(), 1, "{remote}");
    assert_eq!(warnings[0]["code"], "published_differs");
    assert!(warnings[0]["message"].as_str().is_some_and(|m| m.contains("claim.send_reply@1")), "{remote}");

    // None of it stayed in the core's data: every table has the rows it had.
    assert_eq!(core.row_counts(), before);

    // Only who may install may test on a core.
    let output = copy.sdk(&["test", "--json"], Some((core.url.as_str(), clerk.as_str())));
    let report: Value = serde_json::from_slice(&output.stdout).expect("JSON");
    assert_eq!((output.status.code(), stage(&report, "scenarios")), (Some(1), "failed"));
    let said = report["stages"].to_string();
    assert!(said.contains("permission_denied") || said.contains("org.manage"), "{said}");
    assert_eq!(core.row_counts(), before);
}

#[test]
fn without_a_skill_core_the_scenarios_stage_says_how_to_get_one() {
    // skill-sdk alone in a folder, nothing on PATH: the check passes, the scenarios cannot run.
    let alone = skill_fixtures::Scratch::new("skill-sdk-alone");
    let sdk = alone.path().join("skill-sdk");
    std::fs::copy(SDK, &sdk).expect("a copy of skill-sdk");
    let copy = Copy::new("no-core");
    let run = |core: Option<&str>| {
        let mut command = Command::new(&sdk);
        command.args(["package", "test", "--json", "--skip-contracts", "--package"]).arg(copy.package());
        command.env("PATH", "").env_remove("CI").env_remove("SKILL_CORE_BIN");
        if let Some(core) = core {
            command.env("SKILL_CORE_BIN", core);
        }
        let output = command.output().expect("skill-sdk runs");
        let report: Value = serde_json::from_slice(&output.stdout)
            .unwrap_or_else(|error| panic!("JSON ({error}): {} {}", text(&output.stdout), text(&output.stderr)));
        (output.status.code(), report)
    };
    let (code, report) = run(None);
    assert_eq!(code, Some(1), "{report}");
    assert_eq!(stage(&report, "check"), "passed", "{report}");
    assert_eq!(stage(&report, "scenarios"), "failed", "{report}");
    let detail = report["stages"][2]["detail"].as_str().unwrap_or_default();
    assert!(detail.contains("cargo build -p skill-core") && detail.contains("--core URL"), "{detail}");
    let missing = alone.path().join("nowhere/skill-core");
    let (code, report) = run(Some(missing.to_str().expect("a UTF-8 path")));
    assert_eq!(code, Some(1), "{report}");
    let detail = report["stages"][2]["detail"].as_str().unwrap_or_default();
    assert!(detail.contains("SKILL_CORE_BIN names") && detail.contains("nowhere/skill-core"), "{detail}");
}

#[test]
fn skill_core_scenarios_refuses_what_is_not_a_test_request_on_stdin() {
    use std::io::Write as _;
    let mut child = Command::new(core_binary())
        .arg("scenarios")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("skill-core runs");
    child.stdin.take().expect("stdin").write_all(br#"{"tests": "none"}"#).expect("written");
    let output = child.wait_with_output().expect("it ends");
    assert_eq!(output.status.code(), Some(1));
    assert!(output.stdout.is_empty(), "no answer: {}", text(&output.stdout));
    let said = text(&output.stderr);
    assert!(said.contains("no package test request") && said.contains("POST /api/v1/packages:test"), "{said}");
}
