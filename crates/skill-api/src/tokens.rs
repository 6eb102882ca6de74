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

/// The claims of an audience token the core signs: standard JWT claims, the call, and what the
/// call reaches, so that a host refuses the token for anything else.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct AudienceClaims {
    /// The core's issuer name.
    pub iss: String,
    /// The principal whose authority the call has.
    pub sub: String,
    pub aud: String,
    pub iat: i64,
    pub nbf: i64,
    pub exp: i64,
    pub jti: String,
    /// The call's scopes, space-separated.
    pub scope: String,
    pub invocation_id: String,
    /// `name@version`.
    pub skill: String,
    /// The endpoint of an `http` or `mcp` call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub endpoint: Option<String>,
    /// The tool of an `mcp` call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
}
