//! The rows of work: task types, tasks, runs, approvals with the actions of their outcomes, and
//! comments.

use serde_json::Value;
use skill_api::{
    ActionCall, ActionStatus, ApprovalStatus, DecisionAuthority, Failure, OutcomeAction, OutcomeReaction,
    OutcomeStatus, RequestStatus, RunStatus, SkillStatus, TaskStatus, TaskTypeSpec,
};
use skill_contract::SideEffects;

use super::Time;
use crate::states::{JsonText, Nullable, Text};

/// A published task type version (`task_types`): never changes.
#[derive(sqlx::FromRow, Debug, Clone, PartialEq)]
pub struct TaskTypeRecord {
    pub id: String,
    pub key: String,
    pub version: String,
    pub display_name: String,
    pub description: String,
    /// The normalized spec: `customFields`, `approvalSchema`, `acceptance`, `execution`, ….
    #[sqlx(try_from = "JsonText<TaskTypeSpec>")]
    pub spec: TaskTypeSpec,
    pub created_by: Option<String>,
    pub created_at: Time,
}

/// A published artifact type version (`artifact_types`): never changes.
#[derive(sqlx::FromRow, Debug, Clone, PartialEq)]
pub struct ArtifactTypeRecord {
    pub id: String,
    pub key: String,
    pub version: String,
    pub display_name: String,
    pub description: String,
    /// The media types an artifact of the type may have.
    #[sqlx(json)]
    pub media_types: Vec<String>,
    pub max_bytes: i64,
    /// The JSON Schema its metadata (and a typed output's value) matches.
    #[sqlx(json(nullable))]
    pub metadata_schema: Option<Value>,
    pub created_by: Option<String>,
    pub created_at: Time,
}

/// A task in a workspace.
#[derive(sqlx::FromRow, Debug, Clone, PartialEq)]
pub struct TaskRecord {
    pub id: String,
    pub workspace_id: String,
    pub task_type_id: String,
    pub title: String,
    #[sqlx(json)]
    pub custom_fields: Value,
    #[sqlx(try_from = "Text<TaskStatus>")]
    pub status: TaskStatus,
    pub created_by: String,
    pub row_version: i32,
    pub created_at: Time,
    pub updated_at: Time,
    pub closed_at: Option<Time>,
    /// Why the core closed it (`gate_rejected`, the code of its execution's failure); none when a
    /// person closed it or it is open.
    pub close_reason: Option<String>,
    /// Who set it in motion (fixed when made).
    #[sqlx(json)]
    pub initiators: Vec<skill_api::Initiator>,
}

/// A principal's run on a task.
#[derive(sqlx::FromRow, Debug, Clone, PartialEq)]
pub struct RunRecord {
    pub id: String,
    pub task_id: String,
    pub owner_principal_id: String,
    #[sqlx(try_from = "Text<RunStatus>")]
    pub status: RunStatus,
    #[sqlx(json(nullable))]
    pub result: Option<Value>,
    #[sqlx(json(nullable))]
    pub error: Option<Value>,
    pub row_version: i32,
    pub created_at: Time,
    pub ended_at: Option<Time>,
}

/// An approval on a task.
#[derive(sqlx::FromRow, Debug, Clone, PartialEq)]
pub struct ApprovalRecord {
    pub id: String,
    pub task_id: String,
    pub gate: bool,
    #[sqlx(try_from = "Text<ApprovalStatus>")]
    pub status: ApprovalStatus,
    pub requested_by: String,
    pub request_comment: String,
    pub decided_by: Option<String>,
    pub decided_at: Option<Time>,
    pub comment: String,
    /// The decider's authority when deciding.
    #[sqlx(try_from = "JsonText<DecisionAuthority>")]
    pub decision_authority: Option<DecisionAuthority>,
    pub withdrawn_by: Option<String>,
    pub withdrawn_at: Option<Time>,
    /// `running` while the decision's actions run, then `succeeded`, `failed` or `skipped`; none
    /// when the decision has no actions.
    #[sqlx(try_from = "Nullable<OutcomeStatus>")]
    pub outcome_status: Option<OutcomeStatus>,
    /// The reaction that ran after the actions, if any.
    #[sqlx(try_from = "Nullable<OutcomeReaction>")]
    pub outcome_reaction: Option<OutcomeReaction>,
    /// The version of the one call this approval was requested for, if any.
    pub call_skill_id: Option<String>,
    /// That call's inputs.
    #[sqlx(json(nullable))]
    pub call_inputs: Option<Value>,
    pub row_version: i32,
    pub created_at: Time,
    pub updated_at: Time,
    /// Who set its work in motion: its requester's person and its task's initiators (fixed
    /// when asked for).
    #[sqlx(json)]
    pub initiators: Vec<skill_api::Initiator>,
}

impl ApprovalRecord {
    /// Whether it is a gate of its task: what runs the type's outcome, opens its execution and
    /// decides a process's write. A gate asked for one call covers that call only.
    pub fn gates_the_task(&self) -> bool {
        self.gate && self.call_skill_id.is_none()
    }
}

