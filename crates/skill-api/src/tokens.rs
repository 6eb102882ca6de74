//! Audience tokens: what an executor asks the core for, and what it gets.

use serde::{Deserialize, Serialize};

/// The body of `POST /audience-tokens`: the call the token is for, which the executor holds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AudienceTokenRequest {
    /// The call: the token carries its contract's `implementation.auth.audience` and exactly its
    /// `auth.scopes`.
    pub invocation_id: String,
    /// The fencing token of the executor's current lease of the call.
    pub fencing_token: i64,
    /// The session the lease was taken with, when it was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
}

/// A signed token for one audience.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AudienceTokenOut {
    /// The JWT (ES256, `kid` in its header; the core's JWKS at `/.well-known/jwks.json`).
    pub access_token: String,
    /// `Bearer`.
    pub token_type: String,
    /// When it stops being valid (RFC 3339): five minutes after it was issued, or when the call's
    /// lease ends if that is sooner.
    pub expires_at: String,
    pub audience: String,
    /// The scopes it carries, sorted (its `scope` claim, space-separated).
    pub scopes: Vec<String>,
    /// The call it is for (its `invocation_id` claim).
    pub invocation_id: String,
}
