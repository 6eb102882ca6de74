-- The tamper-evident journal (docs/journal.md). Every event is a leaf of an RFC 6962 Merkle tree,
-- appended in the transaction that writes the event: its entry (the canonical JSON the leaf
-- hashes) and the salt of its payload's digest are written with it, the database gives it the
-- next index (gap-free: the one writer, the head's size), and the store writes the hashes of the
-- complete subtrees it completes. Signed checkpoints of the tree and where each was sent are kept
-- beside it. Nothing here is ever changed or deleted, except a payload's erasure (its data and
-- salt gone, its entry kept, so every proof still holds).

ALTER TABLE events ADD COLUMN entry TEXT;
ALTER TABLE events ADD COLUMN salt BLOB CHECK (salt IS NULL OR length(salt) = 16);

CREATE TABLE journal_head (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    size INTEGER NOT NULL CHECK (size >= 0)
);
INSERT INTO journal_head (id, size) VALUES (1, 0);

CREATE TABLE journal_leaves (
    idx INTEGER PRIMARY KEY CHECK (idx >= 0),
    event_seq INTEGER NOT NULL UNIQUE REFERENCES events (seq)
);

-- node(level, idx) covers the leaves [idx << level, (idx + 1) << level); level 0 holds the leaf
-- hashes.
CREATE TABLE journal_nodes (
    level INTEGER NOT NULL CHECK (level BETWEEN 0 AND 62),
    idx INTEGER NOT NULL CHECK (idx >= 0),
    hash BLOB NOT NULL CHECK (length(hash) = 32),
    PRIMARY KEY (level, idx)
) WITHOUT ROWID;

CREATE TABLE journal_checkpoints (
    size INTEGER PRIMARY KEY CHECK (size >= 0),
    root BLOB NOT NULL CHECK (length(root) = 32),
    -- The C2SP signed note.
    note TEXT NOT NULL,
    -- The verifier key that signed it (`name+id+key`).
    key TEXT NOT NULL,
    signed_at TEXT NOT NULL
);

-- Each time a checkpoint was sent outside (a file, a webhook), and how it went.
CREATE TABLE journal_sends (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    size INTEGER NOT NULL REFERENCES journal_checkpoints (size),
    target TEXT NOT NULL,
    ok INTEGER NOT NULL CHECK (ok IN (0, 1)),
    detail TEXT NOT NULL DEFAULT '',
    sent_at TEXT NOT NULL
);

-- A new event comes with its entry and salt.
CREATE TRIGGER events_journal_entry BEFORE INSERT ON events
WHEN NEW.entry IS NULL OR NEW.salt IS NULL
BEGIN
    SELECT RAISE(ABORT, 'journal_entry: an event is written with its journal entry and salt');
END;

-- Its leaf, at the next index.
CREATE TRIGGER events_journal_leaf AFTER INSERT ON events
BEGIN
    INSERT INTO journal_leaves (idx, event_seq) SELECT size, NEW.seq FROM journal_head;
END;

-- An event written before the journal gets its entry once, and its leaf then.
CREATE TRIGGER events_journal_late_leaf AFTER UPDATE OF entry ON events
WHEN OLD.entry IS NULL AND NEW.entry IS NOT NULL
BEGIN
    INSERT INTO journal_leaves (idx, event_seq) SELECT size, NEW.seq FROM journal_head;
END;

-- Append-only, but for the two changes the journal makes: an entry given once to an event
-- written before it, and a payload erased (its data emptied, its salt gone, its entry kept).
DROP TRIGGER events_no_update;
CREATE TRIGGER events_no_update BEFORE UPDATE ON events
WHEN NOT (
    NEW.seq = OLD.seq AND NEW.id = OLD.id AND NEW.kind = OLD.kind AND NEW.subject = OLD.subject
    AND NEW.actor_id IS OLD.actor_id AND NEW.request_id IS OLD.request_id AND NEW.created_at = OLD.created_at
    AND (
        (OLD.entry IS NULL AND NEW.entry IS NOT NULL AND NEW.salt IS NOT NULL AND NEW.data = OLD.data)
        OR (OLD.entry IS NOT NULL AND NEW.entry = OLD.entry AND NEW.salt IS NULL AND NEW.data = '{}')
    )
)
BEGIN
    SELECT RAISE(ABORT, 'events_append_only: the events journal is append-only');
END;

CREATE TRIGGER journal_leaves_next BEFORE INSERT ON journal_leaves
WHEN NEW.idx IS NOT (SELECT size FROM journal_head)
BEGIN
    SELECT RAISE(ABORT, 'journal_gap: a leaf takes the next index');
END;

CREATE TRIGGER journal_leaves_grow AFTER INSERT ON journal_leaves
BEGIN
    UPDATE journal_head SET size = size + 1;
END;

