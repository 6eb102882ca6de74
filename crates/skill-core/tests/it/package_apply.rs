//! `POST /packages:apply`: a package's whole plan in one transaction, through a real server.

use serde_json::{Value, json};

use crate::api::{Api, api};

const HASH: &str = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

fn leaf(name: &str, timeout: u32) -> Value {
    json!({"name": name, "version": "1", "description": "a leaf", "sideEffects": "none", "riskLevel": "low",
           "contract": {"inputs": {"type": "object"}, "outputs": {"type": "object"}, "timeoutSeconds": timeout,
                        "implementation": {"protocol": "http", "endpoint": "https://svc.example/x"}}})
}

fn composite(name: &str, includes: &[&str]) -> Value {
    json!({"name": name, "version": "1", "includes": includes})
}

fn plan(create: Vec<Value>, patch: Vec<Value>) -> Value {
    json!({"package": {"key": "claims", "version": "1.0.0"}, "installHash": HASH, "create": create, "patch": patch,
           "objects": [{"kind": "Skill", "key": "claims.lookup"}]})
}

async fn post(api: &Api, path: &str, body: &Value) -> (u16, Value) {
    let answer = reqwest::Client::new()
        .post(format!("{}/api/v1{path}", api.base))
        .bearer_auth(&api.admin)
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
async fn a_plan_is_written_whole_or_not_at_all() {
    let api = api().await;
    let before = events(&api).await;

    // The second version breaks a rule: nothing of the plan is written.
    let (status, body) =
        post(&api, "/packages:apply", &plan(vec![leaf("claims.lookup", 30), leaf("claims.bad", 0)], vec![])).await;
    assert_eq!((status, body["error"]["details"]["item"].as_str()), (422, Some("create[1]")), "{body}");
    // A composite including a version no one published (a required package never applied).
    let (status, body) = post(
        &api,
        "/packages:apply",
        &plan(vec![leaf("claims.lookup", 30), composite("claims.flow", &["crm.find@1"])], vec![]),
    )
    .await;
    assert_eq!((status, body["error"]["code"].as_str()), (422, Some("resolution_failure")), "{body}");
    assert_eq!(body["error"]["details"]["item"], "create[1]");
    for (field, bad) in [
        ("package.key", json!({"package": {"key": "../..", "version": "1"}, "installHash": HASH, "objects": []})),
        (
            "package.version",
            json!({"package": {"key": "claims", "version": "1; DROP TABLE skills"}, "installHash": HASH, "objects": []}),
        ),
        ("installHash", json!({"package": {"key": "claims", "version": "1"}, "installHash": "x", "objects": []})),
        (
            "objects[0]",
            json!({"package": {"key": "claims", "version": "1"}, "installHash": HASH, "objects": [{"kind": "Skill", "key": "../x"}]}),
        ),
    ] {
        let (status, body) = post(&api, "/packages:apply", &bad).await;
        assert_eq!((status, body["error"]["details"]["field"].as_str()), (400, Some(field)), "{body}");
    }
    assert_eq!(events(&api).await, before, "no refused plan wrote anything");
    let missing = reqwest::Client::new()
        .get(format!("{}/api/v1/packages/claims", api.base))
        .bearer_auth(&api.admin)
        .send()
        .await
        .expect("answers");
    assert_eq!(missing.status().as_u16(), 404, "no install recorded");

    // A composite may include a version of the same plan.
    let (status, body) = post(
        &api,
        "/packages:apply",
        &plan(vec![leaf("claims.lookup", 30), composite("claims.flow", &["claims.lookup@1"])], vec![]),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["created"].as_array().map(Vec::len), Some(2));
    assert_eq!(body["install"]["installHash"], HASH);
    let lookup_id = body["created"][0]["id"].as_str().expect("an id").to_owned();
    assert_eq!(events(&api).await, before + 3, "two versions and the install");

    // A change at a row version the plan read, and one that moved on.
    let patch = |row: i32| json!({"id": lookup_id, "rowVersion": row, "change": {"description": "patched"}});
    let (status, body) = post(&api, "/packages:apply", &plan(vec![], vec![patch(9)])).await;
    assert_eq!((status, body["error"]["code"].as_str()), (409, Some("version_conflict")), "{body}");
    assert_eq!(body["error"]["details"]["item"], "patch[0]");
    let (status, body) = post(&api, "/packages:apply", &plan(vec![], vec![patch(1)])).await;
    assert_eq!((status, body["patched"][0]["description"].as_str()), (200, Some("patched")), "{body}");
    // Publishing what is published is refused whole.
    let (status, body) =
        post(&api, "/packages:apply", &plan(vec![leaf("claims.other", 30), leaf("claims.lookup", 30)], vec![])).await;
    assert_eq!((status, body["error"]["code"].as_str()), (409, Some("skill_exists")), "{body}");
    let other = reqwest::Client::new()
        .get(format!("{}/api/v1/skills/claims.other@1", api.base))
        .bearer_auth(&api.admin)
        .send()
        .await
        .expect("answers");
    assert_eq!(other.status().as_u16(), 404, "the first version of a refused plan was not published");
}

/// An apply links only skills the catalog or the plan has, and takes a skill another package
/// installed only when it adopts it; a refusal writes none of the plan.
#[tokio::test]
async fn an_apply_takes_other_packages_skills_only_by_adoption() {
    let api = api().await;
    let (status, body) = post(&api, "/packages:apply", &plan(vec![leaf("claims.lookup", 30)], vec![])).await;
    assert_eq!(status, 200, "{body}");
    let before = events(&api).await;
    let rival = |create: Vec<Value>, objects: Value, adopt: Value| {
        json!({"package": {"key": "rival", "version": "1"}, "installHash": HASH, "create": create,
               "objects": objects, "adopt": adopt})
    };
    let lookup = json!([{"kind": "Skill", "key": "claims.lookup"}, {"kind": "Skill", "key": "rival.own"}]);
    let (status, body) =
        post(&api, "/packages:apply", &rival(vec![leaf("rival.own", 30)], lookup.clone(), json!([]))).await;
    assert_eq!((status, body["error"]["code"].as_str()), (409, Some("package_object_conflict")), "{body}");
    assert_eq!(body["error"]["details"]["objects"][0]["package"], "claims");
    let ghost = json!([{"kind": "Skill", "key": "rival.ghost"}]);
    let (status, body) = post(&api, "/packages:apply", &rival(vec![leaf("rival.own", 30)], ghost, json!([]))).await;
    assert_eq!((status, body["error"]["code"].as_str()), (422, Some("unknown_reference")), "{body}");
    assert_eq!(events(&api).await, before, "refused plans write nothing, not even their new versions");

    let adopt = json!([{"kind": "Skill", "key": "claims.lookup"}]);
    let (status, body) = post(&api, "/packages:apply", &rival(vec![leaf("rival.own", 30)], lookup, adopt)).await;
    assert_eq!(status, 200, "{body}");
    let keys: Vec<&str> =
        body["install"]["objects"].as_array().expect("objects").iter().filter_map(|o| o["key"].as_str()).collect();
    assert_eq!(keys, ["claims.lookup", "rival.own"]);
}
