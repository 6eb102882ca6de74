//! The `Idempotency-Key` header layer's rules: which keys are valid, how long a pending or an
//! answered key is kept, what makes two requests the same. The transport carries the request and
//! the answer; the store keeps them.

use chrono::Duration;
use sha2::{Digest, Sha256};
use skill_contract::codes::Code;
use skill_store::{Begun, StoredAnswer};

use crate::Engine;
use crate::actor::Actor;
use crate::error::{Class, EngineError, Result};

/// The longest key, in characters.
pub const MAX_REQUEST_KEY: usize = 200;
/// How long a key stays taken by a request that has not answered yet.
pub const PENDING_SECONDS: i64 = 60;
/// How long an answer is replayed.
pub const ANSWER_HOURS: i64 = 24;

/// 1 to 200 visible ASCII characters; `400 invalid_request` otherwise.
pub fn check_request_key(key: &str) -> Result<()> {
    if (1..=MAX_REQUEST_KEY).contains(&key.len()) && key.bytes().all(|b| b.is_ascii_graphic()) {
        return Ok(());
    }
    Err(EngineError::invalid_request(format!(
        "an Idempotency-Key is 1 to {MAX_REQUEST_KEY} visible ASCII characters (a UUID, say)"
    ))
    .with("field", "Idempotency-Key"))
}

/// What makes two requests the same: the method, the path with its query, and the body.
pub fn fingerprint(method: &str, path: &str, body: &[u8]) -> String {
    let mut hash = Sha256::new();
    hash.update(method.as_bytes());
    hash.update(b" ");
    hash.update(path.as_bytes());
    hash.update(b"\n");
    hash.update(body);
    hash.finalize().iter().map(|byte| format!("{byte:02x}")).collect()
}

impl Engine {
    /// Takes `key` for the request `fingerprint` of `actor` (see [`Begun`]).
    pub async fn begin_keyed(&self, actor: &Actor, key: &str, fingerprint: &str) -> Result<Begun> {
        let now = self.now();
        let pending_until = now + Duration::seconds(PENDING_SECONDS);
        Ok(self.store.begin_request(key, actor.id(), fingerprint, now, pending_until).await?)
    }

    /// Keeps the answer of the request that took `key`, for a day.
    pub async fn finish_keyed(&self, key: &str, answer: &StoredAnswer) -> Result<()> {
        Ok(self.store.finish_request(key, answer, self.now() + Duration::hours(ANSWER_HOURS)).await?)
    }

    /// Frees `key` when its request's answer says nothing final (a retryable failure).
    pub async fn abandon_keyed(&self, key: &str) -> Result<()> {
        Ok(self.store.abandon_request(key).await?)
    }

    /// Deletes expired keys; how many.
    pub async fn purge_keyed(&self) -> Result<u64> {
        Ok(self.store.purge_requests(self.now(), 1000).await?)
    }
}

/// `409 idempotency_key_reused`: the key names another request or another principal's.
pub fn key_reused() -> EngineError {
    EngineError::new(
        Class::Conflict,
        Code::IdempotencyKeyReused,
        "this Idempotency-Key was used for another request: use a new key for a new request",
    )
}

/// `409 idempotency_in_flight`: the same request is still being answered.
pub fn key_in_flight() -> EngineError {
    EngineError::new(
        Class::Conflict,
        Code::IdempotencyInFlight,
        "a request with this Idempotency-Key is still being answered: repeat it in a moment",
    )
}
