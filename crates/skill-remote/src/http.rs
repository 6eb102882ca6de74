//! The `http` wire contract: `POST endpoint` with `{invocationId, idempotencyKey, settings,
//! inputs}`; a bearer token only when the contract names an `auth.audience`, and then only over
//! `https`; no redirects followed, no proxy taken from the environment, every connection through
//! the guard. A 2xx body is the output (a JSON object), `X-Skill-Cost` the cost; a failure keeps
//! the envelope's code and retryability when the body is one, and is `http_<status>` otherwise.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use reqwest::{StatusCode, Url};
use serde_json::{Map, Value, json};
use skill_api::ClaimOut;
use skill_executor::Outcome;
use tracing::Instrument as _;

use crate::failure::failed;
use crate::guard::{Guard, Refusal, Resolver, refusal_in};
use crate::tokens::{Tokens, bearer};

/// How much of a response body is read: past it the call fails.
const MAX_BODY_BYTES: usize = 2 * 1024 * 1024;
/// How much of a failed response's body goes into the error's details.
const BODY_EXCERPT_CHARS: usize = 256;

/// Makes `http` calls.
#[derive(Debug, Clone)]
pub(crate) struct HttpCalls {
    client: reqwest::Client,
    guard: Arc<Guard>,
    audiences: BTreeSet<String>,
    tokens: Option<Arc<dyn Tokens>>,
}

impl HttpCalls {
    pub(crate) fn new(
        guard: Arc<Guard>,
        audiences: &[String],
        tokens: Option<Arc<dyn Tokens>>,
        roots: &[reqwest::Certificate],
    ) -> Result<Self, String> {
        let client = guarded_client(&guard, roots)?;
        Ok(Self { client, guard, audiences: audiences.iter().cloned().collect(), tokens })
    }

    /// Runs one claimed `http` call to its outcome.
    pub(crate) async fn run(&self, claimed: ClaimOut) -> Outcome {
        let contract = &claimed.skill.contract;
        let implementation = contract.implementation();
        let endpoint = implementation.endpoint().unwrap_or_default();
        let Ok(url) = Url::parse(endpoint) else {
            return failed("endpoint_not_allowed", false, format!("the endpoint {endpoint:?} is not a URL"), None);
        };
        if let Err(refusal) = self.guard.admit(&url) {
            return refused(&refusal);
        }
        let mut request = self.client.post(url.clone());
        match bearer(&self.audiences, self.tokens.as_deref(), &url, implementation, &claimed).await {
            Ok(Some(token)) => request = request.bearer_auth(token),
            Ok(None) => {}
            Err(refused) => return refused,
        }
        let timeout = Duration::from_secs(u64::from(contract.timeout_seconds()));
        let body = json!({
            "invocationId": claimed.invocation.id,
            "idempotencyKey": claimed.invocation.idempotency_key,
            "settings": claimed.settings.as_ref().map(|settings| settings.values.clone()),
            "inputs": claimed.invocation.inputs,
        });
        let span = skill_traces::spans::http_client("POST", shown(&url).as_str());
        if let Some(traceparent) = skill_traces::traceparent_of(&span) {
            request = request.header(skill_traces::attr::TRACEPARENT, traceparent);
        }
        let answer = tokio::time::timeout(timeout, async {
            let response = request.json(&body).send().await?;
            let status = response.status();
            let cost = response.headers().get("x-skill-cost").and_then(|value| value.to_str().ok()).map(str::to_owned);
            let bytes = read_capped(response).await?;
            Ok::<_, reqwest::Error>((status, cost, bytes))
        })
        .instrument(span.clone())
        .await;
        match &answer {
            Ok(Ok((status, ..))) => skill_traces::spans::status(&span, status.as_u16(), true),
            Ok(Err(_)) => skill_traces::spans::failed(&span, "transport_error"),
            Err(_) => skill_traces::spans::failed(&span, "timeout"),
        }
        match answer {
            Err(_) => failed("timeout", true, format!("{endpoint} did not answer within {}s", timeout.as_secs()), None),
            Ok(Err(error)) => transport(&error, endpoint),
            Ok(Ok((status, cost, body))) => answered(status, cost.as_deref(), body, endpoint),
        }
    }
}

