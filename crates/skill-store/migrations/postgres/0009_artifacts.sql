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
    size_bytes BIGINT NOT NULL CHECK (size_bytes >= 0),
    sha256 TEXT NOT NULL CHECK (length(sha256) = 64),
    metadata JSONB NOT NULL CHECK (jsonb_typeof(metadata) = 'object'),
    author_principal_id TEXT NOT NULL REFERENCES principals (id),
    skill_invocation_id TEXT REFERENCES skill_invocations (id),
    created_at TIMESTAMPTZ NOT NULL
);
CREATE INDEX artifacts_task ON artifacts (task_id, created_at, id) WHERE task_id IS NOT NULL;
CREATE INDEX artifacts_workspace ON artifacts (workspace_id, created_at, id);

CREATE FUNCTION artifacts_guard() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'artifact_immutable: an artifact never changes and is never deleted';
END
$$;
CREATE TRIGGER artifacts_guarded BEFORE UPDATE OR DELETE ON artifacts
    FOR EACH ROW EXECUTE FUNCTION artifacts_guard();
