//! The rows the store reads and writes: plain data, checked by the engine before they get here
//! and by the database's constraints when they arrive.

mod processes;
mod rules;
mod work;

use chrono::{DateTime, Utc};
use serde_json::Value;
use skill_api::{Basis, CallStatus, PrincipalKind, ReportedError, RequesterKind, SessionStatus, SkillStatus};
use skill_contract::agent::AgentSpec;
use skill_contract::{Contract, RiskLevel, SideEffects};

use crate::states::{JsonText, Nullable, Text};

pub use processes::{InstanceRecord, ProcessRecord, StepRecord};
pub use rules::{FactRecord, RuleEvaluationRecord, RuleRecord, TaskOriginRecord};
pub use work::{
    ActionRecord, AgentRequestRecord, ApprovalRecord, ArtifactRecord, ArtifactTypeRecord, BasisState, CommentRecord,
    DocumentRecord, EntityRecord, Gates, RunRecord, SlotRecord, TaskFilter, TaskRecord, TaskTypeRecord, WorkChange,
};

/// A point in time, always UTC.
pub type Time = DateTime<Utc>;

/// Who acts: a person, an agent or an executor.
#[derive(sqlx::FromRow, Debug, Clone, PartialEq, Eq)]
pub struct Principal {
    pub id: String,
    #[sqlx(try_from = "Text<PrincipalKind>")]
    pub kind: PrincipalKind,
    /// Unique, 1..200 characters.
    pub name: String,
    pub display_name: String,
    pub created_at: Time,
    pub disabled_at: Option<Time>,
}

/// A personal access token. Only its hash is stored; the token itself is shown once.
#[derive(sqlx::FromRow, Debug, Clone, PartialEq, Eq)]
pub struct AccessToken {
    #[sqlx(rename = "token_id")]
    pub id: String,
    pub principal_id: String,
    /// Hex SHA-256 of the token.
    pub token_hash: String,
    pub label: String,
    #[sqlx(rename = "token_created_at")]
    pub created_at: Time,
    pub expires_at: Option<Time>,
    pub revoked_at: Option<Time>,
    /// For an agent's token, the person who operates the agent with it.
    pub operated_by: Option<String>,
    /// The person who had the token issued through the API (none from the operator's command).
    pub issued_by: Option<String>,
}

/// What a bearer token stands for: the token, its principal, the principal's grants and, for an
/// executor, what the operator allowed it to run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Credential {
    pub token: AccessToken,
    pub principal: Principal,
    pub grants: Vec<Grant>,
    pub allowance: Option<ExecutorAllowance>,
    /// The token names a person operating its agent who is now disabled.
    pub operator_disabled: bool,
    /// The person who had the token issued is now disabled.
    pub issuer_disabled: bool,
}

/// What an executor principal may run (`principals.executor_allowance`), as the operator set it:
/// the protocols, and for each the implementations — `local` entrypoints (`module:function`,
/// or a module for every function in it and in its submodules), `http` origins, `mcp` origins
/// or `stdio:<name>` servers, and the audiences it may carry tokens for.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ExecutorAllowance {
    #[serde(default)]
    pub protocols: Vec<String>,
    #[serde(default)]
    pub local: Vec<String>,
    #[serde(default)]
    pub http_origins: Vec<String>,
    #[serde(default)]
    pub mcp_origins: Vec<String>,
    #[serde(default)]
    pub audiences: Vec<String>,
}

#[derive(sqlx::FromRow, Debug, Clone, PartialEq, Eq)]
pub struct Workspace {
    pub id: String,
    /// Unique, 1..100 characters.
    pub key: String,
    pub name: String,
    pub created_at: Time,
}

/// A permission held by a principal in one workspace, or in all of them when `workspace_id` is
/// `None`.
#[derive(sqlx::FromRow, Debug, Clone, PartialEq, Eq)]
pub struct Grant {
    #[sqlx(rename = "grant_id")]
    pub id: String,
    pub principal_id: String,
    pub workspace_id: Option<String>,
    pub permission: String,
    #[sqlx(rename = "grant_created_at")]
    pub created_at: Time,
}

