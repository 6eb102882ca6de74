-- A package's settings: the schema its last install declared (a new schema moves its revision),
-- and the values an operator set (each change moves their revision). Every call of the
-- package's skills receives them.
CREATE TABLE package_settings (
    package_key TEXT PRIMARY KEY REFERENCES package_installs (key),
    schema JSONB NOT NULL CHECK (jsonb_typeof(schema) = 'object'),
    schema_revision INTEGER NOT NULL DEFAULT 1 CHECK (schema_revision >= 1),
    "values" JSONB NOT NULL DEFAULT '{}' CHECK (jsonb_typeof("values") = 'object'),
    values_revision INTEGER NOT NULL DEFAULT 0 CHECK (values_revision >= 0),
    updated_at TIMESTAMPTZ NOT NULL,
    updated_by TEXT
);
