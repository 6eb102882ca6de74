//! Knowledge snapshots and entity queries: one behaviour, run against the SDK's `FakeCore` and
//! against this core (SQLite and PostgreSQL) through the SDK's HTTP client — so the fake and the
//! core cannot drift apart.

use serde_json::{Value, json};
use skill_engine::Origin;
use skill_sdk::core::http::HttpCore;
use skill_sdk::core::{CoreAccess, KnowledgeRoute, stale_state_token};

use crate::api::token;
use crate::calls::each_backend;

/// The state token of an empty slot.
const EMPTY: &str = "st:44136fa355b3678a";

fn snapshot(workspace: &str, entities: Value) -> Value {
    json!({"workspaceId": workspace, "pack": "claims", "source": "register.csv", "scope": "2026", "entities": entities})
}

async fn call(core: &dyn CoreAccess, route: KnowledgeRoute, body: Value) -> Result<Value, skill_sdk::SkillError> {
    core.knowledge(route, body, std::time::Duration::from_secs(10)).await
}

/// The keys a query answers.
async fn keys(core: &dyn CoreAccess, workspace: &str, conditions: Value) -> Vec<String> {
    let body = json!({"workspaceId": workspace, "kinds": ["claim"], "limit": 500, "where": conditions});
    let page = call(core, KnowledgeRoute::Query, body).await.expect("a page");
    page["items"].as_array().expect("items").iter().filter_map(|item| item["key"].as_str().map(str::to_owned)).collect()
}

/// The import-rows story: preview, apply at the token, preview again opens nothing, the old
/// token is stale; then queries by conditions and a changed snapshot's plan.
async fn knowledge_behaviour(core: &dyn CoreAccess, workspace: &str) {
    let rows = json!([
        {"kind": "claim", "key": "C-1", "title": "Lost parcel", "attributes": {"amount": 120, "region": "62.01", "tags": ["urgent"]}},
        {"kind": "claim", "key": "C-2", "title": "Late delivery", "attributes": {"amount": 80.5, "region": "62.011", "opened": "2026-03-01"}},
        {"kind": "customer", "naturalKey": "K-9", "attributes": {"name": "Jonas Berg"}},
    ]);
    let preview = call(core, KnowledgeRoute::Preview, snapshot(workspace, rows.clone())).await.expect("a preview");
    assert_eq!(
        (preview["opened"].clone(), preview["closed"].clone(), preview["stateToken"].clone()),
        (json!(3), json!(0), json!(EMPTY))
    );
    let mut apply = snapshot(workspace, rows.clone());
    apply["expectedState"] = preview["stateToken"].clone();
    let applied = call(core, KnowledgeRoute::Apply, apply.clone()).await.expect("applied");
    let token = applied["stateToken"].as_str().expect("a token").to_owned();
    assert_ne!(token, EMPTY);
    assert_eq!(applied["changes"]["opened"].as_array().map(Vec::len), Some(3));
    let again = call(core, KnowledgeRoute::Preview, snapshot(workspace, rows.clone())).await.expect("a preview");
    assert_eq!(
        (again["opened"].clone(), again["unchanged"].clone(), again["stateToken"].clone()),
        (json!(0), json!(3), json!(token))
    );
    let stale = call(core, KnowledgeRoute::Apply, apply).await.expect_err("the old token");
    assert_eq!(stale_state_token(&stale), Some(token.as_str()), "{stale:?}");

    // Conditions, with the platform's semantics.
    assert_eq!(keys(core, workspace, json!([])).await, ["C-1", "C-2"]);
    assert_eq!(keys(core, workspace, json!([{"attribute": "amount", "op": "gte", "value": 100}])).await, ["C-1"]);
    assert_eq!(
        keys(core, workspace, json!([{"attribute": "region", "op": "prefix", "value": "62.01"}])).await,
        ["C-1"]
    );
    assert_eq!(keys(core, workspace, json!([{"attribute": "tags", "op": "eq", "value": "urgent"}])).await, ["C-1"]);
    assert_eq!(keys(core, workspace, json!([{"attribute": "opened", "op": "exists"}])).await, ["C-2"]);
    assert_eq!(
        keys(core, workspace, json!([{"attribute": "opened", "op": "lte", "value": "2026-03-02"}])).await,
        ["C-2"]
    );
    assert_eq!(keys(core, workspace, json!([{"attribute": "amount", "op": "in", "value": [80.5, 7]}])).await, ["C-2"]);

    // A changed snapshot: one new, one changed, one gone.
    let changed = json!([
        {"kind": "claim", "key": "C-2", "title": "Late delivery", "attributes": {"amount": 90}},
        {"kind": "claim", "key": "C-3", "attributes": {"amount": 10}},
        {"kind": "customer", "naturalKey": "K-9", "attributes": {"name": "Jonas Berg"}},
    ]);
    let mut next = snapshot(workspace, changed);
    next["expectedState"] = json!(token);
    let plan = call(core, KnowledgeRoute::Apply, next).await.expect("applied");
    assert_eq!(
        (plan["opened"].clone(), plan["closed"].clone(), plan["superseded"].clone(), plan["unchanged"].clone()),
        (json!(2), json!(2), json!(1), json!(1))
    );
    assert_eq!(keys(core, workspace, json!([])).await, ["C-2", "C-3"]);

    // A document is stored under its natural key.
    let document = json!({"workspaceId": workspace, "naturalKey": "letter-C-2", "title": "Our letter about the delay",
                          "type": "document", "chunks": ["We apologise for the late parcel."], "links": ["claim:C-2"]});
    let stored = call(core, KnowledgeRoute::Document, document).await.expect("stored");
    assert_eq!(stored, json!({"naturalKey": "letter-C-2", "status": "stored"}));
}

