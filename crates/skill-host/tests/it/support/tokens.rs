//! Test keys (`tests/fixtures/test-keys.json`), tokens signed with them, and a JWKS server on
//! 127.0.0.1 whose key set a test can change.

#![allow(dead_code)]

use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

use base64::Engine;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::{Value, json};

pub(crate) const ISSUER: &str = "https://iam.test";
pub(crate) const AUDIENCE: &str = "claims-skills";

pub(crate) fn keys() -> Value {
    serde_json::from_str(include_str!("../fixtures/test-keys.json")).expect("fixture")
}

/// The fixture key with `kid` (or the stranger, which no JWKS publishes).
pub(crate) fn key(kid: &str) -> Value {
    let keys = keys();
    if kid == "stranger" {
        return keys["stranger"].clone();
    }
    keys["keys"].as_array().expect("keys").iter().find(|k| k["kid"] == kid).cloned().expect("a fixture key")
}

pub(crate) fn now() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).expect("clock").as_secs() as i64
}

/// Claims that pass: the issuer, the audience, an hour of life.
pub(crate) fn good_claims() -> Value {
    json!({"iss": ISSUER, "aud": AUDIENCE, "sub": "agent-7", "exp": now() + 3600, "iat": now(), "scope": "skills:call"})
}

/// A token signed by the fixture key `kid` with its own algorithm.
pub(crate) fn sign(kid: &str, claims: &Value) -> String {
    let key = key(kid);
    let der =
        base64::engine::general_purpose::STANDARD.decode(key["private_der"].as_str().expect("der")).expect("base64");
    let (algorithm, encoding) = match key["alg"].as_str().expect("alg") {
        "RS256" => (Algorithm::RS256, EncodingKey::from_rsa_der(&der)),
        "ES256" => (Algorithm::ES256, EncodingKey::from_ec_der(&der)),
        _ => (Algorithm::EdDSA, EncodingKey::from_ed_der(&der)),
    };
    let mut header = Header::new(algorithm);
    header.kid = Some(kid.to_owned());
    jsonwebtoken::encode(&header, claims, &encoding).expect("signs")
}

fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

/// A token with any header and payload and the given signature part.
pub(crate) fn forge(header: &Value, claims: &Value, signature: &str) -> String {
    format!("{}.{}.{}", b64(header.to_string().as_bytes()), b64(claims.to_string().as_bytes()), signature)
}

/// HS256 over the token keyed with `secret` (an attacker using the public key as an HMAC secret).
pub(crate) fn hmac_with(secret: &[u8], kid: &str, claims: &Value) -> String {
    let mut header = Header::new(Algorithm::HS256);
    header.kid = Some(kid.to_owned());
    jsonwebtoken::encode(&header, claims, &EncodingKey::from_secret(secret).expect("a key")).expect("signs")
}

/// A JWKS endpoint serving the public keys of the named fixture keys; `publish` changes them.
pub(crate) struct JwksServer {
    pub(crate) url: String,
    published: Arc<Mutex<Vec<String>>>,
}

impl JwksServer {
    pub(crate) fn start(kids: &[&str]) -> Self {
        let published = Arc::new(Mutex::new(kids.iter().map(|k| (*k).to_owned()).collect::<Vec<_>>()));
        let shared = Arc::clone(&published);
        let app = axum::Router::new().route(
            "/jwks.json",
            axum::routing::get(move || {
                let kids = shared.lock().expect("lock").clone();
                async move {
                    let keys: Vec<Value> = kids.iter().map(|kid| key(kid)["jwk"].clone()).collect();
                    axum::Json(json!({"keys": keys}))
                }
            }),
        );
        let base = skill_fixtures::serve(app);
        Self { url: format!("{base}/jwks.json"), published }
    }

    pub(crate) fn publish(&self, kids: &[&str]) {
        *self.published.lock().expect("lock") = kids.iter().map(|k| (*k).to_owned()).collect();
    }
}

/// `token` with its header replaced by `header` (signature kept).
pub(crate) fn with_header(token: &str, header: &Value) -> String {
    let mut parts: Vec<String> = token.split('.').map(str::to_owned).collect();
    parts[0] = b64(header.to_string().as_bytes());
    parts.join(".")
}
