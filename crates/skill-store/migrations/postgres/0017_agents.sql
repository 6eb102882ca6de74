-- Agents: the principals a package declares. The agent's document (skill_contract::agent::AgentSpec)
-- is kept whole; what it grants lives where every principal's rights live (grants,
-- skill_assignments, principals.executor_allowance), written in the install's transaction.
CREATE TABLE agents (
    key TEXT PRIMARY KEY CHECK (length(key) BETWEEN 1 AND 100),
    principal_id TEXT NOT NULL UNIQUE REFERENCES principals (id),
    kind TEXT NOT NULL CHECK (kind IN ('agent', 'executor')),
    package_key TEXT,
    spec JSONB NOT NULL CHECK (jsonb_typeof(spec) = 'object'),
    revision INTEGER NOT NULL CHECK (revision >= 1),
    created_at TIMESTAMPTZ NOT NULL,
    updated_at TIMESTAMPTZ NOT NULL
);

-- An agent's principal is of the agent's kind, and an agent keeps its kind.
CREATE FUNCTION agents_guard() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' AND NOT EXISTS (SELECT 1 FROM principals p WHERE p.id = NEW.principal_id AND p.kind = NEW.kind) THEN
        RAISE EXCEPTION 'agent_principal_conflict: an agent''s principal is of the agent''s kind';
    END IF;
    IF TG_OP = 'UPDATE' AND (NEW.kind IS DISTINCT FROM OLD.kind OR NEW.principal_id IS DISTINCT FROM OLD.principal_id
        OR NEW.key IS DISTINCT FROM OLD.key OR NEW.revision <> OLD.revision + 1)
    THEN
        RAISE EXCEPTION 'agent_principal_conflict: an agent keeps its key, principal and kind, and its revision moves by one';
    END IF;
    RETURN NEW;
END
$$;
CREATE TRIGGER agents_guard BEFORE INSERT OR UPDATE ON agents
    FOR EACH ROW EXECUTE FUNCTION agents_guard();

-- Only a person holds approvals.decide: no agent or executor decides (or withdraws) what a person
-- must decide.
CREATE FUNCTION grants_only_people_decide() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.permission = 'approvals.decide'
        AND EXISTS (SELECT 1 FROM principals p WHERE p.id = NEW.principal_id AND p.kind <> 'person')
    THEN
        RAISE EXCEPTION 'decider_not_a_person: only a person holds approvals.decide';
    END IF;
    RETURN NEW;
END
$$;
CREATE TRIGGER grants_only_people_decide BEFORE INSERT ON grants
    FOR EACH ROW EXECUTE FUNCTION grants_only_people_decide();

-- A package links only agents that exist (written in the same transaction, before the install).
CREATE FUNCTION package_objects_agent_known() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.kind = 'Agent' AND NOT EXISTS (SELECT 1 FROM agents WHERE key = NEW.object_key) THEN
        RAISE EXCEPTION 'unknown_reference: a package links only agents the core has';
    END IF;
    RETURN NEW;
END
$$;
CREATE TRIGGER package_objects_agent_known BEFORE INSERT ON package_objects
    FOR EACH ROW EXECUTE FUNCTION package_objects_agent_known();
