//! `skill-core`: serve the core, and issue or revoke tokens for bootstrapping.

#![allow(clippy::print_stdout, clippy::print_stderr)]

mod executor;
mod explain;
mod folders;
mod journal;

use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::{Parser, Subcommand};
use skill_engine::{Engine, Origin, TokenRequest};
use skill_server::MetricsArg;
use skill_store::StoreOptions;

/// The core allocates and frees small objects on every request (JSON values, rows, events) from
/// several threads at once; mimalloc does that with less CPU than the system allocator.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// The skills core: a catalog of immutable published skill versions over SQLite or PostgreSQL.
#[derive(Debug, Parser)]
#[command(name = "skill-core", version)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run everything on one machine: the core on an embedded SQLite database, the package
    /// applied, its skill host running as the local executor (with a folder for every `folder`
    /// variable of the package, and a model for ctx.llm(): the installation's when SKILL_LLM_*
    /// is set, else dev's stand-in), the console; prints tokens as `export` lines and commands
    /// that paste. Quiet: a line per call that ends, per decision, per failure (--verbose or
    /// SKILL_LOG for more). Ctrl-C stops all.
    Dev(skill_dev::DevArgs),
    /// Serve the API (/api/v1, /healthz, /readyz, /.well-known/jwks.json) until SIGTERM or
    /// SIGINT.
    Serve {
        #[command(flatten)]
        db: Db,
        /// The address to listen on.
        #[arg(long, default_value = "127.0.0.1:8700")]
        listen: String,
        /// The issuer (`iss`) of the audience tokens the core signs for executors: the URL skill
        /// hosts are given as SKILL_SDK_IAM_ISSUER (default: http:// and the address listened on).
        #[arg(long, env = "SKILL_CORE_ISSUER", value_name = "URL")]
        issuer: Option<String>,
        /// The address people reach this core at, for the console at <URL>/console (default:
        /// http:// and the address listened on). An https:// address (a proxy terminating TLS)
        /// makes the console's session cookies Secure.
        #[arg(long, env = "SKILL_CORE_PUBLIC_URL", value_name = "URL")]
        public_url: Option<String>,
        #[command(flatten)]
        bounds: Bounds,
        #[command(flatten)]
        metrics: MetricsArg,
        #[command(flatten)]
        journal: journal::JournalArgs,
        /// Log at debug: executors' long-polling claims and heartbeats, health checks and key
        /// fetches too (without it each of those is quiet; every other request, every call that
        /// ends, every decision and every failure is a line). SKILL_LOG sets the filter outright
        /// (`debug`, `info,sqlx=warn`, …); SKILL_LOG_FORMAT=json writes JSON lines.
        #[arg(long, short)]
        verbose: bool,
    },
    /// Issue or revoke personal access tokens, straight in the database (no running core
    /// needed): the way in before anyone holds org.manage.
    Token {
        #[command(subcommand)]
        command: TokenCommand,
    },
    /// Run the calls of remote (http) skills for a core: claim what the allow-lists admit, call
    /// each endpoint behind the network guard with an audience token from the core, report.
    /// SIGTERM stops claiming and lets running calls finish within --grace.
    Executor(executor::ExecutorArgs),
    /// Grant permissions to a principal, straight in the database (no token needed):
    /// PERMISSION organisation-wide or PERMISSION@WORKSPACE in one workspace. The way to give the
    /// core's execution principal (core.execution) what the contracts of the skills task types
    /// pin require — no token is ever issued for it.
    Grant {
        #[command(flatten)]
        db: Db,
        /// The principal's name.
        #[arg(long)]
        principal: String,
        /// One or more permissions: claims.reply, tasks.write@claims, …
        #[arg(required = true, value_name = "PERMISSION[@WORKSPACE]")]
        permissions: Vec<String>,
    },
    /// Take back permissions `grant` (or `token create --grant`) gave.
    Revoke {
        #[command(flatten)]
        db: Db,
        /// The principal's name.
        #[arg(long)]
        principal: String,
        #[arg(required = true, value_name = "PERMISSION[@WORKSPACE]")]
        permissions: Vec<String>,
    },
    /// Set what an executor principal may run, whole, straight in the database: its claims may
    /// declare at most this (an executor allowed nothing claims nothing). Also
    /// POST /api/v1/principals/{name}/executor-allowance.
    Allow {
        #[command(flatten)]
        db: Db,
        /// The executor principal's name.
        #[arg(long)]
        principal: String,
        /// A protocol it runs (repeat): local, http, mcp.
        #[arg(long = "protocol", value_name = "PROTOCOL")]
        protocols: Vec<String>,
        /// A local entrypoint (module:function) or module it runs (repeat).
        #[arg(long = "local", value_name = "ENTRYPOINT|MODULE")]
        local: Vec<String>,
        /// An origin of http endpoints it calls (repeat): https://host[:port].
        #[arg(long = "http-origin", value_name = "ORIGIN")]
        http_origins: Vec<String>,
        /// An origin of MCP endpoints, or stdio:<name>, it calls (repeat).
        #[arg(long = "mcp-origin", value_name = "ORIGIN")]
        mcp_origins: Vec<String>,
        /// An audience it may obtain tokens for (repeat).
        #[arg(long = "audience", value_name = "AUDIENCE")]
        audiences: Vec<String>,
    },
    /// Create a workspace, so that permissions can be granted in it (--grant tasks.write@KEY).
    Workspace {
        #[command(subcommand)]
        command: WorkspaceCommand,
    },
    /// The tamper-evident journal: make a signing key, export the journal, verify an export
    /// offline, explain what allowed an external write (docs/journal.md).
    Journal {
        #[command(subcommand)]
        command: journal::JournalCommand,
    },
    /// Print the OpenAPI document of the API.
    Openapi,
    /// Run a package's scenario tests on scratch cores in this process, touching no other data:
    /// reads the body `POST /api/v1/packages:test` takes (JSON) on stdin and writes its answer
    /// (JSON) on stdout. `skill-sdk package test` runs this command (the authoring command links
    /// no database engine); a refused run exits 1 with its code and message on stderr.
    Scenarios,
}

