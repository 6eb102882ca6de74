//! Project automation: `cargo xtask ci` runs on a fresh machine exactly what CI runs.

#![allow(clippy::print_stdout, clippy::print_stderr)]

mod bench_core;
mod bench_drivers;
mod bench_export;
mod bench_gateway;
mod bench_host;
mod bench_journal;
mod bench_scenarios;
mod bench_telemetry;
mod browser;
mod core_run;
mod cpu;
mod edges;
mod fault;
mod fuzz;
mod journal_fault;
mod long_functions;
mod migrations;
mod module_loops;
mod postgres;
mod processes_fault;
mod processes_run;
mod prometheus;
mod rules_run;
mod s3;
mod soak;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use anyhow::{Context, Result, bail};

const USAGE: &str = "\
usage: cargo xtask <command>

commands:
  ci       set up what the tests need, then check formatting, lints, crate boundaries and run every test
  tidy     only the structure checks: crate boundaries (external crates, and the workspace crates
           each crate may use), no import loop between the modules of a crate, and the two
           backends' migrations in parity (the same stems in the same order)
  setup    only set up what the tests need: a Python virtualenv and the Node.js packages of the
           test peers (the MCP SDKs), under target/
  test     set up, start a throwaway PostgreSQL, an S3-compatible server and ChromeDriver (Debian's
           Chromium), install Prometheus (Debian's; the metrics tests start it), and run `cargo
           test` with the arguments that follow (`cargo xtask test -p skill-store`); what CI's
           test step does
  screenshots
           run the console's browser test and keep its screenshots of the main pages in
           docs/console/ (commit them)
  bench    run a benchmark: `bench export` (P6, export and --check of 1,000 skills),
           `bench http` (P2, the HTTP host against bare axum), `bench mcp` (P3, the MCP host
           against bare rmcp and FastMCP), `bench core [sqlite|postgres] [--soak] [--replicas N]`
           (P4/P5, invoke → claim → complete through the core and a real executor; on PostgreSQL
           beside pgbench, PgQueuer and graphile-worker; N cores on one database, each with its
           executor and its share of the load; --soak: then 200 calls/s for two minutes while
           another connection holds a transaction open), `bench mcp-core` (the core's MCP gateway
           against the API, and an agent's request), `bench rules` (facts to their tasks through a
           work rule), `bench processes` (instances of a three-step process), `bench scenarios`
           (P12, `skill-sdk package test` with 100 scenario tests), `bench journal` (`journal
           verify` of 1,000,000 entries), `bench journal-cost [sqlite|postgres] [--baseline
           REV]` (P4's path with the journal against the commit before it, same run), `bench
           drivers` (SQLite's hot-path transaction through sqlx and rusqlite), results in
           target/bench/; `bench console` (the console's pages with 10,000 calls in the store, beside the API's
           listing) prints its table and a JSON line
  fault    the fault run: 2,000 calls while the executor is killed and restarted every 2.5 s and
           the core once; checks none is lost, no effect doubled, no fencing token reused:
           `fault [sqlite|postgres] [--replicas N]` (N cores on one PostgreSQL database, the
           invokes through the first, an executor per replica, two replicas killed in turn);
           `fault rules`: 1,000 facts while the executor and the core are
           killed, each evaluated once; `fault processes`: 500 instances of a four-step process
           with a person's review and an external write while the executor and the core are
           killed, each completed, each step run once, each write made once; `fault journal
           [sqlite|postgres] [--kills N]`: the core killed 1,000 times under load, then as many
           leaves as events, gap-free, every hash stored, the export verifying; figures in
           target/fault/
  fuzz     run the coverage-guided fuzz targets (crates/skill-fuzz) under libFuzzer:
           `fuzz [SECONDS] [TARGET...]` (120 s each by default), then keep a lean corpus in
           fuzz/corpus/ (the fewest inputs that reach every edge); `fuzz min [TARGET...]` only
           makes the corpus lean
  help     this text";

fn main() {
    if let Err(error) = dispatch() {
        eprintln!("error: {error:#}");
        std::process::exit(1);
    }
}

#[allow(clippy::too_many_lines, reason = "a data table: one arm per command")]
fn dispatch() -> Result<()> {
    let command = std::env::args().nth(1);
    match command.as_deref() {
        Some("ci") => ci(),
        Some("tidy") => edges::check()
            .and_then(|()| module_loops::check())
            .and_then(|()| migrations::check())
            .and_then(|()| long_functions::check()),
        Some("long-functions") => long_functions::print(),
        Some("setup") => setup().map(|_| ()),
        Some("test") => {
            let peers = setup()?;
            let arguments: Vec<String> = std::env::args().skip(2).collect();
            test(&peers, &arguments)
        }
        Some("screenshots") => {
            let peers = setup()?;
            let folder = workspace_root().join("docs/console");
            std::fs::create_dir_all(&folder).context("creating docs/console")?;
            let folder = folder.to_str().context("a UTF-8 path")?.to_owned();
            let arguments = ["-p", "skill-core", "--test", "it", "--", "console_browser"].map(str::to_owned);
            test_with(&peers, &arguments, &[("SKILL_CONSOLE_SCREENSHOTS", &folder)])
        }
        Some("bench") => match std::env::args().nth(2).as_deref() {
            Some("export") => bench_export::bench(),
            Some("journal") => bench_journal::bench(),
            Some("journal-cost") => {
                let backend =
                    std::env::args().nth(3).filter(|arg| !arg.starts_with("--")).unwrap_or_else(|| "sqlite".into());
                bench_journal::cost(&backend, std::env::args().skip_while(|arg| arg != "--baseline").nth(1).as_deref())
            }
            Some("http") => bench_host::bench_http(),
            Some("mcp") => bench_host::bench_mcp(),
            Some("core") => {
                let backend = std::env::args().nth(3).unwrap_or_else(|| "sqlite".to_owned());
                let soak = std::env::args().skip(4).any(|arg| arg == "--soak");
                if soak && backend != "postgres" {
                    bail!("--soak holds a PostgreSQL reader open: bench core postgres --soak");
                }
                let at = if std::env::args().nth(4).as_deref() == Some("--soak") { 5 } else { 4 };
                replicas(at, &backend).and_then(|replicas| bench_core::bench_core(&backend, replicas, soak))
            }
            Some("mcp-core") => bench_gateway::bench_gateway(),
            Some("rules") => rules_run::bench_rules(),
            Some("processes") => processes_run::bench_processes(),
            Some("scenarios") => bench_scenarios::bench(),
            Some("drivers") => bench_drivers::bench(),
            Some("console") => run(
                "the console's pages with 10,000 calls (release)",
                cargo().args([
                    "run",
                    "--release",
                    "--quiet",
                    "-p",
                    "skill-core",
                    "--example",
                    "console_pages",
                    "--",
                    "10000",
                ]),
            ),
            _ => {
                eprintln!(
                    "usage: cargo xtask bench export|http|mcp|core|mcp-core|rules|processes|scenarios|drivers|console [sqlite|postgres]"
                );
                std::process::exit(2)
            }
        },
        Some("fault") => match std::env::args().nth(2).as_deref() {
            Some("rules") => rules_run::fault_rules(),
            Some("processes") => processes_fault::fault_processes(),
            Some("journal") => {
                let backend =
                    std::env::args().nth(3).filter(|arg| !arg.starts_with("--")).unwrap_or_else(|| "sqlite".into());
                let kills = std::env::args()
                    .skip_while(|arg| arg != "--kills")
                    .nth(1)
                    .map_or(Ok(1000), |n| n.parse::<usize>())
                    .context("--kills: a number");
                kills.and_then(|kills| journal_fault::journal_fault(&backend, kills))
            }
            other => {
                let backend = other.unwrap_or("sqlite");
                replicas(3, backend).and_then(|replicas| fault::fault(backend, replicas))
            }
        },
        Some("fuzz") => fuzz::fuzz(&std::env::args().skip(2).collect::<Vec<_>>()),
        Some("help" | "--help" | "-h") => {
            println!("{USAGE}");
            Ok(())
        }
        Some(other) => {
            eprintln!("unknown command `{other}`\n\n{USAGE}");
            std::process::exit(2)
        }
        None => {
            eprintln!("{USAGE}");
            std::process::exit(2)
        }
    }
}

pub(crate) fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("xtask lives in the workspace").to_path_buf()
}

pub(crate) fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR").map(PathBuf::from).unwrap_or_else(|| workspace_root().join("target"))
}

pub(crate) fn run(step: &str, command: &mut Command) -> Result<()> {
    let started = Instant::now();
    println!("==> {step}");
    let status = command.current_dir(workspace_root()).status().with_context(|| format!("cannot start {command:?}"))?;
    if !status.success() {
        bail!("{step} failed ({status})");
    }
    println!("    {step}: ok in {:.1}s", started.elapsed().as_secs_f64());
    Ok(())
}

/// Installs Debian's `packages` (`what` names them in the step's line).
pub(crate) fn apt_install(what: &str, packages: &[&str]) -> Result<()> {
    run("apt-get update", Command::new("apt-get").args(["update", "-qq"]))?;
    run(
        &format!("install {what} from Debian's packages"),
        Command::new("apt-get")
            .args(["install", "-y", "-qq", "--no-install-recommends"])
            .args(packages)
            .env("DEBIAN_FRONTEND", "noninteractive"),
    )
}

pub(crate) fn cargo() -> Command {
    Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()))
}

/// Where the test peers are installed.
struct Peers {
    /// The virtualenv's Python (PyYAML, `mcp`, FastMCP).
    python: PathBuf,
    /// The folder whose `node_modules` holds the JavaScript peers (the TypeScript MCP SDK).
    node: PathBuf,
}

/// Installs (or refreshes) the test peers.
fn setup() -> Result<Peers> {
    Ok(Peers { python: python_peers()?, node: node_peers()? })
}

/// Creates (or refreshes) the test virtualenv and returns its Python.
fn python_peers() -> Result<PathBuf> {
    virtualenv("test-python", "xtask/python-requirements.txt")
}

/// Creates (or refreshes, when `requirements` changed) the virtualenv `target/<name>` with the
/// packages `requirements` (a path in the workspace) lists, and returns its Python.
pub(crate) fn virtualenv(name: &str, requirements: &str) -> Result<PathBuf> {
    let venv = target_dir().join(name);
    let python = venv.join("bin/python");
    let listed = requirements;
    let requirements = workspace_root().join(listed);
    let stamp = venv.join("requirements.installed");
    let wanted = std::fs::read_to_string(&requirements).with_context(|| format!("reading {listed}"))?;
    if std::fs::read_to_string(&stamp).ok().as_deref() == Some(wanted.as_str()) && python.exists() {
        println!("==> Python peers of {listed}: up to date in {}", venv.display());
        return Ok(python);
    }
    if !python.exists() {
        run("create a virtualenv", Command::new("python3").args(["-m", "venv"]).arg(&venv))?;
    }
    run(
        &format!("install the Python peers of {listed}"),
        Command::new(&python)
            .args(["-m", "pip", "install", "--quiet", "--disable-pip-version-check", "-r"])
            .arg(&requirements),
    )?;
    std::fs::write(&stamp, wanted).context("writing the install stamp")?;
    Ok(python)
}

/// The `--replicas N` that may follow `backend` at argument `at` (1 without it): more than one
/// only on PostgreSQL, whose database the cores share.
fn replicas(at: usize, backend: &str) -> Result<usize> {
    let count = match std::env::args().nth(at).as_deref() {
        None | Some("--soak") => 1,
        Some("--replicas") => std::env::args()
            .nth(at + 1)
            .and_then(|count| count.parse().ok())
            .context("--replicas takes a count: --replicas 2")?,
        Some(other) => bail!("after the backend comes --replicas N, not {other}"),
    };
    if count == 0 || (count > 1 && backend != "postgres") {
        bail!("--replicas is 1, or more on postgres (cores share a PostgreSQL database)");
    }
    Ok(count)
}

/// Installs the JavaScript peers of `xtask/node/package-lock.json` with `npm ci` into
/// `target/test-node` (again only when the lock changed) and returns that folder.
fn node_peers() -> Result<PathBuf> {
    node_packages("test-node", "xtask/node", "the Node.js test peers")
}

/// Installs the packages of `source/package-lock.json` (a folder of the repository) with
/// `npm ci` into `target/<name>`, again only when the lock changed, and returns that folder.
pub(crate) fn node_packages(name: &str, source: &str, what: &str) -> Result<PathBuf> {
    let folder = target_dir().join(name);
    let lock = std::fs::read_to_string(workspace_root().join(source).join("package-lock.json"))
        .with_context(|| format!("reading {source}/package-lock.json"))?;
    let stamp = folder.join("lock.installed");
    if std::fs::read_to_string(&stamp).ok().as_deref() == Some(lock.as_str()) && folder.join("node_modules").is_dir() {
        println!("==> {what}: up to date in {}", folder.display());
        return Ok(folder);
    }
    std::fs::create_dir_all(&folder).with_context(|| format!("creating target/{name}"))?;
    for file in ["package.json", "package-lock.json"] {
        std::fs::copy(workspace_root().join(source).join(file), folder.join(file))
            .with_context(|| format!("copying {file}"))?;
    }
    run(
        &format!("install {what} (npm ci)"),
        Command::new("npm").args(["ci", "--no-audit", "--no-fund", "--loglevel=error", "--prefix"]).arg(&folder),
    )?;
    std::fs::write(&stamp, lock).context("writing the install stamp")?;
    Ok(folder)
}

/// Runs `cargo test ARGUMENTS` with the test peers: the Python virtualenv (`SKILL_TEST_PYTHON`),
/// the Node.js packages (`SKILL_TEST_NODE`), a PostgreSQL server (`SKILL_TEST_POSTGRES_URL`) and
/// an S3-compatible server (`SKILL_TEST_S3_URL`), stopped afterwards.
fn test(peers: &Peers, arguments: &[String]) -> Result<()> {
    test_with(peers, arguments, &[])
}

/// [`test`] with more variables for the tests.
fn test_with(peers: &Peers, arguments: &[String], more: &[(&str, &str)]) -> Result<()> {
    let postgres = postgres::Postgres::start()?;
    let s3 = s3::S3::start(&peers.python)?;
    let browser = browser::Browser::start()?;
    let prometheus = prometheus::binary()?;
    let mut command = cargo();
    command
        .arg("test")
        .args(arguments)
        .env("SKILL_TEST_PYTHON", &peers.python)
        .env("SKILL_TEST_NODE", &peers.node)
        .env("SKILL_TEST_POSTGRES_URL", &postgres.url)
        .env("SKILL_TEST_S3_URL", &s3.url)
        .env("SKILL_TEST_WEBDRIVER_URL", &browser.webdriver)
        .env("SKILL_TEST_CHROMIUM", browser::CHROMIUM)
        .env("SKILL_TEST_PROMETHEUS", &prometheus);
    for (name, value) in more {
        command.env(name, value);
    }
    run("tests", &mut command)
}

fn ci() -> Result<()> {
    let started = Instant::now();
    let peers = setup()?;
    run("format", cargo().args(["fmt", "--all", "--", "--check"]))?;
    run("lints", cargo().args(["clippy", "--workspace", "--all-targets", "--quiet", "--", "-D", "warnings"]))?;
    edges::check()?;
    module_loops::check()?;
    migrations::check()?;
    long_functions::check()?;
    test(&peers, &["--workspace".to_owned(), "--quiet".to_owned()])?;
    println!("==> all checks passed in {:.0}s", started.elapsed().as_secs_f64());
    Ok(())
}
