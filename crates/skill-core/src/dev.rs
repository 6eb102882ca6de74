//! `skill-core dev`: everything on one machine — the core on an embedded SQLite directory, a
//! token for the developer, the package checked, planned and applied through the API, and the
//! package's skill host built and running as the local executor, so calls go through the core;
//! when the package has `http` or `mcp` skills, the host serves them over https on loopback (or
//! over stdio) and a remote executor calls them (`dev/remote.rs`) — until Ctrl-C.

mod remote;

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use serde_json::{Value, json};
use skill_client::Client;
use skill_engine::{Engine, Origin, TokenRequest};
use skill_package::{self as package, Applied, host_crate};

/// What `dev` runs on.
#[derive(Debug, clap::Args)]
pub(crate) struct DevArgs {
    /// The package folder.
    #[arg(long, value_name = "DIR")]
    package: PathBuf,
    /// Where the embedded database lives (default: <package>/.skill-core).
    #[arg(long, value_name = "DIR")]
    data: Option<PathBuf>,
    /// The core's address.
    #[arg(long, default_value = "127.0.0.1:8700")]
    listen: String,
    /// The integration crate, when the package's integration/ folder is not a crate of its own.
    #[arg(long = "crate", value_name = "CRATE")]
    krate: Option<String>,
}

