-- Facts, work rules and their evaluations, and where a task a rule ensured comes from.
--
-- A fact is what happened in the world: one row per workspace, kind and key, never changed;
-- `evaluated_at` is set once, in the transaction that writes the evaluations of the rules active
-- then, so two cores never evaluate one fact twice.
CREATE TABLE facts (
    id TEXT PRIMARY KEY,
    workspace_id TEXT NOT NULL REFERENCES workspaces (id),
    kind TEXT NOT NULL CHECK (length(kind) BETWEEN 1 AND 128),
    key TEXT NOT NULL CHECK (length(key) BETWEEN 1 AND 200),
    data JSONB NOT NULL,
    occurred_at TIMESTAMPTZ NOT NULL,
    source TEXT CHECK (source IS NULL OR length(source) BETWEEN 1 AND 200),
    depth INTEGER NOT NULL CHECK (depth >= 0),
    caused_by_task TEXT REFERENCES tasks (id),
    recorded_by TEXT NOT NULL REFERENCES principals (id),
    created_at TIMESTAMPTZ NOT NULL,
    evaluated_at TIMESTAMPTZ,
    UNIQUE (workspace_id, kind, key)
);
CREATE INDEX facts_pending ON facts (created_at, id) WHERE evaluated_at IS NULL;
CREATE INDEX facts_workspace ON facts (workspace_id, created_at, id);

CREATE FUNCTION facts_fixed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'DELETE' THEN
        RAISE EXCEPTION 'work_immutable: a fact is never deleted';
    END IF;
    IF OLD.evaluated_at IS NOT NULL OR NEW.evaluated_at IS NULL
        OR NEW.id IS DISTINCT FROM OLD.id OR NEW.workspace_id IS DISTINCT FROM OLD.workspace_id
        OR NEW.kind IS DISTINCT FROM OLD.kind OR NEW.key IS DISTINCT FROM OLD.key OR NEW.data IS DISTINCT FROM OLD.data
        OR NEW.occurred_at IS DISTINCT FROM OLD.occurred_at OR NEW.source IS DISTINCT FROM OLD.source
        OR NEW.depth IS DISTINCT FROM OLD.depth OR NEW.caused_by_task IS DISTINCT FROM OLD.caused_by_task
        OR NEW.recorded_by IS DISTINCT FROM OLD.recorded_by OR NEW.created_at IS DISTINCT FROM OLD.created_at
    THEN
        RAISE EXCEPTION 'work_immutable: a fact never changes; it is evaluated once';
    END IF;
    RETURN NEW;
END
$$;
CREATE TRIGGER facts_fixed BEFORE UPDATE OR DELETE ON facts FOR EACH ROW EXECUTE FUNCTION facts_fixed();

-- A work rule's versions, immutable once published; the agent it acts as, and its
-- interpretation's version, resolved at publication.
CREATE TABLE rules (
    id TEXT PRIMARY KEY,
    key TEXT NOT NULL CHECK (length(key) BETWEEN 1 AND 200),
    version TEXT NOT NULL CHECK (length(version) BETWEEN 1 AND 50),
    kind TEXT NOT NULL CHECK (length(kind) BETWEEN 1 AND 128),
    spec JSONB NOT NULL CHECK (jsonb_typeof(spec) = 'object'),
    agent_principal_id TEXT NOT NULL REFERENCES principals (id),
    interpretation_skill_id TEXT REFERENCES skills (id),
    package_key TEXT,
    published_by TEXT NOT NULL REFERENCES principals (id),
    created_at TIMESTAMPTZ NOT NULL,
    UNIQUE (key, version)
);
CREATE INDEX rules_kind ON rules (kind, key, created_at);

-- A published version never changes; a rule acts as an agent, and interprets with a version
-- that does not write: a rule has no human decision to refer to.
CREATE FUNCTION rules_guard() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP <> 'INSERT' THEN
        RAISE EXCEPTION 'rule_immutable: a published rule version never changes and is never deleted';
    END IF;
    IF NOT EXISTS (SELECT 1 FROM principals p WHERE p.id = NEW.agent_principal_id AND p.kind = 'agent') THEN
        RAISE EXCEPTION 'invalid_rule: a rule acts as an agent';
    END IF;
    IF NEW.interpretation_skill_id IS NOT NULL AND EXISTS (
        SELECT 1 FROM skills s WHERE s.id = NEW.interpretation_skill_id AND s.side_effects = 'external_write')
    THEN
        RAISE EXCEPTION 'rule_skill_side_effects: a rule interprets with a version that does not write';
    END IF;
    RETURN NEW;
END
$$;
CREATE TRIGGER rules_guard BEFORE INSERT OR UPDATE OR DELETE ON rules FOR EACH ROW EXECUTE FUNCTION rules_guard();

