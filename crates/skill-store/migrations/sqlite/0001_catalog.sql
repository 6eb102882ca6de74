-- Identity, workspaces, grants, the skill catalog, assignments, package installs and the events
-- journal. Ids are UUID text, times RFC 3339 text, documents JSON text.

CREATE TABLE principals (
    id TEXT PRIMARY KEY,
    kind TEXT NOT NULL CHECK (kind IN ('person', 'agent', 'executor')),
    name TEXT NOT NULL UNIQUE CHECK (length(name) BETWEEN 1 AND 200),
    display_name TEXT NOT NULL DEFAULT '',
    created_at TEXT NOT NULL,
    disabled_at TEXT
);

CREATE TABLE access_tokens (
    id TEXT PRIMARY KEY,
    principal_id TEXT NOT NULL REFERENCES principals (id),
    token_hash TEXT NOT NULL UNIQUE,
    label TEXT NOT NULL DEFAULT '',
    created_at TEXT NOT NULL,
    expires_at TEXT,
    revoked_at TEXT
);
CREATE INDEX access_tokens_principal ON access_tokens (principal_id);

CREATE TABLE workspaces (
    id TEXT PRIMARY KEY,
    key TEXT NOT NULL UNIQUE CHECK (length(key) BETWEEN 1 AND 100),
    name TEXT NOT NULL DEFAULT '',
    created_at TEXT NOT NULL
);

-- A grant with no workspace holds in every workspace (organisation-wide).
CREATE TABLE grants (
    id TEXT PRIMARY KEY,
    principal_id TEXT NOT NULL REFERENCES principals (id),
    workspace_id TEXT REFERENCES workspaces (id),
    permission TEXT NOT NULL CHECK (length(permission) BETWEEN 1 AND 200),
    created_at TEXT NOT NULL
);
CREATE UNIQUE INDEX grants_unique ON grants (principal_id, COALESCE(workspace_id, ''), permission);

CREATE TABLE skills (
    id TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    version TEXT NOT NULL,
    description TEXT NOT NULL DEFAULT '',
    protocol TEXT CHECK (protocol IS NULL OR protocol IN ('mcp', 'http', 'local', 'opencode', 'custom')),
    config TEXT NOT NULL DEFAULT '{}' CHECK (json_type(config) = 'object'),
    input_schema TEXT CHECK (input_schema IS NULL OR json_type(input_schema) = 'object'),
    output_schema TEXT CHECK (output_schema IS NULL OR json_type(output_schema) = 'object'),
    side_effects TEXT CHECK (side_effects IS NULL OR side_effects IN ('none', 'external_read', 'external_write')),
    risk_level TEXT CHECK (risk_level IS NULL OR risk_level IN ('low', 'medium', 'high')),
    contract TEXT CHECK (contract IS NULL OR json_type(contract) = 'object'),
    composition TEXT CHECK (composition IS NULL OR json_type(composition) = 'object'),
    status TEXT NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'deprecated', 'disabled')),
    row_version INTEGER NOT NULL DEFAULT 1 CHECK (row_version >= 1),
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    UNIQUE (name, version),
    -- A leaf has a contract and its policy columns; a composite has a composition and no protocol;
    -- a catalog row has neither and a protocol.
    CHECK (contract IS NULL OR composition IS NULL),
    CHECK (contract IS NULL OR (side_effects IS NOT NULL AND risk_level IS NOT NULL)),
    CHECK (contract IS NULL OR (protocol IN ('http', 'local', 'mcp')
        AND protocol = json_extract(contract, '$.implementation.protocol'))),
    CHECK ((composition IS NULL) = (protocol IS NOT NULL))
);
CREATE INDEX skills_discovery ON skills (status, name, id);

