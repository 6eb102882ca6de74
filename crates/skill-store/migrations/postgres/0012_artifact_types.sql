-- Artifact types: what an artifact of a type may be (media types, size, the schema of its
-- metadata); a task type's typed outputs name them. A published version never changes.
-- An artifact may supersede the previous head of its type in its task, once.

CREATE TABLE artifact_types (
    id TEXT PRIMARY KEY,
    key TEXT NOT NULL CHECK (length(key) BETWEEN 1 AND 200),
    version TEXT NOT NULL CHECK (length(version) BETWEEN 1 AND 50),
    display_name TEXT NOT NULL DEFAULT '',
    description TEXT NOT NULL DEFAULT '',
    media_types JSONB NOT NULL CHECK (jsonb_typeof(media_types) = 'array' AND jsonb_array_length(media_types) >= 1),
    max_bytes BIGINT NOT NULL CHECK (max_bytes BETWEEN 1 AND 16777216),
    metadata_schema JSONB CHECK (metadata_schema IS NULL OR jsonb_typeof(metadata_schema) = 'object'),
    created_by TEXT REFERENCES principals (id),
    created_at TIMESTAMPTZ NOT NULL,
    UNIQUE (key, version)
);
CREATE INDEX artifact_types_newest ON artifact_types (key, created_at, id);

CREATE FUNCTION artifact_types_guard() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'artifact_type_immutable: a published artifact type version never changes and is never deleted';
END
$$;
CREATE TRIGGER artifact_types_guarded BEFORE UPDATE OR DELETE ON artifact_types
    FOR EACH ROW EXECUTE FUNCTION artifact_types_guard();

ALTER TABLE artifacts ADD COLUMN supersedes_id TEXT REFERENCES artifacts (id);
CREATE UNIQUE INDEX artifacts_superseded_once ON artifacts (supersedes_id) WHERE supersedes_id IS NOT NULL;
CREATE INDEX artifacts_task_type ON artifacts (task_id, type, created_at, id) WHERE task_id IS NOT NULL;
