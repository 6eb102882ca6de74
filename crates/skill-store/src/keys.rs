//! The keys the core signs audience tokens with — written once for both backends (a rare path:
//! a key is read once a minute and written once a rotation).

use futures::future::BoxFuture;
use sqlx::types::Json;

use crate::backend::{PgStore, SqliteStore};
use crate::error::Result;
use crate::records::{Event, SigningKey, Time};

pub trait KeyStore: Send + Sync {
    /// The keys published at `now` (`published_until` after it), newest first.
    fn signing_keys(&self, now: Time) -> BoxFuture<'_, Result<Vec<SigningKey>>>;
    /// Adds a key with its event; `Conflict` when its `kid` is taken.
    fn insert_signing_key<'a>(&'a self, key: &'a SigningKey, event: &'a Event) -> BoxFuture<'a, Result<()>>;
}

macro_rules! key_store {
    ($store:ty) => {
        impl KeyStore for $store {
            fn signing_keys(&self, now: Time) -> BoxFuture<'_, Result<Vec<SigningKey>>> {
                Box::pin(async move {
                    Ok(sqlx::query_as(
                        "SELECT kid, algorithm, private_key, public_jwk, created_at, signs_until, published_until \
                         FROM signing_keys WHERE published_until > $1 ORDER BY created_at DESC, kid DESC",
                    )
                    .bind(now)
                    .fetch_all(self.read())
                    .await?)
                })
            }

            fn insert_signing_key<'a>(&'a self, k: &'a SigningKey, event: &'a Event) -> BoxFuture<'a, Result<()>> {
                Box::pin(async move {
                    let mut tx = self.write().await?;
                    sqlx::query(
                        "INSERT INTO signing_keys (kid, algorithm, private_key, public_jwk, created_at, signs_until, \
                         published_until) VALUES ($1, $2, $3, $4, $5, $6, $7)",
                    )
                    .bind(&k.kid)
                    .bind(&k.algorithm)
                    .bind(&k.private_key)
                    .bind(Json(&k.public_jwk))
                    .bind(k.created_at)
                    .bind(k.signs_until)
                    .bind(k.published_until)
                    .execute(&mut *tx)
                    .await?;
                    crate::events::commit!(tx, event);
                    Ok(())
                })
            }
        }
    };
}

key_store!(SqliteStore);
key_store!(PgStore);