#[tokio::test]
async fn the_fake_core_keeps_knowledge_as_the_core_does() {
    knowledge_behaviour(&skill_sdk::testing::FakeCore::new(), "w-1").await;
}

#[tokio::test]
async fn the_core_keeps_knowledge_as_the_fake_does() {
    each_backend("knowledge", |core| async move {
        core.engine.create_workspace("claims", "claims", &Origin::default()).await.expect("workspace");
        let workspace = core.engine.store().workspace_by_key("claims").await.expect("the workspace").id;
        let writer = token(&core.engine, "importer", &["knowledge.write@claims"]).await;
        let root = core.base.trim_end_matches("/api/v1").to_owned();
        let http = HttpCore::new(&root, Some(writer.clone())).expect("the SDK's core client");
        knowledge_behaviour(&http, &workspace).await;
        // Only with knowledge permissions in the workspace.
        let reader = token(&core.engine, "reader-knowledge", &["tasks.write@claims"]).await;
        let refused = core
            .post(&reader, "/knowledge/entities:query", &json!({"workspaceId": "claims", "kinds": ["claim"]}))
            .await;
        refused.refused(403, "permission_denied");
        let bad = core
            .post(&writer, "/knowledge/snapshots", &json!({"workspaceId": "claims", "entities": [{"kind": "claim"}]}))
            .await;
        assert_eq!(bad.refused(400, "invalid_request").body["error"]["details"]["field"], "entities[0].key");
        // Recall from the anchor: the entity, what mentions it (to a depth), its documents and
        // the ones its words find.
        let related = snapshot(
            &workspace,
            json!([
                {"kind": "note", "key": "N-1", "attributes": {"claim": "C-2"}},
                {"kind": "note", "key": "N-2", "attributes": {"about": "note:N-1"}},
                {"kind": "note", "key": "N-3", "attributes": {"claim": "C-3"}},
            ]),
        );
        let mut notes = related.clone();
        notes["source"] = json!("notes");
        call(&http, KnowledgeRoute::Apply, notes).await.expect("notes applied");
        let other = json!({"workspaceId": workspace, "naturalKey": "faq-parcels", "title": "Parcels",
                           "chunks": [{"text": "How delivery works"}]});
        call(&http, KnowledgeRoute::Document, other).await.expect("stored");
        let recall = |depth: u32| {
            let http = &http;
            let body = json!({"workspaceId": workspace, "anchor": {"kind": "claim", "key": "C-2"}, "depth": depth});
            async move { call(http, KnowledgeRoute::Recall, body).await.expect("a recall") }
        };
        let names = |answer: &Value, section: usize, field: &str| -> Vec<String> {
            answer["sections"][section]["items"]
                .as_array()
                .expect("items")
                .iter()
                .filter_map(|item| item[field].as_str().map(str::to_owned))
                .collect()
        };
        let deep = recall(2).await;
        assert_eq!(names(&deep, 0, "key"), ["C-2"]);
        assert_eq!(names(&deep, 1, "key"), ["N-1", "N-2"], "{deep}");
        let docs = names(&deep, 2, "naturalKey");
        assert_eq!(docs.first().map(String::as_str), Some("letter-C-2"), "linked first: {deep}");
        assert_eq!(names(&recall(1).await, 1, "key"), ["N-1"]);
        let by_words = json!({"workspaceId": workspace, "query": "delivery"});
        let found = call(&http, KnowledgeRoute::Recall, by_words).await.expect("a recall");
        let found = names(&found, 0, "naturalKey");
        assert!(found.contains(&"faq-parcels".to_owned()), "{found:?}");
        core.post(&writer, "/context/recall", &json!({"workspaceId": "claims"})).await.refused(400, "invalid_request");

        let paged = core
            .post(
                &writer,
                "/knowledge/entities:query",
                &json!({"workspaceId": "claims", "kinds": ["claim"], "limit": 1}),
            )
            .await
            .ok(200)
            .clone();
        assert_eq!((paged["items"][0]["key"].clone(), paged["nextCursor"].is_string()), (json!("C-2"), true));
        let rest = core
            .post(
                &writer,
                "/knowledge/entities:query",
                &json!({"workspaceId": "claims", "kinds": ["claim"], "limit": 1,
                                                                 "cursor": paged["nextCursor"]}),
            )
            .await
            .ok(200)
            .clone();
        assert_eq!((rest["items"][0]["key"].clone(), rest["nextCursor"].clone()), (json!("C-3"), Value::Null));
    })
    .await;
}
