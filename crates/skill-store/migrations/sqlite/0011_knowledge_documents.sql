-- Knowledge documents: one per (workspace, natural key), replaced by a later one with the same key;
-- their text searchable (FTS5, kept in step by triggers).

CREATE TABLE knowledge_documents (
    workspace_id TEXT NOT NULL REFERENCES workspaces (id),
    natural_key TEXT NOT NULL CHECK (length(natural_key) BETWEEN 1 AND 500),
    title TEXT NOT NULL,
    type TEXT NOT NULL,
    chunks TEXT NOT NULL CHECK (json_type(chunks) = 'array'),
    links TEXT NOT NULL CHECK (json_type(links) = 'array'),
    meta TEXT CHECK (meta IS NULL OR json_type(meta) = 'object'),
    body TEXT NOT NULL,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    PRIMARY KEY (workspace_id, natural_key)
);

CREATE VIRTUAL TABLE knowledge_documents_text USING fts5(workspace_id UNINDEXED, natural_key UNINDEXED, body);

CREATE TRIGGER knowledge_documents_indexed AFTER INSERT ON knowledge_documents
BEGIN
    INSERT INTO knowledge_documents_text (workspace_id, natural_key, body)
    VALUES (NEW.workspace_id, NEW.natural_key, NEW.body);
END;
CREATE TRIGGER knowledge_documents_reindexed AFTER UPDATE ON knowledge_documents
BEGIN
    DELETE FROM knowledge_documents_text WHERE workspace_id = OLD.workspace_id AND natural_key = OLD.natural_key;
    INSERT INTO knowledge_documents_text (workspace_id, natural_key, body)
    VALUES (NEW.workspace_id, NEW.natural_key, NEW.body);
END;
