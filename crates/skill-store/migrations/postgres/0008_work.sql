-- Work: task types (immutable versions), tasks in workspaces, runs, approvals with the actions of
-- their outcomes, and comments. A call of a skill may name a task and a run; the basis rules of
-- external writes read them.

CREATE TABLE task_types (
    id TEXT PRIMARY KEY,
    key TEXT NOT NULL CHECK (length(key) BETWEEN 1 AND 200),
    version TEXT NOT NULL CHECK (length(version) BETWEEN 1 AND 50),
    display_name TEXT NOT NULL DEFAULT '',
    description TEXT NOT NULL DEFAULT '',
    -- The whole normalized spec: customFields, approvalSchema, acceptance, execution.
    spec JSONB NOT NULL CHECK (jsonb_typeof(spec) = 'object'),
    execution JSONB CHECK (execution IS NULL OR jsonb_typeof(execution) = 'object'),
    created_by TEXT REFERENCES principals (id),
    created_at TIMESTAMPTZ NOT NULL,
    UNIQUE (key, version)
);

CREATE FUNCTION task_types_guard() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'task_type_immutable: a published task type version never changes and is never deleted';
END
$$;
CREATE TRIGGER task_types_guarded BEFORE UPDATE OR DELETE ON task_types
    FOR EACH ROW EXECUTE FUNCTION task_types_guard();

CREATE TABLE tasks (
    id TEXT PRIMARY KEY,
    workspace_id TEXT NOT NULL REFERENCES workspaces (id),
    task_type_id TEXT NOT NULL REFERENCES task_types (id),
    title TEXT NOT NULL CHECK (length(title) BETWEEN 1 AND 500),
    custom_fields JSONB NOT NULL CHECK (jsonb_typeof(custom_fields) = 'object'),
    status TEXT NOT NULL CHECK (status IN ('open', 'done', 'failed', 'cancelled')),
    created_by TEXT NOT NULL REFERENCES principals (id),
    row_version INTEGER NOT NULL DEFAULT 1 CHECK (row_version >= 1),
    created_at TIMESTAMPTZ NOT NULL,
    updated_at TIMESTAMPTZ NOT NULL,
    closed_at TIMESTAMPTZ,
    CHECK ((status = 'open') = (closed_at IS NULL))
);
CREATE INDEX tasks_workspace ON tasks (workspace_id, created_at, id);
CREATE INDEX tasks_recent ON tasks (created_at, id);

CREATE FUNCTION tasks_guard() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'DELETE' THEN
        RAISE EXCEPTION 'work_immutable: a task is never deleted';
    END IF;
    IF NEW.id IS DISTINCT FROM OLD.id OR NEW.workspace_id IS DISTINCT FROM OLD.workspace_id
        OR NEW.task_type_id IS DISTINCT FROM OLD.task_type_id OR NEW.created_by IS DISTINCT FROM OLD.created_by
        OR NEW.created_at IS DISTINCT FROM OLD.created_at
    THEN
        RAISE EXCEPTION 'work_immutable: what a task is never changes';
    END IF;
    IF OLD.status <> 'open' AND (NEW.status IS DISTINCT FROM OLD.status
        OR NEW.custom_fields IS DISTINCT FROM OLD.custom_fields OR NEW.title IS DISTINCT FROM OLD.title
        OR NEW.closed_at IS DISTINCT FROM OLD.closed_at)
    THEN
        RAISE EXCEPTION 'invalid_status_transition: a closed task stays as it was closed';
    END IF;
    IF NEW.row_version IS DISTINCT FROM OLD.row_version + 1 THEN
        RAISE EXCEPTION 'row_version_required: every change of a task moves row_version by one';
    END IF;
    RETURN NEW;
END
$$;
CREATE TRIGGER tasks_guarded BEFORE UPDATE OR DELETE ON tasks FOR EACH ROW EXECUTE FUNCTION tasks_guard();

CREATE TABLE runs (
    id TEXT PRIMARY KEY,
    task_id TEXT NOT NULL REFERENCES tasks (id),
    owner_principal_id TEXT NOT NULL REFERENCES principals (id),
    status TEXT NOT NULL CHECK (status IN ('running', 'succeeded', 'failed', 'cancelled')),
    result JSONB CHECK (result IS NULL OR jsonb_typeof(result) = 'object'),
    error JSONB CHECK (error IS NULL OR jsonb_typeof(error) = 'object'),
    row_version INTEGER NOT NULL DEFAULT 1 CHECK (row_version >= 1),
    created_at TIMESTAMPTZ NOT NULL,
    ended_at TIMESTAMPTZ,
    CHECK ((status = 'running') = (ended_at IS NULL))
);
CREATE INDEX runs_task ON runs (task_id, created_at, id);
-- One running run per owner and task: two starts at once make one run.
CREATE UNIQUE INDEX runs_one_running ON runs (task_id, owner_principal_id) WHERE status = 'running';