/// One action of a decided approval's outcome.
#[derive(sqlx::FromRow, Debug, Clone, PartialEq)]
pub struct ActionRecord {
    pub approval_id: String,
    pub action_index: i32,
    /// The action as the type declares it.
    #[sqlx(try_from = "JsonText<OutcomeAction>")]
    pub action: OutcomeAction,
    /// The version an `invokeSkill` calls, as the decision resolved it (none when it resolved
    /// to nothing, or the action calls nothing).
    pub skill_id: Option<String>,
    /// The inputs of that call, filled in when deciding: the only ones the approval covers.
    #[sqlx(json(nullable))]
    pub inputs: Option<Value>,
    #[sqlx(try_from = "Text<ActionStatus>")]
    pub status: ActionStatus,
    pub invocation_id: Option<String>,
    /// The call it made.
    #[sqlx(try_from = "JsonText<ActionCall>")]
    pub result: Option<ActionCall>,
    /// Why it failed or was skipped.
    #[sqlx(try_from = "JsonText<Failure>")]
    pub error: Option<Failure>,
    pub attempts: i32,
    /// How many times a decider retried it after a retryable failure: the call of retry `n`
    /// carries `"retry": n` in its basis (none for the first).
    pub retries: i32,
    pub row_version: i32,
    pub created_at: Time,
    pub updated_at: Time,
}

/// A comment on a task.
#[derive(sqlx::FromRow, Debug, Clone, PartialEq)]
pub struct CommentRecord {
    pub id: String,
    pub task_id: String,
    pub author_principal_id: String,
    pub body: String,
    pub created_at: Time,
}

/// An agent's request for an external write (`agent_requests`).
#[derive(sqlx::FromRow, Debug, Clone, PartialEq)]
pub struct AgentRequestRecord {
    pub id: String,
    pub agent_principal_id: String,
    /// The version the call is of.
    pub skill_id: String,
    #[sqlx(json)]
    pub inputs: Value,
    /// The MCP client's name and version, as it gave them.
    pub client_name: String,
    pub client_version: String,
    /// The agent's key for the call, if it gave one.
    pub idempotency_key: Option<String>,
    pub task_id: String,
    pub approval_id: String,
    #[sqlx(try_from = "Text<RequestStatus>")]
    pub status: RequestStatus,
    /// The call made once a person approved.
    pub invocation_id: Option<String>,
    pub expires_at: Time,
    pub row_version: i32,
    pub created_at: Time,
    pub updated_at: Time,
    pub ended_at: Option<Time>,
    /// The person operating the agent (fixed when made).
    #[sqlx(json)]
    pub initiators: Vec<skill_api::Initiator>,
}

/// One row a work write inserts or changes. A change carries the new row, one row version on
/// from the stored one; a stored row that moved on makes the whole write `Stale`.
#[derive(Debug, Clone, PartialEq)]
pub enum WorkChange {
    InsertTaskType(TaskTypeRecord),
    InsertArtifactType(ArtifactTypeRecord),
    InsertTask(TaskRecord),
    UpdateTask(TaskRecord),
    InsertRun(RunRecord),
    UpdateRun(RunRecord),
    InsertApproval(ApprovalRecord),
    UpdateApproval(ApprovalRecord),
    InsertAction(ActionRecord),
    UpdateAction(ActionRecord),
    InsertComment(CommentRecord),
    InsertRequest(AgentRequestRecord),
    /// Written when the stored row is at `row_version - 1` (`Stale` otherwise).
    UpdateRequest(AgentRequestRecord),
    InsertEvaluation(super::RuleEvaluationRecord),
    /// Written when the stored row is at `row_version - 1` (`Stale` otherwise).
    UpdateEvaluation(super::RuleEvaluationRecord),
    /// Sets a fact's `evaluated_at`, once (`Stale` when another write set it first).
    FactEvaluated {
        fact_id: String,
        at: Time,
    },
    InsertTaskOrigin(super::TaskOriginRecord),
    InsertArtifact(ArtifactRecord),
    InsertInstance(super::InstanceRecord),
    /// Written when the stored row is one version behind.
    UpdateInstance(super::InstanceRecord),
    InsertStep(super::StepRecord),
    /// Written when the stored row is one version behind.
    UpdateStep(super::StepRecord),
}

/// Which tasks a listing wants, newest first.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TaskFilter {
    /// Only these workspaces; `None` for all.
    pub workspaces: Option<Vec<String>>,
    pub status: Option<TaskStatus>,
    pub task_type_id: Option<String>,
    /// After this `(created_at, id)` in listing order.
    pub before: Option<(Time, String)>,
    pub limit: i64,
}

