//! The knowledge base's semantics, shared by the core and the SDK's `FakeCore` so the two cannot
//! drift apart: a snapshot replaces one slot `(workspace, pack, source, scope)`; its plan (opened,
//! changed, closed, unchanged) and the slot's state token (`fingerprint.rs`); the conditions of an
//! entity query (`conditions.rs`).

mod conditions;
mod fingerprint;

use std::collections::BTreeMap;

use serde_json::{Value, json};

pub use conditions::{Condition, OPS, Op, holds};
pub use fingerprint::{python_json, state_token};

/// `(workspaceId, pack, source, scope)`; a missing part is `""`.
pub type Slot = (String, String, String, String);
/// Entity id (`kind␟key`) → the stored entity (the snapshot's entity without `kind`).
pub type State = BTreeMap<String, Value>;

/// The most changes a plan lists of each kind.
pub const PLAN_LIMIT: usize = 1000;

fn text(value: Option<&Value>) -> String {
    value.and_then(Value::as_str).unwrap_or("").to_owned()
}

/// `kind` and `key` (or `naturalKey`) of an entity.
pub fn kind_and_key(entity: &Value) -> (String, String) {
    let key = entity.get("key").or_else(|| entity.get("naturalKey"));
    (text(entity.get("kind")), text(key))
}

/// An entity's id in a state: `kind␟key`.
pub fn entity_id(kind: &str, key: &str) -> String {
    format!("{kind}\u{241f}{key}")
}

/// The `(kind, key)` of an entity id.
pub fn split_id(id: &str) -> (&str, &str) {
    id.split_once('\u{241f}').unwrap_or((id, ""))
}

fn listed(ids: &[&String]) -> (Vec<Value>, bool) {
    let truncated = ids.len() > PLAN_LIMIT;
    let items = ids.iter().take(PLAN_LIMIT).map(|id| {
        let (kind, key) = split_id(id);
        json!({"kind": kind, "key": key})
    });
    (items.collect(), truncated)
}

// The API's `SnapshotPlan`, defined here so the core and `FakeCore` compute it alike.
/// What a snapshot does (or did) to its slot.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "SnapshotPlan")]
pub struct Plan {
    /// New and changed entities.
    pub opened: usize,
    /// Removed and changed entities.
    pub closed: usize,
    /// Changed entities.
    pub superseded: usize,
    pub unchanged: usize,
    /// `{opened, changed, closed: [{kind, key}], limit, truncated}`.
    pub changes: Value,
    /// `{items, limit, truncated}`.
    pub conflicts: Value,
    /// The slot's state token: before the snapshot for a preview, after it for an apply.
    pub state_token: String,
}

impl Plan {
    /// The plan as the API answers it.
    pub fn to_value(&self) -> Value {
        serde_json::to_value(self).unwrap_or_default()
    }
}

/// One entity as a query answers it.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Item {
    pub kind: String,
    pub key: String,
    pub title: String,
    pub attributes: Value,
    pub source: String,
    pub scope: String,
}

impl Item {
    /// The item as the API answers it.
    pub fn to_value(&self) -> Value {
        serde_json::to_value(self).unwrap_or_default()
    }
}

/// The plan of replacing `current` by `wanted`, answered with the state token `token`.
pub fn plan(current: &State, wanted: &State, token: String) -> Plan {
    let new: Vec<&String> = wanted.keys().filter(|id| !current.contains_key(*id)).collect();
    let changed: Vec<&String> =
        wanted.keys().filter(|id| current.get(*id).is_some_and(|old| old != &wanted[*id])).collect();
    let removed: Vec<&String> = current.keys().filter(|id| !wanted.contains_key(*id)).collect();
    let (opened, opened_cut) = listed(&new);
    let (changed_list, changed_cut) = listed(&changed);
    let (closed, closed_cut) = listed(&removed);
    Plan {
        opened: new.len() + changed.len(),
        closed: removed.len() + changed.len(),
        superseded: changed.len(),
        unchanged: wanted.len() - new.len() - changed.len(),
        changes: json!({
            "opened": opened, "changed": changed_list, "closed": closed,
            "limit": PLAN_LIMIT, "truncated": opened_cut || changed_cut || closed_cut,
        }),
        conflicts: json!({"items": [], "limit": PLAN_LIMIT, "truncated": false}),
        state_token: token,
    }
}

/// The slot and the wanted state of a snapshot body (`{workspaceId, pack, source, scope,
/// entities: [{kind, key | naturalKey, …}]}`).
pub fn read_snapshot(body: &Value) -> (Slot, State) {
    let slot =
        (text(body.get("workspaceId")), text(body.get("pack")), text(body.get("source")), text(body.get("scope")));
    let mut wanted = State::new();
    for entity in body.get("entities").and_then(Value::as_array).into_iter().flatten() {
        let (kind, key) = kind_and_key(entity);
        let mut stored = entity.as_object().cloned().unwrap_or_default();
        stored.remove("kind");
        wanted.insert(entity_id(&kind, &key), Value::Object(stored));
    }
    (slot, wanted)
}

/// The item an entity query answers for the stored entity `id` of a slot's `source` and `scope`.
pub fn query_item(id: &str, stored: &Value, source: &str, scope: &str) -> Item {
    let (kind, key) = split_id(id);
    Item {
        kind: kind.to_owned(),
        key: key.to_owned(),
        title: text(stored.get("title")),
        attributes: stored.get("attributes").cloned().unwrap_or_else(|| json!({})),
        source: source.to_owned(),
        scope: scope.to_owned(),
    }
}
