//! The wire types of the core's API under `/api/v1`, written once and used by the server
//! (`skill-core`), the typed client (`skill-client`), the package installer and the SDK's core
//! access. No IO: serde and schemars only.
//!
//! | what | where |
//! |---|---|
//! | the error envelope | [`ErrorEnvelope`], [`ErrorBody`] |
//! | pages and item lists | [`Page`], [`Items`], [`PageQuery`] |
//! | skill versions | [`PublishRequest`], [`PatchRequest`], [`SkillOut`], [`ListQuery`], [`MetadataOut`] |
//! | assignments; disabling a principal | [`AssignRequest`], [`Assigned`], [`Revoked`], [`AssignedSkill`], [`DisableRequest`] |
//! | package installs, a whole plan applied at once | [`RecordRequest`], [`InstallOut`], [`ApplyRequest`], [`ApplyOut`] |
//! | the events journal | [`EventOut`], [`EventsQuery`] |
//! | calls: invoke, read, list; claim, heartbeat, complete, fail, cancel; executor sessions | [`InvokeRequest`], [`InvocationOut`], [`ClaimRequest`], [`ClaimOut`], [`SessionRequest`] |
//! | audience tokens for the skills an executor calls | [`AudienceTokenRequest`], [`AudienceTokenOut`] |
//! | work: task types, tasks, runs, approvals and their outcomes, comments | [`TaskTypeRequest`], [`TaskRequest`], [`RunRequest`], [`ApprovalRequest`], [`DecideRequest`], [`CommentRequest`] |
//! | artifacts: create, read, list, content | [`ArtifactRequest`], [`ArtifactOut`], [`ArtifactQuery`] |
//! | artifact types: publish, read, list | [`ArtifactTypeRequest`], [`ArtifactTypeOut`], [`ArtifactTypeQuery`] |
//! | who may decide what lets an external write happen: the work's initiators and the one rule | [`four_eyes::may_decide`], [`Initiator`] |
//! | every operation (method, path, permission, bodies, error codes) | [`operations::OPERATIONS`] |
//! | the OpenAPI 3.1 document built from them | [`openapi::document`] |
//! | the skill-facing routes the SDK calls | [`sdk_routes`] |
//! | the names of the metrics every binary exports, and their labels | [`telemetry`] |

mod agents;
mod artifacts;
mod basis;
mod envelope;
pub mod four_eyes;
mod invocations;
mod journal;
mod knowledge;
pub mod openapi;
pub mod operations;
mod outcome;
mod package_tests;
mod packages;
mod page;
mod principals;
mod processes;
mod protocol_schema;
mod rules;
pub mod sdk_routes;
mod skills;
mod states;
pub mod telemetry;
mod tokens;
mod work;

