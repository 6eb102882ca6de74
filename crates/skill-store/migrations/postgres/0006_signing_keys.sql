-- The keys the core signs audience tokens with (ES256). A key signs until `signs_until` and is
-- published in the JWKS until `published_until`, so tokens it signed still verify after the next
-- key took over. Keys are written once and never change or go away.
CREATE TABLE signing_keys (
    kid TEXT PRIMARY KEY CHECK (length(kid) BETWEEN 1 AND 100),
    algorithm TEXT NOT NULL CHECK (algorithm = 'ES256'),
    private_key TEXT NOT NULL CHECK (length(private_key) > 0),
    public_jwk JSONB NOT NULL CHECK (jsonb_typeof(public_jwk) = 'object'),
    created_at TIMESTAMPTZ NOT NULL,
    signs_until TIMESTAMPTZ NOT NULL,
    published_until TIMESTAMPTZ NOT NULL,
    CHECK (created_at < signs_until AND signs_until <= published_until)
);
CREATE FUNCTION signing_keys_guard() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'signing_key_immutable: a signing key never changes or goes away';
END;
$$;
CREATE TRIGGER signing_keys_immutable BEFORE UPDATE OR DELETE ON signing_keys
    FOR EACH ROW EXECUTE FUNCTION signing_keys_guard();
