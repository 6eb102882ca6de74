//! The tamper-evident journal's rows (`docs/journal.md`): every event a leaf of the RFC 6962 tree,
//! appended in the event's own transaction. The store writes each event with its entry (the
//! canonical JSON the leaf hashes) and the salt of its payload's digest; the database gives the
//! leaf its gap-free index (a trigger, the head's size). On PostgreSQL a deferred trigger also
//! writes the hashes of the subtrees the leaf completes, at commit; on SQLite the store writes
//! them right after the event, in the same transaction. Signed checkpoints and where each was sent
//! are kept here too.

use std::collections::HashMap;

use chrono::SecondsFormat;
use futures::future::BoxFuture;
use skill_journal::entry::{self, SALT_LEN};
use skill_journal::tree::{self, Hash};
use sqlx::Row as _;

use crate::backend::{PgStore, SqliteStore};
use crate::error::{ErrorKind, Result, StoreError};
use crate::records::{Event, Time};

/// An event's journal entry as it is written with the event.
pub(crate) struct Written {
    pub entry: String,
    pub salt: Vec<u8>,
    pub leaf: Hash,
}

/// How many leaves wake the checkpoint signer before its second is up.
pub(crate) const WAKE_EVERY: u64 = 256;

static WRITTEN: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
static GROWN: std::sync::LazyLock<tokio::sync::Notify> = std::sync::LazyLock::new(tokio::sync::Notify::new);

/// Woken each time this process has written another [`WAKE_EVERY`] entries (a hint: it may wake
/// before they commit, or for writes that roll back; the signer reads the committed size).
pub fn journal_grown() -> &'static tokio::sync::Notify {
    &GROWN
}

/// The entry of `event`: its ids, kind, who and when, its data without free text in the clear,
/// and all of its data through a salted digest.
pub(crate) fn written(event: &Event) -> Written {
    if (WRITTEN.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1).is_multiple_of(WAKE_EVERY) {
        GROWN.notify_one();
    }
    let salt = entry::new_salt();
    let at = event.created_at.to_rfc3339_opts(SecondsFormat::Micros, true);
    let clear = entry::clear_of(&event.kind, &event.data);
    let fields = entry::Event {
        id: &event.id,
        kind: &event.kind,
        subject: &event.subject,
        actor: event.actor_id.as_deref(),
        request: event.request_id.as_deref(),
        at: &at,
        clear: &clear,
    };
    let made = entry::Entry::new(&fields, &event.data, &salt);
    let leaf = made.leaf();
    Written { entry: made.bytes, salt: salt.to_vec(), leaf }
}

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

/// How an event is written with its entry, inside a transaction of the store's own connection.
pub(crate) trait Append {
    fn append<'a>(&'a mut self, event: &'a Event) -> BoxFuture<'a, Result<()>>;
}

const INSERT_EVENT: &str = "INSERT INTO events (id, kind, subject, data, actor_id, request_id, created_at, entry, salt) \
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)";

/// `INSERT_EVENT` with the values of `$event` and its entry `$written`.
macro_rules! bind_event {
    ($event:expr, $written:expr) => {
        sqlx::query(INSERT_EVENT)
            .bind(&$event.id)
            .bind(&$event.kind)
            .bind(&$event.subject)
            .bind(sqlx::types::Json(&$event.data))
            .bind(&$event.actor_id)
            .bind(&$event.request_id)
            .bind($event.created_at)
            .bind(&$written.entry)
            .bind(&$written.salt)
    };
}

impl Append for sqlx::SqliteConnection {
    fn append<'a>(&'a mut self, event: &'a Event) -> BoxFuture<'a, Result<()>> {
        Box::pin(async move {
            let written = written(event);
            bind_event!(event, written).execute(&mut *self).await?;
            sqlite_nodes(self, written.leaf).await
        })
    }
}

impl Append for sqlx::PgConnection {
    fn append<'a>(&'a mut self, event: &'a Event) -> BoxFuture<'a, Result<()>> {
        Box::pin(async move {
            let written = written(event);
            bind_event!(event, written).execute(&mut *self).await?;
            Ok(())
        })
    }
}

/// The leaf just appended (the last index) and the subtrees it completes, on SQLite through sqlx.
async fn sqlite_nodes(connection: &mut sqlx::SqliteConnection, leaf: Hash) -> Result<()> {
    let size: i64 = sqlx::query_scalar("SELECT size FROM journal_head").fetch_one(&mut *connection).await?;
    let index = leaf_index(size)?;
    let mut lefts = Vec::new();
    for (level, at) in tree::left_siblings(index) {
        let hash: Option<Vec<u8>> = sqlx::query_scalar("SELECT hash FROM journal_nodes WHERE level = $1 AND idx = $2")
            .bind(i64::from(level))
            .bind(signed(at))
            .fetch_optional(&mut *connection)
            .await?;
        // A sibling missing (a leaf appended without its hashes, by SQL): the parents wait for
        // `journal_fill`, which makes them from the entries when they are needed.
        let Some(hash) = hash else { break };
        lefts.push(hash_of(&hash)?);
    }
    for (level, at, hash) in tree::appended(index, leaf, &lefts) {
        sqlx::query("INSERT INTO journal_nodes (level, idx, hash) VALUES ($1, $2, $3)")
            .bind(i64::from(level))
            .bind(signed(at))
            .bind(hash.to_vec())
            .execute(&mut *connection)
            .await?;
    }
    Ok(())
}

/// The same on the hot path's connection (`lite.rs`).
pub(crate) fn lite_nodes(connection: &rusqlite::Connection, leaf: Hash) -> Result<()> {
    let size: i64 = connection.prepare_cached("SELECT size FROM journal_head")?.query_row([], |row| row.get(0))?;
    let index = leaf_index(size)?;
    let mut lefts = Vec::new();
    for (level, at) in tree::left_siblings(index) {
        let hash: Option<Vec<u8>> = connection
            .prepare_cached("SELECT hash FROM journal_nodes WHERE level = ?1 AND idx = ?2")?
            .query_row((level, signed(at)), |row| row.get(0))
            .map(Some)
            .or_else(|error| if error == rusqlite::Error::QueryReturnedNoRows { Ok(None) } else { Err(error) })?;
        // As above: the parents wait for `journal_fill`.
        let Some(hash) = hash else { break };
        lefts.push(hash_of(&hash)?);
    }
    let mut insert = connection.prepare_cached("INSERT INTO journal_nodes (level, idx, hash) VALUES (?1, ?2, ?3)")?;
    for (level, at, hash) in tree::appended(index, leaf, &lefts) {
        insert.execute((level, signed(at), &hash[..]))?;
    }
    Ok(())
}

fn leaf_index(size: i64) -> Result<u64> {
    u64::try_from(size - 1)
        .map_err(|_| StoreError::new(ErrorKind::Internal, "the journal has no leaf for the event just written"))
}

/// An index as the database keeps it (they stay far below 2^63).
fn signed(at: u64) -> i64 {
    i64::try_from(at).unwrap_or(i64::MAX)
}

fn unsigned(at: i64) -> u64 {
    u64::try_from(at).unwrap_or_default()
}

fn hash_of(bytes: &[u8]) -> Result<Hash> {
    bytes.try_into().map_err(|_| StoreError::new(ErrorKind::Internal, "a journal hash is not 32 bytes"))
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
