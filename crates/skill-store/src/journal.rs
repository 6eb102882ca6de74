//! The tamper-evident journal's rows as they are read (`docs/journal.md`): the tree's leaves and
//! nodes (each event a leaf, written with it: `leaves.rs`), the nodes made from the entries when
//! missing, the signed checkpoints and where each was sent, and the catch-up of events written
//! before the journal.

use std::collections::HashMap;

use futures::future::BoxFuture;
use skill_journal::entry::{self, SALT_LEN};
use skill_journal::tree::{self, Hash};
use sqlx::Row as _;

use crate::backend::{PgStore, SqliteStore};
use crate::error::{ErrorKind, Result, StoreError};
use crate::leaves::{hash_of, signed, sqlite_nodes, unsigned, written};
use crate::records::{Event, Time};

/// One leaf with its event, as an export carries it.
#[derive(Debug, Clone, PartialEq)]
pub struct LeafRow {
    pub index: u64,
    pub event_seq: i64,
    pub event_id: String,
    /// The exact bytes the leaf hashes.
    pub entry: String,
    /// The leaf hash stored for it.
    pub hash: Option<Hash>,
    /// The payload as canonical JSON (what its digest is over; the stored text as it is when it
    /// is not JSON), and its salt; both `None` once erased.
    pub payload: Option<String>,
    pub salt: Option<Vec<u8>>,
}

/// A signed checkpoint as kept.
#[derive(Debug, Clone, PartialEq)]
pub struct CheckpointRow {
    pub size: u64,
    pub root: Hash,
    /// The signed note.
    pub note: String,
    /// The verifier key that signed it.
    pub key: String,
    pub signed_at: Time,
}

/// A checkpoint sent outside, and how it went.
#[derive(Debug, Clone, PartialEq)]
pub struct SendRow {
    pub size: u64,
    pub target: String,
    pub ok: bool,
    pub detail: String,
    pub sent_at: Time,
}

/// The journal's tree, checkpoints and sends.
pub trait JournalTree: Send + Sync {
    /// How many leaves the tree has (committed).
    fn journal_size(&self) -> BoxFuture<'_, Result<u64>>;
    /// The nodes at `at` (`(level, index)`); a node the tree does not have is missing from the
    /// answer.
    fn journal_nodes<'a>(&'a self, at: &'a [(u32, u64)]) -> BoxFuture<'a, Result<HashMap<(u32, u64), Hash>>>;
    /// Up to `limit` leaves from `from`, in index order.
    fn journal_leaves(&self, from: u64, limit: u32) -> BoxFuture<'_, Result<Vec<LeafRow>>>;
    /// The leaf index of the event `event_id`.
    fn journal_leaf_of<'a>(&'a self, event_id: &'a str) -> BoxFuture<'a, Result<Option<u64>>>;
    /// Keeps a signed checkpoint; refused (`Conflict`) below the last one kept or past the tree.
    fn add_journal_checkpoint<'a>(&'a self, checkpoint: &'a CheckpointRow) -> BoxFuture<'a, Result<()>>;
    /// The last `limit` checkpoints, newest first.
    fn journal_checkpoints(&self, limit: u32) -> BoxFuture<'_, Result<Vec<CheckpointRow>>>;
    /// Records a send of the checkpoint of `size`.
    fn add_journal_send<'a>(&'a self, send: &'a SendRow) -> BoxFuture<'a, Result<()>>;
    /// The last `limit` sends, newest first.
    fn journal_sends(&self, limit: u32) -> BoxFuture<'_, Result<Vec<SendRow>>>;
    /// Writes the nodes at `at` that are missing, made from the entries below them (a leaf
    /// appended by SQL comes without its hashes); `Internal` when a leaf under one is missing or
    /// has no entry.
    fn journal_fill<'a>(&'a self, at: &'a [(u32, u64)]) -> BoxFuture<'a, Result<()>>;
    /// Gives every event written before the journal its entry and leaf, oldest first; answers
    /// how many.
    fn journal_catch_up(&self) -> BoxFuture<'_, Result<u64>>;
}

