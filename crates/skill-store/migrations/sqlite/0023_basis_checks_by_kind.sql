-- The basis checks of an inserted call look only at calls of their kind: with the kind tested as
-- `… = 'process' AND NOT EXISTS (…)`, a call without a basis (its kind null) had the subquery run
-- anyway. The kind's test is now false for it, so the join is never run.
DROP TRIGGER skill_invocations_process_covered;
CREATE TRIGGER skill_invocations_process_covered BEFORE INSERT ON skill_invocations
WHEN COALESCE(json_extract(NEW.authorization_basis, '$.kind'), '') = 'process' AND NOT EXISTS (
    SELECT 1 FROM process_steps s JOIN process_instances i ON i.id = s.instance_id
        JOIN processes p ON p.id = i.process_id
        JOIN approvals a ON a.id = s.approval_id
        JOIN tasks t ON t.id = a.task_id
        JOIN process_steps d ON d.task_id = t.id AND d.instance_id = i.id
    WHERE s.id = json_extract(NEW.authorization_basis, '$.activityId')
        AND i.id = json_extract(NEW.authorization_basis, '$.instanceId')
        AND s.status = 'open' AND i.status = 'running' AND s.action = 'call'
        AND s.skill_id = NEW.skill_id AND s.inputs = NEW.inputs
        AND p.agent_principal_id = NEW.authority_principal_id
        AND a.id = json_extract(NEW.authorization_basis, '$.approvalId')
        AND a.decided_by = json_extract(NEW.authorization_basis, '$.decidedBy')
        AND a.gate = 1 AND a.status = 'approved' AND a.decided_by <> i.started_by AND a.call_skill_id IS NULL
        AND t.status = 'done' AND d.action = 'task' AND d.status = 'done'
            AND NOT EXISTS (SELECT 1 FROM approvals r WHERE r.task_id = t.id AND r.gate = 1
                AND r.status = 'rejected' AND r.call_skill_id IS NULL))
BEGIN
    SELECT RAISE(ABORT, 'basis_not_covered: a process step covers only the call it opened for, by its instance''s agent, while it is open, on a gate a person other than the starter approved on a task of the instance that closed done');
END;
