-- Identity, workspaces, grants, the skill catalog, assignments, package installs and the events
-- journal. The same tables as the SQLite migration: ids are UUID text (one encoding for both
-- backends), times timestamptz, documents jsonb.

CREATE TABLE principals (
    id TEXT PRIMARY KEY,
    kind TEXT NOT NULL CHECK (kind IN ('person', 'agent', 'executor')),
    name TEXT NOT NULL UNIQUE CHECK (length(name) BETWEEN 1 AND 200),
    display_name TEXT NOT NULL DEFAULT '',
    created_at TIMESTAMPTZ NOT NULL,
    disabled_at TIMESTAMPTZ
);

CREATE TABLE access_tokens (
    id TEXT PRIMARY KEY,
    principal_id TEXT NOT NULL REFERENCES principals (id),
    token_hash TEXT NOT NULL UNIQUE,
    label TEXT NOT NULL DEFAULT '',
    created_at TIMESTAMPTZ NOT NULL,
    expires_at TIMESTAMPTZ,
    revoked_at TIMESTAMPTZ
);
CREATE INDEX access_tokens_principal ON access_tokens (principal_id);

CREATE TABLE workspaces (
    id TEXT PRIMARY KEY,
    key TEXT NOT NULL UNIQUE CHECK (length(key) BETWEEN 1 AND 100),
    name TEXT NOT NULL DEFAULT '',
    created_at TIMESTAMPTZ NOT NULL
);

-- A grant with no workspace holds in every workspace (organisation-wide).
CREATE TABLE grants (
    id TEXT PRIMARY KEY,
    principal_id TEXT NOT NULL REFERENCES principals (id),
    workspace_id TEXT REFERENCES workspaces (id),
    permission TEXT NOT NULL CHECK (length(permission) BETWEEN 1 AND 200),
    created_at TIMESTAMPTZ NOT NULL
);
CREATE UNIQUE INDEX grants_unique ON grants (principal_id, COALESCE(workspace_id, ''), permission);

