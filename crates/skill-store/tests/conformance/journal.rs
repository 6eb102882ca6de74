//! The tamper-evident journal's rows: every event a leaf, gap-free, its tree's hashes stored whole
//! (checked after every case of the suite), guarded by the database, and given to events written
//! before the journal when the store opens.

use skill_contract::codes::Code;
use std::collections::HashMap;
use std::sync::Arc;

use serde_json::{Value, json};
use skill_journal::entry::{canonical, text_digest};
use skill_journal::tree::{self, Hash, Levels, Nodes as _, leaf_hash};
use skill_store::records::Event;
use skill_store::{CheckpointRow, ErrorKind, Store, StoreOptions};

use crate::fixture::{Db, Raw, event, principal};

/// Everything the journal promises of a store's rows: one leaf per event, indices `0..n` with no
/// gap, each leaf's entry naming its event and committing to its payload, and every complete
/// subtree's hash stored and right.
pub(crate) async fn assert_whole(store: &Arc<dyn Store>) {
    let events: Vec<Event> = store.events(0, None, 1_000_000).await.expect("events read");
    let size = store.journal_size().await.expect("size read");
    assert_eq!(size, events.len() as u64, "one leaf per event");
    let leaves = store.journal_leaves(0, 1_000_000).await.expect("leaves read");
    assert_eq!(leaves.len() as u64, size);
    let by_seq: HashMap<i64, &Event> = events.iter().map(|event| (event.seq, event)).collect();
    let mut hashes = Vec::new();
    for (at, leaf) in leaves.iter().enumerate() {
        assert_eq!(leaf.index, at as u64, "leaf indices have no gap");
        let event = by_seq.get(&leaf.event_seq).expect("a leaf's event exists");
        assert_eq!(leaf.event_id, event.id);
        let entry: Value = serde_json::from_str(&leaf.entry).expect("an entry is JSON");
        assert_eq!(entry["id"], json!(event.id), "{}", leaf.entry);
        assert_eq!(entry["kind"], json!(event.kind));
        assert_eq!(entry["subject"], json!(event.subject));
        match (&leaf.payload, &leaf.salt) {
            (Some(payload), Some(salt)) => {
                let salt: [u8; 16] = salt.as_slice().try_into().expect("16 bytes");
                assert_eq!(entry["data"], json!(text_digest(&salt, payload)), "the entry commits to its payload");
                assert_eq!(payload, &canonical(&event.data), "the payload is the event's data");
            }
            // Erased: the entry alone still proves the leaf.
            (None, None) => assert!(entry["data"].as_str().is_some_and(|digest| digest.starts_with("sha256:"))),
            kept => panic!("a payload without its salt, or the reverse: {kept:?}"),
        }
        hashes.push(leaf_hash(leaf.entry.as_bytes()));
    }
    let levels = Levels::new(hashes);
    let mut all = Vec::new();
    for level in 0..64_u32 {
        let count = size >> level;
        if count == 0 {
            break;
        }
        all.extend((0..count).map(|at| (level, at)));
    }
    let stored = store.journal_nodes(&all).await.expect("nodes read");
    for (level, at) in all {
        assert_eq!(stored.get(&(level, at)), Some(&levels.node(level, at)), "node ({level}, {at}) of {size}");
    }
}

/// The root of the stored tree at `size`, read as a proof server reads it.
async fn stored_root(store: &Arc<dyn Store>, size: u64) -> Hash {
    let needed = tree::Needed::default();
    let _ = tree::root(&needed, size);
    let nodes = store.journal_nodes(&needed.into_vec()).await.expect("nodes read");
    tree::root(&nodes, size)
}

pub(crate) async fn many_writers_at_once_leave_one_gap_free_tree(db: Db) {
    let names: Vec<String> = (0..40).map(|n| format!("writer-{n}")).collect();
    let writes = names.iter().map(|name| {
        let store = db.store.clone();
        let person = principal(name);
        async move { store.create_principal(&person, &event("principal.created", "principal:x")).await }
    });
    for written in futures::future::join_all(writes).await {
        written.expect("created");
    }
    // A write that fails leaves no leaf behind.
    let taken = db.store.create_principal(&principal("writer-0"), &event("principal.created", "principal:y")).await;
    assert!(taken.is_err(), "the name is taken");
    assert_whole(&db.store).await;
    assert_eq!(db.store.journal_size().await.expect("size"), 40);
    let before = stored_root(&db.store, 40).await;
    db.store
        .create_principal(&principal("one-more"), &event("principal.created", "principal:z"))
        .await
        .expect("created");
    // The tree grew; its first 40 leaves did not change.
    assert_eq!(stored_root(&db.store, 40).await, before);
    assert_ne!(stored_root(&db.store, 41).await, before);
}

