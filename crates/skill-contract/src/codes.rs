//! The registry of error codes the platform emits: each with its fixed protocol `error_type`,
//! its retryability and where it comes from.
//!
//! `docs/errors.md` is rendered from this table ([`render_markdown`]); a test keeps the two equal.
//! A component that starts emitting a new code adds it here first.

use crate::error_type::SkillErrorType;

/// Whether a failure with this code may succeed when tried again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Retry {
    Yes,
    No,
    /// Decided by whoever raises the error.
    Varies,
}

impl Retry {
    fn as_str(self) -> &'static str {
        match self {
            Self::Yes => "yes",
            Self::No => "no",
            Self::Varies => "as raised",
        }
    }
}

/// One registered code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CodeInfo {
    pub code: &'static str,
    pub error_type: SkillErrorType,
    pub retryable: Retry,
    /// The part of the platform that emits it.
    pub source: &'static str,
    pub meaning: &'static str,
}

use Retry::{No, Varies, Yes};
use SkillErrorType::{
    CycleDetected, PermissionDenied, ResolutionFailure, SkillNotFound, ToolActivationFailure, ToolExecutionFailure,
    ValidationError,
};

const fn code(
    code: &'static str,
    error_type: SkillErrorType,
    retryable: Retry,
    source: &'static str,
    meaning: &'static str,
) -> CodeInfo {
    CodeInfo { code, error_type, retryable, source, meaning }
}

/// The registry: [`CODES`], the table `docs/errors.md` is rendered from, and [`Code`], the same
/// codes as a type, in the same order — one list, so a code the platform compares is found by the
/// compiler, not by a search.
macro_rules! registry {
    ($( $variant:ident => code($($entry:tt)*) ),+ $(,)?) => {
        /// Every code, grouped by source.
        pub const CODES: &[CodeInfo] = &[$( code($($entry)*) ),+];

        /// A registered code.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum Code {
            $( $variant ),+
        }

        impl Code {
            /// Every code, in the registry's order.
            pub const ALL: &'static [Code] = &[$( Code::$variant ),+];
        }
    };
}

