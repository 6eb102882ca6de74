//! The executor's runners for remote skills — the `http` and `mcp` protocols of a contract's
//! `implementation` — behind the network guard. [`Remote`] is a [`skill_executor::Runner`]: give
//! it to [`skill_executor::run`] and it claims and runs the calls its configuration admits.
//!
//! | what | where |
//! |---|---|
//! | what an executor admits and how it is told | [`Config`], [`Remote`] |
//! | the network guard: allow-list, address classes, resolution | [`guard`] |
//! | the `http` wire contract | `http.rs` |
//! | the `mcp` wire contract (streamable HTTP and configured stdio servers) | `mcp.rs`, [`StdioServer`] |
//! | audience tokens from the core, one per call held | [`Tokens`], [`CoreTokens`] |

mod failure;
pub mod guard;
mod http;
mod mcp;
mod tokens;

use std::sync::Arc;

use futures::future::BoxFuture;
use skill_api::ClaimOut;
use skill_contract::Protocol;
use skill_executor::{Declared, Outcome, Runner};

pub use mcp::StdioServer;
pub use tokens::{CoreTokens, Tokens};

use crate::failure::failed;
use crate::guard::{Guard, Lookup, normalized_origin};

/// What a remote executor runs: its protocols, the origins it may call, the audiences it may get
/// tokens for, and the hosts allowed to resolve to non-public addresses.
#[derive(Debug, Clone, Default)]
pub struct Config {
    /// `http`, `mcp`.
    pub protocols: Vec<String>,
    pub http_origins: Vec<String>,
    pub mcp_origins: Vec<String>,
    pub audiences: Vec<String>,
    pub private_hosts: Vec<String>,
    /// Certificates trusted beside the system's (a private CA).
    pub roots: Vec<reqwest::Certificate>,
    /// The MCP servers `stdio:<name>` endpoints name.
    pub mcp_servers: std::collections::BTreeMap<String, StdioServer>,
}

/// Runs `http` and `mcp` calls.
#[derive(Debug)]
pub struct Remote {
    declared: Declared,
    http: Option<http::HttpCalls>,
    mcp: Option<mcp::McpCalls>,
}

impl Remote {
    /// Checks `config` (origins are exactly `scheme://host[:port]`; protocols are `http` or
    /// `mcp`) and builds the runner; `tokens` issues the audience tokens.
    pub fn new(config: &Config, lookup: Arc<dyn Lookup>, tokens: Option<Arc<dyn Tokens>>) -> Result<Self, String> {
        for protocol in &config.protocols {
            if !matches!(protocol.as_str(), "http" | "mcp") {
                return Err(format!("a remote executor runs http or mcp calls, not {protocol:?}"));
            }
        }
        let runs = |protocol: &str| config.protocols.iter().any(|p| p == protocol);
        let http_origins: Vec<String> =
            config.http_origins.iter().map(|origin| normalized_origin(origin)).collect::<Result<_, _>>()?;
        let mcp_origins: Vec<String> =
            config.mcp_origins.iter().map(|origin| normalized_origin(origin)).collect::<Result<_, _>>()?;
        for name in config.mcp_servers.keys() {
            let ok = (1..=100).contains(&name.len())
                && name.bytes().all(|b| b.is_ascii_alphanumeric() || b"_.-".contains(&b));
            if !ok {
                return Err(format!("the MCP server name {name:?} is 1 to 100 letters, digits and _ . -"));
            }
        }
        let mcp = if runs("mcp") && (!mcp_origins.is_empty() || !config.mcp_servers.is_empty()) {
            let guard = if mcp_origins.is_empty() {
                None
            } else {
                Some(Arc::new(Guard::new(&mcp_origins, &config.private_hosts, Arc::clone(&lookup))?))
            };
            let client = match &guard {
                Some(guard) => http::guarded_client(guard, &config.roots)?,
                None => reqwest::Client::new(),
            };
            Some(mcp::McpCalls::new(client, guard, &config.audiences, tokens.clone(), config.mcp_servers.clone()))
        } else {
            None
        };
        let http = if runs("http") && !http_origins.is_empty() {
            let guard = Arc::new(Guard::new(&http_origins, &config.private_hosts, lookup)?);
            Some(http::HttpCalls::new(guard, &config.audiences, tokens, &config.roots)?)
        } else {
            None
        };
        let mut declared = Declared { audiences: config.audiences.clone(), ..Declared::default() };
        if http.is_some() {
            declared.protocols.push("http".into());
            declared.http_origins = http_origins;
            declared.capabilities.push("skills.protocol.http".into());
        }
        if mcp.is_some() {
            declared.protocols.push("mcp".into());
            declared.mcp_endpoints =
                mcp_origins.into_iter().chain(config.mcp_servers.keys().map(|name| format!("stdio:{name}"))).collect();
            declared.capabilities.push("skills.protocol.mcp".into());
        }
        Ok(Self { declared, http, mcp })
    }
}

impl Remote {
    /// Stops what the runner started (the stdio MCP servers); call it once the executor loop
    /// ended.
    pub async fn close(&self) {
        if let Some(mcp) = &self.mcp {
            mcp.close().await;
        }
    }
}

impl Runner for Remote {
    fn declared(&self) -> Declared {
        self.declared.clone()
    }

    fn run(&self, claimed: ClaimOut) -> BoxFuture<'static, Outcome> {
        let protocol = claimed.skill.contract.implementation().protocol();
        match (protocol, &self.http, &self.mcp) {
            (Protocol::Http, Some(http), _) => {
                let http = http.clone();
                Box::pin(async move { http.run(claimed).await })
            }
            (Protocol::Mcp, _, Some(mcp)) => {
                let mcp = mcp.clone();
                Box::pin(async move { mcp.run(claimed).await })
            }
            _ => Box::pin(async move {
                failed(
                    "protocol_not_supported",
                    true,
                    format!("this executor does not run {:?} calls", protocol.as_str()),
                    None,
                )
            }),
        }
    }
}
