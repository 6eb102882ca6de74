//! `skill-sdk package test`: the package's stages, each reported — `contracts` (the integration
//! crate's skills against the package's files, as `export --check`), `check` (the offline
//! check), `scenarios` (the tests under `tests/`, run on a scratch core with the skills answered
//! by mocks: one of this process, or with `--core` one the core makes through
//! `POST /packages:test`). Exit 0 only when every stage passed.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

use clap::Args;
use serde_json::{Value, json};
use skill_api::{PackageTestOut, TestFailure, TestOutcome};
use skill_client::Client;
use skill_package::{self as package, host_crate};

#[derive(Debug, Args)]
pub struct TestArgs {
    /// The package folder (its name is the package key; required packages sit beside it).
    #[arg(long, value_name = "DIR", default_value = ".")]
    package: PathBuf,
    /// Print the stages and every test's outcome as JSON.
    #[arg(long)]
    json: bool,
    /// Also write the tests' outcomes as JUnit XML to FILE (for CI systems).
    #[arg(long, value_name = "FILE")]
    junit: Option<PathBuf>,
    /// A call no mock answers is a warning instead of a failure.
    #[arg(long)]
    allow_unmocked: bool,
    /// Run only the tests whose file (`tests/…`) or `name` holds NAME; repeat it for several.
    /// A run takes at most 100 tests: this splits a larger set over several runs.
    #[arg(long, value_name = "NAME")]
    only: Vec<String>,
    /// Skip the contracts stage (which builds the integration crate).
    #[arg(long)]
    skip_contracts: bool,
    /// Run the scenarios on this core (`POST /packages:test`, which needs org.manage): on a
    /// scratch copy it makes, with the skill versions it has published taken as it has them;
    /// nothing of the tests stays in its data. The token is read from SKILL_CORE_TOKEN.
    #[arg(long, value_name = "URL")]
    core: Option<String>,
}

/// One stage's result.
struct Stage {
    name: &'static str,
    /// `passed`, `failed` or `skipped`.
    status: &'static str,
    detail: String,
}

/// Runs the stages.
#[allow(clippy::print_stdout, clippy::print_stderr)]
pub fn run(args: &TestArgs) -> ExitCode {
    let mut stages = Vec::new();
    stages.push(if args.skip_contracts {
        Stage { name: "contracts", status: "skipped", detail: "--skip-contracts".to_owned() }
    } else {
        contracts(&args.package)
    });
    let loaded = match package::load(&args.package) {
        Ok(loaded) => loaded,
        Err(error) => {
            eprintln!("error: {error}");
            return ExitCode::FAILURE;
        }
    };
    let problems = package::problems(&loaded);
    stages.push(if problems.is_empty() {
        Stage {
            name: "check",
            status: "passed",
            detail: format!("{} objects, no problems", loaded.package.objects.len()),
        }
    } else {
        let lines: Vec<String> = problems.iter().map(ToString::to_string).collect();
        Stage { name: "check", status: "failed", detail: lines.join("\n") }
    });
    let mut out = None;
    if problems.is_empty() {
        match scenarios(&args.package, &loaded, args) {
            Ok(None) => {
                stages.push(Stage { name: "scenarios", status: "skipped", detail: "no tests/*.test.yaml".to_owned() })
            }
            Ok(Some(result)) => {
                let status = if result.failed == 0 { "passed" } else { "failed" };
                let detail = format!("{} passed, {} failed", result.passed, result.failed);
                stages.push(Stage { name: "scenarios", status, detail });
                out = Some(result);
            }
            Err(error) => stages.push(Stage { name: "scenarios", status: "failed", detail: error }),
        }
    } else {
        stages.push(Stage { name: "scenarios", status: "skipped", detail: "the check failed".to_owned() });
    }
    if let (Some(file), Some(out)) = (&args.junit, &out) {
        let xml = skill_scenarios::report::junit(&loaded.package.key, out);
        if let Err(error) = std::fs::write(file, xml) {
            eprintln!("error: cannot write {}: {error}", file.display());
            return ExitCode::FAILURE;
        }
    }
    if args.json {
        let listed: Vec<Value> =
            stages.iter().map(|s| json!({"stage": s.name, "status": s.status, "detail": s.detail})).collect();
        println!("{}", json!({"package": loaded.package.key, "stages": listed, "scenarios": out}));
    } else {
        if let Some(out) = &out {
            print!("{}", skill_scenarios::report::human(out));
        }
        for stage in &stages {
            println!("{:<10} {:<8} {}", stage.name, stage.status, stage.detail.lines().next().unwrap_or_default());
            for line in stage.detail.lines().skip(1) {
                println!("{:<19} {line}", "");
            }
        }
    }
    if stages.iter().any(|stage| stage.status == "failed") { ExitCode::FAILURE } else { ExitCode::SUCCESS }
}