/// What a claim re-checks of a pending call's basis, read in the claim's transaction.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BasisState {
    /// The status of the call's task, when it has one.
    pub task_status: Option<TaskStatus>,
    /// The status of the approval its basis names, when it names one (`None`: missing).
    pub approval_status: Option<ApprovalStatus>,
    /// Whether a person whose decision the call stands on is disabled: the one who decided its
    /// approval, or one who approved its task's gate (for a call on the task's execution).
    pub decider_disabled: bool,
    /// The status of its run, when it has one (`None`: missing).
    pub run_status: Option<RunStatus>,
    /// What the task's gate approvals say (for a call on the task's execution).
    pub gates: Gates,
    /// The status of the call's version.
    pub skill_status: SkillStatus,
    /// The side effects of the call's version.
    pub side_effects: Option<SideEffects>,
    /// The name and version of the call's version (for the event of a cancellation).
    pub skill_name: String,
    pub skill_version: String,
    /// For a call on a process step: its instance's status (`None`: missing) and its step's.
    pub instance_status: Option<skill_api::InstanceStatus>,
    pub activity_status: Option<skill_api::StepStatus>,
    /// Whether the principal the call was made for (its authority) is disabled.
    pub authority_disabled: bool,
    /// Whether a person an agent acted for when setting the call's work in motion (an initiator
    /// with an agent — of its approval, or of its task for an execution) is disabled.
    pub operator_disabled: bool,
}

/// Which statuses a task's gate approvals have, together.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Gates {
    pub pending: bool,
    pub approved: bool,
    pub rejected: bool,
    pub withdrawn: bool,
}

impl Gates {
    /// The gates from the statuses of a task's gate approvals.
    pub fn of(statuses: impl IntoIterator<Item = ApprovalStatus>) -> Self {
        statuses.into_iter().fold(Self::default(), |gates, status| gates.with(status))
    }

    /// The gates from the bits the claim's query adds up (pending 1, approved 2, rejected 4,
    /// withdrawn 8).
    pub fn from_bits(bits: i64) -> Self {
        Self { pending: bits & 1 != 0, approved: bits & 2 != 0, rejected: bits & 4 != 0, withdrawn: bits & 8 != 0 }
    }

    fn with(self, status: ApprovalStatus) -> Self {
        match status {
            ApprovalStatus::Pending => Self { pending: true, ..self },
            ApprovalStatus::Approved => Self { approved: true, ..self },
            ApprovalStatus::Rejected => Self { rejected: true, ..self },
            ApprovalStatus::Withdrawn => Self { withdrawn: true, ..self },
        }
    }

    /// Whether the task has any gate approval.
    pub fn any(self) -> bool {
        self.pending || self.approved || self.rejected || self.withdrawn
    }
}

/// An immutable artifact; its content is in the blob store under its SHA-256.
#[derive(sqlx::FromRow, Debug, Clone, PartialEq)]
pub struct ArtifactRecord {
    pub id: String,
    pub workspace_id: String,
    pub task_id: Option<String>,
    pub run_id: Option<String>,
    /// What kind of document: `skill_result`, `claim_reply`, ….
    #[sqlx(rename = "type")]
    pub kind: String,
    pub name: String,
    pub media_type: String,
    pub size_bytes: i64,
    /// Hex SHA-256 of the content.
    pub sha256: String,
    #[sqlx(json)]
    pub metadata: Value,
    pub author_principal_id: String,
    pub skill_invocation_id: Option<String>,
    /// The previous head of its type in its task, which it replaces.
    pub supersedes_id: Option<String>,
    pub created_at: Time,
}

/// A knowledge slot `(workspace, pack, source, scope)` with its state.
#[derive(sqlx::FromRow, Debug, Clone, PartialEq)]
pub struct SlotRecord {
    pub workspace_id: String,
    pub pack: String,
    pub source: String,
    pub scope: String,
    /// Entity id (`kind␟key`) → the stored entity.
    #[sqlx(json)]
    pub state: Value,
    pub state_token: String,
    pub row_version: i32,
    pub created_at: Time,
    pub updated_at: Time,
}

/// One entity of a slot, with when its slot was first applied (later slots win a shared key).
#[derive(sqlx::FromRow, Debug, Clone, PartialEq)]
pub struct EntityRecord {
    pub pack: String,
    pub source: String,
    pub scope: String,
    pub kind: String,
    pub key: String,
    #[sqlx(json)]
    pub entity: Value,
    pub slot_created_at: Time,
}

/// A knowledge document.
#[derive(sqlx::FromRow, Debug, Clone, PartialEq)]
pub struct DocumentRecord {
    pub workspace_id: String,
    pub natural_key: String,
    pub title: String,
    #[sqlx(rename = "type")]
    pub kind: String,
    #[sqlx(json)]
    pub chunks: Value,
    #[sqlx(json)]
    pub links: Value,
    #[sqlx(json(nullable))]
    pub meta: Option<Value>,
    /// The title and the chunks' text, what search reads.
    pub body: String,
    pub created_at: Time,
    pub updated_at: Time,
}
