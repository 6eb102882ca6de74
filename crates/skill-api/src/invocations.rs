//! Calls of skill versions: invoking, reading and listing them; what executors send to claim,
//! keep and finish a call; executor sessions.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use skill_contract::{RiskLevel, SideEffects};

use crate::{Basis, CallStatus, RequesterKind, SessionState, WaitingReason};

/// The largest `inputs` or `output` object, as JSON: 256 KiB.
pub const MAX_DOCUMENT_BYTES: usize = 256 * 1024;

/// The body of `POST /skills/{reference}:invoke`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct InvokeRequest {
    /// The call's inputs, checked against the contract's `inputs` schema.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inputs: Option<Map<String, Value>>,
    /// Names exactly one call of this version: a repeat with the same inputs answers that call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idempotency_key: Option<String>,
    /// The task the call is bound to (the caller needs `tasks.write` in its workspace).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_id: Option<String>,
    /// The caller's running run the call is made in (its task is the call's task).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_id: Option<String>,
    /// An approved gate of the same task: the basis of an `external_write`, once per version.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approval_id: Option<String>,
}

/// The version a call is of.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct CalledSkill {
    pub name: String,
    pub version: String,
}

/// Who asked for a call: `principal`, `rule`, `approval`, `verification` or `run`, and its id.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct RequestedBy {
    pub kind: RequesterKind,
    #[serde(rename = "ref")]
    pub reference: String,
}

/// One call as the API shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct InvocationOut {
    pub id: String,
    pub skill_id: String,
    pub skill: CalledSkill,
    pub inputs: Value,
    pub requested_by: RequestedBy,
    /// The principal on whose behalf the call acts.
    pub authority_principal_id: String,
    /// Why an external write may happen (`null` when none was needed).
    pub authorization_basis: Option<Basis>,
    pub idempotency_key: Option<String>,
    pub status: CallStatus,
    pub attempt: i32,
    pub max_attempts: i32,
    pub available_at: String,
    pub output: Option<Value>,
    /// The last failure, or why the call was cancelled.
    pub error: Option<ReportedError>,
    pub cost: Option<Value>,
    pub fencing_token: i64,
    pub executor_principal_id: Option<String>,
    pub executor_session_id: Option<String>,
    pub lease_expires_at: Option<String>,
    pub heartbeat_at: Option<String>,
    pub task_id: Option<String>,
    pub run_id: Option<String>,
    pub artifact_id: Option<String>,
    pub created_at: String,
    pub updated_at: String,
    pub started_at: Option<String>,
    pub finished_at: Option<String>,
    /// Why a pending call waits, when it does: `backoff` (until `availableAt`), `no_executor`
    /// (no open session of an executor covers its implementation), `queued`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub waiting: Option<Waiting>,
    /// The OpenTelemetry trace the call belongs to (32 hex digits), when the core exported
    /// traces as it was made: find it in the tracing backend.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace_id: Option<String>,
}

/// Why a pending call has not started.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Waiting {
    pub reason: WaitingReason,
    /// The implementation an executor must cover: `local:<entrypoint>`, `http:<endpoint>`, …
    pub implementation: String,
    pub message: String,
}

/// The query of `GET /skill-invocations`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct InvocationQuery {
    /// Only the calls made on this task: anyone who may read the task (`tasks.read` in its
    /// workspace) sees all of them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub task: Option<String>,
    /// `pending`, `running`, `succeeded`, `failed` or `cancelled`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    /// A version: an id or `name@version`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub skill: Option<String>,
    /// The authority's principal id (only executors and `org.read` holders see others' calls).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub caller: Option<String>,
    /// Created at or after this RFC 3339 time.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub since: Option<String>,
    /// Created before this RFC 3339 time.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub until: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub limit: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cursor: Option<String>,
}

