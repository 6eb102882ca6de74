//! The reference of benchmark P2: a bare axum handler that verifies the same bearer token (ES256
//! against the key set at `SKILL_SDK_JWKS_URL`, fetched once at start; issuer, audience, expiry)
//! and parses the same JSON body, then answers the echo.
//!
//! ```text
//! SKILL_SDK_IAM_ISSUER=… SKILL_SDK_AUDIENCE=… SKILL_SDK_JWKS_URL=… bare_http
//! ```

#![allow(clippy::print_stderr)]

use std::sync::Arc;

use axum::Json;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::routing::post;
use jsonwebtoken::{DecodingKey, Validation, jwk::JwkSet};
use serde::Deserialize;
use serde_json::{Map, Value, json};

#[derive(Deserialize)]
struct Body {
    inputs: Inputs,
}

#[derive(Deserialize)]
struct Inputs {
    text: String,
}

struct Keys {
    key: DecodingKey,
    validation: Validation,
}

async fn echo(State(keys): State<Arc<Keys>>, headers: HeaderMap, Json(body): Json<Body>) -> (StatusCode, Json<Value>) {
    let token = headers.get("authorization").and_then(|v| v.to_str().ok()).and_then(|v| v.strip_prefix("Bearer "));
    let verified = token.map(|t| jsonwebtoken::decode::<Map<String, Value>>(t, &keys.key, &keys.validation));
    match verified {
        Some(Ok(_)) => (StatusCode::OK, Json(json!({"text": body.inputs.text}))),
        _ => (StatusCode::UNAUTHORIZED, Json(json!({"error": "unauthorized"}))),
    }
}

#[tokio::main]
async fn main() {
    let var = |name: &str| std::env::var(name).unwrap_or_else(|_| panic!("{name} is set"));
    let set: JwkSet = reqwest::get(var("SKILL_SDK_JWKS_URL")).await.expect("the key set").json().await.expect("JSON");
    let jwk = set.keys.first().expect("a key");
    let mut validation = Validation::new(jsonwebtoken::Algorithm::ES256);
    validation.set_issuer(&[var("SKILL_SDK_IAM_ISSUER")]);
    validation.set_audience(&[var("SKILL_SDK_AUDIENCE")]);
    let keys = Arc::new(Keys { key: DecodingKey::from_jwk(jwk).expect("a usable key"), validation });
    let router = axum::Router::new().route("/skills/echo@1", post(echo)).with_state(keys);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("binds");
    eprintln!("serving bare axum on http://{}", listener.local_addr().expect("address"));
    axum::serve(listener, router).await.expect("serves");
}