-- A published version never changes, except: the description, the config, the schemas of a row
-- without a contract, the status moving forward, and the contract's implementation.endpoint
-- (still a string). Every change moves row_version by one. Nothing is deleted.
CREATE TRIGGER skills_immutable BEFORE UPDATE ON skills
WHEN NEW.id IS NOT OLD.id OR NEW.name IS NOT OLD.name OR NEW.version IS NOT OLD.version
    OR NEW.protocol IS NOT OLD.protocol OR NEW.side_effects IS NOT OLD.side_effects
    OR NEW.risk_level IS NOT OLD.risk_level OR NEW.composition IS NOT OLD.composition
    OR NEW.created_at IS NOT OLD.created_at
    OR (NEW.contract IS NULL) <> (OLD.contract IS NULL)
    OR (OLD.contract IS NOT NULL AND (
        NEW.input_schema IS NOT OLD.input_schema OR NEW.output_schema IS NOT OLD.output_schema
        OR json_remove(NEW.contract, '$.implementation.endpoint')
            IS NOT json_remove(OLD.contract, '$.implementation.endpoint')
        OR (json_extract(NEW.contract, '$.implementation.endpoint')
                IS NOT json_extract(OLD.contract, '$.implementation.endpoint')
            AND json_type(NEW.contract, '$.implementation.endpoint') IS NOT 'text')))
BEGIN
    SELECT RAISE(ABORT, 'skill_version_immutable: a published skill version cannot change');
END;

CREATE TRIGGER skills_status_forward BEFORE UPDATE OF status ON skills
WHEN NEW.status <> OLD.status AND NOT (
    (OLD.status = 'active' AND NEW.status IN ('deprecated', 'disabled'))
    OR (OLD.status = 'deprecated' AND NEW.status = 'disabled'))
BEGIN
    SELECT RAISE(ABORT, 'invalid_status_transition: a skill status only moves forward');
END;

CREATE TRIGGER skills_row_version BEFORE UPDATE ON skills
WHEN NEW.row_version IS NOT OLD.row_version + 1
BEGIN
    SELECT RAISE(ABORT, 'row_version_required: every change of a skill moves row_version by one');
END;

CREATE TRIGGER skills_no_delete BEFORE DELETE ON skills
BEGIN
    SELECT RAISE(ABORT, 'skill_version_immutable: a published skill version cannot be deleted');
END;

CREATE TABLE skill_assignments (
    principal_id TEXT NOT NULL REFERENCES principals (id),
    skill_id TEXT NOT NULL REFERENCES skills (id),
    metadata TEXT NOT NULL DEFAULT '{}' CHECK (json_type(metadata) = 'object'),
    created_at TEXT NOT NULL,
    PRIMARY KEY (principal_id, skill_id)
);

-- The last install of each package, and the objects it links (skills by name, all versions).
CREATE TABLE package_installs (
    key TEXT PRIMARY KEY,
    version TEXT NOT NULL,
    install_hash TEXT NOT NULL,
    installed_at TEXT NOT NULL,
    installed_by TEXT REFERENCES principals (id)
);

CREATE TABLE package_objects (
    kind TEXT NOT NULL,
    object_key TEXT NOT NULL,
    package_key TEXT NOT NULL REFERENCES package_installs (key),
    PRIMARY KEY (kind, object_key)
);

CREATE TABLE events (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    id TEXT NOT NULL UNIQUE,
    kind TEXT NOT NULL,
    subject TEXT NOT NULL,
    data TEXT NOT NULL CHECK (json_type(data) = 'object'),
    actor_id TEXT,
    request_id TEXT,
    created_at TEXT NOT NULL
);
CREATE INDEX events_subject ON events (subject, seq);

CREATE TRIGGER events_no_update BEFORE UPDATE ON events
BEGIN
    SELECT RAISE(ABORT, 'events_append_only: the events journal is append-only');
END;

CREATE TRIGGER events_no_delete BEFORE DELETE ON events
BEGIN
    SELECT RAISE(ABORT, 'events_append_only: the events journal is append-only');
END;
