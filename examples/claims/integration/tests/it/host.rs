//! The host binary of the claims package, run as a user runs it: output, files and exit codes.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use skill_fixtures::Running;

const HOST: &str = env!("CARGO_BIN_EXE_claims-integration");

fn package() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn host(args: &[&str]) -> Output {
    Command::new(HOST).args(args).env_remove("CLAIMS_OUTBOX_DIR").output().expect("the host runs")
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// A scratch copy of the package's files, removed on drop.
struct Scratch(PathBuf);

impl Scratch {
    fn new(label: &str) -> Self {
        let path = std::env::temp_dir().join(format!("claims-host-{label}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&path);
        let package = path.join("claims");
        std::fs::create_dir_all(package.join("skills")).expect("scratch");
        for entry in std::fs::read_dir(package_dir().join("skills")).expect("skills") {
            let entry = entry.expect("entry");
            std::fs::copy(entry.path(), package.join("skills").join(entry.file_name())).expect("copy");
        }
        std::fs::copy(package_dir().join("package.yaml"), package.join("package.yaml")).expect("copy");
        Self(path)
    }

    fn package(&self) -> PathBuf {
        self.0.join("claims")
    }

    fn package_arg(&self) -> String {
        self.package().to_string_lossy().into_owned()
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn package_dir() -> PathBuf {
    package()
}

#[test]
fn list_prints_one_line_per_skill() {
    let output = host(&["list"]);
    assert!(output.status.success());
    assert_eq!(
        stdout(&output),
        "claim.classify@1\tclaims_integration.skills:classify\tnone/low\n\
         claim.draft_reply@1\tclaims_integration.skills:draft_reply\tnone/low\n\
         claim.import_rows@1\tclaims_integration.skills:import_rows\tnone/low\n\
         claim.lookup@1\tclaims_integration.skills:lookup\texternal_read/low\n\
         claim.send_reply@1\tclaims_integration.skills:send_reply\texternal_write/high\n"
    );
}

#[test]
fn contract_prints_one_contract() {
    let output = host(&["contract", "claim.send_reply@1"]);
    assert!(output.status.success());
    let contract: serde_json::Value = serde_json::from_slice(&output.stdout).expect("JSON");
    assert_eq!(contract["retryPolicy"], serde_json::json!({"maxAttempts": 3, "backoffSeconds": 10}));
    let keys: Vec<&String> = contract.as_object().expect("object").keys().collect();
    assert_eq!(keys.first().map(|k| k.as_str()), Some("inputs"));

    let output = host(&["contract"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(
        stderr(&output).contains(
            "this binary has 5 skills: name one of: claim.classify@1, claim.draft_reply@1, claim.import_rows@1, claim.lookup@1, claim.send_reply@1"
        ),
        "{}",
        stderr(&output)
    );
}

#[test]
fn check_passes_on_the_committed_package() {
    let output = host(&["export", "--package", &package().to_string_lossy(), "--check"]);
    assert!(output.status.success(), "{}{}", stdout(&output), stderr(&output));
    assert!(stdout(&output).starts_with("ok: 5 skills match"), "{}", stdout(&output));
}

#[test]
fn check_names_a_changed_risk_level() {
    let scratch = Scratch::new("risk");
    let file = scratch.package().join("skills/claim.send_reply.yaml");
    let text = std::fs::read_to_string(&file).expect("file");
    std::fs::write(&file, text.replace("riskLevel: high", "riskLevel: medium")).expect("write");
    let output = host(&["export", "--package", &scratch.package_arg(), "--check"]);
    assert_eq!(output.status.code(), Some(1));
    let printed = stdout(&output);
    assert!(
        printed.contains(&format!("difference: claim.send_reply@1: {} differs from code (riskLevel)", file.display())),
        "{printed}"
    );
    assert!(printed.ends_with("1 differences: run export and commit the files\n"), "{printed}");
}

#[test]
fn check_names_a_missing_file() {
    let scratch = Scratch::new("missing");
    let file = scratch.package().join("skills/claim.classify.yaml");
    std::fs::remove_file(&file).expect("remove");
    let output = host(&["export", "--package", &scratch.package_arg(), "--check"]);
    assert_eq!(output.status.code(), Some(1));
    assert!(
        stdout(&output).contains(&format!("difference: claim.classify@1: no file {}", file.display())),
        "{}",
        stdout(&output)
    );
}

#[test]
fn check_ignores_comments_and_layout_but_not_types() {
    let scratch = Scratch::new("layout");
    let file = scratch.package().join("skills/claim.classify.yaml");
    let text = std::fs::read_to_string(&file).expect("file");
    let reformatted = format!("# a comment of our own\n{}", text.replace("version: '1'", "version: \"1\""));
    std::fs::write(&file, reformatted).expect("write");
    assert!(host(&["export", "--package", &scratch.package_arg(), "--check"]).status.success());
    std::fs::write(&file, text.replace("version: '1'", "version: 1")).expect("write");
    let output = host(&["export", "--package", &scratch.package_arg(), "--check"]);
    assert!(stdout(&output).contains("differs from code (version)"), "{}", stdout(&output));
}

#[test]
fn export_writes_every_file_and_then_checks_clean() {
    let scratch = Scratch::new("export");
    std::fs::remove_dir_all(scratch.package().join("skills")).expect("remove");
    let output = host(&["export", "--package", &scratch.package_arg()]);
    assert!(output.status.success(), "{}", stderr(&output));
    let expected = format!(
        "written {}\nwritten {}\nwritten {}\nwritten {}\nwritten {}\n",
        scratch.package().join("skills/claim.classify.yaml").display(),
        scratch.package().join("skills/claim.draft_reply.yaml").display(),
        scratch.package().join("skills/claim.import_rows.yaml").display(),
        scratch.package().join("skills/claim.lookup.yaml").display(),
        scratch.package().join("skills/claim.send_reply.yaml").display()
    );
    assert_eq!(stdout(&output), expected);
    let names = [
        "claim.classify.yaml",
        "claim.draft_reply.yaml",
        "claim.import_rows.yaml",
        "claim.lookup.yaml",
        "claim.send_reply.yaml",
    ];
    for name in names {
        let written = std::fs::read(scratch.package().join("skills").join(name)).expect("written");
        let committed = std::fs::read(package().join("skills").join(name)).expect("committed");
        assert_eq!(written, committed, "{name} is byte for byte what is committed");
    }
    let again = host(&["export", "--package", &scratch.package_arg()]);
    assert_eq!(
        stdout(&again),
        expected.replace("written ", "unchanged "),
        "files that hold the right text are left alone"
    );
}

#[test]
fn export_with_an_http_implementation() {
    let scratch = Scratch::new("http");
    let args = [
        "export",
        "--package",
        &scratch.package_arg(),
        "--protocol",
        "http",
        "--endpoint",
        "${CLAIMS_SKILLS_URL}/",
        "--audience",
        "claims-skills",
    ];
    assert!(host(&args).status.success());
    let text = std::fs::read_to_string(scratch.package().join("skills/claim.classify.yaml")).expect("written");
    assert!(
        text.ends_with("    implementation:\n      protocol: http\n      endpoint: ${CLAIMS_SKILLS_URL}/skills/claim.classify@1\n      auth:\n        audience: claims-skills\n"),
        "{text}"
    );
    let mut check = args.to_vec();
    check.push("--check");
    assert!(host(&check).status.success(), "the same choice checks clean");
    let output = host(&["export", "--package", &scratch.package_arg(), "--check"]);
    assert!(stdout(&output).contains("differs from code (contract)"), "{}", stdout(&output));
}

#[test]
fn export_writes_the_schema_hint_of_the_closest_schema_folder() {
    let scratch = Scratch::new("hint");
    std::fs::create_dir_all(scratch.0.join("schema/v1")).expect("schema folder");
    std::fs::write(scratch.0.join("schema/v1/object.schema.json"), "{}").expect("schema");
    assert!(host(&["export", "--package", &scratch.package_arg()]).status.success());
    let text = std::fs::read_to_string(scratch.package().join("skills/claim.classify.yaml")).expect("written");
    let mut lines = text.lines();
    assert_eq!(lines.next(), Some("# yaml-language-server: $schema=../../schema/v1/object.schema.json"));
    assert_eq!(lines.next(), Some(skill_contract::export::GENERATED_HEADER));
}

#[test]
fn usage_errors_exit_2_and_say_what_to_pass() {
    let cases: [(&[&str], &str); 6] = [
        (&["export"], "--package <DIR>"),
        (&["export", "--package", ".", "--protocol", "http"], "need --endpoint <URL>"),
        (&["export", "--package", ".", "--endpoint", "https://x"], "go with --protocol http or --protocol mcp"),
        (&["invoke", "claim.classify@1", "--input", "{not json"], "--input is not valid JSON"),
        (&["invoke", "claim.nope@1", "--input", "{}"], "no skill claim.nope@1 in this binary"),
        (&["launch"], "unrecognized subcommand"),
    ];
    for (args, says) in cases {
        let output = host(args);
        assert_eq!(output.status.code(), Some(2), "{args:?}");
        assert!(stderr(&output).contains(says), "{args:?}: {}", stderr(&output));
    }
}

#[test]
fn export_into_a_missing_folder_fails_clearly() {
    let output = host(&["export", "--package", "/nonexistent/claims"]);
    assert_eq!(output.status.code(), Some(1));
    assert!(stderr(&output).contains("the package folder /nonexistent/claims does not exist"), "{}", stderr(&output));
}

#[test]
fn invoke_prints_outputs_and_cost_or_the_error() {
    let output = host(&["invoke", "claim.classify@1", "--input", r#"{"text": "верните деньги"}"#]);
    assert!(output.status.success());
    let printed: serde_json::Value = serde_json::from_slice(&output.stdout).expect("JSON");
    assert_eq!(
        printed,
        serde_json::json!({"outputs": {"category": "refund", "matched": ["верните", "деньги"]}, "cost": null})
    );

    let scratch = Scratch::new("invoke");
    let input = scratch.0.join("input.json");
    std::fs::write(&input, r#"{"claim": "C-1", "comment": "ok"}"#).expect("input");
    let output = host(&["invoke", "claim.send_reply@1", "--input", &format!("@{}", input.display())]);
    assert_eq!(output.status.code(), Some(1));
    let printed: serde_json::Value = serde_json::from_slice(&output.stdout).expect("JSON");
    assert_eq!(printed["error"]["code"], "idempotency_key_required");

    let outbox = scratch.0.join("outbox");
    std::fs::create_dir_all(&outbox).expect("outbox");
    let output = Command::new(HOST)
        .args(["invoke", "claim.send_reply@1", "--input", &format!("@{}", input.display()), "--idempotency-key", "k-1"])
        .env("CLAIMS_OUTBOX_DIR", &outbox)
        .output()
        .expect("runs");
    assert!(output.status.success(), "{}", stdout(&output));
    let printed: serde_json::Value = serde_json::from_slice(&output.stdout).expect("JSON");
    assert_eq!(printed["outputs"]["status"], "sent");
    assert_eq!(printed["cost"], serde_json::json!({"units": {"message": 1.0}}));
}

#[test]
fn serve_http_answers_calls_and_stops_on_sigterm() {
    use std::io::{Read, Write};

    let mut command = Command::new(HOST);
    command.args(["serve", "http", "--host", "127.0.0.1", "--port", "0", "--allow-anonymous"]);
    let mut host = Running::start(command, skill_fixtures::Output::Stderr);
    let address = host.address(30);
    let body = r#"{"inputs": {"text": "верните деньги"}}"#;
    let mut stream = std::net::TcpStream::connect(&address).expect("connects");
    write!(
        stream,
        "POST /skills/claim.classify@1 HTTP/1.1\r\nHost: {address}\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .expect("sent");
    let mut answer = String::new();
    stream.read_to_string(&mut answer).expect("answered");
    assert!(answer.starts_with("HTTP/1.1 200 OK"), "{answer}");
    assert!(answer.ends_with(r#"{"category":"refund","matched":["верните","деньги"]}"#), "{answer}");

    host.stop(rustix::process::Signal::TERM);
}

/// The Python example of docs/hosting.md, run as written against `serve mcp-http`.
#[test]
fn the_hosting_guide_python_example_runs() {
    let guide = std::fs::read_to_string(package().join("../../docs/hosting.md")).expect("docs/hosting.md");
    let start = guide.find("```python\n").expect("a Python example") + "```python\n".len();
    let example = &guide[start..start + guide[start..].find("```").expect("its end")];
    let port = std::net::TcpListener::bind("127.0.0.1:0").expect("bind").local_addr().expect("address").port();
    let example = example.replace("127.0.0.1:8081", &format!("127.0.0.1:{port}"));

    let mut command = Command::new(HOST);
    command.args(["serve", "mcp-http", "--host", "127.0.0.1", "--port", &port.to_string(), "--allow-anonymous"]);
    let mut host = Running::start(command, skill_fixtures::Output::Stderr);
    host.address(30);
    let python = std::env::var("SKILL_TEST_PYTHON").unwrap_or_else(|_| "python3".to_owned());
    let output =
        Command::new(python).args(["-c", &example]).env("TOKEN", "unused-when-anonymous").output().expect("python");
    host.kill();
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(stdout(&output), "{'category': 'refund', 'matched': ['верните', 'деньги']}\n");
}
