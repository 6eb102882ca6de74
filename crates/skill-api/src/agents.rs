//! Agents: the principals a package declares (`agents/*.yaml`) with what they may call, the
//! executor agents with what they may run, and tokens issued for them.

use serde::{Deserialize, Serialize};
use skill_contract::agent::{AgentKind, AgentSpec};

use crate::{InvocationOut, RequestStatus};

/// An agent document as `POST /packages:apply` carries it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AgentRequest {
    /// The agent's key, which is also its principal's name.
    pub key: String,
    /// The document's spec (`AgentSpec`), read by the core with the document's paths.
    #[schemars(with = "AgentSpec")]
    pub spec: serde_json::Value,
}

/// An agent as the core keeps it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AgentOut {
    pub key: String,
    pub kind: AgentKind,
    /// Its principal (named as the agent).
    pub principal_id: String,
    /// The package that installed it.
    pub package: Option<String>,
    /// Moves each time an install changes what the agent may do.
    pub revision: i32,
    pub spec: AgentSpec,
    /// Whether its principal is disabled (its tokens do not work).
    pub disabled: bool,
    pub created_at: String,
    pub updated_at: String,
}

/// The body of `POST /agents/{key}/tokens`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AgentTokenRequest {
    /// A note on what the token is for (at most 200 characters).
    #[serde(default)]
    pub label: String,
    /// Days until the token expires, 1 to 3650 (never when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_in_days: Option<u32>,
    /// The name of the person who operates the agent with this token: whatever the agent does
    /// with it, that person set in motion (so they never decide its requests). Through the API,
    /// the person asking when absent; the operator's command requires it (`--for`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub operated_by: Option<String>,
}

/// A token issued for an agent: the secret is shown once and stored only as its hash.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AgentTokenOut {
    pub token: String,
    pub token_id: String,
    pub agent: String,
    pub principal_id: String,
    pub expires_at: Option<String>,
    /// The person operating the agent with it: `{id, name}` (none for an executor's token).
    pub operated_by: Option<OperatorOut>,
}

/// The person operating an agent with a token.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct OperatorOut {
    pub id: String,
    pub name: String,
}

/// The MCP client an agent called through, as it named itself.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClientInfo {
    pub name: String,
    pub version: String,
}

/// An agent's request for an external write it had no basis for: the exact call, the task and
/// gate approval a person decides it with, and what became of it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AgentRequestOut {
    pub id: String,
    /// The agent's key (its principal's name).
    pub agent: String,
    pub agent_principal_id: String,
    /// `name@version`.
    pub skill: String,
    pub skill_id: String,
    pub inputs: serde_json::Value,
    pub client: ClientInfo,
    pub status: RequestStatus,
    /// Where its approval is: pending until a person decides.
    pub decision: crate::ApprovalStatus,
    pub task_id: String,
    pub approval_id: String,
    /// The call made once a person approved.
    pub invocation_id: Option<String>,
    /// That call, once made.
    pub call: Option<Box<InvocationOut>>,
    pub expires_at: String,
    pub created_at: String,
    pub ended_at: Option<String>,
}
