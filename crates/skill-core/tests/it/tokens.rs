//! Audience tokens issued by the core, checked by the skill host's own verifier against the
//! core's JWKS: the right audience passes; another audience, an expired token, a reserved
//! audience do not; after a rotation, tokens of the old key and of the new one both pass.

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

    async fn audience_token(&self, audience: &str, scopes: &[&str]) -> Value {
        let reply =
            self.post(&self.executor, "/audience-tokens", &json!({"audience": audience, "scopes": scopes})).await;
        reply.ok(200).clone()
    }

    fn verifier(&self, audience: &str) -> Verifier {
        Verifier::new(&self.root(), audience, &format!("{}/.well-known/jwks.json", self.root())).expect("a verifier")
    }
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
        let issued = core.audience_token(AUDIENCE, &["claims.write", "claims.read", "claims.read"]).await;
        let kid = jsonwebtoken::decode_header(issued["accessToken"].as_str().expect("a token")).expect("a header").kid;
        assert_eq!(kid.as_deref(), early["keys"][0]["kid"].as_str(), "the first token names the published key");
        assert_eq!(issued["tokenType"], "Bearer");
        assert_eq!(issued["scopes"], json!(["claims.read", "claims.write"]), "sorted, once each");
        let bearer = format!("Bearer {}", issued["accessToken"].as_str().expect("a token"));
        let claims = core.verifier(AUDIENCE).verify(Some(&bearer)).await.expect("the host accepts it");
        assert_eq!(claims["scope"], "claims.read claims.write");
        assert_eq!(claims["iss"], json!(core.root()));
        let lifetime = claims["exp"].as_i64().expect("exp") - claims["iat"].as_i64().expect("iat");
        assert_eq!(lifetime, 300);

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

        // Reserved audiences and malformed requests are refused; only executors get tokens.
        for reserved in ["skill-core", "skill-executor"] {
            core.post(&core.executor, "/audience-tokens", &json!({"audience": reserved}))
                .await
                .refused(403, "audience_reserved");
        }
        core.post(&core.executor, "/audience-tokens", &json!({"audience": "a b"}))
            .await
            .refused(400, "invalid_request");
        let many: Vec<String> = (0..51).map(|i| format!("s{i}")).collect();
        core.post(&core.executor, "/audience-tokens", &json!({"audience": AUDIENCE, "scopes": many}))
            .await
            .refused(400, "invalid_request");
        let caller = token(&core.engine, "token-caller", &["skills.invoke"]).await;
        core.post(&caller, "/audience-tokens", &json!({"audience": AUDIENCE})).await.refused(403, "permission_denied");

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
        let during = core.audience_token(AUDIENCE, &[]).await;
        assert_eq!(kid_of(&during).as_deref(), Some(old_kid.as_str()), "the new key waits for its lead");
        let during = format!("Bearer {}", during["accessToken"].as_str().expect("a token"));
        verifier.verify(Some(&during)).await.expect("the cached key set verifies it");
        // Past the lead (and past the host's least interval between fetches for unknown kids).
        tokio::time::sleep(skill_host::auth::MIN_REFRESH_INTERVAL + std::time::Duration::from_secs(1)).await;
        let after = core.audience_token(AUDIENCE, &[]).await;
        assert_eq!(kid_of(&after).as_deref(), Some(new_kid.as_str()));
        let after = format!("Bearer {}", after["accessToken"].as_str().expect("a token"));
        verifier.verify(Some(&after)).await.expect("the host fetches the new key");
        verifier.verify(Some(&bearer)).await.expect("the old key still verifies");
    })
    .await;
}
