//! The core over HTTP: the routes under `<CONTROL_PLANE_URL>/api/v1`, a bearer token, and the
//! mapping of the core's answers to skill errors.
//!
//! | answer | error |
//! |---|---|
//! | no connection, timeout, 5xx, 429 | `core_unavailable` (retryable) |
//! | 404 on an artifact | `artifact_not_found` |
//! | `{"error": {"code": "snapshot_stale", "details": {"stateToken"}}}` | `snapshot_stale` with `details.stateToken` |
//! | another error envelope with a valid code | that code, not retryable |
//! | anything else | `core_error` |
//!
//! Idempotent calls (apply, document) carry an `Idempotency-Key`; they and the reads (query,
//! artifacts) are tried a second time, with the same key, after a lost connection or a 502/503/504.

use std::fmt;
use std::sync::OnceLock;
use std::time::Duration;

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

use super::{ArtifactContent, CoreAccess, CoreFuture, KnowledgeRoute};
use crate::SkillError;

/// The core's API, at its base URL.
pub struct HttpCore {
    base: reqwest::Url,
    token: Option<String>,
}

impl fmt::Debug for HttpCore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpCore")
            .field("base", &self.base.as_str())
            .field("token", &self.token.as_ref().map(|_| "***"))
            .finish()
    }
}

/// One connection pool for every call of the process.
fn client() -> &'static reqwest::Client {
    static CLIENT: OnceLock<reqwest::Client> = OnceLock::new();
    CLIENT.get_or_init(|| {
        reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .expect("invariant: a default TLS client builds")
    })
}

fn unavailable(message: String) -> SkillError {
    SkillError::new("core_unavailable").with_message(message)
}

/// A failure after which one more try is worth it (idempotent calls only).
fn worth_retrying(error: &SkillError) -> bool {
    error.code() == "core_unavailable"
        && error.details().and_then(|d| d.get("status")).is_none_or(|status| matches!(status.as_u64(), Some(502..=504)))
}

impl HttpCore {
    /// `address` is the core's URL; `/api/v1` is added unless it already ends with it.
    pub fn new(address: &str, token: Option<String>) -> Result<Self, SkillError> {
        let invalid = || {
            SkillError::new("config_missing")
                .with_message(format!("CONTROL_PLANE_URL is not an http:// or https:// URL: {address}"))
                .with_detail("config", json!("CONTROL_PLANE_URL"))
        };
        let trimmed = address.trim().trim_end_matches('/');
        let full = if trimmed.ends_with("/api/v1") { trimmed.to_owned() } else { format!("{trimmed}/api/v1") };
        let base = reqwest::Url::parse(&full).map_err(|_| invalid())?;
        if !matches!(base.scheme(), "http" | "https") || base.host_str().is_none() {
            return Err(invalid());
        }
        Ok(Self { base, token })
    }

    fn url(&self, segments: &[&str]) -> reqwest::Url {
        let mut url = self.base.clone();
        url.path_segments_mut().expect("invariant: an http base URL has a path").extend(segments);
        url
    }

    async fn send(&self, call: &Request<'_>) -> Result<reqwest::Response, SkillError> {
        let mut request = client().request(call.method.clone(), call.url.clone()).timeout(call.timeout);
        if let Some(token) = &self.token {
            request = request.bearer_auth(token);
        }
        if let Some(key) = call.idempotency_key {
            request = request.header(skill_api::IDEMPOTENCY_KEY_HEADER, key);
        }
        if let Some(body) = call.body {
            request = request.json(body);
        }
        let response = request.send().await.map_err(|error| {
            let what = if error.is_timeout() { "timed out" } else { "cannot be reached" };
            unavailable(format!("the core at {} {what}", self.base))
        })?;
        let status = response.status();
        if status.is_success() {
            return Ok(response);
        }
        if status.is_server_error() || status == StatusCode::TOO_MANY_REQUESTS {
            return Err(
                unavailable(format!("the core answered {status}")).with_detail("status", json!(status.as_u16()))
            );
        }
        Err(error_from_answer(status, response.bytes().await.unwrap_or_default().as_ref()))
    }

