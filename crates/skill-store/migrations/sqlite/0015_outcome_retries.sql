-- An outcome action that failed for a retryable reason may be retried by a decider: the same
-- version with the same inputs, still bound to its approval. `retries` counts the retries; the
-- call of retry n carries `"retry": n` in its basis, so an approval still covers one call per
-- version and retry, and only as many retries as were asked for.

ALTER TABLE approval_actions ADD COLUMN retries INTEGER NOT NULL DEFAULT 0 CHECK (retries BETWEEN 0 AND 10);

DROP TRIGGER approval_actions_guard;
CREATE TRIGGER approval_actions_guard BEFORE UPDATE ON approval_actions
WHEN NEW.row_version IS NOT OLD.row_version + 1 OR NEW.action IS NOT OLD.action
    OR NEW.skill_id IS NOT OLD.skill_id OR NEW.inputs IS NOT OLD.inputs
    OR OLD.status IN ('succeeded', 'skipped')
    OR (CASE WHEN OLD.status = 'failed' AND NEW.status = 'pending' AND NEW.retries = OLD.retries + 1
                  AND NEW.invocation_id IS NULL
             THEN 0
             ELSE OLD.status = 'failed' OR NEW.retries IS NOT OLD.retries
                  OR (OLD.invocation_id IS NOT NULL AND NEW.invocation_id IS NOT OLD.invocation_id)
        END)
BEGIN
    SELECT RAISE(ABORT, 'row_version_required: an action changes by one row version, keeps its call and what its decision fixed, and stays ended unless a failed one is retried');
END;

DROP INDEX skill_invocations_approval;
CREATE UNIQUE INDEX skill_invocations_approval
    ON skill_invocations (skill_id, json_extract(authorization_basis, '$.approvalId'),
                          COALESCE(json_extract(authorization_basis, '$.retry'), 0))
    WHERE json_extract(authorization_basis, '$.kind') = 'approval';

DROP TRIGGER skill_invocations_approval_covered;
CREATE TRIGGER skill_invocations_approval_covered BEFORE INSERT ON skill_invocations
WHEN json_extract(NEW.authorization_basis, '$.kind') = 'approval' AND NOT (
    EXISTS (SELECT 1 FROM approval_actions a JOIN approvals p ON p.id = a.approval_id
        WHERE a.approval_id = json_extract(NEW.authorization_basis, '$.approvalId')
        AND a.skill_id = NEW.skill_id AND a.inputs = NEW.inputs AND p.decided_by = NEW.authority_principal_id
        AND COALESCE(json_extract(NEW.authorization_basis, '$.retry'), 0) = a.retries)
    OR EXISTS (SELECT 1 FROM approvals p WHERE p.id = json_extract(NEW.authorization_basis, '$.approvalId')
        AND p.call_skill_id = NEW.skill_id AND p.call_inputs = NEW.inputs
        AND p.requested_by = NEW.authority_principal_id
        AND json_extract(NEW.authorization_basis, '$.retry') IS NULL))
BEGIN
    SELECT RAISE(ABORT, 'basis_not_covered: an approval covers only the calls its outcome names (and their retries a decider asked for) and the call it was requested for');
END;

-- A decision is a person's: an agent or an executor never decides an approval, whatever it holds
-- (a retry carries the decision out with the decider's authority, so it follows from this).
CREATE TRIGGER approvals_decided_by_person BEFORE UPDATE ON approvals
WHEN NEW.decided_by IS NOT NULL AND OLD.decided_by IS NULL
    AND NOT EXISTS (SELECT 1 FROM principals WHERE id = NEW.decided_by AND kind = 'person')
BEGIN
    SELECT RAISE(ABORT, 'decider_not_a_person: a person decides an approval');
END;
CREATE TRIGGER approvals_inserted_decided_by_person BEFORE INSERT ON approvals
WHEN NEW.decided_by IS NOT NULL
    AND NOT EXISTS (SELECT 1 FROM principals WHERE id = NEW.decided_by AND kind = 'person')
BEGIN
    SELECT RAISE(ABORT, 'decider_not_a_person: a person decides an approval');
END;