/// The server's bounds against slow and numerous clients (see `skill_http::Limits`).
#[derive(Debug, clap::Args)]
struct Bounds {
    /// The most connections open at once; past it, the connection idle longest (a stalled
    /// client, an idle keep-alive) is closed to make room.
    #[arg(long, value_name = "N", default_value_t = 4096, value_parser = clap::value_parser!(u32).range(1..))]
    max_connections: u32,
    /// The most connections open from one IP address.
    #[arg(long, value_name = "N", default_value_t = 1024, value_parser = clap::value_parser!(u32).range(1..))]
    max_connections_per_client: u32,
    /// Seconds a client has to send a request's header (also how long an idle keep-alive
    /// connection stays open).
    #[arg(long, value_name = "SECONDS", default_value_t = 10, value_parser = clap::value_parser!(u64).range(1..=3600))]
    header_timeout: u64,
    /// Seconds a client has to send a request's body, once its header is in.
    #[arg(long, value_name = "SECONDS", default_value_t = 30, value_parser = clap::value_parser!(u64).range(1..=3600))]
    body_timeout: u64,
}

impl Bounds {
    fn limits(&self) -> skill_http::Limits {
        skill_http::Limits {
            max_connections: self.max_connections as usize,
            max_connections_per_client: self.max_connections_per_client as usize,
            header_timeout: std::time::Duration::from_secs(self.header_timeout),
            body_timeout: std::time::Duration::from_secs(self.body_timeout),
            ..skill_http::Limits::default()
        }
    }
}

#[derive(Debug, clap::Args)]
struct Db {
    /// A SQLite data directory (created when missing; the database is its file core.db), a
    /// .db/.sqlite file, or a postgres:// URL.
    #[arg(long, env = "SKILL_CORE_DB", default_value = ".skill-core")]
    db: String,
    /// Connections to PostgreSQL (or SQLite reading connections of the sqlx pool): more lets
    /// more commits wait on the disk at once.
    #[arg(long, env = "SKILL_CORE_DB_CONNECTIONS", value_name = "N", default_value_t = 16,
          value_parser = clap::value_parser!(u32).range(1..=1000))]
    db_connections: u32,
    /// Where artifacts' content is kept: a folder, or `s3://<bucket>[/<prefix>]` (credentials
    /// and region from the AWS_* variables). Default: `blobs` beside a SQLite database; with
    /// PostgreSQL, replicas need a store they share, so there is no default and content is
    /// refused until one is given.
    #[arg(long, env = "SKILL_CORE_BLOBS", value_name = "DIR|S3-URL")]
    blobs: Option<String>,
    /// The server of an S3-compatible store other than AWS (`http://` is allowed then).
    #[arg(long, env = "SKILL_CORE_S3_ENDPOINT", value_name = "URL")]
    s3_endpoint: Option<String>,
}

