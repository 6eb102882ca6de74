//! `skill-core dev`: everything on one machine — the core on an embedded SQLite directory, a
//! token for the developer, the package checked, planned and applied through the API, and the
//! package's skill host built and running as the local executor, so calls go through the core;
//! when the package has `http` or `mcp` skills, the host serves them over https on loopback (or
//! over stdio) and a remote executor calls them (`remote.rs`) — until Ctrl-C. A crate of its own: the server
//! (`skill-server`) knows nothing of it, and `skill-core` offers it as a subcommand.

mod banner;
mod remote;
mod setup;
mod stand_in;

use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use serde_json::{Value, json};
use skill_client::Client;
use skill_engine::{Engine, Origin, TokenRequest};
use skill_package::{self as package, Applied, host_crate};

/// What `dev` runs on.
#[derive(Debug, clap::Args)]
pub struct DevArgs {
    /// The package folder.
    #[arg(long, value_name = "DIR")]
    package: PathBuf,
    /// Where the embedded database, the artifacts and the folders the package's host uses live
    /// (default: <package>/.skill-core, kept from run to run).
    #[arg(long, value_name = "DIR", conflicts_with = "temp")]
    data: Option<PathBuf>,
    /// Start on a throwaway data folder, removed when dev stops.
    #[arg(long)]
    temp: bool,
    /// The core's address.
    #[arg(long, default_value = "127.0.0.1:8700")]
    listen: String,
    /// The integration crate, when the package's integration/ folder is not a crate of its own.
    #[arg(long = "crate", value_name = "CRATE")]
    krate: Option<String>,
    #[command(flatten)]
    metrics: skill_server::MetricsArg,
    /// Log every request and the workers' steps (debug). Without it dev logs a line per call
    /// that ends, per decision and per failure; SKILL_LOG (e.g. `debug`, `info,sqlx=warn`) sets
    /// the filter outright.
    #[arg(long, short)]
    pub verbose: bool,
}

/// The log filter of a quiet dev: no request lines (`--verbose` shows them).
pub const QUIET: &str = "info,skill_http::requests=warn,rmcp=error";
/// The log filter of `--verbose`: the core's own crates at `debug`.
pub const VERBOSE: &str = "info,skill_http=debug,skill_engine=debug,skill_core=debug,skill_server=debug,skill_dev=debug,skill_executor=debug,\
skill_host=debug,skill_remote=debug,skill_sdk=debug,skill_gateway=debug,rmcp=error";