/// One skill version as stored. Exactly one of three shapes: a leaf (`contract` with its policy
/// columns and protocol), a composite (`composition`, no protocol), or a catalog row (a protocol,
/// neither document).
#[derive(sqlx::FromRow, Debug, Clone, PartialEq)]
pub struct SkillRecord {
    pub id: String,
    pub name: String,
    pub version: String,
    pub description: String,
    pub protocol: Option<String>,
    #[sqlx(json)]
    pub config: Value,
    #[sqlx(json(nullable))]
    pub input_schema: Option<Value>,
    #[sqlx(json(nullable))]
    pub output_schema: Option<Value>,
    #[sqlx(try_from = "Nullable<SideEffects>")]
    pub side_effects: Option<SideEffects>,
    #[sqlx(try_from = "Nullable<RiskLevel>")]
    pub risk_level: Option<RiskLevel>,
    /// A leaf's normalized contract.
    #[sqlx(try_from = "JsonText<Contract>")]
    pub contract: Option<Contract>,
    /// A composite's includes and tools.
    #[sqlx(try_from = "JsonText<skill_api::Composition>")]
    pub composition: Option<skill_api::Composition>,
    #[sqlx(try_from = "Text<SkillStatus>")]
    pub status: SkillStatus,
    pub row_version: i32,
    pub created_at: Time,
    pub updated_at: Time,
}

/// A skill record with the package that installed its name, if any.
#[derive(Debug, Clone, PartialEq)]
pub struct SkillEntry {
    pub skill: SkillRecord,
    pub package: Option<PackageInstall>,
}

/// A listing's row: the skill's columns, and the package columns it joins (`package_key`,
/// `package_version`, `install_hash`, `installed_at`, `installed_by`), null when no package
/// installed the skill's name.
impl<'r, R: sqlx::Row> sqlx::FromRow<'r, R> for SkillEntry
where
    SkillRecord: sqlx::FromRow<'r, R>,
    &'r str: sqlx::ColumnIndex<R>,
    Option<String>: sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
    Option<Time>: sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
{
    fn from_row(row: &'r R) -> Result<Self, sqlx::Error> {
        let package = match row.try_get::<Option<String>, _>("package_key")? {
            None => None,
            Some(key) => Some(PackageInstall {
                key,
                version: row.try_get::<Option<String>, _>("package_version")?.unwrap_or_default(),
                install_hash: row.try_get::<Option<String>, _>("install_hash")?.unwrap_or_default(),
                installed_at: row.try_get::<Option<Time>, _>("installed_at")?.unwrap_or_default(),
                installed_by: row.try_get("installed_by")?,
            }),
        };
        Ok(Self { skill: SkillRecord::from_row(row)?, package })
    }
}

/// What a change of a skill version writes: the new values of every field that may change. The
/// database refuses anything else.
#[derive(Debug, Clone, PartialEq)]
pub struct SkillChange {
    pub description: String,
    pub config: Value,
    pub input_schema: Option<Value>,
    pub output_schema: Option<Value>,
    pub status: SkillStatus,
    pub contract: Option<Contract>,
}

impl SkillChange {
    /// The change that writes back what `skill` holds now.
    pub fn from_record(skill: &SkillRecord) -> Self {
        Self {
            description: skill.description.clone(),
            config: skill.config.clone(),
            input_schema: skill.input_schema.clone(),
            output_schema: skill.output_schema.clone(),
            status: skill.status,
            contract: skill.contract.clone(),
        }
    }
}

/// Which skill versions a listing returns, oldest first, after the cursor.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SkillFilter {
    pub name: Option<String>,
    pub status: Option<SkillStatus>,
    /// Only skills whose name a package installed.
    pub package: Option<String>,
    /// The id of the last row of the previous page.
    pub after: Option<String>,
    pub limit: u32,
}

