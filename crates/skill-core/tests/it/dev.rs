//! `skill-core dev --package examples/claims`: the README's main command, as a process.

use std::path::Path;
use std::time::Duration;

use crate::running;
use serde_json::Value;

/// The value after `label` on the line that starts with it (`  core    http://…`).
fn field<'a>(lines: &'a [String], label: &str) -> &'a str {
    let line = lines
        .iter()
        .find(|line| line.trim_start().starts_with(label))
        .unwrap_or_else(|| panic!("a {label} line: {lines:?}"));
    line.split_whitespace().nth(1).expect("a value")
}

#[test]
fn dev_applies_the_package_and_serves_its_skills_until_stopped() {
    let data = std::env::temp_dir().join(format!("skill-core-dev-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&data);
    let package = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/claims");
    let data_arg = data.display().to_string();
    let package_arg = package.display().to_string();
    let mut running = running::start(
        &["dev", "--package", &package_arg, "--data", &data_arg, "--listen", "127.0.0.1:0", "--host-port", "0"],
        true,
    );
    let lines = running.until(300, |line| line.starts_with("Stop with"));
    assert_eq!(lines[0], "skill-core dev: package claims 1.0.0 applied");
    let core = field(&lines, "core").to_owned();
    let token = field(&lines, "token").to_owned();
    let skills = field(&lines, "skills").to_owned();
    let example = lines.iter().find(|line| line.contains("-X POST")).expect("an example call").clone();

    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
    runtime.block_on(async {
        let client = reqwest::Client::new();
        let catalogue: Value = client
            .get(format!("{core}/catalogue"))
            .bearer_auth(&token)
            .send()
            .await
            .expect("core")
            .json()
            .await
            .expect("JSON");
        let names: Vec<&str> =
            catalogue["items"].as_array().expect("items").iter().filter_map(|m| m["name"].as_str()).collect();
        assert_eq!(names, ["claim.classify", "claim.draft_reply", "claim.send_reply"]);
        // The printed example call works as printed.
        let url = example.split_whitespace().find(|word| word.starts_with("http://")).expect("a URL");
        let body = example.split('\'').nth(1).expect("a quoted body");
        assert!(url.starts_with(skills.as_str()), "{url} is on the host");
        let answer = client.post(url).body(body.to_owned()).send().await.expect("host");
        assert_eq!(answer.status().as_u16(), 200, "{}", answer.text().await.unwrap_or_default());
    });

    running.stop(rustix::process::Signal::INT);
    let host_gone = runtime
        .block_on(async { reqwest::Client::new().get(&skills).timeout(Duration::from_secs(2)).send().await.is_err() });
    assert!(host_gone, "stopping dev stops the skill host");
    assert!(data.join("core.db").exists());
    let _ = std::fs::remove_dir_all(&data);
}