CREATE FUNCTION runs_guard() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'DELETE' THEN
        RAISE EXCEPTION 'work_immutable: a run is never deleted';
    END IF;
    IF NEW.id IS DISTINCT FROM OLD.id OR NEW.task_id IS DISTINCT FROM OLD.task_id
        OR NEW.owner_principal_id IS DISTINCT FROM OLD.owner_principal_id
        OR NEW.created_at IS DISTINCT FROM OLD.created_at
    THEN
        RAISE EXCEPTION 'work_immutable: what a run is never changes';
    END IF;
    IF OLD.status <> 'running' AND (NEW.status IS DISTINCT FROM OLD.status
        OR NEW.result IS DISTINCT FROM OLD.result OR NEW.error IS DISTINCT FROM OLD.error
        OR NEW.ended_at IS DISTINCT FROM OLD.ended_at)
    THEN
        RAISE EXCEPTION 'invalid_status_transition: an ended run stays as it ended';
    END IF;
    IF NEW.row_version IS DISTINCT FROM OLD.row_version + 1 THEN
        RAISE EXCEPTION 'row_version_required: every change of a run moves row_version by one';
    END IF;
    RETURN NEW;
END
$$;
CREATE TRIGGER runs_guarded BEFORE UPDATE OR DELETE ON runs FOR EACH ROW EXECUTE FUNCTION runs_guard();

