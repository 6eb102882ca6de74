//! The core's MCP gateway at `/mcp` (streamable HTTP, stateless, so any core answers any
//! request): a bearer token names the principal; `tools/list` answers exactly the leaf versions
//! it may call; `tools/call` goes through the engine's invoke with every check of a direct call
//! and waits for the call's end. An agent's external write without a basis becomes a request — a
//! task with a gate approval for exactly that call — that a person decides in the console; the
//! result reaches the agent through the MCP Tasks extension (`tasks/get`, `tasks/cancel`) or, for
//! a client without it, a `pending_approval` result and the read-only `approval_status` tool.
//! Nothing of a request lives in memory: it is rows, so a core killed meanwhile answers the same
//! task ids after its restart.
//!
//! | what | where |
//! |---|---|
//! | the router, the Origin and token guard | [`router`], `guard.rs` |
//! | the MCP handler | `handler.rs` |
//! | the tasks of the 2025-11-25 revision | `dated.rs` |
//! | how many long waits a principal holds | `waits.rs` |
//! | a version as a tool; results | `tools.rs` |

mod dated;
mod guard;
mod handler;
mod tools;
mod waits;

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use skill_engine::Engine;
use tokio_util::sync::CancellationToken;

pub use tools::{APPROVAL_STATUS, tool_name};

/// How the gateway behaves.
#[derive(Debug, Clone)]
pub struct Config {
    /// Where people reach the console (`https://core.example`); links to a request's task use
    /// it. Empty: the address the client used.
    pub public_url: String,
    /// How long `tools/call` holds an agent's request, for a client without the Tasks
    /// extension, before answering `pending_approval`.
    pub hold: Duration,
    /// How long `tools/call` waits for a call's end before answering that it still runs.
    pub call_wait: Duration,
    /// The largest body accepted.
    pub max_body_bytes: usize,
    /// The port the core listens on. A loopback `Origin` (`localhost`, `127.0.0.1`, `[::1]`) is
    /// the core's own only with this port; `None`: no loopback origin is, only the public
    /// address. The core's `serve` sets it from its listener.
    pub listen_port: Option<u16>,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            public_url: String::new(),
            hold: Duration::from_secs(20),
            call_wait: Duration::from_secs(60),
            max_body_bytes: 4 * 1024 * 1024,
            listen_port: None,
        }
    }
}

/// `/mcp`: the streamable HTTP service behind the guard. Cancelling `stop` ends open streams.
pub fn router<S: Clone + Send + Sync + 'static>(engine: Engine, config: Config, stop: CancellationToken) -> Router<S> {
    let mcp_config = StreamableHttpServerConfig::default()
        .with_legacy_session_mode(false)
        .with_json_response(false)
        .with_max_request_body_bytes(config.max_body_bytes)
        .with_cancellation_token(stop)
        // The guard checks `Origin` against the request's own host and the public address.
        .disable_allowed_hosts();
    let waits = Arc::new(waits::Waits::default());
    let gateway = handler::Gateway::new(engine.clone(), Arc::new(config.clone()), Arc::clone(&waits));
    let service =
        StreamableHttpService::new(move || Ok(gateway.clone()), Arc::new(NeverSessionManager::default()), mcp_config);
    let guard = guard::Guard::new(engine, &config, waits);
    Router::new().route_service("/mcp", service).layer(axum::middleware::from_fn_with_state(guard, guard::check))
}
