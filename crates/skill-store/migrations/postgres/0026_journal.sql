-- The tamper-evident journal (docs/journal.md). Every event is a leaf of an RFC 6962 Merkle tree,
-- appended in the transaction that writes the event: its entry (the canonical JSON the leaf
-- hashes) and the salt of its payload's digest are written with it; when the transaction
-- commits, a deferred trigger takes the head's row (the append lock, held for the commit only, so
-- no transaction waits for it while holding another), gives each of its events the next index
-- and writes the hashes of the complete subtrees it completes. Signed checkpoints of the tree and
-- where each was sent are kept beside it. Nothing here is ever changed or deleted, except a
-- payload's erasure (its data and salt gone, its entry kept, so every proof still holds).

ALTER TABLE events ADD COLUMN entry TEXT;
ALTER TABLE events ADD COLUMN salt BYTEA CHECK (salt IS NULL OR length(salt) = 16);

CREATE TABLE journal_head (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    size BIGINT NOT NULL CHECK (size >= 0)
);
INSERT INTO journal_head (id, size) VALUES (1, 0);

CREATE TABLE journal_leaves (
    idx BIGINT PRIMARY KEY CHECK (idx >= 0),
    event_seq BIGINT NOT NULL UNIQUE REFERENCES events (seq)
);

-- node(level, idx) covers the leaves [idx << level, (idx + 1) << level); level 0 holds the leaf
-- hashes.
CREATE TABLE journal_nodes (
    level INTEGER NOT NULL CHECK (level BETWEEN 0 AND 62),
    idx BIGINT NOT NULL CHECK (idx >= 0),
    hash BYTEA NOT NULL CHECK (length(hash) = 32),
    PRIMARY KEY (level, idx)
);

CREATE TABLE journal_checkpoints (
    size BIGINT PRIMARY KEY CHECK (size >= 0),
    root BYTEA NOT NULL CHECK (length(root) = 32),
    -- The C2SP signed note.
    note TEXT NOT NULL,
    -- The verifier key that signed it (`name+id+key`).
    key TEXT NOT NULL,
    signed_at TIMESTAMPTZ NOT NULL
);

-- Each time a checkpoint was sent outside (a file, a webhook), and how it went.
CREATE TABLE journal_sends (
    id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    size BIGINT NOT NULL REFERENCES journal_checkpoints (size),
    target TEXT NOT NULL,
    ok BOOLEAN NOT NULL,
    detail TEXT NOT NULL DEFAULT '',
    sent_at TIMESTAMPTZ NOT NULL
);

-- A new event comes with its entry and salt.
CREATE FUNCTION events_journal_entry() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.entry IS NULL OR NEW.salt IS NULL THEN
        RAISE EXCEPTION 'journal_entry: an event is written with its journal entry and salt';
    END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER events_journal_entry BEFORE INSERT ON events
    FOR EACH ROW EXECUTE FUNCTION events_journal_entry();

-- Its leaf, at the next index, and the subtrees it completes: at commit, in the order the
-- transaction wrote its events.
CREATE FUNCTION journal_append() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    at BIGINT;
    lvl INTEGER := 0;
    h BYTEA;
    l BYTEA;