-- One rule's evaluation of one fact (skill_api::RuleEvaluationStatus):
-- matched → waiting | done | failed; waiting → done | failed | expired (or waiting again on a new
-- call, when the interpretation is asked for again); not_matched, done, failed and expired are final.
CREATE TABLE rule_evaluations (
    id TEXT PRIMARY KEY,
    fact_id TEXT NOT NULL REFERENCES facts (id),
    rule_id TEXT NOT NULL REFERENCES rules (id),
    status TEXT NOT NULL CHECK (status IN ('matched', 'not_matched', 'waiting', 'done', 'failed', 'expired')),
    invocation_id TEXT UNIQUE REFERENCES skill_invocations (id),
    -- How many times the interpretation was asked for: a call that failed for a reason that may
    -- pass (its executor died) is asked for again, at most three times in all.
    asks INTEGER NOT NULL DEFAULT 1 CHECK (asks BETWEEN 1 AND 3),
    task_ids JSONB NOT NULL CHECK (jsonb_typeof(task_ids) = 'array'),
    artifact_id TEXT REFERENCES artifacts (id),
    error JSONB CHECK (error IS NULL OR jsonb_typeof(error) = 'object'),
    row_version INTEGER NOT NULL CHECK (row_version >= 1),
    created_at TIMESTAMPTZ NOT NULL,
    updated_at TIMESTAMPTZ NOT NULL,
    ended_at TIMESTAMPTZ,
    UNIQUE (fact_id, rule_id),
    CHECK ((status IN ('matched', 'waiting')) = (ended_at IS NULL)),
    CHECK (status <> 'waiting' OR invocation_id IS NOT NULL)
);
CREATE INDEX rule_evaluations_open ON rule_evaluations (created_at, id) WHERE status IN ('matched', 'waiting');

CREATE FUNCTION rule_evaluations_moves() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'DELETE' THEN
        RAISE EXCEPTION 'work_immutable: an evaluation is never deleted';
    END IF;
    IF (NEW.status IS DISTINCT FROM OLD.status AND NOT (
            (OLD.status = 'matched' AND NEW.status IN ('waiting', 'done', 'failed'))
            OR (OLD.status = 'waiting' AND NEW.status IN ('done', 'failed', 'expired'))))
        OR OLD.status IN ('not_matched', 'done', 'failed', 'expired')
        OR NEW.id IS DISTINCT FROM OLD.id OR NEW.fact_id IS DISTINCT FROM OLD.fact_id
        OR NEW.rule_id IS DISTINCT FROM OLD.rule_id OR NEW.created_at IS DISTINCT FROM OLD.created_at
        OR (OLD.invocation_id IS NOT NULL AND NEW.invocation_id IS DISTINCT FROM OLD.invocation_id
            AND NOT (OLD.status = 'waiting' AND NEW.status = 'waiting' AND NEW.asks = OLD.asks + 1))
        OR (NEW.asks <> OLD.asks AND NOT (NEW.asks = OLD.asks + 1 AND NEW.invocation_id IS DISTINCT FROM OLD.invocation_id))
        OR NEW.row_version <> OLD.row_version + 1
    THEN
        RAISE EXCEPTION 'invalid_status_transition: an evaluation moves matched → waiting → ended, asks for its interpretation once, and stays as it ended';
    END IF;
    RETURN NEW;
END
$$;
CREATE TRIGGER rule_evaluations_moves BEFORE UPDATE OR DELETE ON rule_evaluations
    FOR EACH ROW EXECUTE FUNCTION rule_evaluations_moves();

-- Where a task a rule ensured comes from: its work key — one task per workspace and work key,
-- however often the fact, the rule or the core repeats — and the fact and evaluation that made it.
CREATE TABLE task_origins (
    task_id TEXT PRIMARY KEY REFERENCES tasks (id),
    workspace_id TEXT NOT NULL REFERENCES workspaces (id),
    work_key TEXT NOT NULL CHECK (length(work_key) BETWEEN 1 AND 500),
    fact_id TEXT NOT NULL REFERENCES facts (id),
    evaluation_id TEXT NOT NULL REFERENCES rule_evaluations (id),
    created_at TIMESTAMPTZ NOT NULL,
    UNIQUE (workspace_id, work_key)
);
CREATE INDEX task_origins_fact ON task_origins (fact_id);

CREATE FUNCTION task_origins_guard() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP <> 'INSERT' THEN
        RAISE EXCEPTION 'work_immutable: where a task comes from never changes and is never deleted';
    END IF;
    IF NOT EXISTS (SELECT 1 FROM tasks t WHERE t.id = NEW.task_id AND t.workspace_id = NEW.workspace_id) THEN
        RAISE EXCEPTION 'invalid_rule: a rule ensures work in its fact''s workspace';
    END IF;
    RETURN NEW;
END
$$;
CREATE TRIGGER task_origins_guard BEFORE INSERT OR UPDATE OR DELETE ON task_origins
    FOR EACH ROW EXECUTE FUNCTION task_origins_guard();
