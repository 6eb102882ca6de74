//! `serve http|mcp-http|mcp-stdio`: configure, listen, and stop gracefully.
//!
//! On SIGTERM or SIGINT the host stops accepting connections, lets the requests in flight finish,
//! waits for every call still running (a caller that hung up included), then exits 0.

#![allow(clippy::print_stderr)]

use std::future::Future;
use std::process::ExitCode;
use std::time::Duration;

use rmcp::ServiceExt;
use skill_sdk::host::{ServeArgs, ServeTransport};
use skill_sdk::registry::Registry;
use tokio_util::sync::CancellationToken;

use crate::auth::{self, Access, ConfigError};
use crate::http::HttpHost;
use crate::mcp::{McpHost, ToolClash};
use crate::mcp_http::{self, AllowedHosts};
use crate::mcp_stdio;

/// Why serving failed.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error("{0}")]
    Config(#[from] ConfigError),
    #[error("{0}")]
    Tools(#[from] ToolClash),
    #[error("cannot listen on {address}: {source}")]
    Listen { address: String, source: std::io::Error },
    #[error("the server failed: {0}")]
    Io(#[from] std::io::Error),
    #[error("the MCP session over stdio failed: {0}")]
    Stdio(String),
    #[error("{0}")]
    Tls(String),
    #[error("{0}")]
    Metrics(String),
}

pub(crate) fn server_name() -> String {
    std::env::args_os()
        .next()
        .and_then(|arg0| std::path::Path::new(&arg0).file_stem().map(|n| n.to_string_lossy().into_owned()))
        .unwrap_or_else(|| "skills".to_owned())
}

/// The host's `serve` command: runs until a stop signal, then exits 0; prints why it could not.
pub fn serve(registry: &Registry, args: ServeArgs) -> ExitCode {
    let logs = skill_http::init_logs(&server_name(), "info,rmcp=warn");
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("error: cannot start the async runtime: {error}");
            return ExitCode::FAILURE;
        }
    };
    // The stop signal's handlers are installed first, inside the runtime, before anything listens.
    let result = runtime
        .block_on(async { run(registry, &args, |name| std::env::var(name).ok(), skill_http::stop_signal()).await });
    // A sync skill past its deadline keeps its thread; do not wait for it.
    runtime.shutdown_background();
    // Every log line of the run is out before the last word.
    logs.flush();
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error: {error}");
            ExitCode::FAILURE
        }
    }
}

/// The server bounds of `args`.
fn limits(args: &ServeArgs) -> skill_http::Limits {
    skill_http::Limits {
        max_connections: args.max_connections as usize,
        max_connections_per_client: args.max_connections_per_client as usize,
        header_timeout: Duration::from_secs(args.header_timeout),
        body_timeout: Duration::from_secs(args.body_timeout),
        ..skill_http::Limits::default()
    }
}

fn access(args: &ServeArgs, env: impl Fn(&str) -> Option<String>) -> Result<Access, ConfigError> {
    let access = auth::access_from_env(env, args.allow_anonymous)?;
    if matches!(access, Access::Anonymous) {
        tracing::warn!("serving without token verification (--allow-anonymous): every caller is anonymous");
    }
    Ok(access)
}

/// The TLS of `--tls-cert`/`--tls-key`, when given.
fn tls(args: &ServeArgs) -> Result<Option<skill_http::Tls>, ServeError> {
    match (&args.tls_cert, &args.tls_key) {
        (Some(cert), Some(key)) => Ok(Some(skill_http::Tls::from_pem_files(cert, key).map_err(ServeError::Tls)?)),
        (None, None) => Ok(None),
        _ => Err(ServeError::Tls("--tls-cert and --tls-key go together".to_owned())),
    }
}

/// Serves `router` on `listener`, over TLS when `tls` is given.
async fn serve_on(
    listener: tokio::net::TcpListener,
    router: axum::Router,
    args: &ServeArgs,
    tls: Option<skill_http::Tls>,
    stop: impl Future<Output = ()> + Send,
) -> std::io::Result<()> {
    match tls {
        Some(tls) => skill_http::serve_tls(listener, router, limits(args), tls, stop).await,
        None => skill_http::serve(listener, router, limits(args), stop).await,
    }
}

async fn listen(args: &ServeArgs) -> Result<tokio::net::TcpListener, ServeError> {
    let address = format!("{}:{}", args.host, args.port());
    tokio::net::TcpListener::bind(&address).await.map_err(|source| ServeError::Listen { address, source })
}