CREATE TABLE skills (
    id TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    version TEXT NOT NULL,
    description TEXT NOT NULL DEFAULT '',
    protocol TEXT CHECK (protocol IS NULL OR protocol IN ('mcp', 'http', 'local', 'opencode', 'custom')),
    config JSONB NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(config) = 'object'),
    input_schema JSONB CHECK (input_schema IS NULL OR jsonb_typeof(input_schema) = 'object'),
    output_schema JSONB CHECK (output_schema IS NULL OR jsonb_typeof(output_schema) = 'object'),
    side_effects TEXT CHECK (side_effects IS NULL OR side_effects IN ('none', 'external_read', 'external_write')),
    risk_level TEXT CHECK (risk_level IS NULL OR risk_level IN ('low', 'medium', 'high')),
    contract JSONB CHECK (contract IS NULL OR jsonb_typeof(contract) = 'object'),
    composition JSONB CHECK (composition IS NULL OR jsonb_typeof(composition) = 'object'),
    status TEXT NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'deprecated', 'disabled')),
    row_version INTEGER NOT NULL DEFAULT 1 CHECK (row_version >= 1),
    created_at TIMESTAMPTZ NOT NULL,
    updated_at TIMESTAMPTZ NOT NULL,
    UNIQUE (name, version),
    -- A leaf has a contract and its policy columns; a composite has a composition and no protocol;
    -- a catalog row has neither and a protocol.
    CHECK (contract IS NULL OR composition IS NULL),
    CHECK (contract IS NULL OR (side_effects IS NOT NULL AND risk_level IS NOT NULL)),
    CHECK (contract IS NULL OR (protocol IN ('http', 'local', 'mcp')
        AND protocol = contract #>> '{implementation,protocol}')),
    CHECK ((composition IS NULL) = (protocol IS NOT NULL))
);
CREATE INDEX skills_discovery ON skills (status, name, id);

-- A published version never changes, except: the description, the config, the schemas of a row
-- without a contract, the status moving forward, and the contract's implementation.endpoint
-- (still a string). Every change moves row_version by one. Nothing is deleted.
CREATE FUNCTION skills_guard() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'DELETE' THEN
        RAISE EXCEPTION 'skill_version_immutable: a published skill version cannot be deleted';
    END IF;
    IF NEW.id IS DISTINCT FROM OLD.id OR NEW.name IS DISTINCT FROM OLD.name
        OR NEW.version IS DISTINCT FROM OLD.version OR NEW.protocol IS DISTINCT FROM OLD.protocol
        OR NEW.side_effects IS DISTINCT FROM OLD.side_effects
        OR NEW.risk_level IS DISTINCT FROM OLD.risk_level
        OR NEW.composition IS DISTINCT FROM OLD.composition
        OR NEW.created_at IS DISTINCT FROM OLD.created_at
        OR (NEW.contract IS NULL) <> (OLD.contract IS NULL)
        OR (OLD.contract IS NOT NULL AND (
            NEW.input_schema IS DISTINCT FROM OLD.input_schema
            OR NEW.output_schema IS DISTINCT FROM OLD.output_schema
            OR (NEW.contract #- '{implementation,endpoint}') IS DISTINCT FROM (OLD.contract #- '{implementation,endpoint}')
            OR ((NEW.contract #> '{implementation,endpoint}') IS DISTINCT FROM (OLD.contract #> '{implementation,endpoint}')
                AND jsonb_typeof(NEW.contract #> '{implementation,endpoint}') IS DISTINCT FROM 'string')))
    THEN
        RAISE EXCEPTION 'skill_version_immutable: a published skill version cannot change';
    END IF;
    IF NEW.status <> OLD.status AND NOT (
        (OLD.status = 'active' AND NEW.status IN ('deprecated', 'disabled'))
        OR (OLD.status = 'deprecated' AND NEW.status = 'disabled'))
    THEN
        RAISE EXCEPTION 'invalid_status_transition: a skill status only moves forward';
    END IF;
    IF NEW.row_version IS DISTINCT FROM OLD.row_version + 1 THEN
        RAISE EXCEPTION 'row_version_required: every change of a skill moves row_version by one';
    END IF;
    RETURN NEW;
END
$$;

CREATE TRIGGER skills_immutable BEFORE UPDATE OR DELETE ON skills
    FOR EACH ROW EXECUTE FUNCTION skills_guard();

CREATE TABLE skill_assignments (
    principal_id TEXT NOT NULL REFERENCES principals (id),
    skill_id TEXT NOT NULL REFERENCES skills (id),
    metadata JSONB NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(metadata) = 'object'),
    created_at TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (principal_id, skill_id)
);

-- The last install of each package, and the objects it links (skills by name, all versions).
CREATE TABLE package_installs (
    key TEXT PRIMARY KEY,
    version TEXT NOT NULL,
    install_hash TEXT NOT NULL,
    installed_at TIMESTAMPTZ NOT NULL,
    installed_by TEXT REFERENCES principals (id)
);

CREATE TABLE package_objects (
    kind TEXT NOT NULL,
    object_key TEXT NOT NULL,
    package_key TEXT NOT NULL REFERENCES package_installs (key),
    PRIMARY KEY (kind, object_key)
);

CREATE TABLE events (
    seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    id TEXT NOT NULL UNIQUE,
    kind TEXT NOT NULL,
    subject TEXT NOT NULL,
    data JSONB NOT NULL CHECK (jsonb_typeof(data) = 'object'),
    actor_id TEXT,
    request_id TEXT,
    created_at TIMESTAMPTZ NOT NULL
);
CREATE INDEX events_subject ON events (subject, seq);

CREATE FUNCTION events_guard() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'events_append_only: the events journal is append-only';
END
$$;

CREATE TRIGGER events_append_only BEFORE UPDATE OR DELETE ON events
    FOR EACH ROW EXECUTE FUNCTION events_guard();
