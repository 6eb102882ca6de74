//! Audience tokens: the core is the issuer of the short-lived JWTs an executor sends to the
//! skills it calls (`implementation.auth.audience`). It signs with ES256 keys it keeps in the
//! database. Each key signs for 30 days and stays in the JWKS a day longer; the next one is made
//! a day before that and signs only once it has been published for the lead time (an hour), so a
//! host that cached the JWKS has seen it before any token names it. A token is issued to an
//! executor for one call it holds under a live lease, for that call's contract audience and
//! scopes and nothing wider, names the call, its version and what it reaches (`invocation_id`, `skill`, `endpoint`, `tool`),
//! and lives five minutes at most and
//! never past the lease.
//!
//! The database holds the private keys: whoever reads it can mint tokens for the skills, so it is
//! guarded as the keys would be.

use skill_contract::codes::Code;
use std::sync::{Arc, Mutex};
use std::time::{Duration as StdDuration, Instant};

use aws_lc_rs::signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, KeyPair as _};
use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use chrono::Duration;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::{Value, json};
use skill_api::events::SigningKeyCreated;
use skill_api::{AudienceClaims, AudienceTokenOut, AudienceTokenRequest};
use skill_contract::Protocol;
use skill_store::records::{SigningKey, Time};

use crate::actor::Actor;
pub use crate::audiences::{RESERVED_AUDIENCES, reserved_audience};
use crate::catalog::view_time;
use crate::error::{Class, EngineError, Result};
use crate::{Engine, Origin};

/// How long a token lives.
pub const TOKEN_SECONDS: i64 = 300;

/// The issuer when none is configured.
pub const DEFAULT_ISSUER: &str = "skill-core";
const SIGNING_DAYS: i64 = 30;
const PUBLISHED_DAYS_AFTER: i64 = 1;
/// A new key is made when the newest one signs for less than this much longer.
const ROTATE_BEFORE_HOURS: i64 = 24;
/// How long the keys read from the database are used before reading them again.
const KEYS_FRESH: StdDuration = StdDuration::from_secs(60);
const MAX_SCOPES: usize = 50;

/// How long a new key is published before it signs, by default: hosts keep a fetched JWKS up
/// to an hour.
pub const DEFAULT_KEY_LEAD: StdDuration = StdDuration::from_secs(3600);

/// The issuer's name, how long a new key is published before it signs, and the keys it last
/// read.
#[derive(Debug)]
pub(crate) struct Issuer {
    name: String,
    lead: StdDuration,
    keys: Mutex<Option<(Instant, Arc<Vec<SigningKey>>)>>,
}

impl Default for Issuer {
    fn default() -> Self {
        Self::named(DEFAULT_ISSUER, DEFAULT_KEY_LEAD)
    }
}

impl Issuer {
    pub(crate) fn named(name: &str, lead: StdDuration) -> Self {
        Self { name: name.to_owned(), lead, keys: Mutex::new(None) }
    }

    fn cached(&self) -> Option<Arc<Vec<SigningKey>>> {
        let keys = self.keys.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        keys.as_ref().filter(|(read, _)| read.elapsed() < KEYS_FRESH).map(|(_, keys)| Arc::clone(keys))
    }

    fn remember(&self, keys: Vec<SigningKey>) -> Arc<Vec<SigningKey>> {
        let keys = Arc::new(keys);
        *self.keys.lock().unwrap_or_else(std::sync::PoisonError::into_inner) =
            Some((Instant::now(), Arc::clone(&keys)));
        keys
    }

    fn forget(&self) {
        *self.keys.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = None;
    }
}

impl Engine {
    /// The issuer tokens name (`iss`): the core's public URL, as hosts are told
    /// (`SKILL_SDK_IAM_ISSUER`).
    pub fn issuer(&self) -> &str {
        &self.issuer.name
    }

