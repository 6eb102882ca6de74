//! What the skill hosts (`skill-host`) and the core (`skill-core`) share as HTTP servers, so
//! neither depends on the other for it.
//!
//! | what | where |
//! |---|---|
//! | request ids in and out, one access-log event per request | [`requests`] |
//! | log set-up (`SKILL_LOG`, `SKILL_LOG_FORMAT`) | [`init_logs`] |
//! | SIGTERM or SIGINT as a future | [`stop_signal`] |

pub mod requests;

/// Log lines go to stderr (stdout is the MCP channel of `mcp-stdio`): `SKILL_LOG` filters them
/// (default `default_filter`, e.g. `info`), `SKILL_LOG_FORMAT=json` makes them JSON lines.
pub fn init_logs(default_filter: &str) {
    let filter = tracing_subscriber::EnvFilter::try_from_env("SKILL_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default_filter));
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr());
    let builder = tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr).with_ansi(ansi);
    let _already_set = if std::env::var("SKILL_LOG_FORMAT").is_ok_and(|f| f == "json") {
        builder.json().try_init()
    } else {
        builder.try_init()
    };
}

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
