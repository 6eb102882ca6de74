-- Invocations: one durable row per call of a skill version, handed to executors under leases
-- with fencing tokens; and the executor sessions leases may be bound to.

CREATE TABLE executor_sessions (
    id TEXT PRIMARY KEY,
    principal_id TEXT NOT NULL REFERENCES principals (id),
    status TEXT NOT NULL CHECK (status IN ('active', 'closed')),
    capabilities TEXT NOT NULL DEFAULT '[]' CHECK (json_type(capabilities) = 'array'),
    -- What the executor last claimed with: localEntrypoints, httpOrigins, mcpEndpoints, audiences.
    admission TEXT NOT NULL DEFAULT '{}' CHECK (json_type(admission) = 'object'),
    created_at TEXT NOT NULL,
    heartbeat_at TEXT NOT NULL,
    expires_at TEXT NOT NULL,
    closed_at TEXT,
    row_version INTEGER NOT NULL DEFAULT 1 CHECK (row_version >= 1),
    CHECK ((status = 'closed') = (closed_at IS NOT NULL))
);
CREATE INDEX executor_sessions_principal ON executor_sessions (principal_id, status);

CREATE TABLE skill_invocations (
    id TEXT PRIMARY KEY,
    skill_id TEXT NOT NULL REFERENCES skills (id),
    -- Where the call runs, copied from the contract at insert so executors are matched by index:
    -- the protocol, the entrypoint (local) or the lower-case endpoint (http, mcp), the audience.
    protocol TEXT NOT NULL CHECK (protocol IN ('http', 'local', 'mcp')),
    target TEXT NOT NULL,
    audience TEXT,
    inputs TEXT NOT NULL CHECK (json_type(inputs) = 'object'),
    requested_by_kind TEXT NOT NULL
        CHECK (requested_by_kind IN ('principal', 'rule', 'approval', 'verification', 'run')),
    requested_by_ref TEXT NOT NULL,
    authority_principal_id TEXT NOT NULL REFERENCES principals (id),
    authorization_basis TEXT CHECK (authorization_basis IS NULL OR json_type(authorization_basis) = 'object'),
    idempotency_key TEXT CHECK (idempotency_key IS NULL OR length(idempotency_key) BETWEEN 1 AND 200),
    status TEXT NOT NULL CHECK (status IN ('pending', 'running', 'succeeded', 'failed', 'cancelled')),
    attempt INTEGER NOT NULL DEFAULT 0,
    max_attempts INTEGER NOT NULL CHECK (max_attempts BETWEEN 1 AND 10),
    available_at TEXT NOT NULL,
    output TEXT CHECK (output IS NULL OR json_type(output) = 'object'),
    error TEXT CHECK (error IS NULL OR json_type(error) = 'object'),
    cost TEXT CHECK (cost IS NULL OR json_type(cost) = 'object'),
    fencing_token INTEGER NOT NULL DEFAULT 0 CHECK (fencing_token >= 0),
    executor_principal_id TEXT REFERENCES principals (id),
    executor_session_id TEXT REFERENCES executor_sessions (id),
    lease_expires_at TEXT,
    heartbeat_at TEXT,
    task_id TEXT,
    run_id TEXT,
    artifact_id TEXT,
    row_version INTEGER NOT NULL DEFAULT 1 CHECK (row_version >= 1),
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    started_at TEXT,
    attempt_started_at TEXT,
    finished_at TEXT,
    CHECK (attempt BETWEEN 0 AND max_attempts),
    -- A running call has a lease, an executor and the start of its attempt; no other call has a lease.
    CHECK ((status = 'running') = (lease_expires_at IS NOT NULL)),
    CHECK (status <> 'running' OR (executor_principal_id IS NOT NULL AND attempt_started_at IS NOT NULL
        AND attempt >= 1)),
    -- A finished call has its time; a success its output; a failure or a cancellation its error.
    CHECK ((status IN ('succeeded', 'failed', 'cancelled')) = (finished_at IS NOT NULL)),
    CHECK (status <> 'succeeded' OR (output IS NOT NULL AND error IS NULL)),
    CHECK (status NOT IN ('failed', 'cancelled') OR (error IS NOT NULL AND output IS NULL))
);
-- The body key names one call of one version (keys of NULL never collide).
CREATE UNIQUE INDEX skill_invocations_key ON skill_invocations (skill_id, idempotency_key);
-- An approval authorizes at most one call per version; a run at most one execution call.
CREATE UNIQUE INDEX skill_invocations_approval
    ON skill_invocations (skill_id, json_extract(authorization_basis, '$.approvalId'))
    WHERE json_extract(authorization_basis, '$.kind') = 'approval';