/// The endpoint as a span shows it: without credentials or query.
fn shown(url: &Url) -> Url {
    let mut shown = url.clone();
    shown.set_query(None);
    let _ = shown.set_username("");
    let _ = shown.set_password(None);
    shown
}

/// An HTTP client that connects only where `guard` allows: no redirects followed, no proxy from
/// the environment, `roots` trusted beside the system's certificates.
pub(crate) fn guarded_client(guard: &Arc<Guard>, roots: &[reqwest::Certificate]) -> Result<reqwest::Client, String> {
    let mut builder = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .no_proxy()
        .dns_resolver(Arc::new(Resolver(Arc::clone(guard))))
        .connect_timeout(Duration::from_secs(10));
    for root in roots {
        builder = builder.add_root_certificate(root.clone());
    }
    builder.build().map_err(|error| format!("cannot build the HTTP client: {error}"))
}

/// The body, or `None` past [`MAX_BODY_BYTES`].
async fn read_capped(mut response: reqwest::Response) -> Result<Option<Vec<u8>>, reqwest::Error> {
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await? {
        if body.len() + chunk.len() > MAX_BODY_BYTES {
            return Ok(None);
        }
        body.extend_from_slice(&chunk);
    }
    Ok(Some(body))
}

pub(crate) fn refused(refusal: &Refusal) -> Outcome {
    match refusal {
        Refusal::NotAllowed { .. } => failed("endpoint_not_allowed", true, refusal.to_string(), None),
        Refusal::Forbidden { .. } => failed("endpoint_address_forbidden", false, refusal.to_string(), None),
        Refusal::Invalid { .. } => failed("endpoint_not_allowed", false, refusal.to_string(), None),
    }
}

pub(crate) fn transport(error: &reqwest::Error, endpoint: &str) -> Outcome {
    if let Some(refusal) = refusal_in(error) {
        return refused(&refusal);
    }
    if error.is_timeout() {
        return failed("timeout", true, format!("{endpoint} did not answer in time"), None);
    }
    let mut reason = error.to_string();
    let mut cause = std::error::Error::source(error);
    while let Some(inner) = cause {
        reason = format!("{reason}: {inner}");
        cause = inner.source();
    }
    failed("transport_error", true, format!("calling {endpoint}: {reason}"), None)
}

/// The outcome of an answer with `status`.
fn answered(status: StatusCode, cost: Option<&str>, body: Option<Vec<u8>>, endpoint: &str) -> Outcome {
    let Some(body) = body else {
        return failed(
            "output_contract_violation",
            false,
            format!("{endpoint} answered more than {MAX_BODY_BYTES} bytes"),
            Some(json!({"status": status.as_u16()})),
        );
    };
    if status.is_success() {
        return match serde_json::from_slice::<Value>(&body) {
            Ok(Value::Object(output)) => Outcome::Complete { output, cost: cost.and_then(cost_of) },
            _ => failed(
                "output_contract_violation",
                false,
                format!("{endpoint} answered {status} with a body that is not a JSON object"),
                Some(details(status, &body)),
            ),
        };
    }
    let envelope = serde_json::from_slice::<Value>(&body).ok().map(|value| value["error"].clone());
    let details = Some(details(status, &body));
    if status.as_u16() >= 400
        && let Some(error) = envelope
        && let Some(code) = error["code"].as_str().filter(|code| skill_contract::is_valid_code(code))
    {
        let message = error["message"].as_str().map_or_else(|| format!("{endpoint} answered {status}"), str::to_owned);
        return failed(code, error["retryable"] == true, message, details);
    }
    let code = status.as_u16();
    match code {
        400..=499 => failed(&format!("http_{code}"), false, format!("{endpoint} answered {status}"), details),
        500..=599 => failed(&format!("http_{code}"), true, format!("{endpoint} answered {status}"), details),
        _ => failed("unexpected_status", false, format!("{endpoint} answered {status}"), details),
    }
}

/// `X-Skill-Cost` as a JSON object; anything else is not a cost (and is logged).
fn cost_of(header: &str) -> Option<Map<String, Value>> {
    match serde_json::from_str::<Value>(header) {
        Ok(Value::Object(cost)) => Some(cost),
        _ => {
            tracing::warn!(header, "X-Skill-Cost is not a JSON object; no cost recorded");
            None
        }
    }
}

