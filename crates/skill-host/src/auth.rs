//! Verifying the bearer token of a call: issuer, audience, lifetime and signature against the
//! IAM's JWKS.
//!
//! `SKILL_SDK_IAM_ISSUER`, `SKILL_SDK_AUDIENCE`, `SKILL_SDK_JWKS_URL` configure it. Each key of the
//! JWKS pins its algorithm (from `alg`, else from its type: RSA → RS256, EC P-256 → ES256,
//! Ed25519 → EdDSA), so a token cannot choose a weaker one (`alg: none`, or HMAC keyed with the
//! public key). Every refusal is 401 with a `WWW-Authenticate` header; a JWKS that cannot be
//! fetched when it is needed is 503.

mod jwks;

use std::sync::Arc;
use std::time::Duration;

use jsonwebtoken::errors::ErrorKind;
use jsonwebtoken::{Algorithm, Validation};
use serde_json::Value;
use skill_sdk::SkillError;

pub use jwks::{Jwks, KeySet, MIN_REFRESH_INTERVAL};

/// The largest token accepted.
pub const MAX_TOKEN_BYTES: usize = 8 * 1024;
/// Clock skew tolerated on `exp` and `nbf`.
pub const LEEWAY: Duration = Duration::from_secs(30);

const ISSUER: &str = "SKILL_SDK_IAM_ISSUER";
const AUDIENCE: &str = "SKILL_SDK_AUDIENCE";
const JWKS_URL: &str = "SKILL_SDK_JWKS_URL";

/// A refused or unverifiable call.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{code}: {message}")]
pub struct AuthError {
    /// `missing_authorization`, `invalid_token`, `token_expired`, …, `verification_unavailable`.
    pub code: &'static str,
    pub message: String,
    /// 401 or 503.
    pub status: u16,
}

impl AuthError {
    fn refused(code: &'static str, message: impl Into<String>) -> Self {
        Self { code, message: message.into(), status: 401 }
    }

    pub(crate) fn unavailable(message: impl Into<String>) -> Self {
        Self { code: "verification_unavailable", message: message.into(), status: 503 }
    }

    /// The `WWW-Authenticate` header of a 401.
    pub fn www_authenticate(&self) -> String {
        let description = self.message.replace('"', "'");
        format!(r#"Bearer realm="skills", error="invalid_token", error_description="{description}""#)
    }

    /// The wire error: `message` is the code, `retryable` only for 503, `details` null.
    pub fn to_skill_error(&self) -> skill_sdk::SkillError {
        skill_sdk::SkillError::new(self.code).with_message(self.code).with_retryable(self.status >= 500)
    }
}

/// Why hosting may not start.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    #[error(
        "refusing to serve without token verification: set {ISSUER}, {AUDIENCE} and {JWKS_URL} (missing: {missing}), \
         or pass --allow-anonymous to serve without checking tokens"
    )]
    NoVerifier { missing: String },
    #[error("{JWKS_URL} is not an http(s) URL: {0}")]
    BadJwksUrl(String),
}

/// Checks tokens for one issuer and audience.
#[derive(Debug)]
pub struct Verifier {
    jwks: Jwks,
    /// The checks of a token, one per algorithm a key may pin, built once.
    validations: Vec<Validation>,
}

/// Who may call a host: a caller whose bearer token the verifier accepts, or — a named choice
/// that nothing falls into by default — anyone.
#[derive(Debug, Clone)]
pub enum Access {
    /// Every request needs a token the verifier accepts.
    Verified(Arc<Verifier>),
    /// Every caller is anonymous: for loopback development and tests only.
    Anonymous,
}

impl Access {
    pub fn verified(verifier: Verifier) -> Self {
        Self::Verified(Arc::new(verifier))
    }

    /// How a start line says it: `tokens verified` or `anonymous`.
    pub fn describe(&self) -> &'static str {
        match self {
            Self::Verified(_) => "tokens verified",
            Self::Anonymous => "anonymous",
        }
    }
}