#[allow(clippy::print_stdout, clippy::print_stderr)]
pub(crate) async fn run(args: DevArgs) -> Result<()> {
    let folder =
        args.package.canonicalize().with_context(|| format!("no package folder {}", args.package.display()))?;
    let data = args.data.clone().unwrap_or_else(|| folder.join(".skill-core"));
    let loaded = package::load(&folder).map_err(|error| anyhow::anyhow!(error))?;
    let problems = package::problems(&loaded);
    if !problems.is_empty() {
        for problem in &problems {
            eprintln!("{problem}");
        }
        bail!("the package has {} problems: fix them, then run dev again", problems.len());
    }
    let store =
        skill_store::open(&data.display().to_string(), &Default::default()).await.context("opening the database")?;
    let engine = Engine::new(store).with_blobs(std::sync::Arc::new(skill_store::FolderBlobs::new(data.join("blobs"))));
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
    let grants = with(&["org.manage", "skills.invoke", "tasks.write@dev", "knowledge.write@dev"]);
    let token = issue(&engine, "dev", "person", &grants).await?;
    let reviewer_grants = with(&["skills.invoke", "tasks.write@dev", "approvals.decide@dev"]);
    let reviewer = issue(&engine, "dev-reviewer", "person", &reviewer_grants).await?;
    // The core carries out execution-pinned tasks as its own principal: here it may do what the
    // package's contracts require.
    let needed: Vec<&str> = contract_permissions.iter().map(String::as_str).collect();
    engine.grant_execution(&needed).await.map_err(|error| anyhow::anyhow!("{error}"))?;
    // The executor's own account is what its skills reach artifacts and knowledge with.
    let executor_grants = ["skills.execute".to_owned(), format!("knowledge.write@{DEV_WORKSPACE}")];
    let executor_token = issue(&engine, "dev-executor", "executor", &executor_grants).await?;

    let listener = tokio::net::TcpListener::bind(&args.listen)
        .await
        .with_context(|| format!("cannot listen on {}", args.listen))?;
    let core_url = format!("http://{}", listener.local_addr()?);
    let engine = engine.with_issuer(&core_url);
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server =
        tokio::spawn(skill_core::serve_until(engine.clone(), listener, skill_http::Limits::default(), async {
            drop(stopped.await);
        }));

    let host = match &args.krate {
        Some(name) => host_crate::locate(&folder, name),
        None => host_crate::locate_own(&folder),
    }
    .map_err(|error| anyhow::anyhow!("{error}"))?;
    eprintln!("building {} …", host.name);
    let build = host.clone();
    let executable = tokio::task::spawn_blocking(move || host_crate::build(&build))
        .await?
        .map_err(|error| anyhow::anyhow!("{error}"))?;

    // Remote skills: the host over https on loopback (http, mcp-http), the package's URL
    // variables at it.
    let needs = remote::needs(&loaded);
    let tls = if needs.any() { Some(remote::certificates(&data.join("dev-tls"))?) } else { None };
    let mut variables = std::collections::BTreeMap::new();
    let mut hosts = Vec::new();
    let mut lines_out = Vec::new();
    if let Some(tls) = &tls {
        if needs.http.count > 0 {
            let (child, port) = remote::serve_host(&executable, "http", tls, &core_url, &needs.http).await?;
            remote::point(&needs.http, &format!("https://localhost:{port}"), &mut variables);
            lines_out.push(format!(
                "  https     {} serves the {} http skills on https://localhost:{port} (a CA made for this run; tokens from this core)",
                host.name, needs.http.count
            ));
            hosts.push(child);
        }
        if needs.mcp_http.count > 0 {
            let (child, port) = remote::serve_host(&executable, "mcp-http", tls, &core_url, &needs.mcp_http).await?;
            remote::point(&needs.mcp_http, &format!("https://localhost:{port}"), &mut variables);
            lines_out.push(format!(
                "  mcp       {} serves the {} mcp tools on https://localhost:{port}/mcp",
                host.name, needs.mcp_http.count
            ));
            hosts.push(child);
        }
        for name in &needs.stdio {
            lines_out.push(format!("  stdio     {} serve mcp-stdio answers stdio:{name}", host.name));
        }
    }
    let lookup = |name: &str| remote::lookup(&variables, name);

    let client = Client::new(&core_url, token.clone())?;
    let changes = package::plan_with(&loaded, &client, &[], &lookup).await.map_err(|error| anyhow::anyhow!(error))?;
    if let Some(refused) = changes.iter().find(|change| change.is_refused()) {
        bail!(
            "{}\n(the database in {} holds an older contract: raise spec.version, or remove that folder)",
            refused.describe(),
            data.display()
        );
    }
    let applied = package::apply(&loaded, &client, &changes, |change| eprintln!("{}", change.describe()))
        .await
        .map_err(|error| anyhow::anyhow!(error))?;

    let runs = match &tls {
        Some(_) => Some(remote::Runs {
            http_origins: remote::origins(&loaded, "http", &lookup)?,
            mcp_origins: remote::origins(&loaded, "mcp", &lookup)?,
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
        .stdin(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    let (mut child, _) =
        remote::start(execute, "executing the local skills of this host", "the package's host did not start executing")
            .await?;

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
            lines_out.push(format!("  remote    an executor in this process calls {}", calls.join(", ")));
            let stop = async move {
                drop(executor_stopped.await);
            };
            Some(remote::executor(&core_url, &executor_token, &executable, &runs, &needs, tls, stop)?)
        }
        _ => None,
    };

    let done = match applied {
        Applied::Done => "applied",
        Applied::Already => "already applied",
    };
    let api = format!("{core_url}/api/v1");
    println!("skill-core dev: package {} {} {done}", loaded.package.key, loaded.package.version);
    println!("  core      {api}    (data: {})", shown(&data));
    println!("  console   {core_url}/console    (sign in with the token or the reviewer's)");
    println!("  token     {token}    ({}; a day)", grants.join(", "));
    println!("  reviewer  {reviewer}    ({}; decides approvals)", reviewer_grants.join(", "));
    println!(
        "  executor  {} runs the package's local skills, claiming their calls from the core ({})",
        host.name,
        executor_grants.join(", ")
    );
    for line in &lines_out {
        println!("{line}");
    }
    println!();
    println!("Try:");
    println!("  export SKILL_CORE_TOKEN={token}");
    if let Some((reference, inputs)) = example_call(&loaded) {
        let body = json!({"inputs": inputs});
        println!(
            "  curl -s -X POST -H \"Authorization: Bearer $SKILL_CORE_TOKEN\" -H 'Content-Type: application/json' \\\n       {api}/skills/{reference}:invoke -d '{body}'"
        );
        println!(
            "  curl -s -H \"Authorization: Bearer $SKILL_CORE_TOKEN\" {api}/skill-invocations/<id from the answer>"
        );
        println!("  skill-sdk call {reference} --core {core_url} --input '{inputs}' --wait 10");
    }
    println!("  curl -s -H \"Authorization: Bearer $SKILL_CORE_TOKEN\" '{api}/skill-invocations?limit=5'");
    // A task type with a gate shows the decision; any other, the task.
    let task_types: Vec<_> = loaded.package.objects.iter().filter(|object| object.kind == "TaskType").collect();
    let gated = task_types.iter().find(|object| object.document.pointer("/spec/approvalSchema").is_some());
    if let Some(key) = gated.or(task_types.first()).map(|object| &object.key) {
        println!("Work (docs/work.md): a task, a gate approval, the reviewer's decision:");
        println!(
            "  curl -s -X POST -H \"Authorization: Bearer $SKILL_CORE_TOKEN\" -H 'Content-Type: application/json' \\\n       {api}/tasks -d '{{\"workspace\": \"{DEV_WORKSPACE}\", \"taskType\": \"{key}\", \"title\": \"…\", \"customFields\": {{…}}}}'"
        );
        println!(
            "  curl -s -X POST -H \"Authorization: Bearer $SKILL_CORE_TOKEN\" -H 'Content-Type: application/json' {api}/approvals -d '{{\"taskId\": \"<task id>\"}}'"
        );
        println!(
            "  curl -s -X POST -H \"Authorization: Bearer {reviewer}\" -H 'Content-Type: application/json' \\\n       {api}/approvals/<approval id>:decide -d '{{\"outcome\": \"approved\", \"comment\": \"…\"}}'"
        );
    }
    println!("Stop with Ctrl-C.");

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
    eprintln!("skill-core dev stopped");
    Ok(())
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

fn shown(path: &Path) -> String {
    std::env::current_dir()
        .ok()
        .and_then(|here| path.strip_prefix(here).ok().map(|relative| relative.display().to_string()))
        .unwrap_or_else(|| path.display().to_string())
}

/// A skill without side effects and inputs that fit its schema, for the printed example.
fn example_call(loaded: &package::Loaded) -> Option<(String, Value)> {
    let skill = loaded.package.objects.iter().find(|object| {
        object.kind == "Skill" && object.document.pointer("/spec/sideEffects").and_then(Value::as_str) == Some("none")
    })?;
    let version = skill.version()?;
    let schema = skill.document.pointer("/spec/contract/inputs")?;
    Some((format!("{}@{version}", skill.key), example(schema)))
}

/// The smallest value of `schema`'s shape: required properties only.
fn example(schema: &Value) -> Value {
    match schema.get("type").and_then(Value::as_str) {
        Some("object") => {
            let required: Vec<&str> = schema
                .get("required")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .collect();
            let properties = schema.get("properties");
            let map = required
                .into_iter()
                .map(|name| (name.to_owned(), properties.and_then(|p| p.get(name)).map_or(json!("example"), example)))
                .collect();
            Value::Object(map)
        }
        Some("integer" | "number") => json!(1),
        Some("boolean") => json!(false),
        Some("array") => json!([]),
        _ => json!("example"),
    }
}