BEGIN
    IF TG_OP = 'UPDATE' AND (OLD.entry IS NOT NULL OR NEW.entry IS NULL) THEN
        RETURN NULL;
    END IF;
    SELECT size INTO STRICT at FROM journal_head WHERE id = 1 FOR UPDATE;
    INSERT INTO journal_leaves (idx, event_seq) VALUES (at, NEW.seq);
    UPDATE journal_head SET size = size + 1 WHERE id = 1;
    h := sha256('\x00'::bytea || convert_to(NEW.entry, 'UTF8'));
    INSERT INTO journal_nodes (level, idx, hash) VALUES (0, at, h);
    WHILE at % 2 = 1 LOOP
        l := NULL;
        SELECT hash INTO l FROM journal_nodes WHERE level = lvl AND idx = at - 1;
        -- A sibling missing (hashes deleted by SQL): the parents are made from the entries
        -- when they are needed (the store's journal_fill), not here.
        EXIT WHEN l IS NULL;
        h := sha256('\x01'::bytea || l || h);
        lvl := lvl + 1;
        at := at / 2;
        INSERT INTO journal_nodes (level, idx, hash) VALUES (lvl, at, h);
    END LOOP;
    RETURN NULL;
END $$;
CREATE CONSTRAINT TRIGGER events_journal_leaf AFTER INSERT OR UPDATE OF entry ON events
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION journal_append();

-- Append-only, but for the two changes the journal makes: an entry given once to an event
-- written before it, and a payload erased (its data emptied, its salt gone, its entry kept).
CREATE OR REPLACE FUNCTION events_guard() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'UPDATE'
        AND NEW.seq = OLD.seq AND NEW.id = OLD.id AND NEW.kind = OLD.kind AND NEW.subject = OLD.subject
        AND NEW.actor_id IS NOT DISTINCT FROM OLD.actor_id
        AND NEW.request_id IS NOT DISTINCT FROM OLD.request_id AND NEW.created_at = OLD.created_at
        AND (
            (OLD.entry IS NULL AND NEW.entry IS NOT NULL AND NEW.salt IS NOT NULL AND NEW.data = OLD.data)
            OR (OLD.entry IS NOT NULL AND NEW.entry = OLD.entry AND NEW.salt IS NULL AND NEW.data = '{}'::jsonb)
        )
    THEN
        RETURN NEW;
    END IF;
    RAISE EXCEPTION 'events_append_only: the events journal is append-only';
END $$;

CREATE FUNCTION journal_guard() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_TABLE_NAME = 'journal_head' AND TG_OP = 'UPDATE' THEN
        -- It grows only by the leaf just written at its size.
        IF NEW.id = OLD.id AND NEW.size = OLD.size + 1
            AND EXISTS (SELECT 1 FROM journal_leaves WHERE idx = OLD.size) THEN
            RETURN NEW;
        END IF;
        RAISE EXCEPTION 'journal_append_only: the journal only grows, a leaf at a time';
    END IF;
    IF TG_TABLE_NAME = 'journal_leaves' AND TG_OP = 'INSERT' THEN
        IF NEW.idx = (SELECT size FROM journal_head) THEN
            RETURN NEW;
        END IF;
        RAISE EXCEPTION 'journal_gap: a leaf takes the next index';
    END IF;
    IF TG_TABLE_NAME = 'journal_nodes' AND TG_OP = 'INSERT' THEN
        IF ((NEW.idx + 1) << NEW.level) <= (SELECT size FROM journal_head) THEN
            RETURN NEW;
        END IF;
        RAISE EXCEPTION 'journal_gap: a node covers leaves the journal has';
    END IF;
    IF TG_TABLE_NAME = 'journal_checkpoints' AND TG_OP = 'INSERT' THEN
        IF NEW.size <= (SELECT size FROM journal_head)
            AND NEW.size >= (SELECT coalesce(max(size), 0) FROM journal_checkpoints) THEN
            RETURN NEW;
        END IF;
        RAISE EXCEPTION 'journal_checkpoint: a checkpoint signs the tree at or past the last one signed';
    END IF;
    RAISE EXCEPTION 'journal_append_only: the journal is append-only';
END $$;

CREATE TRIGGER journal_head_grows BEFORE UPDATE OR DELETE ON journal_head
    FOR EACH ROW EXECUTE FUNCTION journal_guard();
CREATE TRIGGER journal_leaves_guard BEFORE INSERT OR UPDATE OR DELETE ON journal_leaves
    FOR EACH ROW EXECUTE FUNCTION journal_guard();
CREATE TRIGGER journal_nodes_guard BEFORE INSERT OR UPDATE OR DELETE ON journal_nodes
    FOR EACH ROW EXECUTE FUNCTION journal_guard();
CREATE TRIGGER journal_checkpoints_guard BEFORE INSERT OR UPDATE OR DELETE ON journal_checkpoints
    FOR EACH ROW EXECUTE FUNCTION journal_guard();
CREATE TRIGGER journal_sends_guard BEFORE UPDATE OR DELETE ON journal_sends
    FOR EACH ROW EXECUTE FUNCTION journal_guard();