-- An approval: requested (a gate or not), decided approved or rejected by someone other than
-- its requester (with the decider's authority as it was then), or withdrawn. The outcome of the
-- decision (the actions of the type's gate for that decision) is tracked by outcome_status.
CREATE TABLE approvals (
    id TEXT PRIMARY KEY,
    task_id TEXT NOT NULL REFERENCES tasks (id),
    gate BOOLEAN NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('pending', 'approved', 'rejected', 'withdrawn')),
    requested_by TEXT NOT NULL REFERENCES principals (id),
    request_comment TEXT NOT NULL DEFAULT '',
    decided_by TEXT REFERENCES principals (id),
    decided_at TIMESTAMPTZ,
    comment TEXT NOT NULL DEFAULT '',
    decision_authority JSONB CHECK (decision_authority IS NULL OR jsonb_typeof(decision_authority) = 'object'),
    withdrawn_by TEXT REFERENCES principals (id),
    withdrawn_at TIMESTAMPTZ,
    outcome_status TEXT CHECK (outcome_status IS NULL
        OR outcome_status IN ('running', 'succeeded', 'failed', 'skipped')),
    outcome_reaction TEXT,
    row_version INTEGER NOT NULL DEFAULT 1 CHECK (row_version >= 1),
    created_at TIMESTAMPTZ NOT NULL,
    updated_at TIMESTAMPTZ NOT NULL,
    CHECK ((decided_by IS NULL) = (decided_at IS NULL)),
    CHECK ((decided_by IS NULL) = (decision_authority IS NULL)),
    CHECK (status NOT IN ('approved', 'rejected') OR decided_by IS NOT NULL),
    CHECK ((status = 'withdrawn') = (withdrawn_at IS NOT NULL))
);
CREATE INDEX approvals_task ON approvals (task_id, created_at, id);
CREATE INDEX approvals_outcome ON approvals (outcome_status) WHERE outcome_status = 'running';

CREATE FUNCTION approvals_guard() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'DELETE' THEN
        RAISE EXCEPTION 'work_immutable: an approval is never deleted';
    END IF;
    IF NEW.decided_by IS NOT NULL AND NEW.decided_by = NEW.requested_by THEN
        RAISE EXCEPTION 'self_approval_refused: the requester of an approval never decides it';
    END IF;
    IF TG_OP = 'INSERT' THEN
        RETURN NEW;
    END IF;
    IF NEW.id IS DISTINCT FROM OLD.id OR NEW.task_id IS DISTINCT FROM OLD.task_id
        OR NEW.gate IS DISTINCT FROM OLD.gate OR NEW.requested_by IS DISTINCT FROM OLD.requested_by
        OR NEW.request_comment IS DISTINCT FROM OLD.request_comment
        OR NEW.created_at IS DISTINCT FROM OLD.created_at
        OR (OLD.decided_by IS NOT NULL AND (NEW.decided_by IS DISTINCT FROM OLD.decided_by
            OR NEW.decided_at IS DISTINCT FROM OLD.decided_at OR NEW.comment IS DISTINCT FROM OLD.comment
            OR NEW.decision_authority IS DISTINCT FROM OLD.decision_authority))
    THEN
        RAISE EXCEPTION 'work_immutable: what an approval is, and its decision, never change';
    END IF;
    -- pending → approved | rejected | withdrawn; approved → withdrawn; nothing else.
    IF NEW.status IS DISTINCT FROM OLD.status AND NOT (
        (OLD.status = 'pending' AND NEW.status IN ('approved', 'rejected', 'withdrawn'))
        OR (OLD.status = 'approved' AND NEW.status = 'withdrawn'))
    THEN
        RAISE EXCEPTION 'invalid_status_transition: an approval moves pending → decided → withdrawn only';
    END IF;
    IF NEW.row_version IS DISTINCT FROM OLD.row_version + 1 THEN
        RAISE EXCEPTION 'row_version_required: every change of an approval moves row_version by one';
    END IF;
    RETURN NEW;
END
$$;
CREATE TRIGGER approvals_guarded BEFORE INSERT OR UPDATE OR DELETE ON approvals
    FOR EACH ROW EXECUTE FUNCTION approvals_guard();

-- The actions of a decided approval's outcome, in the order of the type's gate.
CREATE TABLE approval_actions (
    approval_id TEXT NOT NULL REFERENCES approvals (id),
    action_index INTEGER NOT NULL CHECK (action_index >= 0),
    action JSONB NOT NULL CHECK (jsonb_typeof(action) = 'object'),
    status TEXT NOT NULL CHECK (status IN ('pending', 'invoked', 'succeeded', 'failed', 'skipped')),
    invocation_id TEXT REFERENCES skill_invocations (id),
    result JSONB CHECK (result IS NULL OR jsonb_typeof(result) = 'object'),
    error JSONB CHECK (error IS NULL OR jsonb_typeof(error) = 'object'),
    attempts INTEGER NOT NULL DEFAULT 0 CHECK (attempts >= 0),
    row_version INTEGER NOT NULL DEFAULT 1 CHECK (row_version >= 1),
    created_at TIMESTAMPTZ NOT NULL,
    updated_at TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (approval_id, action_index)
);
CREATE FUNCTION approval_actions_guard() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'DELETE' THEN
        RAISE EXCEPTION 'work_immutable: an outcome action is never deleted';
    END IF;
    IF NEW.row_version IS DISTINCT FROM OLD.row_version + 1 OR NEW.action IS DISTINCT FROM OLD.action
        OR OLD.status IN ('succeeded', 'failed', 'skipped')
        OR (OLD.invocation_id IS NOT NULL AND NEW.invocation_id IS DISTINCT FROM OLD.invocation_id)
    THEN
        RAISE EXCEPTION 'row_version_required: an action changes by one row version, keeps its call and stays ended';
    END IF;
    RETURN NEW;
END
$$;
CREATE TRIGGER approval_actions_guarded BEFORE UPDATE OR DELETE ON approval_actions
    FOR EACH ROW EXECUTE FUNCTION approval_actions_guard();

CREATE TABLE task_comments (
    id TEXT PRIMARY KEY,
    task_id TEXT NOT NULL REFERENCES tasks (id),
    author_principal_id TEXT NOT NULL REFERENCES principals (id),
    body TEXT NOT NULL CHECK (length(body) BETWEEN 1 AND 10000),
    created_at TIMESTAMPTZ NOT NULL
);
CREATE INDEX task_comments_task ON task_comments (task_id, created_at, id);
CREATE FUNCTION task_comments_guard() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'work_immutable: a comment never changes and is never deleted';
END
$$;
CREATE TRIGGER task_comments_guarded BEFORE UPDATE OR DELETE ON task_comments
    FOR EACH ROW EXECUTE FUNCTION task_comments_guard();

-- A call names only a task and a run of that task that exist (the same refusal as SQLite's).
CREATE FUNCTION skill_invocations_work() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF (NEW.task_id IS NOT NULL AND NOT EXISTS (SELECT 1 FROM tasks WHERE id = NEW.task_id))
        OR (NEW.run_id IS NOT NULL AND NOT EXISTS (SELECT 1 FROM runs WHERE id = NEW.run_id
            AND task_id IS NOT DISTINCT FROM NEW.task_id))
    THEN
        RAISE EXCEPTION 'unknown_reference: a call names a task and a run of that task that exist';
    END IF;
    RETURN NEW;
END
$$;
CREATE TRIGGER skill_invocations_work BEFORE INSERT ON skill_invocations
    FOR EACH ROW EXECUTE FUNCTION skill_invocations_work();
CREATE INDEX skill_invocations_run ON skill_invocations (run_id) WHERE run_id IS NOT NULL;

-- An assignment may be read-only: it never grants a tool that writes.
ALTER TABLE skill_assignments ADD COLUMN read_only BOOLEAN NOT NULL DEFAULT FALSE;
