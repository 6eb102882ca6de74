//! One call of an operation: the URL from its path and parameters, the token, the body, the
//! `Idempotency-Key`, bounded retries, and the answer read as its type or as the envelope.

use std::time::Duration;

use reqwest::header::HeaderMap;
use serde::Serialize;
use serde::de::DeserializeOwned;
use skill_api::ErrorEnvelope;
use skill_api::operations::{Method, Operation};

use crate::error::{ApiError, ClientError};

/// The core's API, as one principal (its token) sees it.
#[derive(Clone)]
pub struct Client {
    base: String,
    token: Option<String>,
    http: reqwest::Client,
    retries: u32,
    backoff: Duration,
    /// Whether writes that take an `Idempotency-Key` get one.
    keys: bool,
    /// The W3C `traceparent` each request carries, when this gives one (the caller's current
    /// span, when it exports traces).
    trace_context: Option<fn() -> Option<String>>,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("base", &self.base)
            .field("token", &self.token.as_ref().map(|_| "***"))
            .field("retries", &self.retries)
            .finish()
    }
}

/// A successful answer: its status, headers and typed body.
#[derive(Debug, Clone)]
pub struct Answer<T> {
    pub status: u16,
    pub headers: HeaderMap,
    pub body: T,
}

/// Characters a path parameter keeps as they are. `/` stays because a `{reference}` may name a
/// namespaced skill (`ns/name@1`).
const PATH_KEEPS: &[u8] = b"-._~@:/+";
/// Characters a query value keeps as they are.
const QUERY_KEEPS: &[u8] = b"-._~@";