#[derive(Debug, Subcommand)]
enum WorkspaceCommand {
    /// Create a workspace.
    Create {
        #[command(flatten)]
        db: Db,
        /// Its key: lowercase letters, digits, - and _.
        #[arg(long)]
        key: String,
        /// A name for people.
        #[arg(long, default_value = "")]
        name: String,
    },
}

#[derive(Debug, Subcommand)]
enum TokenCommand {
    /// Issue a token (printed once, stored only as its hash) for a principal, creating it when
    /// missing, with organisation-wide grants — or, with --agent, for an agent a package
    /// installed, which acts with exactly what its document grants.
    Create {
        #[command(flatten)]
        db: Db,
        /// The principal's name.
        #[arg(long, required_unless_present = "agent", conflicts_with = "agent")]
        name: Option<String>,
        /// The key of an agent a package installed (agents/*.yaml): the token is its principal's.
        #[arg(long, value_name = "KEY", conflicts_with_all = ["kind", "grants"])]
        agent: Option<String>,
        /// For an agent (required, with --agent or --kind agent; nobody else has one): the name of
        /// the person who operates the agent with this token. What the agent does with it, that
        /// person set in motion, so they never decide what it asks for.
        #[arg(long = "for", value_name = "PERSON")]
        operator: Option<String>,
        /// person, agent or executor (when the principal is created).
        #[arg(long, default_value = "person")]
        kind: String,
        /// A permission to grant (repeat): org.manage, org.read, skills.invoke, skills.execute,
        /// tasks.write, or a custom one; organisation-wide, or PERMISSION@WORKSPACE in one
        /// workspace (tasks.write@claims).
        #[arg(long = "grant")]
        grants: Vec<String>,
        /// A note on what the token is for (at most 200 characters, no control characters).
        #[arg(long, default_value = "")]
        label: String,
        /// Days until the token expires, 1 to 3650 (never when absent).
        #[arg(long, value_parser = clap::value_parser!(u32).range(1..=i64::from(skill_engine::MAX_TOKEN_DAYS)))]
        expires_in_days: Option<u32>,
    },
    /// Revoke a token by its id (the id `token create` printed, not the token).
    Revoke {
        #[command(flatten)]
        db: Db,
        id: String,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let filter = match &cli.command {
        Command::Dev(args) if args.verbose => skill_dev::VERBOSE,
        Command::Dev(_) => skill_dev::QUIET,
        Command::Serve { verbose: true, .. } => skill_dev::VERBOSE,
        // The scratch cores' own lines are not the run's outcome, which is the answer.
        Command::Scenarios => "error",
        _ => "info,rmcp=error",
    };
    let service = match &cli.command {
        Command::Executor(_) => "skill-executor",
        _ => "skill-core",
    };
    let logs = skill_http::init_logs(service, filter);
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("error: cannot start the runtime: {error}");
            return ExitCode::FAILURE;
        }
    };
    let result = runtime.block_on(async {
        match cli.command {
            // `journal verify` answers with its own exit codes.
            Command::Journal { command } => journal::run(command).await,
            command => run(Cli { command }).await.map(|()| ExitCode::SUCCESS),
        }
    });
    // Every log line of the run is out before the last word.
    logs.flush();
    match result {
        Ok(code) => code,
        Err(error) => {
            eprintln!("error: {error:#}");
            ExitCode::FAILURE
        }
    }
}

