//! The HTTP host: `POST /skills/{name}@{version}`, `GET /skills`, `GET /healthz`.
//!
//! A call is processed in a fixed order, so a caller learns nothing it is not entitled to:
//! the token (401/503), then the skill (404 `skill_not_hosted`), then the body (413 when larger
//! than the limit, 400 `bad_request` when it is not JSON or not `{"inputs": {...}}`), then the
//! call. Success is 200 with the outputs object itself and, when the skill reported a cost, an
//! `X-Skill-Cost` header; a failure is the error envelope with 422 (the skill refused), 503
//! (retryable) or 500 (the skill crashed).
//!
//! Calls run on tasks of their own: a caller that hangs up does not cut a call short, and
//! [`Calls::drain`] waits for every call still running when the host stops.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use axum::Extension;
use axum::Router;
use axum::body::HttpBody as _;
use axum::body::{Body, Bytes};
use axum::extract::{Path, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use http_body_util::BodyExt;
use serde_json::{Map, Value, json};
use skill_sdk::registry::Registry;
use skill_sdk::{Invocation, Skill, SkillError, Transport, runtime};
use tokio_util::task::TaskTracker;

use crate::auth::{Access, AuthError, Claims};
use skill_http::requests::{self, RequestId};

/// The calls a host has started; [`Calls::drain`] waits for them.
#[derive(Debug, Clone, Default)]
pub struct Calls(TaskTracker);

impl Calls {
    /// Runs `skill` on a task of its own, tracked until it ends, in the current span.
    pub(crate) async fn run(
        &self,
        skill: &'static Skill,
        inputs: Value,
        invocation: Invocation,
    ) -> Result<runtime::Outcome, SkillError> {
        let call = crate::metered::timed(skill, runtime::execute(skill, inputs, invocation));
        // The skill's span is the child of the request's, when there is one (traces on).
        let current = tracing::Span::current();
        let task = if current.is_none() {
            self.0.spawn(call)
        } else {
            self.0.spawn(tracing::Instrument::instrument(call, current))
        };
        match task.await {
            Ok(result) => result,
            Err(join) => Err(SkillError::from_error(join).with_message("the call's task was lost")),
        }
    }

    /// Refuses new calls and waits for the running ones.
    pub async fn drain(&self) {
        self.0.close();
        self.0.wait().await;
    }

    /// How many calls are running.
    pub fn running(&self) -> usize {
        self.0.len()
    }
}

/// The claims of a request's verified token, kept in the request's extensions for the MCP layer.
#[derive(Debug, Clone)]
pub(crate) struct VerifiedCaller(pub(crate) Claims);

/// What the HTTP host needs.
#[derive(Debug)]
pub struct HttpHost {
    skills: BTreeMap<String, &'static Skill>,
    access: Access,
    max_body_bytes: usize,
    calls: Calls,
}

impl HttpHost {
    /// Hosts every skill of `registry` for the callers `access` lets in ([`Access::Anonymous`]
    /// has to be chosen by name).
    pub fn new(registry: &Registry, access: Access, max_body_bytes: usize) -> Self {
        let skills = registry.skills().iter().map(|skill| (skill.reference(), *skill)).collect();
        Self { skills, access, max_body_bytes, calls: Calls::default() }
    }

    /// The calls this host runs, for draining at shutdown.
    pub fn calls(&self) -> Calls {
        self.calls.clone()
    }

    /// The routes, with request logging.
    pub fn router(self) -> Router {
        Router::new()
            .route("/skills", get(list))
            .route("/skills/{*reference}", post(call))
            .route("/healthz", get(health))
            .route_layer(axum::middleware::from_fn(requests::route))
            .layer(axum::middleware::from_fn(requests::log))
            .with_state(Arc::new(self))
    }
}

/// The error envelope with `status`.
pub(crate) fn error_response(status: StatusCode, error: &SkillError) -> Response {
    (status, axum::Json(error.to_envelope())).into_response()
}

/// 401 (with `WWW-Authenticate`) or 503, the envelope's `message` being the code.
pub(crate) fn auth_response(error: &AuthError) -> Response {
    let status = StatusCode::from_u16(error.status).unwrap_or(StatusCode::UNAUTHORIZED);
    let mut response = error_response(status, &error.to_skill_error());
    if status == StatusCode::UNAUTHORIZED
        && let Ok(value) = HeaderValue::from_str(&error.www_authenticate())
    {
        response.headers_mut().insert(header::WWW_AUTHENTICATE, value);
    }
    response
}

/// The caller's verified claims; `None` when the host was started anonymous.
pub(crate) async fn authenticate(access: &Access, headers: &HeaderMap) -> Result<Option<Claims>, AuthError> {
    let Access::Verified(verifier) = access else { return Ok(None) };
    let authorization = headers.get(header::AUTHORIZATION).map(|value| value.to_str().unwrap_or(""));
    verifier.verify(authorization).await.map(Some)
}

fn bad_request(message: impl Into<String>) -> Response {
    error_response(StatusCode::BAD_REQUEST, &SkillError::new("bad_request").with_message(message))
}

async fn list(State(host): State<Arc<HttpHost>>) -> Response {
    let skills: Vec<Value> = host
        .skills
        .iter()
        .map(|(reference, skill)| {
            json!({"ref": reference, "name": skill.name(), "version": skill.version(), "path": format!("/skills/{reference}")})
        })
        .collect();
    axum::Json(json!({ "skills": skills })).into_response()
}

async fn health() -> Response {
    axum::Json(json!({"status": "ok"})).into_response()
}

/// The body of a call: the inputs, checked here (an object), and what else it carries, read by
/// the SDK's one rule for every transport ([`Invocation::with_transport_meta`]).
struct CallBody {
    body: Map<String, Value>,
    inputs: Value,
}

fn parse_body(bytes: &[u8]) -> Result<CallBody, String> {
    let body: Value = serde_json::from_slice(bytes)
        .map_err(|error| format!("the body is not JSON: {error}; send {{\"inputs\": {{...}}}}"))?;
    let Value::Object(mut body) = body else {
        return Err("the body must be a JSON object: {\"inputs\": {...}}".to_owned());
    };
    let inputs = match body.remove("inputs") {
        Some(inputs @ Value::Object(_)) => inputs,
        Some(_) => return Err("`inputs` must be a JSON object".to_owned()),
        None => return Err("the body has no `inputs`: send {\"inputs\": {...}}".to_owned()),
    };
    Ok(CallBody { body, inputs })
}

/// How long a refused request's body is read and thrown away before the answer goes out.
const DISCARD_TIME: Duration = Duration::from_secs(1);

/// Reads the body, refusing it with 413 past `limit` bytes.
async fn read_body(mut body: Body, limit: usize) -> Result<Bytes, Response> {
    let hint = usize::try_from(body.size_hint().lower()).unwrap_or(limit);
    let mut bytes = Vec::with_capacity(hint.min(limit));
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(unread)?;
        let Some(data) = frame.data_ref() else { continue };
        if bytes.len() + data.len() > limit {
            let error = SkillError::new("payload_too_large")
                .with_message(format!("the body is larger than {limit} bytes"))
                .with_detail("limitBytes", json!(limit));
            return Err(refuse(body, limit, error_response(StatusCode::PAYLOAD_TOO_LARGE, &error)).await);
        }
        bytes.extend_from_slice(data);
    }
    Ok(Bytes::from(bytes))
}

