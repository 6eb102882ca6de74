-- A process writes only what a person decided: a call step on the process basis fixes, on its
-- row, the approval it stands on — an approved gate of a task an earlier task step of the same
-- instance waited for, closed done, decided by someone other than whoever started the instance
-- (a gate asked for no single call: one that was is a decision on that call alone).
ALTER TABLE process_steps ADD COLUMN approval_id TEXT REFERENCES approvals (id);

CREATE OR REPLACE FUNCTION process_steps_moves() RETURNS trigger LANGUAGE plpgsql AS $$
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
        OR NEW.approval_id IS DISTINCT FROM OLD.approval_id
        OR (OLD.invocation_id IS NOT NULL AND NEW.invocation_id IS DISTINCT FROM OLD.invocation_id)
        OR (OLD.task_id IS NOT NULL AND NEW.task_id IS DISTINCT FROM OLD.task_id)
        OR NEW.row_version <> OLD.row_version + 1
    THEN
        RAISE EXCEPTION 'invalid_status_transition: a step moves while open, names its call, task and decision once, and stays as it ended';
    END IF;
    RETURN NEW;
END
$$;

CREATE OR REPLACE FUNCTION skill_invocations_process_covered() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.authorization_basis ->> 'kind' = 'process' AND NOT EXISTS (
        SELECT 1 FROM process_steps s JOIN process_instances i ON i.id = s.instance_id
            JOIN processes p ON p.id = i.process_id
            JOIN approvals a ON a.id = s.approval_id
            JOIN tasks t ON t.id = a.task_id
            JOIN process_steps d ON d.task_id = t.id AND d.instance_id = i.id
        WHERE s.id = NEW.authorization_basis ->> 'activityId'
            AND i.id = NEW.authorization_basis ->> 'instanceId'
            AND s.status = 'open' AND i.status = 'running' AND s.action = 'call'
            AND s.skill_id = NEW.skill_id AND s.inputs = NEW.inputs
            AND p.agent_principal_id = NEW.authority_principal_id
            AND a.id = NEW.authorization_basis ->> 'approvalId'
            AND a.decided_by = NEW.authorization_basis ->> 'decidedBy'
            AND a.gate AND a.status = 'approved' AND a.decided_by <> i.started_by AND a.call_skill_id IS NULL
            AND t.status = 'done' AND d.action = 'task' AND d.status = 'done'
            AND NOT EXISTS (SELECT 1 FROM approvals r WHERE r.task_id = t.id AND r.gate
                AND r.status = 'rejected' AND r.call_skill_id IS NULL))
    THEN
        RAISE EXCEPTION 'basis_not_covered: a process step covers only the call it opened for, by its instance''s agent, while it is open, on a gate a person other than the starter approved on a task of the instance that closed done';
    END IF;
    RETURN NEW;
END
$$;

-- A decision covers one write: the step run that fixed it, and that run's retries.
CREATE UNIQUE INDEX process_steps_decision ON process_steps (approval_id, attempt) WHERE approval_id IS NOT NULL;

-- A decision is taken on an open task only, whatever the code read before: the task's row is
-- read under a share lock, so a close committing at the same time is seen or waits.
CREATE FUNCTION approvals_decided_on_open_task() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF OLD.status = 'pending' AND NEW.status IN ('approved', 'rejected') THEN
        PERFORM 1 FROM tasks t WHERE t.id = NEW.task_id AND t.status = 'open' FOR SHARE;
        IF NOT FOUND THEN
            RAISE EXCEPTION 'task_terminal: a closed task takes no decision';
        END IF;
    END IF;
    RETURN NEW;
END
$$;
CREATE TRIGGER approvals_decided_on_open_task BEFORE UPDATE ON approvals
    FOR EACH ROW EXECUTE FUNCTION approvals_decided_on_open_task();
