//! Console sessions — written once for both backends: a session starts, is read at every page,
//! and ends once (sign-out); the database refuses any other change.

use futures::future::BoxFuture;

use crate::backend::{PgStore, SqliteStore};
use crate::error::Result;
use crate::records::{ConsoleSession, Event, Time};

pub trait ConsoleStore: Send + Sync {
    /// Starts a session, with its event.
    fn insert_console_session<'a>(&'a self, session: &'a ConsoleSession, event: &'a Event)
    -> BoxFuture<'a, Result<()>>;
    /// The session whose cookie secret hashes to `secret_hash`; `NotFound` when there is none.
    fn console_session<'a>(&'a self, secret_hash: &'a str) -> BoxFuture<'a, Result<ConsoleSession>>;
    /// Ends a live session at `at`, with its event; `false` (and no event) when it had ended.
    fn end_console_session<'a>(&'a self, id: &'a str, at: Time, event: &'a Event) -> BoxFuture<'a, Result<bool>>;
}

macro_rules! console_store {
    ($store:ty) => {
        impl ConsoleStore for $store {
            fn insert_console_session<'a>(
                &'a self,
                s: &'a ConsoleSession,
                event: &'a Event,
            ) -> BoxFuture<'a, Result<()>> {
                Box::pin(async move {
                    let mut tx = self.write().await?;
                    sqlx::query(
                        "INSERT INTO console_sessions (id, secret_hash, token_hash, principal_id, csrf, created_at, \
                         expires_at, ended_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
                    )
                    .bind(&s.id)
                    .bind(&s.secret_hash)
                    .bind(&s.token_hash)
                    .bind(&s.principal_id)
                    .bind(&s.csrf)
                    .bind(s.created_at)
                    .bind(s.expires_at)
                    .bind(s.ended_at)
                    .execute(&mut *tx)
                    .await?;
                    crate::events::commit!(tx, event);
                    Ok(())
                })
            }

            fn console_session<'a>(&'a self, secret_hash: &'a str) -> BoxFuture<'a, Result<ConsoleSession>> {
                Box::pin(async move {
                    Ok(sqlx::query_as(
                        "SELECT id, secret_hash, token_hash, principal_id, csrf, created_at, expires_at, ended_at \
                         FROM console_sessions WHERE secret_hash = $1",
                    )
                    .bind(secret_hash)
                    .fetch_one(self.read())
                    .await?)
                })
            }

            fn end_console_session<'a>(
                &'a self,
                id: &'a str,
                at: Time,
                event: &'a Event,
            ) -> BoxFuture<'a, Result<bool>> {
                Box::pin(async move {
                    let mut tx = self.write().await?;
                    let done =
                        sqlx::query("UPDATE console_sessions SET ended_at = $2 WHERE id = $1 AND ended_at IS NULL")
                            .bind(id)
                            .bind(at)
                            .execute(&mut *tx)
                            .await?;
                    if done.rows_affected() == 0 {
                        return Ok(false);
                    }
                    crate::events::commit!(tx, event);
                    Ok(true)
                })
            }
        }
    };
}

console_store!(SqliteStore);
console_store!(PgStore);