/// Serves until `stop` resolves; `env` gives the token settings.
pub async fn run(
    registry: &Registry,
    args: &ServeArgs,
    env: impl Fn(&str) -> Option<String>,
    stop: impl Future<Output = ()> + Send + 'static,
) -> Result<(), ServeError> {
    let count = registry.skills().len();
    let skills = if count == 1 { "skill" } else { "skills" };
    let wanted = args.metrics_listen.as_deref().map(str::trim).filter(|address| !address.is_empty());
    let metered = wanted.is_some();
    if let Some(address) = wanted {
        let listening = skill_http::metrics::start("host", address, None).await.map_err(ServeError::Metrics)?;
        eprintln!("metrics at http://{listening}/metrics");
    }
    let counted = |router: axum::Router| if metered { skill_http::metrics::counted(router) } else { router };
    match args.transport {
        ServeTransport::Http => {
            let access = access(args, env)?;
            let checked = access.describe();
            let host = HttpHost::new(registry, access, args.max_body_bytes);
            let calls = host.calls();
            let tls = tls(args)?;
            let scheme = if tls.is_some() { "https" } else { "http" };
            let listener = listen(args).await?;
            let address = listener.local_addr()?;
            eprintln!(
                "serving {count} {skills} over http on {scheme}://{address} ({checked}); POST /skills/<name>@<version>"
            );
            serve_on(listener, counted(host.router()), args, tls, stop).await?;
            tracing::info!(running = calls.running(), "stopping: waiting for the calls in flight");
            calls.drain().await;
        }
        ServeTransport::McpHttp => {
            let access = access(args, env)?;
            let checked = access.describe();
            let host = McpHost::new(registry, &server_name())?;
            let calls = host.calls();
            let allowed = if args.allowed_hosts.is_empty() {
                AllowedHosts::defaults_for(&args.host)
            } else {
                AllowedHosts(args.allowed_hosts.clone())
            };
            let cancel = CancellationToken::new();
            let router = mcp_http::router(host, access, &allowed, args.max_body_bytes, cancel.clone());
            let tls = tls(args)?;
            let scheme = if tls.is_some() { "https" } else { "http" };
            let listener = listen(args).await?;
            let address = listener.local_addr()?;
            eprintln!(
                "serving {count} {skills} over mcp-http on {scheme}://{address}/mcp ({checked}; Host: {})",
                allowed.0.join(", ")
            );
            serve_on(listener, counted(router), args, tls, stop).await?;
            tracing::info!(running = calls.running(), "stopping: waiting for the calls in flight");
            calls.drain().await;
            cancel.cancel();
        }
        ServeTransport::McpStdio => {
            let host = McpHost::new(registry, &server_name())?;
            let calls = host.calls();
            eprintln!("serving {count} {skills} over mcp-stdio");
            let service = host
                .serve(mcp_stdio::screened(tokio::io::stdin()))
                .await
                .map_err(|e| ServeError::Stdio(e.to_string()))?;
            tokio::select! {
                ended = service.waiting() => { ended.map_err(|e| ServeError::Stdio(e.to_string()))?; }
                () = stop => {}
            }
            calls.drain().await;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    #[derive(Parser)]
    struct Command {
        #[command(flatten)]
        args: ServeArgs,
    }

    #[test]
    fn the_flags_default_to_the_servers_limits_and_pass_through() {
        let parsed = Command::try_parse_from(["host", "http"]).expect("parses");
        assert_eq!(limits(&parsed.args), skill_http::Limits::default());
        let tight = Command::try_parse_from([
            "host",
            "mcp-http",
            "--max-connections",
            "8",
            "--max-connections-per-client",
            "2",
            "--header-timeout",
            "1",
            "--body-timeout",
            "3",
        ])
        .expect("parses");
        let again = Command::try_parse_from(
            std::iter::once(std::ffi::OsString::from("host")).chain(tight.args.to_args().into_iter().skip(1)),
        )
        .expect("the command line it gives parses");
        let limits = limits(&again.args);
        assert_eq!(
            (limits.max_connections, limits.max_connections_per_client, limits.header_timeout, limits.body_timeout),
            (8, 2, Duration::from_secs(1), Duration::from_secs(3))
        );
        assert!(Command::try_parse_from(["host", "http", "--max-connections", "0"]).is_err());
    }
}
