//! Knowledge: snapshots that replace one slot `(workspace, pack, source, scope)` whole, and
//! queries of entities by kind and attribute conditions.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// The body of `POST /knowledge/snapshots:preview` and `POST /knowledge/snapshots`. Other fields
/// a snapshot carries are kept out of its state.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SnapshotRequest {
    /// The workspace: its id or its key.
    pub workspace_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pack: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<String>,
    /// Every entity of the slot: `{kind, key | naturalKey, title?, attributes?, …}`.
    #[serde(default)]
    pub entities: Vec<Map<String, Value>>,
    /// Apply only when the slot's state token is this one (`409 snapshot_stale` otherwise).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expected_state: Option<String>,
}

/// What a snapshot does (or did) to its slot.
pub use skill_contract::knowledge::Plan as SnapshotPlan;

/// The body of `POST /knowledge/entities:query`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct EntityQuery {
    pub workspace_id: String,
    /// 1 to 50 kinds.
    pub kinds: Vec<String>,
    /// 1 to 1,000 items a page (default 500).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<u32>,
    /// Conditions `{attribute, op, value}` every item's attributes meet (`eq`, `in`, `prefix`,
    /// `lte`, `gte`, `exists`).
    #[serde(default, rename = "where", skip_serializing_if = "Option::is_none")]
    pub conditions: Option<Vec<Value>>,
    /// Accepted for compatibility; the state now is answered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub as_of: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cursor: Option<String>,
}

/// One page of entities: `{kind, key, title, attributes, source, scope}`, by `(kind, key)`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct EntityPage {
    pub items: Vec<Value>,
    pub next_cursor: Option<String>,
}

/// The body of `POST /knowledge/documents`: a document, replacing the one with its natural key.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DocumentRequest {
    pub workspace_id: String,
    /// 1 to 500 characters.
    pub natural_key: String,
    pub title: String,
    /// Default `document`.
    #[serde(default, rename = "type", skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// The text, in parts: strings, or objects with a `text`.
    pub chunks: Vec<Value>,
    /// The entities it is about: `"kind:key"` or `{kind, key}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub links: Option<Vec<Value>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map<String, Value>>,
}

/// What storing a document did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DocumentOut {
    pub natural_key: String,
    /// `stored`.
    pub status: String,
}

/// The body of `POST /context/recall`: what is relevant to an anchor entity, or to a text. Other
/// fields are accepted and not read.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RecallRequest {
    pub workspace_id: String,
    /// `{kind, key}` of the entity to start from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub anchor: Option<Value>,
    /// Words to find documents by (default: the anchor's key and title).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub query: Option<String>,
    /// How many hops of related entities (0 to 3, default 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub depth: Option<u32>,
    /// Only related entities of these kinds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kinds: Option<Vec<String>>,
    /// The most items a section holds (1 to 100, default 20).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<u32>,
}

/// The answer of a recall: sections `anchor`, `related`, `documents`, each `{name, items}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RecallAnswer {
    pub sections: Vec<Value>,
}