async fn engine(db: &Db) -> Result<Engine> {
    let options = StoreOptions { max_connections: db.db_connections, ..StoreOptions::default() };
    let store = skill_store::open(&db.db, &options).await.context("opening the database")?;
    let engine = Engine::new(store).with_traces(skill_traces::spans::of_call);
    let sqlite = !(db.db.starts_with("postgres://") || db.db.starts_with("postgresql://"));
    let blobs = db.blobs.clone().or_else(|| sqlite.then(|| sqlite_blobs(&db.db).display().to_string()));
    Ok(match blobs {
        Some(url) if url.starts_with("s3://") => {
            let options =
                skill_blobs::S3Options { url, endpoint: db.s3_endpoint.clone(), ..skill_blobs::S3Options::default() };
            let s3 = skill_blobs::S3Blobs::new(&options).map_err(|error| anyhow::anyhow!("--blobs: {error}"))?;
            engine.with_blobs(std::sync::Arc::new(s3))
        }
        Some(folder) => engine.with_blobs(std::sync::Arc::new(skill_store::FolderBlobs::new(folder))),
        None => {
            tracing::warn!(
                "no store for artifacts' content (--blobs): artifacts and the results of task-bound calls are refused"
            );
            engine
        }
    })
}

/// `blobs` beside the SQLite database `target` names (a data directory, or the folder of a file).
fn sqlite_blobs(target: &str) -> std::path::PathBuf {
    let path = std::path::Path::new(target.strip_prefix("sqlite:").unwrap_or(target));
    let is_file = path.extension().is_some_and(|e| matches!(e.to_str(), Some("db" | "sqlite" | "sqlite3")));
    let folder = if is_file { path.parent().unwrap_or(std::path::Path::new(".")) } else { path };
    folder.join("blobs")
}

