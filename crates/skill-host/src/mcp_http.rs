//! MCP over streamable HTTP at `/mcp`: stateless (any replica can answer any request), JSON
//! responses. Before the MCP layer sees a request, [`guard`] refuses a present but foreign
//! `Origin` (403, as the 2025-11-25 transport requires against DNS rebinding), checks the bearer
//! token (401/503), and screens the body ([`crate::mcp::screen`]). `GET /healthz` answers
//! without a token.

use std::sync::Arc;

use axum::Router;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::auth::Access;
use crate::http::{VerifiedCaller, auth_response, authenticate};
use crate::mcp::McpHost;
use crate::mcp::screen::{self, Refusal};

/// The `Host` header values accepted; `["*"]` accepts any.
#[derive(Debug, Clone)]
pub struct AllowedHosts(pub Vec<String>);

impl AllowedHosts {
    /// Loopback names, plus the address the host listens on when it is a specific one.
    pub fn defaults_for(listen_host: &str) -> Self {
        let mut hosts: Vec<String> = ["localhost", "127.0.0.1", "::1"].map(str::to_owned).to_vec();
        if !matches!(listen_host, "0.0.0.0" | "::" | "[::]") && !hosts.iter().any(|h| h == listen_host) {
            hosts.push(listen_host.to_owned());
        }
        Self(hosts)
    }
}

/// The `/mcp` service and `/healthz`, with token checks and request logs. Cancelling `stop`
/// ends open response streams.
pub fn router(
    host: McpHost,
    access: Access,
    allowed_hosts: &AllowedHosts,
    max_body_bytes: usize,
    stop: CancellationToken,
) -> Router {
    let mut config = StreamableHttpServerConfig::default()
        .with_legacy_session_mode(false)
        .with_json_response(true)
        .with_max_request_body_bytes(max_body_bytes)
        .with_cancellation_token(stop);
    config = if allowed_hosts.0.iter().any(|h| h == "*") {
        config.disable_allowed_hosts()
    } else {
        config.with_allowed_hosts(allowed_hosts.0.clone())
    };
    let service =
        StreamableHttpService::new(move || Ok(host.clone()), Arc::new(NeverSessionManager::default()), config);
    let guard = Guard { access, origins: Arc::new(allowed_hosts.0.clone()), max_body_bytes };
    let mcp =
        Router::new().route_service("/mcp", service).layer(axum::middleware::from_fn_with_state(guard, guard_mcp));
    Router::new()
        .route("/healthz", get(|| async { axum::Json(json!({"status": "ok"})) }))
        .merge(mcp)
        .route_layer(axum::middleware::from_fn(skill_http::requests::route))
        .layer(axum::middleware::from_fn(skill_http::requests::log))
}

/// What the `/mcp` guard checks against.
#[derive(Debug, Clone)]
struct Guard {
    access: Access,
    /// The hosts an `Origin` may name (the allowed `Host` values); `*` allows any.
    origins: Arc<Vec<String>>,
    max_body_bytes: usize,
}

impl Guard {
    /// Whether `origin` (`scheme://host[:port]`) names an allowed host; `null` and anything that
    /// is not an http(s) origin are refused.
    fn origin_allowed(&self, origin: &str) -> bool {
        if self.origins.iter().any(|host| host == "*") {
            return true;
        }
        let Some(authority) = origin.strip_prefix("http://").or_else(|| origin.strip_prefix("https://")) else {
            return false;
        };
        if authority.is_empty() || authority.contains(['/', '?', '#', '@']) {
            return false;
        }
        let host = match authority.strip_prefix('[') {
            Some(rest) => rest.split(']').next().unwrap_or_default(),
            None => authority.rsplit_once(':').map_or(authority, |(host, _)| host),
        };
        // An allowed host is written with or without its port, as for `Host`.
        self.origins.iter().any(|allowed| allowed.eq_ignore_ascii_case(host) || allowed.eq_ignore_ascii_case(authority))
    }
}

fn rpc_error(status: StatusCode, refusal: &Refusal) -> Response {
    (status, axum::Json(refusal.to_json())).into_response()
}

/// Origin, then token, then the body's screen; the request goes on with its body intact.
async fn guard_mcp(State(guard): State<Guard>, mut request: Request, next: Next) -> Response {
    if let Some(origin) = request.headers().get(header::ORIGIN) {
        let shown = String::from_utf8_lossy(origin.as_bytes()).chars().take(120).collect::<String>();
        if !origin.to_str().is_ok_and(|origin| guard.origin_allowed(origin)) {
            let refusal = Refusal {
                id: Value::Null,
                code: screen::INVALID_REQUEST,
                message: format!("origin {shown:?} is not allowed: the Origin must name an allowed host"),
            };
            return rpc_error(StatusCode::FORBIDDEN, &refusal);
        }
    }
    match authenticate(&guard.access, request.headers()).await {
        Ok(Some(claims)) => {
            request.extensions_mut().insert(VerifiedCaller(claims));
        }
        Ok(None) => {}
        Err(error) => return auth_response(&error).into_response(),
    }
    if request.method() != Method::POST {
        return next.run(request).await;
    }
    let (parts, body) = request.into_parts();
    let bytes = match axum::body::to_bytes(body, guard.max_body_bytes).await {
        Ok(bytes) => bytes,
        Err(_) => {
            let refusal = Refusal {
                id: Value::Null,
                code: screen::INVALID_REQUEST,
                message: format!("the body is larger than {} bytes or could not be read", guard.max_body_bytes),
            };
            return rpc_error(StatusCode::PAYLOAD_TOO_LARGE, &refusal);
        }
    };
    if let Some(refusal) = screen::screen(&bytes) {
        let status = if refusal.is_malformed() { StatusCode::BAD_REQUEST } else { StatusCode::OK };
        return rpc_error(status, &refusal);
    }
    next.run(Request::from_parts(parts, Body::from(bytes))).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_origin_must_name_an_allowed_host_with_or_without_its_port() {
        let guard = Guard {
            access: Access::Anonymous,
            origins: Arc::new(vec!["localhost".into(), "example.com:8443".into(), "::1".into()]),
            max_body_bytes: 1,
        };
        for allowed in ["http://localhost", "http://localhost:5173", "https://example.com:8443", "http://[::1]:9"] {
            assert!(guard.origin_allowed(allowed), "{allowed}");
        }
        for refused in [
            "null",
            "https://example.com",
            "https://example.com:9443",
            "http://localhost.evil.example",
            "http://evil.example/localhost",
            "http://user@localhost",
            "ftp://localhost",
            "http://",
        ] {
            assert!(!guard.origin_allowed(refused), "{refused}");
        }
        let any = Guard { origins: Arc::new(vec!["*".into()]), ..guard };
        assert!(any.origin_allowed("null"));
    }
}
