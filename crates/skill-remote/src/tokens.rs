//! The executor's audience tokens: asked of the core with the executor's own token, kept per
//! (audience, scopes) until shortly before they expire, one request at a time per pair.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use chrono::{DateTime, Duration, Utc};
use futures::future::BoxFuture;
use skill_api::AudienceTokenRequest;
use skill_client::Client;

use reqwest::Url;
use serde_json::Value;
use skill_executor::Outcome;

use crate::failure::failed;

/// Gives the executor a token for an audience with exactly the contract's scopes.
pub trait Tokens: Send + Sync + std::fmt::Debug {
    fn token(&self, audience: &str, scopes: &[String]) -> BoxFuture<'static, Result<String, String>>;
}

/// The bearer token a call to `url` carries under the contract's `implementation`: none without
/// an `auth.audience`; with one, a token — only over https, only for an allowed audience.
pub(crate) async fn bearer(
    audiences: &std::collections::BTreeSet<String>,
    tokens: Option<&dyn Tokens>,
    url: &Url,
    implementation: &Value,
) -> Result<Option<String>, Outcome> {
    let Some(audience) = implementation["auth"]["audience"].as_str() else { return Ok(None) };
    if url.scheme() != "https" {
        return Err(failed(
            "insecure_endpoint",
            false,
            format!("a token for {audience} travels only over https, and {url} is not"),
            None,
        ));
    }
    if !audiences.contains(audience) {
        return Err(failed(
            "audience_not_allowed",
            true,
            format!("this executor may not obtain tokens for the audience {audience}"),
            None,
        ));
    }
    let scopes: Vec<String> = implementation["auth"]["scopes"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .map(str::to_owned)
        .collect();
    let Some(tokens) = tokens else {
        return Err(failed("executor_auth_unavailable", true, "this executor has no token issuer".into(), None));
    };
    match tokens.token(audience, &scopes).await {
        Ok(token) => Ok(Some(token)),
        Err(error) => Err(failed(
            "executor_auth_unavailable",
            true,
            format!("no token for the audience {audience}: {error}"),
            None,
        )),
    }
}

/// A token is not used in its last this many seconds (a call may take a moment to arrive).
const MARGIN_SECONDS: i64 = 30;

type Pair = (String, Vec<String>);
/// The tokens kept: each with its expiry.
type Kept = HashMap<Pair, (String, DateTime<Utc>)>;

/// Tokens from the core, cached.
#[derive(Debug, Clone)]
pub struct CoreTokens {
    client: Client,
    kept: Arc<Mutex<Kept>>,
    /// One request to the core at a time: calls that need the same token wait for it.
    asking: Arc<tokio::sync::Mutex<()>>,
}

impl CoreTokens {
    /// Tokens asked of the core `client` speaks to, with the executor's credential.
    pub fn new(client: Client) -> Self {
        Self { client, kept: Arc::default(), asking: Arc::default() }
    }

    fn cached(&self, pair: &Pair) -> Option<String> {
        let kept = self.kept.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let (token, expires) = kept.get(pair)?;
        (*expires - Duration::seconds(MARGIN_SECONDS) > Utc::now()).then(|| token.clone())
    }
}

impl Tokens for CoreTokens {
    fn token(&self, audience: &str, scopes: &[String]) -> BoxFuture<'static, Result<String, String>> {
        let mut scopes = scopes.to_vec();
        scopes.sort();
        scopes.dedup();
        let pair = (audience.to_owned(), scopes);
        let tokens = self.clone();
        Box::pin(async move {
            if let Some(token) = tokens.cached(&pair) {
                return Ok(token);
            }
            let _turn = tokens.asking.lock().await;
            if let Some(token) = tokens.cached(&pair) {
                return Ok(token);
            }
            let request = AudienceTokenRequest { audience: pair.0.clone(), scopes: pair.1.clone() };
            let issued = tokens.client.audience_token(&request).await.map_err(|error| error.to_string())?;
            let expires = DateTime::parse_from_rfc3339(&issued.expires_at)
                .map_err(|error| format!("the core answered an expiry that is not a time: {error}"))?
                .to_utc();
            let mut kept = tokens.kept.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            kept.retain(|_, (_, until)| *until > Utc::now());
            kept.insert(pair, (issued.access_token.clone(), expires));
            Ok(issued.access_token)
        })
    }
}
