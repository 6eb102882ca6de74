-- The bases bound to what a person decided: each outcome action keeps the version and the inputs
-- its decision fixed; an approval may be requested for one call; a task's execution writes once;
-- an executor principal runs only what the operator allowed it; a closed task says why.

ALTER TABLE approval_actions ADD COLUMN skill_id TEXT REFERENCES skills (id);
ALTER TABLE approval_actions ADD COLUMN inputs JSONB CHECK (inputs IS NULL OR jsonb_typeof(inputs) = 'object');

CREATE OR REPLACE FUNCTION approval_actions_guard() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'DELETE' THEN
        RAISE EXCEPTION 'work_immutable: an outcome action is never deleted';
    END IF;
    IF NEW.row_version IS DISTINCT FROM OLD.row_version + 1 OR NEW.action IS DISTINCT FROM OLD.action
        OR NEW.skill_id IS DISTINCT FROM OLD.skill_id OR NEW.inputs IS DISTINCT FROM OLD.inputs
        OR OLD.status IN ('succeeded', 'failed', 'skipped')
        OR (OLD.invocation_id IS NOT NULL AND NEW.invocation_id IS DISTINCT FROM OLD.invocation_id)
    THEN
        RAISE EXCEPTION 'row_version_required: an action changes by one row version, keeps its call and what its decision fixed, and stays ended';
    END IF;
    RETURN NEW;
END
$$;

-- The one call an approval was requested for: a version and its inputs, both or neither.
ALTER TABLE approvals ADD COLUMN call_skill_id TEXT REFERENCES skills (id);
ALTER TABLE approvals ADD COLUMN call_inputs JSONB CHECK (call_inputs IS NULL OR jsonb_typeof(call_inputs) = 'object');
ALTER TABLE approvals ADD CONSTRAINT approvals_call_whole CHECK ((call_skill_id IS NULL) = (call_inputs IS NULL));

CREATE OR REPLACE FUNCTION approvals_guard() RETURNS trigger LANGUAGE plpgsql AS $$
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
        OR NEW.call_skill_id IS DISTINCT FROM OLD.call_skill_id OR NEW.call_inputs IS DISTINCT FROM OLD.call_inputs
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

-- Why a task closed when the core closed it (`gate_rejected`, …): set with the close, then fixed.
ALTER TABLE tasks ADD COLUMN close_reason TEXT CHECK (close_reason IS NULL OR length(close_reason) BETWEEN 1 AND 100);
ALTER TABLE tasks ADD CONSTRAINT tasks_close_reason CHECK (status <> 'open' OR close_reason IS NULL);

CREATE OR REPLACE FUNCTION tasks_guard() RETURNS trigger LANGUAGE plpgsql AS $$
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
        OR NEW.closed_at IS DISTINCT FROM OLD.closed_at OR NEW.close_reason IS DISTINCT FROM OLD.close_reason)
    THEN
        RAISE EXCEPTION 'invalid_status_transition: a closed task stays as it was closed';
    END IF;
    IF NEW.row_version IS DISTINCT FROM OLD.row_version + 1 THEN
        RAISE EXCEPTION 'row_version_required: every change of a task moves row_version by one';
    END IF;
    RETURN NEW;
END
$$;

-- What an executor principal may run, as the operator set it:
-- {protocols, local, httpOrigins, mcpOrigins, audiences}. None: nothing.
ALTER TABLE principals ADD COLUMN executor_allowance JSONB
    CHECK (executor_allowance IS NULL OR jsonb_typeof(executor_allowance) = 'object');

-- A task's execution writes at most once, whatever its runs: one execution call per task that
-- an executor may have acted on (a call cancelled before anyone claimed it wrote nothing).
CREATE UNIQUE INDEX skill_invocations_execution_task ON skill_invocations (task_id)
    WHERE authorization_basis ->> 'kind' = 'execution' AND NOT (status = 'cancelled' AND attempt = 0);

-- The execution basis is the core's alone (only its execution principal makes such a call, in a
-- run of its own); an approval covers exactly what was decided: a call of its outcome (the
-- version and inputs the decision fixed, with the decider's authority) or the call it was
-- requested for (by its requester).
CREATE FUNCTION skill_invocations_basis_covered() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.authorization_basis ->> 'kind' = 'execution' AND NOT EXISTS (
        SELECT 1 FROM principals p JOIN runs r ON r.id = NEW.run_id AND r.owner_principal_id = p.id
        WHERE p.id = NEW.authority_principal_id AND p.name = 'core.execution' AND p.kind = 'executor')
    THEN
        RAISE EXCEPTION 'basis_not_covered: only the core''s execution principal calls on a task''s execution, in its own run';
    END IF;
    IF NEW.authorization_basis ->> 'kind' = 'approval' AND NOT (
        EXISTS (SELECT 1 FROM approval_actions a JOIN approvals p ON p.id = a.approval_id
            WHERE a.approval_id = NEW.authorization_basis ->> 'approvalId'
            AND a.skill_id = NEW.skill_id AND a.inputs = NEW.inputs AND p.decided_by = NEW.authority_principal_id)
        OR EXISTS (SELECT 1 FROM approvals p WHERE p.id = NEW.authorization_basis ->> 'approvalId'
            AND p.call_skill_id = NEW.skill_id AND p.call_inputs = NEW.inputs
            AND p.requested_by = NEW.authority_principal_id))
    THEN
        RAISE EXCEPTION 'basis_not_covered: an approval covers only the calls its outcome names and the call it was requested for';
    END IF;
    RETURN NEW;
END
$$;
CREATE TRIGGER skill_invocations_basis_covered BEFORE INSERT ON skill_invocations
    FOR EACH ROW EXECUTE FUNCTION skill_invocations_basis_covered();
