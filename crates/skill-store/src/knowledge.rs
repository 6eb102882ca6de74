//! Knowledge slots and their entities — written once for both backends.

use futures::future::BoxFuture;
use sqlx::types::Json;

use crate::backend::{PgStore, SqliteStore};
use crate::error::{ErrorKind, Result, StoreError};
use crate::records::{DocumentRecord, EntityRecord, Event, SlotRecord};

/// Knowledge slots: each replaced whole by a snapshot.
pub trait KnowledgeStore: Send + Sync {
    /// The slot, if any snapshot was applied to it.
    fn knowledge_slot<'a>(
        &'a self,
        workspace_id: &'a str,
        pack: &'a str,
        source: &'a str,
        scope: &'a str,
    ) -> BoxFuture<'a, Result<Option<SlotRecord>>>;
    /// Writes `slot` (row version 1: a new slot; else one on from the stored one) with its
    /// entities and event, in one transaction: `Stale` when the stored slot moved on (or was
    /// created meanwhile), and nothing is written.
    fn put_knowledge_slot<'a>(
        &'a self,
        slot: &'a SlotRecord,
        entities: &'a [(String, String, serde_json::Value)],
        event: &'a Event,
    ) -> BoxFuture<'a, Result<()>>;
    /// At most `limit` entity rows of a workspace of `kinds` (every kind when `None`) after
    /// `(kind, key)`, in `(kind, key)` order and, for one key, in the order their slots were first
    /// applied.
    fn knowledge_entities<'a>(
        &'a self,
        workspace_id: &'a str,
        kinds: Option<&'a [String]>,
        after: Option<(&'a str, &'a str)>,
        limit: i64,
    ) -> BoxFuture<'a, Result<Vec<EntityRecord>>>;
    /// Stores a document, replacing the one with its natural key, with its event.
    fn put_document<'a>(&'a self, document: &'a DocumentRecord, event: &'a Event) -> BoxFuture<'a, Result<()>>;
    /// The documents of a workspace whose text matches any of `words` (best first), at most
    /// `limit`.
    fn search_documents<'a>(
        &'a self,
        workspace_id: &'a str,
        words: &'a [String],
        limit: i64,
    ) -> BoxFuture<'a, Result<Vec<DocumentRecord>>>;
    /// The documents of a workspace whose links name `(kind, key)`.
    fn linked_documents<'a>(
        &'a self,
        workspace_id: &'a str,
        kind: &'a str,
        key: &'a str,
        limit: i64,
    ) -> BoxFuture<'a, Result<Vec<DocumentRecord>>>;
}

macro_rules! document_columns {
    ($prefix:literal) => {
        concat!(
            $prefix,
            "workspace_id, ",
            $prefix,
            "natural_key, ",
            $prefix,
            "title, ",
            $prefix,
            "type, ",
            $prefix,
            "chunks, ",
            $prefix,
            "links, ",
            $prefix,
            "meta, ",
            $prefix,
            "body, ",
            $prefix,
            "created_at, ",
            $prefix,
            "updated_at"
        )
    };
}

/// A search of any of the words: FTS5's `"w1" OR "w2"` (each word quoted, quotes doubled).
fn fts5_query(words: &[String]) -> String {
    words.iter().map(|word| format!("\"{}\"", word.replace('"', "\"\""))).collect::<Vec<_>>().join(" OR ")
}

/// PostgreSQL's `w1 | w2`, each word a quoted lexeme.
fn tsquery(words: &[String]) -> String {
    words
        .iter()
        .map(|word| format!("'{}'", word.replace('\\', "\\\\").replace('\'', "''")))
        .collect::<Vec<_>>()
        .join(" | ")
}

