//! The executor's audience tokens: asked of the core with the executor's own token, one for each
//! call it holds — the core issues it for exactly that call's contract audience and scopes, and
//! only while the executor's lease of the call lives.

use futures::future::BoxFuture;
use skill_api::{AudienceTokenRequest, ClaimOut};
use skill_client::Client;

use reqwest::Url;
use skill_executor::Outcome;

use crate::failure::failed;

/// Gives the executor a token for a call it holds.
pub trait Tokens: Send + Sync + std::fmt::Debug {
    fn token(&self, call: AudienceTokenRequest) -> BoxFuture<'static, Result<String, String>>;
}

/// The bearer token the call `claimed` to `url` carries under the contract's `implementation`:
/// none without an `auth.audience`; with one, a token — only over https, only for an allowed
/// audience.
pub(crate) async fn bearer(
    audiences: &std::collections::BTreeSet<String>,
    tokens: Option<&dyn Tokens>,
    url: &Url,
    implementation: &skill_contract::Implementation,
    claimed: &ClaimOut,
) -> Result<Option<String>, Outcome> {
    let Some(audience) = implementation.auth().map(skill_contract::Auth::audience) else { return Ok(None) };
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
    let Some(tokens) = tokens else {
        return Err(failed("executor_auth_unavailable", true, "this executor has no token issuer".into(), None));
    };
    let call = AudienceTokenRequest {
        invocation_id: claimed.invocation.id.clone(),
        fencing_token: claimed.invocation.fencing_token,
        session_id: claimed.invocation.executor_session_id.clone(),
    };
    match tokens.token(call).await {
        Ok(token) => Ok(Some(token)),
        Err(error) => Err(failed(
            "executor_auth_unavailable",
            true,
            format!("no token for the audience {audience}: {error}"),
            None,
        )),
    }
}

/// Tokens from the core.
#[derive(Debug, Clone)]
pub struct CoreTokens {
    client: Client,
}

impl CoreTokens {
    /// Tokens asked of the core `client` speaks to, with the executor's credential.
    pub fn new(client: Client) -> Self {
        Self { client }
    }
}

impl Tokens for CoreTokens {
    fn token(&self, call: AudienceTokenRequest) -> BoxFuture<'static, Result<String, String>> {
        let client = self.client.clone();
        Box::pin(async move {
            let issued = client.audience_token(&call).await.map_err(|error| error.to_string())?;
            Ok(issued.access_token)
        })
    }
}
