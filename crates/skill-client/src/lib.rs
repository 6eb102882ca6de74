//! A typed client of the core's API under `/api/v1`, built from the operations table of
//! `skill-api`, so every request and answer has the type the server uses.
//!
//! ```no_run
//! # async fn example() -> Result<(), skill_client::ClientError> {
//! let core = skill_client::Client::new("http://127.0.0.1:8700", "skp_…")?;
//! let skill = core.skill("claim.classify@1").await?;
//! println!("{} is {:?}", skill.reference(), skill.status);
//! # Ok(()) }
//! ```
//!
//! | what | where |
//! |---|---|
//! | the client: address, token, retries, one call of any operation | [`Client`], [`Client::send`], [`Call`] |
//! | one method per operation | `routes.rs`: [`Client::publish`], [`Client::skills`], … |
//! | failures: the envelope as [`ApiError`], no answer, an odd answer | [`ClientError`] |
//!
//! Retries are bounded ([`Client::with_retries`], 2 by default) and happen only when repeating
//! is safe: the core said `retryable: true`, or no answer came back for a read or for a write
//! that carries an `Idempotency-Key` (the same key on every try).

mod call;
mod error;
mod routes;
mod work_routes;

pub use call::{Answer, Call, Client};
pub use error::{ApiError, ClientError};
