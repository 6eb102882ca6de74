//! The host binary of a package's integration crate: `list`, `contract`, `export [--check]`,
//! `invoke`, and `serve http|mcp-http|mcp-stdio` and `execute` (a local executor of a core) when
//! the binary is built with the `skill-host` crate (`skill_host::host_main!`). Its `main` is [`crate::host_main!`] or that macro.
//!
//! Exit codes: 0 success; 1 a failure (differences found, the skill failed, the binary's skills
//! are unusable); 2 a usage error (the message says what to pass).

#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::ffi::OsString;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, CommandFactory, Parser, Subcommand, ValueEnum};
use serde_json::Value;

use crate::context::{Invocation, Transport};
use crate::export::{self, ProtocolChoice};
use crate::registry::Registry;
use crate::runtime;

#[derive(Parser)]
#[command(
    about = "The skill host of this package: list, describe, export, invoke, serve and execute its skills",
    long_about = None,
    disable_help_subcommand = true
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// One line per skill: name@version, entrypoint, side effects/risk.
    List,
    /// Print a skill's contract as JSON (the only skill when the binary has one).
    Contract(ContractArgs),
    /// Write skills/<name>.yaml for every skill into the package, or check the files with --check.
    Export(ExportArgs),
    /// Call a skill once and print {"outputs", "cost"}, or {"error"} with exit code 1.
    Invoke(InvokeArgs),
    /// Serve the skills over HTTP (POST /skills/{name}@{version}) or MCP (stdio, or HTTP at /mcp).
    Serve(ServeArgs),
    /// Run the skills as a local executor of a core: claim their calls, run them, report.
    Execute(ExecuteArgs),
}

/// The arguments of `execute`.
#[derive(Debug, Clone, Args)]
#[command(after_help = "The token is read from SKILL_CORE_TOKEN (a token with skills.execute; never from \
    the command line, where other users could see it). The executor claims the calls of this binary's \
    local skills, runs each as `invoke` would (inputs and outputs checked, the deadline enforced), and \
    reports the outcome. A skill's ctx.artifacts() and ctx.knowledge() reach this core with this token \
    (the executor's account: grant it knowledge.write@<workspace> for imports) unless CONTROL_PLANE_URL \
    names another core. A lost lease aborts the call and reports nothing. SIGTERM or SIGINT stops \
    claiming, lets running calls finish within --grace seconds, and leaves the rest to the queue.")]
pub struct ExecuteArgs {
    /// The core's address.
    #[arg(long, value_name = "URL", env = "SKILL_CORE_URL", default_value = "http://127.0.0.1:8700")]
    pub core: String,
    /// Calls run at once.
    #[arg(long, value_name = "N", default_value_t = 4, value_parser = clap::value_parser!(u32).range(1..=256))]
    pub concurrency: u32,
    /// Seconds running calls may finish after SIGTERM.
    #[arg(long, value_name = "SECONDS", default_value_t = 30, value_parser = clap::value_parser!(u64).range(0..=3600))]
    pub grace: u64,
    /// Run only the skills of these modules (comma-separated module(.sub)* or module:function,
    /// as local entrypoints are written); all of the binary's when absent.
    #[arg(long, value_name = "M[,M…]", env = "SKILL_SDK_MODULES", value_delimiter = ',')]
    pub modules: Vec<String>,
    /// Serve Prometheus metrics at http://ADDR/metrics (the calls it ran, its slots), an address
    /// of their own: keep it inside your network. Off unless given.
    #[arg(long = "metrics-listen", value_name = "ADDR", env = "SKILL_METRICS_LISTEN")]
    pub metrics_listen: Option<String>,
}

impl ExecuteArgs {
    /// The command line that gives these arguments to a host binary.
    pub fn to_args(&self) -> Vec<OsString> {
        vec![
            "execute".into(),
            "--core".into(),
            self.core.clone().into(),
            "--concurrency".into(),
            self.concurrency.to_string().into(),
            "--grace".into(),
            self.grace.to_string().into(),
        ]
        .into_iter()
        .chain(
            (!self.modules.is_empty())
                .then(|| vec!["--modules".into(), self.modules.join(",").into()])
                .into_iter()
                .flatten(),
        )
        .chain(self.metrics_listen.iter().flat_map(|address| ["--metrics-listen".into(), address.into()]))
        .collect()
    }
}

/// The commands a host binary built with `skill-host` adds.
#[derive(Debug, Clone)]
pub enum Hosted {
    Serve(ServeArgs),
    Execute(ExecuteArgs),
}

/// The transport of `serve`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ServeTransport {
    /// HTTP: POST /skills/{name}@{version}, GET /skills, GET /healthz (default port 8080).
    Http,
    /// MCP over streamable HTTP at /mcp, stateless (default port 8081).
    McpHttp,
    /// MCP over standard input and output (no token check: the parent process is the caller).
    McpStdio,
}

