-- The moves of an outcome action and of a decision's outcome, exactly as their lifecycles in the
-- code allow them (skill_api::ActionStatus, skill_api::OutcomeStatus); a conformance case tries
-- every pair against these triggers.

-- pending → invoked | failed; invoked → succeeded | failed | skipped; failed → pending (a retry).
CREATE FUNCTION approval_actions_moves() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.status IS DISTINCT FROM OLD.status AND NOT (
        (OLD.status = 'pending' AND NEW.status IN ('invoked', 'failed'))
        OR (OLD.status = 'invoked' AND NEW.status IN ('succeeded', 'failed', 'skipped'))
        OR (OLD.status = 'failed' AND NEW.status = 'pending'))
    THEN
        RAISE EXCEPTION 'invalid_status_transition: an outcome action moves pending → invoked → ended, and a failed one back to pending when retried';
    END IF;
    RETURN NEW;
END
$$;
CREATE TRIGGER approval_actions_moves BEFORE UPDATE ON approval_actions
    FOR EACH ROW EXECUTE FUNCTION approval_actions_moves();

-- none → running (the decision); running → succeeded | failed | skipped; failed → running (a retry).
CREATE FUNCTION approvals_outcome_moves() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.outcome_status IS DISTINCT FROM OLD.outcome_status AND NOT (
        (OLD.outcome_status IS NULL AND NEW.outcome_status = 'running')
        OR (COALESCE(OLD.outcome_status, '') = 'running' AND COALESCE(NEW.outcome_status, '') IN ('succeeded', 'failed', 'skipped'))
        OR (COALESCE(OLD.outcome_status, '') = 'failed' AND COALESCE(NEW.outcome_status, '') = 'running'))
    THEN
        RAISE EXCEPTION 'invalid_status_transition: an outcome runs, then ends, and runs again only when a failed one is retried';
    END IF;
    RETURN NEW;
END
$$;
CREATE TRIGGER approvals_outcome_moves BEFORE UPDATE ON approvals
    FOR EACH ROW EXECUTE FUNCTION approvals_outcome_moves();

-- A call's basis is one of the kinds the code knows (skill_api::Basis): a row the core could not
-- read back never gets in.
CREATE FUNCTION skill_invocations_basis_kind() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.authorization_basis IS NOT NULL
        AND COALESCE(NEW.authorization_basis ->> 'kind', '') NOT IN ('approval', 'execution')
    THEN
        RAISE EXCEPTION 'basis_unknown: a call''s basis is an approval or an execution';
    END IF;
    RETURN NEW;
END
$$;
CREATE TRIGGER skill_invocations_basis_kind BEFORE INSERT ON skill_invocations
    FOR EACH ROW EXECUTE FUNCTION skill_invocations_basis_kind();
