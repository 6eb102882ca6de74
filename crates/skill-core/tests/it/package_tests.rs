//! `POST /packages:test` through a real server: refusals of a run as a whole, one run at a time,
//! and nothing written to the core's own database.

use std::path::Path;

use serde_json::{Value, json};

use crate::api::{Api, api};

/// The claims package's test request, with its tests repeated to `count`.
fn claims_request(count: usize) -> Value {
    let folder = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/claims");
    let loaded = skill_package::load(&folder).expect("the claims package");
    let (files, unread) = skill_package::test_files(&folder).expect("its tests");
    assert!(unread.is_empty() && !files.is_empty());
    let files = files.iter().cycle().take(count).cloned().collect();
    let request = skill_package::test_request(&loaded, files, false).expect("a request");
    serde_json::to_value(request).expect("JSON")
}

async fn post(api: &Api, token: &str, body: &Value) -> (u16, Value) {
    let answer = reqwest::Client::new()
        .post(format!("{}/api/v1/packages:test", api.base))
        .bearer_auth(token)
        .json(body)
        .send()
        .await
        .expect("answers");
    (answer.status().as_u16(), answer.json().await.expect("JSON"))
}

async fn events(api: &Api) -> usize {
    api.engine.store().events(0, None, 1000).await.expect("events").len()
}

#[tokio::test]
async fn a_run_is_refused_whole_with_its_reason() {
    let api = api().await;
    let clerk = crate::api::token(&api.engine, "clerk", &["skills.invoke"]).await;
    let before = events(&api).await;
    let mut body = claims_request(4);

    // Who cannot install cannot test, and their body is not even read.
    let (status, answer) = post(&api, &clerk, &body).await;
    assert_eq!((status, answer["error"]["code"].as_str()), (403, Some("permission_denied")), "{answer}");
    let (status, answer) = post_text(&api, &clerk, "not JSON").await;
    assert_eq!((status, answer["error"]["code"].as_str()), (403, Some("permission_denied")), "{answer}");

    // No test, or more than a run takes.
    let tests = body["tests"].clone();
    body["tests"] = json!([]);
    let (status, answer) = post(&api, &api.admin, &body).await;
    assert_eq!((status, answer["error"]["code"].as_str()), (422, Some("too_many_tests")), "{answer}");
    body["tests"] = json!(vec![tests[0].clone(); 101]);
    let (status, answer) = post(&api, &api.admin, &body).await;
    assert_eq!((status, answer["error"]["code"].as_str()), (422, Some("too_many_tests")), "{answer}");
    assert_eq!(answer["error"]["details"]["field"], "tests");
    assert!(answer["error"]["details"]["hint"].as_str().is_some_and(|h| h.contains("--only")), "{answer}");
    // More workspaces than a run makes.
    body["tests"] = json!(
        (0..17)
            .map(|n| {
                let mut test = tests[0].clone();
                test["document"]["given"]["workspace"] = json!(format!("w{n}"));
                test
            })
            .collect::<Vec<_>>()
    );
    let (status, answer) = post(&api, &api.admin, &body).await;
    assert_eq!((status, answer["error"]["code"].as_str()), (422, Some("too_many_workspaces")), "{answer}");
    body["tests"] = tests;

    // A package the scratch core refuses: the code, and where in the request.
    let mut broken = body.clone();
    broken["packages"][0]["create"][0]["contract"]["timeoutSeconds"] = json!(0);
    let (status, answer) = post(&api, &api.admin, &broken).await;
    assert_eq!((status, answer["error"]["code"].as_str()), (422, Some("package_refused")), "{answer}");
    assert!(answer["error"]["message"].as_str().is_some_and(|m| m.contains("claims")), "{answer}");
    assert!(answer["error"]["details"]["field"].as_str().is_some_and(|f| f.starts_with("packages[0].")), "{answer}");
    // What the people of the tests would be granted is checked before anything is made.
    broken = body.clone();
    let many: Vec<String> = (0..51).map(|n| format!("x.p{n}")).collect();
    broken["packages"][0]["create"][1]["contract"]["requiredPermissions"] = json!(many);
    let (status, answer) = post(&api, &api.admin, &broken).await;
    assert_eq!((status, answer["error"]["code"].as_str()), (422, Some("package_refused")), "{answer}");
    assert_eq!(answer["error"]["details"]["field"], "packages[0].create[1].contract.requiredPermissions", "{answer}");
    // A field the request does not have.
    broken = body.clone();
    broken["tests"][0]["path"] = json!("x");
    let (status, answer) = post(&api, &api.admin, &broken).await;
    assert_eq!((status, answer["error"]["details"]["field"].as_str()), (400, Some("tests[0].path")), "{answer}");

    let (status, answer) = post(&api, &api.admin, &body).await;
    assert_eq!((status, answer["passed"].as_u64(), answer["failed"].as_u64()), (200, Some(4), Some(0)), "{answer}");

    // Tests that all run in the default workspace: the workspace the agents hold permissions
    // in is made all the same.
    let mut elsewhere = body.clone();
    for test in elsewhere["tests"].as_array_mut().expect("tests") {
        test["document"]["given"].as_object_mut().expect("given").remove("workspace");
    }
    let (status, answer) = post(&api, &api.admin, &elsewhere).await;
    assert_eq!(status, 200, "{answer}");
    assert!(!answer.to_string().contains("scratch_core_failed"), "{answer}");
    assert_eq!(events(&api).await, before, "no run wrote to the core");
}