/// `text` with every byte but ASCII letters, digits and `keeps` percent-encoded.
fn percent_encode(text: &str, keeps: &[u8]) -> String {
    let mut out = String::with_capacity(text.len());
    for byte in text.bytes() {
        if byte.is_ascii_alphanumeric() || keeps.contains(&byte) {
            out.push(char::from(byte));
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

/// A path parameter percent-encoded. A segment of dots only (`.`, `..`) is refused: URLs read it
/// as a step up or in place (even percent-encoded), so it could reach another route.
fn encode(parameter: &str) -> Result<String, ClientError> {
    if parameter.split('/').any(|segment| !segment.is_empty() && segment.bytes().all(|byte| byte == b'.')) {
        return Err(ClientError::Parameter(parameter.chars().take(120).collect()));
    }
    Ok(percent_encode(parameter, PATH_KEEPS))
}

impl Client {
    /// A client of the core at `address` (`http://127.0.0.1:8700`; `/api/v1` is added unless it
    /// is there) with a personal access token.
    pub fn new(address: &str, token: impl Into<String>) -> Result<Self, ClientError> {
        let mut client = Self::anonymous(address)?;
        client.token = Some(token.into());
        Ok(client)
    }

    /// A client without a token (for `/healthz`, or to see the core refuse).
    pub fn anonymous(address: &str) -> Result<Self, ClientError> {
        let trimmed = address.trim().trim_end_matches('/');
        let base = if trimmed.ends_with(skill_api::BASE_PATH) {
            trimmed.to_owned()
        } else {
            format!("{trimmed}{}", skill_api::BASE_PATH)
        };
        let url = reqwest::Url::parse(&base).map_err(|_| ClientError::Address(address.to_owned()))?;
        if !matches!(url.scheme(), "http" | "https") || url.host_str().is_none() {
            return Err(ClientError::Address(address.to_owned()));
        }
        let http = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .timeout(Duration::from_secs(30))
            .build()
            .map_err(|error| ClientError::Unreachable { address: base.clone(), reason: error.to_string() })?;
        Ok(Self {
            base,
            token: None,
            http,
            retries: 2,
            backoff: Duration::from_millis(200),
            keys: true,
            trace_context: None,
        })
    }

    /// At most `retries` more tries of a call that may be repeated (0: one try only).
    pub fn with_retries(mut self, retries: u32) -> Self {
        self.retries = retries;
        self
    }

    /// Sends no `Idempotency-Key` (and so never repeats a write after no answer): for a caller
    /// whose writes are safe by other means, such as an executor's fenced reports, which saves
    /// the core keeping their answers.
    pub fn without_keys(mut self) -> Self {
        self.keys = false;
        self
    }

    /// Sends with each request the `traceparent` `current` gives at the time (none when it gives
    /// none), so the core's span of the request joins the caller's trace.
    pub fn with_trace_context(mut self, current: fn() -> Option<String>) -> Self {
        self.trace_context = Some(current);
        self
    }

    /// The wait before the first retry; it doubles with each.
    pub fn with_backoff(mut self, backoff: Duration) -> Self {
        self.backoff = backoff;
        self
    }

    /// The API's address (`…/api/v1`), for messages.
    pub fn address(&self) -> &str {
        &self.base
    }

    /// The core's address without `/api/v1`.
    pub fn origin(&self) -> &str {
        self.base.strip_suffix(skill_api::BASE_PATH).unwrap_or(&self.base)
    }

    /// The URL of `operation` with its path parameters filled in order.
    pub fn url(&self, operation: &Operation, parameters: &[&str]) -> Result<String, ClientError> {
        let mut path = String::from(operation.path);
        for (name, value) in operation.parameters().zip(parameters) {
            path = path.replacen(&format!("{{{name}}}"), &encode(value)?, 1);
        }
        Ok(format!("{}{path}", self.base))
    }

    /// A read of a route that is not an operation of the table (`/healthz`, `/readyz`,
    /// `/api/v1/openapi.json`): under the API's base when `under_api`, else the core's origin.
    pub(crate) async fn get_outside_table<T: DeserializeOwned>(
        &self,
        path: &str,
        under_api: bool,
    ) -> Result<T, ClientError> {
        let url = if under_api { format!("{}{path}", self.base) } else { format!("{}{path}", self.origin()) };
        let (status, _, bytes) = self.fetch(self.http.get(&url)).await?;
        match serde_json::from_slice(&bytes) {
            Ok(body) if (200..300).contains(&status) => Ok(body),
            _ => Err(ClientError::Unexpected { address: self.base.clone(), status, excerpt: excerpt(&bytes) }),
        }
    }

    /// Sends `request` and reads the whole answer; no answer is `Unreachable`.
    async fn fetch(&self, request: reqwest::RequestBuilder) -> Result<(u16, HeaderMap, Vec<u8>), ClientError> {
        let unreachable =
            |error: reqwest::Error| ClientError::Unreachable { address: self.base.clone(), reason: reason(&error) };
        let response = request.send().await.map_err(unreachable)?;
        let status = response.status().as_u16();
        let headers = response.headers().clone();
        let bytes = response.bytes().await.map_err(unreachable)?.to_vec();
        Ok((status, headers, bytes))
    }

    /// Sends `call` and reads its answer as `T`. Retried (at most [`Client::with_retries`]
    /// times) when the core says the failure is retryable, and after no answer when the
    /// operation is a read or carries an `Idempotency-Key`; a write's key is the same on every
    /// try.
    pub async fn send<T: DeserializeOwned>(&self, call: Call<'_>) -> Result<Answer<T>, ClientError> {
        let key = (call.operation.idempotency_key && (self.keys || call.key.is_some()))
            .then(|| call.key.clone().unwrap_or_else(|| uuid::Uuid::new_v4().to_string()));
        let repeatable = call.operation.is_read() || key.is_some();
        let mut wait = self.backoff;
        let mut tries = 0;
        loop {
            tries += 1;
            let outcome = self.once(&call, key.as_deref()).await;
            let again = match &outcome {
                Err(ClientError::Api(error)) => error.retryable(),
                Err(ClientError::Unreachable { .. }) => repeatable,
                Err(ClientError::Unexpected { status, .. }) => repeatable && matches!(status, 502..=504),
                _ => false,
            };
            if !again || tries > self.retries {
                return outcome;
            }
            tokio::time::sleep(wait).await;
            wait = wait.saturating_mul(2);
        }
    }

    async fn once<T: DeserializeOwned>(&self, call: &Call<'_>, key: Option<&str>) -> Result<Answer<T>, ClientError> {
        let method = match call.operation.method {
            Method::Get => reqwest::Method::GET,
            Method::Post => reqwest::Method::POST,
            Method::Patch => reqwest::Method::PATCH,
        };
        let mut url = self.url(call.operation, &call.parameters)?;
        if let Some(query) = call.query.as_deref().filter(|query| !query.is_empty()) {
            url.push('?');
            url.push_str(query);
        }
        let mut request = self.http.request(method, &url);
        if let Some(token) = &self.token {
            request = request.bearer_auth(token);
        }
        if let Some(key) = key {
            request = request.header(skill_api::IDEMPOTENCY_KEY_HEADER, key);
        }
        for (name, value) in &call.headers {
            request = request.header(*name, value);
        }
        if let Some(traceparent) = self.trace_context.and_then(|current| current()) {
            request = request.header("traceparent", traceparent);
        }
        if let Some(body) = &call.body {
            request = request.json(body);
        }
        if let Some(timeout) = call.timeout {
            request = request.timeout(timeout);
        }
        let (status, headers, bytes) = self.fetch(request).await?;
        if (200..300).contains(&status) {
            // `204 No Content` reads as `null` (an `Option` answer's `None`).
            let bytes: &[u8] = if status == 204 { b"null" } else { &bytes };
            return serde_json::from_slice(bytes).map(|body| Answer { status, headers, body }).map_err(|error| {
                ClientError::Unexpected {
                    address: self.base.clone(),
                    status,
                    excerpt: format!("{error}: {}", excerpt(bytes)),
                }
            });
        }
        match serde_json::from_slice::<ErrorEnvelope>(&bytes) {
            Ok(envelope) => Err(ClientError::Api(Box::new(ApiError { status, body: envelope.error }))),
            Err(_) => Err(ClientError::Unexpected { address: self.base.clone(), status, excerpt: excerpt(&bytes) }),
        }
    }
}

/// One request of an operation: its path parameters, query, body, headers and key.
#[derive(Debug, Clone)]
pub struct Call<'a> {
    operation: &'a Operation,
    parameters: Vec<&'a str>,
    query: Option<String>,
    body: Option<serde_json::Value>,
    headers: Vec<(&'static str, String)>,
    key: Option<String>,
    timeout: Option<Duration>,
}

impl<'a> Call<'a> {
    pub fn new(operation: &'a Operation) -> Self {
        Self {
            operation,
            parameters: Vec::new(),
            query: None,
            body: None,
            headers: Vec::new(),
            key: None,
            timeout: None,
        }
    }

    /// The path's parameters, in order.
    pub fn parameters(mut self, parameters: &[&'a str]) -> Self {
        self.parameters = parameters.to_vec();
        self
    }

    /// The query string: `query`'s fields that are present.
    pub fn query(mut self, query: &impl Serialize) -> Self {
        self.query = Some(query_string(query));
        self
    }

    /// The JSON body.
    pub fn body(mut self, body: &impl Serialize) -> Self {
        self.body = Some(serde_json::to_value(body).expect("invariant: API request types serialize"));
        self
    }

    pub fn header(mut self, name: &'static str, value: impl Into<String>) -> Self {
        self.headers.push((name, value.into()));
        self
    }

    /// How long the answer may take, instead of the client's 30 s (a route that does long work).
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// The `Idempotency-Key` to send (operations that take one get a new key otherwise).
    pub fn key(mut self, key: impl Into<String>) -> Self {
        self.key = Some(key.into());
        self
    }
}

fn reason(error: &reqwest::Error) -> String {
    if error.is_timeout() {
        return "timed out".to_owned();
    }
    let mut text = error.to_string();
    let mut source = std::error::Error::source(error);
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

/// The first 256 characters of a body, for messages.
fn excerpt(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).chars().take(256).collect()
}

/// The present fields of `query` as a query string.
fn query_string(query: &impl Serialize) -> String {
    let Ok(serde_json::Value::Object(fields)) = serde_json::to_value(query) else { return String::new() };
    fields
        .iter()
        .filter(|(_, value)| !value.is_null())
        .map(|(name, value)| {
            let text = value.as_str().map_or_else(|| value.to_string(), str::to_owned);
            format!("{}={}", percent_encode(name, QUERY_KEEPS), percent_encode(&text, QUERY_KEEPS))
        })
        .collect::<Vec<_>>()
        .join("&")
}

#[cfg(test)]
mod tests {
    use skill_api::operations::{Op, Operation};

    use super::*;

    #[test]
    fn parameters_fill_the_path_in_order_and_are_encoded() {
        let client = Client::new("http://127.0.0.1:1/", "t").expect("a client");
        assert_eq!(client.address(), "http://127.0.0.1:1/api/v1");
        assert_eq!(client.origin(), "http://127.0.0.1:1");
        let url = client.url(Operation::of(Op::RevokeSkill), &["p 1", "ns/a@1"]).expect("a URL");
        assert_eq!(url, "http://127.0.0.1:1/api/v1/principals/p%201/skills/ns/a@1:revoke");
        let url = client.url(Operation::of(Op::SkillMetadata), &["a?b#c"]).expect("a URL");
        assert_eq!(url, "http://127.0.0.1:1/api/v1/skills/a%3Fb%23c:metadata");
        for climbing in ["../packages/claims", "..", "a/./b", "ns/.."] {
            let refused = client.url(Operation::of(Op::ReadSkill), &[climbing]);
            assert!(matches!(refused, Err(ClientError::Parameter(_))), "{climbing} cannot reach another route");
        }
        assert!(client.url(Operation::of(Op::ReadSkill), &["a..b@1.0"]).is_ok(), "dots inside a name are fine");
    }

    #[test]
    fn queries_leave_absent_fields_out() {
        let query = skill_api::ListQuery { name: Some("a b".into()), limit: Some(5), ..Default::default() };
        assert_eq!(query_string(&query), "name=a%20b&limit=5");
        assert_eq!(query_string(&skill_api::PageQuery::default()), "");
    }

    #[test]
    fn only_http_addresses_are_taken() {
        assert!(matches!(Client::new("ftp://x", "t"), Err(ClientError::Address(_))));
        assert!(matches!(Client::new("not a url", "t"), Err(ClientError::Address(_))));
    }
}
