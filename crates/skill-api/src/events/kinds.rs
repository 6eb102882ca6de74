//! The data of every kind of event, one struct each: the journal's `data` is serialized from
//! them, and `docs/events.md` is rendered from their schemas.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use skill_contract::{RiskLevel, SideEffects};

use crate::{
    ActionStatus, ApprovalStatus, Basis, ExecutorAllowance, InstanceStatus, OutcomeReaction, OutcomeStatus,
    PrincipalKind, RequestStatus, RequesterKind, RuleEvaluationStatus, RunStatus, StepStatus, TaskStatus,
};

/// The data of one kind of event.
pub trait EventData: Serialize {
    /// The kind it is journaled as (`task.closed`).
    const KIND: &'static str;
}

/// One kind of event as the documentation lists it.
#[derive(Debug, Clone)]
pub struct EventKind {
    /// `task.closed`.
    pub kind: &'static str,
    /// What it records (the struct's documentation).
    pub about: &'static str,
    /// The JSON Schema of its `data`.
    pub schema: schemars::Schema,
}

macro_rules! events {
    (
        $(
            $(#[doc = $doc:literal])+
            $name:ident = $kind:literal {
                $( $(#[$fmeta:meta])* $field:ident : $ty:ty ),* $(,)?
            }
        )+
    ) => {
        $(
            $(#[doc = $doc])+
            #[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
            #[serde(rename_all = "camelCase")]
            pub struct $name {
                $( $(#[$fmeta])* pub $field: $ty, )*
            }

            impl EventData for $name {
                const KIND: &'static str = $kind;
            }
        )+

        /// Every kind of event, in the order `docs/events.md` lists them.
        pub fn event_kinds() -> Vec<EventKind> {
            vec![$(
                EventKind {
                    kind: $kind,
                    about: concat!($($doc, "\n"),+),
                    schema: schemars::schema_for!($name),
                }
            ),+]
        }
    };
}

/// Who asked for a call, as its event names it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Requester {
    pub kind: RequesterKind,
    /// The principal's id, or the run's.
    #[serde(rename = "ref")]
    pub reference: String,
}

/// Where a version's endpoint moved.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct EndpointMove {
    /// The endpoint it had.
    pub from: Value,
    pub to: String,
}

/// A failed attempt that will be tried again.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct RetriedError {
    pub code: Option<String>,
    /// Always `true`: only an error that may pass is retried.
    pub retryable: bool,
}

/// The error a call ended with, cut to 500 characters.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct FailureSummary {
    pub code: Option<String>,
    pub retryable: bool,
    pub message: String,
}

/// One action a decider retried.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RetriedAction {
    pub index: i32,
    /// Which retry of the action this is (1 for the first).
    pub retry: i32,
    pub previous_invocation_id: Option<String>,
    /// The code its last call failed with.
    pub error: Option<String>,
}

events! {
    /// A skill version was published (`skill:<id>`).
    SkillRegistered = "skill.registered" {
        name: String,
        version: String,
        protocol: Option<String>,
        /// It has a contract, so it can be called.
        invocable: bool,
        side_effects: Option<SideEffects>,
        risk_level: Option<RiskLevel>,
    }

    /// What may change of a published version changed (`skill:<id>`).
    SkillUpdated = "skill.updated" {
        /// `description`, `config`, `inputSchema`, `outputSchema`, `status`, `endpoint`.
        changed_fields: Vec<String>,
        /// The row version it has now.
        row_version: i32,
        /// Where its endpoint moved (left out when it did not move).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        endpoint: Option<EndpointMove>,
    }

    /// A version was assigned to a principal, or its assignment changed (`principal:<id>`).
    SkillAssigned = "skill.assigned" {
        skill_id: String,
        /// `name@version`.
        skill: String,
        read_only: bool,
    }

    /// A package's agent document was applied: the agent's principal now holds exactly these
    /// permissions and assignments (and, for an executor, this allow-list) (`agent:<key>`).
    AgentApplied = "agent.applied" {
        principal_id: String,
        kind: String,
        revision: i32,
        package: String,
        permissions: Vec<String>,
        /// `name@version` of each assigned version, `(read-only)` after the read-only ones.
        invoke: Vec<String>,
        /// Whether the principal was created by this apply.
        created: bool,
    }

    /// An agent asked for an external write it had no basis for: a task and a gate approval
    /// for exactly that call wait for a person (`agent_request:<id>`).
    AgentRequestCreated = "agent_request.created" {
        agent_principal_id: String,
        /// `name@version`.
        skill: String,
        skill_id: String,
        task_id: String,
        approval_id: String,
        client_name: String,
        client_version: String,
        expires_at: String,
        /// Who set it in motion: `{person, role, agent?, via}` each.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        initiators: Vec<crate::Initiator>,
    }

    /// A person approved an agent's request and the core made its call, as the agent, with the
    /// approval as its basis (`agent_request:<id>`).
    AgentRequestInvoked = "agent_request.invoked" {
        invocation_id: String,
        approval_id: String,
        decided_by: Option<String>,
    }

    /// An agent's request ended: its call succeeded or failed, or it was rejected, expired or
    /// withdrawn (`agent_request:<id>`).
    AgentRequestEnded = "agent_request.ended" {
        status: RequestStatus,
        invocation_id: Option<String>,
        /// Why, when the call could not be made or the request did not get that far.
        reason: Option<String>,
    }

    /// A fact was recorded (`fact:<id>`): the rules active now will evaluate it.
    FactRecorded = "fact.recorded" {
        workspace_id: String,
        kind: String,
        key: String,
        /// How many rules' work lies behind it.
        depth: u32,
        source: Option<String>,
        caused_by_task: Option<String>,
        /// Who set it in motion: `{person, role, agent?, via}` each.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        initiators: Vec<crate::Initiator>,
    }

    /// A version of a work rule was published (`rule:<id>`).
    RulePublished = "rule.published" {
        key: String,
        version: String,
        /// The fact kind it is for.
        kind: String,
        agent_principal_id: String,
        /// `name@version` of its interpretation.
        interpretation: Option<String>,
        package: Option<String>,
    }

    /// A rule evaluated a fact (`rule_evaluation:<id>`): whether its condition held, or why it
    /// stopped.
    RuleEvaluated = "rule.evaluated" {
        fact_id: String,
        rule_id: String,
        /// `key@version`.
        rule: String,
        status: RuleEvaluationStatus,
        /// Why it failed at once (a condition's error, a suspected loop).
        reason: Option<String>,
    }

    /// A rule's evaluation asked for its interpretation (`rule_evaluation:<id>`).
    RuleInterpretationRequested = "rule.interpretation_requested" {
        fact_id: String,
        invocation_id: String,
        /// `name@version`.
        skill: String,
    }

    /// A rule's evaluation ended (`rule_evaluation:<id>`): the work it ensured, or why not.
    RuleEvaluationEnded = "rule.evaluation_ended" {
        fact_id: String,
        status: RuleEvaluationStatus,
        task_ids: Vec<String>,
        /// The tasks it made (the others were there under their work keys).
        created_task_ids: Vec<String>,
        /// The process instances it ensured, and those it started.
        instance_ids: Vec<String>,
        created_instance_ids: Vec<String>,
        artifact_id: Option<String>,
        /// The code of its error, when it failed or expired.
        code: Option<String>,
    }

    /// A version of a process was published (`process:<id>`).
    ProcessPublished = "process.published" {
        key: String,
        version: String,
        agent_principal_id: String,
        /// The versions its call steps name (`name@version`).
        skills: Vec<String>,
        package: Option<String>,
    }

    /// An instance of a process started (`process_instance:<id>`).
    ProcessStarted = "process.started" {
        process_id: String,
        /// `key@version`.
        process: String,
        workspace_id: String,
        key: String,
        /// What started it: `api`, `rule`.
        by: String,
        /// Who set it in motion: `{person, role, agent?, via}` each.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        initiators: Vec<crate::Initiator>,
    }

    /// A step of an instance began (`process_instance:<id>`).
    ProcessStepStarted = "process.step_started" {
        activity_id: String,
        step: String,
        action: String,
        attempt: i32,
    }

    /// A step of an instance ended (`process_instance:<id>`): done, failed, or closed.
    ProcessStepEnded = "process.step_ended" {
        activity_id: String,
        step: String,
        status: StepStatus,
        invocation_id: Option<String>,
        task_id: Option<String>,
        /// The code of its error, when it failed.
        code: Option<String>,
    }

    /// An instance ended (`process_instance:<id>`): completed, failed, or cancelled.
    ProcessEnded = "process.ended" {
        status: InstanceStatus,
        /// The step it ended at.
        step: Option<String>,
        /// The code of its error, when it failed or was cancelled.
        code: Option<String>,
    }

    /// An assignment was taken back (`principal:<id>`).
    SkillRevoked = "skill.revoked" {
        skill_id: String,
    }

    /// A call was made (`skill_invocation:<id>`).
    InvocationRequested = "skill.invocation_requested" {
        skill_id: String,
        skill: String,
        version: String,
        side_effects: Option<SideEffects>,
        risk_level: Option<RiskLevel>,
        requested_by: Requester,
        task_id: Option<String>,
        run_id: Option<String>,
        /// Why it may write to the outside world; none when it does not write.
        authorization_basis: Option<Basis>,
        /// The persons behind the caller (an agent's operator, and who had its token issued):
        /// none of them decided the approval its write stands on.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        initiators: Vec<crate::Initiator>,
    }

    /// An executor took a call, with a lease (`skill_invocation:<id>`).
    InvocationClaimed = "skill.invocation_claimed" {
        skill_id: String,
        attempt: i32,
        fencing_token: i64,
        lease_expires_at: Option<String>,
    }

    /// A call succeeded (`skill_invocation:<id>`).
    InvocationSucceeded = "skill.invocation_succeeded" {
        skill_id: String,
        skill: String,
        version: String,
        attempt: i32,
        task_id: Option<String>,
        run_id: Option<String>,
        /// The artifact of its result, on a task.
        artifact_id: Option<String>,
        cost: Option<Value>,
        /// What became of each typed output slot, on a task.
        outputs: Option<Value>,
    }

    /// An attempt failed for a reason that may pass: the call waits for its next attempt
    /// (`skill_invocation:<id>`).
    InvocationRetryScheduled = "skill.invocation_retry_scheduled" {
        skill_id: String,
        attempt: i32,
        max_attempts: i32,
        available_at: String,
        error: RetriedError,
    }

    /// A call failed for good (`skill_invocation:<id>`).
    InvocationFailed = "skill.invocation_failed" {
        skill_id: String,
        skill: String,
        version: String,
        attempt: i32,
        max_attempts: i32,
        task_id: Option<String>,
        run_id: Option<String>,
        error: FailureSummary,
    }

    /// A call was cancelled: by a person, or by the core when its basis was lost
    /// (`skill_invocation:<id>`).
    InvocationCancelled = "skill.invocation_cancelled" {
        skill_id: String,
        skill: String,
        version: String,
        attempt: i32,
        task_id: Option<String>,
        run_id: Option<String>,
        /// `cancelled`, `basis_revoked`, `approval_outcome_skill_wait_expired`, …
        code: String,
        reason: String,
        was_running: bool,
        /// Who cancelled it: a principal's id, or `system`.
        cancelled_by: String,
        /// `principal` or `system`.
        initiator: String,
    }

    /// A package was installed (`package:<key>`): recorded, or applied with its plan.
    PackageInstalled = "package.installed" {
        version: String,
        install_hash: String,
        /// How many objects it links.
        objects: usize,
        /// Versions the plan published (left out of a recorded install).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        created: Option<usize>,
        /// Versions the plan changed (left out of a recorded install).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        patched: Option<usize>,
    }

    /// An operator changed a package's settings (`package:<key>`).
    PackageSettingsChanged = "package.settings_changed" {
        values_revision: i32,
        schema_revision: i32,
    }

    /// A principal was created (`principal:<id>`).
    PrincipalCreated = "principal.created" {
        name: String,
        kind: PrincipalKind,
    }

    /// A principal was disabled: its tokens stop working, its waiting calls are cancelled, and
    /// the calls it was running go back to the queue (`principal:<id>`).
    PrincipalDisabled = "principal.disabled" {
        principal_id: String,
        name: String,
        reason: String,
        cancelled_calls: usize,
        returned_calls: usize,
    }

    /// An operator set what an executor may run (`principal:<id>`).
    ExecutorAllowed = "principal.executor_allowed" {
        allowance: ExecutorAllowance,
    }

    /// A token was issued (`principal:<id>`); only its hash is kept.
    TokenCreated = "token.created" {
        token_id: String,
        label: String,
        /// For an agent's token, the person who operates the agent with it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        operated_by: Option<String>,
        /// The person who had the token issued through the API (none from the operator's
        /// command); of an agent's token, they count among the initiators of what it does.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        issued_by: Option<String>,
    }

    /// A token was revoked (`token:<id>`).
    TokenRevoked = "token.revoked" {
        token_id: String,
    }

    /// A principal was granted a permission, in a workspace or in all (`principal:<id>`).
    GrantAdded = "grant.added" {
        permission: String,
        workspace_id: Option<String>,
    }

    /// A grant was taken back (`principal:<id>`).
    GrantRemoved = "grant.removed" {
        permission: String,
        workspace_id: Option<String>,
    }

    /// A workspace was created (`workspace:<id>`).
    WorkspaceCreated = "workspace.created" {
        key: String,
        name: String,
    }

    /// The core made a key to sign audience tokens with (`signing_key:<kid>`).
    SigningKeyCreated = "signing_key.created" {
        kid: String,
        algorithm: String,
        signs_until: String,
        published_until: String,
    }

    /// An executor opened a session (`executor_session:<id>`).
    SessionOpened = "executor.session_opened" {
        principal_id: String,
        capabilities: Value,
        expires_at: String,
    }

    /// An executor closed its session; the calls it held went back to the queue
    /// (`executor_session:<id>`).
    SessionClosed = "executor.session_closed" {
        principal_id: String,
        /// How many calls it released.
        released: usize,
    }

    /// A person signed in to the console with a token (`principal:<id>`).
    ConsoleSignedIn = "console.signed_in" {
        session_id: String,
        token_id: String,
        expires_at: String,
    }

    /// A person signed out of the console (`principal:<id>`).
    ConsoleSignedOut = "console.signed_out" {
        session_id: String,
    }

    /// A task type version was published (`task_type:<id>`).
    TaskTypePublished = "task_type.published" {
        key: String,
        version: String,
        /// `{skill, version, inputs}` when the core carries the work out with a skill.
        execution: Option<Value>,
    }

    /// An artifact type version was published (`artifact_type:<id>`).
    ArtifactTypePublished = "artifact_type.published" {
        key: String,
        version: String,
        media_types: Vec<String>,
        max_bytes: i64,
    }

    /// A task was created (`task:<id>`).
    TaskCreated = "task.created" {
        workspace_id: String,
        task_type_id: String,
        /// `key@version`.
        task_type: String,
        /// Who set it in motion: `{person, role, agent?, via}` each.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        initiators: Vec<crate::Initiator>,
    }

    /// A task was closed, by a person or by the core (`task:<id>`).
    TaskClosed = "task.closed" {
        status: TaskStatus,
        workspace_id: String,
        /// Why the core closed it (`gate_rejected`, its execution's failure); none when a person
        /// closed it.
        reason: Option<String>,
    }

    /// A comment was added to a task (`task:<id>`).
    TaskCommented = "task.commented" {
        comment_id: String,
        /// The author's principal id.
        author: String,
    }

    /// A run started on a task (`run:<id>`).
    RunStarted = "run.started" {
        task_id: String,
        /// The owner's principal id.
        owner: String,
        /// `true` for the run in which the core carries out the task's execution (left out of
        /// a person's run).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        execution: Option<bool>,
    }

    /// A run ended (`run:<id>`).
    RunEnded = "run.ended" {
        task_id: String,
        status: RunStatus,
    }

    /// An approval was asked for (`approval:<id>`).
    ApprovalRequested = "approval.requested" {
        task_id: String,
        gate: bool,
        requested_by: String,
        /// The version of the one call it was asked for, if any.
        call_skill_id: Option<String>,
        /// The task's workspace, where its decider holds `approvals.decide`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        workspace_id: Option<String>,
        /// Who set its work in motion (its requester's person, its task's initiators): none of
        /// them decides it.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        initiators: Vec<crate::Initiator>,
    }

    /// A person decided an approval (`approval:<id>`).
    ApprovalDecided = "approval.decided" {
        task_id: String,
        /// `approved` or `rejected`.
        outcome: ApprovalStatus,
        decided_by: String,
        /// What the decider is (`person`; the rule refuses any other).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        decider_kind: Option<PrincipalKind>,
        /// The id of the token the person decided with (directly, or through a console session).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        token_id: Option<String>,
        /// The grants the person held when deciding: `PERMISSION` or `PERMISSION@WORKSPACE-ID`.
        #[serde(default)]
        grants: Vec<String>,
        gate: bool,
        /// How many actions its outcome carries out.
        actions: usize,
    }

    /// An approval was withdrawn (`approval:<id>`).
    ApprovalWithdrawn = "approval.withdrawn" {
        task_id: String,
        withdrawn_by: String,
        /// What it was: `pending` or `approved`.
        was: ApprovalStatus,
    }

    /// A decider retried the failed actions of a decision's outcome (`approval:<id>`).
    OutcomeRetried = "approval.outcome_retried" {
        task_id: String,
        retried_by: String,
        actions: Vec<RetriedAction>,
    }

    /// The outcome of a decision ended (`approval:<id>`).
    OutcomeEnded = "approval.outcome_ended" {
        task_id: String,
        status: OutcomeStatus,
        /// The reaction that ran after the actions.
        reaction: Option<OutcomeReaction>,
    }

    /// An action of an outcome made its call (`approval:<id>`).
    ActionInvoked = "approval.action_invoked" {
        index: i32,
        invocation_id: String,
        /// The skill as the action names it.
        skill: String,
    }

    /// An action of an outcome ended (`approval:<id>`).
    ActionEnded = "approval.action_ended" {
        index: i32,
        status: ActionStatus,
        invocation_id: Option<String>,
    }

    /// An artifact was made (`artifact:<id>`).
    ArtifactCreated = "artifact.created" {
        workspace_id: String,
        task_id: Option<String>,
        run_id: Option<String>,
        #[serde(rename = "type")]
        kind: String,
        size_bytes: i64,
        sha256: String,
        skill_invocation_id: Option<String>,
    }

    /// A knowledge snapshot was applied to its slot (`knowledge:<workspace>`).
    KnowledgeSnapshotApplied = "knowledge.snapshot_applied" {
        pack: String,
        source: String,
        scope: String,
        /// How many entities it opened.
        opened: Value,
        /// How many it closed.
        closed: Value,
        /// The slot's token now.
        state_token: Value,
    }

    /// A knowledge document was stored (`knowledge:<workspace>`).
    KnowledgeDocumentStored = "knowledge.document_stored" {
        natural_key: String,
        #[serde(rename = "type")]
        kind: String,
    }
}
