//! Knowledge through a real core (SQLite and PostgreSQL): the behaviour the SDK's `FakeCore`
//! defines — the SDK's own cases (`skill-sdk/tests/it/support/core_behaviour.rs`), run unchanged
//! through the SDK's HTTP client, so the fake and the core cannot drift apart — and what only the
//! core does: permissions, refusals naming the field, recall, pages.

#[path = "../../../skill-sdk/tests/it/support/core_behaviour.rs"]
mod core_behaviour;

use std::sync::Arc;

use serde_json::{Value, json};
use skill_engine::Origin;
use skill_sdk::core::http::HttpCore;
use skill_sdk::core::{CoreAccess, KnowledgeRoute};

use crate::api::token;
use crate::calls::each_backend;

fn snapshot(workspace: &str, entities: Value) -> Value {
    json!({"workspaceId": workspace, "pack": "claims", "source": "register.csv", "scope": "2026", "entities": entities})
}

async fn call(core: &dyn CoreAccess, route: KnowledgeRoute, body: Value) -> Result<Value, skill_sdk::SkillError> {
    core.knowledge(route, body, std::time::Duration::from_secs(10)).await
}

#[tokio::test]
async fn the_core_keeps_knowledge_as_the_fake_does() {
    each_backend("knowledge-behaviour", |core| async move {
        // The whole core lives as long as the cases, its scratch folder with it (the block would
        // otherwise take only the fields it names and drop the rest).
        let core = core;
        // A workspace of its own for each case, and one account that may write them all.
        let mut workspaces = Vec::new();
        for index in 0..core_behaviour::CASES.len() {
            let key = format!("case-{index}");
            core.engine.create_workspace(&key, &key, &Origin::default()).await.expect("workspace");
            workspaces.push(core.engine.store().workspace_by_key(&key).await.expect("the workspace").id);
        }
        let grants: Vec<String> = (0..workspaces.len()).map(|index| format!("knowledge.write@case-{index}")).collect();
        let grants: Vec<&str> = grants.iter().map(String::as_str).collect();
        let writer = token(&core.engine, "behaviour", &grants).await;
        let root = core.base.trim_end_matches("/api/v1").to_owned();
        let http: Arc<dyn CoreAccess> = Arc::new(HttpCore::new(&root, Some(writer)).expect("the SDK's core client"));
        let mut next = workspaces.into_iter();
        core_behaviour::run_all(|_| {
            let backend =
                core_behaviour::Backend { core: http.clone(), workspace: next.next().expect("a workspace per case") };
            async move { backend }
        })
        .await;
    })
    .await;
}

