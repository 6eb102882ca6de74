-- An outcome action that failed for a retryable reason may be retried by a decider: the same
-- version with the same inputs, still bound to its approval. `retries` counts the retries; the
-- call of retry n carries `"retry": n` in its basis, so an approval still covers one call per
-- version and retry, and only as many retries as were asked for.

ALTER TABLE approval_actions ADD COLUMN retries INTEGER NOT NULL DEFAULT 0 CHECK (retries BETWEEN 0 AND 10);

CREATE OR REPLACE FUNCTION approval_actions_guard() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    retried boolean;
BEGIN
    IF TG_OP = 'DELETE' THEN
        RAISE EXCEPTION 'work_immutable: an outcome action is never deleted';
    END IF;
    retried := OLD.status = 'failed' AND NEW.status = 'pending' AND NEW.retries = OLD.retries + 1
        AND NEW.invocation_id IS NULL;
    IF NEW.row_version IS DISTINCT FROM OLD.row_version + 1 OR NEW.action IS DISTINCT FROM OLD.action
        OR NEW.skill_id IS DISTINCT FROM OLD.skill_id OR NEW.inputs IS DISTINCT FROM OLD.inputs
        OR OLD.status IN ('succeeded', 'skipped')
        OR (NOT retried AND (OLD.status = 'failed' OR NEW.retries IS DISTINCT FROM OLD.retries
            OR (OLD.invocation_id IS NOT NULL AND NEW.invocation_id IS DISTINCT FROM OLD.invocation_id)))
    THEN
        RAISE EXCEPTION 'row_version_required: an action changes by one row version, keeps its call and what its decision fixed, and stays ended unless a failed one is retried';
    END IF;
    RETURN NEW;
END
$$;

DROP INDEX skill_invocations_approval;
CREATE UNIQUE INDEX skill_invocations_approval
    ON skill_invocations (skill_id, (authorization_basis ->> 'approvalId'),
                          (COALESCE(authorization_basis ->> 'retry', '0')))
    WHERE authorization_basis ->> 'kind' = 'approval';

CREATE OR REPLACE FUNCTION skill_invocations_basis_covered() RETURNS trigger LANGUAGE plpgsql AS $$
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
            AND a.skill_id = NEW.skill_id AND a.inputs = NEW.inputs AND p.decided_by = NEW.authority_principal_id
            AND COALESCE((NEW.authorization_basis ->> 'retry')::integer, 0) = a.retries)
        OR EXISTS (SELECT 1 FROM approvals p WHERE p.id = NEW.authorization_basis ->> 'approvalId'
            AND p.call_skill_id = NEW.skill_id AND p.call_inputs = NEW.inputs
            AND p.requested_by = NEW.authority_principal_id
            AND NEW.authorization_basis -> 'retry' IS NULL))
    THEN
        RAISE EXCEPTION 'basis_not_covered: an approval covers only the calls its outcome names (and their retries a decider asked for) and the call it was requested for';
    END IF;
    RETURN NEW;
END
$$;

-- A decision is a person's: an agent or an executor never decides an approval, whatever it holds
-- (a retry carries the decision out with the decider's authority, so it follows from this).
CREATE FUNCTION approvals_decided_by_person() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.decided_by IS NOT NULL AND (TG_OP = 'INSERT' OR OLD.decided_by IS NULL)
        AND NOT EXISTS (SELECT 1 FROM principals WHERE id = NEW.decided_by AND kind = 'person')
    THEN
        RAISE EXCEPTION 'decider_not_a_person: a person decides an approval';
    END IF;
    RETURN NEW;
END
$$;
CREATE TRIGGER approvals_decided_by_person BEFORE INSERT OR UPDATE ON approvals
    FOR EACH ROW EXECUTE FUNCTION approvals_decided_by_person();
