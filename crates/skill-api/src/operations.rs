//! Every operation of `/api/v1` as data: method, path, who may call it, the request, query and
//! answer types, the error codes beyond authentication, and whether it takes an
//! `Idempotency-Key`. The server routes from this table, the client builds its requests from
//! it, and the OpenAPI document is made of it.

use schemars::{JsonSchema, Schema, SchemaGenerator};

use crate::{
    ApplyOut, ApplyRequest, AssignRequest, Assigned, AssignedSkill, AudienceTokenOut, AudienceTokenRequest,
    CancelRequest, ClaimOut, ClaimRequest, CloseRequest, CompleteRequest, DisableOut, DisableRequest, EventOut,
    EventsQuery, FailRequest, HeartbeatRequest, InstallOut, InvocationOut, InvocationQuery, InvokeRequest, Items,
    ListQuery, MetadataOut, Page, PageQuery, PatchRequest, PublishRequest, RecordRequest, Revoked, SessionOut,
    SessionRequest, SettingsOut, SettingsRequest, SkillOut,
};
use crate::{
    ApprovalOut, ApprovalRequest, CloseTaskRequest, CommentOut, CommentRequest, DecideRequest, EndRunRequest,
    OfTaskQuery, RunOut, RunRequest, TaskOut, TaskQuery, TaskRequest, TaskTypeOut, TaskTypeQuery, TaskTypeRequest,
    WithdrawRequest,
};
use crate::{ArtifactOut, ArtifactQuery, ArtifactRequest};

/// Makes the schema of a type.
pub type SchemaOf = fn(&mut SchemaGenerator) -> Schema;

fn schema<T: JsonSchema>(generator: &mut SchemaGenerator) -> Schema {
    generator.subschema_for::<T>()
}

/// An HTTP method of the API.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    Get,
    Post,
    Patch,
}

impl Method {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Get => "GET",
            Self::Post => "POST",
            Self::Patch => "PATCH",
        }
    }
}

/// Which operation: the server matches on it exhaustively, so an operation without a handler
/// does not compile.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Op {
    PublishSkill,
    ListSkills,
    ReadSkill,
    SkillDefinition,
    SkillMetadata,
    PatchSkill,
    Catalogue,
    AssignSkill,
    AssignedSkills,
    RevokeSkill,
    ApplyPackage,
    RecordInstall,
    ReadInstall,
    Events,
    InvokeSkill,
    ListInvocations,
    ReadInvocation,
    ClaimInvocation,
    HeartbeatInvocation,
    CompleteInvocation,
    FailInvocation,
    CancelInvocation,
    OpenSession,
    KeepSession,
    CloseSession,
    ReadSettings,
    SetSettings,
    IssueAudienceToken,
    DisablePrincipal,
    PublishTaskType,
    ListTaskTypes,
    ReadTaskType,
    CreateTask,
    ListTasks,
    ReadTask,
    CloseTask,
    StartRun,
    ReadRun,
    EndRun,
    RequestApproval,
    ListApprovals,
    ReadApproval,
    DecideApproval,
    WithdrawApproval,
    AddComment,
    ListComments,
    CreateArtifact,
    ListArtifacts,
    ReadArtifact,
    ArtifactContent,
}

/// One operation of the API.
#[derive(Clone, Copy)]
pub struct Operation {
    pub op: Op,
    pub method: Method,
    /// The path under `/api/v1`, with `{parameter}`s; a `{reference}` may hold `/` (a
    /// namespaced name).
    pub path: &'static str,
    pub summary: &'static str,
    /// Who may call it.
    pub permission: &'static str,
    /// The request body's type.
    pub request: Option<SchemaOf>,
    /// The query string's type.
    pub query: Option<SchemaOf>,
    /// The success status and its body's type.
    pub success: (u16, Option<SchemaOf>),
    /// The error codes it answers with, beyond authentication and malformed requests.
    pub errors: &'static [(u16, &'static str)],
    /// Whether a repeat with the same `Idempotency-Key` answers the first answer instead of
    /// acting again.
    pub idempotency_key: bool,
}

impl std::fmt::Debug for Operation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}", self.method.as_str(), self.path)
    }
}

