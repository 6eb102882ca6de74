//! Before the MCP layer sees a request: a present `Origin` must be the core's own (its public
//! address, or a loopback name with the port the core listens on) — 403 otherwise, so no page of
//! another site, nor of another server on this machine, calls it — and a bearer
//! token must name a principal that may act (401 otherwise, with `WWW-Authenticate`). The actor
//! travels to the handler in the request's extensions.

use axum::extract::{Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use serde_json::json;
use skill_engine::Engine;
use skill_http::mcp_screen as screen;

use crate::Config;
use crate::dated;
use crate::handler::{RequestHost, asks, base_of};

#[derive(Clone)]
pub(crate) struct Guard {
    engine: Engine,
    config: std::sync::Arc<Config>,
    waits: std::sync::Arc<crate::waits::Waits>,
    max_body_bytes: usize,
    /// `scheme://host[:port]` of the public address, lower-case; empty when not set.
    public_origin: String,
    /// The port the core listens on: a loopback origin is the core's only with it.
    listen_port: Option<u16>,
}

impl Guard {
    pub(crate) fn new(engine: Engine, config: &Config, waits: std::sync::Arc<crate::waits::Waits>) -> Self {
        let public_origin = origin_of(&config.public_url).unwrap_or_default();
        let config = std::sync::Arc::new(config.clone());
        let listen_port = config.listen_port;
        Self { engine, public_origin, listen_port, max_body_bytes: config.max_body_bytes, config, waits }
    }

    /// Whether `origin` is this core's: its public address, or a loopback name with the core's
    /// own port (a page of any other site — one whose name was made to point here included — is
    /// not, nor a page another server of this machine serves on another port).
    fn allowed(&self, origin: &str) -> bool {
        let Some(origin) = origin_of(origin) else { return false };
        if !self.public_origin.is_empty() && origin == self.public_origin {
            return true;
        }
        let Some((name, port)) = host_and_port(&origin) else { return false };
        matches!(name, "localhost" | "127.0.0.1" | "::1") && Some(port) == self.listen_port
    }
}

/// The host and the port of an origin `origin_of` made; the port is the scheme's when none is
/// written. `None` when the port is not a number.
fn host_and_port(origin: &str) -> Option<(&str, u16)> {
    let (scheme, authority) = origin.split_once("://")?;
    let (name, port) = match authority.strip_prefix('[') {
        Some(rest) => {
            let (name, after) = rest.split_once(']')?;
            (name, after.strip_prefix(':'))
        }
        None => match authority.rsplit_once(':') {
            Some((name, port)) => (name, Some(port)),
            None => (authority, None),
        },
    };
    let port = match port {
        Some(port) => port.parse().ok()?,
        None if scheme == "https" => 443,
        None => 80,
    };
    Some((name, port))
}

/// `scheme://authority` of an http(s) address, lower-case, without a path; `None` otherwise.
fn origin_of(address: &str) -> Option<String> {
    let lower = address.trim().to_ascii_lowercase();
    let (scheme, rest) = lower.split_once("://")?;
    if !matches!(scheme, "http" | "https") {
        return None;
    }
    let authority = rest.split('/').next().unwrap_or_default();
    if authority.is_empty() || authority.contains(['?', '#', '@']) {
        return None;
    }
    Some(format!("{scheme}://{authority}"))
}

fn refuse(status: StatusCode, code: &str, message: String) -> Response {
    let mut response =
        (status, axum::Json(json!({"error": {"code": code, "message": message, "retryable": false}}))).into_response();
    if status == StatusCode::UNAUTHORIZED {
        response.headers_mut().insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
    }
    response
}

/// `401` for a token the engine refused, with its `details` (`reason`: why, as the API says it).
fn unauthenticated(error: &skill_engine::EngineError) -> Response {
    let body = json!({"error": {"code": error.code, "message": error.message, "retryable": false,
                                "details": error.details}});
    let mut response = (StatusCode::UNAUTHORIZED, axum::Json(body)).into_response();
    response.headers_mut().insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
    response
}

/// Whether the request says its body is JSON (`application/json`, any parameters).
fn is_json(headers: &axum::http::HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.split(';').next())
        .is_some_and(|essence| essence.trim().eq_ignore_ascii_case("application/json"))
}

