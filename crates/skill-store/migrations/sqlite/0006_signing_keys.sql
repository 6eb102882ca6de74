-- The keys the core signs audience tokens with (ES256). A key signs until `signs_until` and is
-- published in the JWKS until `published_until`, so tokens it signed still verify after the next
-- key took over. Keys are written once and never change or go away.
CREATE TABLE signing_keys (
    kid TEXT PRIMARY KEY CHECK (length(kid) BETWEEN 1 AND 100),
    algorithm TEXT NOT NULL CHECK (algorithm = 'ES256'),
    private_key TEXT NOT NULL CHECK (length(private_key) > 0),
    public_jwk TEXT NOT NULL CHECK (json_type(public_jwk) = 'object'),
    created_at TEXT NOT NULL,
    signs_until TEXT NOT NULL,
    published_until TEXT NOT NULL,
    CHECK (created_at < signs_until AND signs_until <= published_until)
);
CREATE TRIGGER signing_keys_immutable BEFORE UPDATE ON signing_keys
BEGIN
    SELECT RAISE(ABORT, 'signing_key_immutable: a signing key never changes');
END;
CREATE TRIGGER signing_keys_no_delete BEFORE DELETE ON signing_keys
BEGIN
    SELECT RAISE(ABORT, 'signing_key_immutable: a signing key is never deleted');
END;