/// `{status, body, bodyTruncated}`: the body's first characters, local paths hidden.
fn details(status: StatusCode, body: &[u8]) -> Value {
    let text = String::from_utf8_lossy(body);
    let excerpt: String = text.chars().take(BODY_EXCERPT_CHARS).collect();
    let truncated = text.chars().count() > BODY_EXCERPT_CHARS;
    json!({"status": status.as_u16(), "body": without_paths(&excerpt), "bodyTruncated": truncated})
}

/// `text` with every absolute file path (`/` then at least two segments, not inside a URL)
/// replaced by `<path>`.
fn without_paths(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.char_indices().peekable();
    let mut previous: Option<char> = None;
    while let Some((start, c)) = chars.next() {
        let starts_path = c == '/' && previous.is_none_or(|p| p.is_whitespace() || "\"'=(:,[{".contains(p));
        let inside_url = previous == Some(':') && text[start..].starts_with("//");
        if starts_path && !inside_url {
            let end = text[start..]
                .find(|ch: char| ch.is_whitespace() || "\"',;:)]}".contains(ch))
                .map_or(text.len(), |offset| start + offset);
            let candidate = &text[start..end];
            if candidate.matches('/').count() >= 2 && !candidate.starts_with("//") {
                out.push_str("<path>");
                while chars.peek().is_some_and(|(index, _)| *index < end) {
                    chars.next();
                }
                previous = candidate.chars().last();
                continue;
            }
        }
        out.push(c);
        previous = Some(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn local_paths_are_hidden_and_urls_kept() {
        assert_eq!(
            without_paths(r#"{"error": "open /srv/app/secrets.toml: denied", "see": "https://h.example/a/b"}"#),
            r#"{"error": "open <path>: denied", "see": "https://h.example/a/b"}"#
        );
        assert_eq!(without_paths("at /home/ana/x.py line 3, and /tmp"), "at <path> line 3, and /tmp");
    }

    #[test]
    fn statuses_map_to_codes_and_envelopes_keep_theirs() {
        let code = |outcome: Outcome| match outcome {
            Outcome::Fail(error) => (error.code, error.retryable),
            Outcome::Complete { .. } => ("complete".into(), false),
        };
        let e = "https://svc.example/x";
        assert_eq!(code(answered(StatusCode::NOT_FOUND, None, Some(b"nope".to_vec()), e)), ("http_404".into(), false));
        assert_eq!(code(answered(StatusCode::BAD_GATEWAY, None, Some(vec![]), e)), ("http_502".into(), true));
        assert_eq!(code(answered(StatusCode::FOUND, None, Some(vec![]), e)), ("unexpected_status".into(), false));
        let envelope = br#"{"error": {"code": "claim_locked", "message": "try later", "retryable": true}}"#;
        assert_eq!(
            code(answered(StatusCode::SERVICE_UNAVAILABLE, None, Some(envelope.to_vec()), e)),
            ("claim_locked".into(), true)
        );
        let bad_code = br#"{"error": {"code": "Not A Code", "retryable": true}}"#;
        assert_eq!(
            code(answered(StatusCode::UNPROCESSABLE_ENTITY, None, Some(bad_code.to_vec()), e)),
            ("http_422".into(), false)
        );
        assert_eq!(
            code(answered(StatusCode::OK, None, Some(b"[1]".to_vec()), e)),
            ("output_contract_violation".into(), false)
        );
        assert_eq!(code(answered(StatusCode::OK, None, None, e)), ("output_contract_violation".into(), false));
        match answered(StatusCode::OK, Some(r#"{"usd": 0.5}"#), Some(br#"{"ok": true}"#.to_vec()), e) {
            Outcome::Complete { output, cost } => {
                assert_eq!(Value::Object(output), json!({"ok": true}));
                assert_eq!(cost.map(Value::Object), Some(json!({"usd": 0.5})));
            }
            Outcome::Fail(error) => panic!("{error:?}"),
        }
    }

    #[test]
    fn failure_details_carry_the_status_and_a_short_body() {
        let body = "x".repeat(300);
        let d = details(StatusCode::INTERNAL_SERVER_ERROR, body.as_bytes());
        assert_eq!((d["status"].clone(), d["bodyTruncated"].clone()), (json!(500), json!(true)));
        assert_eq!(d["body"].as_str().map(str::len), Some(256));
    }
}
