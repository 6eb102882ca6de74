-- Console sessions: a personal access token exchanged for a cookie. Only hashes are kept (of the
-- cookie's secret and of the token); a session ends once, at sign-out, and never changes
-- otherwise.

CREATE TABLE console_sessions (
    id TEXT PRIMARY KEY,
    secret_hash TEXT NOT NULL UNIQUE CHECK (length(secret_hash) = 64),
    token_hash TEXT NOT NULL CHECK (length(token_hash) = 64),
    principal_id TEXT NOT NULL REFERENCES principals (id),
    csrf TEXT NOT NULL CHECK (length(csrf) >= 32),
    created_at TIMESTAMPTZ NOT NULL,
    expires_at TIMESTAMPTZ NOT NULL CHECK (expires_at > created_at),
    ended_at TIMESTAMPTZ
);

CREATE FUNCTION console_sessions_guard() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'DELETE' THEN
        RAISE EXCEPTION 'console_session_immutable: a console session is never deleted';
    END IF;
    IF OLD.ended_at IS NOT NULL OR NEW.ended_at IS NULL OR NEW.id IS DISTINCT FROM OLD.id
        OR NEW.secret_hash IS DISTINCT FROM OLD.secret_hash OR NEW.token_hash IS DISTINCT FROM OLD.token_hash
        OR NEW.principal_id IS DISTINCT FROM OLD.principal_id OR NEW.csrf IS DISTINCT FROM OLD.csrf
        OR NEW.created_at IS DISTINCT FROM OLD.created_at OR NEW.expires_at IS DISTINCT FROM OLD.expires_at THEN
        RAISE EXCEPTION 'console_session_immutable: a console session only ends, once';
    END IF;
    RETURN NEW;
END
$$;
CREATE TRIGGER console_sessions_guarded BEFORE UPDATE OR DELETE ON console_sessions
    FOR EACH ROW EXECUTE FUNCTION console_sessions_guard();