pub use agents::{AgentOut, AgentRequest, AgentRequestOut, AgentTokenOut, AgentTokenRequest, ClientInfo, OperatorOut};
pub use artifacts::{
    ArtifactOut, ArtifactQuery, ArtifactRequest, ArtifactTypeOut, ArtifactTypeQuery, ArtifactTypeRequest,
    MAX_ARTIFACT_BYTES,
};
pub use basis::{ActionCall, Basis, DecisionAuthority, ExecutionResult, Failure, HeldGrant, SlotOutcome};
pub use envelope::{ErrorBody, ErrorEnvelope};
pub use four_eyes::{Initiator, InitiatorRole};
pub use outcome::{
    ApprovalSchema, ArtifactSchema, DraftSpec, Gate, GateOutcomes, InvokeSkill, OutcomeAction, OutputSlot, Reaction,
    TaskExecution,
};
/// A version's contract, as the catalog shows it and claims hand it to executors.
pub use skill_contract::Contract;
/// The agent document (`kind: Agent`) the apply carries and the answers show.
pub use skill_contract::agent;
/// A registered error code (`docs/errors.md`).
pub use skill_contract::codes::Code;
/// The process document, as `POST /processes` and packages carry it.
pub use skill_contract::process;
/// The work rule document, as `POST /rules` and packages carry it.
pub use skill_contract::rule;
pub use skill_contract::task_type::{Criterion, CriterionKind};
pub mod events;
pub use events::{EventData, EventOut, EventsQuery};
pub use invocations::{
    CalledSkill, CancelRequest, ClaimOut, ClaimRequest, ClaimSettings, ClaimedSkill, CloseRequest, CompleteRequest,
    FailRequest, HeartbeatRequest, InvocationOut, InvocationQuery, InvokeRequest, MAX_CLAIM_CALLS, MAX_DOCUMENT_BYTES,
    ReportedError, RequestedBy, SessionOut, SessionRequest, Waiting,
};
pub use journal::{CheckpointOut, ConsistencyProofOut, ConsistencyQuery, InclusionProofOut, InclusionQuery};
pub use knowledge::{
    DocumentOut, DocumentRequest, EntityPage, EntityQuery, RecallAnswer, RecallRequest, SnapshotPlan, SnapshotRequest,
};
pub use package_tests::{
    MAX_PACKAGE_TEST_BYTES, MAX_TEST_RUN_SECONDS, MAX_TEST_WORKSPACES, MAX_TESTS, PackageTestOut, PackageTestRequest,
    TestFailure, TestFile, TestOutcome,
};
pub use packages::{
    ApplyOut, ApplyRequest, InstallOut, MAX_APPLY_BYTES, ObjectRef, PackageRef, PlannedPatch, RecordRequest,
    SettingsOut, SettingsRequest,
};
pub use page::{Items, Page, PageQuery};
pub use principals::{
    AssignRequest, Assigned, AssignedSkill, DisableOut, DisableRequest, ExecutorAllowance, ExecutorAllowanceOut,
    Revoked,
};
pub use processes::{
    CancelInstanceRequest, InstanceOut, InstanceQuery, InstanceStepsQuery, MAX_INPUT_BYTES, ProcessOut, ProcessQuery,
    ProcessRequest, StartRequest, StepOut,
};
pub use rules::{
    ConditionOut, EvaluateOut, EvaluateRequest, FactDraft, FactOut, FactQuery, FactRequest, MAX_FACT_BYTES,
    MAX_FACT_DEPTH, PlannedCall, PlannedProcess, PlannedWork, RuleEvaluationOut, RuleOut, RuleQuery, RuleRequest,
};
/// The contract's policy words, as the API's answers and the core's rows hold them.
pub use skill_contract::{Idempotency, RiskLevel, SideEffects, is_invisible_or_bidi};
/// How a skill is implemented, and how a JSON Schema reads (forms, labels, examples).
pub use skill_contract::{Implementation, JsonType, NormalizeOptions, Protocol, SchemaView};
pub use skills::{
    Composition, DEFAULT_PAGE, DEFAULT_VERSION, ListQuery, MAX_PAGE, MetadataOut, PackageOut, PatchRequest,
    PublishRequest, SkillKind, SkillOut, etag, parse_etag,
};
pub use states::{
    ActionStatus, ApprovalStatus, CallStatus, InstanceStatus, Lifecycle, LostBasis, OutcomeReaction, OutcomeStatus,
    OutputStatus, PrincipalKind, RequestStatus, RequesterKind, RuleEvaluationStatus, RunStatus, SessionState,
    SessionStatus, SkillStatus, State, StepKind, StepStatus, TaskStatus, UnknownState, WaitingReason,
};
pub use tokens::{AudienceClaims, AudienceTokenOut, AudienceTokenRequest};
pub use work::{
    ActionOut, ApprovalOut, ApprovalRequest, CloseTaskRequest, CommentOut, CommentRequest, DecideRequest,
    EndRunRequest, OfTaskQuery, OutcomeOut, RequestedCall, RequestedCallOut, RetryRequest, RunOut, RunRequest,
    TaskApproval, TaskOut, TaskQuery, TaskRequest, TaskTypeOut, TaskTypeProcess, TaskTypeQuery, TaskTypeRef,
    TaskTypeRequest, TaskTypeSpec, WithdrawRequest,
};

/// The path every route of this crate is relative to.
pub const BASE_PATH: &str = "/api/v1";

/// The header that makes a write safe to repeat.
pub const IDEMPOTENCY_KEY_HEADER: &str = "idempotency-key";

/// The header on an answer replayed for a repeated `Idempotency-Key` (`true`).
pub const IDEMPOTENCY_REPLAYED_HEADER: &str = "idempotency-replayed";

/// The answer of `/healthz` and `/readyz`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
pub struct Health {
    /// `ok` (`/healthz`), `ready` or `unavailable` (`/readyz`).
    pub status: String,
}