#[rustfmt::skip]
registry! {
    SkillNotFound => code("skill_not_found", SkillNotFound, No, "protocol", "the requested skill does not exist"),
    ResolutionFailure => code(
        "resolution_failure",
        ResolutionFailure,
        No,
        "protocol",
        "a composite skill could not be resolved (missing include, conflicting tools)",
    ),
    CycleDetected => code(
        "cycle_detected",
        CycleDetected,
        No,
        "protocol",
        "composite skills include each other in a cycle",
    ),
    ToolActivationFailure => code(
        "tool_activation_failure",
        ToolActivationFailure,
        No,
        "protocol",
        "a tool could not be activated",
    ),
    ToolExecutionFailure => code(
        "tool_execution_failure",
        ToolExecutionFailure,
        Varies,
        "protocol",
        "a tool failed while running",
    ),
    ValidationError => code(
        "validation_error",
        ValidationError,
        No,
        "protocol",
        "input or output schema validation failed",
    ),
    PermissionDenied => code(
        "permission_denied",
        PermissionDenied,
        No,
        "protocol",
        "the operation is not permitted (e.g. a write through a read-only skill)",
    ),
    InvalidSkillContract => code(
        "invalid_skill_contract",
        ValidationError,
        No,
        "contract",
        "the contract or the policy columns break a rule (`details.field`)",
    ),
    UnsupportedSkillCondition => code(
        "unsupported_skill_condition",
        ValidationError,
        No,
        "contract",
        "pre- or postconditions are given before the expression language exists",
    ),
    SecretMaterialRejected => code(
        "secret_material_rejected",
        ValidationError,
        No,
        "contract",
        "something that looks like a credential is in the contract",
    ),
    InvalidJsonSchema => code(
        "invalid_json_schema",
        ValidationError,
        No,
        "contract",
        "`inputs` or `outputs` is not a self-contained JSON Schema 2020-12 document",
    ),
    InvalidSkillDocument => code(
        "invalid_skill_document",
        ValidationError,
        No,
        "contract",
        "a skill document's wrapper, name, version or composition is malformed",
    ),
    InvalidErrorCode => code(
        "invalid_error_code",
        ToolExecutionFailure,
        No,
        "contract",
        "a skill raised an error whose code breaks the code rule (`details.givenCode`)",
    ),
    InputContractViolation => code(
        "input_contract_violation",
        ValidationError,
        No,
        "sdk",
        "the inputs do not match the skill's input schema (`details.errors`)",
    ),
    OutputContractViolation => code(
        "output_contract_violation",
        ValidationError,
        No,
        "sdk",
        "the outputs do not match the skill's output schema (`details.errors`)",
    ),
    SkillError => code(
        "skill_error",
        ToolExecutionFailure,
        Varies,
        "sdk",
        "a skill failed with an error that carries no valid code",
    ),
    Timeout => code("timeout", ToolExecutionFailure, Yes, "sdk", "the call ran past its contract timeout"),
    ConfigMissing => code(
        "config_missing",
        ToolActivationFailure,
        Yes,
        "sdk",
        "a parameter, secret or core address the skill needs is not set",
    ),
    SecretNameInvalid => code(
        "secret_name_invalid",
        ToolActivationFailure,
        No,
        "sdk",
        "a secret name is empty, a path, reserved, or breaks the file-name rule",
    ),
    SecretFileRejected => code(
        "secret_file_rejected",
        ToolActivationFailure,
        No,
        "sdk",
        "a secret file exists but is unusable (`details.reason`)",
    ),
    SecretUnreadable => code(
        "secret_unreadable",
        ToolActivationFailure,
        Yes,
        "sdk",
        "the process user may not read the secret file",
    ),
    LlmNotConfigured => code(
        "llm_not_configured",
        ToolActivationFailure,
        Yes,
        "sdk",
        "the LLM provider is unknown or its settings are incomplete",
    ),
    LlmUnavailable => code(
        "llm_unavailable",
        ToolExecutionFailure,
        Yes,
        "sdk",
        "the LLM provider cannot be reached or started",
    ),
    LlmInvalidResponse => code(
        "llm_invalid_response",
        ToolExecutionFailure,
        Yes,
        "sdk",
        "the model gave no valid JSON after every attempt",
    ),
    LlmRateLimited => code(
        "llm_rate_limited",
        ToolExecutionFailure,
        Yes,
        "sdk",
        "the model provider refused for a rate or usage limit",
    ),
    LlmTimeout => code("llm_timeout", ToolExecutionFailure, Yes, "sdk", "the model did not answer in time"),
    LlmFailed => code("llm_failed", ToolExecutionFailure, Yes, "sdk", "the model call failed otherwise"),
    SnapshotStale => code(
        "snapshot_stale",
        ToolExecutionFailure,
        No,
        "sdk",
        "a knowledge snapshot was applied over a state that changed (`details.stateToken`)",
    ),
    KnowledgeQueryTooLarge => code(
        "knowledge_query_too_large",
        ToolExecutionFailure,
        No,
        "sdk",
        "a knowledge query matched more than `max_items` entities",
    ),
    CoreUnavailable => code("core_unavailable", ToolExecutionFailure, Yes, "sdk", "the core cannot be reached"),
    ArtifactNotFound => code("artifact_not_found", ToolExecutionFailure, No, "sdk", "an artifact id is unknown"),
    CoreError => code(
        "core_error",
        ToolExecutionFailure,
        No,
        "sdk",
        "the core answered in a way the client does not understand (`details.status`)",
    ),
    NotFound => code("not_found", SkillNotFound, No, "sdk", "the core has no such object"),
    InvalidKnowledgeSnapshot => code(
        "invalid_knowledge_snapshot",
        ValidationError,
        No,
        "sdk",
        "a knowledge snapshot is not a JSON object",
    ),
    FakeLlmExhausted => code(
        "fake_llm_exhausted",
        ToolExecutionFailure,
        No,
        "testing",
        "a FakeLlm sequence got more calls than it has answers",
    ),
    SkillNotHosted => code(
        "skill_not_hosted",
        SkillNotFound,
        No,
        "host",
        "no skill with this reference is hosted here",
    ),
    BadRequest => code(
        "bad_request",
        ValidationError,
        No,
        "host",
        "the request body is not JSON or not `{…, inputs: {…}}`",
    ),
    PayloadTooLarge => code(
        "payload_too_large",
        ValidationError,
        No,
        "host",
        "the request body is larger than the host accepts (`details.limitBytes`)",
    ),
    RequestTimeout => code(
        "request_timeout",
        ValidationError,
        No,
        "host",
        "the request body did not arrive within the server's body timeout (408; hosts and the core)",
    ),
    MissingAuthorization => code(
        "missing_authorization",
        PermissionDenied,
        No,
        "host",
        "the request has no `Authorization: Bearer` token (401)",
    ),
    InvalidToken => code(
        "invalid_token",
        PermissionDenied,
        No,
        "host",
        "the token is malformed, oversized, or signed with an algorithm its key does not pin (401)",
    ),
    TokenExpired => code(
        "token_expired",
        PermissionDenied,
        No,
        "host",
        "the token's `exp` is past, beyond the leeway (401)",
    ),
    TokenNotYetValid => code(
        "token_not_yet_valid",
        PermissionDenied,
        No,
        "host",
        "the token's `nbf` is ahead, beyond the leeway (401)",
    ),
    InvalidIssuer => code(
        "invalid_issuer",
        PermissionDenied,
        No,
        "host",
        "the token's `iss` is not the configured issuer (401)",
    ),
    InvalidAudience => code(
        "invalid_audience",
        PermissionDenied,
        No,
        "host",
        "the token's `aud` is not the configured audience (401)",
    ),
    InvalidSignature => code(
        "invalid_signature",
        PermissionDenied,
        No,
        "host",
        "the token's signature does not verify (401)",
    ),
    UnknownKey => code(
        "unknown_key",
        PermissionDenied,
        No,
        "host",
        "the token's `kid` is not in the key set, even after a refresh (401)",
    ),
    VerificationUnavailable => code(
        "verification_unavailable",
        PermissionDenied,
        Yes,
        "host",
        "the key set cannot be fetched, so no token can be checked (503)",
    ),
    InvalidRequest => code(
        "invalid_request",
        ValidationError,
        No,
        "core",
        "the request body or query does not fit its shape (400, `details.field`)",
    ),
    UnsupportedMediaType => code(
        "unsupported_media_type",
        ValidationError,
        No,
        "core",
        "a body that is not sent as JSON (`Content-Type: application/json`) (415)",
    ),
    MethodNotAllowed => code(
        "method_not_allowed",
        ValidationError,
        No,
        "core",
        "the route does not serve this method (405, `details.allowed`)",
    ),
    SkillExists => code("skill_exists", ValidationError, No, "core", "this `name@version` is already published (409)"),
    SkillVersionImmutable => code(
        "skill_version_immutable",
        ValidationError,
        No,
        "core",
        "a change touches what a published version fixes: the contract (except its endpoint) or its schemas (409)",
    ),
    InvalidStatus => code(
        "invalid_status",
        ValidationError,
        No,
        "core",
        "a status is not `active`, `deprecated` or `disabled` (422)",
    ),
    InvalidStatusTransition => code(
        "invalid_status_transition",
        ValidationError,
        No,
        "core",
        "a status would move backwards; it only moves active → deprecated → disabled (409)",
    ),
    EmptyUpdate => code("empty_update", ValidationError, No, "core", "a change request changes nothing (422)"),
    IfMatchRequired => code(
        "if_match_required",
        ValidationError,
        No,
        "core",
        "a change needs `If-Match: \"skill-<rowVersion>\"` (428)",
    ),
    InvalidIfMatch => code(
        "invalid_if_match",
        ValidationError,
        No,
        "core",
        "`If-Match` is not `\"skill-<rowVersion>\"` (400)",
    ),
    VersionConflict => code(
        "version_conflict",
        ValidationError,
        No,
        "core",
        "the version changed since it was read (`details.expectedVersion`, `details.currentVersion`) (409)",
    ),
    SkillNotInvocable => code(
        "skill_not_invocable",
        ToolActivationFailure,
        No,
        "core",
        "the version cannot be called or resolved: no contract, disabled, composite (`details.reason`) (409)",
    ),
    SkillDisabled => code(
        "skill_disabled",
        ValidationError,
        No,
        "core",
        "a disabled version cannot be assigned, to a principal or by an agent document (422)",
    ),
    InvalidPackageSettings => code(
        "invalid_package_settings",
        ValidationError,
        No,
        "core",
        "a package's settings schema, or the values set for it, are refused (422, `details.errors`)",
    ),
    TooManyTests => code(
        "too_many_tests",
        ValidationError,
        No,
        "core",
        "a package test run names no test or more than 100 (422, `POST /packages:test`)",
    ),
    PackageRefused => code(
        "package_refused",
        ValidationError,
        No,
        "core",
        "the scratch core of a package test refused to install one of its packages (422, `details.field`)",
    ),
    TestRunTimeout => code(
        "test_run_timeout",
        ValidationError,
        No,
        "core",
        "installing a package test run's packages on its scratch core took the run's whole 600 s (422)",
    ),
    TooManyWorkspaces => code(
        "too_many_workspaces",
        ValidationError,
        No,
        "core",
        "the tests of one package test run name more than 16 workspaces (422, `POST /packages:test`)",
    ),
    PackageTestBusy => code(
        "package_test_busy",
        ToolExecutionFailure,
        Yes,
        "core",
        "another package test is running on this core; retry when it ends (503)",
    ),
    ScratchCoreFailed => code(
        "scratch_core_failed",
        ToolExecutionFailure,
        No,
        "core",
        "the scratch core of a package test could not be made (its folder, database or people) (500)",
    ),
    PackageObjectConflict => code(
        "package_object_conflict",
        ValidationError,
        No,
        "core",
        "an install names objects another package installed and does not adopt them (409, `details.objects`)",
    ),
    UnknownReference => code(
        "unknown_reference",
        ValidationError,
        No,
        "core",
        "an install names a skill the catalog has in no version, not even in the same plan, or an agent names a version, task type or workspace the core does not have (422, `details.field` or `details.path`, `details.value`)",
    ),
    InvalidLabel => code(
        "invalid_label",
        ValidationError,
        No,
        "core",
        "a token's label is longer than 200 characters or holds a control character (422)",
    ),
    InvalidExpiry => code(
        "invalid_expiry",
        ValidationError,
        No,
        "core",
        "a token's expiry is not after now and within ten years (422, `details.field`)",
    ),
    RequestExpired => code(
        "request_expired",
        ValidationError,
        No,
        "core",
        "a decision on an agent's request that expired: nothing will be called (409, `details.requestId`)",
    ),
    RequestWorkspaceMissing => code(
        "request_workspace_missing",
        ValidationError,
        No,
        "core",
        "the workspace an agent's requests go to does not exist: an operator creates it (409, `details.workspace`)",
    ),
    RequestDecided => code(
        "request_decided",
        ValidationError,
        No,
        "gateway",
        "an agent withdraws a request a person decided already (409)",
    ),
    TooManyWaits => code(
        "too_many_waits",
        ValidationError,
        Yes,
        "gateway",
        "a principal has 16 calls or task waits open on this core: nothing was called; retry when some have ended",
    ),
    TaskStillWorking => code(
        "task_still_working",
        ValidationError,
        Yes,
        "gateway",
        "tasks/result waited its bound and the request still waits for a person: ask tasks/get, then tasks/result",
    ),
    RequestWithdrawn => code(
        "request_withdrawn",
        ToolExecutionFailure,
        No,
        "gateway",
        "the agent's request was withdrawn: nothing was written",
    ),
    TooManyRequests => code(
        "too_many_requests",
        ValidationError,
        Yes,
        "gateway",
        "an agent has 100 requests waiting for a person: no more until some are decided or withdrawn",
    ),
    CallStillRunning => code(
        "call_still_running",
        ToolExecutionFailure,
        Yes,
        "gateway",
        "tools/call stopped waiting for a call that goes on (`details.invocationId`): read it later",
    ),
    TaskTypeReserved => code(
        "task_type_reserved",
        PermissionDenied,
        No,
        "core",
        "a task of the built-in agent-request type made by hand: only the gateway makes them (403)",
    ),
    InvalidFact => code(
        "invalid_fact",
        ValidationError,
        No,
        "core",
        "a fact is refused: its workspace, kind, key, data, time or source (422, `details.field`)",
    ),
    FactTooLarge => code("fact_too_large", ValidationError, No, "core", "a fact's data is larger than 256 KiB (413)"),
    FactConflict => code(
        "fact_conflict",
        ValidationError,
        No,
        "core",
        "another fact has this workspace, kind and key with other data: a fact never changes (409, `details.factId`)",
    ),
    InvalidRule => code(
        "invalid_rule",
        ValidationError,
        No,
        "core",
        "a work rule is refused: its shape, a path, the agent it acts as or a task type it names (422, `details.path`)",
    ),
    RuleExists => code(
        "rule_exists",
        ValidationError,
        No,
        "core",
        "this key@version of a rule is published already (409)",
    ),
    InvalidRuleInterpretation => code(
        "invalid_rule_interpretation",
        ValidationError,
        No,
        "core",
        "a rule's interpretation names no pinned version: a rule interprets with one name@version (422)",
    ),
    UnknownSkill => code(
        "unknown_skill",
        ValidationError,
        No,
        "core",
        "a rule's interpretation names a version the catalog does not have (422)",
    ),
    RuleSkillSideEffects => code(
        "rule_skill_side_effects",
        ValidationError,
        No,
        "core",
        "a rule interprets a fact with an external_write skill, and a rule has no human decision to refer to: move the write into an approval outcome (422)",
    ),
    InvalidCondition => code(
        "invalid_condition",
        ValidationError,
        No,
        "core",
        "a condition is not CEL that reads what it may, or is longer than 2 KiB (422, `details.line`, `details.column`)",
    ),
    ConditionError => code(
        "condition_error",
        ValidationError,
        No,
        "core",
        "a rule's condition failed on the document it was tried on (`POST /rules/{id}:evaluate`: its `condition.error`)",
    ),
    RuleLoopSuspected => code(
        "rule_loop_suspected",
        ToolExecutionFailure,
        No,
        "core",
        "a rule's evaluation stopped: the fact comes from work that rules made more than 8 times in a row",
    ),
    RuleConditionTooCostly => code(
        "rule_condition_too_costly",
        ToolExecutionFailure,
        No,
        "core",
        "a rule's evaluation failed: its condition would cost more over this fact than a condition may (estimated before it runs, or past its second), whatever its value",
    ),
    RuleSkillWaitExpired => code(
        "rule_skill_wait_expired",
        ToolExecutionFailure,
        No,
        "core",
        "a rule's interpretation did not end within 24 hours: the call is cancelled and the evaluation expired",
    ),
    InvalidProcess => code(
        "invalid_process",
        ValidationError,
        No,
        "core",
        "a process is refused: its shape, a step, a path, a duration or what it names (422, `details.path`)",
    ),
    ProcessExists => code(
        "process_exists",
        ValidationError,
        No,
        "core",
        "this key@version of a process is published already (409)",
    ),
    ProcessKeyReuse => code(
        "process_key_reuse",
        ValidationError,
        No,
        "core",
        "an instance of this process in this workspace has this key and another input (409, `details.instanceId`)",
    ),
    InvalidInput => code(
        "invalid_input",
        ValidationError,
        No,
        "core",
        "a process instance's input is not an object of at most 256 KiB (422, or 413 when too large)",
    ),
    InstanceEnded => code(
        "instance_ended",
        ValidationError,
        No,
        "core",
        "the process instance ended already: it is not cancelled again (409, `details.status`)",
    ),
    ProcessStepAlreadyInvoked => code(
        "process_step_already_invoked",
        ValidationError,
        No,
        "core",
        "a process step's run made its call already: one call per run of a step (409, `details.activityId`)",
    ),
    ProcessStepFailed => code(
        "process_step_failed",
        ToolExecutionFailure,
        No,
        "core",
        "a process step failed with no step to go on to: its instance failed (`details.step`, the call's error)",
    ),
    ProcessEndedFailed => code(
        "process_ended_failed",
        ToolExecutionFailure,
        No,
        "core",
        "a process reached an `end {status: failed}` step: its instance failed with the step's reason",
    ),
    ProcessWaitTimedOut => code(
        "process_wait_timed_out",
        ToolExecutionFailure,
        No,
        "core",
        "a process waited for a fact past its timeout with no step to go on to: its instance failed",
    ),
    ProcessWriteNotDecided => code(
        "process_write_not_decided",
        PermissionDenied,
        No,
        "core",
        "a process's external write has no person's decision to stand on: the task step it names (`decidedBy`) did not close done with a gate approved by someone other than the instance's starter; no call is made",
    ),
    ProcessLoopSuspected => code(
        "process_loop_suspected",
        ToolExecutionFailure,
        No,
        "core",
        "a process instance ran 1,000 steps without waiting once: it failed as a suspected endless loop",
    ),
    InvalidAgent => code(
        "invalid_agent",
        ValidationError,
        No,
        "core",
        "an agent document is refused: its shape, a permission, a version it names, its executor or its requests (422, `details.path`)",
    ),
    PermissionEscalation => code(
        "permission_escalation",
        PermissionDenied,
        No,
        "core",
        "an install would grant an agent permissions the installer does not hold (403, `details.missing`)",
    ),
    AgentPermissionForbidden => code(
        "agent_permission_forbidden",
        PermissionDenied,
        No,
        "core",
        "an agent or executor principal would hold a permission only a person holds (`org.manage`, `approvals.decide`): refused in its document (`skill-sdk package check`, `POST /packages:apply`) and in any grant; the message lists what it may hold instead (403; `details.path` in a document, `details.permission` in a grant)",
    ),
    SkillsInvokeNotPermitted => code(
        "skills_invoke_not_permitted",
        ValidationError,
        No,
        "core",
        "an agent is assigned skills but does not hold skills.invoke (422, `details.path`)",
    ),
    ExecutionSkillNotInvoked => code(
        "execution_skill_not_invoked",
        ValidationError,
        No,
        "core",
        "an agent works on a task type whose execution version it is not assigned (422, `details.path`, `taskType`, `skill`)",
    ),
    AgentPrincipalConflict => code(
        "agent_principal_conflict",
        ValidationError,
        No,
        "core",
        "an agent's key names a principal no agent document made, or one of another kind (409)",
    ),
    InvalidProtocol => code(
        "invalid_protocol",
        ValidationError,
        No,
        "core",
        "a version without a contract lacks a known `protocol`, or a composite names one (422)",
    ),
    InvalidPrincipal => code(
        "invalid_principal",
        ValidationError,
        No,
        "core",
        "a principal's kind or name is not allowed (422)",
    ),
    InvalidPermission => code(
        "invalid_permission",
        ValidationError,
        No,
        "core",
        "a permission is not dotted lowercase words (422)",
    ),
    InvalidWorkspace => code(
        "invalid_workspace",
        ValidationError,
        No,
        "core",
        "a workspace key is not lowercase letters, digits, - or _ (422)",
    ),
    WorkspaceExists => code("workspace_exists", ValidationError, No, "core", "a workspace with this key exists (409)"),
    IdempotencyKeyReused => code(
        "idempotency_key_reused",
        ValidationError,
        No,
        "core",
        "the Idempotency-Key header was used for another request or by another principal (409)",
    ),
    IdempotencyInFlight => code(
        "idempotency_in_flight",
        ToolExecutionFailure,
        Yes,
        "core",
        "a request with this Idempotency-Key is still being answered; repeat it in a moment (409)",
    ),
    InvalidIdempotencyKey => code(
        "invalid_idempotency_key",
        ValidationError,
        No,
        "core",
        "an idempotencyKey is empty or longer than 200 characters after trimming, or starts like the keys of the core's own calls (rule:, agent-request:, process:, approval-outcome:, execution:) (422)",
    ),
    IdempotencyKeyReuse => code(
        "idempotency_key_reuse",
        ValidationError,
        No,
        "core",
        "the idempotencyKey names another call of this version (other inputs or another caller) (409)",
    ),
    IdempotencyKeyRequired => code(
        "idempotency_key_required",
        ValidationError,
        No,
        "core",
        "the contract requires an idempotencyKey and the call has none (400)",
    ),
    InvalidSkillInputs => code(
        "invalid_skill_inputs",
        ValidationError,
        No,
        "core",
        "the inputs do not match the contract's inputs schema, or exceed 256 KiB (400, `details.errors`)",
    ),
    SkillPermissionDenied => code(
        "skill_permission_denied",
        PermissionDenied,
        No,
        "core",
        "the caller lacks permissions the contract requires (403, `details.missing`)",
    ),
    SkillSideEffectNotAuthorized => code(
        "skill_side_effect_not_authorized",
        PermissionDenied,
        No,
        "core",
        "an external write without a basis (an approved gate, an execution, a process step) (403)",
    ),
    InvalidExecutorEndpoint => code(
        "invalid_executor_endpoint",
        ValidationError,
        No,
        "core",
        "a claim names an origin that is not `http(s)://host[:port]` (or `stdio:<name>` for mcp) (422)",
    ),
    SessionOwnerMismatch => code(
        "session_owner_mismatch",
        PermissionDenied,
        No,
        "core",
        "another executor opened this session (403)",
    ),
    SessionNotActive => code(
        "session_not_active",
        ToolActivationFailure,
        No,
        "core",
        "the executor session was closed or expired; leases taken with it have ended (409)",
    ),
    StaleInvocationLease => code(
        "stale_invocation_lease",
        ToolActivationFailure,
        No,
        "core",
        "the executor no longer holds the call's lease (another attempt, a cancel, an expiry): report nothing (409)",
    ),
    InvocationTerminal => code(
        "invocation_terminal",
        ValidationError,
        No,
        "core",
        "the call has ended (succeeded or failed): there is nothing to cancel (409)",
    ),
    LeaseExpired => code(
        "lease_expired",
        ToolExecutionFailure,
        Yes,
        "core",
        "the executor's lease (or its session) ended before it reported; the attempt is spent",
    ),
    Cancelled => code(
        "cancelled",
        ToolExecutionFailure,
        No,
        "core",
        "the call was cancelled (`details.cancelledBy`, `wasRunning`)",
    ),
    Unavailable => code(
        "unavailable",
        ToolExecutionFailure,
        Yes,
        "core",
        "the database does not answer, or the server is stopping and the request's body had not arrived; retry (503)",
    ),
    InternalError => code(
        "internal_error",
        ToolExecutionFailure,
        No,
        "core",
        "an unexpected failure; the log has its details (500)",
    ),
    PrincipalDisabled => code(
        "principal_disabled",
        ValidationError,
        No,
        "core",
        "the principal is disabled already (409)",
    ),
    BasisRevoked => code(
        "basis_revoked",
        ToolExecutionFailure,
        No,
        "core",
        "a waiting call was cancelled by the system: its basis is gone (the message says which: task_terminal, approval_withdrawn, gate_rejected, run_not_active, skill_disabled, execution_deadline, decider_disabled — the person who decided its approval was disabled, authority_disabled — the principal it was made for was disabled before it was claimed, operator_disabled — a person an agent asked for it for was disabled) or its authority was disabled",
    ),
    TaskTypeExists => code(
        "task_type_exists",
        ValidationError,
        No,
        "core",
        "this key@version of a task type is published already (409)",
    ),
    InvalidTaskType => code(
        "invalid_task_type",
        ValidationError,
        No,
        "core",
        "a task type's field is malformed (422, `details.field`)",
    ),
    InvalidTaskExecution => code(
        "invalid_task_execution",
        ValidationError,
        No,
        "core",
        "a task type's execution is malformed or names a version that is missing, without a contract or disabled (422, `details.field`, `details.reason`)",
    ),
    InvalidAcceptanceSpec => code(
        "invalid_acceptance_spec",
        ValidationError,
        No,
        "core",
        "an acceptance check calls an external_write skill with no human or llm_judge decision before it (422, `details.cause`)",
    ),
    UnpinnedExternalWrite => code(
        "unpinned_external_write",
        ValidationError,
        No,
        "core",
        "an outcome names an external_write skill without its version (422, `details.field`)",
    ),
    InvalidCustomFields => code(
        "invalid_custom_fields",
        ValidationError,
        No,
        "core",
        "a task's customFields do not match its type's (422, `details.errors`)",
    ),
    CustomFieldRequired => code(
        "custom_field_required",
        ValidationError,
        No,
        "core",
        "a custom field that the task type's gate outcome or execution reads into a required input is missing (400, `details.field`, `details.missing`)",
    ),
    OutcomeNotRetryable => code(
        "outcome_not_retryable",
        ValidationError,
        No,
        "core",
        "the approval's outcome has no action that failed for a retryable reason (it runs, succeeded, or failed for good), or its retries are used up (409, `details.reason`)",
    ),
    DeciderNotAPerson => code(
        "decider_not_a_person",
        PermissionDenied,
        No,
        "core",
        "an approval is decided, and its outcome retried, by a person only: an agent or an executor never decides, whatever it holds (403; also refused by the database)",
    ),
    NoDraft => code("no_draft", ValidationError, No, "core", "the task's type declares no draft (404)"),
    RunOwnerMismatch => code(
        "run_owner_mismatch",
        PermissionDenied,
        No,
        "core",
        "the run belongs to another principal (403)",
    ),
    RunNotActive => code("run_not_active", ValidationError, No, "core", "the run has ended (409, `details.status`)"),
    RunAlreadyRunning => code(
        "run_already_running",
        ValidationError,
        No,
        "core",
        "the caller has a running run on this task already (409, `details.runId`)",
    ),
    InvocationMismatch => code("invocation_mismatch", ValidationError, No, "core", "runId's task is not taskId (422)"),
    ToolNotAuthorized => code(
        "tool_not_authorized",
        PermissionDenied,
        No,
        "core",
        "an agent's assignments do not grant the skill, or grant it only read-only and it writes (403, `details.reason`)",
    ),
    JournalUnsigned => code(
        "journal_unsigned",
        SkillNotFound,
        No,
        "core",
        "the journal has no signed checkpoint yet: the core signs one within a second of an event when it has a journal key (404)",
    ),
    JournalInconsistent => code(
        "journal_inconsistent",
        ValidationError,
        No,
        "core",
        "the journal's stored tree does not extend the last checkpoint signed, or a kept checkpoint does not verify: it was changed, and nothing more is signed (500; `journal verify` names where)",
    ),
    TaskTerminal => code(
        "task_terminal",
        ValidationError,
        No,
        "core",
        "the task is closed: no external write on it, no new run or approval (409)",
    ),
    ApprovalRequired => code(
        "approval_required",
        PermissionDenied,
        No,
        "core",
        "an execution's external write waits: the task has a pending gate approval (409, `details.pendingApprovals`)",
    ),
    ApprovalAlreadyUsed => code(
        "approval_already_used",
        ValidationError,
        No,
        "core",
        "the approval already authorized a call of this version, whatever became of it (409)",
    ),
    ExecutionAlreadyInvoked => code(
        "execution_already_invoked",
        ValidationError,
        No,
        "core",
        "the run, or the task, already has its execution call: a task's execution writes once (409)",
    ),
    ApprovalDoesNotCover => code(
        "approval_does_not_cover",
        PermissionDenied,
        No,
        "core",
        "the approval covers only the calls its outcome names and the call it was requested for, with exactly those inputs (403, `details.covers`)",
    ),
    GateRejected => code(
        "gate_rejected",
        ValidationError,
        No,
        "core",
        "the task's gate was rejected: its execution never runs, and the task fails (409; a task's `closeReason`)",
    ),
    ExecutorNotAllowed => code(
        "executor_not_allowed",
        PermissionDenied,
        No,
        "core",
        "the executor declares what the operator did not allow it (a protocol, entrypoint, origin, audience) (403)",
    ),
    InvalidExecutorAllowance => code(
        "invalid_executor_allowance",
        ValidationError,
        No,
        "core",
        "an executor allowance names a protocol, entrypoint, origin or audience it cannot (422, `details.field`)",
    ),
    PrincipalReserved => code(
        "principal_reserved",
        PermissionDenied,
        No,
        "core",
        "the core's execution principal acts only inside the core: no token is issued for it (403)",
    ),
    NoAudience => code(
        "no_audience",
        ValidationError,
        No,
        "core",
        "the call's contract names no audience: it carries no token (422)",
    ),
    CustomFieldsTooLarge => code(
        "custom_fields_too_large",
        ValidationError,
        No,
        "core",
        "a task's custom fields are over 64 KiB of JSON or 1,000 keys (422, `details.limit`): keep large content in an artifact",
    ),
    RecallTooBroad => code(
        "recall_too_broad",
        ValidationError,
        No,
        "core",
        "a recall from an anchor would read more than 20,000 entities: name fewer `kinds` (422)",
    ),
    TokenForAnotherCall => code(
        "token_for_another_call",
        PermissionDenied,
        No,
        "host",
        "the audience token was issued for another call: its `endpoint`, `tool` or `invocation_id` is not the request's (403)",
    ),
    BasisNotCovered => code(
        "basis_not_covered",
        PermissionDenied,
        No,
        "core",
        "the database refused a call whose basis covers it not (a guard behind the core's own checks)",
    ),
    SelfApprovalRefused => code(
        "self_approval_refused",
        PermissionDenied,
        No,
        "core",
        "the requester of an approval never decides it (403)",
    ),
    DeciderIsInitiator => code(
        "decider_is_initiator",
        PermissionDenied,
        No,
        "core",
        "the decider set the work in motion — created its task, started its instance, sent its fact, or operates the agent that did — and a second person decides it (403; details name the initiator and how the work reached them; also refused by the database)",
    ),
    OperatorRequired => code(
        "operator_required",
        ValidationError,
        No,
        "core",
        "an agent's token names the person who operates the agent (`skill-core token create --agent KEY --for PERSON`) (422)",
    ),
    InvalidOperator => code(
        "invalid_operator",
        ValidationError,
        No,
        "core",
        "the person named to operate an agent is not an enabled person principal (422)",
    ),
    ApprovalNotPending => code(
        "approval_not_pending",
        ValidationError,
        No,
        "core",
        "the approval is decided or withdrawn already (409)",
    ),
    InvalidOutcome => code("invalid_outcome", ValidationError, No, "core", "a decision is approved or rejected (422)"),
    ConsoleSessionInvalid => code(
        "console_session_invalid",
        PermissionDenied,
        No,
        "core",
        "the console session ended: signed out, expired, or its token revoked (the console asks to sign in)",
    ),
    ConsolePeopleOnly => code(
        "console_people_only",
        PermissionDenied,
        No,
        "core",
        "only a person's token signs in to the console (403)",
    ),
    ApprovalNotWithdrawable => code(
        "approval_not_withdrawable",
        ValidationError,
        No,
        "core",
        "only a pending or approved approval can be withdrawn (409)",
    ),
    ArtifactTooLarge => code(
        "artifact_too_large",
        ValidationError,
        No,
        "core",
        "an artifact's content is larger than 16 MiB, or than its artifact type allows (413)",
    ),
    ArtifactTypeExists => code(
        "artifact_type_exists",
        ValidationError,
        No,
        "core",
        "that artifact type version is published already, otherwise: publish a new version (409)",
    ),
    InvalidArtifactType => code(
        "invalid_artifact_type",
        ValidationError,
        No,
        "core",
        "an artifact type's field is malformed (422, `details.field`)",
    ),
    InvalidMediaType => code(
        "invalid_media_type",
        ValidationError,
        No,
        "core",
        "an artifact's media type does not parse, or its `charset` is not a token (422, `details.field`: `mediaType`)",
    ),
    MediaTypeNotAllowed => code(
        "media_type_not_allowed",
        ValidationError,
        No,
        "core",
        "the artifact's media type is not one its artifact type lists (422; a typed output's reason)",
    ),
    InvalidArtifactMetadata => code(
        "invalid_artifact_metadata",
        ValidationError,
        No,
        "core",
        "the artifact's metadata does not match its artifact type's metadataSchema (422)",
    ),
    InvalidOutputValue => code(
        "invalid_output_value",
        ValidationError,
        No,
        "core",
        "a typed output's value does not match its artifact type (a `rejected` output's reason)",
    ),
    ContentStoreUnavailable => code(
        "content_store_unavailable",
        ToolExecutionFailure,
        Yes,
        "core",
        "the store of artifacts' content does not answer, or this core has none configured (503)",
    ),
    ApprovalOutcomeSkillWaitExpired => code(
        "approval_outcome_skill_wait_expired",
        ToolExecutionFailure,
        No,
        "core",
        "an approval outcome's call waited 24 h unclaimed and was cancelled",
    ),
    AudienceReserved => code(
        "audience_reserved",
        PermissionDenied,
        No,
        "core",
        "no audience token is issued for the core's own audience, its issuer or the executor's, in any case (403)",
    ),
    EndpointNotAllowed => code(
        "endpoint_not_allowed",
        ToolActivationFailure,
        Yes,
        "executor",
        "the endpoint's origin is not in this executor's allow-list; another executor may be allowed",
    ),
    EndpointAddressForbidden => code(
        "endpoint_address_forbidden",
        PermissionDenied,
        No,
        "executor",
        "the endpoint's host resolves to a non-public address (loopback, private, link-local, …) and is not listed as private",
    ),
    InsecureEndpoint => code(
        "insecure_endpoint",
        PermissionDenied,
        No,
        "executor",
        "the contract names an audience, so a token would travel, and the endpoint is not https",
    ),
    AudienceNotAllowed => code(
        "audience_not_allowed",
        PermissionDenied,
        Yes,
        "executor",
        "this executor may not obtain tokens for the contract's audience; another executor may",
    ),
    ExecutorAuthUnavailable => code(
        "executor_auth_unavailable",
        ToolActivationFailure,
        Yes,
        "executor",
        "the executor could not obtain a token for the contract's audience",
    ),
    TransportError => code(
        "transport_error",
        ToolExecutionFailure,
        Yes,
        "executor",
        "the connection to the endpoint failed (refused, reset, TLS); `http_<status>` is an answer with that status: 4xx not retried, 5xx retried",
    ),
    UnexpectedStatus => code(
        "unexpected_status",
        ToolExecutionFailure,
        No,
        "executor",
        "the endpoint answered neither 2xx nor an error status (a redirect is never followed)",
    ),
    ToolError => code(
        "tool_error",
        ToolExecutionFailure,
        No,
        "executor",
        "an MCP tool answered `isError` without the skill error envelope; its text is in the message",
    ),
    McpError => code(
        "mcp_error",
        ToolExecutionFailure,
        No,
        "executor",
        "the MCP server answered the call with a JSON-RPC error",
    ),
    McpServerUnknown => code(
        "mcp_server_unknown",
        ToolActivationFailure,
        Yes,
        "executor",
        "the endpoint names a `stdio:<name>` server this executor has not configured; another may have it",
    ),
    McpEndpointInvalid => code(
        "mcp_endpoint_invalid",
        ValidationError,
        No,
        "executor",
        "an MCP endpoint is neither an http(s) URL nor `stdio:<name>`",
    ),
    ProtocolNotSupported => code(
        "protocol_not_supported",
        ToolActivationFailure,
        Yes,
        "executor",
        "this executor does not run the contract's protocol; another may",
    ),
    EventsAppendOnly => code(
        "events_append_only",
        ValidationError,
        No,
        "database",
        "the database refused to change or delete an event: the events journal is append-only (409)",
    ),
    RowVersionRequired => code(
        "row_version_required",
        ValidationError,
        No,
        "database",
        "the database refused a change of a skill that does not move its row_version by one (409)",
    ),
    InvocationImmutable => code(
        "invocation_immutable",
        ValidationError,
        No,
        "database",
        "the database refused to change what a call is (its skill, inputs, authority or basis) (409)",
    ),
    BasisUnknown => code(
        "basis_unknown",
        ValidationError,
        No,
        "database",
        "the database refused a call whose basis names a task, an approval or a run it does not hold (409)",
    ),
    SigningKeyImmutable => code(
        "signing_key_immutable",
        ValidationError,
        No,
        "database",
        "the database refused to change or delete a signing key (409)",
    ),
    TaskTypeImmutable => code(
        "task_type_immutable",
        ValidationError,
        No,
        "database",
        "the database refused to change or delete a published task type version (409)",
    ),
    WorkImmutable => code(
        "work_immutable",
        ValidationError,
        No,
        "database",
        "the database refused to delete a piece of work (a task, an approval, a run, a process step) (409)",
    ),
    ArtifactImmutable => code(
        "artifact_immutable",
        ValidationError,
        No,
        "database",
        "the database refused to change or delete an artifact (409)",
    ),
    ArtifactTypeImmutable => code(
        "artifact_type_immutable",
        ValidationError,
        No,
        "database",
        "the database refused to change or delete a published artifact type version (409)",
    ),
    ConsoleSessionImmutable => code(
        "console_session_immutable",
        ValidationError,
        No,
        "database",
        "the database refused to delete a console session (409)",
    ),
    RuleImmutable => code(
        "rule_immutable",
        ValidationError,
        No,
        "database",
        "the database refused to change or delete a published rule version (409)",
    ),
    ProcessImmutable => code(
        "process_immutable",
        ValidationError,
        No,
        "database",
        "the database refused to change or delete a published process version (409)",
    ),
    JournalEntry => code(
        "journal_entry",
        ValidationError,
        No,
        "database",
        "the database refused an event written without its journal entry and salt (409)",
    ),
    JournalGap => code(
        "journal_gap",
        ValidationError,
        No,
        "database",
        "the database refused a journal leaf that does not take the next index (409)",
    ),
    JournalAppendOnly => code(
        "journal_append_only",
        ValidationError,
        No,
        "database",
        "the database refused to change or delete a journal leaf: the journal only grows (409)",
    ),
    JournalCheckpoint => code(
        "journal_checkpoint",
        ValidationError,
        No,
        "database",
        "the database refused a checkpoint that signs the tree before the last one signed (409)",
    ),
}

