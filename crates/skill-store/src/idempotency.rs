//! The records of the `Idempotency-Key` header layer: a write's answer kept under its key, so a
//! repeat is answered from here instead of acting again — written once for both backends.

use futures::future::BoxFuture;
use serde_json::Value;
use sqlx::Row as _;
use sqlx::types::Json;

use crate::backend::{PgStore, SqliteStore};
use crate::error::Result;
use crate::records::Time;

/// An answer as it is replayed.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredAnswer {
    pub status: u16,
    /// The headers replayed with it (`content-type`, `etag`, …), as a JSON object of strings.
    pub headers: Value,
    pub body: Vec<u8>,
}

/// What starting a keyed request found.
#[derive(Debug, Clone, PartialEq)]
pub enum Begun {
    /// The key is this request's now (pending until the answer is stored): act.
    Fresh,
    /// The same request was answered: replay it.
    Replay(StoredAnswer),
    /// The same request is being answered right now.
    InFlight,
    /// The key was used by another principal or for another request.
    Mismatch,
}

pub trait IdempotencyStore: Send + Sync {
    /// Takes `key` for the request `fingerprint` of `principal_id`, pending until `pending_until`;
    /// an expired record of the key is replaced.
    fn begin_request<'a>(
        &'a self,
        key: &'a str,
        principal_id: &'a str,
        fingerprint: &'a str,
        now: Time,
        pending_until: Time,
    ) -> BoxFuture<'a, Result<Begun>>;
    /// Stores the answer of the pending request `key`, kept until `expires_at`.
    fn finish_request<'a>(
        &'a self,
        key: &'a str,
        answer: &'a StoredAnswer,
        expires_at: Time,
    ) -> BoxFuture<'a, Result<()>>;
    /// Lets go of a pending key whose request has no answer worth keeping (a retryable failure).
    fn abandon_request<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<()>>;
    /// Deletes at most `limit` records expired at `now`; how many.
    fn purge_requests<'a>(&'a self, now: Time, limit: u32) -> BoxFuture<'a, Result<u64>>;
}

macro_rules! idempotency_store {
    ($store:ty) => {
        impl IdempotencyStore for $store {
            fn begin_request<'a>(
                &'a self,
                key: &'a str,
                principal_id: &'a str,
                fingerprint: &'a str,
                now: Time,
                pending_until: Time,
            ) -> BoxFuture<'a, Result<Begun>> {
                Box::pin(async move {
                    let mut tx = self.write().await?;
                    // A new key, or one whose record expired, is this request's.
                    let taken = sqlx::query(
                        "INSERT INTO http_idempotency (key, principal_id, fingerprint, status, created_at, expires_at) \
                         VALUES ($1, $2, $3, 'pending', $4, $5) \
                         ON CONFLICT (key) DO UPDATE SET principal_id = excluded.principal_id, \
                         fingerprint = excluded.fingerprint, status = 'pending', response_status = NULL, \
                         response_headers = NULL, response_body = NULL, created_at = excluded.created_at, \
                         expires_at = excluded.expires_at WHERE http_idempotency.expires_at <= $4",
                    )
                    .bind(key)
                    .bind(principal_id)
                    .bind(fingerprint)
                    .bind(now)
                    .bind(pending_until)
                    .execute(&mut *tx)
                    .await?
                    .rows_affected();
                    if taken == 1 {
                        tx.commit().await?;
                        return Ok(Begun::Fresh);
                    }
                    let row = sqlx::query(
                        "SELECT principal_id, fingerprint, status, response_status, response_headers, response_body \
                         FROM http_idempotency WHERE key = $1",
                    )
                    .bind(key)
                    .fetch_one(&mut *tx)
                    .await?;
                    let (owner, stored): (String, String) = (row.try_get(0)?, row.try_get(1)?);
                    if owner != principal_id || stored != fingerprint {
                        return Ok(Begun::Mismatch);
                    }
                    if row.try_get::<String, _>(2)? == "pending" {
                        return Ok(Begun::InFlight);
                    }
                    let status: i32 = row.try_get(3)?;
                    let Json(headers): Json<Value> = row.try_get(4)?;
                    let body: Vec<u8> = row.try_get::<Option<Vec<u8>>, _>(5)?.unwrap_or_default();
                    Ok(Begun::Replay(StoredAnswer { status: u16::try_from(status).unwrap_or(500), headers, body }))
                })
            }

            fn finish_request<'a>(
                &'a self,
                key: &'a str,
                answer: &'a StoredAnswer,
                expires_at: Time,
            ) -> BoxFuture<'a, Result<()>> {
                Box::pin(async move {
                    let mut tx = self.write().await?;
                    sqlx::query(
                        "UPDATE http_idempotency SET status = 'done', response_status = $2, response_headers = $3, \
                         response_body = $4, expires_at = $5 WHERE key = $1 AND status = 'pending'",
                    )
                    .bind(key)
                    .bind(i32::from(answer.status))
                    .bind(Json(&answer.headers))
                    .bind(&answer.body)
                    .bind(expires_at)
                    .execute(&mut *tx)
                    .await?;
                    tx.commit().await?;
                    Ok(())
                })
            }

            fn abandon_request<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<()>> {
                Box::pin(async move {
                    let mut tx = self.write().await?;
                    sqlx::query("DELETE FROM http_idempotency WHERE key = $1 AND status = 'pending'")
                        .bind(key)
                        .execute(&mut *tx)
                        .await?;
                    tx.commit().await?;
                    Ok(())
                })
            }

            fn purge_requests<'a>(&'a self, now: Time, limit: u32) -> BoxFuture<'a, Result<u64>> {
                Box::pin(async move {
                    let mut tx = self.write().await?;
                    let done = sqlx::query(
                        "DELETE FROM http_idempotency WHERE key IN \
                         (SELECT key FROM http_idempotency WHERE expires_at <= $1 LIMIT $2)",
                    )
                    .bind(now)
                    .bind(i64::from(limit))
                    .execute(&mut *tx)
                    .await?;
                    tx.commit().await?;
                    Ok(done.rows_affected())
                })
            }
        }
    };
}

idempotency_store!(SqliteStore);
idempotency_store!(PgStore);
