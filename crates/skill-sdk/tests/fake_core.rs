//! `FakeCore`, the in-memory core of the testing kit: artifacts, the knowledge plan, state
//! tokens (checked against Python's own `json.dumps`), optimistic apply, and query semantics.

use std::process::Command;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use skill_sdk::core::{EntityQuery, KnowledgeDocument};
use skill_sdk::testing::{self, FakeCore};
use skill_sdk::{SkillContext, SkillError, skill};

#[derive(Debug, Deserialize, JsonSchema)]
pub struct Step {
    pub op: String,
    #[serde(default)]
    pub snapshot: Value,
    #[serde(default)]
    pub expected: Option<String>,
    #[serde(default)]
    pub conditions: Vec<Value>,
    #[serde(default)]
    pub max_items: Option<usize>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Answer {
    pub result: Value,
}

#[skill("fake.knowledge", version = "1", side_effects = "external_write", risk = "low", idempotency = "natural")]
pub async fn knowledge(inputs: Step, ctx: SkillContext) -> Result<Answer, SkillError> {
    let knowledge = ctx.knowledge()?;
    let result = match inputs.op.as_str() {
        "preview" => knowledge.preview(inputs.snapshot, "W-1").await?,
        "apply" => knowledge.apply(inputs.snapshot, "W-1", inputs.expected.as_deref()).await?,
        "document" => {
            knowledge.document(KnowledgeDocument::new("W-1", "doc-1", "Doc", vec![json!({"text": "x"})])).await?
        }
        "recall" => knowledge.recall(json!({"anchor": "company:1"})).await?,
        "query" => {
            let mut query = EntityQuery::new("W-1", &["company", "person"]);
            query.conditions = inputs.conditions;
            query.max_items = inputs.max_items.unwrap_or(10_000);
            json!(knowledge.query(query).await?)
        }
        "artifact" => {
            let content = ctx.artifacts()?.read("A-1").await?;
            json!({"text": content.text()?, "mediaType": content.media_type})
        }
        _ => Value::Null,
    };
    Ok(Answer { result })
}

fn step(core: &FakeCore, step: Value) -> Result<Value, SkillError> {
    testing::call(&knowledge::SKILL).core(core).invoke(step).map(|o| o.outputs["result"].clone())
}

fn snapshot(scope: &str, entities: Value) -> Value {
    json!({"pack": "registry", "source": "egrul", "scope": scope, "entities": entities})
}

#[test]
fn the_plan_counts_new_changed_removed_and_unchanged() {
    let core = FakeCore::new();
    let first = snapshot(
        "all",
        json!([
            {"kind": "company", "key": "1", "title": "A", "attributes": {"okved": "62.01"}},
            {"kind": "company", "key": "2", "title": "B"},
            {"kind": "company", "key": "3", "title": "C"}
        ]),
    );
    let plan = step(&core, json!({"op": "preview", "snapshot": first})).expect("preview");
    assert_eq!(
        (plan["opened"].as_u64(), plan["closed"].as_u64(), plan["unchanged"].as_u64()),
        (Some(3), Some(0), Some(0))
    );
    assert_eq!(plan["stateToken"], "st:44136fa355b3678a", "the empty slot's token");
    let applied = step(&core, json!({"op": "apply", "snapshot": first})).expect("apply");
    let after_first = applied["stateToken"].as_str().expect("token").to_owned();
    assert_eq!(after_first, core.slot_token("W-1", "registry", "egrul", "all"));
    assert_ne!(after_first, "st:44136fa355b3678a");

    let second = snapshot(
        "all",
        json!([
            {"kind": "company", "key": "1", "title": "A", "attributes": {"okved": "62.01"}},
            {"kind": "company", "key": "2", "title": "B renamed"},
            {"kind": "company", "key": "4", "title": "D"}
        ]),
    );
    let plan = step(&core, json!({"op": "preview", "snapshot": second})).expect("preview");
    assert_eq!(plan["opened"], 2, "new 4 and changed 2");
    assert_eq!(plan["closed"], 2, "removed 3 and changed 2");
    assert_eq!(plan["superseded"], 1);
    assert_eq!(plan["unchanged"], 1);
    assert_eq!(plan["changes"]["opened"], json!([{"kind": "company", "key": "4"}]));
    assert_eq!(plan["changes"]["changed"], json!([{"kind": "company", "key": "2"}]));
    assert_eq!(plan["changes"]["closed"], json!([{"kind": "company", "key": "3"}]));
    assert_eq!(plan["changes"]["truncated"], false);
    assert_eq!(plan["conflicts"], json!({"items": [], "limit": 1000, "truncated": false}));
    assert_eq!(plan["stateToken"], after_first, "preview reports the current state");
}

#[test]
fn apply_with_a_stale_expected_state_changes_nothing() {
    let core = FakeCore::new();
    let first = snapshot("all", json!([{"kind": "company", "key": "1"}]));
    let token = step(&core, json!({"op": "apply", "snapshot": first})).expect("apply")["stateToken"].clone();
    let second = snapshot("all", json!([{"kind": "company", "key": "2"}]));
    let error =
        step(&core, json!({"op": "apply", "snapshot": second, "expected": "st:0000000000000000"})).expect_err("stale");
    assert_eq!((error.code(), error.retryable()), ("snapshot_stale", false));
    assert_eq!(error.details().expect("details")["stateToken"], token);
    assert_eq!(core.applied().len(), 1, "nothing applied");
    let applied = step(&core, json!({"op": "apply", "snapshot": second, "expected": token})).expect("current token");
    assert_ne!(applied["stateToken"], token);
    assert_eq!(core.applied()[1]["workspaceId"], "W-1");
}

#[test]
fn documents_recalls_and_artifacts_are_recorded() {
    let core = FakeCore::new();
    assert_eq!(
        step(&core, json!({"op": "document"})).expect("stored"),
        json!({"naturalKey": "doc-1", "status": "stored"})
    );
    assert_eq!(core.documents()[0]["title"], "Doc");
    assert_eq!(step(&core, json!({"op": "recall"})).expect("recall"), json!({"sections": []}));
    core.set_recall_answer(json!({"sections": [{"title": "x"}]}));
    assert_eq!(step(&core, json!({"op": "recall"})).expect("recall")["sections"][0]["title"], "x");
    assert_eq!(core.recalls().len(), 2);
    let error = step(&core, json!({"op": "artifact"})).expect_err("unknown");
    assert_eq!(error.code(), "artifact_not_found");
    core.put_artifact("A-1", "текст", Some("text/plain"));
    assert_eq!(
        step(&core, json!({"op": "artifact"})).expect("read"),
        json!({"text": "текст", "mediaType": "text/plain"})
    );
    assert_eq!(core.artifact_reads(), ["A-1", "A-1"]);
}

fn query(core: &FakeCore, conditions: Value) -> Vec<String> {
    let items = step(core, json!({"op": "query", "conditions": conditions})).expect("query");
    items
        .as_array()
        .expect("list")
        .iter()
        .map(|i| format!("{}/{}", i["kind"].as_str().unwrap_or(""), i["key"].as_str().unwrap_or("")))
        .collect()
}

fn populated() -> FakeCore {
    let core = FakeCore::new();
    let registry = snapshot(
        "all",
        json!([
            {"kind": "company", "key": "1", "title": "Alpha", "attributes": {"okved": "62.01", "staff": 40, "since": "2019-03-01", "tags": ["it", "msk"]}},
            {"kind": "company", "key": "2", "title": "Beta", "attributes": {"okved": "62.011", "staff": 12.5, "since": "2023-01-15T10:00:00+03:00"}},
            {"kind": "company", "key": "3", "attributes": {"okved": "47.11", "staff": 300, "tags": []}},
            {"kind": "person", "key": "p1", "attributes": {"role": "ceo"}},
            {"kind": "contract", "key": "c1", "attributes": {}}
        ]),
    );
    step(&core, json!({"op": "apply", "snapshot": registry})).expect("apply");
    let overlay = snapshot(
        "overlay",
        json!([{"kind": "company", "key": "3", "title": "Gamma", "attributes": {"okved": "62.01.2", "staff": 301}}]),
    );
    step(&core, json!({"op": "apply", "snapshot": overlay})).expect("apply");
    core
}

#[test]
fn query_items_are_sorted_and_later_slots_win() {
    let core = populated();
    assert_eq!(query(&core, json!([])), ["company/1", "company/2", "company/3", "person/p1"], "kinds filter; sorted");
    let items = step(&core, json!({"op": "query"})).expect("query");
    let gamma = items.as_array().expect("list").iter().find(|i| i["key"] == "3").expect("company 3").clone();
    assert_eq!(
        gamma,
        json!({"kind": "company", "key": "3", "title": "Gamma", "attributes": {"okved": "62.01.2", "staff": 301}, "source": "egrul", "scope": "overlay"})
    );
    assert_eq!(
        core.queries()[0],
        json!({"workspaceId": "W-1", "kinds": ["company", "person"], "where": [], "asOf": null})
    );
}

#[test]
fn query_conditions_follow_the_platform_semantics() {
    let core = populated();
    let cond = |attribute: &str, op: &str, value: Value| json!([{"attribute": attribute, "op": op, "value": value}]);
    assert_eq!(
        query(&core, cond("okved", "prefix", json!("62.01"))),
        ["company/1", "company/3"],
        "62.011 is not under 62.01"
    );
    assert_eq!(query(&core, cond("staff", "gte", json!(40))), ["company/1", "company/3"]);
    assert_eq!(query(&core, cond("staff", "lte", json!(40))), ["company/1", "company/2"]);
    assert_eq!(query(&core, cond("since", "gte", json!("2020-01-01"))), ["company/2"]);
    assert_eq!(
        query(&core, cond("since", "lte", json!("2023-01-15T07:00:00Z"))),
        ["company/1", "company/2"],
        "offsets count"
    );
    assert_eq!(query(&core, cond("tags", "eq", json!("msk"))), ["company/1"], "any element of a list");
    assert_eq!(query(&core, cond("role", "in", json!(["ceo", "cfo"]))), ["person/p1"]);
    assert_eq!(query(&core, cond("tags", "exists", json!(true))), ["company/1"], "an empty list does not exist");
    assert_eq!(query(&core, cond("tags", "exists", json!(false))), ["company/2", "company/3", "person/p1"]);
    let both = json!([{"attribute": "okved", "op": "prefix", "value": "62"}, {"attribute": "staff", "op": "lte", "value": 100}]);
    assert_eq!(query(&core, both), ["company/1", "company/2"], "every condition must hold");
}

#[test]
fn query_over_max_items_is_an_error() {
    let core = populated();
    let error = step(&core, json!({"op": "query", "max_items": 3})).expect_err("four match");
    assert_eq!(error.code(), "knowledge_query_too_large");
    assert_eq!(
        step(&core, json!({"op": "query", "max_items": 4})).expect("four fit").as_array().map(Vec::len),
        Some(4)
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
