//! `skill-sdk`: run a package's skill host commands from the package root.
//!
//! Exit codes: the host's (0 success, 1 failure, 2 usage error); 2 when the crate is not found;
//! 1 when it does not build.

#![allow(clippy::print_stderr)]

use std::ffi::OsString;
use std::path::PathBuf;
use std::process::{Command, ExitCode};

use clap::{Args, Parser, Subcommand};
use skill_package::host_crate;
use skill_sdk::host::{ContractArgs, ExecuteArgs, ExportArgs, InvokeArgs, ServeArgs};

#[derive(Parser)]
#[command(
    name = "skill-sdk",
    version,
    about = "Build a package's skill host and run its commands",
    long_about = "Build a package's skill host and run its commands.\n\n\
                  CRATE is the package's integration crate (in <package>/integration); skill-sdk builds its \
                  binary with cargo and runs the command there, e.g.\n\n  \
                  skill-sdk export --package . claims-integration\n  \
                  skill-sdk export --package . --check claims-integration\n  \
                  skill-sdk serve http --package . claims-integration --port 8080"
)]
struct Cli {
    #[command(subcommand)]
    command: Subcommands,
}

#[derive(Args)]
struct Locate {
    /// The package folder; the crate is looked for in its integration/ folder.
    #[arg(long, value_name = "DIR", default_value = ".")]
    package: PathBuf,
}

#[derive(Subcommand)]
enum Subcommands {
    /// One line per skill: name@version, entrypoint, side effects/risk.
    List {
        /// The integration crate.
        #[arg(value_name = "CRATE")]
        krate: String,
        #[command(flatten)]
        locate: Locate,
    },
    /// Print a skill's contract as JSON.
    Contract {
        /// The integration crate.
        #[arg(value_name = "CRATE")]
        krate: String,
        #[command(flatten)]
        args: ContractArgs,
        #[command(flatten)]
        locate: Locate,
    },
    /// Write skills/<name>.yaml for every skill of the crate, or check the files with --check.
    Export {
        #[command(flatten)]
        args: ExportArgs,
        /// The integration crate.
        #[arg(value_name = "CRATE")]
        krate: String,
    },
    /// Call a skill through a core and wait for its outcome.
    Call(skill_cli::call_command::CallArgs),
    /// List recent calls of a core (one's own, or all with skills.execute or org.read).
    Calls(skill_cli::call_command::CallsArgs),
    /// Send facts to a core: what happened in the world, for its work rules.
    Fact {
        #[command(subcommand)]
        command: skill_cli::fact_command::FactCommand,
    },
    /// Check a package offline, or plan and apply it against a core.
    Package {
        #[command(subcommand)]
        command: skill_cli::package_command::PackageCommand,
    },
    /// Render container images of a package: `image skills` for its skills executor.
    Image {
        #[command(subcommand)]
        command: skill_cli::image_command::ImageCommand,
    },
    /// Preview the personal-data guard: what a model would see of a text.
    Pii {
        #[command(subcommand)]
        command: PiiCommand,
    },
    /// Call a skill once and print {"outputs", "cost"}, or {"error"} with exit code 1.
    Invoke {
        /// The integration crate.
        #[arg(value_name = "CRATE")]
        krate: String,
        #[command(flatten)]
        args: InvokeArgs,
        #[command(flatten)]
        locate: Locate,
    },
    /// Serve the crate's skills over HTTP or MCP (the host binary needs skill_host::host_main!).
    #[command(after_help = "Tokens: http and mcp-http verify the bearer token of every request against \
        SKILL_SDK_IAM_ISSUER, SKILL_SDK_AUDIENCE and SKILL_SDK_JWKS_URL; without them the host refuses to \
        start unless --allow-anonymous is given. SIGTERM or SIGINT stops accepting connections and waits \
        for the calls in flight.")]
    Serve {
        #[command(flatten)]
        args: ServeArgs,
        /// The integration crate.
        #[arg(value_name = "CRATE")]
        krate: String,
        #[command(flatten)]
        locate: Locate,
    },
    /// Run the crate's skills as a local executor of a core: claim their calls, run, report.
    #[command(after_help = "The token is read from SKILL_CORE_TOKEN (a token with skills.execute). A lost \
        lease aborts the call and reports nothing. SIGTERM or SIGINT stops claiming, lets running calls \
        finish within --grace seconds, and leaves the rest to the queue.")]
    Execute {
        #[command(flatten)]
        args: ExecuteArgs,
        /// The integration crate.
        #[arg(value_name = "CRATE")]
        krate: String,
        #[command(flatten)]
        locate: Locate,
    },
}

#[derive(Subcommand)]
enum PiiCommand {
    /// Print {"text", "found"}: the text with personal data replaced, and how many of each kind.
    Redact {
        /// The text, or @FILE to read it from a file.
        #[arg(value_name = "TEXT|@FILE")]
        text: String,
    },
}

#[allow(clippy::print_stdout)]
fn pii(command: PiiCommand) -> ExitCode {
    let PiiCommand::Redact { text } = command;
    let text = match text.strip_prefix('@') {
        Some(path) => match std::fs::read_to_string(path) {
            Ok(text) => text,
            Err(error) => {
                eprintln!("error: cannot read {path}: {error}");
                return ExitCode::from(2);
            }
        },
        None => text,
    };
    let (redacted, found) = skill_sdk::pii::redact(&text);
    let preview = serde_json::json!({"text": redacted, "found": found.as_log()});
    println!("{}", serde_json::to_string_pretty(&preview).expect("invariant: JSON serializes"));
    ExitCode::SUCCESS
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let (package, krate, host_args): (PathBuf, String, Vec<OsString>) = match cli.command {
        Subcommands::Pii { command } => return pii(command),
        Subcommands::Package { command } => return skill_cli::package_command::run(command),
        Subcommands::Image { command } => return skill_cli::image_command::run(command),
        Subcommands::Call(args) => return skill_cli::call_command::call(args),
        Subcommands::Fact { command } => return skill_cli::fact_command::fact(command),
        Subcommands::Calls(args) => return skill_cli::call_command::calls(args),
        Subcommands::List { krate, locate } => (locate.package, krate, vec!["list".into()]),
        Subcommands::Contract { krate, args, locate } => (locate.package, krate, args.to_args()),
        Subcommands::Export { args, krate } => (args.package.clone(), krate, args.to_args()),
        Subcommands::Invoke { krate, args, locate } => (locate.package, krate, args.to_args()),
        Subcommands::Serve { args, krate, locate } => (locate.package, krate, args.to_args()),
        Subcommands::Execute { args, krate, locate } => (locate.package, krate, args.to_args()),
    };
    let executable = match host_crate::locate(&package, &krate).and_then(|host| host_crate::build(&host)) {
        Ok(executable) => executable,
        Err(error) => {
            eprintln!("error: {error}");
            return ExitCode::from(error.exit_code());
        }
    };
    // The host takes this process's place, so signals (SIGTERM from a supervisor) reach it.
    #[cfg(unix)]
    {
        let error = std::os::unix::process::CommandExt::exec(Command::new(&executable).args(&host_args));
        eprintln!("error: cannot run {}: {error}", executable.display());
        ExitCode::FAILURE
    }
    #[cfg(not(unix))]
    match Command::new(&executable).args(&host_args).status() {
        Ok(status) => ExitCode::from(status.code().and_then(|c| u8::try_from(c).ok()).unwrap_or(1)),
        Err(error) => {
            eprintln!("error: cannot run {}: {error}", executable.display());
            ExitCode::FAILURE
        }
    }
}
