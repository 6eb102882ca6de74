-- A disabled principal decides nothing: a decision committed after its decider was disabled is
-- refused by the database, whatever the code read before.
CREATE TRIGGER approvals_decider_enabled BEFORE UPDATE ON approvals
WHEN OLD.status = 'pending' AND NEW.status IN ('approved', 'rejected')
    AND EXISTS (SELECT 1 FROM principals p WHERE p.id = NEW.decided_by AND p.disabled_at IS NOT NULL)
BEGIN
    SELECT RAISE(ABORT, 'principal_disabled: a disabled principal decides nothing');
END;