#[allow(clippy::print_stdout, clippy::print_stderr)]
pub async fn run(args: DevArgs) -> Result<()> {
    let folder =
        args.package.canonicalize().with_context(|| format!("no package folder {}", args.package.display()))?;
    let loaded = package::load(&folder).map_err(|error| anyhow::anyhow!(error))?;
    let problems = package::problems(&loaded);
    if !problems.is_empty() {
        for problem in &problems {
            eprintln!("{problem}");
        }
        bail!("the package has {}: fix them, then run dev again", plural_count(problems.len(), "problem"));
    }
    let data = setup::Data::new(&folder, args.data.as_deref(), args.temp)?;
    let store = skill_store::open(&data.path.display().to_string(), &Default::default())
        .await
        .context("opening the database")?;
    let engine = Engine::new(store)
        .with_traces(skill_traces::spans::of_call)
        .with_blobs(std::sync::Arc::new(skill_store::FolderBlobs::new(data.path.join("blobs"))));
    // The developer holds what the package's contracts require, so trying things meets the
    // real rules (an external write still needs a basis); the host executes with its own token.
    // Work happens in the workspace `dev`; a second person, the reviewer, decides approvals (the
    // requester of an approval never decides it), and the outcome runs with the reviewer's rights.
    if engine.store().workspace_by_key(DEV_WORKSPACE).await.is_err() {
        engine
            .create_workspace(DEV_WORKSPACE, "dev", &Origin::default())
            .await
            .map_err(|error| anyhow::anyhow!("{error}"))?;
    }
    // The workspaces the package's agents name (their requests, their grants) exist, and the
    // developer and the reviewer work in them as in `dev`.
    let agent_workspaces = agent_workspaces(&loaded);
    for workspace in &agent_workspaces {
        if engine.store().workspace_by_key(workspace).await.is_err() {
            engine
                .create_workspace(workspace, workspace, &Origin::default())
                .await
                .map_err(|error| anyhow::anyhow!("{error}"))?;
        }
    }
    let contract_permissions = required_permissions(&loaded);
    let with = |base: &[&str]| {
        let mut grants: Vec<String> = base.iter().map(|grant| (*grant).to_owned()).collect();
        for permission in &contract_permissions {
            if !grants.contains(permission) {
                grants.push(permission.clone());
            }
        }
        grants
    };
    // The developer installs the package, so holds what its agents are granted (an install
    // grants at most what its installer has).
    let mut grants = with(&["org.manage", "skills.invoke", "tasks.write@dev", "knowledge.write@dev"]);
    let mut reviewer_grants = with(&["skills.invoke", "tasks.write@dev", "approvals.decide@dev"]);
    for permission in agent_permissions(&loaded) {
        if !grants.contains(&permission) {
            grants.push(permission);
        }
    }
    let add = |list: &mut Vec<String>, grant: String| {
        if !list.contains(&grant) {
            list.push(grant);
        }
    };
    for workspace in &agent_workspaces {
        add(&mut grants, format!("tasks.write@{workspace}"));
        // The developer sends facts there, as the world would (docs/rules.md).
        add(&mut grants, format!("facts.write@{workspace}"));
        add(&mut reviewer_grants, format!("tasks.write@{workspace}"));
        add(&mut reviewer_grants, format!("approvals.decide@{workspace}"));
    }
    let token = issue(&engine, "dev", "person", &grants).await?;
    let reviewer = issue(&engine, "dev-reviewer", "person", &reviewer_grants).await?;
    // The core carries out execution-pinned tasks as its own principal: here it may do what the
    // package's contracts require, except what only a person holds.
    let needed: Vec<&str> = contract_permissions
        .iter()
        .map(String::as_str)
        .filter(|permission| !skill_api::agent::people_only(permission))
        .collect();
    engine.grant_execution(&needed).await.map_err(|error| anyhow::anyhow!("{error}"))?;
    // The executor's own account is what its skills reach artifacts and knowledge with.
    let executor_grants = ["skills.execute".to_owned(), format!("knowledge.write@{DEV_WORKSPACE}")];
    let executor_token = issue(&engine, "dev-executor", "executor", &executor_grants).await?;

    let listener = tokio::net::TcpListener::bind(&args.listen)
        .await
        .with_context(|| format!("cannot listen on {}: another dev running? --listen another address", args.listen))?;
    let core_url = format!("http://{}", listener.local_addr()?);
    // The journal's checkpoints, signed with a key dev keeps beside the database (a real core
    // keeps it apart: docs/journal.md) and written to a file beside it as they are signed.
    let journal_key = setup::journal_key(&data.path)?;
    let engine = engine.with_issuer(&core_url).with_journal_key(journal_key);
    args.metrics.start("core", Some(&engine)).await?;
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let options = skill_server::console::Options {
        checkpoints: skill_server::checkpoints::Sends { file: Some(data.path.join(setup::CHECKPOINT_FILE)), url: None },
        ..skill_server::console::Options::default()
    };
    let server = tokio::spawn(skill_server::serve_with(
        engine.clone(),
        listener,
        skill_http::Limits::default(),
        options,
        async {
            drop(stopped.await);
        },
    ));

    let host = match &args.krate {
        Some(name) => host_crate::locate(&folder, name),
        None => host_crate::locate_own(&folder),
    }
    .map_err(|error| anyhow::anyhow!("{error}"))?;
    eprintln!("building {} … (the first build takes a few minutes)", host.name);
    let build = host.clone();
    let executable = tokio::task::spawn_blocking(move || host_crate::build(&build))
        .await?
        .map_err(|error| anyhow::anyhow!("{error}"))?;

    // Remote skills: the host over https on loopback (http, mcp-http), the package's URL
    // variables at it — on the ports of the last run when they are free.
    let needs = remote::needs(&loaded);
    let tls = if needs.any() { Some(remote::certificates(&data.path.join("dev-tls"))?) } else { None };
    let mut ports = setup::Ports::read(&data.path);
    let mut variables = std::collections::BTreeMap::new();
    let mut pending_hosts = Vec::new();
    let mut lines: Vec<(String, String)> = Vec::new();
    if tls.is_some() {
        // Each transport: the host's word for it, what it serves, and how the banner names it.
        let transports =
            [("http", &needs.http, "https", "http", "skill"), ("mcp-http", &needs.mcp_http, "mcp", "mcp", "tool")];
        for (transport, served, label, protocol, noun) in transports {
            if served.count == 0 {
                continue;
            }
            let port = free_port(ports.wanted(transport))?;
            ports.keep(transport, port);
            remote::point(served, &format!("https://localhost:{port}"), &mut variables);
            pending_hosts.push((transport, served, port, label, protocol, noun));
        }
    }
    // The host's environment: the package's folders and variables, and a model.
    let host_env = setup::host_env(&loaded, &data.path, &variables).await?;
    let mut hosts = Vec::new();
    if let Some(tls) = &tls {
        for (transport, served, port, label, protocol, noun) in pending_hosts {
            let (child, port) =
                remote::serve_host(&executable, transport, tls, &core_url, served, port, &host_env.vars, args.verbose)
                    .await?;
            let what = format!("the {} {protocol} {}", served.count, plural(served.count, noun));
            lines.push((
                label.to_owned(),
                format!(
                    "{} serves {what} on https://localhost:{port} (a CA made for dev; tokens from this core)",
                    host.name
                ),
            ));
            hosts.push(child);
        }
        for name in &needs.stdio {
            lines.push(("stdio".to_owned(), format!("{} serve mcp-stdio answers stdio:{name}", host.name)));
        }
    }
    let lookup = |name: &str| remote::lookup(&variables, name);

    let client = Client::new(&core_url, token.clone())?;
    let changes = package::plan_with(&loaded, &client, &[], &lookup).await.map_err(|error| anyhow::anyhow!(error))?;
    if let Some(refused) = changes.iter().find(|change| change.is_refused()) {
        bail!(
            "{}\n(the database in {} holds an older contract of this version: raise spec.version, or start on a fresh folder with `--temp`, or remove that folder)",
            refused.describe(),
            data.path.display()
        );
    }
    let applied = package::apply(&loaded, &client, &changes, |change| eprintln!("{}", change.describe()))
        .await
        .map_err(|error| anyhow::anyhow!(error))?;

    let runs = match &tls {
        Some(_) => Some(remote::Runs {
            http_origins: remote::origins(&loaded, skill_api::Protocol::Http, &lookup)?,
            mcp_origins: remote::origins(&loaded, skill_api::Protocol::Mcp, &lookup)?,
            stdio: needs.stdio.clone(),
        }),
        None => None,
    };
    // The operator allows the executor what it runs: here, exactly this package's skills.
    let allowance = executor_allowance(&loaded, &needs, runs.as_ref());
    engine
        .allow_executor(None, "dev-executor", &allowance, None)
        .await
        .map_err(|error| anyhow::anyhow!("allowing the executor its skills: {error}"))?;

    let mut execute = tokio::process::Command::new(&executable);
    execute
        .args(["execute", "--core", &core_url, "--concurrency", "4", "--grace", "5"])
        .env("SKILL_CORE_TOKEN", &executor_token)
        // The core's metrics address is the core's: the host gets its own, below, or none.
        .env_remove("SKILL_METRICS_LISTEN")
        .envs(&host_env.vars)
        .stdin(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    if let Some(filter) = child_log(args.verbose) {
        execute.env("SKILL_LOG", filter);
    }
    // With the core's metrics on, the executor's are too, on a port of their own beside them.
    if let Some(beside) = args.metrics.beside() {
        execute.args(["--metrics-listen", &beside]);
    }
    let (mut child, said) =
        remote::start(execute, "executing the local skills of this host", "the package's host did not start executing")
            .await?;
    if let Some(metrics) = said.iter().find_map(|line| line.strip_prefix("metrics at ")) {
        lines.push(("metrics".to_owned(), format!("the executor's at {metrics}")));
    }
    lines.insert(
        0,
        (
            "executor".to_owned(),
            format!("{} runs the package's local skills, claiming their calls from the core", host.name),
        ),
    );

    let (executor_stop, executor_stopped) = tokio::sync::oneshot::channel::<()>();
    let remote_executor = match (&tls, runs) {
        (Some(tls), Some(runs)) => {
            let calls: Vec<String> = runs
                .http_origins
                .iter()
                .chain(&runs.mcp_origins)
                .cloned()
                .chain(runs.stdio.iter().map(|name| format!("stdio:{name}")))
                .collect();
            lines.push(("remote".to_owned(), format!("an executor in this process calls {}", calls.join(", "))));
            let stop = async move {
                drop(executor_stopped.await);
            };
            Some(remote::executor(&core_url, &executor_token, &executable, &runs, &needs, tls, &host_env.vars, stop)?)
        }
        _ => None,
    };
    lines.extend(host_env.notes.iter().cloned());

    // A token for each agent the package declares (an executor's is its host's business).
    let mut agents = Vec::new();
    for object in loaded.package.objects.iter().filter(|object| object.kind == "Agent") {
        let Ok(spec) = skill_api::agent::read_spec(object.spec()) else { continue };
        if spec.identity.kind != skill_api::agent::AgentKind::Agent {
            continue;
        }
        // The developer operates dev's agents: the reviewer decides what they ask for.
        let request = skill_api::AgentTokenRequest {
            label: "skill-core dev".into(),
            expires_in_days: Some(1),
            operated_by: Some("dev".into()),
        };
        let issued = engine
            .issue_agent_token(None, &object.key, &request, &Origin::default())
            .await
            .map_err(|error| anyhow::anyhow!("a token for the agent {}: {error}", object.key))?;
        agents.push(banner::AgentLine { key: object.key.clone(), token: issued.token, spec });
    }

    let (sdk, sdk_folder) = sdk_on_path();
    banner::print(&banner::Banner {
        loaded: &loaded,
        applied: match applied {
            Applied::Done => "applied",
            Applied::Already => "already applied",
        },
        core_url: &core_url,
        data: data.shown(),
        token: &token,
        grants: &grants,
        reviewer: &reviewer,
        reviewer_grants: &reviewer_grants,
        lines,
        sdk_folder,
        sdk,
        workspace: DEV_WORKSPACE,
        agents: &agents,
    });

    tokio::select! {
        () = skill_http::stop_signal() => {}
        status = child.wait() => bail!("the package's host stopped on its own ({})", status.map(|s| s.to_string()).unwrap_or_default()),
    }
    if let Some(id) = child.id().and_then(|id| i32::try_from(id).ok()).and_then(rustix::process::Pid::from_raw) {
        let _ = rustix::process::kill_process(id, rustix::process::Signal::TERM);
    }
    if tokio::time::timeout(Duration::from_secs(10), child.wait()).await.is_err() {
        let _ = child.kill().await;
    }
    let _ = executor_stop.send(());
    if let Some(task) = remote_executor {
        let _ = tokio::time::timeout(Duration::from_secs(10), task).await;
    }
    for mut served in hosts {
        let _ = served.kill().await;
    }
    let _ = stop.send(());
    server.await?.context("serving")?;
    drop(engine);
    eprintln!("skill-core dev stopped{}", if args.temp { " (its data folder removed)" } else { "" });
    Ok(())
}

/// The log filter of the hosts dev starts: as quiet or as verbose as dev, unless `SKILL_LOG`
/// says otherwise (they read it themselves then).
pub(crate) fn child_log(verbose: bool) -> Option<&'static str> {
    if std::env::var_os("SKILL_LOG").is_some() {
        return None;
    }
    Some(if verbose { VERBOSE } else { QUIET })
}

