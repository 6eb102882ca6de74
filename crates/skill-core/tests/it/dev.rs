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
fn dev_applies_the_package_and_calls_its_skills_through_the_core() {
    let data = std::env::temp_dir().join(format!("skill-core-dev-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&data);
    let package = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/claims");
    let data_arg = data.display().to_string();
    let package_arg = package.display().to_string();
    let mut running =
        running::start(&["dev", "--package", &package_arg, "--data", &data_arg, "--listen", "127.0.0.1:0"], true);
    let lines = running.until(300, |line| line.starts_with("Stop with"));
    assert_eq!(lines[0], "skill-core dev: package claims 1.0.0 applied");
    let core = field(&lines, "core").to_owned();
    assert!(field(&lines, "https").contains("claims-integration"), "the host serves the http skills: {lines:?}");
    assert!(
        lines.iter().any(|line| line.contains("remote    an executor in this process calls https://localhost:")),
        "{lines:?}"
    );
    let token = field(&lines, "token").to_owned();
    assert!(
        lines.iter().any(|line| line.contains("claims.reply")),
        "the token holds what the contracts require: {lines:?}"
    );
    // The printed invoke: `curl … \` and, on the next line, the URL and `-d '<body>'`.
    let at = lines.iter().position(|line| line.contains("-X POST")).expect("an example call");
    let printed = &lines[at + 1];
    let url = printed.split_whitespace().find(|word| word.starts_with("http://")).expect("a URL").to_owned();
    let body = printed.split('\'').nth(1).expect("a quoted body").to_owned();
    assert!(url.starts_with(&core) && url.ends_with(":invoke"), "{url} calls the core");

    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
    runtime.block_on(async {
        let client = reqwest::Client::new();
        let call = |url: String, body: String| {
            let request = client.post(url).bearer_auth(&token).header("content-type", "application/json").body(body);
            async move {
                let answer = request.send().await.expect("the core answers");
                (answer.status().as_u16(), answer.json::<Value>().await.expect("JSON"))
            }
        };
        // A call's row once it ended (or after 30 s).
        let ended = |created: Value| {
            let id = created["id"].as_str().expect("an id").to_owned();
            let (client, core, token) = (client.clone(), core.clone(), token.clone());
            async move {
                let deadline = std::time::Instant::now() + Duration::from_secs(30);
                loop {
                    let read = client.get(format!("{core}/skill-invocations/{id}")).bearer_auth(&token).send().await;
                    let read: Value = read.expect("the core answers").json().await.expect("JSON");
                    if read["status"] != "pending" && read["status"] != "running"
                        || std::time::Instant::now() > deadline
                    {
                        break read;
                    }
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            }
        };
        // The printed call, as printed: through the core to the package's host and back.
        let (status, created) = call(url.clone(), body.clone()).await;
        assert_eq!(status, 201, "{created}");
        let done = ended(created).await;
        assert_eq!(done["status"], "succeeded", "{done}");
        assert!(done["output"]["category"].is_string(), "{done}");
        // The http skill: served by the package's host over https on loopback, called by the
        // remote executor with a token from this core.
        let (status, created) =
            call(format!("{core}/skills/claim.lookup@1:invoke"), r#"{"inputs": {"claim": "C-1002"}}"#.to_owned()).await;
        assert_eq!(status, 201, "{created}");
        let looked = ended(created).await;
        assert_eq!(looked["status"], "succeeded", "{looked}");
        assert_eq!(looked["output"]["customer"], "Jonas Berg", "{looked}");
        // An external write has no basis: refused, though the token holds its permission.
        let send = format!("{core}/skills/claim.send_reply@1:invoke");
        let inputs = r#"{"inputs": {"claim": "c-1", "comment": "Your refund is on its way."}, "idempotencyKey": "k"}"#;
        let (status, refused) = call(send, inputs.to_owned()).await;
        assert_eq!(
            (status, refused["error"]["code"].as_str()),
            (403, Some("skill_side_effect_not_authorized")),
            "{refused}"
        );
    });

    running.stop(rustix::process::Signal::INT);
    // The executor stopped with dev and closed its session.
    let events = runtime.block_on(async {
        let store = skill_store::open(&data_arg, &Default::default()).await.expect("the database");
        store.events(0, None, 1000).await.expect("events")
    });
    assert!(events.iter().any(|event| event.kind == "executor.session_closed"), "the executor's session was closed");
    assert!(events.iter().any(|event| event.kind == "skill.invocation_succeeded"));
    let _ = std::fs::remove_dir_all(&data);
}
