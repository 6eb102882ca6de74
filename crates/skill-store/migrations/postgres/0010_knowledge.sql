-- Knowledge: snapshots replace one slot (workspace, pack, source, scope) whole; the slot keeps its
-- state (entity id → entity) and state token, and its entities are rows for queries by kind.

CREATE TABLE knowledge_slots (
    workspace_id TEXT NOT NULL REFERENCES workspaces (id),
    pack TEXT NOT NULL CHECK (length(pack) <= 200),
    source TEXT NOT NULL CHECK (length(source) <= 200),
    scope TEXT NOT NULL CHECK (length(scope) <= 200),
    state JSONB NOT NULL CHECK (jsonb_typeof(state) = 'object'),
    state_token TEXT NOT NULL,
    row_version INTEGER NOT NULL CHECK (row_version >= 1),
    created_at TIMESTAMPTZ NOT NULL,
    updated_at TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (workspace_id, pack, source, scope)
);

CREATE TABLE knowledge_entities (
    workspace_id TEXT NOT NULL,
    pack TEXT NOT NULL,
    source TEXT NOT NULL,
    scope TEXT NOT NULL,
    kind TEXT NOT NULL,
    key TEXT NOT NULL,
    entity JSONB NOT NULL,
    PRIMARY KEY (workspace_id, pack, source, scope, kind, key),
    FOREIGN KEY (workspace_id, pack, source, scope) REFERENCES knowledge_slots (workspace_id, pack, source, scope)
);
CREATE INDEX knowledge_entities_kind ON knowledge_entities (workspace_id, kind, key);