    /// A token for the call `request.invocation_id`, which the executor `actor` holds under a
    /// live lease (`skills.execute`): for exactly that call's contract audience and scopes, bound
    /// to it (its `invocation_id` and `skill` claims, which hosts check), living five minutes at most and never past the lease.
    pub async fn audience_token(&self, actor: &Actor, request: &AudienceTokenRequest) -> Result<AudienceTokenOut> {
        actor.require("skills.execute")?;
        if !actor.is_executor() {
            return Err(EngineError::new(
                Class::Forbidden,
                Code::PermissionDenied,
                "only an executor obtains audience tokens, for a call it holds",
            )
            .with("kind", actor.principal().kind));
        }
        let (call, skill, now) =
            self.held(actor, &request.invocation_id, request.fencing_token, request.session_id.as_deref()).await?;
        let implementation = crate::catalog::contract_of(&skill)?.implementation();
        let Some(auth) = implementation.auth() else {
            return Err(EngineError::new(
                Class::Invalid,
                Code::NoAudience,
                format!("the contract of {}@{} names no audience: its calls carry no token", skill.name, skill.version),
            )
            .with("invocationId", call.id));
        };
        let audience = auth.audience().to_owned();
        if reserved_audience(&audience, Some(&self.issuer.name)) {
            return Err(EngineError::new(
                Class::Forbidden,
                Code::AudienceReserved,
                format!("no token is issued for the audience {audience}: it is reserved"),
            )
            .with("audience", audience));
        }
        if !actor.allowance().is_some_and(|allowed| allowed.audiences.contains(&audience)) {
            return Err(EngineError::new(
                Class::Forbidden,
                Code::ExecutorNotAllowed,
                format!("the operator did not allow this executor tokens for the audience {audience}"),
            )
            .with("field", "audiences")
            .with("value", audience));
        }
        let mut scopes: Vec<String> = auth.scopes().to_vec();
        scopes.sort();
        scopes.dedup();
        scopes.truncate(MAX_SCOPES);
        let key = self.signing_key(now).await?;
        let lease = call.lease_expires_at.unwrap_or(now);
        let expires = (now + Duration::seconds(TOKEN_SECONDS)).min(lease);
        // What the call reaches, so that the host refuses the token for anything else.
        let claims = AudienceClaims {
            iss: self.issuer.name.clone(),
            sub: actor.id().to_owned(),
            aud: audience.to_owned(),
            iat: now.timestamp(),
            nbf: now.timestamp(),
            exp: expires.timestamp(),
            jti: self.new_id(),
            scope: scopes.join(" "),
            invocation_id: call.id.clone(),
            skill: format!("{}@{}", skill.name, skill.version),
            endpoint: implementation.endpoint().map(str::to_owned),
            tool: implementation.entrypoint().filter(|_| implementation.protocol() == Protocol::Mcp).map(str::to_owned),
        };
        let token = sign(&key, &claims)?;
        Ok(AudienceTokenOut {
            access_token: token,
            token_type: "Bearer".to_owned(),
            expires_at: view_time(&expires),
            audience,
            scopes,
            invocation_id: call.id,
        })
    }

    /// The public keys tokens may be signed with, as a JWKS document. The first key is made
    /// here when there is none yet, so a host that fetches the JWKS before the first token is
    /// issued already knows the key that token will name.
    pub async fn jwks(&self) -> Result<Value> {
        let now = self.now();
        let mut keys = self.published_keys(now).await?;
        if keys.is_empty() {
            self.new_signing_key(now).await?;
            keys = self.published_keys(now).await?;
        }
        Ok(json!({"keys": keys.iter().map(|key| key.public_jwk.clone()).collect::<Vec<_>>()}))
    }

    /// Makes a new signing key now: published at once, signing after the lead time, the previous
    /// ones published until they expire; returns its `kid`.
    pub async fn rotate_signing_key(&self) -> Result<String> {
        let key = self.new_signing_key(self.now()).await?;
        Ok(key.kid)
    }

