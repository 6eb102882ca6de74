-- The bases bound to what a person decided: each outcome action keeps the version and the inputs
-- its decision fixed; an approval may be requested for one call; a task's execution writes once;
-- an executor principal runs only what the operator allowed it; a closed task says why.

ALTER TABLE approval_actions ADD COLUMN skill_id TEXT REFERENCES skills (id);
ALTER TABLE approval_actions ADD COLUMN inputs TEXT CHECK (inputs IS NULL OR json_type(inputs) = 'object');

DROP TRIGGER approval_actions_guard;
CREATE TRIGGER approval_actions_guard BEFORE UPDATE ON approval_actions
WHEN NEW.row_version IS NOT OLD.row_version + 1 OR NEW.action IS NOT OLD.action
    OR NEW.skill_id IS NOT OLD.skill_id OR NEW.inputs IS NOT OLD.inputs
    OR OLD.status IN ('succeeded', 'failed', 'skipped')
    OR (OLD.invocation_id IS NOT NULL AND NEW.invocation_id IS NOT OLD.invocation_id)
BEGIN
    SELECT RAISE(ABORT, 'row_version_required: an action changes by one row version, keeps its call and what its decision fixed, and stays ended');
END;

-- The one call an approval was requested for: a version and its inputs, both or neither.
ALTER TABLE approvals ADD COLUMN call_skill_id TEXT REFERENCES skills (id);
ALTER TABLE approvals ADD COLUMN call_inputs TEXT CHECK (call_inputs IS NULL OR json_type(call_inputs) = 'object');

CREATE TRIGGER approvals_call_whole BEFORE INSERT ON approvals
WHEN (NEW.call_skill_id IS NULL) <> (NEW.call_inputs IS NULL)
BEGIN
    SELECT RAISE(ABORT, 'work_immutable: an approval requested for a call names its version and its inputs');
END;
DROP TRIGGER approvals_fixed;
CREATE TRIGGER approvals_fixed BEFORE UPDATE ON approvals
WHEN NEW.id IS NOT OLD.id OR NEW.task_id IS NOT OLD.task_id OR NEW.gate IS NOT OLD.gate
    OR NEW.requested_by IS NOT OLD.requested_by OR NEW.request_comment IS NOT OLD.request_comment
    OR NEW.created_at IS NOT OLD.created_at
    OR NEW.call_skill_id IS NOT OLD.call_skill_id OR NEW.call_inputs IS NOT OLD.call_inputs
    OR (OLD.decided_by IS NOT NULL AND (NEW.decided_by IS NOT OLD.decided_by
        OR NEW.decided_at IS NOT OLD.decided_at OR NEW.comment IS NOT OLD.comment
        OR NEW.decision_authority IS NOT OLD.decision_authority))
BEGIN
    SELECT RAISE(ABORT, 'work_immutable: what an approval is, and its decision, never change');
END;

-- Why a task closed when the core closed it (`gate_rejected`, …): set with the close, then fixed.
ALTER TABLE tasks ADD COLUMN close_reason TEXT CHECK (close_reason IS NULL OR length(close_reason) BETWEEN 1 AND 100);
DROP TRIGGER tasks_lifecycle;
CREATE TRIGGER tasks_lifecycle BEFORE UPDATE ON tasks
WHEN OLD.status <> 'open' AND (NEW.status IS NOT OLD.status OR NEW.custom_fields IS NOT OLD.custom_fields
    OR NEW.title IS NOT OLD.title OR NEW.closed_at IS NOT OLD.closed_at OR NEW.close_reason IS NOT OLD.close_reason)
BEGIN
    SELECT RAISE(ABORT, 'invalid_status_transition: a closed task stays as it was closed');
END;
CREATE TRIGGER tasks_close_reason BEFORE UPDATE ON tasks
WHEN NEW.status = 'open' AND NEW.close_reason IS NOT NULL
BEGIN
    SELECT RAISE(ABORT, 'invalid_status_transition: only a closed task has a reason it closed');
END;

-- What an executor principal may run, as the operator set it:
-- {protocols, local, httpOrigins, mcpOrigins, audiences}. None: nothing.
ALTER TABLE principals ADD COLUMN executor_allowance TEXT
    CHECK (executor_allowance IS NULL OR json_type(executor_allowance) = 'object');

-- A task's execution writes at most once, whatever its runs: one execution call per task that
-- an executor may have acted on (a call cancelled before anyone claimed it wrote nothing).
CREATE UNIQUE INDEX skill_invocations_execution_task ON skill_invocations (task_id)
    WHERE json_extract(authorization_basis, '$.kind') = 'execution' AND NOT (status = 'cancelled' AND attempt = 0);

-- The execution basis is the core's alone: only its execution principal makes such a call, in
-- a run of its own.
CREATE TRIGGER skill_invocations_execution_core BEFORE INSERT ON skill_invocations
WHEN json_extract(NEW.authorization_basis, '$.kind') = 'execution' AND NOT EXISTS (
    SELECT 1 FROM principals p JOIN runs r ON r.id = NEW.run_id AND r.owner_principal_id = p.id
    WHERE p.id = NEW.authority_principal_id AND p.name = 'core.execution' AND p.kind = 'executor')
BEGIN
    SELECT RAISE(ABORT, 'basis_not_covered: only the core''s execution principal calls on a task''s execution, in its own run');
END;

-- An approval covers exactly what was decided: a call of its outcome (the version and inputs the
-- decision fixed, with the decider's authority) or the call it was requested for (by its
-- requester).
CREATE TRIGGER skill_invocations_approval_covered BEFORE INSERT ON skill_invocations
WHEN json_extract(NEW.authorization_basis, '$.kind') = 'approval' AND NOT (
    EXISTS (SELECT 1 FROM approval_actions a JOIN approvals p ON p.id = a.approval_id
        WHERE a.approval_id = json_extract(NEW.authorization_basis, '$.approvalId')
        AND a.skill_id = NEW.skill_id AND a.inputs = NEW.inputs AND p.decided_by = NEW.authority_principal_id)
    OR EXISTS (SELECT 1 FROM approvals p WHERE p.id = json_extract(NEW.authorization_basis, '$.approvalId')
        AND p.call_skill_id = NEW.skill_id AND p.call_inputs = NEW.inputs
        AND p.requested_by = NEW.authority_principal_id))
BEGIN
    SELECT RAISE(ABORT, 'basis_not_covered: an approval covers only the calls its outcome names and the call it was requested for');
END;
