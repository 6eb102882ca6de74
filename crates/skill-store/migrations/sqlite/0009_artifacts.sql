-- Artifacts: immutable documents of a workspace (a task's, a run's), their content kept in a blob
-- store by its SHA-256; a task-bound call's result is one.

CREATE TABLE artifacts (
    id TEXT PRIMARY KEY,
    workspace_id TEXT NOT NULL REFERENCES workspaces (id),
    task_id TEXT REFERENCES tasks (id),
    run_id TEXT REFERENCES runs (id),
    type TEXT NOT NULL CHECK (length(type) BETWEEN 1 AND 200),
    name TEXT NOT NULL CHECK (length(name) BETWEEN 1 AND 500),
    media_type TEXT NOT NULL CHECK (length(media_type) BETWEEN 1 AND 200),
    size_bytes INTEGER NOT NULL CHECK (size_bytes >= 0),
    sha256 TEXT NOT NULL CHECK (length(sha256) = 64),
    metadata TEXT NOT NULL CHECK (json_type(metadata) = 'object'),
    author_principal_id TEXT NOT NULL REFERENCES principals (id),
    skill_invocation_id TEXT REFERENCES skill_invocations (id),
    created_at TEXT NOT NULL
);
CREATE INDEX artifacts_task ON artifacts (task_id, created_at, id) WHERE task_id IS NOT NULL;
CREATE INDEX artifacts_workspace ON artifacts (workspace_id, created_at, id);

CREATE TRIGGER artifacts_no_update BEFORE UPDATE ON artifacts
BEGIN
    SELECT RAISE(ABORT, 'artifact_immutable: an artifact never changes');
END;
CREATE TRIGGER artifacts_no_delete BEFORE DELETE ON artifacts
BEGIN
    SELECT RAISE(ABORT, 'artifact_immutable: an artifact is never deleted');
END;
