-- Knowledge documents: one per (workspace, natural key), replaced by a later one with the same key;
-- their text searchable (a generated tsvector with a GIN index).

CREATE TABLE knowledge_documents (
    workspace_id TEXT NOT NULL REFERENCES workspaces (id),
    natural_key TEXT NOT NULL CHECK (length(natural_key) BETWEEN 1 AND 500),
    title TEXT NOT NULL,
    type TEXT NOT NULL,
    chunks JSONB NOT NULL CHECK (jsonb_typeof(chunks) = 'array'),
    links JSONB NOT NULL CHECK (jsonb_typeof(links) = 'array'),
    meta JSONB CHECK (meta IS NULL OR jsonb_typeof(meta) = 'object'),
    body TEXT NOT NULL,
    search TSVECTOR GENERATED ALWAYS AS (to_tsvector('simple', body)) STORED,
    created_at TIMESTAMPTZ NOT NULL,
    updated_at TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (workspace_id, natural_key)
);
CREATE INDEX knowledge_documents_search ON knowledge_documents USING GIN (search);