#[derive(sqlx::FromRow, Debug, Clone, PartialEq)]
pub struct Assignment {
    pub principal_id: String,
    pub skill_id: String,
    #[sqlx(json)]
    pub metadata: Value,
    /// A read-only assignment never grants a tool that writes.
    pub read_only: bool,
    pub created_at: Time,
}

/// An agent a package declared: its document and the principal it made.
#[derive(sqlx::FromRow, Debug, Clone, PartialEq)]
pub struct AgentRecord {
    pub key: String,
    pub principal_id: String,
    #[sqlx(try_from = "Text<PrincipalKind>")]
    pub kind: PrincipalKind,
    pub package_key: Option<String>,
    #[sqlx(try_from = "JsonText<AgentSpec>")]
    pub spec: AgentSpec,
    pub revision: i32,
    pub created_at: Time,
    pub updated_at: Time,
}

/// What applying an agent document writes, whole, in the install's transaction.
#[derive(Debug, Clone, PartialEq)]
pub struct AgentPlan {
    /// The agent at its new revision.
    pub record: AgentRecord,
    /// The principal to create first, when the agent is new.
    pub principal: Option<Principal>,
    /// Every grant the principal holds afterwards (the others are removed).
    pub grants: Vec<Grant>,
    /// Every assignment it holds afterwards.
    pub assignments: Vec<Assignment>,
    /// An executor's allow-list (`None`: nothing).
    pub allowance: Option<ExecutorAllowance>,
    pub event: Event,
}

/// The last install of a package.
#[derive(sqlx::FromRow, Debug, Clone, PartialEq, Eq)]
pub struct PackageInstall {
    pub key: String,
    pub version: String,
    pub install_hash: String,
    pub installed_at: Time,
    pub installed_by: Option<String>,
}

/// An object a package links: `kind` (`Skill`, …) and its key (a skill's name).
#[derive(sqlx::FromRow, Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct PackageObject {
    pub kind: String,
    #[sqlx(rename = "object_key")]
    pub key: String,
}

/// One entry of the events journal, written in the same transaction as the change it records.
#[derive(sqlx::FromRow, Debug, Clone, PartialEq)]
pub struct Event {
    /// Assigned by the database; 0 on an event not yet written.
    pub seq: i64,
    pub id: String,
    /// `skill.registered`, `skill.updated`, …
    pub kind: String,
    /// What changed: `skill:<id>`, `principal:<id>`, `package:<key>`, …
    pub subject: String,
    #[sqlx(json)]
    pub data: Value,
    pub actor_id: Option<String>,
    pub request_id: Option<String>,
    pub created_at: Time,
}

/// A version a package plan changes: at its expected row version, with its event.
#[derive(Debug, Clone, PartialEq)]
pub struct SkillUpdate {
    pub id: String,
    pub expected_row_version: i32,
    pub change: SkillChange,
    pub event: Event,
}

/// A package's settings: the schema of its last install and the values an operator set.
#[derive(sqlx::FromRow, Debug, Clone, PartialEq)]
pub struct PackageSettings {
    pub package_key: String,
    #[sqlx(json)]
    pub schema: Value,
    pub schema_revision: i32,
    #[sqlx(json)]
    pub values: Value,
    pub values_revision: i32,
    pub updated_at: Time,
    pub updated_by: Option<String>,
}

/// Everything one `packages:apply` writes, in one transaction.
#[derive(Debug, Clone, PartialEq)]
pub struct PackagePlan {
    /// New versions, each with its `skill.registered` event.
    pub creates: Vec<(SkillRecord, Event)>,
    pub updates: Vec<SkillUpdate>,
    pub install: PackageInstall,
    pub objects: Vec<PackageObject>,
    /// Objects of `objects` that move from another package to this one.
    pub adopt: Vec<PackageObject>,
    /// The settings schema the package declares, if any; a schema other than the stored one
    /// moves its revision.
    pub settings_schema: Option<Value>,
    /// Task type versions to publish, each with its event.
    pub task_types: Vec<(TaskTypeRecord, Event)>,
    /// Artifact type versions to publish (before the task types), each with its event.
    pub artifact_types: Vec<(ArtifactTypeRecord, Event)>,
    /// Agents to create or bring to their documents (after the versions they are assigned).
    pub agents: Vec<AgentPlan>,
    /// Work rule versions to publish (after the agents and task types), each with its event.
    pub rules: Vec<(RuleRecord, Event)>,
    /// Process versions to publish, each with its event.
    pub processes: Vec<(ProcessRecord, Event)>,
}

