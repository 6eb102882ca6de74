//! `skill-sdk image skills`: render the container image of a package's skills executor.
//!
//! Exit codes: 0 rendered; 1 the package does not load or has problems, or a file could not be
//! written; 2 a usage error (no module, a module holding none of the package's skills, a base
//! that is no image reference).

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Subcommand};
use skill_package::{self as package, image};

#[derive(Debug, Subcommand)]
pub enum ImageCommand {
    /// Render the Dockerfile of the package's skills executor: a build stage compiling the
    /// integration crate with --locked on the workspace's pinned toolchain, and a small runtime
    /// stage running the host's `execute` as user 10001 with the modules in SKILL_SDK_MODULES.
    /// With --out, also writes <FILE>.dockerignore beside it when absent (the build context is
    /// the crate's cargo workspace, which may hold more than the package).
    #[command(after_help = "Run the image with a token of the package's executor agent \
        (skill-core token create --agent <key>) in SKILL_CORE_TOKEN and the core's address in \
        SKILL_CORE_URL. The executor agent's allow-list (skills.local) should name the same modules.")]
    Skills(SkillsArgs),
}

#[derive(Debug, Args)]
pub struct SkillsArgs {
    /// The package folder.
    #[arg(long, value_name = "DIR", default_value = ".")]
    package: PathBuf,
    /// The modules whose local skills the image runs, comma-separated: module(.sub)* or
    /// module:function, as the skills' local entrypoints are written (claims_integration.skills).
    #[arg(long, value_name = "M[,M…]", value_delimiter = ',', required = true)]
    modules: Vec<String>,
    /// The runtime stage's base image (default debian:bookworm-slim, with CA certificates added;
    /// a base given here brings its own).
    #[arg(long, value_name = "IMAGE")]
    base: Option<String>,
    /// Write the Dockerfile here (and <FILE>.dockerignore beside it) instead of printing it.
    #[arg(long, value_name = "FILE")]
    out: Option<PathBuf>,
}

/// Runs an image subcommand.
#[allow(clippy::print_stdout, clippy::print_stderr)]
pub fn run(command: ImageCommand) -> ExitCode {
    let ImageCommand::Skills(args) = command;
    let loaded = match package::load(&args.package) {
        Ok(loaded) => loaded,
        Err(error) => {
            eprintln!("error: {error}");
            return ExitCode::FAILURE;
        }
    };
    let problems = package::problems(&loaded);
    if !problems.is_empty() {
        for problem in &problems {
            eprintln!("{problem}");
        }
        eprintln!("the package has problems: fix them (skill-sdk package check), then render its image");
        return ExitCode::FAILURE;
    }
    let modules = args.modules.iter().filter(|module| !module.is_empty()).cloned().collect();
    let request = image::ImageRequest { modules, base: args.base.clone() };
    let rendered = match image::render(&args.package, &loaded, &request, args.out.as_deref()) {
        Ok(rendered) => rendered,
        Err(error) => {
            eprintln!("error: {error}");
            return ExitCode::from(2);
        }
    };
    for note in &rendered.notes {
        eprintln!("note: {note}");
    }
    let Some(out) = &args.out else {
        print!("{}", rendered.dockerfile);
        eprintln!(
            "note: without --out no ignore file is written; keep the build context ({}) to what cargo needs",
            rendered.context.display()
        );
        return ExitCode::SUCCESS;
    };
    if let Err(error) = std::fs::write(out, &rendered.dockerfile) {
        eprintln!("error: cannot write {}: {error}", out.display());
        return ExitCode::FAILURE;
    }
    eprintln!("wrote {}", out.display());
    let mut ignore = out.clone().into_os_string();
    ignore.push(".dockerignore");
    let ignore = PathBuf::from(ignore);
    match std::fs::read_to_string(&ignore) {
        Ok(existing) if existing == rendered.dockerignore => {}
        Ok(_) => eprintln!(
            "warning: {} exists and differs from what image skills writes; left as it is (remove it to get the generated one)",
            ignore.display()
        ),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
            if let Err(error) = std::fs::write(&ignore, &rendered.dockerignore) {
                eprintln!("error: cannot write {}: {error}", ignore.display());
                return ExitCode::FAILURE;
            }
            eprintln!("wrote {}", ignore.display());
        }
        Err(error) => {
            eprintln!("error: cannot read {}: {error}", ignore.display());
            return ExitCode::FAILURE;
        }
    }
    ExitCode::SUCCESS
}