/// `wanted` when it is not 0, else a free loopback port.
fn free_port(wanted: u16) -> Result<u16> {
    if wanted != 0 {
        return Ok(wanted);
    }
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

/// `count` and `word` for that many: `1 problem`, `2 problems`.
fn plural_count(count: usize, word: &str) -> String {
    format!("{count} {}", plural(count, word))
}

/// `word` for `count` of it: `skill`, `skills`.
fn plural(count: usize, word: &str) -> String {
    if count == 1 { word.to_owned() } else { format!("{word}s") }
}

/// Whether `skill-sdk` runs here, and the folder to put on `PATH` for it when it is beside this
/// binary but not on `PATH`.
fn sdk_on_path() -> (bool, Option<String>) {
    let on_path = std::env::var_os("PATH")
        .is_some_and(|path| std::env::split_paths(&path).any(|folder| folder.join("skill-sdk").is_file()));
    if on_path {
        return (true, None);
    }
    let beside = std::env::current_exe().ok().and_then(|exe| exe.parent().map(std::path::Path::to_path_buf));
    match beside.filter(|folder| folder.join("skill-sdk").is_file()) {
        Some(folder) => (true, Some(folder.display().to_string())),
        None => (false, None),
    }
}

/// The workspaces the package's agents name: where their requests go and where they hold
/// permissions.
fn agent_workspaces(loaded: &package::Loaded) -> Vec<String> {
    let mut out = Vec::new();
    for spec in agent_specs(loaded) {
        let named = spec.requests.iter().map(|requests| requests.workspace.clone()).chain(
            spec.identity
                .permissions
                .iter()
                .filter_map(|written| skill_api::agent::split_permission(written).1.map(str::to_owned)),
        );
        for workspace in named {
            if !out.contains(&workspace) {
                out.push(workspace);
            }
        }
    }
    out
}

/// Every permission the package's agents are granted, as written.
fn agent_permissions(loaded: &package::Loaded) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for spec in agent_specs(loaded) {
        for permission in spec.identity.permissions {
            if !out.contains(&permission) {
                out.push(permission);
            }
        }
    }
    out
}