/// The arguments of `serve`.
#[derive(Debug, Clone, Args)]
#[command(after_help = "Tokens: http and mcp-http verify the bearer token of every request against \
    SKILL_SDK_IAM_ISSUER, SKILL_SDK_AUDIENCE and SKILL_SDK_JWKS_URL; without them the host refuses to \
    start unless --allow-anonymous is given. SIGTERM or SIGINT stops accepting connections and waits \
    for the calls in flight.")]
pub struct ServeArgs {
    /// http, mcp-http or mcp-stdio.
    #[arg(value_enum)]
    pub transport: ServeTransport,
    /// The address to listen on.
    #[arg(long, default_value = "0.0.0.0")]
    pub host: String,
    /// The port to listen on [default: 8080 for http, 8081 for mcp-http; 0 picks a free one].
    #[arg(long)]
    pub port: Option<u16>,
    /// Serve without verifying tokens when the three SKILL_SDK_* variables are not set.
    #[arg(long)]
    pub allow_anonymous: bool,
    /// mcp-http: a Host header value to accept (repeatable; "*" accepts any). Default: localhost,
    /// 127.0.0.1, ::1 and --host.
    #[arg(long = "allowed-host", value_name = "HOST")]
    pub allowed_hosts: Vec<String>,
    /// The largest request body accepted (bytes).
    #[arg(long, value_name = "BYTES", default_value_t = DEFAULT_MAX_BODY_BYTES)]
    pub max_body_bytes: usize,
    /// http, mcp-http: the most connections open at once; past it, the connection idle longest
    /// (a stalled client, an idle keep-alive) is closed to make room.
    #[arg(long, value_name = "N", default_value_t = 4096, value_parser = clap::value_parser!(u32).range(1..))]
    pub max_connections: u32,
    /// http, mcp-http: the most connections open from one IP address.
    #[arg(long, value_name = "N", default_value_t = 1024, value_parser = clap::value_parser!(u32).range(1..))]
    pub max_connections_per_client: u32,
    /// http, mcp-http: seconds a client has to send a request's header (also how long an idle
    /// keep-alive connection stays open).
    #[arg(long, value_name = "SECONDS", default_value_t = 10, value_parser = clap::value_parser!(u64).range(1..=3600))]
    pub header_timeout: u64,
    /// http, mcp-http: seconds a client has to send a request's body, once its header is in.
    #[arg(long, value_name = "SECONDS", default_value_t = 30, value_parser = clap::value_parser!(u64).range(1..=3600))]
    pub body_timeout: u64,
    /// http, mcp-http: serve https with this PEM certificate chain (the server's certificate
    /// first); needs --tls-key.
    #[arg(long, value_name = "FILE", env = "SKILL_SDK_TLS_CERT", requires = "tls_key")]
    pub tls_cert: Option<std::path::PathBuf>,
    /// http, mcp-http: the PEM private key of --tls-cert.
    #[arg(long, value_name = "FILE", env = "SKILL_SDK_TLS_KEY", requires = "tls_cert")]
    pub tls_key: Option<std::path::PathBuf>,
    /// http, mcp-http: serve Prometheus metrics at http://ADDR/metrics (requests by route, the
    /// calls it ran by skill and outcome), an address of their own: keep it inside your
    /// network. Off unless given.
    #[arg(long = "metrics-listen", value_name = "ADDR", env = "SKILL_METRICS_LISTEN")]
    pub metrics_listen: Option<String>,
}

/// The default of `--max-body-bytes`: 4 MiB.
pub const DEFAULT_MAX_BODY_BYTES: usize = 4 * 1024 * 1024;