/// The access configured by the environment: a verifier when the three variables are set;
/// [`Access::Anonymous`] only when none is configured and `allow_anonymous` says so; an error
/// naming what is missing otherwise.
pub fn access_from_env(get: impl Fn(&str) -> Option<String>, allow_anonymous: bool) -> Result<Access, ConfigError> {
    let values: Vec<(&str, Option<String>)> =
        [ISSUER, AUDIENCE, JWKS_URL].iter().map(|name| (*name, get(name).filter(|v| !v.trim().is_empty()))).collect();
    let missing: Vec<&str> = values.iter().filter(|(_, v)| v.is_none()).map(|(name, _)| *name).collect();
    if missing.is_empty() {
        let value = |i: usize| values[i].1.clone().unwrap_or_default();
        return Verifier::new(&value(0), &value(1), &value(2)).map(Access::verified);
    }
    if allow_anonymous {
        return Ok(Access::Anonymous);
    }
    Err(ConfigError::NoVerifier { missing: missing.join(", ") })
}

/// The claims of a verified token.
pub type Claims = serde_json::Map<String, Value>;

/// What a request to a host calls: an HTTP route's skill (`name@version`), or an MCP tool.
#[derive(Debug, Clone, Copy)]
pub enum Called<'a> {
    Route(&'a str),
    Tool(&'a str),
}

/// `Err` (`token_for_another_call`) when a token bound to one call is used for another. The core's
/// audience tokens name the call (`invocation_id`) and what it calls — the version (`skill`, which
/// over HTTP must be the route's `name@version`), the contract's `endpoint`, and for MCP its
/// `tool` — so a token the core issued for one skill serves no other skill on the same host,
/// whatever its audience or however the catalog entry points its endpoint.
pub fn token_covers(claims: &Claims, called: Called<'_>, invocation_id: Option<&Value>) -> Result<(), SkillError> {
    let refused = |what: &str| {
        Err(SkillError::new("token_for_another_call")
            .with_message(format!("the bearer token was issued for another call: its {what} is not this request's")))
    };
    match called {
        Called::Route(reference) => {
            // The version the core issued it for is the route's: a catalog entry that points its
            // endpoint at another skill's route (a read aimed at a write) gets nothing there.
            if let Some(skill) = claims.get("skill").and_then(Value::as_str)
                && skill != reference
            {
                return refused("skill");
            }
            if let Some(endpoint) = claims.get("endpoint").and_then(Value::as_str) {
                let path = endpoint.split(['?', '#']).next().unwrap_or_default().trim_end_matches('/');
                if !path.ends_with(&format!("/skills/{reference}")) {
                    return refused("endpoint");
                }
            }
        }
        Called::Tool(tool) => {
            if let Some(bound) = claims.get("tool").and_then(Value::as_str)
                && bound != tool
            {
                return refused("tool");
            }
        }
    }
    if let Some(bound) = claims.get("invocation_id").and_then(Value::as_str)
        && invocation_id.and_then(Value::as_str) != Some(bound)
    {
        return refused("invocationId");
    }
    Ok(())
}

fn map_error(kind: &ErrorKind) -> AuthError {
    match kind {
        ErrorKind::ExpiredSignature => AuthError::refused("token_expired", "the token has expired"),
        ErrorKind::ImmatureSignature => AuthError::refused("token_not_yet_valid", "the token is not valid yet"),
        ErrorKind::InvalidIssuer => AuthError::refused("invalid_issuer", "the token is from another issuer"),
        ErrorKind::InvalidAudience => AuthError::refused("invalid_audience", "the token is for another audience"),
        ErrorKind::InvalidSignature => AuthError::refused("invalid_signature", "the token's signature does not verify"),
        ErrorKind::InvalidAlgorithm => AuthError::refused("invalid_token", "the token's algorithm is not its key's"),
        ErrorKind::MissingRequiredClaim(claim) => {
            AuthError::refused("invalid_token", format!("the token has no `{claim}` claim"))
        }
        _ => AuthError::refused("invalid_token", "the token is malformed"),
    }
}

impl Verifier {
    pub fn new(issuer: &str, audience: &str, jwks_url: &str) -> Result<Self, ConfigError> {
        let jwks = Jwks::new(jwks_url).ok_or_else(|| ConfigError::BadJwksUrl(jwks_url.to_owned()))?;
        let validations = ASYMMETRIC
            .iter()
            .map(|algorithm| {
                let mut validation = Validation::new(*algorithm);
                validation.leeway = LEEWAY.as_secs();
                validation.validate_nbf = true;
                validation.set_issuer(&[issuer]);
                validation.set_audience(&[audience]);
                validation.set_required_spec_claims(&["exp", "iss", "aud"]);
                validation
            })
            .collect();
        Ok(Self { jwks, validations })
    }

    /// The least time between two key fetches caused by unknown `kid`s (ten seconds).
    pub fn with_min_refresh_interval(mut self, interval: Duration) -> Self {
        self.jwks.set_min_refresh_interval(interval);
        self
    }

    /// How many times the key set was fetched.
    pub async fn key_fetches(&self) -> u64 {
        self.jwks.fetches().await
    }

    /// Verifies the `Authorization` header's bearer token; returns its claims.
    pub async fn verify(&self, authorization: Option<&str>) -> Result<Claims, AuthError> {
        let token = bearer(authorization)?;
        let header = jsonwebtoken::decode_header(token).map_err(|e| map_error(e.kind()))?;
        let key = self.jwks.key(header.kid.as_deref()).await?;
        self.check(token, &header, &key)
    }

    /// [`Verifier::verify`] against a key set already in hand instead of the IAM's: the same
    /// checks, for tools and tests that hold the keys.
    pub fn verify_with(&self, keys: &KeySet, authorization: Option<&str>) -> Result<Claims, AuthError> {
        let token = bearer(authorization)?;
        let header = jsonwebtoken::decode_header(token).map_err(|e| map_error(e.kind()))?;
        let key = keys.key(header.kid.as_deref())?;
        self.check(token, &header, &key)
    }

    /// The checks after the key is known: its algorithm, then signature, issuer, audience and
    /// lifetime.
    fn check(&self, token: &str, header: &jsonwebtoken::Header, key: &jwks::Key) -> Result<Claims, AuthError> {
        if header.alg != key.algorithm {
            return Err(AuthError::refused("invalid_token", "the token's algorithm is not its key's"));
        }
        let validation = self
            .validations
            .iter()
            .find(|validation| validation.algorithms == [key.algorithm])
            .ok_or_else(|| AuthError::refused("invalid_token", "the token's algorithm is not its key's"))?;
        let data = jsonwebtoken::decode::<Claims>(token, &key.decoding, validation).map_err(|e| map_error(e.kind()))?;
        Ok(data.claims)
    }
}

/// The token of an `Authorization: Bearer <token>` header (the scheme in any case), at most
/// [`MAX_TOKEN_BYTES`].
fn bearer(authorization: Option<&str>) -> Result<&str, AuthError> {
    let Some(header) = authorization else {
        return Err(AuthError::refused("missing_authorization", "send Authorization: Bearer <token>"));
    };
    // The scheme is case-insensitive (RFC 9110 §11.1).
    let token = header
        .split_once(' ')
        .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
        .map(|(_, token)| token.trim())
        .filter(|t| !t.is_empty())
        .ok_or_else(|| AuthError::refused("invalid_token", "the Authorization header is not Bearer <token>"))?;
    if token.len() > MAX_TOKEN_BYTES {
        return Err(AuthError::refused("invalid_token", format!("the token is larger than {MAX_TOKEN_BYTES} bytes")));
    }
    Ok(token)
}

/// The algorithms a key may pin: every one but the shared-secret (HMAC) ones.
const ASYMMETRIC: [Algorithm; 9] = [
    Algorithm::RS256,
    Algorithm::RS384,
    Algorithm::RS512,
    Algorithm::PS256,
    Algorithm::PS384,
    Algorithm::PS512,
    Algorithm::ES256,
    Algorithm::ES384,
    Algorithm::EdDSA,
];

/// Whether a key may pin `algorithm`.
pub(crate) fn is_asymmetric(algorithm: Algorithm) -> bool {
    ASYMMETRIC.contains(&algorithm)
}