impl Operation {
    /// The operation `op`.
    pub fn of(op: Op) -> &'static Operation {
        OPERATIONS.iter().find(|operation| operation.op == op).expect("invariant: every Op is in OPERATIONS")
    }

    /// The names of the path's parameters, in order.
    pub fn parameters(&self) -> impl Iterator<Item = &'static str> {
        let path: &'static str = self.path;
        path.split('{').skip(1).filter_map(|rest| rest.split_once('}').map(|(name, _)| name))
    }

    /// Whether it only reads (a `GET`): such a request may be repeated freely.
    pub fn is_read(&self) -> bool {
        self.method == Method::Get
    }
}

/// The refusals of a publication.
const PUBLISH_ERRORS: &[(u16, &str)] = &[
    (409, "skill_exists"),
    (422, "invalid_skill_contract"),
    (422, "unsupported_skill_condition"),
    (422, "secret_material_rejected"),
    (422, "invalid_json_schema"),
    (422, "invalid_skill_document"),
    (422, "invalid_protocol"),
    (422, "resolution_failure"),
    (422, "cycle_detected"),
];

/// The refusals of a lease holder's report (heartbeat, complete, fail).
const LEASE_ERRORS: &[(u16, &str)] = &[
    (404, "not_found"),
    (409, "stale_invocation_lease"),
    (409, "session_not_active"),
    (403, "session_owner_mismatch"),
];

/// The refusals of a session operation.
const SESSION_ERRORS: &[(u16, &str)] =
    &[(404, "not_found"), (403, "session_owner_mismatch"), (409, "session_not_active")];