pub(crate) async fn the_journal_is_guarded_by_the_database(db: Db) {
    for n in 0..5 {
        let person = principal(&format!("p{n}"));
        db.store.create_principal(&person, &event("principal.created", "principal:x")).await.expect("created");
    }
    let refused = |sql: &'static str| {
        let raw = &db.raw;
        async move {
            let error = raw.execute(sql).await.expect_err(sql).to_string();
            assert!(error.contains("journal") || error.contains("events_append_only"), "{sql}: {error}");
        }
    };
    refused("UPDATE journal_nodes SET hash = hash WHERE level = 0 AND idx = 0").await;
    refused("DELETE FROM journal_nodes WHERE level = 0 AND idx = 4").await;
    refused("DELETE FROM journal_leaves WHERE idx = 4").await;
    refused("UPDATE journal_leaves SET event_seq = event_seq WHERE idx = 1").await;
    refused("UPDATE journal_head SET size = size - 1").await;
    refused("UPDATE journal_head SET size = size + 2").await;
    refused("UPDATE journal_head SET size = size + 1").await;
    refused("DELETE FROM journal_head").await;
    refused("UPDATE events SET entry = 'x' WHERE seq = (SELECT min(seq) FROM events)").await;
    refused("UPDATE events SET data = '{\"note\":\"rewritten\"}' WHERE seq = (SELECT min(seq) FROM events)").await;
    refused("DELETE FROM events WHERE seq = (SELECT max(seq) FROM events)").await;
    refused(
        "INSERT INTO events (id, kind, subject, data, created_at) \
         VALUES ('no-entry', 'x.y', 's', '{}', '2026-01-01T00:00:00Z')",
    )
    .await;
    // A node beyond the tree, a leaf out of turn.
    let (beyond, out_of_turn) = match db.raw {
        Raw::Sqlite(_) => (
            "INSERT INTO journal_nodes (level, idx, hash) VALUES (3, 0, zeroblob(32))",
            "INSERT INTO journal_leaves (idx, event_seq) VALUES (9, (SELECT min(seq) FROM events))",
        ),
        Raw::Postgres(_) => (
            "INSERT INTO journal_nodes (level, idx, hash) VALUES (3, 0, decode(repeat('00', 32), 'hex'))",
            "INSERT INTO journal_leaves (idx, event_seq) VALUES (9, (SELECT min(seq) FROM events))",
        ),
    };
    refused(beyond).await;
    refused(out_of_turn).await;
    // SQLite's REPLACE deletes the row it replaces without its DELETE triggers: refused first.
    if let Raw::Sqlite(_) = db.raw {
        refused("INSERT OR REPLACE INTO journal_nodes (level, idx, hash) VALUES (0, 0, zeroblob(32))").await;
        refused("INSERT OR REPLACE INTO journal_head (id, size) VALUES (1, 3)").await;
        refused("INSERT OR REPLACE INTO journal_leaves (idx, event_seq) SELECT 0, event_seq FROM journal_leaves WHERE idx = 1")
            .await;
        refused(
            "INSERT OR REPLACE INTO events SELECT seq, id, kind, subject, '{\"name\":\"mallory\"}', actor_id, \
             request_id, created_at, entry, salt FROM events WHERE seq = (SELECT min(seq) FROM events)",
        )
        .await;
    }
    assert_whole(&db.store).await;

    // A payload erased: its data and salt gone, its entry (and so every proof) kept.
    let erase = "UPDATE events SET data = '{}', salt = NULL WHERE seq = (SELECT min(seq) FROM events)";
    assert_eq!(db.raw.execute(erase).await.expect("erased"), 1);
    let leaves = db.store.journal_leaves(0, 10).await.expect("leaves");
    assert_eq!((leaves[0].payload.as_ref(), leaves[0].salt.as_ref()), (None, None));
    refused("UPDATE events SET data = '{\"note\":\"back\"}' WHERE seq = (SELECT min(seq) FROM events)").await;

    // Checkpoints only move forward, and never past the tree.
    let checkpoint = |size: u64| CheckpointRow {
        size,
        root: [1; 32],
        note: format!("checkpoint {size}"),
        key: "core+00000000+AAAA".to_owned(),
        signed_at: chrono::Utc::now(),
    };
    db.store.add_journal_checkpoint(&checkpoint(3)).await.expect("kept");
    db.store.add_journal_checkpoint(&checkpoint(5)).await.expect("kept");
    for size in [4, 6] {
        let error = db.store.add_journal_checkpoint(&checkpoint(size)).await.expect_err("refused");
        assert!(error.to_string().contains("journal_checkpoint"), "{error}");
    }
    // Two cores signing the same tree: the second is refused, as the signer expects (a conflict
    // or the append-only guard), and the first stays.
    let again = db.store.add_journal_checkpoint(&checkpoint(5)).await.expect_err("one checkpoint per size");
    assert!(
        matches!(
            again.kind(),
            ErrorKind::Conflict | ErrorKind::Refused(Code::JournalAppendOnly | Code::JournalCheckpoint)
        ),
        "{again:?}"
    );
    let kept = db.store.journal_checkpoints(10).await.expect("listed");
    assert_eq!(kept.iter().map(|c| c.size).collect::<Vec<_>>(), vec![5, 3]);
    refused("DELETE FROM journal_checkpoints").await;
    refused("UPDATE journal_checkpoints SET note = 'other'").await;
    if let Raw::Sqlite(_) = db.raw {
        refused(
            "INSERT OR REPLACE INTO journal_checkpoints (size, root, note, key, signed_at) \
                 SELECT size, root, 'forged', key, signed_at FROM journal_checkpoints WHERE size = 5",
        )
        .await;
    }
}

