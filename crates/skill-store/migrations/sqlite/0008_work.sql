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
    spec TEXT NOT NULL CHECK (json_type(spec) = 'object'),
    execution TEXT CHECK (execution IS NULL OR json_type(execution) = 'object'),
    created_by TEXT REFERENCES principals (id),
    created_at TEXT NOT NULL,
    UNIQUE (key, version)
);

CREATE TRIGGER task_types_no_update BEFORE UPDATE ON task_types
BEGIN
    SELECT RAISE(ABORT, 'task_type_immutable: a published task type version never changes');
END;
CREATE TRIGGER task_types_no_delete BEFORE DELETE ON task_types
BEGIN
    SELECT RAISE(ABORT, 'task_type_immutable: a published task type version is never deleted');
END;

CREATE TABLE tasks (
    id TEXT PRIMARY KEY,
    workspace_id TEXT NOT NULL REFERENCES workspaces (id),
    task_type_id TEXT NOT NULL REFERENCES task_types (id),
    title TEXT NOT NULL CHECK (length(title) BETWEEN 1 AND 500),
    custom_fields TEXT NOT NULL CHECK (json_type(custom_fields) = 'object'),
    status TEXT NOT NULL CHECK (status IN ('open', 'done', 'failed', 'cancelled')),
    created_by TEXT NOT NULL REFERENCES principals (id),
    row_version INTEGER NOT NULL DEFAULT 1 CHECK (row_version >= 1),
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    closed_at TEXT,
    CHECK ((status = 'open') = (closed_at IS NULL))
);
CREATE INDEX tasks_workspace ON tasks (workspace_id, created_at, id);
CREATE INDEX tasks_recent ON tasks (created_at, id);

CREATE TRIGGER tasks_fixed BEFORE UPDATE ON tasks
WHEN NEW.id IS NOT OLD.id OR NEW.workspace_id IS NOT OLD.workspace_id
    OR NEW.task_type_id IS NOT OLD.task_type_id OR NEW.created_by IS NOT OLD.created_by
    OR NEW.created_at IS NOT OLD.created_at
BEGIN
    SELECT RAISE(ABORT, 'work_immutable: what a task is never changes');
END;
CREATE TRIGGER tasks_lifecycle BEFORE UPDATE ON tasks
WHEN OLD.status <> 'open' AND (NEW.status IS NOT OLD.status OR NEW.custom_fields IS NOT OLD.custom_fields
    OR NEW.title IS NOT OLD.title OR NEW.closed_at IS NOT OLD.closed_at)
BEGIN
    SELECT RAISE(ABORT, 'invalid_status_transition: a closed task stays as it was closed');
END;
CREATE TRIGGER tasks_row_version BEFORE UPDATE ON tasks
WHEN NEW.row_version IS NOT OLD.row_version + 1
BEGIN
    SELECT RAISE(ABORT, 'row_version_required: every change of a task moves row_version by one');
END;
CREATE TRIGGER tasks_no_delete BEFORE DELETE ON tasks
BEGIN
    SELECT RAISE(ABORT, 'work_immutable: a task is never deleted');
END;

CREATE TABLE runs (
    id TEXT PRIMARY KEY,
    task_id TEXT NOT NULL REFERENCES tasks (id),
    owner_principal_id TEXT NOT NULL REFERENCES principals (id),
    status TEXT NOT NULL CHECK (status IN ('running', 'succeeded', 'failed', 'cancelled')),
    result TEXT CHECK (result IS NULL OR json_type(result) = 'object'),
    error TEXT CHECK (error IS NULL OR json_type(error) = 'object'),
    row_version INTEGER NOT NULL DEFAULT 1 CHECK (row_version >= 1),
    created_at TEXT NOT NULL,
    ended_at TEXT,
    CHECK ((status = 'running') = (ended_at IS NULL))
);
CREATE INDEX runs_task ON runs (task_id, created_at, id);
-- One running run per owner and task: two starts at once make one run.
CREATE UNIQUE INDEX runs_one_running ON runs (task_id, owner_principal_id) WHERE status = 'running';

CREATE TRIGGER runs_fixed BEFORE UPDATE ON runs
WHEN NEW.id IS NOT OLD.id OR NEW.task_id IS NOT OLD.task_id
    OR NEW.owner_principal_id IS NOT OLD.owner_principal_id OR NEW.created_at IS NOT OLD.created_at
