-- Console sessions: a personal access token exchanged for a cookie. Only hashes are kept (of the
-- cookie's secret and of the token); a session ends once, at sign-out, and never changes
-- otherwise.

CREATE TABLE console_sessions (
    id TEXT PRIMARY KEY,
    secret_hash TEXT NOT NULL UNIQUE CHECK (length(secret_hash) = 64),
    token_hash TEXT NOT NULL CHECK (length(token_hash) = 64),
    principal_id TEXT NOT NULL REFERENCES principals (id),
    csrf TEXT NOT NULL CHECK (length(csrf) >= 32),
    created_at TEXT NOT NULL,
    expires_at TEXT NOT NULL CHECK (expires_at > created_at),
    ended_at TEXT
);

CREATE TRIGGER console_sessions_end_only BEFORE UPDATE ON console_sessions
WHEN OLD.ended_at IS NOT NULL OR NEW.ended_at IS NULL OR NEW.id IS NOT OLD.id
    OR NEW.secret_hash IS NOT OLD.secret_hash OR NEW.token_hash IS NOT OLD.token_hash
    OR NEW.principal_id IS NOT OLD.principal_id OR NEW.csrf IS NOT OLD.csrf
    OR NEW.created_at IS NOT OLD.created_at OR NEW.expires_at IS NOT OLD.expires_at
BEGIN
    SELECT RAISE(ABORT, 'console_session_immutable: a console session only ends, once');
END;
CREATE TRIGGER console_sessions_no_delete BEFORE DELETE ON console_sessions
BEGIN
    SELECT RAISE(ABORT, 'console_session_immutable: a console session is never deleted');
END;
