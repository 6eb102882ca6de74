//! An in-memory core for tests: artifacts and a knowledge base with the platform's plan,
//! state-token and query semantics. Install it per call with `testing::call(..).core(&fake)`.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use serde_json::{Value, json};

use crate::SkillError;
use crate::core::{ArtifactContent, CoreAccess, CoreFuture, KnowledgeRoute};

pub use skill_contract::knowledge::state_token;
use skill_contract::knowledge::{Slot, State, plan, query_item, read_snapshot};

#[derive(Debug, Default)]
struct Store {
    artifacts: BTreeMap<String, (Vec<u8>, Option<String>)>,
    reads: Vec<String>,
    /// In the order the slots were first applied.
    slots: Vec<(Slot, State)>,
    applied: Vec<Value>,
    documents: Vec<Value>,
    recalls: Vec<Value>,
    queries: Vec<Value>,
    recall_answer: Option<Value>,
}

/// The in-memory core. Clones share one store.
#[derive(Debug, Clone, Default)]
pub struct FakeCore {
    store: Arc<Mutex<Store>>,
}

fn text(value: Option<&Value>) -> String {
    value.and_then(Value::as_str).unwrap_or("").to_owned()
}

impl FakeCore {
    pub fn new() -> Self {
        Self::default()
    }

    fn store(&self) -> MutexGuard<'_, Store> {
        self.store.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Adds an artifact (text is stored as UTF-8).
    pub fn put_artifact(&self, id: &str, data: impl Into<Vec<u8>>, media_type: Option<&str>) {
        self.store().artifacts.insert(id.to_owned(), (data.into(), media_type.map(str::to_owned)));
    }

    /// The artifact ids read, in order.
    pub fn artifact_reads(&self) -> Vec<String> {
        self.store().reads.clone()
    }

    /// The snapshots applied, in order (each with its `workspaceId`).
    pub fn applied(&self) -> Vec<Value> {
        self.store().applied.clone()
    }

    /// The documents stored, in order.
    pub fn documents(&self) -> Vec<Value> {
        self.store().documents.clone()
    }

    /// The recall queries, in order.
    pub fn recalls(&self) -> Vec<Value> {
        self.store().recalls.clone()
    }

    /// The entity queries, as `{workspaceId, kinds, where, asOf}`.
    pub fn queries(&self) -> Vec<Value> {
        self.store().queries.clone()
    }

    /// What `recall` answers (`{"sections": []}` until set).
    pub fn set_recall_answer(&self, answer: Value) {
        self.store().recall_answer = Some(answer);
    }

    /// The state token of a slot now.
    pub fn slot_token(&self, workspace_id: &str, pack: &str, source: &str, scope: &str) -> String {
        let slot = (workspace_id.to_owned(), pack.to_owned(), source.to_owned(), scope.to_owned());
        let store = self.store();
        let state = store.slots.iter().find(|(s, _)| *s == slot).map(|(_, state)| state.clone()).unwrap_or_default();
        state_token(&state)
    }

    fn knowledge_call(&self, route: KnowledgeRoute, body: Value) -> Result<Value, SkillError> {
        let mut store = self.store();
        match route {
            KnowledgeRoute::Preview | KnowledgeRoute::Apply => {
                let (slot, wanted) = read_snapshot(&body);
                let current =
                    store.slots.iter().find(|(s, _)| *s == slot).map(|(_, state)| state.clone()).unwrap_or_default();
                let token = state_token(&current);
                if route == KnowledgeRoute::Preview {
                    return Ok(plan(&current, &wanted, token).to_value());
                }
                if let Some(expected) = body.get("expectedState").and_then(Value::as_str)
                    && expected != token
                {
                    return Err(SkillError::new("snapshot_stale")
                        .with_message("the knowledge state changed since it was read")
                        .with_detail("stateToken", json!(token)));
                }
                let new_token = state_token(&wanted);
                let answer = plan(&current, &wanted, new_token).to_value();
                match store.slots.iter_mut().find(|(s, _)| *s == slot) {
                    Some((_, state)) => *state = wanted,
                    None => store.slots.push((slot, wanted)),
                }
                store.applied.push(body);
                Ok(answer)
            }
            KnowledgeRoute::Document => {
                let natural_key = body.get("naturalKey").cloned().unwrap_or(Value::Null);
                store.documents.push(body);
                Ok(json!({"naturalKey": natural_key, "status": "stored"}))
            }
            KnowledgeRoute::Recall => {
                store.recalls.push(body);
                Ok(store.recall_answer.clone().unwrap_or_else(|| json!({"sections": []})))
            }
            KnowledgeRoute::Query => {
                let workspace = text(body.get("workspaceId"));
                let kinds: Vec<String> =
                    body.get("kinds").and_then(Value::as_array).into_iter().flatten().map(|k| text(Some(k))).collect();
                let conditions = body.get("where").and_then(Value::as_array).cloned().unwrap_or_default();
                store.queries.push(json!({
                    "workspaceId": workspace, "kinds": kinds, "where": conditions.clone(),
                    "asOf": body.get("asOf").cloned().unwrap_or(Value::Null),
                }));
                // Conditions that do not read match nothing, as the core refuses them.
                let read: Option<Vec<skill_contract::knowledge::Condition>> =
                    serde_json::from_value(Value::Array(conditions)).ok();
                let mut found: BTreeMap<(String, String), Value> = BTreeMap::new();
                for ((slot_workspace, _, source, scope), state) in &store.slots {
                    if *slot_workspace != workspace {
                        continue;
                    }
                    for (id, stored) in state {
                        let item = query_item(id, stored, source, scope);
                        if kinds.contains(&item.kind)
                            && read.iter().flatten().all(|c| skill_contract::knowledge::holds(c, &item.attributes))
                            && read.is_some()
                        {
                            found.insert((item.kind.clone(), item.key.clone()), item.to_value());
                        }
                    }
                }
                Ok(json!({"items": found.into_values().collect::<Vec<_>>(), "nextCursor": null}))
            }
        }
    }
}

impl CoreAccess for FakeCore {
    fn read_artifact<'a>(
        &'a self,
        id: &'a str,
        _for_task: Option<&'a str>,
        _timeout: Duration,
    ) -> CoreFuture<'a, ArtifactContent> {
        Box::pin(async move {
            let mut store = self.store();
            store.reads.push(id.to_owned());
            match store.artifacts.get(id) {
                Some((data, media_type)) => {
                    Ok(ArtifactContent { data: data.clone(), media_type: media_type.clone(), sha256: None })
                }
                None => Err(SkillError::new("artifact_not_found").with_message(format!("no artifact {id}"))),
            }
        })
    }

    fn knowledge<'a>(&'a self, route: KnowledgeRoute, body: Value, _timeout: Duration) -> CoreFuture<'a, Value> {
        Box::pin(async move { self.knowledge_call(route, body) })
    }
}
