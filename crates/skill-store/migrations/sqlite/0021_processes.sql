-- Processes: durable multi-step work. A definition's versions never change; an instance is a row
-- that moves running → completed | failed | cancelled; each step it runs is a row that moves
-- open → done | failed | closed, one open at a time. A call step's process basis names its
-- activity (the step's row): the database lets such a call be made only while that row is open,
-- for exactly the version and inputs it recorded, by the instance's agent, once.
CREATE TABLE processes (
    id TEXT PRIMARY KEY,
    key TEXT NOT NULL CHECK (length(key) BETWEEN 1 AND 200),
    version TEXT NOT NULL CHECK (length(version) BETWEEN 1 AND 50),
    spec TEXT NOT NULL CHECK (json_type(spec) = 'object'),
    agent_principal_id TEXT NOT NULL REFERENCES principals (id),
    package_key TEXT,
    published_by TEXT NOT NULL REFERENCES principals (id),
    created_at TEXT NOT NULL,
    UNIQUE (key, version)
);

CREATE TRIGGER processes_no_update BEFORE UPDATE ON processes
BEGIN
    SELECT RAISE(ABORT, 'process_immutable: a published process version never changes');
END;
CREATE TRIGGER processes_no_delete BEFORE DELETE ON processes
BEGIN
    SELECT RAISE(ABORT, 'process_immutable: a published process version is never deleted');
END;
CREATE TRIGGER processes_agent BEFORE INSERT ON processes
WHEN NOT EXISTS (SELECT 1 FROM principals p WHERE p.id = NEW.agent_principal_id AND p.kind = 'agent')
BEGIN
    SELECT RAISE(ABORT, 'invalid_process: a process runs as an agent');
END;

CREATE TABLE process_instances (
    id TEXT PRIMARY KEY,
    process_id TEXT NOT NULL REFERENCES processes (id),
    process_key TEXT NOT NULL,
    workspace_id TEXT NOT NULL REFERENCES workspaces (id),
    key TEXT NOT NULL CHECK (length(key) BETWEEN 1 AND 200),
    input TEXT NOT NULL CHECK (json_type(input) = 'object'),
    vars TEXT NOT NULL CHECK (json_type(vars) = 'object'),
    status TEXT NOT NULL CHECK (status IN ('running', 'completed', 'failed', 'cancelled')),
    -- The step it is at: the open step's, or the one it enters next.
    at_step TEXT,
    -- When it looks again on its own (a timer, a backoff); NULL while it waits for a call, a
    -- task or a fact (found by the worker's query) or once it ended.
    wake_at TEXT,
    error TEXT CHECK (error IS NULL OR json_type(error) = 'object'),
    started_by TEXT NOT NULL REFERENCES principals (id),
    row_version INTEGER NOT NULL CHECK (row_version >= 1),
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    ended_at TEXT,
    UNIQUE (workspace_id, process_key, key),
    CHECK ((status = 'running') = (ended_at IS NULL))
);
CREATE INDEX process_instances_running ON process_instances (wake_at, updated_at, id) WHERE status = 'running';
CREATE INDEX process_instances_workspace ON process_instances (workspace_id, created_at, id);

CREATE TRIGGER process_instances_moves BEFORE UPDATE ON process_instances
WHEN OLD.status <> 'running'
    OR NEW.id IS NOT OLD.id OR NEW.process_id IS NOT OLD.process_id OR NEW.process_key IS NOT OLD.process_key
    OR NEW.workspace_id IS NOT OLD.workspace_id OR NEW.key IS NOT OLD.key OR NEW.input IS NOT OLD.input
    OR NEW.started_by IS NOT OLD.started_by OR NEW.created_at IS NOT OLD.created_at
    OR NEW.row_version <> OLD.row_version + 1
BEGIN
    SELECT RAISE(ABORT, 'invalid_status_transition: an instance moves while running and stays as it ended');
END;
CREATE TRIGGER process_instances_no_delete BEFORE DELETE ON process_instances
BEGIN
    SELECT RAISE(ABORT, 'work_immutable: a process instance is never deleted');
END;

CREATE TABLE process_steps (
    id TEXT PRIMARY KEY,
    instance_id TEXT NOT NULL REFERENCES process_instances (id),
    seq INTEGER NOT NULL CHECK (seq >= 1),
    step_id TEXT NOT NULL CHECK (length(step_id) BETWEEN 1 AND 64),
    action TEXT NOT NULL CHECK (action IN ('call', 'task', 'wait', 'switch', 'set', 'end')),
    status TEXT NOT NULL CHECK (status IN ('open', 'done', 'failed', 'closed')),
    attempt INTEGER NOT NULL CHECK (attempt >= 1),
    -- A call step's version and inputs, fixed when it opened: what its call must be.
    skill_id TEXT REFERENCES skills (id),
    inputs TEXT CHECK (inputs IS NULL OR json_type(inputs) = 'object'),
    invocation_id TEXT UNIQUE REFERENCES skill_invocations (id),
    task_id TEXT UNIQUE REFERENCES tasks (id),
    fact_id TEXT REFERENCES facts (id),
    -- A wait for a fact: the kind it waits for.
    wait_kind TEXT,
    output TEXT,
    error TEXT CHECK (error IS NULL OR json_type(error) = 'object'),
    wake_at TEXT,
    row_version INTEGER NOT NULL CHECK (row_version >= 1),
    started_at TEXT NOT NULL,
    ended_at TEXT,
    UNIQUE (instance_id, seq),
    CHECK ((status = 'open') = (ended_at IS NULL)),
    CHECK (action <> 'call' OR (skill_id IS NOT NULL AND inputs IS NOT NULL))
);
-- One open step per instance.
CREATE UNIQUE INDEX process_steps_open ON process_steps (instance_id) WHERE status = 'open';

CREATE TRIGGER process_steps_moves BEFORE UPDATE ON process_steps
WHEN OLD.status <> 'open'
    OR NEW.id IS NOT OLD.id OR NEW.instance_id IS NOT OLD.instance_id OR NEW.seq IS NOT OLD.seq
    OR NEW.step_id IS NOT OLD.step_id OR NEW.action IS NOT OLD.action OR NEW.attempt IS NOT OLD.attempt
    OR NEW.skill_id IS NOT OLD.skill_id OR NEW.inputs IS NOT OLD.inputs OR NEW.started_at IS NOT OLD.started_at
    OR (OLD.invocation_id IS NOT NULL AND NEW.invocation_id IS NOT OLD.invocation_id)
    OR (OLD.task_id IS NOT NULL AND NEW.task_id IS NOT OLD.task_id)
    OR NEW.row_version <> OLD.row_version + 1
BEGIN
    SELECT RAISE(ABORT, 'invalid_status_transition: a step moves while open, names its call and task once, and stays as it ended');
END;
CREATE TRIGGER process_steps_no_delete BEFORE DELETE ON process_steps
BEGIN
    SELECT RAISE(ABORT, 'work_immutable: a process step is never deleted');
END;
-- A step opens only in a running instance.
CREATE TRIGGER process_steps_running BEFORE INSERT ON process_steps
WHEN NOT EXISTS (SELECT 1 FROM process_instances i WHERE i.id = NEW.instance_id AND i.status = 'running')
BEGIN
    SELECT RAISE(ABORT, 'invalid_status_transition: a step runs only in a running instance');
END;

-- The process basis: exactly the open call step's version and inputs, by its instance's agent,
-- once per activity.
CREATE UNIQUE INDEX skill_invocations_process_activity
    ON skill_invocations (json_extract(authorization_basis, '$.activityId'))
    WHERE json_extract(authorization_basis, '$.kind') = 'process';
CREATE TRIGGER skill_invocations_process_covered BEFORE INSERT ON skill_invocations
WHEN json_extract(NEW.authorization_basis, '$.kind') = 'process' AND NOT EXISTS (
    SELECT 1 FROM process_steps s JOIN process_instances i ON i.id = s.instance_id
        JOIN processes p ON p.id = i.process_id
    WHERE s.id = json_extract(NEW.authorization_basis, '$.activityId')
        AND i.id = json_extract(NEW.authorization_basis, '$.instanceId')
        AND s.status = 'open' AND i.status = 'running' AND s.action = 'call'
        AND s.skill_id = NEW.skill_id AND s.inputs = NEW.inputs
        AND p.agent_principal_id = NEW.authority_principal_id)
BEGIN
    SELECT RAISE(ABORT, 'basis_not_covered: a process step covers only the call it opened for, by its instance''s agent, while it is open');
END;

-- A call's basis is an approval, an execution or a process step.
DROP TRIGGER skill_invocations_basis_kind;
CREATE TRIGGER skill_invocations_basis_kind BEFORE INSERT ON skill_invocations
WHEN NEW.authorization_basis IS NOT NULL
    AND COALESCE(json_extract(NEW.authorization_basis, '$.kind'), '') NOT IN ('approval', 'execution', 'process')
BEGIN
    SELECT RAISE(ABORT, 'basis_unknown: a call''s basis is an approval, an execution or a process step');
END;

-- A work rule may start process instances: the ones an evaluation ensured.
ALTER TABLE rule_evaluations ADD COLUMN instance_ids TEXT NOT NULL DEFAULT '[]' CHECK (json_type(instance_ids) = 'array');