    /// Sends once, and once more after a failure worth retrying when the call may be retried.
    async fn send_with_retry(&self, call: &Request<'_>) -> Result<reqwest::Response, SkillError> {
        match self.send(call).await {
            Err(error) if call.retry && worth_retrying(&error) => self.send(call).await,
            other => other,
        }
    }
}

/// One request to the core.
struct Request<'a> {
    method: Method,
    url: reqwest::Url,
    body: Option<&'a Value>,
    idempotency_key: Option<&'a str>,
    timeout: Duration,
    /// Whether a second try is safe (idempotent calls and reads).
    retry: bool,
}

/// A 4xx answer: the core's own error code when its envelope carries a valid one.
fn error_from_answer(status: StatusCode, body: &[u8]) -> SkillError {
    let envelope = serde_json::from_slice::<skill_api::ErrorEnvelope>(body).ok();
    let error = envelope.as_ref().map(|envelope| &envelope.error).filter(|e| skill_contract::is_valid_code(&e.code));
    match error {
        Some(error) if error.code == "snapshot_stale" => {
            let stale = SkillError::new("snapshot_stale").with_message("the knowledge state changed since it was read");
            match error.detail_str("stateToken") {
                Some(token) => stale.with_detail("stateToken", json!(token)),
                None => stale,
            }
        }
        Some(error) => {
            let message = if error.message.is_empty() { error.code.as_str() } else { error.message.as_str() };
            let converted = SkillError::new(&error.code).with_message(message).with_retryable(false);
            if error.details.is_empty() { converted } else { converted.with_details(error.details.clone()) }
        }
        None if status == StatusCode::NOT_FOUND => {
            SkillError::new("not_found").with_message("the core has no such object").with_detail("status", json!(404))
        }
        None => SkillError::new("core_error")
            .with_message(format!("the core answered {status}"))
            .with_detail("status", json!(status.as_u16())),
    }
}

impl CoreAccess for HttpCore {
    fn read_artifact<'a>(
        &'a self,
        id: &'a str,
        for_task: Option<&'a str>,
        timeout: Duration,
    ) -> CoreFuture<'a, ArtifactContent> {
        Box::pin(async move {
            let path = skill_api::sdk_routes::ARTIFACT_CONTENT.replace("{id}", id);
            let mut url = self.url(&path.trim_start_matches('/').split('/').collect::<Vec<_>>());
            if let Some(task) = for_task {
                url.query_pairs_mut().append_pair("forTask", task);
            }
            let request = Request { method: Method::GET, url, body: None, idempotency_key: None, timeout, retry: true };
            let response = match self.send_with_retry(&request).await {
                Err(error) if error.code() == "not_found" => {
                    return Err(SkillError::new("artifact_not_found")
                        .with_message(format!("no artifact {id}"))
                        .with_detail("artifactId", json!(id)));
                }
                other => other?,
            };
            let header = |name: &str| response.headers().get(name).and_then(|v| v.to_str().ok()).map(str::to_owned);
            let media_type = header("content-type");
            let sha256 = header(skill_api::sdk_routes::CONTENT_SHA256_HEADER);
            let data = response.bytes().await.map_err(|_| unavailable("the core's answer was cut short".into()))?;
            Ok(ArtifactContent { data: data.to_vec(), media_type, sha256 })
        })
    }

    fn knowledge<'a>(&'a self, route: KnowledgeRoute, body: Value, timeout: Duration) -> CoreFuture<'a, Value> {
        Box::pin(async move {
            let path: Vec<&str> = route.path().trim_start_matches('/').split('/').collect();
            let key = route.idempotent().then(|| uuid::Uuid::new_v4().to_string());
            let retry = route.idempotent() || route == KnowledgeRoute::Query;
            let request = Request {
                method: Method::POST,
                url: self.url(&path),
                body: Some(&body),
                idempotency_key: key.as_deref(),
                timeout,
                retry,
            };
            let response = self.send_with_retry(&request).await?;
            response.json::<Value>().await.map_err(|_| {
                SkillError::new("core_error").with_message(format!("the core's answer to {} is not JSON", route.path()))
            })
        })
    }
}