impl Code {
    /// Its registry entry.
    pub fn info(self) -> &'static CodeInfo {
        &CODES[self as usize]
    }

    /// Its word (`skill_not_found`).
    pub fn as_str(self) -> &'static str {
        self.info().code
    }

    /// The registered code `word` names.
    pub fn parse(word: &str) -> Option<Self> {
        Self::ALL.iter().copied().find(|code| code.as_str() == word)
    }
}

/// A code is written as its word.
impl serde::Serialize for Code {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

/// A code reads from its word; a word the registry does not know is an error.
impl<'de> serde::Deserialize<'de> for Code {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let word = <std::borrow::Cow<'de, str>>::deserialize(deserializer)?;
        Self::parse(&word).ok_or_else(|| serde::de::Error::custom(format!("{word:?} is not a registered code")))
    }
}

/// A code as stored and answered: its word.
impl From<Code> for String {
    fn from(code: Code) -> Self {
        code.as_str().to_owned()
    }
}

impl From<Code> for serde_json::Value {
    fn from(code: Code) -> Self {
        Self::String(code.as_str().to_owned())
    }
}

impl std::fmt::Display for Code {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The registry entry of a code, if the platform emits it.
pub fn code_info(code: &str) -> Option<&'static CodeInfo> {
    CODES.iter().find(|info| info.code == code)
}

