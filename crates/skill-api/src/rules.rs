//! Facts — what happened in the world, recorded once per workspace, kind and key — and the work
//! rules that interpret them: a rule's document, its evaluations of facts, and a dry run.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use skill_contract::rule::RuleSpec;

use crate::RuleEvaluationStatus;

/// The largest fact data, serialized: 256 KiB.
pub const MAX_FACT_BYTES: usize = 256 * 1024;
/// How many rules a fact's causation may pass before evaluation stops (`rule_loop_suspected`).
pub const MAX_FACT_DEPTH: u32 = 8;

/// The body of `POST /facts`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct FactRequest {
    /// The workspace (its key or id).
    pub workspace: String,
    /// 1 to 128 of `a-z 0-9 . _ -`, starting with a letter or digit: `claim.received`.
    pub kind: String,
    /// What makes the fact one: 1 to 200 characters without control characters. The same
    /// workspace, kind and key with the same data is the same fact.
    pub key: String,
    /// What happened (at most 256 KiB as JSON).
    pub data: Value,
    /// When it happened (RFC 3339); the time it was recorded when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub occurred_at: Option<String>,
    /// Where it comes from (at most 200 characters): `email`, `crm`, a system's name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// The task whose work produced this fact, when it did: its causation depth is that task's
    /// fact's, plus one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub caused_by_task: Option<String>,
}

/// A fact as the core keeps it, with what each rule made of it (on `GET /facts/{id}`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FactOut {
    pub id: String,
    pub workspace_id: String,
    pub kind: String,
    pub key: String,
    pub data: Value,
    pub occurred_at: String,
    pub source: Option<String>,
    /// How many rules' work lies behind it (0: it came from outside).
    pub depth: u32,
    pub caused_by_task: Option<String>,
    pub recorded_by: String,
    /// Who set it in motion (`{person, role, agent?, via}`), fixed when it was made: none of
    /// them decides what lets its work write.
    #[serde(default)]
    pub initiators: Vec<crate::Initiator>,
    pub created_at: String,
    /// When the rules active then were evaluated on it; `None` while that waits.
    pub evaluated_at: Option<String>,
    /// Each rule's evaluation (on `GET /facts/{id}`; empty in lists).
    #[serde(default)]
    pub evaluations: Vec<RuleEvaluationOut>,
}

/// `GET /facts`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct FactQuery {
    /// The workspace (its key or id).
    pub workspace: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cursor: Option<String>,
}

/// A rule document as `POST /rules` and `POST /packages:apply` carry it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RuleRequest {
    /// 1 to 200 of `a-z 0-9 . _ -`, starting with a letter or digit.
    pub key: String,
    /// The document's spec (`RuleSpec`), read by the core with the document's paths.
    #[schemars(with = "RuleSpec")]
    pub spec: Value,
}

/// A rule version as the core keeps it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RuleOut {
    pub id: String,
    pub key: String,
    pub version: String,
    pub spec: RuleSpec,
    /// The principal of the agent it acts as.
    pub agent_principal_id: String,
    /// The interpretation's version id, when it has one.
    pub interpretation_skill_id: Option<String>,
    pub package: Option<String>,
    pub published_by: String,
    pub created_at: String,
}

/// `GET /rules`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RuleQuery {
    /// Only the versions of this key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    /// Only the rules for this kind of fact.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cursor: Option<String>,
}

/// One rule's evaluation of one fact.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RuleEvaluationOut {
    pub id: String,
    pub fact_id: String,
    pub rule_id: String,
    /// `key@version`.
    pub rule: String,
    pub status: RuleEvaluationStatus,
    /// The interpretation's call, once made.
    pub invocation_id: Option<String>,
    /// The tasks it ensured (made, or found under their work keys).
    pub task_ids: Vec<String>,
    /// The process instances it ensured (started, or found under their keys).
    #[serde(default)]
    pub instance_ids: Vec<String>,
    /// The interpretation's result kept as a `skill_result` artifact (the work's evidence).
    pub artifact_id: Option<String>,
    /// Why it failed or expired.
    pub error: Option<crate::Failure>,
    pub created_at: String,
    pub updated_at: String,
    pub ended_at: Option<String>,
}

/// The body of `POST /rules/{reference}:evaluate`: a fact as it would be sent (nothing is
/// written).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct EvaluateRequest {
    pub fact: FactDraft,
}

/// A fact that is not recorded: what a dry run evaluates.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct FactDraft {
    /// The workspace (its key or id); work would be made there.
    pub workspace: String,
    pub kind: String,
    #[serde(default)]
    pub key: String,
    pub data: Value,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub occurred_at: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
}

/// What a rule would make of a fact.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct EvaluateOut {
    /// `key@version` of the version evaluated.
    pub rule: String,
    /// Whether the fact is of the rule's kind, in a workspace its agent may work in, and its
    /// condition holds.
    pub matched: bool,
    /// Whether the fact is of the rule's kind.
    pub kind_matches: bool,
    /// Whether the rule's agent may make work in the fact's workspace (a rule works only there).
    pub agent_may_work: bool,
    /// The condition's value, or why it has none.
    pub condition: ConditionOut,
    /// The interpretation's call it would request.
    pub call: Option<PlannedCall>,
    /// The work it would ensure: without an interpretation, whole; with one, what the fact alone
    /// fills (what reads the interpretation's output is empty or null: the call has not run).
    pub work: Vec<PlannedWork>,
    /// The process instances it would start, filled the same way.
    #[serde(default)]
    pub processes: Vec<PlannedProcess>,
}

/// A condition's value over one input.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ConditionOut {
    /// The source, when the rule has one.
    pub source: Option<String>,
    /// `true` or `false`; `None` when it has an error.
    pub value: Option<bool>,
    pub error: Option<String>,
}

/// A call a rule would request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PlannedCall {
    /// `name@version`.
    pub skill: String,
    pub inputs: Map<String, Value>,
    /// The idempotency key it would carry.
    pub idempotency_key: String,
}

/// A task a rule would ensure.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PlannedWork {
    /// `key@version`.
    pub task_type: String,
    pub work_key: Value,
    pub title: Value,
    pub custom_fields: Map<String, Value>,
}

/// A process instance a rule would start.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PlannedProcess {
    /// `key@version`.
    pub process: String,
    /// The instance's key.
    pub work_key: Value,
    pub input: Map<String, Value>,
}
