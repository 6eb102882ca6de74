//! The `skill-sdk package` subcommands: arguments, output (human or `--json`), exit codes.
//!
//! Exit codes: 0 done (check: no problems; plan: nothing refused); 1 problems, refusals or a
//! failed call; 2 a usage error.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Subcommand};
use serde_json::json;
use skill_client::Client;
use skill_package::{self as package, Change, Loaded};

#[derive(Debug, Subcommand)]
pub enum PackageCommand {
    /// Check the package offline: skill documents by the contract rules, unique objects, and
    /// closed references (execution, invokeSkill, interpretation.skill, call.skill).
    Check {
        #[command(flatten)]
        folder: Folder,
        /// Print the problems as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Show what apply would do to the core, per skill version: create, patch, move, unchanged,
    /// or refuse (a changed contract needs a new version). Exit 1 when anything is refused.
    Plan {
        #[command(flatten)]
        folder: Folder,
        #[command(flatten)]
        core: CoreArgs,
        #[command(flatten)]
        adopt: Adopt,
        /// Print the plan as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Check, plan, and when nothing is refused carry the plan out and record the install.
    /// Applying an unchanged package changes nothing.
    Apply {
        #[command(flatten)]
        folder: Folder,
        #[command(flatten)]
        core: CoreArgs,
        #[command(flatten)]
        adopt: Adopt,
    },
    /// Test the package: its skill files against the integration code (contracts), the offline
    /// check, then its scenario tests (tests/*.test.yaml) on a scratch core with the skills'
    /// calls answered by mocks. Exit 0 only when every stage passed.
    Test(crate::test_command::TestArgs),
}

#[derive(Debug, Args)]
pub struct Folder {
    /// The package folder (its name is the package key; required packages sit beside it).
    #[arg(long, value_name = "DIR", default_value = ".")]
    package: PathBuf,
}

#[derive(Debug, Args)]
pub struct Adopt {
    /// Move the skill NAME to this package although another package installed it (repeat for
    /// several). Without it such a skill is refused, so one package never silently takes over
    /// another's skills.
    #[arg(long = "adopt", value_name = "NAME")]
    names: Vec<String>,
}

#[derive(Debug, Args)]
pub struct CoreArgs {
    /// The core's address. The token is read from SKILL_CORE_TOKEN (never from the command
    /// line, where other users could see it).
    #[arg(long, value_name = "URL", env = "SKILL_CORE_URL", default_value = "http://127.0.0.1:8700")]
    core: String,
}

/// Runs a package subcommand.
#[allow(clippy::print_stdout, clippy::print_stderr)]
pub fn run(command: PackageCommand) -> ExitCode {
    let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("error: cannot start the runtime: {error}");
            return ExitCode::FAILURE;
        }
    };
    let folder = match &command {
        PackageCommand::Test(args) => return crate::test_command::run(args),
        PackageCommand::Check { folder, .. }
        | PackageCommand::Plan { folder, .. }
        | PackageCommand::Apply { folder, .. } => folder.package.clone(),
    };
    let loaded = match package::load(&folder) {
        Ok(loaded) => loaded,
        Err(error) => {
            eprintln!("error: {error}");
            return ExitCode::FAILURE;
        }
    };
    let problems = package::problems(&loaded);
    let json_output =
        matches!(command, PackageCommand::Check { json: true, .. } | PackageCommand::Plan { json: true, .. });
    if !problems.is_empty() {
        if json_output {
            let list: Vec<_> = problems
                .iter()
                .map(|p| json!({"file": p.file, "path": p.path, "code": p.code, "message": p.message, "hint": p.hint}))
                .collect();
            println!("{}", json!({"package": loaded.package.key, "problems": list}));
        } else {
            for problem in &problems {
                eprintln!("{problem}");
            }
            let noun = if problems.len() == 1 { "problem" } else { "problems" };
            eprintln!("{} {noun} in package {}", problems.len(), loaded.package.key);
        }
        return ExitCode::FAILURE;
    }
    let summary = format!("package {} {}", loaded.package.key, loaded.package.version);
    let core = match &command {
        PackageCommand::Check { json, .. } => {
            if *json {
                println!("{}", json!({"package": loaded.package.key, "problems": []}));
            } else {
                let count = loaded.package.objects.len();
                println!("{summary}: {count} object{}, no problems", if count == 1 { "" } else { "s" });
            }
            return ExitCode::SUCCESS;
        }
        PackageCommand::Plan { core, adopt, .. } | PackageCommand::Apply { core, adopt, .. } => {
            (core.core.clone(), adopt.names.clone())
        }
        PackageCommand::Test(args) => return crate::test_command::run(args),
    };
    let (core, adopt) = core;
    let Some(token) = std::env::var("SKILL_CORE_TOKEN").ok().filter(|token| !token.is_empty()) else {
        eprintln!("error: set SKILL_CORE_TOKEN to a token of the core (skill-core token create --grant org.manage)");
        return ExitCode::from(2);
    };
    let core = match Client::new(&core, token) {
        Ok(core) => core,
        Err(error) => {
            eprintln!("error: --core: {error}");
            return ExitCode::from(2);
        }
    };
    let result = runtime.block_on(async {
        let changes = package::plan(&loaded, &core, &adopt).await?;
        match command {
            PackageCommand::Plan { json: true, .. } => {
                let list: Vec<_> = changes.iter().map(Change::to_json).collect();
                println!(
                    "{}",
                    json!({"package": {"key": loaded.package.key, "version": loaded.package.version},
                           "installHash": loaded.install_hash, "changes": list})
                );
                Ok(refused(&changes))
            }
            PackageCommand::Plan { .. } => {
                println!("{summary}, plan against {}:", core.address());
                for change in &changes {
                    println!("{}", change.describe());
                }
                println!("{}", totals(&changes));
                Ok(refused(&changes))
            }
            _ => apply(&loaded, &core, &changes, &summary).await,
        }
    });
    match result {
        Ok(true) => ExitCode::FAILURE,
        Ok(false) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error: {error}");
            ExitCode::FAILURE
        }
    }
}