/// The body of `POST /skill-invocations:claim`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ClaimRequest {
    /// 1 to 10 of `local`, `http`, `mcp`.
    pub protocols: Vec<String>,
    /// Entrypoints of `local` calls this executor runs (at most 500).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub local_entrypoints: Vec<String>,
    /// Origins `scheme://host[:port]` of `http` calls (at most 100).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub http_origins: Vec<String>,
    /// Origins and `stdio:<name>` servers of `mcp` calls (at most 100).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub mcp_endpoints: Vec<String>,
    /// Audiences of remote calls (at most 100); a call without one is always admitted.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub audiences: Vec<String>,
    /// The executor's session: the lease ends when the session does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// The lease's length, clamped to 10..3600 s (default: the contract's timeout + 30 s).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lease_seconds: Option<u32>,
    /// Only this call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub invocation_id: Option<String>,
    /// How long to wait for a call when there is none yet: 0 to 30 s (default 0: answer at once).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wait_seconds: Option<u32>,
    /// How many calls to take at most, 1 to [`MAX_CLAIM_CALLS`] (default 1): the executor's free
    /// slots. The first is the answer; the others come in its `more`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_calls: Option<u32>,
}

/// The most calls one claim takes (`maxCalls`).
pub const MAX_CLAIM_CALLS: u32 = 32;

/// The version a claimed call runs: what the executor needs of it (never the catalog `config`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClaimedSkill {
    pub id: String,
    pub name: String,
    pub version: String,
    pub protocol: String,
    pub side_effects: SideEffects,
    pub risk_level: RiskLevel,
    pub contract: skill_contract::Contract,
}

/// The settings of the skill's package a claim hands over.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClaimSettings {
    pub package: String,
    pub version: String,
    pub schema_revision: i64,
    pub values: Value,
}

/// The answer of a claim that took a call (`204` when there was none).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClaimOut {
    pub invocation: InvocationOut,
    pub skill: ClaimedSkill,
    pub settings: Option<ClaimSettings>,
    /// The other calls taken by a claim with `maxCalls` above 1, in queue order, each with its
    /// own lease and fencing token (absent when none).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub more: Vec<ClaimOut>,
    /// The W3C `traceparent` of the span that made the call (absent without traces): the
    /// executor's span of this attempt is its child.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub traceparent: Option<String>,
}

/// The body of `POST /skill-invocations/{id}:heartbeat`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct HeartbeatRequest {
    pub fencing_token: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lease_seconds: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
}

/// The body of `POST /skill-invocations/{id}:complete`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CompleteRequest {
    pub fencing_token: i64,
    /// The call's output, checked against the contract's `outputs` schema.
    pub output: Map<String, Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost: Option<Map<String, Value>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
}

/// What went wrong, as an executor reports it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReportedError {
    /// `^[a-z0-9][a-z0-9_.-]*$`, at most 100 characters.
    pub code: String,
    /// At most 4,000 characters.
    #[serde(default)]
    pub message: String,
    #[serde(default)]
    pub retryable: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub details: Option<Value>,
}

impl From<&ReportedError> for crate::basis::Failure {
    /// A call's failure, as an action that made the call keeps it.
    fn from(error: &ReportedError) -> Self {
        Self {
            retryable: Some(error.retryable),
            details: error.details.clone(),
            ..Self::new(error.code.clone(), error.message.clone())
        }
    }
}

/// The body of `POST /skill-invocations/{id}:fail`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct FailRequest {
    pub fencing_token: i64,
    pub error: ReportedError,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
}

/// The body of `POST /skill-invocations/{id}:cancel`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CancelRequest {
    /// 1 to 500 characters (default `cancelled`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// The body of `POST /executor-sessions`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SessionRequest {
    /// What the executor offers, e.g. `skills.protocol.local` (at most 50).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub capabilities: Vec<String>,
    /// How long the session lives without a heartbeat: 10 to 600 s (default 60).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl_seconds: Option<u32>,
    /// With a heartbeat, `true`: the executor is stopping — claims made with this session take
    /// nothing from now on and waiting ones answer at once, while its running calls go on and
    /// report. Never undone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub draining: Option<bool>,
}

/// The body of `POST /executor-sessions/{id}:close`: `{}`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CloseRequest {}

/// An executor's session.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionOut {
    pub id: String,
    pub principal_id: String,
    pub status: SessionState,
    pub capabilities: Vec<String>,
    pub created_at: String,
    pub heartbeat_at: String,
    pub expires_at: String,
    pub closed_at: Option<String>,
    /// Whether its executor is stopping (claims with it take nothing).
    #[serde(default)]
    pub draining: bool,
}