CREATE TRIGGER journal_head_grows BEFORE UPDATE ON journal_head
WHEN NEW.id <> OLD.id OR NEW.size <> OLD.size + 1
    OR NOT EXISTS (SELECT 1 FROM journal_leaves WHERE idx = OLD.size)
BEGIN
    SELECT RAISE(ABORT, 'journal_append_only: the journal only grows, a leaf at a time');
END;

CREATE TRIGGER journal_head_kept BEFORE DELETE ON journal_head
BEGIN
    SELECT RAISE(ABORT, 'journal_append_only: the journal only grows, a leaf at a time');
END;

-- A node is written once, inside the tree's size.
CREATE TRIGGER journal_nodes_inside BEFORE INSERT ON journal_nodes
WHEN ((NEW.idx + 1) << NEW.level) > (SELECT size FROM journal_head)
BEGIN
    SELECT RAISE(ABORT, 'journal_gap: a node covers leaves the journal has');
END;

-- A checkpoint never shrinks the tree it signs.
CREATE TRIGGER journal_checkpoints_grow BEFORE INSERT ON journal_checkpoints
WHEN NEW.size > (SELECT size FROM journal_head)
    OR NEW.size < (SELECT coalesce(max(size), 0) FROM journal_checkpoints)
BEGIN
    SELECT RAISE(ABORT, 'journal_checkpoint: a checkpoint signs the tree at or past the last one signed');
END;

CREATE TRIGGER journal_leaves_no_update BEFORE UPDATE ON journal_leaves
BEGIN
    SELECT RAISE(ABORT, 'journal_append_only: the journal is append-only');
END;

CREATE TRIGGER journal_leaves_no_delete BEFORE DELETE ON journal_leaves
BEGIN
    SELECT RAISE(ABORT, 'journal_append_only: the journal is append-only');
END;

CREATE TRIGGER journal_nodes_no_update BEFORE UPDATE ON journal_nodes
BEGIN
    SELECT RAISE(ABORT, 'journal_append_only: the journal is append-only');
END;

CREATE TRIGGER journal_nodes_no_delete BEFORE DELETE ON journal_nodes
BEGIN
    SELECT RAISE(ABORT, 'journal_append_only: the journal is append-only');
END;

CREATE TRIGGER journal_checkpoints_no_update BEFORE UPDATE ON journal_checkpoints
BEGIN
    SELECT RAISE(ABORT, 'journal_append_only: the journal is append-only');
END;

CREATE TRIGGER journal_checkpoints_no_delete BEFORE DELETE ON journal_checkpoints
BEGIN
    SELECT RAISE(ABORT, 'journal_append_only: the journal is append-only');
END;

CREATE TRIGGER journal_sends_no_update BEFORE UPDATE ON journal_sends
BEGIN
    SELECT RAISE(ABORT, 'journal_append_only: the journal is append-only');
END;

CREATE TRIGGER journal_sends_no_delete BEFORE DELETE ON journal_sends
BEGIN
    SELECT RAISE(ABORT, 'journal_append_only: the journal is append-only');
END;

-- SQLite's REPLACE deletes a row without firing its DELETE triggers: an insert that would
-- replace a row of the journal is refused before it can.
CREATE TRIGGER events_no_replace BEFORE INSERT ON events
WHEN EXISTS (SELECT 1 FROM events WHERE seq = NEW.seq OR id = NEW.id)
BEGIN
    SELECT RAISE(ABORT, 'events_append_only: the events journal is append-only');
END;

CREATE TRIGGER journal_head_no_insert BEFORE INSERT ON journal_head
BEGIN
    SELECT RAISE(ABORT, 'journal_append_only: the journal only grows, a leaf at a time');
END;

CREATE TRIGGER journal_leaves_no_replace BEFORE INSERT ON journal_leaves
WHEN EXISTS (SELECT 1 FROM journal_leaves WHERE idx = NEW.idx OR event_seq = NEW.event_seq)
BEGIN
    SELECT RAISE(ABORT, 'journal_append_only: the journal is append-only');
END;

CREATE TRIGGER journal_nodes_no_replace BEFORE INSERT ON journal_nodes
WHEN EXISTS (SELECT 1 FROM journal_nodes WHERE level = NEW.level AND idx = NEW.idx)
BEGIN
    SELECT RAISE(ABORT, 'journal_append_only: the journal is append-only');
END;

CREATE TRIGGER journal_checkpoints_no_replace BEFORE INSERT ON journal_checkpoints
WHEN EXISTS (SELECT 1 FROM journal_checkpoints WHERE size = NEW.size)
BEGIN
    SELECT RAISE(ABORT, 'journal_append_only: the journal is append-only');
END;

CREATE TRIGGER journal_sends_no_replace BEFORE INSERT ON journal_sends
WHEN EXISTS (SELECT 1 FROM journal_sends WHERE id = NEW.id)
BEGIN
    SELECT RAISE(ABORT, 'journal_append_only: the journal is append-only');
END;
