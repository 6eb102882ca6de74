-- Agents: the principals a package declares. The agent's document (skill_contract::agent::AgentSpec)
-- is kept whole; what it grants lives where every principal's rights live (grants,
-- skill_assignments, principals.executor_allowance), written in the install's transaction.
CREATE TABLE agents (
    key TEXT PRIMARY KEY CHECK (length(key) BETWEEN 1 AND 100),
    principal_id TEXT NOT NULL UNIQUE REFERENCES principals (id),
    kind TEXT NOT NULL CHECK (kind IN ('agent', 'executor')),
    package_key TEXT,
    spec TEXT NOT NULL CHECK (json_type(spec) = 'object'),
    revision INTEGER NOT NULL CHECK (revision >= 1),
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
);

-- An agent's principal is of the agent's kind, and an agent keeps its kind.
CREATE TRIGGER agents_kind BEFORE INSERT ON agents
WHEN NOT EXISTS (SELECT 1 FROM principals p WHERE p.id = NEW.principal_id AND p.kind = NEW.kind)
BEGIN
    SELECT RAISE(ABORT, 'agent_principal_conflict: an agent''s principal is of the agent''s kind');
END;
CREATE TRIGGER agents_keep BEFORE UPDATE ON agents
WHEN NEW.kind IS NOT OLD.kind OR NEW.principal_id IS NOT OLD.principal_id OR NEW.key IS NOT OLD.key
    OR NEW.revision <> OLD.revision + 1
BEGIN
    SELECT RAISE(ABORT, 'agent_principal_conflict: an agent keeps its key, principal and kind, and its revision moves by one');
END;

-- Only a person holds approvals.decide: no agent or executor decides (or withdraws) what a person
-- must decide.
CREATE TRIGGER grants_only_people_decide BEFORE INSERT ON grants
WHEN NEW.permission = 'approvals.decide'
    AND EXISTS (SELECT 1 FROM principals p WHERE p.id = NEW.principal_id AND p.kind <> 'person')
BEGIN
    SELECT RAISE(ABORT, 'decider_not_a_person: only a person holds approvals.decide');
END;

-- A package links only agents that exist (written in the same transaction, before the install).
CREATE TRIGGER package_objects_agent_known BEFORE INSERT ON package_objects
WHEN NEW.kind = 'Agent' AND NOT EXISTS (SELECT 1 FROM agents WHERE key = NEW.object_key)
BEGIN
    SELECT RAISE(ABORT, 'unknown_reference: a package links only agents the core has');
END;
