-- The answers of writes sent with an Idempotency-Key header: a repeat of the same request by the
-- same principal gets the stored answer instead of acting again. A pending record lives a minute,
-- a finished one a day.
CREATE TABLE http_idempotency (
    key TEXT PRIMARY KEY CHECK (length(key) BETWEEN 1 AND 200),
    principal_id TEXT NOT NULL,
    fingerprint TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('pending', 'done')),
    response_status INTEGER CHECK (response_status IS NULL OR response_status BETWEEN 100 AND 599),
    response_headers JSONB CHECK (response_headers IS NULL OR jsonb_typeof(response_headers) = 'object'),
    response_body BYTEA,
    created_at TIMESTAMPTZ NOT NULL,
    expires_at TIMESTAMPTZ NOT NULL,
    CHECK ((status = 'done') = (response_status IS NOT NULL))
);
CREATE INDEX http_idempotency_expiry ON http_idempotency (expires_at);