/// What assigning a version did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AssignOutcome {
    /// It was not assigned: now it is.
    Created,
    /// It was, with other metadata: the metadata changed.
    Updated,
    /// It was, with the same metadata: nothing changed.
    Unchanged,
}

/// One call of a skill version as stored (`skill_invocations`). The engine computes each new
/// state whole; the store writes it when the row is still at the version it was read at.
#[derive(sqlx::FromRow, Debug, Clone, PartialEq)]
pub struct InvocationRecord {
    pub id: String,
    pub skill_id: String,
    /// `http`, `local` or `mcp`, from the contract at insert.
    pub protocol: String,
    /// The entrypoint (`local`), or the endpoint (`http`, `mcp`; lower-case unless `stdio:…`).
    pub target: String,
    /// The contract's `auth.audience`, if any.
    pub audience: Option<String>,
    #[sqlx(json)]
    pub inputs: Value,
    #[sqlx(try_from = "Text<RequesterKind>")]
    pub requested_by_kind: RequesterKind,
    pub requested_by_ref: String,
    pub authority_principal_id: String,
    #[sqlx(try_from = "JsonText<Basis>")]
    pub authorization_basis: Option<Basis>,
    pub idempotency_key: Option<String>,
    #[sqlx(try_from = "Text<CallStatus>")]
    pub status: CallStatus,
    pub attempt: i32,
    pub max_attempts: i32,
    pub available_at: Time,
    #[sqlx(json(nullable))]
    pub output: Option<Value>,
    /// Why the last attempt failed, or why the call was cancelled.
    #[sqlx(try_from = "JsonText<ReportedError>")]
    pub error: Option<ReportedError>,
    #[sqlx(json(nullable))]
    pub cost: Option<Value>,
    pub fencing_token: i64,
    pub executor_principal_id: Option<String>,
    pub executor_session_id: Option<String>,
    pub lease_expires_at: Option<Time>,
    pub heartbeat_at: Option<Time>,
    pub task_id: Option<String>,
    pub run_id: Option<String>,
    pub artifact_id: Option<String>,
    pub row_version: i32,
    pub created_at: Time,
    pub updated_at: Time,
    pub started_at: Option<Time>,
    pub attempt_started_at: Option<Time>,
    pub finished_at: Option<Time>,
    /// The W3C `traceparent` of the span that created the call, when traces were on: the
    /// executor's span is its child. Written once.
    pub traceparent: Option<String>,
}

/// A count of open calls alike: their status, implementation and what the pending ones wait for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpenCalls {
    pub status: CallStatus,
    pub protocol: String,
    pub target: String,
    pub audience: Option<String>,
    /// Pending and not due yet: a retry in its backoff.
    pub later: bool,
    /// Pending, an external write of its task's execution while the task has a pending gate.
    pub held: bool,
    pub count: i64,
    /// An active executor session covers the implementation (the rule of the claim).
    pub covered: bool,
}

/// What waits, at a moment: the open calls counted alike, the approvals not decided yet, the
/// executor sessions open, and since when the oldest call that could run has waited.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Backlog {
    pub calls: Vec<OpenCalls>,
    pub approvals_pending: i64,
    pub sessions_active: i64,
    /// The `available_at` of the oldest pending call that is due.
    pub oldest_due: Option<Time>,
    /// When the oldest approval whose outcome is still being carried out was decided.
    pub oldest_outcome: Option<Time>,
}

