//! What the skill hosts (`skill-host`) and the core (`skill-core`) share as HTTP servers, so
//! neither depends on the other for it.
//!
//! | what | where |
//! |---|---|
//! | request ids in and out, one access-log event per request | [`requests`] |
//! | log set-up (`SKILL_LOG`, `SKILL_LOG_FORMAT`), lines buffered off the request path, plain lines formatted cheaply | [`init_logs`], [`LogGuard`] |
//! | SIGTERM or SIGINT as a future | [`stop_signal`] |
//! | serving a router with header and body deadlines, bounded connections and a prompt stop | [`serve`], [`Limits`] |

mod bodies;
mod line;
mod logs;
pub mod requests;
mod server;
mod tls;

pub use bodies::BodyCut;
pub use logs::{LogGuard, init_logs};
pub use server::{Limits, serve, serve_tls};
pub use tls::Tls;

/// Resolves on SIGTERM or SIGINT.
pub async fn stop_signal() {
    let interrupt = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        let mut terminate = match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(terminate) => terminate,
            Err(_) => return std::future::pending().await,
        };
        tokio::select! {
            _ = interrupt => {}
            _ = terminate.recv() => {}
        }
    }
    #[cfg(not(unix))]
    let _ = interrupt.await;
}