fn salt_len_ok(salt: &Option<Vec<u8>>) -> bool {
    salt.as_ref().is_none_or(|salt| salt.len() == SALT_LEN)
}

/// How many old events one transaction of the catch-up gives entries to.
const CATCH_UP_BATCH: i64 = 500;

macro_rules! journal_tree {
    ($store:ty, $conn:ty, $nodes:expr) => {
        impl JournalTree for $store {
            fn journal_size(&self) -> BoxFuture<'_, Result<u64>> {
                Box::pin(async move {
                    let size: i64 =
                        sqlx::query_scalar("SELECT size FROM journal_head").fetch_one(self.read()).await?;
                    Ok(unsigned(size))
                })
            }

            fn journal_nodes<'a>(
                &'a self,
                at: &'a [(u32, u64)],
            ) -> BoxFuture<'a, Result<HashMap<(u32, u64), Hash>>> {
                Box::pin(async move {
                    let mut found = HashMap::new();
                    // One query per node: a proof reads about 2·log₂(size) of them, by key.
                    for &(level, index) in at {
                        if found.contains_key(&(level, index)) {
                            continue;
                        }
                        let hash: Option<Vec<u8>> =
                            sqlx::query_scalar("SELECT hash FROM journal_nodes WHERE level = $1 AND idx = $2")
                                .bind(i64::from(level))
                                .bind(signed(index))
                                .fetch_optional(self.read())
                                .await?;
                        if let Some(hash) = hash {
                            found.insert((level, index), hash_of(&hash)?);
                        }
                    }
                    Ok(found)
                })
            }

            fn journal_leaves(&self, from: u64, limit: u32) -> BoxFuture<'_, Result<Vec<LeafRow>>> {
                Box::pin(async move {
                    let rows = sqlx::query(
                        "SELECT l.idx, l.event_seq, e.id, e.entry, CAST(e.data AS TEXT), e.salt, n.hash FROM journal_leaves l \
                         JOIN events e ON e.seq = l.event_seq \
                         LEFT JOIN journal_nodes n ON n.level = 0 AND n.idx = l.idx \
                         WHERE l.idx >= $1 ORDER BY l.idx LIMIT $2",
                    )
                    .bind(signed(from))
                    .bind(i64::from(limit))
                    .fetch_all(self.read())
                    .await?;
                    rows.into_iter()
                        .map(|row| {
                            let salt: Option<Vec<u8>> = row.try_get(5)?;
                            if !salt_len_ok(&salt) {
                                return Err(StoreError::new(ErrorKind::Internal, "a journal salt is not 16 bytes"));
                            }
                            let data: String = row.try_get(4)?;
                            let hash: Option<Vec<u8>> = row.try_get(6)?;
                            // An entry that is not UTF-8 (written by SQL) is exported as near as
                            // it can be: its hash then tells it changed, at its index.
                            let entry = match row.try_get::<Option<String>, _>(3) {
                                Ok(entry) => entry.unwrap_or_default(),
                                Err(_) => row
                                    .try_get::<Option<Vec<u8>>, _>(3)
                                    .ok()
                                    .flatten()
                                    .map(|bytes| String::from_utf8_lossy(&bytes).into_owned())
                                    .unwrap_or_default(),
                            };
                            let payload = serde_json::from_str::<serde_json::Value>(&data)
                                .map_or(data, |value| entry::canonical(&value));
                            Ok(LeafRow {
                                index: unsigned(row.try_get(0)?),
                                event_seq: row.try_get(1)?,
                                event_id: row.try_get(2)?,
                                entry,
                                hash: hash.as_deref().map(hash_of).transpose()?,
                                payload: salt.is_some().then_some(payload),
                                salt,
                            })
                        })
                        .collect()
                })
            }

            fn journal_leaf_of<'a>(&'a self, event_id: &'a str) -> BoxFuture<'a, Result<Option<u64>>> {
                Box::pin(async move {
                    let index: Option<i64> = sqlx::query_scalar(
                        "SELECT l.idx FROM journal_leaves l JOIN events e ON e.seq = l.event_seq WHERE e.id = $1",
                    )
                    .bind(event_id)
                    .fetch_optional(self.read())
                    .await?;
                    Ok(index.map(unsigned))
                })
            }

            fn add_journal_checkpoint<'a>(&'a self, checkpoint: &'a CheckpointRow) -> BoxFuture<'a, Result<()>> {
                Box::pin(async move {
                    let mut tx = self.write().await?;
                    sqlx::query(
                        "INSERT INTO journal_checkpoints (size, root, note, key, signed_at) VALUES ($1, $2, $3, $4, $5)",
                    )
                    .bind(signed(checkpoint.size))
                    .bind(checkpoint.root.to_vec())
                    .bind(&checkpoint.note)
                    .bind(&checkpoint.key)
                    .bind(checkpoint.signed_at)
                    .execute(&mut *tx)
                    .await?;
                    tx.commit().await?;
                    Ok(())
                })
            }

            fn journal_checkpoints(&self, limit: u32) -> BoxFuture<'_, Result<Vec<CheckpointRow>>> {
                Box::pin(async move {
                    let rows = sqlx::query(
                        "SELECT size, root, note, key, signed_at FROM journal_checkpoints ORDER BY size DESC LIMIT $1",
                    )
                    .bind(i64::from(limit))
                    .fetch_all(self.read())
                    .await?;
                    rows.into_iter()
                        .map(|row| {
                            let root: Vec<u8> = row.try_get(1)?;
                            Ok(CheckpointRow {
                                size: unsigned(row.try_get(0)?),
                                root: hash_of(&root)?,
                                note: row.try_get(2)?,
                                key: row.try_get(3)?,
                                // Shown, not checked: a time that does not read is the epoch.
                                signed_at: row.try_get(4).unwrap_or_default(),
                            })
                        })
                        .collect()
                })
            }

            fn add_journal_send<'a>(&'a self, send: &'a SendRow) -> BoxFuture<'a, Result<()>> {
                Box::pin(async move {
                    let mut tx = self.write().await?;
                    sqlx::query(
                        "INSERT INTO journal_sends (size, target, ok, detail, sent_at) VALUES ($1, $2, $3, $4, $5)",
                    )
                    .bind(signed(send.size))
                    .bind(&send.target)
                    .bind(send.ok)
                    .bind(&send.detail)
                    .bind(send.sent_at)
                    .execute(&mut *tx)
                    .await?;
                    tx.commit().await?;
                    Ok(())
                })
            }

            fn journal_sends(&self, limit: u32) -> BoxFuture<'_, Result<Vec<SendRow>>> {
                Box::pin(async move {
                    let rows = sqlx::query(
                        "SELECT size, target, ok, detail, sent_at FROM journal_sends ORDER BY id DESC LIMIT $1",
                    )
                    .bind(i64::from(limit))
                    .fetch_all(self.read())
                    .await?;
                    rows.into_iter()
                        .map(|row| {
                            Ok(SendRow {
                                size: unsigned(row.try_get(0)?),
                                target: row.try_get(1)?,
                                ok: row.try_get(2)?,
                                detail: row.try_get(3)?,
                                sent_at: row.try_get(4)?,
                            })
                        })
                        .collect()
                })
            }

            fn journal_fill<'a>(&'a self, at: &'a [(u32, u64)]) -> BoxFuture<'a, Result<()>> {
                Box::pin(async move {
                    let mut tx = self.write().await?;
                    let mut known: HashMap<(u32, u64), Hash> = HashMap::new();
                    let mut wanted: Vec<(u32, u64)> = at.to_vec();
                    while let Some(&(level, index)) = wanted.last() {
                        if known.contains_key(&(level, index)) {
                            wanted.pop();
                            continue;
                        }
                        let stored: Option<Vec<u8>> =
                            sqlx::query_scalar("SELECT hash FROM journal_nodes WHERE level = $1 AND idx = $2")
                                .bind(i64::from(level))
                                .bind(signed(index))
                                .fetch_optional(&mut *tx)
                                .await?;
                        let made = match stored {
                            Some(hash) => Some((hash_of(&hash)?, false)),
                            None if level == 0 => {
                                let entry: Option<Option<String>> = sqlx::query_scalar(
                                    "SELECT e.entry FROM journal_leaves l JOIN events e ON e.seq = l.event_seq \
                                     WHERE l.idx = $1",
                                )
                                .bind(signed(index))
                                .fetch_optional(&mut *tx)
                                .await?;
                                let Some(Some(entry)) = entry else {
                                    return Err(StoreError::new(
                                        ErrorKind::Internal,
                                        format!("the journal has no entry at index {index}"),
                                    ));
                                };
                                Some((tree::leaf_hash(entry.as_bytes()), true))
                            }
                            None => {
                                let (left, right) = ((level - 1, 2 * index), (level - 1, 2 * index + 1));
                                match (known.get(&left), known.get(&right)) {
                                    (Some(l), Some(r)) => Some((tree::node_hash(l, r), true)),
                                    (l, r) => {
                                        wanted.extend(l.is_none().then_some(left));
                                        wanted.extend(r.is_none().then_some(right));
                                        None
                                    }
                                }
                            }
                        };
                        if let Some((hash, new)) = made {
                            if new {
                                sqlx::query("INSERT INTO journal_nodes (level, idx, hash) VALUES ($1, $2, $3)")
                                    .bind(i64::from(level))
                                    .bind(signed(index))
                                    .bind(hash.to_vec())
                                    .execute(&mut *tx)
                                    .await?;
                            }
                            known.insert((level, index), hash);
                            wanted.pop();
                        }
                    }
                    tx.commit().await?;
                    Ok(())
                })
            }

            fn journal_catch_up(&self) -> BoxFuture<'_, Result<u64>> {
                Box::pin(async move {
                    let mut done = 0_u64;
                    loop {
                        let mut tx = self.write().await?;
                        let old: Vec<Event> = sqlx::query_as(
                            "SELECT seq, id, kind, subject, data, actor_id, request_id, created_at FROM events \
                             WHERE entry IS NULL ORDER BY seq LIMIT $1",
                        )
                        .bind(CATCH_UP_BATCH)
                        .fetch_all(&mut *tx)
                        .await?;
                        if old.is_empty() {
                            return Ok(done);
                        }
                        for event in &old {
                            let written = written(event);
                            let updated = sqlx::query(
                                "UPDATE events SET entry = $1, salt = $2 WHERE seq = $3 AND entry IS NULL",
                            )
                            .bind(&written.entry)
                            .bind(&written.salt)
                            .bind(event.seq)
                            .execute(&mut *tx)
                            .await?;
                            if updated.rows_affected() == 0 {
                                continue;
                            }
                            let nodes: fn(&mut $conn, Hash) -> BoxFuture<'_, Result<()>> = $nodes;
                            nodes(&mut *tx, written.leaf).await?;
                        }
                        tx.commit().await?;
                        done += old.len() as u64;
                    }
                })
            }
        }
    };
}

journal_tree!(SqliteStore, sqlx::SqliteConnection, |connection, leaf| Box::pin(sqlite_nodes(connection, leaf)));
// PostgreSQL's deferred trigger writes the nodes at commit.
journal_tree!(PgStore, sqlx::PgConnection, |_, _| Box::pin(async { Ok(()) }));
