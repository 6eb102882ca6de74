//! Token verification against a real JWKS server on 127.0.0.1: every attack of the matrix is
//! refused with its code and status; keys are cached, refreshed on rotation, fetched once for
//! concurrent callers, and not fetched again and again for unknown `kid`s.

use crate::tokens;

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use skill_host::auth::{Access, AuthError, Verifier, access_from_env};
use tokens::{AUDIENCE, ISSUER, JwksServer, forge, good_claims, hmac_with, key, now, sign, with_header};

fn verifier(server: &JwksServer) -> Verifier {
    Verifier::new(ISSUER, AUDIENCE, &server.url).expect("configured")
}

async fn check(verifier: &Verifier, token: &str) -> Result<serde_json::Map<String, Value>, AuthError> {
    verifier.verify(Some(&format!("Bearer {token}"))).await
}

fn refused(result: Result<serde_json::Map<String, Value>, AuthError>) -> (&'static str, u16) {
    let error = result.expect_err("refused");
    (error.code, error.status)
}

fn with(claims: &[(&str, Value)]) -> Value {
    let mut all = good_claims();
    for (name, value) in claims {
        all[*name] = value.clone();
    }
    all
}

#[tokio::test]
async fn tokens_of_every_algorithm_verify() {
    let server = JwksServer::start(&["rsa-1", "ec-1", "ed-1"]);
    let verifier = verifier(&server);
    for kid in ["rsa-1", "ec-1", "ed-1"] {
        let claims = check(&verifier, &sign(kid, &good_claims())).await.unwrap_or_else(|e| panic!("{kid}: {e}"));
        assert_eq!(claims["sub"], "agent-7", "{kid}");
    }
    assert_eq!(verifier.key_fetches().await, 1, "one fetch serves every key");
}

#[tokio::test]
async fn the_attack_matrix_is_refused() {
    let server = JwksServer::start(&["rsa-1", "ec-1"]);
    let verifier = verifier(&server);
    let good = sign("rsa-1", &good_claims());
    let mut parts: Vec<String> = good.split('.').map(str::to_owned).collect();
    let tampered_claims = with(&[("sub", json!("admin"))]);
    parts[1] = forge(&json!({}), &tampered_claims, "").split('.').nth(1).expect("payload").to_owned();
    let tampered = parts.join(".");
    let public_pem = key("rsa-1")["public_pem"].as_str().expect("pem").to_owned();
    let cases: Vec<(&str, String, (&str, u16))> = vec![
        ("alg none", forge(&json!({"alg": "none", "kid": "rsa-1"}), &good_claims(), ""), ("invalid_token", 401)),
        (
            "HMAC keyed with the public key",
            hmac_with(public_pem.as_bytes(), "rsa-1", &good_claims()),
            ("invalid_token", 401),
        ),
        (
            "another algorithm than the key's",
            with_header(&sign("ec-1", &good_claims()), &json!({"alg": "RS256", "kid": "ec-1"})),
            ("invalid_token", 401),
        ),
        ("tampered payload", tampered, ("invalid_signature", 401)),
        ("expired", sign("rsa-1", &with(&[("exp", json!(now() - 120))])), ("token_expired", 401)),
        ("not yet valid", sign("rsa-1", &with(&[("nbf", json!(now() + 300))])), ("token_not_yet_valid", 401)),
        ("wrong issuer", sign("rsa-1", &with(&[("iss", json!("https://evil.test"))])), ("invalid_issuer", 401)),
        ("wrong audience", sign("rsa-1", &with(&[("aud", json!("other-service"))])), ("invalid_audience", 401)),
        ("unknown kid", sign("stranger", &good_claims()), ("unknown_key", 401)),
        ("oversized", sign("rsa-1", &with(&[("pad", json!("x".repeat(9000)))])), ("invalid_token", 401)),
        ("malformed", "abc".to_owned(), ("invalid_token", 401)),
        ("three garbage parts", "a.b.c".to_owned(), ("invalid_token", 401)),
        ("no exp", sign("rsa-1", &json!({"iss": ISSUER, "aud": AUDIENCE, "sub": "x"})), ("invalid_token", 401)),
    ];
    for (name, token, expected) in cases {
        assert_eq!(refused(check(&verifier, &token).await), expected, "{name}");
    }
    assert!(check(&verifier, &good).await.is_ok(), "the untampered token still passes");
    assert!(check(&verifier, &sign("rsa-1", &with(&[("exp", json!(now() - 10))]))).await.is_ok(), "within the leeway");
}

