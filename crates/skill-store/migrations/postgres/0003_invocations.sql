-- Invocations: one durable row per call of a skill version, handed to executors under leases
-- with fencing tokens; and the executor sessions leases may be bound to.

CREATE TABLE executor_sessions (
    id TEXT PRIMARY KEY,
    principal_id TEXT NOT NULL REFERENCES principals (id),
    status TEXT NOT NULL CHECK (status IN ('active', 'closed')),
    capabilities JSONB NOT NULL DEFAULT '[]' CHECK (jsonb_typeof(capabilities) = 'array'),
    -- What the executor last claimed with: localEntrypoints, httpOrigins, mcpEndpoints, audiences.
    admission JSONB NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(admission) = 'object'),
    created_at TIMESTAMPTZ NOT NULL,
    heartbeat_at TIMESTAMPTZ NOT NULL,
    expires_at TIMESTAMPTZ NOT NULL,
    closed_at TIMESTAMPTZ,
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
    inputs JSONB NOT NULL CHECK (jsonb_typeof(inputs) = 'object'),
    requested_by_kind TEXT NOT NULL
        CHECK (requested_by_kind IN ('principal', 'rule', 'approval', 'verification', 'run')),
    requested_by_ref TEXT NOT NULL,
    authority_principal_id TEXT NOT NULL REFERENCES principals (id),
    authorization_basis JSONB CHECK (authorization_basis IS NULL OR jsonb_typeof(authorization_basis) = 'object'),
    idempotency_key TEXT CHECK (idempotency_key IS NULL OR length(idempotency_key) BETWEEN 1 AND 200),
    status TEXT NOT NULL CHECK (status IN ('pending', 'running', 'succeeded', 'failed', 'cancelled')),
    attempt INTEGER NOT NULL DEFAULT 0,
    max_attempts INTEGER NOT NULL CHECK (max_attempts BETWEEN 1 AND 10),
    available_at TIMESTAMPTZ NOT NULL,
    output JSONB CHECK (output IS NULL OR jsonb_typeof(output) = 'object'),
    error JSONB CHECK (error IS NULL OR jsonb_typeof(error) = 'object'),
    cost JSONB CHECK (cost IS NULL OR jsonb_typeof(cost) = 'object'),
    fencing_token BIGINT NOT NULL DEFAULT 0 CHECK (fencing_token >= 0),
    executor_principal_id TEXT REFERENCES principals (id),
    executor_session_id TEXT REFERENCES executor_sessions (id),
    lease_expires_at TIMESTAMPTZ,
    heartbeat_at TIMESTAMPTZ,
    task_id TEXT,
    run_id TEXT,
    artifact_id TEXT,
    row_version INTEGER NOT NULL DEFAULT 1 CHECK (row_version >= 1),
    created_at TIMESTAMPTZ NOT NULL,
    updated_at TIMESTAMPTZ NOT NULL,
    started_at TIMESTAMPTZ,
    attempt_started_at TIMESTAMPTZ,
    finished_at TIMESTAMPTZ,
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
    ON skill_invocations (skill_id, (authorization_basis ->> 'approvalId'))
    WHERE authorization_basis ->> 'kind' = 'approval';
CREATE UNIQUE INDEX skill_invocations_execution ON skill_invocations (run_id)
    WHERE authorization_basis ->> 'kind' = 'execution';
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
CREATE FUNCTION skill_invocations_guard() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    finished BOOLEAN;
    claimed BOOLEAN;
BEGIN
    IF TG_OP = 'DELETE' THEN
        RAISE EXCEPTION 'invocation_immutable: a call is never deleted';
    END IF;
    IF NEW.id IS DISTINCT FROM OLD.id OR NEW.skill_id IS DISTINCT FROM OLD.skill_id
        OR NEW.protocol IS DISTINCT FROM OLD.protocol OR NEW.target IS DISTINCT FROM OLD.target
        OR NEW.audience IS DISTINCT FROM OLD.audience OR NEW.inputs IS DISTINCT FROM OLD.inputs
        OR NEW.requested_by_kind IS DISTINCT FROM OLD.requested_by_kind
        OR NEW.requested_by_ref IS DISTINCT FROM OLD.requested_by_ref
        OR NEW.authority_principal_id IS DISTINCT FROM OLD.authority_principal_id
        OR NEW.authorization_basis IS DISTINCT FROM OLD.authorization_basis
        OR NEW.idempotency_key IS DISTINCT FROM OLD.idempotency_key
        OR NEW.max_attempts IS DISTINCT FROM OLD.max_attempts OR NEW.task_id IS DISTINCT FROM OLD.task_id
        OR NEW.run_id IS DISTINCT FROM OLD.run_id OR NEW.created_at IS DISTINCT FROM OLD.created_at
    THEN
        RAISE EXCEPTION 'invocation_immutable: what a call is never changes';
    END IF;
    finished := OLD.status IN ('succeeded', 'failed', 'cancelled');
    claimed := OLD.status = 'pending' AND NEW.status = 'running';
    IF (finished AND (NEW.status IS DISTINCT FROM OLD.status OR NEW.output IS DISTINCT FROM OLD.output
            OR NEW.error IS DISTINCT FROM OLD.error OR NEW.cost IS DISTINCT FROM OLD.cost
            OR NEW.attempt IS DISTINCT FROM OLD.attempt OR NEW.fencing_token IS DISTINCT FROM OLD.fencing_token
            OR NEW.finished_at IS DISTINCT FROM OLD.finished_at
            OR (OLD.artifact_id IS NOT NULL AND NEW.artifact_id IS DISTINCT FROM OLD.artifact_id)))
        OR (OLD.status = 'pending' AND NEW.status NOT IN ('pending', 'running', 'cancelled'))
        OR (claimed AND (NEW.attempt <> OLD.attempt + 1 OR NEW.fencing_token <> OLD.fencing_token + 1))
        OR (NOT claimed AND (NEW.attempt <> OLD.attempt OR NEW.fencing_token <> OLD.fencing_token))
    THEN
        RAISE EXCEPTION 'invalid_status_transition: a call moves only along its lifecycle';
    END IF;
    IF NEW.row_version IS DISTINCT FROM OLD.row_version + 1 THEN
        RAISE EXCEPTION 'row_version_required: every change of a call moves row_version by one';
    END IF;
    RETURN NEW;
END
$$;

CREATE TRIGGER skill_invocations_guarded BEFORE UPDATE OR DELETE ON skill_invocations
    FOR EACH ROW EXECUTE FUNCTION skill_invocations_guard();

CREATE FUNCTION executor_sessions_guard() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.row_version IS DISTINCT FROM OLD.row_version + 1 OR NEW.principal_id IS DISTINCT FROM OLD.principal_id
        OR (OLD.status = 'closed' AND (NEW.status IS DISTINCT FROM OLD.status
            OR NEW.expires_at IS DISTINCT FROM OLD.expires_at))
    THEN
        RAISE EXCEPTION 'row_version_required: a session changes by one row version and stays closed';
    END IF;
    RETURN NEW;
END
$$;

CREATE TRIGGER executor_sessions_guarded BEFORE UPDATE ON executor_sessions
    FOR EACH ROW EXECUTE FUNCTION executor_sessions_guard();