/// The table of every code, as Markdown.
pub fn render_markdown() -> String {
    let mut out = String::from("| code | error_type | retryable | emitted by | meaning |\n|---|---|---|---|---|\n");
    for info in CODES {
        out.push_str(&format!(
            "| `{}` | `{}` | {} | {} | {} |\n",
            info.code,
            info.error_type.as_str(),
            info.retryable.as_str(),
            info.source,
            info.meaning
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use super::*;

    #[test]
    fn codes_are_valid_and_unique() {
        let mut seen = HashSet::new();
        for info in CODES {
            assert!(crate::error::is_valid_code(info.code), "{}", info.code);
            assert!(seen.insert(info.code), "duplicate {}", info.code);
        }
    }

    #[test]
    fn every_code_is_its_registry_entry() {
        assert_eq!(Code::ALL.len(), CODES.len());
        for (code, info) in Code::ALL.iter().zip(CODES) {
            assert_eq!(code.as_str(), info.code);
            assert_eq!(Code::parse(info.code), Some(*code));
        }
        assert_eq!(Code::SkillNotFound.as_str(), "skill_not_found");
        assert_eq!(Code::parse("no_such_code"), None);
    }

    #[test]
    fn every_error_type_is_its_own_code() {
        for error_type in SkillErrorType::ALL {
            let info = code_info(error_type.as_str()).expect("registered");
            assert_eq!(info.error_type, *error_type);
        }
    }

    #[test]
    fn docs_table_is_current() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/errors.md");
        let text = std::fs::read_to_string(&path).expect("docs/errors.md exists");
        let (start, end) = ("<!-- codes:start -->\n", "<!-- codes:end -->");
        let begin = text.find(start).expect("start marker") + start.len();
        let finish = text.find(end).expect("end marker");
        let table = render_markdown();
        if text[begin..finish] != table {
            if std::env::var_os("SKILL_UPDATE_DOCS").is_some() {
                let updated = format!("{}{}{}", &text[..begin], table, &text[finish..]);
                std::fs::write(&path, updated).expect("docs/errors.md is writable");
            } else {
                panic!("docs/errors.md is out of date: run `SKILL_UPDATE_DOCS=1 cargo test -p skill-contract codes`");
            }
        }
    }
}
