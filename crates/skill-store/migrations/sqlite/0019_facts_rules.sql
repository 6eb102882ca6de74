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
    data TEXT NOT NULL CHECK (json_valid(data)),
    occurred_at TEXT NOT NULL,
    source TEXT CHECK (source IS NULL OR length(source) BETWEEN 1 AND 200),
    depth INTEGER NOT NULL CHECK (depth >= 0),
    caused_by_task TEXT REFERENCES tasks (id),
    recorded_by TEXT NOT NULL REFERENCES principals (id),
    created_at TEXT NOT NULL,
    evaluated_at TEXT,
    UNIQUE (workspace_id, kind, key)
);
CREATE INDEX facts_pending ON facts (created_at, id) WHERE evaluated_at IS NULL;
CREATE INDEX facts_workspace ON facts (workspace_id, created_at, id);

CREATE TRIGGER facts_fixed BEFORE UPDATE ON facts
WHEN OLD.evaluated_at IS NOT NULL OR NEW.evaluated_at IS NULL
    OR NEW.id IS NOT OLD.id OR NEW.workspace_id IS NOT OLD.workspace_id OR NEW.kind IS NOT OLD.kind
    OR NEW.key IS NOT OLD.key OR NEW.data IS NOT OLD.data OR NEW.occurred_at IS NOT OLD.occurred_at
    OR NEW.source IS NOT OLD.source OR NEW.depth IS NOT OLD.depth OR NEW.caused_by_task IS NOT OLD.caused_by_task
    OR NEW.recorded_by IS NOT OLD.recorded_by OR NEW.created_at IS NOT OLD.created_at
BEGIN
    SELECT RAISE(ABORT, 'work_immutable: a fact never changes; it is evaluated once');
END;
CREATE TRIGGER facts_no_delete BEFORE DELETE ON facts
BEGIN
    SELECT RAISE(ABORT, 'work_immutable: a fact is never deleted');
END;

-- A work rule's versions, immutable once published; the agent it acts as, and its
-- interpretation's version, resolved at publication.
CREATE TABLE rules (
    id TEXT PRIMARY KEY,
    key TEXT NOT NULL CHECK (length(key) BETWEEN 1 AND 200),
    version TEXT NOT NULL CHECK (length(version) BETWEEN 1 AND 50),
    kind TEXT NOT NULL CHECK (length(kind) BETWEEN 1 AND 128),
    spec TEXT NOT NULL CHECK (json_type(spec) = 'object'),
    agent_principal_id TEXT NOT NULL REFERENCES principals (id),
    interpretation_skill_id TEXT REFERENCES skills (id),
    package_key TEXT,
    published_by TEXT NOT NULL REFERENCES principals (id),
    created_at TEXT NOT NULL,
    UNIQUE (key, version)
);
CREATE INDEX rules_kind ON rules (kind, key, created_at);

CREATE TRIGGER rules_no_update BEFORE UPDATE ON rules
BEGIN
    SELECT RAISE(ABORT, 'rule_immutable: a published rule version never changes');
END;
CREATE TRIGGER rules_no_delete BEFORE DELETE ON rules
BEGIN
    SELECT RAISE(ABORT, 'rule_immutable: a published rule version is never deleted');
END;
-- A rule acts as an agent, and interprets with a version that does not write: a rule has no
-- human decision to refer to.
CREATE TRIGGER rules_agent BEFORE INSERT ON rules
WHEN NOT EXISTS (SELECT 1 FROM principals p WHERE p.id = NEW.agent_principal_id AND p.kind = 'agent')
BEGIN
    SELECT RAISE(ABORT, 'invalid_rule: a rule acts as an agent');
END;
CREATE TRIGGER rules_interpretation_reads BEFORE INSERT ON rules
WHEN NEW.interpretation_skill_id IS NOT NULL AND EXISTS (
    SELECT 1 FROM skills s WHERE s.id = NEW.interpretation_skill_id AND s.side_effects = 'external_write')
