//! The reference of benchmark P3: a bare rmcp server with one hand-written `echo` tool, over
//! stdio or streamable HTTP (stateless, JSON responses, as the skill host serves it). Over stdio
//! its answers go straight to stdout under stdout's lock, as the host's do: rmcp's own stdio
//! writer hands each write to the blocking pool, which made a reference slower than what it
//! measures — a floor has to be the fastest bare rmcp can be.
//!
//! ```text
//! bare_mcp stdio
//! bare_mcp http      # listens on 127.0.0.1, a free port, and prints where
//! ```

#![allow(clippy::print_stderr)]

use std::io::Write as _;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{Json, ServerHandler, ServiceExt, tool, tool_handler, tool_router};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[derive(Debug, Deserialize, JsonSchema)]
struct Text {
    text: String,
}

#[derive(Debug, Serialize, JsonSchema)]
struct Echoed {
    text: String,
}

#[derive(Debug, Clone)]
struct Bare {
    tool_router: ToolRouter<Self>,
}

#[tool_router(router = tool_router)]
impl Bare {
    fn new() -> Self {
        Self { tool_router: Self::tool_router() }
    }

    #[tool(name = "echo", description = "Return the text unchanged")]
    async fn echo(&self, params: Parameters<Text>) -> Json<Echoed> {
        Json(Echoed { text: params.0.text })
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for Bare {}

/// The process's stdout, written at once under its lock.
struct Stdout;

impl tokio::io::AsyncWrite for Stdout {
    fn poll_write(self: Pin<&mut Self>, _: &mut Context<'_>, bytes: &[u8]) -> Poll<std::io::Result<usize>> {
        Poll::Ready(std::io::stdout().lock().write_all(bytes).map(|()| bytes.len()))
    }

    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(std::io::stdout().lock().flush())
    }

    fn poll_shutdown(self: Pin<&mut Self>, context: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        self.poll_flush(context)
    }
}

#[tokio::main]
async fn main() {
    match std::env::args().nth(1).as_deref() {
        Some("stdio") => {
            let service = Bare::new().serve((tokio::io::stdin(), Stdout)).await.expect("serves");
            let _ = service.waiting().await;
        }
        Some("http") => {
            let config = StreamableHttpServerConfig::default().with_legacy_session_mode(false).with_json_response(true);
            let service =
                StreamableHttpService::new(|| Ok(Bare::new()), Arc::new(NeverSessionManager::default()), config);
            let router = axum::Router::new().route_service("/mcp", service);
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("binds");
            eprintln!("serving bare rmcp on http://{}/mcp", listener.local_addr().expect("address"));
            axum::serve(listener, router).await.expect("serves");
        }
        _ => {
            eprintln!("usage: bare_mcp stdio|http");
            std::process::exit(2);
        }
    }
}
