//! Audience tokens issued by the core, checked by the skill host's own verifier against the
//! core's JWKS: a token is issued only to the executor holding a call, for that call's contract
//! audience and scopes, bound to it; another audience, an expired token do not pass; after a
//! rotation, tokens of the old key and of the new one both pass.

use base64::Engine as _;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::{Value, json};
use skill_host::auth::Verifier;

use crate::api::token;
use crate::calls::{Core, each_backend};

const AUDIENCE: &str = "claims-api";

impl Core {
    fn root(&self) -> String {
        self.base.trim_end_matches("/api/v1").to_owned()
    }

    /// A call of `skill` queued and claimed by the tests' executor: its id.
    async fn held_call(&self, skill: &str) -> String {
        let call = self.invoke(&self.caller, skill, json!({"inputs": {}})).await.ok(201)["id"].clone();
        let claim = json!({"protocols": ["http"], "httpOrigins": ["https://skills.example"],
                           "audiences": [AUDIENCE], "invocationId": call});
        let claimed = self.post(&self.executor, "/skill-invocations:claim", &claim).await;
        claimed.ok(200)["invocation"]["id"].as_str().expect("an id").to_owned()
    }

    /// A token for a fresh call of the audience's skill the executor holds.
    async fn audience_token(&self) -> Value {
        let call = self.held_call("claims.remote@1").await;
        self.post(&self.executor, "/audience-tokens", &json!({"invocationId": call, "fencingToken": 1}))
            .await
            .ok(200)
            .clone()
    }

    fn verifier(&self, audience: &str) -> Verifier {
        Verifier::new(&self.root(), audience, &format!("{}/.well-known/jwks.json", self.root())).expect("a verifier")
    }
}

/// An http skill of `audience` with `scopes`.
fn remote(name: &str, audience: &str, scopes: &[&str]) -> Value {
    json!({"name": name, "version": "1", "description": "Remote.", "sideEffects": "none", "riskLevel": "low",
           "contract": {"inputs": {"type": "object"}, "outputs": {"type": "object"}, "timeoutSeconds": 60,
                        "implementation": {"protocol": "http", "endpoint": format!("https://skills.example/{name}"),
                                           "auth": {"audience": audience, "scopes": scopes}}}})
}

