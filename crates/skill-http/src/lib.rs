//! What the skill hosts (`skill-host`) and the core (`skill-core`) share as HTTP servers, so
//! neither depends on the other for it.
//!
//! | what | where |
//! |---|---|
//! | request ids in and out, one access-log event per request | [`requests`] |
//! | log set-up (`SKILL_LOG`, `SKILL_LOG_FORMAT`), lines buffered off the request path, plain lines formatted cheaply | [`init_logs`], [`LogGuard`] |
//! | Prometheus metrics: the recorder, `GET /metrics` on its own address, requests counted by route template | [`metrics`] |
//! | SIGTERM or SIGINT as a future | [`stop_signal`] |
//! | serving a router with header and body deadlines, bounded connections and a prompt stop | [`serve`], [`Limits`] |

mod bodies;
mod line;
mod logs;
pub mod mcp_screen;
pub mod metrics;
pub mod requests;
mod server;
mod tls;

pub use bodies::BodyCut;
pub use logs::{LogGuard, init_logs};
pub use server::{Limits, serve, serve_tls};
pub use tls::Tls;

/// Resolves on SIGTERM or SIGINT. The handlers are installed when this is called, not when the
/// future is first polled: a signal that comes while a server is still starting (after it said it
/// listens, before it waits for the signal) stops it cleanly instead of ending the process at
/// once. Call it within a Tokio runtime.
pub fn stop_signal() -> impl std::future::Future<Output = ()> + Send + 'static {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let terminate = signal(SignalKind::terminate()).ok();
        let interrupt = signal(SignalKind::interrupt()).ok();
        async move {
            // A handler that could not be installed never fires; the other still does.
            let wait = |stream: Option<tokio::signal::unix::Signal>| async move {
                match stream {
                    Some(mut stream) => {
                        stream.recv().await;
                    }
                    None => std::future::pending::<()>().await,
                }
            };
            tokio::select! {
                () = wait(terminate) => {}
                () = wait(interrupt) => {}
            }
        }
    }
    #[cfg(not(unix))]
    async {
        let _ = tokio::signal::ctrl_c().await;
    }
}
