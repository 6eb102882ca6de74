-- A disabled principal decides nothing: a decision committed after its decider was disabled is
-- refused by the database, whatever the code read before. The decider's row is share-locked to
-- the decision's commit, so a disabling at the same time waits for the decision (and is
-- journaled after it) or is seen by it.
CREATE FUNCTION approvals_decider_enabled() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    disabled TIMESTAMPTZ;
BEGIN
    IF OLD.status = 'pending' AND NEW.status IN ('approved', 'rejected') THEN
        SELECT p.disabled_at INTO disabled FROM principals p WHERE p.id = NEW.decided_by FOR SHARE;
        IF disabled IS NOT NULL THEN
            RAISE EXCEPTION 'principal_disabled: a disabled principal decides nothing';
        END IF;
    END IF;
    RETURN NEW;
END
$$;
CREATE TRIGGER approvals_decider_enabled BEFORE UPDATE ON approvals
    FOR EACH ROW EXECUTE FUNCTION approvals_decider_enabled();
