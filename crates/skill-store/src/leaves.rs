//! An event written with its journal entry (`docs/journal.md`): the entry (the canonical JSON
//! its leaf hashes) and the salt of its payload's digest, made from the event; the leaf's index
//! given by the database; on SQLite, the hashes of the subtrees the leaf completes written right
//! after it, in the same transaction (PostgreSQL's deferred trigger writes them at commit).

use chrono::SecondsFormat;
use futures::future::BoxFuture;
use skill_journal::entry;
use skill_journal::tree::{self, Hash};

use crate::error::{ErrorKind, Result, StoreError};
use crate::records::Event;

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
pub(crate) async fn sqlite_nodes(connection: &mut sqlx::SqliteConnection, leaf: Hash) -> Result<()> {
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
pub(crate) fn signed(at: u64) -> i64 {
    i64::try_from(at).unwrap_or(i64::MAX)
}

pub(crate) fn unsigned(at: i64) -> u64 {
    u64::try_from(at).unwrap_or_default()
}

pub(crate) fn hash_of(bytes: &[u8]) -> Result<Hash> {
    bytes.try_into().map_err(|_| StoreError::new(ErrorKind::Internal, "a journal hash is not 32 bytes"))
}
