//! The events journal as readers see it: every state change appends one event.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One entry of the journal.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct EventOut {
    /// The journal's order: strictly increasing.
    pub seq: i64,
    pub id: String,
    /// `skill.registered`, `skill.updated`, `package.installed`, …
    pub kind: String,
    /// What it is about: `skill:<id>`, `principal:<id>`, `package:<key>`.
    pub subject: String,
    pub data: Value,
    pub actor_id: Option<String>,
    pub request_id: Option<String>,
    pub created_at: String,
}

/// The query of `GET /events`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EventsQuery {
    /// Events after this sequence number (default 0).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub after: Option<i64>,
    /// Only this subject's events.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub subject: Option<String>,
    /// 1 to 1000, default 100.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub limit: Option<u32>,
}
