-- An agent's request for an external write it has no basis for: the exact call (version and
-- inputs), the task and the gate approval requested for that call, where the request is
-- (skill_api::RequestStatus), and the call made once a person approved it.
CREATE TABLE agent_requests (
    id TEXT PRIMARY KEY,
    agent_principal_id TEXT NOT NULL REFERENCES principals (id),
    skill_id TEXT NOT NULL REFERENCES skills (id),
    inputs TEXT NOT NULL CHECK (json_type(inputs) = 'object'),
    client_name TEXT NOT NULL DEFAULT '' CHECK (length(client_name) <= 200),
    client_version TEXT NOT NULL DEFAULT '' CHECK (length(client_version) <= 100),
    -- The agent's key for the call: the same key again is the same request.
    idempotency_key TEXT CHECK (idempotency_key IS NULL OR length(idempotency_key) BETWEEN 1 AND 200),
    task_id TEXT NOT NULL UNIQUE REFERENCES tasks (id),
    approval_id TEXT NOT NULL UNIQUE REFERENCES approvals (id),
    status TEXT NOT NULL CHECK (status IN ('pending', 'approved', 'succeeded', 'failed', 'rejected', 'expired', 'withdrawn')),
    invocation_id TEXT UNIQUE REFERENCES skill_invocations (id),
    expires_at TEXT NOT NULL,
    row_version INTEGER NOT NULL CHECK (row_version >= 1),
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    ended_at TEXT,
    CHECK ((status IN ('pending', 'approved')) = (ended_at IS NULL)),
    CHECK (invocation_id IS NULL OR status IN ('approved', 'succeeded', 'failed', 'withdrawn'))
);
CREATE INDEX agent_requests_open ON agent_requests (status, expires_at) WHERE status IN ('pending', 'approved');
CREATE INDEX agent_requests_agent ON agent_requests (agent_principal_id, created_at);
CREATE UNIQUE INDEX agent_requests_key ON agent_requests (agent_principal_id, idempotency_key)
    WHERE idempotency_key IS NOT NULL;
CREATE INDEX agent_requests_approval ON agent_requests (approval_id);

-- pending → approved | rejected | expired | withdrawn | failed (the approved call could not be made);
-- approved → succeeded | failed | withdrawn.
-- What a request is for never changes, its call is made once, and every change moves its version.
CREATE TRIGGER agent_requests_moves BEFORE UPDATE ON agent_requests
WHEN (NEW.status IS NOT OLD.status AND NOT (
        (OLD.status = 'pending' AND NEW.status IN ('approved', 'rejected', 'expired', 'withdrawn', 'failed'))
        OR (OLD.status = 'approved' AND NEW.status IN ('succeeded', 'failed', 'withdrawn'))))
    OR NEW.agent_principal_id IS NOT OLD.agent_principal_id OR NEW.skill_id IS NOT OLD.skill_id
    OR NEW.inputs IS NOT OLD.inputs OR NEW.task_id IS NOT OLD.task_id
    OR NEW.idempotency_key IS NOT OLD.idempotency_key OR NEW.approval_id IS NOT OLD.approval_id
    OR NEW.created_at IS NOT OLD.created_at OR NEW.expires_at IS NOT OLD.expires_at
    OR (OLD.invocation_id IS NOT NULL AND NEW.invocation_id IS NOT OLD.invocation_id)
    OR NEW.row_version <> OLD.row_version + 1
BEGIN
    SELECT RAISE(ABORT, 'invalid_status_transition: a request moves pending → approved → ended (or is rejected, expires or is withdrawn), keeps what it asks for, and makes its call once');
END;

-- An agent has at most 100 requests waiting for a person (SQLite's one writer makes the count exact).
CREATE TRIGGER agent_requests_open_limit BEFORE INSERT ON agent_requests
WHEN (SELECT count(*) FROM agent_requests WHERE agent_principal_id = NEW.agent_principal_id AND status = 'pending') >= 100
BEGIN
    SELECT RAISE(ABORT, 'too_many_requests: an agent has at most 100 requests waiting for a person');
END;

CREATE TRIGGER agent_requests_kept BEFORE DELETE ON agent_requests
BEGIN
    SELECT RAISE(ABORT, 'work_immutable: a request is never deleted');
END;