impl ServeArgs {
    /// `--port`, or the transport's default.
    pub fn port(&self) -> u16 {
        self.port.unwrap_or(match self.transport {
            ServeTransport::McpHttp => 8081,
            _ => 8080,
        })
    }

    /// The command line that gives these arguments to a host binary.
    pub fn to_args(&self) -> Vec<OsString> {
        let transport = match self.transport {
            ServeTransport::Http => "http",
            ServeTransport::McpHttp => "mcp-http",
            ServeTransport::McpStdio => "mcp-stdio",
        };
        let mut args: Vec<OsString> = vec!["serve".into(), transport.into(), "--host".into(), self.host.clone().into()];
        if let Some(port) = self.port {
            args.extend(["--port".into(), port.to_string().into()]);
        }
        if self.allow_anonymous {
            args.push("--allow-anonymous".into());
        }
        for host in &self.allowed_hosts {
            args.extend(["--allowed-host".into(), host.into()]);
        }
        args.extend(["--max-body-bytes".into(), self.max_body_bytes.to_string().into()]);
        for (flag, value) in [
            ("--max-connections", u64::from(self.max_connections)),
            ("--max-connections-per-client", u64::from(self.max_connections_per_client)),
            ("--header-timeout", self.header_timeout),
            ("--body-timeout", self.body_timeout),
        ] {
            args.extend([flag.into(), value.to_string().into()]);
        }
        args
    }
}

/// Serves or executes a registry's skills: `skill_host::hosted`, given to [`main_with`] by
/// `skill_host::host_main!`.
pub type HostedFn = fn(&Registry, Hosted) -> ExitCode;

/// The arguments of `contract`.
#[derive(Debug, Clone, Args)]
pub struct ContractArgs {
    /// The skill, name@version.
    pub skill: Option<String>,
}

/// The arguments of `invoke`.
#[derive(Debug, Clone, Args)]
pub struct InvokeArgs {
    /// The skill, name@version.
    pub skill: String,
    /// The inputs: a JSON object, or @FILE to read it from a file.
    #[arg(long, value_name = "JSON|@FILE")]
    pub input: String,
    /// The idempotency key of the call (a retry with the same key makes no second effect).
    #[arg(long, value_name = "KEY")]
    pub idempotency_key: Option<String>,
    /// The package settings values of the call: a JSON object, or @FILE.
    #[arg(long, value_name = "JSON|@FILE")]
    pub settings: Option<String>,
}

/// `--protocol` of `export`.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum ProtocolArg {
    Local,
    Http,
    Mcp,
}

/// The arguments of `export`.
#[derive(Debug, Clone, Args)]
pub struct ExportArgs {
    /// The package folder (the one with package.yaml); files go to its skills/ folder.
    #[arg(long, value_name = "DIR")]
    pub package: PathBuf,
    /// Compare the files with the code instead of writing them; exit 1 on any difference.
    #[arg(long)]
    pub check: bool,
    /// Export this implementation instead of the one declared in code.
    #[arg(long, value_enum)]
    pub protocol: Option<ProtocolArg>,
    /// With --protocol http: the service's base URL (may hold ${VARIABLE}); with mcp: the server
    /// URL or stdio:<name>.
    #[arg(long, value_name = "URL")]
    pub endpoint: Option<String>,
    /// With --protocol http or mcp: the IAM audience of the service.
    #[arg(long, value_name = "AUDIENCE")]
    pub audience: Option<String>,
}

impl ContractArgs {
    /// The command line that gives these arguments to a host binary.
    pub fn to_args(&self) -> Vec<OsString> {
        let mut args: Vec<OsString> = vec!["contract".into()];
        args.extend(self.skill.iter().map(OsString::from));
        args
    }
}

impl InvokeArgs {
    /// The command line that gives these arguments to a host binary.
    pub fn to_args(&self) -> Vec<OsString> {
        let mut args: Vec<OsString> =
            vec!["invoke".into(), self.skill.clone().into(), "--input".into(), self.input.clone().into()];
        if let Some(key) = &self.idempotency_key {
            args.extend(["--idempotency-key".into(), key.into()]);
        }
        if let Some(settings) = &self.settings {
            args.extend(["--settings".into(), settings.into()]);
        }
        args
    }
}

