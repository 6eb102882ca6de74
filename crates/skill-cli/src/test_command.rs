//! `skill-sdk package test`: the package's stages, each reported — `contracts` (the integration
//! crate's skills against the package's files, as `export --check`), `check` (the offline
//! check), `scenarios` (the tests under `tests/`, run on scratch cores with the skills answered
//! by mocks: in a `skill-core scenarios` process, or with `--core` ones a running core makes
//! through `POST /packages:test`). Exit 0 only when every stage passed.
//!
//! The scenarios run in `skill-core` because a scratch core is the engine on SQLite: this
//! command links no database engine, so an author's first build of it stays small.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};

use clap::Args;
use serde_json::{Value, json};
use skill_api::{PackageTestOut, PackageTestRequest, TestFailure, TestOutcome};
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
    /// nothing of the tests stays in its data. The token is read from SKILL_CORE_TOKEN. Without
    /// it the scenarios run in a `skill-core scenarios` process: SKILL_CORE_BIN, else the
    /// `skill-core` beside this command, else the one on PATH.
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
        let xml = package::report::junit(&loaded.package.key, out);
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
            print!("{}", package::report::human(out));
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
        match &args.core {
            None => on_scratch_cores(&request)?,
            Some(address) => {
                let token = std::env::var("SKILL_CORE_TOKEN").ok().filter(|token| !token.is_empty()).ok_or(
                    "set SKILL_CORE_TOKEN to a token of the core with org.manage (skill-core token create --grant \
                     org.manage)",
                )?;
                let core = Client::new(address, token).map_err(|error| format!("--core: {error}"))?;
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .map_err(|error| format!("cannot start the runtime: {error}"))?;
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

/// The `skill-core` that runs the scenarios: `SKILL_CORE_BIN` when set, else the one beside this
/// command (`cargo build` puts both in one folder), else the first on `PATH`.
fn core_binary() -> Result<PathBuf, String> {
    if let Some(named) = std::env::var_os("SKILL_CORE_BIN").filter(|named| !named.is_empty()) {
        let named = PathBuf::from(named);
        return if named.is_file() {
            Ok(named)
        } else {
            Err(format!(
                "SKILL_CORE_BIN names {}, which is not a file: point it at a skill-core binary",
                named.display()
            ))
        };
    }
    let file = format!("skill-core{}", std::env::consts::EXE_SUFFIX);
    let beside = std::env::current_exe().ok().and_then(|own| own.parent().map(|folder| folder.join(&file)));
    let on_path =
        std::env::var_os("PATH").into_iter().flat_map(|path| std::env::split_paths(&path).collect::<Vec<_>>());
    beside.into_iter().chain(on_path.map(|folder| folder.join(&file))).find(|candidate| candidate.is_file()).ok_or_else(|| {
        "the scenario tests run on scratch cores in a `skill-core` process, and none was found (SKILL_CORE_BIN, beside \
         skill-sdk, or on PATH): build it with `cargo build -p skill-core` (it lands beside skill-sdk) or `cargo install \
         --path crates/skill-core`, or run the tests on a running core with --core URL"
            .to_owned()
    })
}

/// The run `skill-core scenarios` makes of `request`.
fn on_scratch_cores(request: &PackageTestRequest) -> Result<PackageTestOut, String> {
    let core = core_binary()?;
    let body = serde_json::to_vec(request).map_err(|error| format!("cannot write the request: {error}"))?;
    let mut child = Command::new(&core)
        .arg("scenarios")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|error| format!("cannot run {}: {error}", core.display()))?;
    // Written from a thread of its own: the answer is read meanwhile, so neither pipe fills.
    let mut stdin = child.stdin.take().ok_or("no stdin for skill-core")?;
    let writer = std::thread::spawn(move || stdin.write_all(&body));
    let output = child.wait_with_output().map_err(|error| format!("{} did not finish: {error}", core.display()))?;
    let written = writer.join().map_err(|_| "writing the request failed".to_owned())?;
    if !output.status.success() {
        let said = String::from_utf8_lossy(&output.stderr);
        let said = said.trim().trim_start_matches("error: ");
        return Err(if said.is_empty() {
            format!("{} scenarios failed ({})", core.display(), output.status)
        } else {
            said.to_owned()
        });
    }
    written.map_err(|error| format!("cannot hand the request to {}: {error}", core.display()))?;
    serde_json::from_slice(&output.stdout).map_err(|error| {
        format!(
            "{} answered no test outcome ({error}): is it the skill-core of this skill-sdk's release?",
            core.display()
        )
    })
}
