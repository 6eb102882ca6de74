//! The README's quick start runs as written.

use std::path::{Path, PathBuf};
use std::process::Command;

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().expect("workspace")
}

/// The shell block between the quick-start markers of the README.
fn quickstart() -> String {
    let readme = std::fs::read_to_string(workspace().join("README.md")).expect("README.md");
    let start = readme.find("<!-- quickstart:start -->").expect("start marker");
    let end = readme.find("<!-- quickstart:end -->").expect("end marker");
    let block = &readme[start..end];
    let body_start = block.find("```sh\n").expect("a sh block") + "```sh\n".len();
    let body_end = block.rfind("```").expect("end of the block");
    block[body_start..body_end].to_owned()
}

#[test]
fn the_readme_quick_start_runs_as_written() {
    let binary = PathBuf::from(env!("CARGO_BIN_EXE_skill-sdk"));
    let target = binary.ancestors().nth(2).expect("<target>/<profile>/skill-sdk").to_path_buf();
    let tmp = std::env::temp_dir().join(format!("skill-cli-quickstart-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&tmp);
    // The workspace's lock pins the quick start's dependencies to the versions CI built and tested,
    // so the test neither drifts with new releases nor rebuilds them.
    std::fs::create_dir_all(tmp.join("hello/integration")).expect("temp folder");
    std::fs::copy(workspace().join("Cargo.lock"), tmp.join("hello/integration/Cargo.lock")).expect("lock");
    let output = Command::new("bash")
        .args(["-euo", "pipefail", "-c", &quickstart()])
        .current_dir(workspace())
        .env("TMPDIR", &tmp)
        .env("CARGO_TARGET_DIR", &target)
        .env_remove("CI")
        .output()
        .expect("bash runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stdout}\n{stderr}");
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines[0], "written ./skills/hello.greet.yaml");
    assert_eq!(lines[1], "ok: 1 skill matches ./skills");
    let printed: serde_json::Value = serde_json::from_str(&lines[2..].join("\n")).expect("invoke prints JSON");
    assert_eq!(printed, serde_json::json!({"outputs": {"greeting": "Hello, Ada!"}, "cost": null}));
    let file = std::fs::read_to_string(tmp.join("hello/skills/hello.greet.yaml")).expect("exported");
    assert!(file.contains("  description: Greet someone by name.\n"), "{file}");
    let _ = std::fs::remove_dir_all(&tmp);
}
