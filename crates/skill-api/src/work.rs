//! Work: task types, tasks in workspaces, runs, approvals and their outcomes, comments.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::{ActionCall, ActionStatus, ApprovalStatus, OutcomeReaction, OutcomeStatus, RunStatus, TaskStatus};

/// The body of `POST /task-types`: one version of a task type, immutable once published. The
/// fields are a package's `TaskType` spec; `key` is the document's key.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TaskTypeRequest {
    /// 1 to 200 characters: lower-case letters, digits, `.`, `_`, `-`, starting with a letter or digit.
    pub key: String,
    /// 1 to 50 characters, as skill versions.
    pub version: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub display_name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The task's own fields: name → a JSON Schema of its value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub custom_fields: Option<Map<String, Value>>,
    /// `{gates: {default: {outcomes: {approved: [action], rejected: [action]}, onSuccess?, onFailure?}}}`,
    /// where an action is `{invokeSkill: {skill, inputs?, expect?}}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approval_schema: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completion_schema: Option<Value>,
    /// Acceptance criteria: `{kind: human | llm_judge | deterministic, when?, spec?}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub acceptance: Option<Vec<Value>>,
    /// Work the core carries out with a skill: `{skill, version, inputs?}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub execution: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub artifact_schema: Option<Value>,
    /// A process every task of the type starts, in the task's transaction: `{process:
    /// key@version, input}`, its input filled from the task (`$.id`, `$.title`,
    /// `$.customFields.<name>`), its key `task:<task id>`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub process: Option<TaskTypeProcess>,
}

/// `TaskTypeRequest.process`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TaskTypeProcess {
    /// The process, `key@version`.
    pub process: String,
    /// The instance's input: name → a literal or a path over the task.
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub input: Map<String, Value>,
}

/// A published task type's document, as the core keeps it: the request's fields checked, with
/// the defaults filled in. The engine reads a task type through it; the approval and completion
/// schemas are kept as written (with keys the core does not read) and read through
/// [`crate::ApprovalSchema`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TaskTypeSpec {
    pub version: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub display_name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Each custom field's JSON Schema, by name.
    #[serde(default)]
    pub custom_fields: Map<String, Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approval_schema: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completion_schema: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub acceptance: Option<Vec<skill_contract::task_type::Criterion>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub artifact_schema: Option<crate::ArtifactSchema>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub execution: Option<crate::TaskExecution>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub process: Option<TaskTypeProcess>,
}

impl TaskTypeSpec {
    /// The gate `name` of the approval schema, read as a [`crate::Gate`]; `None` when the type
    /// has no such gate, an error when the stored schema does not read.
    pub fn gate(&self, name: &str) -> Result<Option<crate::Gate>, serde_json::Error> {
        let Some(schema) = &self.approval_schema else { return Ok(None) };
        Ok(crate::ApprovalSchema::deserialize(schema)?.gates.remove(name))
    }

    /// The output slots of the artifact schema, in order.
    pub fn output_slots(&self) -> &[crate::OutputSlot] {
        self.artifact_schema.as_ref().map_or(&[], |schema| schema.outputs.as_slice())
    }

    /// A spec of `version` with nothing else.
    pub fn new(version: impl Into<String>) -> Self {
        Self {
            version: version.into(),
            display_name: None,
            description: None,
            custom_fields: Map::new(),
            approval_schema: None,
            completion_schema: None,
            acceptance: None,
            artifact_schema: None,
            execution: None,
            process: None,
        }
    }
}

/// A task type version as the API shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TaskTypeOut {
    pub id: String,
    pub key: String,
    pub version: String,
    pub display_name: String,
    pub description: String,
    /// The normalized spec: every field of the request but `key`, with defaults filled in.
    pub spec: TaskTypeSpec,
    /// The skill version the core carries the work out with.
    pub execution: Option<crate::TaskExecution>,
    pub created_at: String,
}

/// The query of `GET /task-types`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TaskTypeQuery {
    /// Only the versions of this key.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub limit: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cursor: Option<String>,
}

/// The body of `POST /tasks`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TaskRequest {
    /// The workspace: its id or its key.
    pub workspace: String,
    /// The type: an id, `key@version`, or a key (its newest version).
    pub task_type: String,
    /// 1 to 500 characters.
    pub title: String,
    /// Checked against the type's `customFields`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub custom_fields: Option<Map<String, Value>>,
    /// A gate approval asked for with the task, in the same transaction: nothing the task's
    /// execution writes can happen before it is decided.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approval: Option<TaskApproval>,
}

/// The gate approval a task is created with.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TaskApproval {
    /// What the decider should know, at most 10,000 characters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub comment: Option<String>,
}

/// The type a task is of.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct TaskTypeRef {
    pub id: String,
    pub key: String,
    pub version: String,
}

/// A task as the API shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TaskOut {
    pub id: String,
    pub workspace_id: String,
    pub task_type: TaskTypeRef,
    pub title: String,
    pub custom_fields: Value,
    /// `open`, or one of the terminal `done`, `failed`, `cancelled`.
    pub status: TaskStatus,
    pub created_by: String,
    /// Who set it in motion (`{person, role, agent?, via}`), fixed when it was made: none of
    /// them decides what lets its work write.
    #[serde(default)]
    pub initiators: Vec<crate::Initiator>,
    pub created_at: String,
    pub updated_at: String,
    pub closed_at: Option<String>,
    /// Why the core closed it: `gate_rejected` (its gate was rejected, so its execution never
    /// ran), or the code of its execution's failure; none when a person closed it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub close_reason: Option<String>,
}