fn refused(changes: &[Change]) -> bool {
    changes.iter().any(Change::is_refused)
}

fn totals(changes: &[Change]) -> String {
    let count = |operation: &str| changes.iter().filter(|change| change.operation() == operation).count();
    format!(
        "{} to create, {} to patch, {} to move, {} unchanged, {} refused",
        count("create"),
        count("patch"),
        count("move"),
        count("unchanged"),
        count("refuse")
    )
}

/// Carries out the plan; `Ok(true)` when it was refused (nothing written).
#[allow(clippy::print_stdout, clippy::print_stderr)]
async fn apply(loaded: &Loaded, core: &Client, changes: &[Change], summary: &str) -> Result<bool, String> {
    if refused(changes) {
        for change in changes.iter().filter(|change| change.is_refused()) {
            eprintln!("{}", change.describe());
        }
        eprintln!("nothing was applied: each refusal above says what to change");
        return Ok(true);
    }
    let writes = changes.iter().filter(|change| change.operation() != "unchanged").count();
    let progress = progress_bar(writes);
    let outcome = package::apply(loaded, core, changes, |change| {
        progress.set_message(format!("{}@{}", change.key, change.version));
        progress.inc(1);
        progress.suspend(|| println!("{}", change.describe()));
    })
    .await;
    progress.finish_and_clear();
    match outcome? {
        package::Applied::Already => println!("{summary}: already applied, nothing changed"),
        package::Applied::Done => {
            let count = |operation: &str| changes.iter().filter(|change| change.operation() == operation).count();
            println!(
                "{summary}: applied — {} created, {} patched, {} moved, {} unchanged",
                count("create"),
                count("patch"),
                count("move"),
                count("unchanged")
            );
        }
    }
    Ok(false)
}

fn progress_bar(length: usize) -> indicatif::ProgressBar {
    let visible = std::io::stderr().is_terminal() && std::env::var_os("CI").is_none();
    if !visible {
        return indicatif::ProgressBar::hidden();
    }
    let bar = indicatif::ProgressBar::new(length as u64);
    if let Ok(style) = indicatif::ProgressStyle::with_template("{bar:30} {pos}/{len} {msg}") {
        bar.set_style(style);
    }
    bar
}