#[tokio::test]
async fn the_header_must_be_a_bearer_token() {
    let server = JwksServer::start(&["rsa-1"]);
    let verifier = verifier(&server);
    assert_eq!(refused(verifier.verify(None).await), ("missing_authorization", 401));
    assert_eq!(refused(verifier.verify(Some("Basic dXNlcjpwYXNz")).await), ("invalid_token", 401));
    assert_eq!(refused(verifier.verify(Some("Bearer ")).await), ("invalid_token", 401));
    let error = verifier.verify(None).await.expect_err("refused");
    assert!(error.www_authenticate().starts_with(r#"Bearer realm="skills", error="invalid_token""#));
}

#[tokio::test]
async fn an_unreachable_jwks_is_503_but_known_keys_keep_working() {
    let verifier = Verifier::new(ISSUER, AUDIENCE, "http://127.0.0.1:9/jwks.json").expect("configured");
    let error = check(&verifier, &sign("rsa-1", &good_claims())).await.expect_err("no keys");
    assert_eq!((error.code, error.status), ("verification_unavailable", 503));
}

#[tokio::test]
async fn a_rotated_key_is_fetched_when_a_token_names_it() {
    let server = JwksServer::start(&["rsa-1"]);
    let verifier = verifier(&server).with_min_refresh_interval(Duration::from_millis(100));
    assert!(check(&verifier, &sign("rsa-1", &good_claims())).await.is_ok());
    server.publish(&["rsa-1", "rsa-rotated"]);
    tokio::time::sleep(Duration::from_millis(150)).await;
    assert!(check(&verifier, &sign("rsa-rotated", &good_claims())).await.is_ok(), "refreshed for the new kid");
    assert_eq!(verifier.key_fetches().await, 2);
}

#[tokio::test]
async fn unknown_kids_cannot_force_a_fetch_per_token() {
    let server = JwksServer::start(&["rsa-1"]);
    let verifier = verifier(&server);
    for _ in 0..20 {
        assert_eq!(refused(check(&verifier, &sign("stranger", &good_claims())).await), ("unknown_key", 401));
    }
    assert_eq!(verifier.key_fetches().await, 1, "at most one fetch per refresh interval");
}

#[tokio::test]
async fn concurrent_first_calls_share_one_fetch() {
    let server = JwksServer::start(&["rsa-1"]);
    let verifier = Arc::new(verifier(&server));
    let token = sign("rsa-1", &good_claims());
    let tasks: Vec<_> = (0..20)
        .map(|_| {
            let (verifier, token) = (Arc::clone(&verifier), token.clone());
            tokio::spawn(async move { check(&verifier, &token).await.is_ok() })
        })
        .collect();
    for task in tasks {
        assert!(task.await.expect("task"));
    }
    assert_eq!(verifier.key_fetches().await, 1);
}

#[test]
fn hosting_without_verification_needs_allow_anonymous() {
    let none = |_: &str| None::<String>;
    let error = access_from_env(none, false).expect_err("refused");
    let message = error.to_string();
    assert!(
        message.contains("SKILL_SDK_IAM_ISSUER, SKILL_SDK_AUDIENCE, SKILL_SDK_JWKS_URL")
            && message.contains("--allow-anonymous"),
        "{message}"
    );
    assert!(matches!(access_from_env(none, true).expect("anonymous"), Access::Anonymous));
    let partial = |name: &str| (name == "SKILL_SDK_IAM_ISSUER").then(|| ISSUER.to_owned());
    let message = access_from_env(partial, false).expect_err("partial").to_string();
    assert!(message.contains("missing: SKILL_SDK_AUDIENCE, SKILL_SDK_JWKS_URL"), "{message}");
}