BEGIN
    SELECT RAISE(ABORT, 'work_immutable: what a run is never changes');
END;
CREATE TRIGGER runs_lifecycle BEFORE UPDATE ON runs
WHEN OLD.status <> 'running' AND (NEW.status IS NOT OLD.status OR NEW.result IS NOT OLD.result
    OR NEW.error IS NOT OLD.error OR NEW.ended_at IS NOT OLD.ended_at)
BEGIN
    SELECT RAISE(ABORT, 'invalid_status_transition: an ended run stays as it ended');
END;
CREATE TRIGGER runs_row_version BEFORE UPDATE ON runs
WHEN NEW.row_version IS NOT OLD.row_version + 1
BEGIN
    SELECT RAISE(ABORT, 'row_version_required: every change of a run moves row_version by one');
END;
CREATE TRIGGER runs_no_delete BEFORE DELETE ON runs
BEGIN
    SELECT RAISE(ABORT, 'work_immutable: a run is never deleted');
END;

-- An approval: requested (a gate or not), decided approved or rejected by someone other than
-- its requester (with the decider's authority as it was then), or withdrawn. The outcome of the
-- decision (the actions of the type's gate for that decision) is tracked by outcome_status.
CREATE TABLE approvals (
    id TEXT PRIMARY KEY,
    task_id TEXT NOT NULL REFERENCES tasks (id),
    gate INTEGER NOT NULL CHECK (gate IN (0, 1)),
    status TEXT NOT NULL CHECK (status IN ('pending', 'approved', 'rejected', 'withdrawn')),
    requested_by TEXT NOT NULL REFERENCES principals (id),
    request_comment TEXT NOT NULL DEFAULT '',
    decided_by TEXT REFERENCES principals (id),
    decided_at TEXT,
    comment TEXT NOT NULL DEFAULT '',
    decision_authority TEXT CHECK (decision_authority IS NULL OR json_type(decision_authority) = 'object'),
    withdrawn_by TEXT REFERENCES principals (id),
    withdrawn_at TEXT,
    outcome_status TEXT CHECK (outcome_status IS NULL
        OR outcome_status IN ('running', 'succeeded', 'failed', 'skipped')),
    outcome_reaction TEXT,
    row_version INTEGER NOT NULL DEFAULT 1 CHECK (row_version >= 1),
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    CHECK ((decided_by IS NULL) = (decided_at IS NULL)),
    CHECK ((decided_by IS NULL) = (decision_authority IS NULL)),
    CHECK (status NOT IN ('approved', 'rejected') OR decided_by IS NOT NULL),
    CHECK ((status = 'withdrawn') = (withdrawn_at IS NOT NULL))
);
CREATE INDEX approvals_task ON approvals (task_id, created_at, id);
CREATE INDEX approvals_outcome ON approvals (outcome_status) WHERE outcome_status = 'running';

CREATE TRIGGER approvals_self_decision BEFORE INSERT ON approvals
WHEN NEW.decided_by IS NOT NULL AND NEW.decided_by = NEW.requested_by
BEGIN
    SELECT RAISE(ABORT, 'self_approval_refused: the requester of an approval never decides it');
END;
CREATE TRIGGER approvals_self_decision_update BEFORE UPDATE ON approvals
WHEN NEW.decided_by IS NOT NULL AND NEW.decided_by = NEW.requested_by
BEGIN
    SELECT RAISE(ABORT, 'self_approval_refused: the requester of an approval never decides it');
END;
CREATE TRIGGER approvals_fixed BEFORE UPDATE ON approvals
WHEN NEW.id IS NOT OLD.id OR NEW.task_id IS NOT OLD.task_id OR NEW.gate IS NOT OLD.gate
    OR NEW.requested_by IS NOT OLD.requested_by OR NEW.request_comment IS NOT OLD.request_comment
    OR NEW.created_at IS NOT OLD.created_at
    OR (OLD.decided_by IS NOT NULL AND (NEW.decided_by IS NOT OLD.decided_by
        OR NEW.decided_at IS NOT OLD.decided_at OR NEW.comment IS NOT OLD.comment
        OR NEW.decision_authority IS NOT OLD.decision_authority))
BEGIN
    SELECT RAISE(ABORT, 'work_immutable: what an approval is, and its decision, never change');
END;
-- pending → approved | rejected | withdrawn; approved → withdrawn; nothing else.
CREATE TRIGGER approvals_lifecycle BEFORE UPDATE ON approvals
WHEN NEW.status IS NOT OLD.status AND NOT (
        (OLD.status = 'pending' AND NEW.status IN ('approved', 'rejected', 'withdrawn'))
        OR (OLD.status = 'approved' AND NEW.status = 'withdrawn'))
BEGIN
    SELECT RAISE(ABORT, 'invalid_status_transition: an approval moves pending → decided → withdrawn only');
END;
CREATE TRIGGER approvals_row_version BEFORE UPDATE ON approvals
WHEN NEW.row_version IS NOT OLD.row_version + 1
BEGIN
    SELECT RAISE(ABORT, 'row_version_required: every change of an approval moves row_version by one');
END;
CREATE TRIGGER approvals_no_delete BEFORE DELETE ON approvals
BEGIN
    SELECT RAISE(ABORT, 'work_immutable: an approval is never deleted');
END;

-- The actions of a decided approval's outcome, in the order of the type's gate.
CREATE TABLE approval_actions (
    approval_id TEXT NOT NULL REFERENCES approvals (id),
    action_index INTEGER NOT NULL CHECK (action_index >= 0),
    action TEXT NOT NULL CHECK (json_type(action) = 'object'),
    status TEXT NOT NULL CHECK (status IN ('pending', 'invoked', 'succeeded', 'failed', 'skipped')),
    invocation_id TEXT REFERENCES skill_invocations (id),
    result TEXT CHECK (result IS NULL OR json_type(result) = 'object'),
    error TEXT CHECK (error IS NULL OR json_type(error) = 'object'),
    attempts INTEGER NOT NULL DEFAULT 0 CHECK (attempts >= 0),
    row_version INTEGER NOT NULL DEFAULT 1 CHECK (row_version >= 1),
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    PRIMARY KEY (approval_id, action_index)
);
CREATE TRIGGER approval_actions_guard BEFORE UPDATE ON approval_actions
WHEN NEW.row_version IS NOT OLD.row_version + 1 OR NEW.action IS NOT OLD.action
    OR OLD.status IN ('succeeded', 'failed', 'skipped')
    OR (OLD.invocation_id IS NOT NULL AND NEW.invocation_id IS NOT OLD.invocation_id)
BEGIN
    SELECT RAISE(ABORT, 'row_version_required: an action changes by one row version, keeps its call and stays ended');
END;
CREATE TRIGGER approval_actions_no_delete BEFORE DELETE ON approval_actions
BEGIN
    SELECT RAISE(ABORT, 'work_immutable: an outcome action is never deleted');
END;

CREATE TABLE task_comments (
    id TEXT PRIMARY KEY,
    task_id TEXT NOT NULL REFERENCES tasks (id),
    author_principal_id TEXT NOT NULL REFERENCES principals (id),
    body TEXT NOT NULL CHECK (length(body) BETWEEN 1 AND 10000),
    created_at TEXT NOT NULL
);
CREATE INDEX task_comments_task ON task_comments (task_id, created_at, id);
CREATE TRIGGER task_comments_no_update BEFORE UPDATE ON task_comments
BEGIN
    SELECT RAISE(ABORT, 'work_immutable: a comment never changes');
END;
CREATE TRIGGER task_comments_no_delete BEFORE DELETE ON task_comments
BEGIN
    SELECT RAISE(ABORT, 'work_immutable: a comment is never deleted');
END;

-- A call names only a task and a run that exist, and the run is of that task.
CREATE TRIGGER skill_invocations_work BEFORE INSERT ON skill_invocations
WHEN (NEW.task_id IS NOT NULL AND NOT EXISTS (SELECT 1 FROM tasks WHERE id = NEW.task_id))
    OR (NEW.run_id IS NOT NULL AND NOT EXISTS (SELECT 1 FROM runs WHERE id = NEW.run_id
        AND task_id IS NEW.task_id))
BEGIN
    SELECT RAISE(ABORT, 'unknown_reference: a call names a task and a run of that task that exist');
END;
CREATE INDEX skill_invocations_run ON skill_invocations (run_id) WHERE run_id IS NOT NULL;

-- An assignment may be read-only: it never grants a tool that writes.
ALTER TABLE skill_assignments ADD COLUMN read_only INTEGER NOT NULL DEFAULT 0 CHECK (read_only IN (0, 1));