fn agent_specs(loaded: &package::Loaded) -> Vec<skill_api::agent::AgentSpec> {
    loaded
        .package
        .objects
        .iter()
        .filter(|object| object.kind == "Agent")
        .filter_map(|object| skill_api::agent::read_spec(object.spec()).ok())
        .collect()
}

/// The workspace `dev` does its work in.
const DEV_WORKSPACE: &str = "dev";

/// A token for a principal of `kind` named `name` with `grants`, for a day.
async fn issue(engine: &Engine, name: &str, kind: &str, grants: &[String]) -> Result<String> {
    let request = TokenRequest {
        principal: name.into(),
        kind: kind.into(),
        grants: grants.to_vec(),
        label: "skill-core dev".into(),
        expires_at: Some(chrono::Utc::now() + chrono::Duration::days(1)),
    };
    Ok(engine.issue_token(&request, &Origin::default()).await.map_err(|error| anyhow::anyhow!("{error}"))?.token)
}

/// What dev's executor runs: the modules of the package's local skills (its host offers every
/// skill of them), and the origins and audiences of its remote skills as dev serves them.
fn executor_allowance(
    loaded: &package::Loaded,
    needs: &remote::Needs,
    runs: Option<&remote::Runs>,
) -> skill_api::ExecutorAllowance {
    let local: Vec<String> = loaded
        .package
        .objects
        .iter()
        .filter(|object| object.kind == "Skill")
        .filter(|object| object.document.pointer("/spec/contract/implementation/protocol") == Some(&json!("local")))
        .filter_map(|object| object.document.pointer("/spec/contract/implementation/entrypoint"))
        .filter_map(Value::as_str)
        .map(|entrypoint| entrypoint.split_once(':').map_or(entrypoint, |(module, _)| module).to_owned())
        .collect::<std::collections::BTreeSet<String>>()
        .into_iter()
        .collect();
    let mut allowance =
        skill_api::ExecutorAllowance { protocols: vec!["local".to_owned()], local, ..Default::default() };
    if let Some(runs) = runs {
        if !runs.http_origins.is_empty() {
            allowance.protocols.push("http".to_owned());
            allowance.http_origins.clone_from(&runs.http_origins);
        }
        if !runs.mcp_origins.is_empty() || !runs.stdio.is_empty() {
            allowance.protocols.push("mcp".to_owned());
            allowance.mcp_origins =
                runs.mcp_origins.iter().cloned().chain(runs.stdio.iter().map(|name| format!("stdio:{name}"))).collect();
        }
        allowance.audiences = needs.http.audiences.union(&needs.mcp_http.audiences).cloned().collect();
    }
    allowance
}

/// Every permission a skill of the package requires.
fn required_permissions(loaded: &package::Loaded) -> Vec<String> {
    let mut out: Vec<String> = loaded
        .package
        .objects
        .iter()
        .filter(|object| object.kind == "Skill")
        .filter_map(|object| object.document.pointer("/spec/contract/requiredPermissions").and_then(Value::as_array))
        .flatten()
        .filter_map(Value::as_str)
        .map(str::to_owned)
        .collect();
    out.sort();
    out.dedup();
    out
}
