//! What the core's knowledge routes do, as a skill sees them through `ctx.knowledge()`: the
//! plan, state tokens, optimistic apply, documents, and entity queries with the platform's
//! semantics. The SDK's tests run these cases against `FakeCore`; the core's tests run this same
//! file against a real core (SQLite and PostgreSQL) through the SDK's `HttpCore` — so the fake
//! and the core cannot drift apart. Each case gets a workspace of its own with nothing in it.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use skill_sdk::core::{CoreAccess, EntityQuery, KnowledgeDocument, stale_state_token};
use skill_sdk::{Invocation, SkillContext, SkillError, Transport, runtime, skill};

/// The state token of an empty slot.
pub(crate) const EMPTY: &str = "st:44136fa355b3678a";

#[derive(Debug, Deserialize, JsonSchema)]
pub(crate) struct Step {
    pub(crate) op: String,
    pub(crate) workspace: String,
    #[serde(default)]
    pub(crate) snapshot: Value,
    #[serde(default)]
    pub(crate) expected: Option<String>,
    #[serde(default)]
    pub(crate) conditions: Vec<Value>,
    #[serde(default)]
    pub(crate) max_items: Option<usize>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct Answer {
    pub(crate) result: Value,
}

/// One knowledge operation, as a skill makes it.
#[skill("behaviour.knowledge", version = "1", side_effects = "external_write", risk = "low", idempotency = "natural")]
pub(crate) async fn knowledge(inputs: Step, ctx: SkillContext) -> Result<Answer, SkillError> {
    let knowledge = ctx.knowledge()?;
    let workspace = inputs.workspace.as_str();
    let result = match inputs.op.as_str() {
        "preview" => knowledge.preview(inputs.snapshot, workspace).await?,
        "apply" => knowledge.apply(inputs.snapshot, workspace, inputs.expected.as_deref()).await?,
        "document" => {
            knowledge.document(KnowledgeDocument::new(workspace, "doc-1", "Doc", vec![json!({"text": "x"})])).await?
        }
        "query" => {
            let mut query = EntityQuery::new(workspace, &["company", "person"]);
            query.conditions = inputs.conditions;
            query.max_items = inputs.max_items.unwrap_or(10_000);
            json!(knowledge.query(query).await?)
        }
        "recall" => knowledge.recall(json!({"workspaceId": workspace, "anchor": "company:1"})).await?,
        "artifact" => {
            let content = ctx.artifacts()?.read("A-1").await?;
            json!({"text": content.text()?, "mediaType": content.media_type})
        }
        other => return Err(SkillError::new("unknown_step").with_message(format!("no step {other}"))),
    };
    Ok(Answer { result })
}

/// A core and the workspace a case works in.
#[derive(Debug, Clone)]
pub(crate) struct Backend {
    pub(crate) core: Arc<dyn CoreAccess>,
    pub(crate) workspace: String,
}

/// A case of the behaviour.
pub(crate) type Case = fn(Backend) -> Pin<Box<dyn Future<Output = ()> + Send>>;

/// Every case, by name.
pub(crate) const CASES: &[(&str, Case)] = &[
    ("the_plan_counts_new_changed_removed_and_unchanged", |b| Box::pin(plan_counts(b))),
    ("apply_with_a_stale_expected_state_changes_nothing", |b| Box::pin(stale_apply(b))),
    ("a_document_is_stored_under_its_natural_key", |b| Box::pin(document(b))),
    ("query_items_are_sorted_and_later_slots_win", |b| Box::pin(sorted_items(b))),
    ("query_conditions_follow_the_platform_semantics", |b| Box::pin(conditions(b))),
    ("query_over_max_items_is_an_error", |b| Box::pin(max_items(b))),
    ("the_import_rows_story", |b| Box::pin(import_rows(b))),
];

/// Runs every case, each on the backend `backend` makes for it.
pub(crate) async fn run_all<F, Fut>(mut backend: F)
where
    F: FnMut(&'static str) -> Fut,
    Fut: Future<Output = Backend>,
{
    for (name, case) in CASES {
        // On its own task, so that a failing case is named.
        let ran = tokio::spawn(case(backend(name).await)).await;
        ran.unwrap_or_else(|error| panic!("the core behaviour case {name} failed: {error}"));
    }
}

/// Runs one step through the skill, with the backend as its core.
pub(crate) async fn step(backend: &Backend, op: &str, more: Value) -> Result<Value, SkillError> {
    let mut inputs = json!({"op": op, "workspace": backend.workspace});
    inputs.as_object_mut().expect("an object").extend(more.as_object().cloned().unwrap_or_default());
    let invocation = Invocation::new(Transport::Test).with_invocation_id("behaviour").with_core(backend.core.clone());
    runtime::execute(&knowledge::SKILL, inputs, invocation).await.map(|outcome| outcome.outputs["result"].clone())
}

pub(crate) fn snapshot(scope: &str, entities: Value) -> Value {
    json!({"pack": "registry", "source": "egrul", "scope": scope, "entities": entities})
}

async fn plan_counts(backend: Backend) {
    let first = snapshot(
        "all",
        json!([
            {"kind": "company", "key": "1", "title": "A", "attributes": {"okved": "62.01"}},
            {"kind": "company", "key": "2", "title": "B"},
            {"kind": "company", "key": "3", "title": "C"}
        ]),
    );
    let plan = step(&backend, "preview", json!({"snapshot": first})).await.expect("preview");
    assert_eq!(
        (plan["opened"].as_u64(), plan["closed"].as_u64(), plan["unchanged"].as_u64()),
        (Some(3), Some(0), Some(0))
    );
    assert_eq!(plan["stateToken"], EMPTY, "the empty slot's token");
    let applied = step(&backend, "apply", json!({"snapshot": first})).await.expect("apply");
    let after_first = applied["stateToken"].as_str().expect("token").to_owned();
    assert_ne!(after_first, EMPTY);

    let second = snapshot(
        "all",
        json!([
            {"kind": "company", "key": "1", "title": "A", "attributes": {"okved": "62.01"}},
            {"kind": "company", "key": "2", "title": "B renamed"},
            {"kind": "company", "key": "4", "title": "D"}
        ]),
    );
    let plan = step(&backend, "preview", json!({"snapshot": second})).await.expect("preview");
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

async fn stale_apply(backend: Backend) {
    let first = snapshot("all", json!([{"kind": "company", "key": "1"}]));
    let token = step(&backend, "apply", json!({"snapshot": first})).await.expect("apply")["stateToken"].clone();
    let second = snapshot("all", json!([{"kind": "company", "key": "2"}]));
    let error = step(&backend, "apply", json!({"snapshot": second, "expected": "st:0000000000000000"}))
        .await
        .expect_err("stale");
    assert_eq!((error.code(), error.retryable()), ("snapshot_stale", false));
    assert_eq!(stale_state_token(&error), token.as_str(), "the current token comes with the refusal");
    // Nothing of the refused snapshot was written.
    assert_eq!(step(&backend, "preview", json!({"snapshot": second})).await.expect("preview")["stateToken"], token);
    assert_eq!(query(&backend, json!([])).await, ["company/1"]);
    let applied =
        step(&backend, "apply", json!({"snapshot": second, "expected": token})).await.expect("the current token");
    assert_ne!(applied["stateToken"], token);
    assert_eq!(query(&backend, json!([])).await, ["company/2"]);
}

async fn document(backend: Backend) {
    assert_eq!(
        step(&backend, "document", json!({})).await.expect("stored"),
        json!({"naturalKey": "doc-1", "status": "stored"})
    );
}

/// The `kind/key` of every entity a query answers.
pub(crate) async fn query(backend: &Backend, conditions: Value) -> Vec<String> {
    let items = step(backend, "query", json!({"conditions": conditions})).await.expect("query");
    items
        .as_array()
        .expect("list")
        .iter()
        .map(|i| format!("{}/{}", i["kind"].as_str().unwrap_or(""), i["key"].as_str().unwrap_or("")))
        .collect()
}

/// A registry of companies, people and a contract, and an overlay slot that renames company 3.
async fn populate(backend: &Backend) {
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
    step(backend, "apply", json!({"snapshot": registry})).await.expect("apply");
    let overlay = snapshot(
        "overlay",
        json!([{"kind": "company", "key": "3", "title": "Gamma", "attributes": {"okved": "62.01.2", "staff": 301}}]),
    );
    step(backend, "apply", json!({"snapshot": overlay})).await.expect("apply");
}

async fn sorted_items(backend: Backend) {
    populate(&backend).await;
    assert_eq!(query(&backend, json!([])).await, ["company/1", "company/2", "company/3", "person/p1"], "kinds; sorted");
    let items = step(&backend, "query", json!({})).await.expect("query");
    let gamma = items.as_array().expect("list").iter().find(|i| i["key"] == "3").expect("company 3").clone();
    assert_eq!(
        gamma,
        json!({"kind": "company", "key": "3", "title": "Gamma", "attributes": {"okved": "62.01.2", "staff": 301}, "source": "egrul", "scope": "overlay"})
    );
}

async fn conditions(backend: Backend) {
    populate(&backend).await;
    let cond = |attribute: &str, op: &str, value: Value| json!([{"attribute": attribute, "op": op, "value": value}]);
    let backend = &backend;
    assert_eq!(
        query(backend, cond("okved", "prefix", json!("62.01"))).await,
        ["company/1", "company/3"],
        "62.011 is not under 62.01"
    );
    assert_eq!(query(backend, cond("staff", "gte", json!(40))).await, ["company/1", "company/3"]);
    assert_eq!(query(backend, cond("staff", "lte", json!(40))).await, ["company/1", "company/2"]);
    assert_eq!(query(backend, cond("since", "gte", json!("2020-01-01"))).await, ["company/2"]);
    assert_eq!(
        query(backend, cond("since", "lte", json!("2023-01-15T07:00:00Z"))).await,
        ["company/1", "company/2"],
        "offsets count"
    );
    assert_eq!(query(backend, cond("tags", "eq", json!("msk"))).await, ["company/1"], "any element of a list");
    assert_eq!(query(backend, cond("role", "in", json!(["ceo", "cfo"]))).await, ["person/p1"]);
    assert_eq!(
        query(backend, cond("tags", "exists", json!(true))).await,
        ["company/1"],
        "an empty list does not exist"
    );
    assert_eq!(query(backend, cond("tags", "exists", json!(false))).await, ["company/2", "company/3", "person/p1"]);
    let both = json!([{"attribute": "okved", "op": "prefix", "value": "62"}, {"attribute": "staff", "op": "lte", "value": 100}]);
    assert_eq!(query(backend, both).await, ["company/1", "company/2"], "every condition must hold");
}

async fn max_items(backend: Backend) {
    populate(&backend).await;
    let error = step(&backend, "query", json!({"max_items": 3})).await.expect_err("four match");
    assert_eq!(error.code(), "knowledge_query_too_large");
    let four = step(&backend, "query", json!({"max_items": 4})).await.expect("four fit");
    assert_eq!(four.as_array().map(Vec::len), Some(4));
}

/// The reference's import-rows example: preview, apply at the preview's token, preview again
/// opens nothing, the old token is stale; a changed register's plan.
async fn import_rows(backend: Backend) {
    let rows = json!([
        {"kind": "company", "key": "C-1", "title": "Lost parcel", "attributes": {"amount": 120, "region": "62.01"}},
        {"kind": "company", "key": "C-2", "title": "Late delivery", "attributes": {"amount": 80.5}},
        {"kind": "person", "naturalKey": "K-9", "attributes": {"name": "Jonas Berg"}},
    ]);
    let register = snapshot("2026", rows);
    let preview = step(&backend, "preview", json!({"snapshot": register})).await.expect("a preview");
    assert_eq!(
        (preview["opened"].clone(), preview["closed"].clone(), preview["stateToken"].clone()),
        (json!(3), json!(0), json!(EMPTY))
    );
    let at = json!({"snapshot": register, "expected": preview["stateToken"]});
    let applied = step(&backend, "apply", at.clone()).await.expect("applied");
    let token = applied["stateToken"].as_str().expect("a token").to_owned();
    assert_ne!(token, EMPTY);
    assert_eq!(applied["changes"]["opened"].as_array().map(Vec::len), Some(3));
    let again = step(&backend, "preview", json!({"snapshot": register})).await.expect("a preview");
    assert_eq!(
        (again["opened"].clone(), again["unchanged"].clone(), again["stateToken"].clone()),
        (json!(0), json!(3), json!(token))
    );
    let stale = step(&backend, "apply", at).await.expect_err("the old token");
    assert_eq!(stale_state_token(&stale), Some(token.as_str()), "{stale:?}");
    assert_eq!(
        query(&backend, json!([])).await,
        ["company/C-1", "company/C-2", "person/K-9"],
        "a natural key is a key"
    );

    // A changed register: one new, one changed, one gone.
    let changed = snapshot(
        "2026",
        json!([
            {"kind": "company", "key": "C-2", "title": "Late delivery", "attributes": {"amount": 90}},
            {"kind": "company", "key": "C-3", "attributes": {"amount": 10}},
            {"kind": "person", "naturalKey": "K-9", "attributes": {"name": "Jonas Berg"}},
        ]),
    );
    let plan = step(&backend, "apply", json!({"snapshot": changed, "expected": token})).await.expect("applied");
    assert_eq!(
        (plan["opened"].clone(), plan["closed"].clone(), plan["superseded"].clone(), plan["unchanged"].clone()),
        (json!(2), json!(2), json!(1), json!(1))
    );
    assert_eq!(query(&backend, json!([])).await, ["company/C-2", "company/C-3", "person/K-9"]);
}