/// rmcp's answer, unless it could not read a message sent as JSON that the screen let through
/// (a member of the wrong shape for its method, say): rmcp answers that with HTTP 415 in plain
/// text, and JSON-RPC with `-32600`, as JSON.
async fn unread(answer: Response, bytes: &[u8], sent_as_json: bool) -> Response {
    if answer.status() != StatusCode::UNSUPPORTED_MEDIA_TYPE || !sent_as_json {
        return answer;
    }
    let said = axum::body::to_bytes(answer.into_body(), 4096).await.unwrap_or_default();
    let said: String = String::from_utf8_lossy(&said).chars().filter(|c| !c.is_control()).take(300).collect();
    let refusal = screen::Refusal {
        id: screen::request_id(bytes),
        code: screen::INVALID_REQUEST,
        message: format!("invalid request: not an MCP message this server reads ({said})"),
    };
    (StatusCode::BAD_REQUEST, axum::Json(refusal.to_json())).into_response()
}

pub(crate) async fn check(State(guard): State<Guard>, mut request: Request, next: Next) -> Response {
    let host = request.headers().get(header::HOST).and_then(|host| host.to_str().ok()).map(str::to_owned);
    if let Some(origin) = request.headers().get(header::ORIGIN) {
        let shown: String = String::from_utf8_lossy(origin.as_bytes()).chars().take(120).collect();
        if !origin.to_str().is_ok_and(|origin| guard.allowed(origin)) {
            return refuse(
                StatusCode::FORBIDDEN,
                "origin_not_allowed",
                format!("origin {shown:?} is not this core's: a browser page of another site may not call /mcp"),
            );
        }
    }
    let token = request
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.split_once(' '))
        .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
        .map(|(_, token)| token.trim().to_owned());
    let Some(token) = token.filter(|token| !token.is_empty()) else {
        return refuse(
            StatusCode::UNAUTHORIZED,
            "invalid_token",
            "/mcp needs `Authorization: Bearer <token>`: an agent's token (skill-core token create --agent <key>) or a person's".to_owned(),
        );
    };
    match guard.engine.authenticate(&token).await {
        Ok(actor) => {
            request.extensions_mut().insert(actor);
            if let Some(host) = host {
                request.extensions_mut().insert(RequestHost(host));
            }
            if request.method() != axum::http::Method::POST {
                return next.run(request).await;
            }
            // Malformed messages are answered as JSON-RPC says, before rmcp sees them.
            let (parts, body) = request.into_parts();
            let Ok(bytes) = axum::body::to_bytes(body, guard.max_body_bytes).await else {
                let refusal = screen::Refusal {
                    id: serde_json::Value::Null,
                    code: screen::INVALID_REQUEST,
                    message: format!("the body is larger than {} bytes or could not be read", guard.max_body_bytes),
                };
                return (StatusCode::PAYLOAD_TOO_LARGE, axum::Json(refusal.to_json())).into_response();
            };
            // A body that came slowly is acted on with the credential as it stands once it is in.
            let current = parts.extensions.get::<skill_engine::Actor>().cloned();
            if let Some(actor) = current
                && let Err(error) = guard.engine.still_holds(&actor).await
            {
                if error.class != skill_engine::Class::Unauthenticated {
                    return refuse(
                        StatusCode::SERVICE_UNAVAILABLE,
                        "unavailable",
                        "the core cannot check the token now; retry".to_owned(),
                    );
                }
                return unauthenticated(&error);
            }
            if let Some(refusal) = screen::screen(&bytes) {
                let status = if refusal.is_malformed() { StatusCode::BAD_REQUEST } else { StatusCode::OK };
                return (status, axum::Json(refusal.to_json())).into_response();
            }
            let sent_as_json = is_json(&parts.headers);
            let kept = bytes.clone();
            let dated = dated::speaks(&parts.headers);
            // Only the 2025-11-25 revision's messages (and an `initialize`, which names its
            // revision in its body) are read here; the others go to the MCP service untouched.
            let message: serde_json::Value = if dated || !parts.headers.contains_key("mcp-protocol-version") {
                serde_json::from_slice(&bytes).unwrap_or_default()
            } else {
                serde_json::Value::Null
            };
            let actor = parts.extensions.get::<skill_engine::Actor>().cloned();
            if let Some(actor) = actor.filter(|_| dated && dated::takes(&message)) {
                // A notification (no id) asks for nothing: it is not carried out. MCP's ids are
                // strings or numbers, never null.
                match message.get("id") {
                    None => return StatusCode::ACCEPTED.into_response(),
                    Some(serde_json::Value::String(_) | serde_json::Value::Number(_)) => {}
                    Some(_) => {
                        let refusal = json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32600,
                            "message": "a request's id is a string or a number"}});
                        return (StatusCode::BAD_REQUEST, axum::Json(refusal)).into_response();
                    }
                }
                let host = parts.extensions.get::<RequestHost>().map(|host| host.0.clone());
                let base = base_of(&guard.config, host.as_deref());
                let at = dated::At { engine: &guard.engine, config: &guard.config, waits: &guard.waits, base: &base };
                let passed = match dated::route(&at, &actor, &parts.headers, message).await {
                    dated::Route::Answer(answer) => return answer,
                    dated::Route::Pass(passed) => passed.to_string(),
                };
                let answer = next.run(Request::from_parts(parts, axum::body::Body::from(passed))).await;
                return unread(answer, &kept, sent_as_json).await;
            }
            let method = message["method"].as_str().unwrap_or_default().to_owned();
            let asks = match parts.extensions.get::<skill_engine::Actor>() {
                Some(actor) if dated && method == "tools/list" => asks(&guard.engine, actor).await,
                _ => false,
            };
            let answer = next.run(Request::from_parts(parts, axum::body::Body::from(bytes))).await;
            let answer = unread(answer, &kept, sent_as_json).await;
            match method.as_str() {
                "initialize" if message["params"]["protocolVersion"] == dated::REVISION => {
                    dated::rewritten(answer, dated::declare).await
                }
                "tools/list" if asks => dated::rewritten(answer, dated::mark).await,
                _ => answer,
            }
        }
        Err(error) if error.class == skill_engine::Class::Unauthenticated => unauthenticated(&error),
        Err(error) => {
            tracing::warn!(error = %error.message, "authenticating an MCP request failed");
            refuse(
                StatusCode::SERVICE_UNAVAILABLE,
                "unavailable",
                "the core cannot check the token now; retry".to_owned(),
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn origins_are_the_cores_own() {
        assert_eq!(origin_of("HTTPS://Core.Example/console"), Some("https://core.example".to_owned()));
        assert_eq!(origin_of("null"), None);
        assert_eq!(origin_of("file:///x"), None);
    }

    #[test]
    fn a_loopback_origin_names_its_port_or_its_schemes() {
        assert_eq!(host_and_port("http://localhost:8700"), Some(("localhost", 8700)));
        assert_eq!(host_and_port("http://[::1]:8700"), Some(("::1", 8700)));
        assert_eq!(host_and_port("http://[::1]"), Some(("::1", 80)));
        assert_eq!(host_and_port("https://127.0.0.1"), Some(("127.0.0.1", 443)));
        assert_eq!(host_and_port("http://127.0.0.1:99999"), None);
        assert_eq!(host_and_port("http://127.0.0.1:"), None);
    }
}