/// Every operation of `/api/v1`.
pub const OPERATIONS: &[Operation] = &[
    Operation {
        op: Op::PublishSkill,
        method: Method::Post,
        path: "/skills",
        summary: "Publish a skill version: a leaf (contract), a composite (includes, tools) or a catalog row",
        permission: "org.manage",
        request: Some(schema::<PublishRequest>),
        query: None,
        success: (201, Some(schema::<SkillOut>)),
        errors: PUBLISH_ERRORS,
        idempotency_key: true,
    },
    Operation {
        op: Op::ListSkills,
        method: Method::Get,
        path: "/skills",
        summary: "List skill versions in publication order",
        permission: "org.read",
        request: None,
        query: Some(schema::<ListQuery>),
        success: (200, Some(schema::<Page<SkillOut>>)),
        errors: &[(422, "invalid_status")],
        idempotency_key: false,
    },
    Operation {
        op: Op::ReadSkill,
        method: Method::Get,
        path: "/skills/{reference}",
        summary: "Read a version by id, name@version or name (newest active, else newest deprecated)",
        permission: "org.read | skills.invoke | skills.execute",
        request: None,
        query: None,
        success: (200, Some(schema::<SkillOut>)),
        errors: &[(404, "not_found")],
        idempotency_key: false,
    },
    Operation {
        op: Op::SkillDefinition,
        method: Method::Get,
        path: "/skills/{reference}:definition",
        summary: "What a version resolves to: the skill, its resolved tools, metadata and schemas (SkillDefinition)",
        permission: "org.read | skills.invoke | skills.execute",
        request: None,
        query: None,
        success: (200, Some(crate::protocol_schema::definition)),
        errors: &[(404, "not_found"), (409, "skill_not_invocable"), (422, "resolution_failure")],
        idempotency_key: false,
    },
    Operation {
        op: Op::SkillMetadata,
        method: Method::Get,
        path: "/skills/{reference}:metadata",
        summary: "A version's SkillMetadata (capability summary, writes, read_only) with its id, status and kind",
        permission: "org.read | skills.invoke | skills.execute",
        request: None,
        query: None,
        success: (200, Some(schema::<MetadataOut>)),
        errors: &[(404, "not_found"), (409, "skill_not_invocable"), (422, "resolution_failure")],
        idempotency_key: false,
    },
    Operation {
        op: Op::PatchSkill,
        method: Method::Patch,
        path: "/skills/{reference}",
        summary: "Change a version's description, config, schemas (without a contract), status (forward) or endpoint; \
                  needs If-Match: \"skill-<rowVersion>\"",
        permission: "org.manage",
        request: Some(schema::<PatchRequest>),
        query: None,
        success: (200, Some(schema::<SkillOut>)),
        errors: &[
            (400, "invalid_if_match"),
            (404, "not_found"),
            (409, "version_conflict"),
            (409, "skill_version_immutable"),
            (409, "invalid_status_transition"),
            (409, "skill_not_invocable"),
            (422, "invalid_status"),
            (422, "invalid_skill_contract"),
            (422, "empty_update"),
            (428, "if_match_required"),
        ],
        idempotency_key: false,
    },
    Operation {
        op: Op::Catalogue,
        method: Method::Get,
        path: "/catalogue",
        summary: "The metadata of every active leaf and composite version",
        permission: "org.read",
        request: None,
        query: Some(schema::<PageQuery>),
        success: (200, Some(schema::<Page<MetadataOut>>)),
        errors: &[],
        idempotency_key: false,
    },
    Operation {
        op: Op::AssignSkill,
        method: Method::Post,
        path: "/principals/{principal}/skills",
        summary: "Assign a skill version to a principal (201 when new, 200 when it was assigned already)",
        permission: "org.manage",
        request: Some(schema::<AssignRequest>),
        query: None,
        success: (200, Some(schema::<Assigned>)),
        errors: &[(404, "not_found"), (422, "skill_disabled")],
        idempotency_key: true,
    },
    Operation {
        op: Op::AssignedSkills,
        method: Method::Get,
        path: "/principals/{principal}/skills",
        summary: "The versions assigned to a principal",
        permission: "org.read, or the principal itself",
        request: None,
        query: None,
        success: (200, Some(schema::<Items<AssignedSkill>>)),
        errors: &[(404, "not_found")],
        idempotency_key: false,
    },
    Operation {
        op: Op::RevokeSkill,
        method: Method::Post,
        path: "/principals/{principal}/skills/{skill}:revoke",
        summary: "Take an assignment back (idempotent)",
        permission: "org.manage",
        request: None,
        query: None,
        success: (200, Some(schema::<Revoked>)),
        errors: &[(404, "not_found")],
        idempotency_key: true,
    },
    Operation {
        op: Op::ApplyPackage,
        method: Method::Post,
        path: "/packages:apply",
        summary: "Apply a package's whole plan in one transaction: versions published and changed, the install recorded; nothing when any part is refused",
        permission: "org.manage",
        request: Some(schema::<ApplyRequest>),
        query: None,
        success: (200, Some(schema::<ApplyOut>)),
        errors: &[
            (404, "not_found"),
            (409, "skill_exists"),
            (409, "version_conflict"),
            (409, "skill_version_immutable"),
            (409, "invalid_status_transition"),
            (409, "package_object_conflict"),
            (422, "invalid_skill_contract"),
            (422, "invalid_json_schema"),
            (422, "resolution_failure"),
            (422, "empty_update"),
            (422, "unknown_reference"),
            (422, "invalid_package_settings"),
        ],
        idempotency_key: true,
    },
    Operation {
        op: Op::RecordInstall,
        method: Method::Post,
        path: "/packages:record",
        summary: "Record a package install and link its objects (skills by name)",
        permission: "org.manage",
        request: Some(schema::<RecordRequest>),
        query: None,
        success: (200, Some(schema::<InstallOut>)),
        errors: &[(409, "package_object_conflict"), (422, "unknown_reference")],
        idempotency_key: true,
    },
    Operation {
        op: Op::ReadInstall,
        method: Method::Get,
        path: "/packages/{key}",
        summary: "The last install of a package and its objects",
        permission: "org.read",
        request: None,
        query: None,
        success: (200, Some(schema::<InstallOut>)),
        errors: &[(404, "not_found")],
        idempotency_key: false,
    },
    Operation {
        op: Op::Events,
        method: Method::Get,
        path: "/events",
        summary: "The events journal after a sequence number",
        permission: "org.read",
        request: None,
        query: Some(schema::<EventsQuery>),
        success: (200, Some(schema::<Items<EventOut>>)),
        errors: &[],
        idempotency_key: false,
    },
    Operation {
        op: Op::InvokeSkill,
        method: Method::Post,
        path: "/skills/{reference}:invoke",
        summary: "Call a skill version: a durable call an executor runs (201), or the call a repeated idempotencyKey names (200)",
        permission: "skills.invoke",
        request: Some(schema::<InvokeRequest>),
        query: None,
        success: (201, Some(schema::<InvocationOut>)),
        errors: &[
            (404, "not_found"),
            (422, "invalid_idempotency_key"),
            (409, "idempotency_key_reuse"),
            (409, "skill_not_invocable"),
            (400, "idempotency_key_required"),
            (400, "invalid_skill_inputs"),
            (403, "run_owner_mismatch"),
            (409, "run_not_active"),
            (422, "invocation_mismatch"),
            (403, "permission_denied"),
            (403, "skill_permission_denied"),
            (403, "tool_not_authorized"),
            (403, "skill_side_effect_not_authorized"),
            (409, "task_terminal"),
            (409, "approval_required"),
            (409, "approval_already_used"),
            (409, "execution_already_invoked"),
        ],
        idempotency_key: true,
    },
    Operation {
        op: Op::ListInvocations,
        method: Method::Get,
        path: "/skill-invocations",
        summary: "List calls, newest first (one's own with skills.invoke; all with skills.execute or org.read)",
        permission: "skills.invoke",
        request: None,
        query: Some(schema::<InvocationQuery>),
        success: (200, Some(schema::<Page<InvocationOut>>)),
        errors: &[(404, "not_found"), (422, "invalid_status")],
        idempotency_key: false,
    },
    Operation {
        op: Op::ReadInvocation,
        method: Method::Get,
        path: "/skill-invocations/{id}",
        summary: "Read a call (its authority, its executor, or any skills.execute holder); for a pending one, why it waits",
        permission: "skills.invoke",
        request: None,
        query: None,
        success: (200, Some(schema::<InvocationOut>)),
        errors: &[(404, "not_found")],
        idempotency_key: false,
    },
    Operation {
        op: Op::ClaimInvocation,
        method: Method::Post,
        path: "/skill-invocations:claim",
        summary: "Take the oldest pending call this executor covers, under a lease with a new fencing token (204 when there is none)",
        permission: "skills.execute",
        request: Some(schema::<ClaimRequest>),
        query: None,
        success: (200, Some(schema::<ClaimOut>)),
        errors: &[
            (422, "invalid_protocol"),
            (422, "invalid_executor_endpoint"),
            (404, "not_found"),
            (403, "session_owner_mismatch"),
            (409, "session_not_active"),
        ],
        idempotency_key: true,
    },
    Operation {
        op: Op::HeartbeatInvocation,
        method: Method::Post,
        path: "/skill-invocations/{id}:heartbeat",
        summary: "Renew the lease of a held call (never shorter, never past the attempt's cap)",
        permission: "skills.execute",
        request: Some(schema::<HeartbeatRequest>),
        query: None,
        success: (200, Some(schema::<InvocationOut>)),
        errors: LEASE_ERRORS,
        idempotency_key: true,
    },
    Operation {
        op: Op::CompleteInvocation,
        method: Method::Post,
        path: "/skill-invocations/{id}:complete",
        summary: "Finish a held call with its output: succeeded, or failed with output_contract_violation when the output does not match",
        permission: "skills.execute",
        request: Some(schema::<CompleteRequest>),
        query: None,
        success: (200, Some(schema::<InvocationOut>)),
        errors: LEASE_ERRORS,
        idempotency_key: true,
    },
    Operation {
        op: Op::FailInvocation,
        method: Method::Post,
        path: "/skill-invocations/{id}:fail",
        summary: "Report a held call's failure: retried after the backoff when retryable and attempts remain, else failed",
        permission: "skills.execute",
        request: Some(schema::<FailRequest>),
        query: None,
        success: (200, Some(schema::<InvocationOut>)),
        errors: LEASE_ERRORS,
        idempotency_key: true,
    },
    Operation {
        op: Op::CancelInvocation,
        method: Method::Post,
        path: "/skill-invocations/{id}:cancel",
        summary: "Cancel a pending or running call (one's own, or any with org.manage); a running executor is fenced out",
        permission: "skills.invoke",
        request: Some(schema::<CancelRequest>),
        query: None,
        success: (200, Some(schema::<InvocationOut>)),
        errors: &[(404, "not_found"), (409, "invocation_terminal")],
        idempotency_key: true,
    },
    Operation {
        op: Op::OpenSession,
        method: Method::Post,
        path: "/executor-sessions",
        summary: "Open an executor session: leases taken with it end when it is closed or expires",
        permission: "skills.execute",
        request: Some(schema::<SessionRequest>),
        query: None,
        success: (201, Some(schema::<SessionOut>)),
        errors: &[],
        idempotency_key: true,
    },
    Operation {
        op: Op::KeepSession,
        method: Method::Post,
        path: "/executor-sessions/{id}:heartbeat",
        summary: "Keep an executor session alive for another ttlSeconds",
        permission: "skills.execute",
        request: Some(schema::<SessionRequest>),
        query: None,
        success: (200, Some(schema::<SessionOut>)),
        errors: SESSION_ERRORS,
        idempotency_key: true,
    },
    Operation {
        op: Op::CloseSession,
        method: Method::Post,
        path: "/executor-sessions/{id}:close",
        summary: "Close an executor session; the calls it holds go back to the queue",
        permission: "skills.execute",
        request: Some(schema::<CloseRequest>),
        query: None,
        success: (200, Some(schema::<SessionOut>)),
        errors: &[(404, "not_found"), (403, "session_owner_mismatch")],
        idempotency_key: true,
    },
    Operation {
        op: Op::ReadSettings,
        method: Method::Get,
        path: "/packages/{key}/settings",
        summary: "A package's settings: the schema its install declared and the values set for it",
        permission: "org.read",
        request: None,
        query: None,
        success: (200, Some(schema::<SettingsOut>)),
        errors: &[(404, "not_found")],
        idempotency_key: false,
    },
    Operation {
        op: Op::SetSettings,
        method: Method::Post,
        path: "/packages/{key}/settings",
        summary: "Set a package's settings values, whole: checked against its schema; every later call of its skills receives them",
        permission: "org.manage",
        request: Some(schema::<SettingsRequest>),
        query: None,
        success: (200, Some(schema::<SettingsOut>)),
        errors: &[
            (404, "not_found"),
            (422, "invalid_package_settings"),
            (422, "secret_material_rejected"),
            (409, "version_conflict"),
        ],
        idempotency_key: true,
    },
    Operation {
        op: Op::IssueAudienceToken,
        method: Method::Post,
        path: "/audience-tokens",
        summary: "Issue a short-lived token for one audience and exactly the scopes asked, signed by the core (its JWKS at /.well-known/jwks.json)",
        permission: "skills.execute",
        request: Some(schema::<AudienceTokenRequest>),
        query: None,
        success: (200, Some(schema::<AudienceTokenOut>)),
        errors: &[(403, "audience_reserved")],
        // A token is never stored, so a repeat issues another one.
        idempotency_key: false,
    },
    Operation {
        op: Op::DisablePrincipal,
        method: Method::Post,
        path: "/principals:disable",
        summary: "Disable a principal: its tokens stop working at once, the calls it authorized are cancelled, the calls it runs go back to the queue",
        permission: "org.manage",
        request: Some(schema::<DisableRequest>),
        query: None,
        success: (200, Some(schema::<DisableOut>)),
        errors: &[(404, "not_found"), (409, "principal_disabled")],
        idempotency_key: true,
    },
    Operation {
        op: Op::PublishTaskType,
        method: Method::Post,
        path: "/task-types",
        summary: "Publish a task type version (immutable once published)",
        permission: "org.manage",
        request: Some(schema::<TaskTypeRequest>),
        query: None,
        success: (201, Some(schema::<TaskTypeOut>)),
        errors: &[
            (409, "task_type_exists"),
            (422, "invalid_task_type"),
            (422, "invalid_task_execution"),
            (422, "invalid_acceptance_spec"),
            (422, "unknown_reference"),
            (422, "unpinned_external_write"),
        ],
        idempotency_key: true,
    },
    Operation {
        op: Op::ListTaskTypes,
        method: Method::Get,
        path: "/task-types",
        summary: "Task type versions in publication order",
        permission: "org.read, or tasks.read in a workspace",
        request: None,
        query: Some(schema::<TaskTypeQuery>),
        success: (200, Some(schema::<Page<TaskTypeOut>>)),
        errors: &[],
        idempotency_key: false,
    },
    Operation {
        op: Op::ReadTaskType,
        method: Method::Get,
        path: "/task-types/{reference}",
        summary: "One task type version: an id, key@version, or a key (its newest version)",
        permission: "org.read, or tasks.read in a workspace",
        request: None,
        query: None,
        success: (200, Some(schema::<TaskTypeOut>)),
        errors: &[(404, "not_found")],
        idempotency_key: false,
    },
    Operation {
        op: Op::CreateTask,
        method: Method::Post,
        path: "/tasks",
        summary: "Create a task of a type in a workspace",
        permission: "tasks.write in the workspace",
        request: Some(schema::<TaskRequest>),
        query: None,
        success: (201, Some(schema::<TaskOut>)),
        errors: &[(404, "not_found"), (422, "invalid_custom_fields")],
        idempotency_key: true,
    },
    Operation {
        op: Op::ListTasks,
        method: Method::Get,
        path: "/tasks",
        summary: "Tasks newest first, of the workspaces the caller may read",
        permission: "tasks.read in a workspace",
        request: None,
        query: Some(schema::<TaskQuery>),
        success: (200, Some(schema::<Page<TaskOut>>)),
        errors: &[(404, "not_found"), (422, "invalid_status")],
        idempotency_key: false,
    },
    Operation {
        op: Op::ReadTask,
        method: Method::Get,
        path: "/tasks/{id}",
        summary: "One task",
        permission: "tasks.read in its workspace",
        request: None,
        query: None,
        success: (200, Some(schema::<TaskOut>)),
        errors: &[(404, "not_found")],
        idempotency_key: false,
    },
    Operation {
        op: Op::CloseTask,
        method: Method::Post,
        path: "/tasks/{id}:close",
        summary: "Close a task: done, failed or cancelled (terminal; its external writes end)",
        permission: "tasks.write in its workspace",
        request: Some(schema::<CloseTaskRequest>),
        query: None,
        success: (200, Some(schema::<TaskOut>)),
        errors: &[(404, "not_found"), (409, "task_terminal"), (422, "invalid_status")],
        idempotency_key: true,
    },
    Operation {
        op: Op::StartRun,
        method: Method::Post,
        path: "/runs",
        summary: "Start a run on an open task; the caller owns it",
        permission: "tasks.write in the task's workspace",
        request: Some(schema::<RunRequest>),
        query: None,
        success: (201, Some(schema::<RunOut>)),
        errors: &[(404, "not_found"), (409, "task_terminal"), (409, "run_already_running")],
        idempotency_key: true,
    },
    Operation {
        op: Op::ReadRun,
        method: Method::Get,
        path: "/runs/{id}",
        summary: "One run",
        permission: "tasks.read in its task's workspace",
        request: None,
        query: None,
        success: (200, Some(schema::<RunOut>)),
        errors: &[(404, "not_found")],
        idempotency_key: false,
    },
    Operation {
        op: Op::EndRun,
        method: Method::Post,
        path: "/runs/{id}:end",
        summary: "End one's own run: succeeded, failed or cancelled",
        permission: "the run's owner",
        request: Some(schema::<EndRunRequest>),
        query: None,
        success: (200, Some(schema::<RunOut>)),
        errors: &[(404, "not_found"), (403, "run_owner_mismatch"), (409, "run_not_active"), (422, "invalid_status")],
        idempotency_key: true,
    },
    Operation {
        op: Op::RequestApproval,
        method: Method::Post,
        path: "/approvals",
        summary: "Ask for a decision on an open task (a gate by default)",
        permission: "tasks.write in the task's workspace",
        request: Some(schema::<ApprovalRequest>),
        query: None,
        success: (201, Some(schema::<ApprovalOut>)),
        errors: &[(404, "not_found"), (409, "task_terminal")],
        idempotency_key: true,
    },
    Operation {
        op: Op::ListApprovals,
        method: Method::Get,
        path: "/approvals",
        summary: "The approvals of a task, oldest first",
        permission: "tasks.read in the task's workspace",
        request: None,
        query: Some(schema::<OfTaskQuery>),
        success: (200, Some(schema::<Items<ApprovalOut>>)),
        errors: &[(404, "not_found")],
        idempotency_key: false,
    },
    Operation {
        op: Op::ReadApproval,
        method: Method::Get,
        path: "/approvals/{id}",
        summary: "One approval, with what its outcome did",
        permission: "tasks.read in its task's workspace",
        request: None,
        query: None,
        success: (200, Some(schema::<ApprovalOut>)),
        errors: &[(404, "not_found")],
        idempotency_key: false,
    },
    Operation {
        op: Op::DecideApproval,
        method: Method::Post,
        path: "/approvals/{id}:decide",
        summary: "Approve or reject: never by its requester; the decider's authority is kept and the outcome runs with it",
        permission: "approvals.decide in the task's workspace",
        request: Some(schema::<DecideRequest>),
        query: None,
        success: (200, Some(schema::<ApprovalOut>)),
        errors: &[
            (404, "not_found"),
            (403, "self_approval_refused"),
            (409, "approval_not_pending"),
            (409, "task_terminal"),
            (422, "invalid_outcome"),
        ],
        idempotency_key: true,
    },
    Operation {
        op: Op::WithdrawApproval,
        method: Method::Post,
        path: "/approvals/{id}:withdraw",
        summary: "Withdraw a pending or approved approval: calls waiting on it are cancelled when claimed",
        permission: "its requester, or approvals.decide in the task's workspace",
        request: Some(schema::<WithdrawRequest>),
        query: None,
        success: (200, Some(schema::<ApprovalOut>)),
        errors: &[(404, "not_found"), (409, "approval_not_withdrawable")],
        idempotency_key: true,
    },
    Operation {
        op: Op::AddComment,
        method: Method::Post,
        path: "/task-comments",
        summary: "Comment on a task",
        permission: "tasks.write in the task's workspace",
        request: Some(schema::<CommentRequest>),
        query: None,
        success: (201, Some(schema::<CommentOut>)),
        errors: &[(404, "not_found")],
        idempotency_key: true,
    },
    Operation {
        op: Op::ListComments,
        method: Method::Get,
        path: "/task-comments",
        summary: "The comments of a task, oldest first",
        permission: "tasks.read in the task's workspace",
        request: None,
        query: Some(schema::<OfTaskQuery>),
        success: (200, Some(schema::<Items<CommentOut>>)),
        errors: &[(404, "not_found")],
        idempotency_key: false,
    },
    Operation {
        op: Op::CreateArtifact,
        method: Method::Post,
        path: "/artifacts",
        summary: "Store an immutable artifact in a workspace (a task's, a run's): at most 16 MiB, as text or base64",
        permission: "tasks.write in the workspace",
        request: Some(schema::<ArtifactRequest>),
        query: None,
        success: (201, Some(schema::<ArtifactOut>)),
        errors: &[(404, "not_found"), (413, "artifact_too_large"), (503, "content_store_unavailable")],
        idempotency_key: true,
    },
    Operation {
        op: Op::ListArtifacts,
        method: Method::Get,
        path: "/artifacts",
        summary: "The artifacts of a task, oldest first (?task=)",
        permission: "tasks.read in the task's workspace",
        request: None,
        query: Some(schema::<ArtifactQuery>),
        success: (200, Some(schema::<Items<ArtifactOut>>)),
        errors: &[(404, "not_found")],
        idempotency_key: false,
    },
    Operation {
        op: Op::ReadArtifact,
        method: Method::Get,
        path: "/artifacts/{id}",
        summary: "An artifact's metadata",
        permission: "tasks.read in its workspace, or the executor of a running call of ?forTask= whose authority reads it",
        request: None,
        query: Some(schema::<ArtifactQuery>),
        success: (200, Some(schema::<ArtifactOut>)),
        errors: &[(404, "artifact_not_found")],
        idempotency_key: false,
    },
    Operation {
        op: Op::ArtifactContent,
        method: Method::Get,
        path: "/artifacts/{id}/content",
        summary: "An artifact's content, as stored: Content-Type its media type, X-Content-SHA256 its hash",
        permission: "as for its metadata",
        request: None,
        query: Some(schema::<ArtifactQuery>),
        success: (200, None),
        errors: &[(404, "artifact_not_found"), (503, "content_store_unavailable")],
        idempotency_key: false,
    },
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_op_has_one_operation() {
        for operation in OPERATIONS {
            let same = OPERATIONS.iter().filter(|other| other.op == operation.op).count();
            assert_eq!(same, 1, "{operation:?}");
            let twin = OPERATIONS
                .iter()
                .filter(|other| other.method == operation.method && other.path == operation.path)
                .count();
            assert_eq!(twin, 1, "{operation:?} is listed twice");
        }
    }

    #[test]
    fn parameters_are_read_in_order() {
        let names: Vec<&str> = Operation::of(Op::RevokeSkill).parameters().collect();
        assert_eq!(names, ["principal", "skill"]);
        assert_eq!(Operation::of(Op::ListSkills).parameters().count(), 0);
    }
}