/// Which calls a listing returns, newest first, before the cursor.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct InvocationFilter {
    pub status: Option<CallStatus>,
    pub skill_id: Option<String>,
    /// Only calls on this principal's authority.
    pub authority: Option<String>,
    pub created_after: Option<Time>,
    pub created_before: Option<Time>,
    /// Only calls made on this task.
    pub task_id: Option<String>,
    /// Only calls this executor principal runs, or ran last.
    pub executor: Option<String>,
    /// `(created_at, id)` of the last row of the previous page.
    pub before: Option<(Time, String)>,
    pub limit: u32,
}

/// What an executor may take: protocols with the entrypoints, origins and audiences it declared.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct Admission {
    /// Entrypoints of `local` calls (empty: no local call).
    pub local_entrypoints: Vec<String>,
    /// Lower-case origins of `http` calls (empty: no http call).
    pub http_origins: Vec<String>,
    /// Origins and `stdio:<name>` of `mcp` calls (empty: no mcp call).
    pub mcp_endpoints: Vec<String>,
    /// Audiences a remote call may carry (a call without one is always admitted).
    pub audiences: Vec<String>,
    /// Only this call, when given.
    pub invocation_id: Option<String>,
    /// The session the claim is made with: it must be open and not draining at the moment of
    /// taking.
    pub session_id: Option<String>,
}

/// What a session last claimed with, as stored (`{localEntrypoints, httpOrigins, mcpEndpoints,
/// audiences}`): the store reads these lists to tell whether an active session covers a call.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ClaimedWith {
    #[serde(default)]
    pub local_entrypoints: Vec<String>,
    #[serde(default)]
    pub http_origins: Vec<String>,
    #[serde(default)]
    pub mcp_endpoints: Vec<String>,
    #[serde(default)]
    pub audiences: Vec<String>,
}

/// An executor's session: leases taken with it end when it ends.
#[derive(sqlx::FromRow, Debug, Clone, PartialEq)]
pub struct SessionRecord {
    pub id: String,
    pub principal_id: String,
    #[sqlx(try_from = "Text<SessionStatus>")]
    pub status: SessionStatus,
    #[sqlx(json)]
    pub capabilities: Value,
    /// What the executor last claimed with (normalized as the claim's); nothing before its
    /// first claim.
    #[sqlx(json)]
    pub admission: ClaimedWith,
    pub created_at: Time,
    pub heartbeat_at: Time,
    pub expires_at: Time,
    pub closed_at: Option<Time>,
    pub row_version: i32,
    /// When its executor began to stop: claims made with it take nothing from then on.
    pub draining_at: Option<Time>,
}

/// What inserting a call did.
#[derive(Debug, Clone, PartialEq)]
pub enum Inserted {
    /// The call is new; whether an active executor session covers it now, when the store
    /// answered that in the same statement.
    New { covered: Option<bool> },
    /// A call of the same version with the same key exists: nothing was written.
    Existing(Box<InvocationRecord>),
}

/// A key the core signs audience tokens with.
#[derive(sqlx::FromRow, Debug, Clone, PartialEq)]
pub struct SigningKey {
    pub kid: String,
    /// `ES256`.
    pub algorithm: String,
    /// PKCS#8 DER, base64.
    pub private_key: String,
    /// The public key as a JWK (`kty`, `crv`, `x`, `y`, `kid`, `alg`, `use`).
    #[sqlx(json)]
    pub public_jwk: Value,
    pub created_at: Time,
    pub signs_until: Time,
    pub published_until: Time,
}

/// A console session: a personal access token exchanged for a cookie. Only hashes are kept — of
/// the cookie's secret and of the token — so the session lives only as long as its token does
/// (a revoked or expired token, or a disabled principal, ends it too).
#[derive(sqlx::FromRow, Debug, Clone, PartialEq, Eq)]
pub struct ConsoleSession {
    pub id: String,
    /// Hex SHA-256 of the cookie's secret.
    pub secret_hash: String,
    /// Hex SHA-256 of the token it was exchanged for.
    pub token_hash: String,
    pub principal_id: String,
    /// What every form of the session carries back.
    pub csrf: String,
    pub created_at: Time,
    pub expires_at: Time,
    /// Set once, at sign-out.
    pub ended_at: Option<Time>,
}