/// The integration crate's contracts against the package's skill files (`export --check`).
fn contracts(folder: &Path) -> Stage {
    if !folder.join("integration").join("Cargo.toml").is_file() {
        return Stage { name: "contracts", status: "skipped", detail: "no integration crate".to_owned() };
    }
    let built = host_crate::locate_own(folder).and_then(|host| host_crate::build(&host));
    let executable = match built {
        Ok(executable) => executable,
        Err(error) => return Stage { name: "contracts", status: "failed", detail: error.to_string() },
    };
    let checked = Command::new(&executable).arg("export").arg("--package").arg(folder).arg("--check").output();
    match checked {
        Ok(output) if output.status.success() => {
            Stage { name: "contracts", status: "passed", detail: "the skill files match the code".to_owned() }
        }
        Ok(output) => {
            let said =
                format!("{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
            Stage { name: "contracts", status: "failed", detail: said.trim().to_owned() }
        }
        Err(error) => Stage {
            name: "contracts",
            status: "failed",
            detail: format!("cannot run {}: {error}", executable.display()),
        },
    }
}

/// The scenario tests on a scratch core of this process, or of the core `--core` names; `None`
/// when there are none.
fn scenarios(folder: &Path, loaded: &package::Loaded, args: &TestArgs) -> Result<Option<PackageTestOut>, String> {
    let (mut files, mut unread) = package::test_files(folder)?;
    if files.is_empty() && unread.is_empty() {
        return Ok(None);
    }
    if !args.only.is_empty() {
        let wanted = |text: &str| args.only.iter().any(|name| text.contains(name.as_str()));
        files.retain(|test| {
            wanted(&test.file) || test.document.get("name").and_then(Value::as_str).is_some_and(&wanted)
        });
        unread.retain(|broken| wanted(&broken.file));
        if files.is_empty() && unread.is_empty() {
            return Err(format!(
                "no test's file or name holds {}: see the files under {}/tests",
                args.only.join(" or "),
                folder.display()
            ));
        }
    }
    let mut out = if files.is_empty() {
        PackageTestOut { tests: Vec::new(), passed: 0, failed: 0, seconds: 0.0, warnings: Vec::new() }
    } else {
        let request = package::test_request(loaded, files, args.allow_unmocked)?;
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .map_err(|error| format!("cannot start the runtime: {error}"))?;
        match &args.core {
            None => runtime
                .block_on(skill_scenarios::run(&request, &std::env::temp_dir()))
                .map_err(|failure| format!("{}: {}", failure.code, failure.message))?,
            Some(address) => {
                let token = std::env::var("SKILL_CORE_TOKEN").ok().filter(|token| !token.is_empty()).ok_or(
                    "set SKILL_CORE_TOKEN to a token of the core with org.manage (skill-core token create --grant \
                     org.manage)",
                )?;
                let core = Client::new(address, token).map_err(|error| format!("--core: {error}"))?;
                runtime.block_on(core.test_package(&request)).map_err(|error| error.to_string())?
            }
        }
    };
    for broken in unread {
        out.tests.push(TestOutcome {
            name: broken.file.clone(),
            file: broken.file,
            passed: false,
            seconds: 0.0,
            failure: Some(TestFailure::new("invalid_test", None, broken.message)),
            warnings: Vec::new(),
        });
        out.failed += 1;
    }
    Ok(Some(out))
}