impl ExportArgs {
    /// The command line that gives these arguments to a host binary.
    pub fn to_args(&self) -> Vec<OsString> {
        let mut args: Vec<OsString> = vec!["export".into(), "--package".into(), self.package.clone().into()];
        if self.check {
            args.push("--check".into());
        }
        if let Some(protocol) = self.protocol {
            let word = match protocol {
                ProtocolArg::Local => "local",
                ProtocolArg::Http => "http",
                ProtocolArg::Mcp => "mcp",
            };
            args.extend(["--protocol".into(), word.into()]);
        }
        if let Some(endpoint) = &self.endpoint {
            args.extend(["--endpoint".into(), endpoint.into()]);
        }
        if let Some(audience) = &self.audience {
            args.extend(["--audience".into(), audience.into()]);
        }
        args
    }
}

/// Prints a usage error with the command's usage line and exits with code 2.
fn usage_error(message: &str) -> ! {
    let binary = std::env::args_os()
        .next()
        .and_then(|arg0| std::path::Path::new(&arg0).file_name().map(|n| n.to_string_lossy().into_owned()))
        .unwrap_or_else(|| "skill-host".to_owned());
    // The process exits right after, so the leaked name costs nothing.
    let binary: &'static str = Box::leak(binary.into_boxed_str());
    Cli::command().name(binary).error(clap::error::ErrorKind::ValueValidation, message).exit()
}

fn choice(args: &ExportArgs) -> Option<ProtocolChoice> {
    let endpoint = || match &args.endpoint {
        Some(endpoint) => endpoint.clone(),
        None => usage_error("--protocol http and --protocol mcp need --endpoint <URL>"),
    };
    match args.protocol? {
        ProtocolArg::Local => Some(ProtocolChoice::Local),
        ProtocolArg::Http => Some(ProtocolChoice::Http { endpoint: endpoint(), audience: args.audience.clone() }),
        ProtocolArg::Mcp => Some(ProtocolChoice::Mcp { endpoint: endpoint(), audience: args.audience.clone() }),
    }
}

/// Runs the host CLI with the process arguments; `serve` explains that it needs `skill-host`.
pub fn main() -> ExitCode {
    main_with(None)
}

/// Runs the host CLI with the process arguments; `serve` and `execute` call `hosted`.
pub fn main_with(hosted: Option<HostedFn>) -> ExitCode {
    let cli = Cli::parse();
    let registry = match Registry::linked() {
        Ok(registry) if registry.is_empty() => {
            eprintln!(
                "error: no skills are registered in this binary: declare them with #[skill] and start the host \
                 with skill_sdk::host_main!(<your crate>) so the crate is linked"
            );
            return ExitCode::FAILURE;
        }
        Ok(registry) => registry,
        Err(error) => {
            eprintln!("error: {error}");
            return ExitCode::FAILURE;
        }
    };
    match cli.command {
        Command::List => {
            for skill in registry.skills() {
                println!(
                    "{}\t{}\t{}/{}",
                    skill.reference(),
                    skill.entrypoint(),
                    skill.side_effects(),
                    skill.risk_level()
                );
            }
            ExitCode::SUCCESS
        }
        Command::Contract(args) => contract(&registry, args.skill.as_deref()),
        Command::Export(args) => export_command(&registry, &args),
        Command::Invoke(InvokeArgs { skill, input, idempotency_key, settings }) => {
            let mut invocation = Invocation::new(Transport::Direct);
            if let Some(key) = idempotency_key {
                invocation = invocation.with_idempotency_key(key);
            }
            if let Some(settings) = settings {
                match read_json(&settings, "--settings") {
                    Ok(Value::Object(values)) => invocation = invocation.with_settings(values),
                    Ok(_) => usage_error("--settings must be a JSON object of settings values"),
                    Err(message) => usage_error(&message),
                }
            }
            invoke(&registry, &skill, &input, invocation)
        }
        Command::Serve(args) => hosting(hosted, &registry, Hosted::Serve(args), "serve"),
        Command::Execute(args) => hosting(hosted, &registry, Hosted::Execute(args), "execute"),
    }
}