#[tokio::test]
async fn hosts_verify_the_cores_tokens_against_its_jwks() {
    each_backend("tokens", |core| async move {
        // A host that fetches the keys before any token was issued already sees the key the
        // first token will name.
        let early: Value = reqwest::get(format!("{}/.well-known/jwks.json", core.root()))
            .await
            .expect("jwks")
            .json()
            .await
            .expect("json");
        assert_eq!(early["keys"].as_array().map(Vec::len), Some(1), "{early}");
        core.publish(remote("claims.remote", AUDIENCE, &["claims.write", "claims.read"])).await;
        let call = core.held_call("claims.remote@1").await;
        let issued = core
            .post(&core.executor, "/audience-tokens", &json!({"invocationId": call, "fencingToken": 1}))
            .await
            .ok(200)
            .clone();
        let kid = jsonwebtoken::decode_header(issued["accessToken"].as_str().expect("a token")).expect("a header").kid;
        assert_eq!(kid.as_deref(), early["keys"][0]["kid"].as_str(), "the first token names the published key");
        assert_eq!(issued["tokenType"], "Bearer");
        assert_eq!((issued["audience"].clone(), issued["invocationId"].clone()), (json!(AUDIENCE), json!(call)));
        assert_eq!(issued["scopes"], json!(["claims.read", "claims.write"]), "the contract's, sorted");
        let bearer = format!("Bearer {}", issued["accessToken"].as_str().expect("a token"));
        let claims = core.verifier(AUDIENCE).verify(Some(&bearer)).await.expect("the host accepts it");
        assert_eq!(claims["scope"], "claims.read claims.write");
        assert_eq!(claims["iss"], json!(core.root()));
        assert_eq!(claims["invocation_id"], json!(call), "bound to the call");
        // Five minutes at most, and never past the lease (60 s + 30 s here).
        let lifetime = claims["exp"].as_i64().expect("exp") - claims["iat"].as_i64().expect("iat");
        assert!((80..=90).contains(&lifetime), "{lifetime}");

        // Only for a call the executor holds now, under its current lease.
        let ask = |token: &str, call: &str, fencing: i64| {
            let (core, token, body) = (&core, token.to_owned(), json!({"invocationId": call, "fencingToken": fencing}));
            async move { core.post(&token, "/audience-tokens", &body).await }
        };
        ask(&core.executor, &call, 2).await.refused(409, "stale_invocation_lease");
        let pending = core.invoke(&core.caller, "claims.remote@1", json!({"inputs": {}})).await.ok(201)["id"]
            .as_str()
            .expect("id")
            .to_owned();
        ask(&core.executor, &pending, 0).await.refused(404, "not_found");
        let allowance = crate::calls::test_allowance();
        let second = crate::api::executor_token(&core.engine, "second-executor", &["skills.execute"], allowance).await;
        ask(&second, &call, 1).await.refused(404, "not_found");
        let person = token(&core.engine, "token-person", &["skills.execute"]).await;
        ask(&person, &call, 1).await.refused(403, "permission_denied");
        let caller = token(&core.engine, "token-caller", &["skills.invoke"]).await;
        ask(&caller, &call, 1).await.refused(403, "permission_denied");
        core.act(&core.executor, &call, "complete", json!({"fencingToken": 1, "output": {}})).await.ok(200);
        ask(&core.executor, &call, 1).await.refused(409, "stale_invocation_lease");
        // The audience of a call is the contract's: the core's own issuer is never one.
        core.publish(remote("claims.core", &core.root(), &[])).await;
        let allowance =
            json!({"protocols": ["http"], "httpOrigins": ["https://skills.example"], "audiences": [core.root()]});
        let allowance: skill_api::ExecutorAllowance = serde_json::from_value(allowance).expect("an allowance");
        core.engine.allow_executor(None, "executor", &allowance, None).await.expect("allowed");
        let call = core.invoke(&core.caller, "claims.core@1", json!({"inputs": {}})).await.ok(201)["id"].clone();
        let claim = json!({"protocols": ["http"], "httpOrigins": ["https://skills.example"], "audiences": [core.root()],
                           "invocationId": call});
        core.claim(claim).await.ok(200);
        ask(&core.executor, call.as_str().expect("id"), 1).await.refused(403, "audience_reserved");
        let allowance: skill_api::ExecutorAllowance =
            serde_json::from_value(crate::calls::test_allowance()).expect("an allowance");
        core.engine.allow_executor(None, "executor", &allowance, None).await.expect("allowed");

        // Another audience's host refuses it.
        let refused = core.verifier("billing-api").verify(Some(&bearer)).await.expect_err("another audience");
        assert_eq!(refused.code, "invalid_audience");

        // An expired token signed with the core's own key: refused as expired.
        let keys = core.engine.store().signing_keys(chrono::Utc::now()).await.expect("keys");
        let key = &keys[0];
        let der = base64::engine::general_purpose::STANDARD.decode(&key.private_key).expect("base64");
        let mut header = Header::new(Algorithm::ES256);
        header.kid = Some(key.kid.clone());
        let now = chrono::Utc::now().timestamp();
        let stale = json!({"iss": core.root(), "aud": AUDIENCE, "sub": "x", "iat": now - 900, "exp": now - 600});
        let stale = jsonwebtoken::encode(&header, &stale, &EncodingKey::from_ec_der(&der)).expect("signs");
        let refused = core.verifier(AUDIENCE).verify(Some(&format!("Bearer {stale}"))).await.expect_err("expired");
        assert_eq!(refused.code, "token_expired");

        // A rotation: the new key is published at once and signs only after its lead time, so a
        // host that cached the JWKS before never meets a kid it has not seen; the old key stays
        // published after the new one took over.
        let verifier = core.verifier(AUDIENCE);
        verifier.verify(Some(&bearer)).await.expect("cached the first key");
        let old_kid = key.kid.clone();
        let new_kid = core.engine.rotate_signing_key().await.expect("rotated");
        assert_ne!(new_kid, old_kid);
        let jwks: Value = reqwest::get(format!("{}/.well-known/jwks.json", core.root()))
            .await
            .expect("jwks")
            .json()
            .await
            .expect("json");
        let kids: Vec<&str> = jwks["keys"].as_array().expect("keys").iter().filter_map(|k| k["kid"].as_str()).collect();
        assert_eq!(kids, [new_kid.as_str(), old_kid.as_str()], "newest first, both published");
        assert!(jwks["keys"].as_array().expect("keys").iter().all(|k| k.get("d").is_none()), "no private part");
        let kid_of = |token: &Value| {
            jsonwebtoken::decode_header(token["accessToken"].as_str().expect("a token")).expect("a header").kid
        };
        let during = core.audience_token().await;
        assert_eq!(kid_of(&during).as_deref(), Some(old_kid.as_str()), "the new key waits for its lead");
        let during = format!("Bearer {}", during["accessToken"].as_str().expect("a token"));
        verifier.verify(Some(&during)).await.expect("the cached key set verifies it");
        // Past the lead (and past the host's least interval between fetches for unknown kids).
        tokio::time::sleep(skill_host::auth::MIN_REFRESH_INTERVAL + std::time::Duration::from_secs(1)).await;
        let after = core.audience_token().await;
        assert_eq!(kid_of(&after).as_deref(), Some(new_kid.as_str()));
        let after = format!("Bearer {}", after["accessToken"].as_str().expect("a token"));
        verifier.verify(Some(&after)).await.expect("the host fetches the new key");
        verifier.verify(Some(&bearer)).await.expect("the old key still verifies");
    })
    .await;
}