async fn post_text(api: &Api, token: &str, body: &str) -> (u16, Value) {
    let answer = reqwest::Client::new()
        .post(format!("{}/api/v1/packages:test", api.base))
        .bearer_auth(token)
        .header("content-type", "application/json")
        .body(body.to_owned())
        .send()
        .await
        .expect("answers");
    (answer.status().as_u16(), answer.json().await.expect("JSON"))
}

#[tokio::test]
async fn a_version_published_otherwise_is_named() {
    let api = api().await;
    let mut body = claims_request(4);
    let creates = body["packages"][0]["create"].as_array().expect("creates").clone();
    let (s, send) = creates
        .iter()
        .enumerate()
        .find(|(_, create)| create["name"] == "claim.send_reply")
        .expect("claim.send_reply in the package");
    let published = reqwest::Client::new()
        .post(format!("{}/api/v1/skills", api.base))
        .bearer_auth(&api.admin)
        .json(send)
        .send()
        .await
        .expect("answers");
    assert!(published.status().is_success(), "{:?}", published.text().await);
    // The same version as the core has it: no warning.
    let (status, answer) = post(&api, &api.admin, &body).await;
    assert_eq!((status, answer["warnings"].as_array().map_or(0, Vec::len)), (200, 0), "{answer}");
    // The package says the write has no side effects: the core's version is the one tested,
    // and the answer says they differ.
    body["packages"][0]["create"][s]["sideEffects"] = json!("none");
    body["packages"][0]["create"][s]["riskLevel"] = json!("low");
    let (status, answer) = post(&api, &api.admin, &body).await;
    assert_eq!((status, answer["passed"].as_u64()), (200, Some(4)), "{answer}");
    assert_eq!(answer["warnings"][0]["code"], "published_differs", "{answer}");
    assert_eq!(answer["warnings"][0]["path"], format!("packages[0].create[{s}]"), "{answer}");
}

#[tokio::test]
async fn one_run_at_a_time() {
    let api = api().await;
    let long = claims_request(40);
    let first = {
        let (base, admin) = (api.base.clone(), api.admin.clone());
        tokio::spawn(async move {
            let answer = reqwest::Client::new()
                .post(format!("{base}/api/v1/packages:test"))
                .bearer_auth(admin)
                .json(&long)
                .send()
                .await
                .expect("answers");
            (answer.status().as_u16(), answer.json::<Value>().await.expect("JSON"))
        })
    };
    // The first run takes seconds (40 tests); a second meanwhile is told to come back.
    tokio::time::sleep(std::time::Duration::from_millis(700)).await;
    let (status, answer) = post(&api, &api.admin, &claims_request(1)).await;
    assert_eq!((status, answer["error"]["code"].as_str()), (503, Some("package_test_busy")), "{answer}");
    // Told before its body is read.
    let (status, answer) = post_text(&api, &api.admin, "not JSON").await;
    assert_eq!((status, answer["error"]["code"].as_str()), (503, Some("package_test_busy")), "{answer}");
    let (status, answer) = first.await.expect("the first run");
    assert_eq!((status, answer["passed"].as_u64()), (200, Some(40)), "{answer}");
    // Then the core takes the next.
    let (status, answer) = post(&api, &api.admin, &claims_request(1)).await;
    assert_eq!((status, answer["passed"].as_u64()), (200, Some(1)), "{answer}");
}
