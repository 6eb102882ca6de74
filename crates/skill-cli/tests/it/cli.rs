//! `skill-sdk` from a package root, as the package documentation writes the commands: it finds
//! the integration crate, builds it, and runs the host command.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use skill_fixtures::Scratch;

const CLI: &str = env!("CARGO_BIN_EXE_skill-sdk");

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().expect("workspace")
}

/// The target folder this test was built into (`<target>/debug/skill-sdk`).
fn target_dir() -> PathBuf {
    Path::new(CLI).ancestors().nth(2).expect("the binary sits in <target>/<profile>").to_path_buf()
}

fn example() -> PathBuf {
    workspace().join("examples/claims")
}

fn run(current_dir: &Path, args: &[&str]) -> Output {
    Command::new(CLI).args(args).current_dir(current_dir).env_remove("CI").output().expect("skill-sdk runs")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn the_seed_commands_work_from_the_package_root() {
    let output = run(&example(), &["export", "--package", ".", "--check", "claims-integration"]);
    assert!(output.status.success(), "{}{}", text(&output.stdout), text(&output.stderr));
    assert_eq!(text(&output.stdout), "ok: 5 skills match ./skills\n");
    assert_eq!(text(&output.stderr), "", "quiet when the build succeeds");

    let output = run(&example(), &["list", "claims-integration"]);
    assert!(text(&output.stdout).starts_with("claim.classify@1\tclaims_integration.skills:classify\tnone/low\n"));

    let output = run(&example(), &["contract", "claims-integration", "claim.classify@1"]);
    let contract: serde_json::Value = serde_json::from_slice(&output.stdout).expect("JSON");
    assert_eq!(contract["timeoutSeconds"], 5);

    let output = run(
        &example(),
        &["invoke", "claims-integration", "claim.classify@1", "--input", r#"{"text": "refund please"}"#],
    );
    let printed: serde_json::Value = serde_json::from_slice(&output.stdout).expect("JSON");
    assert_eq!(printed["outputs"]["category"], "refund");
}

#[test]
fn serve_runs_the_host_in_this_process_place() {
    use std::io::Write;

    let mut child = Command::new(CLI)
        .args(["serve", "mcp-stdio", "claims-integration"])
        .current_dir(example())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("skill-sdk runs");
    let initialize = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;
    writeln!(child.stdin.take().expect("stdin"), "{initialize}").expect("sent");
    let output = child.wait_with_output().expect("exits when its input ends");
    assert!(output.status.success(), "{}", text(&output.stderr));
    let answer: serde_json::Value = serde_json::from_slice(&output.stdout).expect("one JSON-RPC answer");
    assert_eq!(answer["result"]["serverInfo"]["name"], "claims-integration");
    assert!(text(&output.stderr).contains("serving 5 skills over mcp-stdio"), "{}", text(&output.stderr));
}

#[test]
fn exit_codes_pass_through_and_unknown_crates_are_named() {
    let output = run(&example(), &["invoke", "claims-integration", "claim.classify@1", "--input", "{}"]);
    assert_eq!(output.status.code(), Some(1), "the skill's failure");
    let output = run(&example(), &["export", "--package", ".", "--protocol", "mcp", "claims-integration"]);
    assert_eq!(output.status.code(), Some(2), "the host's usage error");
    let output = run(&example(), &["list", "claims-integratoin"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(text(&output.stderr).contains("no crate named `claims-integratoin`"), "{}", text(&output.stderr));
    assert!(text(&output.stderr).contains("it has: claims-integration,"), "{}", text(&output.stderr));
    let output = run(&std::env::temp_dir(), &["list", "claims-integration", "--package", "/nonexistent"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(
        text(&output.stderr).contains("no Cargo.toml in /nonexistent/integration or /nonexistent"),
        "{}",
        text(&output.stderr)
    );
}

/// A copy of the claims package whose integration crate is a workspace of its own, built into the
/// workspace's target folder. The copy's package and binary carry the label, so no copy overwrites
/// another's binary (or the example's); the library keeps its name, so entrypoints stay the same.
struct Copy {
    scratch: Scratch,
    name: String,
}

impl Copy {
    fn new(label: &str) -> Self {
        let scratch = Scratch::new(&format!("skill-cli-{label}"));
        let package = scratch.path().join("claims");
        for folder in ["skills", "integration/src"] {
            std::fs::create_dir_all(package.join(folder)).expect("folder");
        }
        let source = example();
        for file in [
            "package.yaml",
            "skills/claim.classify.yaml",
            "skills/claim.draft_reply.yaml",
            "skills/claim.import_rows.yaml",
            "skills/claim.lookup.yaml",
            "skills/claim.send_reply.yaml",
            "integration/src/lib.rs",
            "integration/src/skills.rs",
        ] {
            std::fs::copy(source.join(file), package.join(file)).expect("copy");
        }
        // The SDK's own host `main` (without serving): the copy then builds without the hosting crates.
        std::fs::write(package.join("integration/src/main.rs"), "skill_sdk::host_main!(claims_integration);\n")
            .expect("main");
        let crates = workspace().join("crates");
        let name = format!("claims-copy-{label}");
        let manifest = format!(
            "[package]\nname = \"{name}\"\nversion = \"0.1.0\"\nedition = \"2024\"\n\n[workspace]\n\n\
             [lib]\nname = \"claims_integration\"\n\n[[bin]]\nname = \"{name}\"\npath = \"src/main.rs\"\n\n\
             [dependencies]\nschemars = \"1\"\nserde = {{ version = \"1\", features = [\"derive\"] }}\n\
             serde_json = {{ version = \"1\", features = [\"preserve_order\"] }}\nskill-sdk = {{ path = \"{}\" }}\n",
            crates.join("skill-sdk").display()
        );
        std::fs::write(package.join("integration/Cargo.toml"), manifest).expect("manifest");
        std::fs::copy(workspace().join("Cargo.lock"), package.join("integration/Cargo.lock")).expect("lock");
        Self { scratch, name }
    }

    fn package(&self) -> PathBuf {
        self.scratch.path().join("claims")
    }

    fn edit(&self, file: &str, from: &str, to: &str) {
        self.scratch.edit(&format!("claims/{file}"), from, to);
    }

    /// Runs `skill-sdk <command> [args...] <this copy's crate>`.
    fn cli(&self, args: &[&str]) -> Output {
        Command::new(CLI)
            .args(args)
            .arg(&self.name)
            .current_dir(self.package())
            .env("CARGO_TARGET_DIR", target_dir())
            .env_remove("CI")
            .output()
            .expect("skill-sdk runs")
    }
}

#[test]
fn changing_risk_in_code_fails_the_check_naming_risk_level() {
    let copy = Copy::new("risk");
    copy.edit("integration/src/skills.rs", "risk = \"high\"", "risk = \"medium\"");
    let output = copy.cli(&["export", "--package", ".", "--check"]);
    assert_eq!(output.status.code(), Some(1), "{}{}", text(&output.stdout), text(&output.stderr));
    assert_eq!(
        text(&output.stdout),
        "difference: claim.send_reply@1: ./skills/claim.send_reply.yaml differs from code (riskLevel)\n\
         1 differences: run export and commit the files\n",
        "stderr: {}",
        text(&output.stderr)
    );

    let output = copy.cli(&["export", "--package", "."]);
    assert!(output.status.success());
    assert!(copy.cli(&["export", "--package", ".", "--check"]).status.success(), "export fixes it");
}

#[test]
fn a_build_failure_shows_cargos_output() {
    let copy = Copy::new("broken");
    copy.edit("integration/src/skills.rs", "risk = \"high\"", "risk = \"severe\"");
    let output = copy.cli(&["export", "--package", ".", "--check"]);
    assert_eq!(output.status.code(), Some(1));
    let printed = text(&output.stderr);
    assert!(printed.contains("building `claims-copy-broken` failed"), "{printed}");
    assert!(printed.contains("risk: `severe` is not allowed, use one of: low, medium, high"), "{printed}");
}

#[test]
fn pii_redact_previews_what_a_model_would_see() {
    let output = run(
        &std::env::temp_dir(),
        &["pii", "redact", "Директор Иванов Иван Иванович, тел. +7 912 345-67-89, ИНН 7701234567"],
    );
    assert!(output.status.success(), "{}", text(&output.stderr));
    let printed: serde_json::Value = serde_json::from_slice(&output.stdout).expect("JSON");
    assert_eq!(
        printed,
        serde_json::json!({"text": "Директор [ПДн:фио], тел. [ПДн:телефон], ИНН 7701234567", "found": {"телефон": 1, "фио": 1}})
    );
    let file = std::env::temp_dir().join(format!("skill-cli-pii-{}.txt", std::process::id()));
    std::fs::write(&file, "пишите anna@mail.ru").expect("write");
    let output = run(&std::env::temp_dir(), &["pii", "redact", &format!("@{}", file.display())]);
    let printed: serde_json::Value = serde_json::from_slice(&output.stdout).expect("JSON");
    assert_eq!(printed["text"], "пишите [ПДн:email]");
    let _ = std::fs::remove_file(&file);
    let output = run(&std::env::temp_dir(), &["pii", "redact", "@/nonexistent/file"]);
    assert_eq!(output.status.code(), Some(2));
}