CREATE UNIQUE INDEX skill_invocations_execution ON skill_invocations (run_id)
    WHERE json_extract(authorization_basis, '$.kind') = 'execution';
-- The queue in claim order; partial on exactly the claim's condition, so the planner uses it.
CREATE INDEX skill_invocations_queue ON skill_invocations (available_at, created_at, id)
    WHERE status = 'pending';
CREATE INDEX skill_invocations_lease ON skill_invocations (lease_expires_at) WHERE status = 'running';
CREATE INDEX skill_invocations_recent ON skill_invocations (created_at, id);
CREATE INDEX skill_invocations_authority ON skill_invocations (authority_principal_id, created_at, id);
CREATE INDEX skill_invocations_task ON skill_invocations (task_id) WHERE task_id IS NOT NULL;

-- What a call is never changes after insert; a finished call does not change at all (but for the
-- artifact of its result, set once); the status moves only along the lifecycle; the attempt and
-- the fencing token move, by one, only when a pending call is claimed; every change moves
-- row_version by one. Nothing is deleted.
CREATE TRIGGER skill_invocations_fixed BEFORE UPDATE ON skill_invocations
WHEN NEW.id IS NOT OLD.id OR NEW.skill_id IS NOT OLD.skill_id OR NEW.protocol IS NOT OLD.protocol
    OR NEW.target IS NOT OLD.target OR NEW.audience IS NOT OLD.audience OR NEW.inputs IS NOT OLD.inputs
    OR NEW.requested_by_kind IS NOT OLD.requested_by_kind OR NEW.requested_by_ref IS NOT OLD.requested_by_ref
    OR NEW.authority_principal_id IS NOT OLD.authority_principal_id
    OR NEW.authorization_basis IS NOT OLD.authorization_basis
    OR NEW.idempotency_key IS NOT OLD.idempotency_key OR NEW.max_attempts IS NOT OLD.max_attempts
    OR NEW.task_id IS NOT OLD.task_id OR NEW.run_id IS NOT OLD.run_id OR NEW.created_at IS NOT OLD.created_at
BEGIN
    SELECT RAISE(ABORT, 'invocation_immutable: what a call is never changes');
END;

CREATE TRIGGER skill_invocations_lifecycle BEFORE UPDATE ON skill_invocations
WHEN (OLD.status IN ('succeeded', 'failed', 'cancelled') AND (NEW.status IS NOT OLD.status
        OR NEW.output IS NOT OLD.output OR NEW.error IS NOT OLD.error OR NEW.cost IS NOT OLD.cost
        OR NEW.attempt IS NOT OLD.attempt OR NEW.fencing_token IS NOT OLD.fencing_token
        OR NEW.finished_at IS NOT OLD.finished_at
        OR (OLD.artifact_id IS NOT NULL AND NEW.artifact_id IS NOT OLD.artifact_id)))
    OR (OLD.status = 'pending' AND NEW.status NOT IN ('pending', 'running', 'cancelled'))
    OR (NEW.status = 'running' AND OLD.status = 'pending' AND (NEW.attempt <> OLD.attempt + 1
        OR NEW.fencing_token <> OLD.fencing_token + 1))
    OR (NOT (OLD.status = 'pending' AND NEW.status = 'running')
        AND (NEW.attempt <> OLD.attempt OR NEW.fencing_token <> OLD.fencing_token))
BEGIN
    SELECT RAISE(ABORT, 'invalid_status_transition: a call moves only along its lifecycle');
END;

CREATE TRIGGER skill_invocations_row_version BEFORE UPDATE ON skill_invocations
WHEN NEW.row_version IS NOT OLD.row_version + 1
BEGIN
    SELECT RAISE(ABORT, 'row_version_required: every change of a call moves row_version by one');
END;

CREATE TRIGGER skill_invocations_no_delete BEFORE DELETE ON skill_invocations
BEGIN
    SELECT RAISE(ABORT, 'invocation_immutable: a call is never deleted');
END;

CREATE TRIGGER executor_sessions_row_version BEFORE UPDATE ON executor_sessions
WHEN NEW.row_version IS NOT OLD.row_version + 1 OR NEW.principal_id IS NOT OLD.principal_id
    OR (OLD.status = 'closed' AND (NEW.status IS NOT OLD.status OR NEW.expires_at IS NOT OLD.expires_at))
BEGIN
    SELECT RAISE(ABORT, 'row_version_required: a session changes by one row version and stays closed');
END;