macro_rules! knowledge_store {
    ($store:ty, $each:literal, $query:ident, $search:expr) => {
        impl KnowledgeStore for $store {
            fn knowledge_slot<'a>(
                &'a self,
                workspace_id: &'a str,
                pack: &'a str,
                source: &'a str,
                scope: &'a str,
            ) -> BoxFuture<'a, Result<Option<SlotRecord>>> {
                Box::pin(async move {
                    Ok(sqlx::query_as(
                        "SELECT workspace_id, pack, source, scope, state, state_token, row_version, created_at, \
                         updated_at FROM knowledge_slots WHERE workspace_id = $1 AND pack = $2 AND source = $3 \
                         AND scope = $4",
                    )
                    .bind(workspace_id)
                    .bind(pack)
                    .bind(source)
                    .bind(scope)
                    .fetch_optional(self.read())
                    .await?)
                })
            }

            fn put_knowledge_slot<'a>(
                &'a self,
                s: &'a SlotRecord,
                entities: &'a [(String, String, serde_json::Value)],
                event: &'a Event,
            ) -> BoxFuture<'a, Result<()>> {
                Box::pin(async move {
                    let mut tx = self.write().await?;
                    let stale = || StoreError::new(ErrorKind::Stale, "the knowledge slot moved on");
                    if s.row_version == 1 {
                        let done = sqlx::query(
                            "INSERT INTO knowledge_slots (workspace_id, pack, source, scope, state, state_token, \
                             row_version, created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $6, 1, $7, $8) \
                             ON CONFLICT DO NOTHING",
                        )
                        .bind(&s.workspace_id)
                        .bind(&s.pack)
                        .bind(&s.source)
                        .bind(&s.scope)
                        .bind(Json(&s.state))
                        .bind(&s.state_token)
                        .bind(s.created_at)
                        .bind(s.updated_at)
                        .execute(&mut *tx)
                        .await?;
                        if done.rows_affected() == 0 {
                            return Err(stale());
                        }
                    } else {
                        let done = sqlx::query(
                            "UPDATE knowledge_slots SET state = $5, state_token = $6, row_version = $7, \
                             updated_at = $8 WHERE workspace_id = $1 AND pack = $2 AND source = $3 AND scope = $4 \
                             AND row_version = $9",
                        )
                        .bind(&s.workspace_id)
                        .bind(&s.pack)
                        .bind(&s.source)
                        .bind(&s.scope)
                        .bind(Json(&s.state))
                        .bind(&s.state_token)
                        .bind(s.row_version)
                        .bind(s.updated_at)
                        .bind(s.row_version - 1)
                        .execute(&mut *tx)
                        .await?;
                        if done.rows_affected() == 0 {
                            return Err(stale());
                        }
                        sqlx::query(
                            "DELETE FROM knowledge_entities WHERE workspace_id = $1 AND pack = $2 AND source = $3 \
                             AND scope = $4",
                        )
                        .bind(&s.workspace_id)
                        .bind(&s.pack)
                        .bind(&s.source)
                        .bind(&s.scope)
                        .execute(&mut *tx)
                        .await?;
                    }
                    for (kind, key, entity) in entities {
                        sqlx::query(
                            "INSERT INTO knowledge_entities (workspace_id, pack, source, scope, kind, key, entity) \
                             VALUES ($1, $2, $3, $4, $5, $6, $7)",
                        )
                        .bind(&s.workspace_id)
                        .bind(&s.pack)
                        .bind(&s.source)
                        .bind(&s.scope)
                        .bind(kind)
                        .bind(key)
                        .bind(Json(entity))
                        .execute(&mut *tx)
                        .await?;
                    }
                    crate::events::commit!(tx, event);
                    Ok(())
                })
            }

            fn knowledge_entities<'a>(
                &'a self,
                workspace_id: &'a str,
                kinds: Option<&'a [String]>,
                after: Option<(&'a str, &'a str)>,
                limit: i64,
            ) -> BoxFuture<'a, Result<Vec<EntityRecord>>> {
                Box::pin(async move {
                    let (after_kind, after_key) = after.unzip();
                    Ok(sqlx::query_as(concat!(
                        "SELECT e.pack, e.source, e.scope, e.kind, e.key, e.entity, s.created_at AS slot_created_at \
                         FROM knowledge_entities e JOIN knowledge_slots s ON s.workspace_id = e.workspace_id \
                         AND s.pack = e.pack AND s.source = e.source AND s.scope = e.scope \
                         WHERE e.workspace_id = $1 AND ($2 IS NULL OR e.kind IN (SELECT value FROM ",
                        $each,
                        "($2))) AND ($3 IS NULL OR e.kind > $3 OR (e.kind = $3 AND e.key > $4)) \
                         ORDER BY e.kind, e.key, s.created_at, e.pack, e.source, e.scope LIMIT $5"
                    ))
                    .bind(workspace_id)
                    .bind(kinds.map(Json))
                    .bind(after_kind)
                    .bind(after_key)
                    .bind(limit)
                    .fetch_all(self.read())
                    .await?)
                })
            }

            fn put_document<'a>(&'a self, d: &'a DocumentRecord, event: &'a Event) -> BoxFuture<'a, Result<()>> {
                Box::pin(async move {
                    let mut tx = self.write().await?;
                    sqlx::query(
                        "INSERT INTO knowledge_documents (workspace_id, natural_key, title, type, chunks, links, meta, \
                         body, created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) \
                         ON CONFLICT (workspace_id, natural_key) DO UPDATE SET title = excluded.title, \
                         type = excluded.type, chunks = excluded.chunks, links = excluded.links, \
                         meta = excluded.meta, body = excluded.body, updated_at = excluded.updated_at",
                    )
                    .bind(&d.workspace_id)
                    .bind(&d.natural_key)
                    .bind(&d.title)
                    .bind(&d.kind)
                    .bind(Json(&d.chunks))
                    .bind(Json(&d.links))
                    .bind(d.meta.as_ref().map(Json))
                    .bind(&d.body)
                    .bind(d.created_at)
                    .bind(d.updated_at)
                    .execute(&mut *tx)
                    .await?;
                    crate::events::commit!(tx, event);
                    Ok(())
                })
            }

            fn search_documents<'a>(
                &'a self,
                workspace_id: &'a str,
                words: &'a [String],
                limit: i64,
            ) -> BoxFuture<'a, Result<Vec<DocumentRecord>>> {
                Box::pin(async move {
                    if words.is_empty() {
                        return Ok(Vec::new());
                    }
                    Ok(sqlx::query_as($search)
                        .bind(workspace_id)
                        .bind($query(words))
                        .bind(limit)
                        .fetch_all(self.read())
                        .await?)
                })
            }

            fn linked_documents<'a>(
                &'a self,
                workspace_id: &'a str,
                kind: &'a str,
                key: &'a str,
                limit: i64,
            ) -> BoxFuture<'a, Result<Vec<DocumentRecord>>> {
                Box::pin(async move {
                    Ok(sqlx::query_as(concat!(
                        "SELECT ", document_columns!(""), " FROM knowledge_documents d WHERE workspace_id = $1 \
                         AND EXISTS (SELECT 1 FROM ", $each, "(d.links) l WHERE l.value = $2) \
                         ORDER BY updated_at DESC, natural_key LIMIT $3"
                    ))
                    .bind(workspace_id)
                    .bind(format!("{kind}:{key}"))
                    .bind(limit)
                    .fetch_all(self.read())
                    .await?)
                })
            }
        }
    };
}

knowledge_store!(
    SqliteStore,
    "json_each",
    fts5_query,
    concat!(
        "SELECT ",
        document_columns!("d."),
        " FROM knowledge_documents_text t JOIN knowledge_documents d \
     ON d.workspace_id = t.workspace_id AND d.natural_key = t.natural_key \
     WHERE knowledge_documents_text MATCH $2 AND t.workspace_id = $1 ORDER BY rank LIMIT $3"
    )
);
knowledge_store!(
    PgStore,
    "jsonb_array_elements_text",
    tsquery,
    concat!(
        "SELECT ",
        document_columns!(""),
        " FROM knowledge_documents \
     WHERE workspace_id = $1 AND search @@ to_tsquery('simple', $2) \
     ORDER BY ts_rank(search, to_tsquery('simple', $2)) DESC, natural_key LIMIT $3"
    )
);
