-- Who set each piece of work in motion: its initiators (a JSON array of {person, role, agent?,
-- via}), fixed when the work is made and never changed; and the person who operates an agent's
-- token. The four-eyes rule reads them: a decision is never made by one of its work's initiators.
ALTER TABLE access_tokens ADD COLUMN operated_by TEXT REFERENCES principals (id);
ALTER TABLE tasks ADD COLUMN initiators TEXT NOT NULL DEFAULT '[]' CHECK (json_type(initiators) = 'array');
ALTER TABLE approvals ADD COLUMN initiators TEXT NOT NULL DEFAULT '[]' CHECK (json_type(initiators) = 'array');
ALTER TABLE process_instances ADD COLUMN initiators TEXT NOT NULL DEFAULT '[]'
    CHECK (json_type(initiators) = 'array');
ALTER TABLE facts ADD COLUMN initiators TEXT NOT NULL DEFAULT '[]' CHECK (json_type(initiators) = 'array');
ALTER TABLE agent_requests ADD COLUMN initiators TEXT NOT NULL DEFAULT '[]'
    CHECK (json_type(initiators) = 'array');

CREATE TRIGGER access_tokens_operator_fixed BEFORE UPDATE ON access_tokens
WHEN NEW.operated_by IS NOT OLD.operated_by
BEGIN
    SELECT RAISE(ABORT, 'work_immutable: who operates a token never changes');
END;
CREATE TRIGGER access_tokens_operator_person BEFORE INSERT ON access_tokens
WHEN NEW.operated_by IS NOT NULL
    AND NOT EXISTS (SELECT 1 FROM principals WHERE id = NEW.operated_by AND kind = 'person')
BEGIN
    SELECT RAISE(ABORT, 'unknown_reference: an agent is operated by a person');
END;
CREATE TRIGGER tasks_initiators_fixed BEFORE UPDATE ON tasks
WHEN NEW.initiators IS NOT OLD.initiators
BEGIN
    SELECT RAISE(ABORT, 'work_immutable: who set a task in motion never changes');
END;
CREATE TRIGGER approvals_initiators_fixed BEFORE UPDATE ON approvals
WHEN NEW.initiators IS NOT OLD.initiators
BEGIN
    SELECT RAISE(ABORT, 'work_immutable: who set an approval''s work in motion never changes');
END;
CREATE TRIGGER process_instances_initiators_fixed BEFORE UPDATE ON process_instances
WHEN NEW.initiators IS NOT OLD.initiators
BEGIN
    SELECT RAISE(ABORT, 'work_immutable: who started an instance never changes');
END;
CREATE TRIGGER facts_initiators_fixed BEFORE UPDATE ON facts
WHEN NEW.initiators IS NOT OLD.initiators
BEGIN
    SELECT RAISE(ABORT, 'work_immutable: a fact never changes; it is evaluated once');
END;
CREATE TRIGGER agent_requests_initiators_fixed BEFORE UPDATE ON agent_requests
WHEN NEW.initiators IS NOT OLD.initiators
BEGIN
    SELECT RAISE(ABORT, 'work_immutable: who operates an agent''s request never changes');
END;

-- The decider is none of the persons who set the approval's work in motion.
CREATE TRIGGER approvals_decider_not_initiator BEFORE UPDATE ON approvals
WHEN NEW.decided_by IS NOT NULL AND OLD.decided_by IS NULL
    AND EXISTS (SELECT 1 FROM json_each(NEW.initiators) WHERE json_extract(value, '$.person') = NEW.decided_by)
BEGIN
    SELECT RAISE(ABORT, 'decider_is_initiator: who set the work in motion never decides it');
END;
CREATE TRIGGER approvals_inserted_decider_not_initiator BEFORE INSERT ON approvals
WHEN NEW.decided_by IS NOT NULL
    AND EXISTS (SELECT 1 FROM json_each(NEW.initiators) WHERE json_extract(value, '$.person') = NEW.decided_by)
BEGIN
    SELECT RAISE(ABORT, 'decider_is_initiator: who set the work in motion never decides it');
END;
