//! Knowledge slots and their entities — written once for both backends.

use futures::future::BoxFuture;
use sqlx::types::Json;

use crate::backend::{PgStore, SqliteStore};
use crate::error::{ErrorKind, Result, StoreError};
use crate::records::{EntityRecord, Event, SlotRecord};

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
    /// The entities of a workspace of `kinds` after `(kind, key)`, in `(kind, key)` order and,
    /// for one key, in the order their slots were first applied.
    fn knowledge_entities<'a>(
        &'a self,
        workspace_id: &'a str,
        kinds: &'a [String],
        after: Option<(&'a str, &'a str)>,
    ) -> BoxFuture<'a, Result<Vec<EntityRecord>>>;
}

macro_rules! knowledge_store {
    ($store:ty, $each:literal) => {
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
                kinds: &'a [String],
                after: Option<(&'a str, &'a str)>,
            ) -> BoxFuture<'a, Result<Vec<EntityRecord>>> {
                Box::pin(async move {
                    let (after_kind, after_key) = after.unzip();
                    Ok(sqlx::query_as(concat!(
                        "SELECT e.pack, e.source, e.scope, e.kind, e.key, e.entity, s.created_at AS slot_created_at \
                         FROM knowledge_entities e JOIN knowledge_slots s ON s.workspace_id = e.workspace_id \
                         AND s.pack = e.pack AND s.source = e.source AND s.scope = e.scope \
                         WHERE e.workspace_id = $1 AND e.kind IN (SELECT value FROM ",
                        $each,
                        "($2)) AND ($3 IS NULL OR e.kind > $3 OR (e.kind = $3 AND e.key > $4)) \
                         ORDER BY e.kind, e.key, s.created_at, e.pack, e.source, e.scope"
                    ))
                    .bind(workspace_id)
                    .bind(Json(kinds))
                    .bind(after_kind)
                    .bind(after_key)
                    .fetch_all(self.read())
                    .await?)
                })
            }
        }
    };
}

knowledge_store!(SqliteStore, "json_each");
knowledge_store!(PgStore, "jsonb_array_elements_text");
