//! `skill-core executor`: the daemon that runs the calls of remote skills — `http` and `mcp` — for
//! a core: it claims what its configuration admits (origins, audiences), calls the endpoint behind
//! the network guard with an audience token the core issued, and reports the outcome through the
//! shared executor loop. Every setting is a flag or a `CONTROL_PLANE_SKILLS_*` variable (lists
//! comma-separated).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use skill_engine::tokens::RESERVED_AUDIENCES;
use skill_executor::Options;
use skill_remote::guard::SystemLookup;
use skill_remote::{Config, CoreTokens, Remote};

#[derive(Debug, clap::Args)]
pub(crate) struct ExecutorArgs {
    /// The core to claim from.
    #[arg(long, env = "SKILL_CORE_URL", default_value = "http://127.0.0.1:8700")]
    core: String,
    /// The executor's token (a principal with skills.execute).
    #[arg(long, env = "SKILL_CORE_TOKEN", hide_env_values = true)]
    token: String,
    /// The protocols to run: http, mcp (each only with its origins or servers).
    #[arg(
        long = "protocol",
        env = "CONTROL_PLANE_SKILLS_PROTOCOLS",
        value_delimiter = ',',
        default_value = "http,mcp"
    )]
    protocols: Vec<String>,
    /// An origin scheme://host[:port] whose http skills this executor may call (repeat, or a
    /// comma-separated list). None: no http calls.
    #[arg(long = "http-origin", env = "CONTROL_PLANE_SKILLS_HTTP_ALLOWED_ORIGINS", value_delimiter = ',')]
    http_origins: Vec<String>,
    /// An origin scheme://host[:port] of MCP servers (streamable HTTP) whose tools this executor
    /// may call.
    #[arg(long = "mcp-origin", env = "CONTROL_PLANE_SKILLS_MCP_ALLOWED_ORIGINS", value_delimiter = ',')]
    mcp_origins: Vec<String>,
    /// The stdio MCP servers `stdio:<name>` endpoints name, as JSON:
    /// {"NAME": {"command": "...", "args": [...], "env": {...}}}.
    #[arg(long = "mcp-servers", env = "CONTROL_PLANE_SKILLS_MCP_SERVERS", value_name = "JSON")]
    mcp_servers: Option<String>,
    /// An audience this executor may obtain tokens for (never skill-core or skill-executor).
    #[arg(long = "audience", env = "CONTROL_PLANE_SKILLS_ALLOWED_AUDIENCES", value_delimiter = ',')]
    audiences: Vec<String>,
    /// A host allowed to resolve to a non-public address (loopback, private networks).
    #[arg(long = "private-host", env = "CONTROL_PLANE_SKILLS_PRIVATE_HOSTS", value_delimiter = ',')]
    private_hosts: Vec<String>,
    /// Calls run at once.
    #[arg(long, env = "CONTROL_PLANE_SKILLS_CONCURRENCY", default_value_t = 4,
          value_parser = clap::value_parser!(u32).range(1..=256))]
    concurrency: u32,
    /// A PEM file of certificates to trust beside the system's (a private CA); repeatable.
    #[arg(long = "ca-file", env = "CONTROL_PLANE_SKILLS_CA_FILES", value_delimiter = ',')]
    ca_files: Vec<PathBuf>,
    /// Seconds running calls may finish after SIGTERM.
    #[arg(long, default_value_t = 30, value_parser = clap::value_parser!(u64).range(0..=3600))]
    grace: u64,
    #[command(flatten)]
    metrics: skill_server::MetricsArg,
}

impl ExecutorArgs {
    /// The runner's configuration, checked: what is wrong stops the executor before it starts.
    fn config(&self) -> Result<Config> {
        // A variable set to "" or ending in "," leaves empty items: not values.
        let listed = |list: &[String]| list.iter().filter(|item| !item.trim().is_empty()).cloned().collect::<Vec<_>>();
        let audiences = listed(&self.audiences);
        let mcp_servers = match self.mcp_servers.as_deref().map(str::trim).filter(|json| !json.is_empty()) {
            None => Default::default(),
            Some(json) => serde_json::from_str(json).context(
                "--mcp-servers: expected {\"NAME\": {\"command\": \"...\", \"args\": [...], \"env\": {...}}}",
            )?,
        };
        if let Some(reserved) = audiences.iter().find(|audience| RESERVED_AUDIENCES.contains(&audience.as_str())) {
            bail!("--audience {reserved}: the core's and the executor's own audiences are reserved");
        }
        let mut roots = Vec::new();
        for file in &self.ca_files {
            let pem = std::fs::read(file).with_context(|| format!("--ca-file {}", file.display()))?;
            let certificates = reqwest::Certificate::from_pem_bundle(&pem)
                .with_context(|| format!("--ca-file {}: not PEM certificates", file.display()))?;
            if certificates.is_empty() {
                bail!("--ca-file {}: no certificate in it", file.display());
            }
            roots.extend(certificates);
        }
        Ok(Config {
            protocols: listed(&self.protocols),
            http_origins: listed(&self.http_origins),
            mcp_origins: listed(&self.mcp_origins),
            audiences,
            private_hosts: listed(&self.private_hosts),
            roots,
            mcp_servers,
        })
    }
}