fn hosting(hosted: Option<HostedFn>, registry: &Registry, command: Hosted, verb: &str) -> ExitCode {
    match hosted {
        Some(hosted) => hosted(registry, command),
        None => {
            eprintln!(
                "error: this host binary cannot {verb}: add the skill-host crate to the integration crate and \
                 start it with skill_host::host_main!(<your crate>) instead of skill_sdk::host_main!"
            );
            ExitCode::FAILURE
        }
    }
}

fn find(registry: &Registry, reference: &str) -> &'static crate::Skill {
    registry.find(reference).unwrap_or_else(|| {
        let known: Vec<String> = registry.skills().iter().map(|s| s.reference()).collect();
        usage_error(&format!("no skill {reference} in this binary; it has: {}", known.join(", ")))
    })
}

fn contract(registry: &Registry, reference: Option<&str>) -> ExitCode {
    let skill = match reference {
        Some(reference) => find(registry, reference),
        None => match registry.skills() {
            [only] => only,
            many => {
                let known: Vec<String> = many.iter().map(|s| s.reference()).collect();
                usage_error(&format!("this binary has {} skills: name one of: {}", many.len(), known.join(", ")));
            }
        },
    };
    match skill.contract() {
        Ok(contract) => {
            println!(
                "{}",
                serde_json::to_string_pretty(&contract.to_export_json()).expect("invariant: JSON serializes")
            );
            ExitCode::SUCCESS
        }
        Err(error) => {
            eprintln!("error: {error}");
            ExitCode::FAILURE
        }
    }
}

fn export_command(registry: &Registry, args: &ExportArgs) -> ExitCode {
    if args.protocol.is_none() && (args.endpoint.is_some() || args.audience.is_some()) {
        usage_error("--endpoint and --audience go with --protocol http or --protocol mcp");
    }
    let choice = choice(args);
    if args.check {
        match export::check(registry.skills(), &args.package, choice.as_ref()) {
            Ok(differences) if differences.is_empty() => {
                let count = registry.skills().len();
                let noun = if count == 1 { "skill matches" } else { "skills match" };
                println!("ok: {count} {noun} {}", args.package.join("skills").display());
                ExitCode::SUCCESS
            }
            Ok(differences) => {
                for difference in &differences {
                    println!("difference: {difference}");
                }
                println!("{} differences: run export and commit the files", differences.len());
                ExitCode::FAILURE
            }
            Err(error) => {
                eprintln!("error: {error}");
                ExitCode::FAILURE
            }
        }
    } else {
        match export::export(registry.skills(), &args.package, choice.as_ref()) {
            Ok(written) => {
                for file in written {
                    println!("{file}");
                }
                ExitCode::SUCCESS
            }
            Err(error) => {
                eprintln!("error: {error}");
                ExitCode::FAILURE
            }
        }
    }
}

/// A JSON argument, or `@FILE` to read it from a file.
fn read_json(argument: &str, option: &str) -> Result<Value, String> {
    let text = match argument.strip_prefix('@') {
        Some(path) => std::fs::read_to_string(path).map_err(|e| format!("cannot read {option} file {path}: {e}"))?,
        None => argument.to_owned(),
    };
    serde_json::from_str(&text).map_err(|e| format!("{option} is not valid JSON: {e}"))
}

fn invoke(registry: &Registry, reference: &str, input: &str, invocation: Invocation) -> ExitCode {
    let skill = find(registry, reference);
    let inputs = read_json(input, "--input").unwrap_or_else(|message| usage_error(&message));
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("error: cannot start the async runtime: {error}");
            return ExitCode::FAILURE;
        }
    };
    let result = runtime.block_on(runtime::execute(skill, inputs, invocation));
    // A sync skill that ran past its deadline keeps its thread; do not wait for it.
    runtime.shutdown_background();
    match result {
        Ok(outcome) => {
            println!("{}", serde_json::to_string_pretty(&outcome.to_json()).expect("invariant: JSON serializes"));
            ExitCode::SUCCESS
        }
        Err(error) => {
            println!("{}", serde_json::to_string_pretty(&error.to_envelope()).expect("invariant: JSON serializes"));
            ExitCode::FAILURE
        }
    }
}
