-- Processes: durable multi-step work. A definition's versions never change; an instance is a row
-- that moves running → completed | failed | cancelled; each step it runs is a row that moves
-- open → done | failed | closed, one open at a time. A call step's process basis names its
-- activity (the step's row): the database lets such a call be made only while that row is open,
-- for exactly the version and inputs it recorded, by the instance's agent, once.
CREATE TABLE processes (
    id TEXT PRIMARY KEY,
    key TEXT NOT NULL CHECK (length(key) BETWEEN 1 AND 200),
    version TEXT NOT NULL CHECK (length(version) BETWEEN 1 AND 50),
    spec JSONB NOT NULL CHECK (jsonb_typeof(spec) = 'object'),
    agent_principal_id TEXT NOT NULL REFERENCES principals (id),
    package_key TEXT,
    published_by TEXT NOT NULL REFERENCES principals (id),
    created_at TIMESTAMPTZ NOT NULL,
    UNIQUE (key, version)
);

CREATE FUNCTION processes_guard() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP <> 'INSERT' THEN
        RAISE EXCEPTION 'process_immutable: a published process version never changes and is never deleted';
    END IF;
    IF NOT EXISTS (SELECT 1 FROM principals p WHERE p.id = NEW.agent_principal_id AND p.kind = 'agent') THEN
        RAISE EXCEPTION 'invalid_process: a process runs as an agent';
    END IF;
    RETURN NEW;
END
$$;
CREATE TRIGGER processes_guard BEFORE INSERT OR UPDATE OR DELETE ON processes
    FOR EACH ROW EXECUTE FUNCTION processes_guard();

CREATE TABLE process_instances (
    id TEXT PRIMARY KEY,
    process_id TEXT NOT NULL REFERENCES processes (id),
    process_key TEXT NOT NULL,
    workspace_id TEXT NOT NULL REFERENCES workspaces (id),
    key TEXT NOT NULL CHECK (length(key) BETWEEN 1 AND 200),
    input JSONB NOT NULL CHECK (jsonb_typeof(input) = 'object'),
    vars JSONB NOT NULL CHECK (jsonb_typeof(vars) = 'object'),
    status TEXT NOT NULL CHECK (status IN ('running', 'completed', 'failed', 'cancelled')),
    at_step TEXT,
    wake_at TIMESTAMPTZ,
    error JSONB CHECK (error IS NULL OR jsonb_typeof(error) = 'object'),
    started_by TEXT NOT NULL REFERENCES principals (id),
    row_version INTEGER NOT NULL CHECK (row_version >= 1),
    created_at TIMESTAMPTZ NOT NULL,
    updated_at TIMESTAMPTZ NOT NULL,
    ended_at TIMESTAMPTZ,
    UNIQUE (workspace_id, process_key, key),
    CHECK ((status = 'running') = (ended_at IS NULL))
);
CREATE INDEX process_instances_running ON process_instances (wake_at, updated_at, id) WHERE status = 'running';
CREATE INDEX process_instances_workspace ON process_instances (workspace_id, created_at, id);

CREATE FUNCTION process_instances_moves() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'DELETE' THEN
        RAISE EXCEPTION 'work_immutable: a process instance is never deleted';
    END IF;
    IF OLD.status <> 'running'
        OR NEW.id IS DISTINCT FROM OLD.id OR NEW.process_id IS DISTINCT FROM OLD.process_id
        OR NEW.process_key IS DISTINCT FROM OLD.process_key OR NEW.workspace_id IS DISTINCT FROM OLD.workspace_id
        OR NEW.key IS DISTINCT FROM OLD.key OR NEW.input IS DISTINCT FROM OLD.input
        OR NEW.started_by IS DISTINCT FROM OLD.started_by OR NEW.created_at IS DISTINCT FROM OLD.created_at
        OR NEW.row_version <> OLD.row_version + 1
    THEN
        RAISE EXCEPTION 'invalid_status_transition: an instance moves while running and stays as it ended';
    END IF;
    RETURN NEW;
END
$$;
CREATE TRIGGER process_instances_moves BEFORE UPDATE OR DELETE ON process_instances
    FOR EACH ROW EXECUTE FUNCTION process_instances_moves();

CREATE TABLE process_steps (
    id TEXT PRIMARY KEY,
    instance_id TEXT NOT NULL REFERENCES process_instances (id),
    seq INTEGER NOT NULL CHECK (seq >= 1),
    step_id TEXT NOT NULL CHECK (length(step_id) BETWEEN 1 AND 64),
    action TEXT NOT NULL CHECK (action IN ('call', 'task', 'wait', 'switch', 'set', 'end')),
    status TEXT NOT NULL CHECK (status IN ('open', 'done', 'failed', 'closed')),
    attempt INTEGER NOT NULL CHECK (attempt >= 1),
    skill_id TEXT REFERENCES skills (id),
    inputs JSONB CHECK (inputs IS NULL OR jsonb_typeof(inputs) = 'object'),
    invocation_id TEXT UNIQUE REFERENCES skill_invocations (id),
    task_id TEXT UNIQUE REFERENCES tasks (id),
    fact_id TEXT REFERENCES facts (id),
    -- A wait for a fact: the kind it waits for.
    wait_kind TEXT,
    output JSONB,
    error JSONB CHECK (error IS NULL OR jsonb_typeof(error) = 'object'),
    wake_at TIMESTAMPTZ,
    row_version INTEGER NOT NULL CHECK (row_version >= 1),
    started_at TIMESTAMPTZ NOT NULL,
    ended_at TIMESTAMPTZ,
    UNIQUE (instance_id, seq),
    CHECK ((status = 'open') = (ended_at IS NULL)),
    CHECK (action <> 'call' OR (skill_id IS NOT NULL AND inputs IS NOT NULL))
);
CREATE UNIQUE INDEX process_steps_open ON process_steps (instance_id) WHERE status = 'open';

CREATE FUNCTION process_steps_moves() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'DELETE' THEN
        RAISE EXCEPTION 'work_immutable: a process step is never deleted';
    END IF;
    IF TG_OP = 'INSERT' THEN
        IF NOT EXISTS (SELECT 1 FROM process_instances i WHERE i.id = NEW.instance_id AND i.status = 'running') THEN
            RAISE EXCEPTION 'invalid_status_transition: a step runs only in a running instance';
        END IF;
        RETURN NEW;
    END IF;
    IF OLD.status <> 'open'
        OR NEW.id IS DISTINCT FROM OLD.id OR NEW.instance_id IS DISTINCT FROM OLD.instance_id
        OR NEW.seq IS DISTINCT FROM OLD.seq OR NEW.step_id IS DISTINCT FROM OLD.step_id
        OR NEW.action IS DISTINCT FROM OLD.action OR NEW.attempt IS DISTINCT FROM OLD.attempt
        OR NEW.skill_id IS DISTINCT FROM OLD.skill_id OR NEW.inputs IS DISTINCT FROM OLD.inputs
        OR NEW.started_at IS DISTINCT FROM OLD.started_at
        OR (OLD.invocation_id IS NOT NULL AND NEW.invocation_id IS DISTINCT FROM OLD.invocation_id)
        OR (OLD.task_id IS NOT NULL AND NEW.task_id IS DISTINCT FROM OLD.task_id)
        OR NEW.row_version <> OLD.row_version + 1
    THEN
        RAISE EXCEPTION 'invalid_status_transition: a step moves while open, names its call and task once, and stays as it ended';
    END IF;
    RETURN NEW;
END
$$;
CREATE TRIGGER process_steps_moves BEFORE INSERT OR UPDATE OR DELETE ON process_steps
    FOR EACH ROW EXECUTE FUNCTION process_steps_moves();

CREATE UNIQUE INDEX skill_invocations_process_activity ON skill_invocations ((authorization_basis ->> 'activityId'))
    WHERE authorization_basis ->> 'kind' = 'process';
CREATE FUNCTION skill_invocations_process_covered() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.authorization_basis ->> 'kind' = 'process' AND NOT EXISTS (
        SELECT 1 FROM process_steps s JOIN process_instances i ON i.id = s.instance_id
            JOIN processes p ON p.id = i.process_id
        WHERE s.id = NEW.authorization_basis ->> 'activityId'
            AND i.id = NEW.authorization_basis ->> 'instanceId'
            AND s.status = 'open' AND i.status = 'running' AND s.action = 'call'
            AND s.skill_id = NEW.skill_id AND s.inputs = NEW.inputs
            AND p.agent_principal_id = NEW.authority_principal_id)
    THEN
        RAISE EXCEPTION 'basis_not_covered: a process step covers only the call it opened for, by its instance''s agent, while it is open';
    END IF;
    RETURN NEW;
END
$$;
CREATE TRIGGER skill_invocations_process_covered BEFORE INSERT ON skill_invocations
    FOR EACH ROW EXECUTE FUNCTION skill_invocations_process_covered();

-- A call's basis is an approval, an execution or a process step.
CREATE OR REPLACE FUNCTION skill_invocations_basis_kind() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.authorization_basis IS NOT NULL
        AND COALESCE(NEW.authorization_basis ->> 'kind', '') NOT IN ('approval', 'execution', 'process')
    THEN
        RAISE EXCEPTION 'basis_unknown: a call''s basis is an approval, an execution or a process step';
    END IF;
    RETURN NEW;
END
$$;

-- A work rule may start process instances: the ones an evaluation ensured.
ALTER TABLE rule_evaluations ADD COLUMN instance_ids JSONB NOT NULL DEFAULT '[]'::jsonb CHECK (jsonb_typeof(instance_ids) = 'array');
