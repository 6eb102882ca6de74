//! `FakeCore`, the in-memory core of the testing kit: the core's knowledge behaviour (the cases
//! of `support/core_behaviour.rs`, which the core's own tests run against a real core), what the
//! fake records for a test to look at, and state tokens checked against Python's `json.dumps`.

use crate::core_behaviour;

use std::process::Command;
use std::sync::Arc;

use serde_json::{Value, json};
use skill_sdk::testing::{self, FakeCore};

use core_behaviour::{Backend, snapshot, step};

fn fake(core: &FakeCore) -> Backend {
    Backend { core: Arc::new(core.clone()), workspace: "W-1".to_owned() }
}

#[tokio::test]
async fn the_fake_core_behaves_as_the_core_does() {
    core_behaviour::run_all(|_| async { fake(&FakeCore::new()) }).await;
}

#[tokio::test]
async fn the_fake_records_what_a_skill_did() {
    let core = FakeCore::new();
    let backend = fake(&core);
    let applied =
        step(&backend, "apply", json!({"snapshot": snapshot("all", json!([{"kind": "company", "key": "1"}]))}))
            .await
            .expect("apply");
    assert_eq!(applied["stateToken"].as_str(), Some(core.slot_token("W-1", "registry", "egrul", "all").as_str()));
    assert_eq!(core.applied()[0]["workspaceId"], "W-1");

    step(&backend, "document", json!({})).await.expect("stored");
    assert_eq!(core.documents()[0]["title"], "Doc");

    assert_eq!(step(&backend, "recall", json!({})).await.expect("recall"), json!({"sections": []}));
    core.set_recall_answer(json!({"sections": [{"title": "x"}]}));
    assert_eq!(step(&backend, "recall", json!({})).await.expect("recall")["sections"][0]["title"], "x");
    assert_eq!(core.recalls().len(), 2);

    let error = step(&backend, "artifact", json!({})).await.expect_err("unknown");
    assert_eq!(error.code(), "artifact_not_found");
    core.put_artifact("A-1", "текст", Some("text/plain"));
    assert_eq!(
        step(&backend, "artifact", json!({})).await.expect("read"),
        json!({"text": "текст", "mediaType": "text/plain"})
    );
    assert_eq!(core.artifact_reads(), ["A-1", "A-1"]);

    step(&backend, "query", json!({})).await.expect("query");
    assert_eq!(
        core.queries()[0],
        json!({"workspaceId": "W-1", "kinds": ["company", "person"], "where": [], "asOf": null})
    );
}

/// The state token agrees with Python's `json.dumps(state, sort_keys=True, ensure_ascii=False)`.
#[test]
fn state_tokens_agree_with_python() {
    let states = [
        json!({}),
        json!({"company\u{241f}1": {"key": "1", "title": "ООО «Альфа»", "attributes": {"staff": 12.5, "big": 1e16, "small": 0.00001, "n": 3, "ok": true, "none": null}}}),
        json!({"b\u{241f}2": {"key": "2", "text": "quote \" slash \\ tab \t line\n"}, "a\u{241f}1": {"key": "1", "list": [1, 2.0, "x"]}}),
    ];
    let python = std::env::var("SKILL_TEST_PYTHON").unwrap_or_else(|_| "python3".to_owned());
    for state in states {
        let map: std::collections::BTreeMap<String, Value> =
            state.as_object().expect("object").iter().map(|(k, v)| (k.clone(), v.clone())).collect();
        let ours = testing::state_token(&map);
        let script = "import hashlib, json, sys; s = json.loads(sys.stdin.read()); \
                      print('st:' + hashlib.sha256(json.dumps(s, sort_keys=True, ensure_ascii=False).encode()).hexdigest()[:16])";
        let mut child = Command::new(&python)
            .args(["-c", script])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("this test needs `{python}`: {e}"));
        use std::io::Write;
        child.stdin.take().expect("stdin").write_all(state.to_string().as_bytes()).expect("write");
        let output = child.wait_with_output().expect("python runs");
        assert_eq!(String::from_utf8_lossy(&output.stdout).trim(), ours, "{state}");
    }
}
