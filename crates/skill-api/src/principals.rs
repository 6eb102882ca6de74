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
    /// A read-only assignment never grants a tool that writes, whatever a composite contains
    /// (default false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_only: Option<bool>,
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
    #[serde(default)]
    pub read_only: bool,
    pub assigned_at: String,
}

/// The body of `POST /principals:disable`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DisableRequest {
    /// The principal: its id or its name.
    pub principal: String,
    /// Why, as a code (`^[a-z0-9][a-z0-9_.-]*$`, at most 100 characters, e.g. `offboarded`): the
    /// message of the calls it cancels and the code of the calls it returns to the queue.
    pub reason: String,
}

/// What disabling a principal did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DisableOut {
    pub principal_id: String,
    pub name: String,
    pub disabled_at: String,
    pub reason: String,
    /// The pending and running calls it was the authority of, now cancelled (`basis_revoked`).
    pub cancelled_calls: Vec<String>,
    /// The running calls it executed for others, back to the queue (or failed, when no attempt
    /// remains).
    pub returned_calls: Vec<String>,
}

/// What an executor principal may run, as the operator allows it (the body of
/// `POST /principals/{principal}/executor-allowance`, whole): its claims may declare at most
/// this. The protocols, then for each its implementations.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ExecutorAllowance {
    /// Of `local`, `http`, `mcp`.
    #[serde(default)]
    pub protocols: Vec<String>,
    /// `local` entrypoints (`module:function`), or modules (every function in the module and
    /// its submodules); at most 500.
    #[serde(default)]
    pub local: Vec<String>,
    /// Origins of `http` endpoints (`scheme://host[:port]`); at most 100.
    #[serde(default)]
    pub http_origins: Vec<String>,
    /// Origins of `mcp` endpoints, or `stdio:<name>` servers; at most 100.
    #[serde(default)]
    pub mcp_origins: Vec<String>,
    /// The audiences it may carry tokens for; at most 100.
    #[serde(default)]
    pub audiences: Vec<String>,
}

/// What an executor principal may run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ExecutorAllowanceOut {
    pub principal_id: String,
    pub name: String,
    /// None: the operator allowed it nothing, and its claims are refused.
    pub allowance: Option<ExecutorAllowance>,
}
