//! MCP over streamable HTTP at `/mcp`: stateless (any replica can answer any request), JSON
//! responses, and a bearer token checked on every HTTP request before the MCP layer sees it.
//! `GET /healthz` answers without a token.

use std::sync::Arc;

use axum::Router;
use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use serde_json::json;
use tokio_util::sync::CancellationToken;

use crate::auth::Access;
use crate::http::{VerifiedCaller, auth_response, authenticate};
use crate::mcp::McpHost;

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
    let mcp =
        Router::new().route_service("/mcp", service).layer(axum::middleware::from_fn_with_state(access, check_token));
    Router::new()
        .route("/healthz", get(|| async { axum::Json(json!({"status": "ok"})) }))
        .merge(mcp)
        .layer(axum::middleware::from_fn(skill_http::requests::log))
}

async fn check_token(State(access): State<Access>, mut request: Request, next: Next) -> Response {
    match authenticate(&access, request.headers()).await {
        Ok(Some(claims)) => {
            request.extensions_mut().insert(VerifiedCaller(claims));
            next.run(request).await
        }
        Ok(None) => next.run(request).await,
        Err(error) => auth_response(&error).into_response(),
    }
}