    /// The keys published at `now`, newest first.
    async fn published_keys(&self, now: Time) -> Result<Arc<Vec<SigningKey>>> {
        if let Some(keys) = self.issuer.cached() {
            return Ok(keys);
        }
        Ok(self.issuer.remember(self.store.signing_keys(now).await?))
    }

    /// The key to sign with now: the newest one published at least the lead time ago (hosts
    /// that fetched the JWKS before it was made would not know it), else the newest that still
    /// signs; a new key is made — published now, signing after the lead — when the newest signs
    /// for less than a day more, and at once when none can sign.
    async fn signing_key(&self, now: Time) -> Result<SigningKey> {
        let keys = self.published_keys(now).await?;
        let lead = Duration::from_std(self.issuer.lead).unwrap_or_else(|_| Duration::hours(1));
        let signing: Vec<&SigningKey> =
            keys.iter().filter(|key| key.signs_until > now + Duration::seconds(TOKEN_SECONDS)).collect();
        let Some(newest) = keys.first().filter(|_| !signing.is_empty()) else {
            return self.new_signing_key(now).await;
        };
        if newest.signs_until <= now + Duration::hours(ROTATE_BEFORE_HOURS) {
            self.new_signing_key(now).await?;
        }
        let ready = signing.iter().find(|key| key.created_at + lead <= now).or(signing.last());
        Ok(ready.map(|key| (*key).clone()).unwrap_or_else(|| newest.clone()))
    }

    async fn new_signing_key(&self, now: Time) -> Result<SigningKey> {
        let key = generate(&self.new_id(), now)?;
        let created = SigningKeyCreated {
            kid: key.kid.clone(),
            algorithm: key.algorithm.clone(),
            signs_until: view_time(&key.signs_until),
            published_until: view_time(&key.published_until),
        };
        let event = self.event(format!("signing_key:{}", key.kid), &created, &Origin::default());
        self.store.insert_signing_key(&key, &event).await?;
        self.issuer.forget();
        Ok(key)
    }
}

fn internal(message: &str) -> EngineError {
    tracing::error!(message, "signing failed");
    EngineError::new(Class::Internal, Code::InternalError, "an internal error occurred; the log has its details")
}

/// A new ES256 key named `kid`, signing from `now`.
fn generate(kid: &str, now: Time) -> Result<SigningKey> {
    let random = aws_lc_rs::rand::SystemRandom::new();
    let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &random)
        .map_err(|_| internal("cannot generate a P-256 key"))?;
    let pair = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, pkcs8.as_ref())
        .map_err(|_| internal("cannot read the generated key"))?;
    // The uncompressed point: 0x04, then x and y, 32 bytes each.
    let point = pair.public_key().as_ref();
    if point.len() != 65 || point[0] != 4 {
        return Err(internal("the generated public key is not an uncompressed P-256 point"));
    }
    let public_jwk = json!({
        "kty": "EC", "crv": "P-256", "x": URL_SAFE_NO_PAD.encode(&point[1..33]),
        "y": URL_SAFE_NO_PAD.encode(&point[33..65]), "kid": kid, "alg": "ES256", "use": "sig",
    });
    let signs_until = now + Duration::days(SIGNING_DAYS);
    Ok(SigningKey {
        kid: kid.to_owned(),
        algorithm: "ES256".to_owned(),
        private_key: STANDARD.encode(pkcs8.as_ref()),
        public_jwk,
        created_at: now,
        signs_until,
        published_until: signs_until + Duration::days(PUBLISHED_DAYS_AFTER),
    })
}

fn sign(key: &SigningKey, claims: &AudienceClaims) -> Result<String> {
    let der = STANDARD.decode(&key.private_key).map_err(|_| internal("a stored signing key is not base64"))?;
    let mut header = Header::new(Algorithm::ES256);
    header.kid = Some(key.kid.clone());
    jsonwebtoken::encode(&header, claims, &EncodingKey::from_ec_der(&der))
        .map_err(|error| internal(&format!("signing a token: {error}")))
}
