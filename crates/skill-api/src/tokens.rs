//! Audience tokens: what an executor asks the core for, and what it gets.

use serde::{Deserialize, Serialize};

/// The body of `POST /audience-tokens`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AudienceTokenRequest {
    /// The audience the token is for: a contract's `implementation.auth.audience` (1 to 200
    /// characters; `skill-core` and `skill-executor` are reserved).
    pub audience: String,
    /// Exactly the contract's `auth.scopes` (at most 50, each at most 100 characters).
    #[serde(default)]
    pub scopes: Vec<String>,
}

/// A signed token for one audience.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AudienceTokenOut {
    /// The JWT (ES256, `kid` in its header; the core's JWKS at `/.well-known/jwks.json`).
    pub access_token: String,
    /// `Bearer`.
    pub token_type: String,
    /// When it stops being valid (RFC 3339); five minutes after it was issued.
    pub expires_at: String,
    pub audience: String,
    /// The scopes it carries, sorted (its `scope` claim, space-separated).
    pub scopes: Vec<String>,
}