/// The answer to a body that could not be read: it came too slowly (408), the host is stopping
/// (503, retryable), or the client broke it off (400).
fn unread(error: axum::Error) -> Response {
    match skill_http::BodyCut::in_chain(&error) {
        Some(cut @ skill_http::BodyCut::TooSlow(_)) => error_response(
            StatusCode::REQUEST_TIMEOUT,
            &SkillError::new("request_timeout").with_message(cut.to_string()),
        ),
        Some(cut @ skill_http::BodyCut::Stopping) => error_response(
            StatusCode::SERVICE_UNAVAILABLE,
            &SkillError::new("unavailable").with_message(cut.to_string()).with_retryable(true),
        ),
        None => bad_request(format!("the body could not be read: {error}")),
    }
}

/// Answers before the body is read, after reading and throwing away up to `budget` more bytes of
/// it for at most [`DISCARD_TIME`]: a client still sending a body it was refused then reads the
/// answer instead of a reset connection.
async fn refuse(mut body: Body, budget: usize, response: Response) -> Response {
    let discard = async {
        let mut seen = 0usize;
        while seen <= budget {
            match body.frame().await {
                Some(Ok(frame)) => seen += frame.data_ref().map_or(0, Bytes::len),
                _ => break,
            }
        }
    };
    let _ = tokio::time::timeout(DISCARD_TIME, discard).await;
    response
}