#[allow(clippy::too_many_lines, reason = "a data table: one arm per command, each a few lines")]
async fn run(cli: Cli) -> Result<()> {
    match cli.command {
        Command::Dev(args) => skill_dev::run(args).await,
        Command::Executor(args) => executor::run(args).await,
        Command::Serve { db, listen, issuer, public_url, bounds, metrics, journal, verbose: _ } => {
            let (journal_key, checkpoints) = journal.load()?;
            let listener =
                tokio::net::TcpListener::bind(&listen).await.with_context(|| format!("cannot listen on {listen}"))?;
            let address = listener.local_addr()?;
            let issuer = issuer.unwrap_or_else(|| format!("http://{address}"));
            let public_url = public_url.unwrap_or_else(|| format!("http://{address}"));
            let public_url = public_url.trim_end_matches('/');
            if !public_url.starts_with("http://") && !public_url.starts_with("https://") {
                anyhow::bail!("--public-url: an http:// or https:// address, not {public_url:?}");
            }
            let console = skill_server::console::Options {
                secure_cookies: public_url.starts_with("https://"),
                gateway: skill_gateway::Config {
                    public_url: public_url.to_owned(),
                    ..skill_gateway::Config::default()
                },
                checkpoints,
            };
            let mut engine = engine(&db).await?.with_issuer(&issuer);
            if let Some(key) = journal_key {
                eprintln!("signing the journal's checkpoints; their verifier key: {}", key.verifier().text());
                engine = engine.with_journal_key(key);
            }
            metrics.start("core", Some(&engine)).await?;
            // Before saying it serves: a SIGTERM from then on stops it cleanly.
            let stop = skill_http::stop_signal();
            eprintln!(
                "skill-core serving the API on http://{address}/api/v1 and the console on {public_url}/console (database: {})",
                skill_store::redact(&db.db)
            );
            skill_server::serve_with(engine, listener, bounds.limits(), console, stop).await.context("serving")?;
            eprintln!("skill-core stopped");
            Ok(())
        }
        Command::Token {
            command: TokenCommand::Create { db, name, agent, operator, kind, grants, label, expires_in_days },
        } => {
            let engine = engine(&db).await?;
            if let Some(key) = agent {
                let request = skill_api::AgentTokenRequest { label, expires_in_days, operated_by: operator };
                let issued = engine
                    .issue_agent_token(None, &key, &request, &Origin::default())
                    .await
                    .map_err(|error| anyhow::anyhow!("{error}"))?;
                let operated = issued.operated_by.map(|person| format!(", operated by {}", person.name));
                eprintln!(
                    "token {} for the agent {} ({}){}; it is shown once, keep it now:",
                    issued.token_id,
                    issued.agent,
                    issued.principal_id,
                    operated.unwrap_or_default()
                );
                println!("{}", issued.token);
                return Ok(());
            }
            let expires_at = expires_in_days.map(|days| chrono::Utc::now() + chrono::Duration::days(i64::from(days)));
            let request = TokenRequest { principal: name.unwrap_or_default(), kind, grants, label, expires_at };
            let issued = engine
                .issue_token_for(&request, operator.as_deref(), &Origin::default())
                .await
                .map_err(|error| anyhow::anyhow!("{error}"))?;
            eprintln!(
                "token {} for {} ({}); it is shown once, keep it now:",
                issued.record.id, issued.principal.name, issued.principal.id
            );
            println!("{}", issued.token);
            Ok(())
        }
        Command::Token { command: TokenCommand::Revoke { db, id } } => {
            let engine = engine(&db).await?;
            engine.revoke_token(&id, &Origin::default()).await.map_err(|error| anyhow::anyhow!("{error}"))?;
            eprintln!("token {id} revoked");
            Ok(())
        }
        Command::Grant { db, principal, permissions } => {
            let engine = engine(&db).await?;
            for permission in &permissions {
                let added = engine
                    .grant(&principal, permission, &Origin::default())
                    .await
                    .map_err(|error| anyhow::anyhow!("{error}"))?;
                eprintln!("{principal}: {permission} {}", if added { "granted" } else { "held already" });
            }
            Ok(())
        }
        Command::Revoke { db, principal, permissions } => {
            let engine = engine(&db).await?;
            for permission in &permissions {
                let removed = engine
                    .revoke_grant(&principal, permission, &Origin::default())
                    .await
                    .map_err(|error| anyhow::anyhow!("{error}"))?;
                eprintln!("{principal}: {permission} {}", if removed { "revoked" } else { "was not held" });
            }
            Ok(())
        }
        Command::Allow { db, principal, protocols, local, http_origins, mcp_origins, audiences } => {
            let engine = engine(&db).await?;
            let allowance = skill_api::ExecutorAllowance { protocols, local, http_origins, mcp_origins, audiences };
            let allowed = engine
                .allow_executor(None, &principal, &allowance, None)
                .await
                .map_err(|error| anyhow::anyhow!("{error}"))?;
            println!("{}", serde_json::to_string_pretty(&allowed)?);
            Ok(())
        }
        Command::Workspace { command: WorkspaceCommand::Create { db, key, name } } => {
            let engine = engine(&db).await?;
            let workspace = engine
                .create_workspace(&key, &name, &Origin::default())
                .await
                .map_err(|error| anyhow::anyhow!("{error}"))?;
            eprintln!("workspace {} created ({})", workspace.key, workspace.id);
            Ok(())
        }
        Command::Openapi => {
            println!("{}", serde_json::to_string_pretty(&skill_api::openapi::document())?);
            Ok(())
        }
        Command::Journal { command } => journal::run(command).await.map(drop),
        Command::Scenarios => scenarios().await,
    }
}

/// `skill-core scenarios`: the request from stdin, the answer to stdout.
async fn scenarios() -> Result<()> {
    use std::io::Read as _;
    let mut text = Vec::new();
    std::io::stdin().read_to_end(&mut text).context("reading the request from stdin")?;
    let request: skill_api::PackageTestRequest = serde_json::from_slice(&text)
        .context("stdin holds no package test request (the JSON body POST /api/v1/packages:test takes)")?;
    let out = skill_scenarios::run(&request, &std::env::temp_dir())
        .await
        .map_err(|refusal| anyhow::anyhow!("{}: {}", refusal.code, refusal.message))?;
    println!("{}", serde_json::to_string(&out)?);
    Ok(())
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    #[test]
    fn the_serve_flags_default_to_the_servers_limits() {
        let Cli { command: Command::Serve { bounds, .. } } =
            Cli::try_parse_from(["skill-core", "serve"]).expect("parses")
        else {
            panic!("serve")
        };
        assert_eq!(bounds.limits(), skill_http::Limits::default());
        assert!(Cli::try_parse_from(["skill-core", "serve", "--header-timeout", "0"]).is_err());
    }
}
