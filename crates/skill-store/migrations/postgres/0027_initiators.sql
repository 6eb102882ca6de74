-- Who set each piece of work in motion: its initiators (a JSON array of {person, role, agent?,
-- via}), fixed when the work is made and never changed; and the person who operates an agent's
-- token. The four-eyes rule reads them: a decision is never made by one of its work's initiators.
ALTER TABLE access_tokens ADD COLUMN operated_by TEXT REFERENCES principals (id);
ALTER TABLE tasks ADD COLUMN initiators JSONB NOT NULL DEFAULT '[]' CHECK (jsonb_typeof(initiators) = 'array');
ALTER TABLE approvals ADD COLUMN initiators JSONB NOT NULL DEFAULT '[]'
    CHECK (jsonb_typeof(initiators) = 'array');
ALTER TABLE process_instances ADD COLUMN initiators JSONB NOT NULL DEFAULT '[]'
    CHECK (jsonb_typeof(initiators) = 'array');
ALTER TABLE facts ADD COLUMN initiators JSONB NOT NULL DEFAULT '[]' CHECK (jsonb_typeof(initiators) = 'array');
ALTER TABLE agent_requests ADD COLUMN initiators JSONB NOT NULL DEFAULT '[]'
    CHECK (jsonb_typeof(initiators) = 'array');

CREATE FUNCTION initiators_fixed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.initiators IS DISTINCT FROM OLD.initiators THEN
        RAISE EXCEPTION 'work_immutable: who set % in motion never changes', TG_TABLE_NAME;
    END IF;
    RETURN NEW;
END
$$;
CREATE TRIGGER tasks_initiators_fixed BEFORE UPDATE ON tasks
    FOR EACH ROW EXECUTE FUNCTION initiators_fixed();
CREATE TRIGGER approvals_initiators_fixed BEFORE UPDATE ON approvals
    FOR EACH ROW EXECUTE FUNCTION initiators_fixed();
CREATE TRIGGER process_instances_initiators_fixed BEFORE UPDATE ON process_instances
    FOR EACH ROW EXECUTE FUNCTION initiators_fixed();
CREATE TRIGGER facts_initiators_fixed BEFORE UPDATE ON facts
    FOR EACH ROW EXECUTE FUNCTION initiators_fixed();
CREATE TRIGGER agent_requests_initiators_fixed BEFORE UPDATE ON agent_requests
    FOR EACH ROW EXECUTE FUNCTION initiators_fixed();

CREATE FUNCTION access_tokens_operator() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'UPDATE' AND NEW.operated_by IS DISTINCT FROM OLD.operated_by THEN
        RAISE EXCEPTION 'work_immutable: who operates a token never changes';
    END IF;
    IF TG_OP = 'INSERT' AND NEW.operated_by IS NOT NULL
        AND NOT EXISTS (SELECT 1 FROM principals WHERE id = NEW.operated_by AND kind = 'person')
    THEN
        RAISE EXCEPTION 'unknown_reference: an agent is operated by a person';
    END IF;
    RETURN NEW;
END
$$;
CREATE TRIGGER access_tokens_operator BEFORE INSERT OR UPDATE ON access_tokens
    FOR EACH ROW EXECUTE FUNCTION access_tokens_operator();

-- The decider is none of the persons who set the approval's work in motion.
CREATE FUNCTION approvals_decider_not_initiator() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.decided_by IS NOT NULL AND (TG_OP = 'INSERT' OR OLD.decided_by IS NULL)
        AND EXISTS (SELECT 1 FROM jsonb_array_elements(NEW.initiators) i WHERE i ->> 'person' = NEW.decided_by)
    THEN
        RAISE EXCEPTION 'decider_is_initiator: who set the work in motion never decides it';
    END IF;
    RETURN NEW;
END
$$;
CREATE TRIGGER approvals_decider_not_initiator BEFORE INSERT OR UPDATE ON approvals
    FOR EACH ROW EXECUTE FUNCTION approvals_decider_not_initiator();