pub(crate) async fn run(args: ExecutorArgs) -> Result<()> {
    let config = args.config()?;
    let client = skill_client::Client::new(&args.core, args.token.clone()).context("--core")?;
    let tokens = Arc::new(CoreTokens::new(client.clone()));
    let remote = Remote::new(&config, Arc::new(SystemLookup), Some(tokens)).map_err(anyhow::Error::msg)?;
    let declared = skill_executor::Runner::declared(&remote);
    if declared.protocols.is_empty() {
        bail!("nothing to run: give --http-origin, --mcp-origin or --mcp-servers for the protocols it runs");
    }
    args.metrics.start("executor", None).await?;
    // Before saying it runs: a SIGTERM from then on stops it cleanly.
    let stop = skill_http::stop_signal();
    tracing::info!(core = %args.core, http = ?declared.http_origins, mcp = ?declared.mcp_endpoints, audiences = ?declared.audiences,
                   concurrency = args.concurrency, "executing remote skills");
    let options = Options {
        concurrency: args.concurrency as usize,
        grace: Duration::from_secs(args.grace),
        ..Options::default()
    };
    let remote = Arc::new(remote);
    let ran = skill_executor::run(client, Arc::clone(&remote) as Arc<dyn skill_executor::Runner>, options, stop).await;
    remote.close().await;
    ran.context("the core refused this executor")?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    #[derive(Debug, clap::Parser)]
    struct Line {
        #[command(flatten)]
        args: ExecutorArgs,
    }

    fn config(words: &[&str]) -> Result<Config> {
        let line = Line::try_parse_from(["executor", "--token", "t"].iter().chain(words)).expect("parses");
        line.args.config()
    }

    #[test]
    fn reserved_audiences_and_missing_files_stop_it_before_it_starts() {
        let refused =
            config(&["--http-origin", "https://svc.example", "--audience", "skill-core"]).expect_err("reserved");
        assert!(refused.to_string().contains("reserved"), "{refused}");
        let missing = config(&["--ca-file", "/nonexistent/ca.pem"]).expect_err("missing");
        assert!(missing.to_string().contains("--ca-file /nonexistent/ca.pem"), "{missing:#}");
        let fine =
            config(&["--http-origin", "https://svc.example,https://other.example", "--audience", "a,b"]).expect("ok");
        assert_eq!((fine.http_origins.len(), fine.audiences.len()), (2, 2), "comma-separated lists");
    }

    #[test]
    fn stdio_servers_are_json_and_become_endpoints() {
        let servers = r#"{"tools": {"command": "python3", "args": ["server.py"]}}"#;
        let parsed = config(&["--mcp-servers", servers]).expect("parsed");
        let remote = Remote::new(&parsed, Arc::new(SystemLookup), None).expect("a runner");
        let declared = skill_executor::Runner::declared(&remote);
        assert_eq!(
            (declared.protocols, declared.mcp_endpoints),
            (vec!["mcp".to_owned()], vec!["stdio:tools".to_owned()])
        );
        let wrong = config(&["--mcp-servers", r#"{"tools": {"cmd": "x"}}"#]).expect_err("unknown field");
        assert!(format!("{wrong:#}").contains("--mcp-servers"), "{wrong:#}");
    }

    #[test]
    fn an_origin_with_a_path_is_refused_by_the_runner() {
        let config = config(&["--http-origin", "https://svc.example/skills"]).expect("parsed");
        let refused = Remote::new(&config, Arc::new(SystemLookup), None).expect_err("a path");
        assert!(refused.contains("it has a path"), "{refused}");
    }
}