/// The status of a failed call: 503 when retrying may help, 500 when the skill crashed, 422 when
/// it refused.
pub(crate) fn failure_status(error: &SkillError) -> StatusCode {
    if error.retryable() {
        StatusCode::SERVICE_UNAVAILABLE
    } else if runtime::is_crash(error) {
        StatusCode::INTERNAL_SERVER_ERROR
    } else {
        StatusCode::UNPROCESSABLE_ENTITY
    }
}

async fn call(
    State(host): State<Arc<HttpHost>>,
    Path(reference): Path<String>,
    request_id: Option<Extension<RequestId>>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    let caller = match authenticate(&host.access, &headers).await {
        Ok(caller) => caller,
        Err(error) => return refuse(body, host.max_body_bytes, auth_response(&error)).await,
    };
    let Some(skill) = host.skills.get(&reference).copied() else {
        let error = SkillError::new("skill_not_hosted")
            .with_message(format!("no skill {reference} on this host; GET /skills lists them"));
        return refuse(body, host.max_body_bytes, error_response(StatusCode::NOT_FOUND, &error)).await;
    };
    let bytes = match read_body(body, host.max_body_bytes).await {
        Ok(bytes) => bytes,
        Err(response) => return response,
    };
    let CallBody { body, inputs } = match parse_body(&bytes) {
        Ok(body) => body,
        Err(message) => return bad_request(message),
    };
    // A token the core issued for one call is good for that call only.
    if let Some(claims) = &caller
        && let Err(error) =
            crate::auth::token_covers(claims, crate::auth::Called::Route(&reference), body.get("invocationId"))
    {
        return error_response(StatusCode::FORBIDDEN, &error);
    }
    let mut invocation = Invocation::new(Transport::Http).with_transport_meta(
        body.get("invocationId"),
        body.get("idempotencyKey"),
        body.get("settings"),
    );
    if let Some(Extension(RequestId(id))) = request_id {
        invocation = invocation.with_request_id(id);
    }
    if let Some(claims) = caller {
        invocation = invocation.with_caller(Value::Object(claims));
    }
    match host.calls.run(skill, inputs, invocation).await {
        Ok(outcome) => {
            let mut response = axum::Json(Value::Object(outcome.outputs)).into_response();
            if let Some(cost) = outcome.cost
                && let Ok(value) = HeaderValue::from_str(&ascii_json(&cost))
            {
                response.headers_mut().insert("x-skill-cost", value);
            }
            response
        }
        Err(error) => error_response(failure_status(&error), &error),
    }
}

/// Compact JSON with every non-ASCII character escaped as `\uXXXX`, fit for a header.
pub fn ascii_json(value: &Value) -> String {
    let text = value.to_string();
    if text.is_ascii() {
        return text;
    }
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if c.is_ascii() {
            out.push(c);
        } else {
            let mut units = [0u16; 2];
            for unit in c.encode_utf16(&mut units) {
                out.push_str(&format!("\\u{unit:04x}"));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ascii_json_escapes_like_python() {
        let value = json!({"units": {"ops": 1.0}, "note": "čaj ☕ 𝄞"});
        assert_eq!(ascii_json(&value), r#"{"units":{"ops":1.0},"note":"\u010daj \u2615 \ud834\udd1e"}"#);
        let back: Value = serde_json::from_str(&ascii_json(&value)).expect("JSON");
        assert_eq!(back, value);
    }

    #[test]
    fn bodies_are_checked_field_by_field() {
        let message = |bytes: &[u8]| match parse_body(bytes) {
            Ok(_) => "ok".to_owned(),
            Err(message) => bad_request(message).status().to_string(),
        };
        assert_eq!(message(br#"{"inputs": {}}"#), "ok");
        assert_eq!(message(br#"{"inputs": {}, "settings": null, "invocationId": null}"#), "ok");
        for ignored in [
            &br#"{"inputs": {}, "invocationId": 7}"#[..],
            br#"{"inputs": {}, "idempotencyKey": false}"#,
            br#"{"inputs": {}, "settings": "x"}"#,
            br#"{"inputs": {}, "settings": 42}"#,
            br#"{"inputs": {}, "settings": [1]}"#,
        ] {
            assert_eq!(message(ignored), "ok", "{}", String::from_utf8_lossy(ignored));
        }
        for bad in [&br#"[1]"#[..], br#"{"inputs": []}"#, br#"{}"#, b"{"] {
            assert_eq!(message(bad), "400 Bad Request", "{}", String::from_utf8_lossy(bad));
        }
    }
}