/// The query of `GET /tasks`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TaskQuery {
    /// Only this workspace (id or key).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub workspace: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub limit: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cursor: Option<String>,
}

/// The body of `POST /tasks/{id}:close`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CloseTaskRequest {
    /// `done`, `failed` or `cancelled`.
    pub status: String,
    /// Kept as a comment on the task.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub comment: Option<String>,
}

/// The body of `POST /runs`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RunRequest {
    pub task_id: String,
}

/// A run as the API shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RunOut {
    pub id: String,
    pub task_id: String,
    pub owner_principal_id: String,
    /// `running`, or one of the terminal `succeeded`, `failed`, `cancelled`.
    pub status: RunStatus,
    pub result: Option<Value>,
    pub error: Option<Value>,
    pub created_at: String,
    pub ended_at: Option<String>,
}

/// The body of `POST /runs/{id}:end`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct EndRunRequest {
    /// `succeeded`, `failed` or `cancelled`.
    pub status: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<Map<String, Value>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<Map<String, Value>>,
}

/// The body of `POST /approvals`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ApprovalRequest {
    pub task_id: String,
    /// A gate (the default) holds the task's external writes until it is decided, and its
    /// outcome runs the type's actions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gate: Option<bool>,
    /// What the decider should know, at most 10,000 characters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub comment: Option<String>,
    /// The one call this approval is asked for: approved, it lets its requester make exactly this
    /// call (this version, these inputs) with the approval as its basis.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call: Option<RequestedCall>,
}

/// The call an approval is requested for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RequestedCall {
    /// `name@version`: the version is named, as the decision is about it.
    pub skill: String,
    /// Exactly the inputs the call will have (valid against the version's contract).
    #[serde(default)]
    pub inputs: Map<String, Value>,
}

/// The call an approval was requested for, as the API shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RequestedCallOut {
    /// `name@version`.
    pub skill: String,
    pub skill_id: String,
    pub inputs: Value,
}

/// The body of `POST /approvals/{id}:decide`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DecideRequest {
    /// `approved` or `rejected`.
    pub outcome: String,
    /// At most 10,000 characters; the outcome's actions read it as `$.approval.comment`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub comment: Option<String>,
}

/// The body of `POST /approvals/{id}:withdraw`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct WithdrawRequest {
    /// Kept as a comment on the task.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// The body of `POST /approvals/{id}:retry`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RetryRequest {
    /// Why it is retried (what was mended), kept as a comment on the task.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// One action of an approval's outcome.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ActionOut {
    pub index: i32,
    pub action: crate::OutcomeAction,
    /// For an `invokeSkill`, the version its decision resolved it to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skill_id: Option<String>,
    /// … and the inputs filled in when deciding: the call the approval covers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inputs: Option<Value>,
    pub status: ActionStatus,
    pub invocation_id: Option<String>,
    /// The call it made.
    pub result: Option<ActionCall>,
    /// Why it failed or was skipped.
    pub error: Option<crate::Failure>,
    /// Calls made for it, retries included.
    #[serde(default)]
    pub attempts: i32,
    /// How many times a decider retried it.
    #[serde(default)]
    pub retries: i32,
    /// It failed for a reason that may pass (the call's error is retryable, or nobody claimed
    /// it): a decider may retry it (`POST /approvals/{id}:retry`).
    #[serde(default)]
    pub retryable: bool,
}

/// What a decision's outcome did.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct OutcomeOut {
    pub status: OutcomeStatus,
    /// `onSuccess` or `onFailure` once the reaction ran.
    pub reaction: Option<OutcomeReaction>,
    pub actions: Vec<ActionOut>,
}

/// An approval as the API shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ApprovalOut {
    pub id: String,
    pub task_id: String,
    pub gate: bool,
    pub status: ApprovalStatus,
    pub requested_by: String,
    /// Who set its work in motion (its requester's person and its task's) (`{person, role, agent?, via}`), fixed when it was made: none of
    /// them decides what lets its work write.
    #[serde(default)]
    pub initiators: Vec<crate::Initiator>,
    pub request_comment: String,
    pub decided_by: Option<String>,
    pub decided_at: Option<String>,
    pub comment: String,
    pub withdrawn_by: Option<String>,
    pub withdrawn_at: Option<String>,
    /// The outcome of the decision, when the type's gate has actions for it.
    pub outcome: Option<OutcomeOut>,
    /// The one call it was requested for, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call: Option<RequestedCallOut>,
    pub created_at: String,
    pub updated_at: String,
}

/// The query of `GET /approvals` and `GET /task-comments`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct OfTaskQuery {
    /// The task's id.
    pub task: String,
}

/// The body of `POST /task-comments`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CommentRequest {
    pub task_id: String,
    /// 1 to 10,000 characters.
    pub body: String,
}

/// A comment on a task.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CommentOut {
    pub id: String,
    pub task_id: String,
    pub author_principal_id: String,
    pub body: String,
    pub created_at: String,
}
