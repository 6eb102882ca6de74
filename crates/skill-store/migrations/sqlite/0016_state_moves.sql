-- The moves of an outcome action and of a decision's outcome, exactly as their lifecycles in the
-- code allow them (skill_api::ActionStatus, skill_api::OutcomeStatus); a conformance case tries
-- every pair against these triggers.

-- pending → invoked | failed; invoked → succeeded | failed | skipped; failed → pending (a retry).
CREATE TRIGGER approval_actions_moves BEFORE UPDATE ON approval_actions
WHEN NEW.status IS NOT OLD.status AND NOT (
    (OLD.status = 'pending' AND NEW.status IN ('invoked', 'failed'))
    OR (OLD.status = 'invoked' AND NEW.status IN ('succeeded', 'failed', 'skipped'))
    OR (OLD.status = 'failed' AND NEW.status = 'pending'))
BEGIN
    SELECT RAISE(ABORT, 'invalid_status_transition: an outcome action moves pending → invoked → ended, and a failed one back to pending when retried');
END;

-- none → running (the decision); running → succeeded | failed | skipped; failed → running (a retry).
CREATE TRIGGER approvals_outcome_moves BEFORE UPDATE ON approvals
WHEN NEW.outcome_status IS NOT OLD.outcome_status AND NOT (
    (OLD.outcome_status IS NULL AND NEW.outcome_status = 'running')
    OR (COALESCE(OLD.outcome_status, '') = 'running' AND COALESCE(NEW.outcome_status, '') IN ('succeeded', 'failed', 'skipped'))
    OR (COALESCE(OLD.outcome_status, '') = 'failed' AND COALESCE(NEW.outcome_status, '') = 'running'))
BEGIN
    SELECT RAISE(ABORT, 'invalid_status_transition: an outcome runs, then ends, and runs again only when a failed one is retried');
END;

-- A call's basis is one of the kinds the code knows (skill_api::Basis): a row the core could not
-- read back never gets in.
CREATE TRIGGER skill_invocations_basis_kind BEFORE INSERT ON skill_invocations
WHEN NEW.authorization_basis IS NOT NULL
    AND COALESCE(json_extract(NEW.authorization_basis, '$.kind'), '') NOT IN ('approval', 'execution')
BEGIN
    SELECT RAISE(ABORT, 'basis_unknown: a call''s basis is an approval or an execution');
END;
