//! Assignments of skill versions to principals.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::SkillStatus;

/// The body of `POST /principals/{principal}/skills`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AssignRequest {
    /// The version: an id or `name@version`.
    pub skill_id: String,
    /// A JSON object kept with the assignment.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Value>,
}

/// The answer of an assignment: `created` is false when it was there already; `updated` is
/// true when it was, with other metadata, which the request replaced.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Assigned {
    pub principal_id: String,
    pub skill: String,
    pub created: bool,
    #[serde(default)]
    pub updated: bool,
}

/// The answer of taking an assignment back: `revoked` is false when there was none.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Revoked {
    pub principal_id: String,
    pub skill: String,
    pub revoked: bool,
}

/// A version assigned to a principal.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AssignedSkill {
    pub skill_id: String,
    pub name: String,
    pub version: String,
    pub status: SkillStatus,
    pub metadata: Value,
    pub assigned_at: String,
}