pub(crate) async fn events_written_before_the_journal_get_their_leaves_when_the_store_opens(db: Db) {
    db.store.create_principal(&principal("first"), &event("principal.created", "principal:a")).await.expect("created");
    // Events as a store before the journal wrote them: no entry, no salt, no leaf.
    let (off, on) = match db.raw {
        Raw::Sqlite(ref pool) => {
            let kept: Vec<String> = sqlx::query_scalar(
                "SELECT sql FROM sqlite_master WHERE name IN ('events_journal_entry', 'events_journal_leaf')",
            )
            .fetch_all(pool)
            .await
            .expect("triggers read");
            ("DROP TRIGGER events_journal_entry; DROP TRIGGER events_journal_leaf;".to_owned(), kept.join(";\n"))
        }
        Raw::Postgres(_) => {
            ("ALTER TABLE events DISABLE TRIGGER USER".to_owned(), "ALTER TABLE events ENABLE TRIGGER USER".to_owned())
        }
    };
    db.raw.batch(&off).await.expect("journal off");
    for n in 0..3 {
        let sql = format!(
            "INSERT INTO events (id, kind, subject, data, actor_id, request_id, created_at) \
             VALUES ('old-{n}', 'principal.created', 'principal:old', '{{\"name\":\"old {n}\"}}', NULL, NULL, \
             '2026-01-0{}T00:00:00Z')",
            n + 1
        );
        db.raw.execute(&sql).await.expect("an old event");
    }
    db.raw.batch(&on).await.expect("journal on");
    assert_eq!(db.store.journal_size().await.expect("size"), 1);
    // Opening the store gives them their entries and leaves, after the leaves there were.
    let again: Arc<dyn Store> = skill_store::open(&db.target, &StoreOptions::default()).await.expect("reopens");
    assert_whole(&again).await;
    let leaves = again.journal_leaves(0, 10).await.expect("leaves");
    assert_eq!(
        leaves.iter().map(|leaf| leaf.event_id.as_str()).skip(1).collect::<Vec<_>>(),
        ["old-0", "old-1", "old-2"]
    );
    assert!(leaves[1].entry.contains(r#""at":"2026-01-01T00:00:00.000000Z""#), "{}", leaves[1].entry);
    assert!(!leaves[1].entry.contains("old 0"), "a person's name stays out of the clear: {}", leaves[1].entry);
    // And only once.
    let third: Arc<dyn Store> = skill_store::open(&db.target, &StoreOptions::default()).await.expect("reopens");
    assert_eq!(third.journal_size().await.expect("size"), 4);
}

pub(crate) async fn an_event_appended_by_sql_gets_its_hashes_when_they_are_needed(db: Db) {
    db.store.create_principal(&principal("first"), &event("principal.created", "principal:a")).await.expect("created");
    // An event as whoever holds the database appends one, the guards in place: a well-formed
    // entry and salt (here the first event's, with another id), its hashes not written.
    db.raw
        .execute(
            "INSERT INTO events (id, kind, subject, data, actor_id, request_id, created_at, entry, salt) \
             SELECT 'by-sql', kind, subject, data, actor_id, request_id, created_at, replace(entry, id, 'by-sql'), salt \
             FROM events WHERE seq = (SELECT min(seq) FROM events)",
        )
        .await
        .expect("appended");
    // The store's next write does not fail on the missing sibling.
    db.store.create_principal(&principal("second"), &event("principal.created", "principal:b")).await.expect("created");
    let size = db.store.journal_size().await.expect("size");
    assert_eq!(size, 3);
    let all: Vec<(u32, u64)> = (0..2_u32).flat_map(|level| (0..(size >> level)).map(move |at| (level, at))).collect();
    db.store.journal_fill(&all).await.expect("filled from the entries");
    assert_whole(&db.store).await;
    assert_eq!(stored_root(&db.store, 3).await, {
        let leaves = db.store.journal_leaves(0, 10).await.expect("leaves");
        let hashes: Vec<Hash> = leaves.iter().map(|leaf| leaf_hash(leaf.entry.as_bytes())).collect();
        tree::root(&hashes[..], 3)
    });
}