BEGIN
    SELECT RAISE(ABORT, 'rule_skill_side_effects: a rule interprets with a version that does not write');
END;

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
    task_ids TEXT NOT NULL CHECK (json_type(task_ids) = 'array'),
    artifact_id TEXT REFERENCES artifacts (id),
    error TEXT CHECK (error IS NULL OR json_type(error) = 'object'),
    row_version INTEGER NOT NULL CHECK (row_version >= 1),
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    ended_at TEXT,
    UNIQUE (fact_id, rule_id),
    CHECK ((status IN ('matched', 'waiting')) = (ended_at IS NULL)),
    CHECK (status <> 'waiting' OR invocation_id IS NOT NULL)
);
CREATE INDEX rule_evaluations_open ON rule_evaluations (created_at, id) WHERE status IN ('matched', 'waiting');

CREATE TRIGGER rule_evaluations_moves BEFORE UPDATE ON rule_evaluations
WHEN (NEW.status IS NOT OLD.status AND NOT (
        (OLD.status = 'matched' AND NEW.status IN ('waiting', 'done', 'failed'))
        OR (OLD.status = 'waiting' AND NEW.status IN ('done', 'failed', 'expired'))))
    OR OLD.status IN ('not_matched', 'done', 'failed', 'expired')
    OR NEW.id IS NOT OLD.id OR NEW.fact_id IS NOT OLD.fact_id OR NEW.rule_id IS NOT OLD.rule_id
    OR NEW.created_at IS NOT OLD.created_at
    OR (OLD.invocation_id IS NOT NULL AND NEW.invocation_id IS NOT OLD.invocation_id
        AND NOT (OLD.status = 'waiting' AND NEW.status = 'waiting' AND NEW.asks = OLD.asks + 1))
    OR (NEW.asks <> OLD.asks AND NOT (NEW.asks = OLD.asks + 1 AND NEW.invocation_id IS NOT OLD.invocation_id))
    OR NEW.row_version <> OLD.row_version + 1
BEGIN
    SELECT RAISE(ABORT, 'invalid_status_transition: an evaluation moves matched → waiting → ended, asks for its interpretation once, and stays as it ended');
END;
CREATE TRIGGER rule_evaluations_no_delete BEFORE DELETE ON rule_evaluations
BEGIN
    SELECT RAISE(ABORT, 'work_immutable: an evaluation is never deleted');
END;

-- Where a task a rule ensured comes from: its work key — one task per workspace and work key,
-- however often the fact, the rule or the core repeats — and the fact and evaluation that made it.
CREATE TABLE task_origins (
    task_id TEXT PRIMARY KEY REFERENCES tasks (id),
    workspace_id TEXT NOT NULL REFERENCES workspaces (id),
    work_key TEXT NOT NULL CHECK (length(work_key) BETWEEN 1 AND 500),
    fact_id TEXT NOT NULL REFERENCES facts (id),
    evaluation_id TEXT NOT NULL REFERENCES rule_evaluations (id),
    created_at TEXT NOT NULL,
    UNIQUE (workspace_id, work_key)
);
CREATE INDEX task_origins_fact ON task_origins (fact_id);

CREATE TRIGGER task_origins_fixed BEFORE UPDATE ON task_origins
BEGIN
    SELECT RAISE(ABORT, 'work_immutable: where a task comes from never changes');
END;
CREATE TRIGGER task_origins_no_delete BEFORE DELETE ON task_origins
BEGIN
    SELECT RAISE(ABORT, 'work_immutable: where a task comes from is never deleted');
END;
CREATE TRIGGER task_origins_workspace BEFORE INSERT ON task_origins
WHEN NOT EXISTS (SELECT 1 FROM tasks t WHERE t.id = NEW.task_id AND t.workspace_id = NEW.workspace_id)
BEGIN
    SELECT RAISE(ABORT, 'invalid_rule: a rule ensures work in its fact''s workspace');
END;