#[tokio::test]
async fn the_core_checks_knowledge_requests_recalls_and_pages() {
    each_backend("knowledge", |core| async move {
        core.engine.create_workspace("claims", "claims", &Origin::default()).await.expect("workspace");
        let workspace = core.engine.store().workspace_by_key("claims").await.expect("the workspace").id;
        let writer = token(&core.engine, "importer", &["knowledge.write@claims"]).await;
        let root = core.base.trim_end_matches("/api/v1").to_owned();
        let http = HttpCore::new(&root, Some(writer.clone())).expect("the SDK's core client");
        let claims = json!([
            {"kind": "claim", "key": "C-2", "title": "Late delivery", "attributes": {"amount": 90}},
            {"kind": "claim", "key": "C-3", "attributes": {"amount": 10}},
        ]);
        call(&http, KnowledgeRoute::Apply, snapshot(&workspace, claims)).await.expect("applied");
        let letter = json!({"workspaceId": workspace, "naturalKey": "letter-C-2", "title": "Our letter about the delay",
                            "type": "document", "chunks": ["We apologise for the late parcel."], "links": ["claim:C-2"]});
        let stored = call(&http, KnowledgeRoute::Document, letter).await.expect("stored");
        assert_eq!(stored, json!({"naturalKey": "letter-C-2", "status": "stored"}));
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

#[tokio::test]
async fn a_query_pages_through_many_entities_and_keys_held_by_many_slots() {
    each_backend("knowledge-pages", |core| async move {
        let core = core;
        core.engine.create_workspace("claims", "claims", &Origin::default()).await.expect("workspace");
        let writer = token(&core.engine, "importer", &["knowledge.write@claims"]).await;
        let entities: Vec<Value> = (0..450)
            .map(|n| json!({"kind": "claim", "key": format!("C-{n:03}"), "attributes": {"amount": n}}))
            .collect();
        let register = json!({"workspaceId": "claims", "pack": "claims", "source": "register", "entities": entities});
        core.post(&writer, "/knowledge/snapshots", &register).await.ok(200);
        // C-000 is in six more slots; the slot applied last wins.
        for slot in 1..=6 {
            let overlay = json!({"workspaceId": "claims", "pack": "claims", "source": format!("overlay-{slot}"),
                                 "entities": [{"kind": "claim", "key": "C-000", "attributes": {"amount": 1000 + slot}}]});
            core.post(&writer, "/knowledge/snapshots", &overlay).await.ok(200);
        }
        let page = |body: Value| {
            let (core, writer) = (&core, &writer);
            async move { core.post(writer, "/knowledge/entities:query", &body).await.ok(200).clone() }
        };
        // Pages of one: the first key's seven rows are more than the first batch reads.
        let first = page(json!({"workspaceId": "claims", "kinds": ["claim"], "limit": 1})).await;
        assert_eq!(
            (first["items"][0]["key"].clone(), first["items"][0]["attributes"]["amount"].clone()),
            (json!("C-000"), json!(1006))
        );
        // A condition only the first (as its last slot has it) and the last entity meet: after the
        // first, every batch is read for one item.
        let wanted = json!([{"attribute": "amount", "op": "gte", "value": 449}]);
        let head = page(json!({"workspaceId": "claims", "kinds": ["claim"], "limit": 1, "where": wanted})).await;
        assert_eq!(head["items"][0]["key"], "C-000", "{head}");
        let rest = page(json!({"workspaceId": "claims", "kinds": ["claim"], "limit": 1, "where": wanted,
                               "cursor": head["nextCursor"]}))
        .await;
        assert_eq!((rest["items"][0]["key"].clone(), rest["nextCursor"].clone()), (json!("C-449"), Value::Null));
        // Every entity once, in order, through pages of seven.
        let mut keys = Vec::new();
        let mut cursor = Value::Null;
        loop {
            let answer = page(json!({"workspaceId": "claims", "kinds": ["claim"], "limit": 7, "cursor": cursor,
                                     "where": [{"attribute": "amount", "op": "lte", "value": 2000}]}))
            .await;
            let items = answer["items"].as_array().expect("items");
            assert!(items.len() <= 7);
            keys.extend(items.iter().map(|item| item["key"].as_str().expect("a key").to_owned()));
            cursor = answer["nextCursor"].clone();
            if cursor.is_null() {
                break;
            }
        }
        let expected: Vec<String> = (0..450).map(|n| format!("C-{n:03}")).collect();
        assert_eq!(keys, expected);
    })
    .await;
}

#[tokio::test]
async fn a_query_and_a_recall_do_a_bounded_amount_of_work() {
    each_backend("knowledge-bounds", |core| async move {
        let core = core;
        core.engine.create_workspace("claims", "claims", &Origin::default()).await.expect("workspace");
        let writer = token(&core.engine, "bounded", &["knowledge.write@claims"]).await;
        // 25,000 entities in three slots; only the last 5 match the condition below.
        for (source, from, count) in [("a", 0, 10_000), ("b", 10_000, 10_000), ("c", 20_000, 5_000)] {
            let entities: Vec<Value> = (from..from + count)
                .map(|n| json!({"kind": "claim", "key": format!("C-{n:05}"), "attributes": {"amount": n}}))
                .collect();
            let body = json!({"workspaceId": "claims", "pack": "claims", "source": source, "entities": entities});
            core.post(&writer, "/knowledge/snapshots", &body).await.ok(200);
        }
        let query = |body: Value| {
            let (core, writer) = (&core, &writer);
            async move { core.post(writer, "/knowledge/entities:query", &body).await }
        };
        // A selective condition: the first page stops after a bounded read, short, with a cursor;
        // following the cursors finds exactly what matches.
        let wanted = json!([{"attribute": "amount", "op": "gte", "value": 24_995}]);
        let mut found = Vec::new();
        let mut cursor = Value::Null;
        let mut pages = 0;
        loop {
            let body = json!({"workspaceId": "claims", "kinds": ["claim"], "where": wanted, "cursor": cursor});
            let page = query(body).await.ok(200).clone();
            found.extend(page["items"].as_array().expect("items").iter().map(|i| i["key"].clone()));
            pages += 1;
            cursor = page["nextCursor"].clone();
            if cursor.is_null() {
                break;
            }
        }
        assert!(pages >= 2, "the first page stopped at its bound ({pages} pages)");
        let expected: Vec<Value> = (24_995..25_000).map(|n| json!(format!("C-{n:05}"))).collect();
        assert_eq!(found, expected);
        // An op there is not, a cursor this listing never gave: refused, naming the field.
        let unknown = query(json!({"workspaceId": "claims", "kinds": ["claim"],
                                   "where": [{"attribute": "amount", "op": "greater", "value": 1}]}))
        .await;
        assert_eq!(unknown.refused(400, "invalid_request").body["error"]["details"]["field"], "where[0].op");
        let cursor = query(json!({"workspaceId": "claims", "kinds": ["claim"], "cursor": "garbage"})).await;
        assert_eq!(cursor.refused(400, "invalid_request").body["error"]["details"]["field"], "cursor");
        // A recall from an anchor over more entities than it reads: refused, saying how to narrow.
        let recall = json!({"workspaceId": "claims", "anchor": {"kind": "claim", "key": "C-00001"}});
        let broad = core.post(&writer, "/context/recall", &recall).await;
        assert_eq!(broad.refused(422, "recall_too_broad").body["error"]["details"]["field"], "kinds");
    })
    .await;
}
