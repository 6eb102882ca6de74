//! The package's remote skills in `skill-core dev`. `http` skills: the host serves them over https
//! on loopback (`serve http`, with a CA made for the run in the data folder), verifying tokens
//! against this core's JWKS, and the URL variables their endpoints start with point at it. `mcp`
//! skills at `${VAR}/…`: the same with `serve mcp-http`; at `stdio:<name>`: the host's
//! `serve mcp-stdio` answers every such name. A remote executor runs in this process for all of
//! them — loopback listed as private, the run's CA trusted, tokens from this core.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use skill_api::{Implementation, Protocol};
use skill_package as package;
use skill_remote::guard::SystemLookup;
use skill_remote::{Config, CoreTokens, Remote, StdioServer};
use tokio::io::{AsyncBufReadExt, BufReader};

/// Skills of one way of serving: the variables their endpoints start with, the audiences they
/// name, how many.
#[derive(Debug, Default)]
pub(crate) struct Served {
    pub(crate) variables: BTreeSet<String>,
    pub(crate) audiences: BTreeSet<String>,
    pub(crate) count: usize,
}

/// What the package's remote skills need of dev.
#[derive(Debug, Default)]
pub(crate) struct Needs {
    /// `http` skills (the host's `serve http`).
    pub(crate) http: Served,
    /// `mcp` skills over HTTP (the host's `serve mcp-http`).
    pub(crate) mcp_http: Served,
    /// The `stdio:<name>` names of `mcp` skills (the host's `serve mcp-stdio`).
    pub(crate) stdio: BTreeSet<String>,
}

impl Needs {
    pub(crate) fn any(&self) -> bool {
        self.http.count > 0 || self.mcp_http.count > 0 || !self.stdio.is_empty()
    }
}

/// A package skill's implementation as its file writes it (an endpoint may start with a
/// `${VARIABLE}` the installation fills); `None` when it has none or it does not read (the
/// package's check reports that).
fn implementation(document: &serde_json::Value) -> Option<Implementation> {
    let written = document.pointer("/spec/contract/implementation")?;
    let options = skill_api::NormalizeOptions { allow_placeholders: true, ..Default::default() };
    Implementation::parse(written, &options).ok()
}

/// What the package's remote skills need.
pub(crate) fn needs(loaded: &package::Loaded) -> Needs {
    let mut needs = Needs::default();
    for object in loaded.package.objects.iter().filter(|object| object.kind == "Skill") {
        let Some(implementation) = implementation(&object.document) else { continue };
        let endpoint = implementation.endpoint().unwrap_or_default();
        let served = match implementation.protocol() {
            Protocol::Http => &mut needs.http,
            Protocol::Mcp => {
                if let Some(name) = endpoint.strip_prefix("stdio:") {
                    needs.stdio.insert(name.to_owned());
                    continue;
                }
                &mut needs.mcp_http
            }
            Protocol::Local => continue,
        };
        served.count += 1;
        if let Some(name) = endpoint.strip_prefix("${").and_then(|rest| rest.split_once('}')).map(|(name, _)| name) {
            served.variables.insert(name.to_owned());
        }
        if let Some(auth) = implementation.auth() {
            served.audiences.insert(auth.audience().to_owned());
        }
    }
    needs
}

/// The run's certificates in `folder`: a CA, and a certificate for `localhost` it signed.
pub(crate) struct DevTls {
    pub(crate) ca: PathBuf,
    cert: PathBuf,
    key: PathBuf,
}

pub(crate) fn certificates(folder: &Path) -> Result<DevTls> {
    std::fs::create_dir_all(folder).with_context(|| format!("creating {}", folder.display()))?;
    let failed = |error: rcgen::Error| anyhow::anyhow!("making the dev certificates: {error}");
    let ca_key = rcgen::KeyPair::generate().map_err(failed)?;
    let mut ca = rcgen::CertificateParams::new(Vec::<String>::new()).map_err(failed)?;
    ca.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    ca.distinguished_name.push(rcgen::DnType::CommonName, "skill-core dev CA");
    let ca_cert = ca.self_signed(&ca_key).map_err(failed)?;
    let issuer = rcgen::Issuer::new(ca, ca_key);
    let key = rcgen::KeyPair::generate().map_err(failed)?;
    let cert = rcgen::CertificateParams::new(vec!["localhost".to_owned()])
        .map_err(failed)?
        .signed_by(&key, &issuer)
        .map_err(failed)?;
    let tls = DevTls { ca: folder.join("ca.pem"), cert: folder.join("cert.pem"), key: folder.join("key.pem") };
    std::fs::write(&tls.ca, ca_cert.pem())?;
    std::fs::write(&tls.cert, cert.pem())?;
    write_private(&tls.key, &key.serialize_pem())?;
    Ok(tls)
}

/// Writes `text` readable by the owner only.
fn write_private(path: &Path, text: &str) -> Result<()> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    std::io::Write::write_all(&mut options.open(path)?, text.as_bytes())?;
    Ok(())
}

/// Starts `executable serve <transport>` (`http` or `mcp-http`) on 127.0.0.1:`port` over TLS,
/// with `env`, verifying tokens of the skills' one audience against `core_url`'s JWKS (anonymous
/// when they name none); returns it and its port.
#[allow(clippy::too_many_arguments)]
pub(crate) async fn serve_host(
    executable: &Path,
    transport: &str,
    tls: &DevTls,
    core_url: &str,
    served: &Served,
    port: u16,
    env: &BTreeMap<String, String>,
    verbose: bool,
) -> Result<(tokio::process::Child, u16)> {
    let mut command = tokio::process::Command::new(executable);
    command
        .args(["serve", transport, "--host", "127.0.0.1", "--port", &port.to_string(), "--tls-cert"])
        .arg(&tls.cert)
        .arg("--tls-key")
        .arg(&tls.key)
        // The core's metrics address is the core's, not this host's.
        .env_remove("SKILL_METRICS_LISTEN")
        .envs(env)
        .stdin(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    if let Some(filter) = super::child_log(verbose) {
        command.env("SKILL_LOG", filter);
    }
    match audience(transport, served) {
        Some(audience) => {
            command
                .env("SKILL_SDK_IAM_ISSUER", core_url)
                .env("SKILL_SDK_AUDIENCE", audience)
                .env("SKILL_SDK_JWKS_URL", format!("{core_url}/.well-known/jwks.json"));
        }
        None => {
            command.arg("--allow-anonymous");
        }
    }
    let (child, said) =
        start(command, " on https://", &format!("the package's host did not start serving {transport} over https"))
            .await?;
    let line = said.last().map_or("", String::as_str);
    let address = line.split(" on https://").nth(1).and_then(|rest| rest.split([' ', '/']).next()).unwrap_or_default();
    let port = address.rsplit(':').next().and_then(|port| port.parse::<u16>().ok());
    let port = port.context("the host's start line names no port")?;
    Ok((child, port))
}

/// Starts `command` (its stderr piped), echoes its stderr to ours, and returns once a line holds
/// `marker` (within 60 s; else `failure`, the output above telling why), with the lines until
/// then (that one last); the rest of its output is echoed as it comes.
#[allow(clippy::print_stderr)]
pub(crate) async fn start(
    mut command: tokio::process::Command,
    marker: &str,
    failure: &str,
) -> Result<(tokio::process::Child, Vec<String>)> {
    let mut child = command.spawn().with_context(|| format!("cannot start {:?}", command.as_std().get_program()))?;
    let mut lines = BufReader::new(child.stderr.take().context("the host's stderr")?).lines();
    let mut said = Vec::new();
    loop {
        match tokio::time::timeout(Duration::from_secs(60), lines.next_line()).await {
            Ok(Ok(Some(line))) => {
                eprintln!("{line}");
                let found = line.contains(marker);
                said.push(line);
                if found {
                    break;
                }
            }
            _ => bail!("{failure}; its output is above"),
        }
    }
    tokio::spawn(async move {
        while let Ok(Some(line)) = lines.next_line().await {
            eprintln!("{line}");
        }
    });
    Ok((child, said))
}

/// The one audience a dev host verifies: the skills' only one (several: the first, with a
/// warning; none: the host serves anonymously on loopback).
#[allow(clippy::print_stderr)]
fn audience(transport: &str, served: &Served) -> Option<String> {
    if served.audiences.len() > 1 {
        eprintln!(
            "warning: the {transport} skills name {} audiences ({}); the dev host verifies only {}",
            served.audiences.len(),
            served.audiences.iter().cloned().collect::<Vec<_>>().join(", "),
            served.audiences.first().map_or("", String::as_str)
        );
    }
    served.audiences.first().cloned()
}

/// `base` for every variable `served` starts its endpoints with, unless the environment sets it.
pub(crate) fn point(served: &Served, base: &str, variables: &mut BTreeMap<String, String>) {
    for name in served.variables.iter().filter(|name| std::env::var_os(name).is_none()) {
        variables.insert(name.clone(), base.to_owned());
    }
}

/// A variable's value: from `set`, else the environment.
pub(crate) fn lookup(set: &BTreeMap<String, String>, name: &str) -> Option<String> {
    set.get(name).cloned().or_else(|| std::env::var(name).ok())
}

/// The origins of the package's `protocol` skills' http(s) endpoints once `variables` are
/// filled.
pub(crate) fn origins(
    loaded: &package::Loaded,
    protocol: Protocol,
    variables: &dyn Fn(&str) -> Option<String>,
) -> Result<Vec<String>> {
    let mut origins = BTreeSet::new();
    for object in loaded.package.objects.iter().filter(|object| object.kind == "Skill") {
        let document = package::fill(&loaded.package, object, variables).map_err(|problems| {
            anyhow::anyhow!("{}", problems.iter().map(ToString::to_string).collect::<Vec<_>>().join("\n"))
        })?;
        let Some(implementation) = implementation(&document) else { continue };
        let endpoint = implementation.endpoint().unwrap_or_default();
        if implementation.protocol() != protocol || endpoint.starts_with("stdio:") {
            continue;
        }
        let url = reqwest::Url::parse(endpoint).with_context(|| format!("{}: the endpoint {endpoint}", object.key))?;
        origins.insert(skill_remote::guard::origin_of(&url).with_context(|| format!("{}: {endpoint}", object.key))?);
    }
    Ok(origins.into_iter().collect())
}

/// What the dev executor runs: the origins of both protocols and the stdio servers (each the
/// host's `serve mcp-stdio`).
pub(crate) struct Runs {
    pub(crate) http_origins: Vec<String>,
    pub(crate) mcp_origins: Vec<String>,
    pub(crate) stdio: BTreeSet<String>,
}

/// Runs a remote executor until `stop` resolves; its stdio servers get `env`.
#[allow(clippy::too_many_arguments)]
pub(crate) fn executor(
    core_url: &str,
    token: &str,
    host: &Path,
    runs: &Runs,
    needs: &Needs,
    tls: &DevTls,
    env: &BTreeMap<String, String>,
    stop: impl std::future::Future<Output = ()> + Send + 'static,
) -> Result<tokio::task::JoinHandle<()>> {
    let pem = std::fs::read(&tls.ca)?;
    let mut env = env.clone();
    env.insert("SKILL_LOG".to_owned(), "warn".to_owned());
    let stdio_server = StdioServer {
        command: host.display().to_string(),
        args: vec!["serve".to_owned(), "mcp-stdio".to_owned()],
        env,
    };
    let config = Config {
        protocols: vec!["http".to_owned(), "mcp".to_owned()],
        http_origins: runs.http_origins.clone(),
        mcp_origins: runs.mcp_origins.clone(),
        audiences: needs.http.audiences.union(&needs.mcp_http.audiences).cloned().collect(),
        private_hosts: vec!["localhost".to_owned(), "127.0.0.1".to_owned()],
        roots: vec![reqwest::Certificate::from_pem(&pem).context("the dev CA")?],
        mcp_servers: runs.stdio.iter().map(|name| (name.clone(), stdio_server.clone())).collect(),
    };
    let client = skill_client::Client::new(core_url, token.to_owned())?;
    let tokens = Arc::new(CoreTokens::new(client.clone()));
    let remote = Arc::new(Remote::new(&config, Arc::new(SystemLookup), Some(tokens)).map_err(anyhow::Error::msg)?);
    let options = skill_executor::Options { concurrency: 4, grace: Duration::from_secs(5), ..Default::default() };
    Ok(tokio::spawn(async move {
        let runner = Arc::clone(&remote) as Arc<dyn skill_executor::Runner>;
        if let Err(error) = skill_executor::run(client, runner, options, stop).await {
            tracing::error!(%error, "the remote executor stopped");
        }
        remote.close().await;
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn skill(key: &str, implementation: &str) -> String {
        format!(
            "apiVersion: taimen.ai/v1\nkind: Skill\nkey: {key}\nspec:\n  version: '1'\n  description: A tool.\n  \
             sideEffects: none\n  riskLevel: low\n  contract:\n    inputs: {{type: object}}\n    outputs: {{type: object}}\n    \
             implementation: {implementation}\n"
        )
    }

    /// A package `tools` with an http skill and an mcp tool under `${TOOLS_URL}`, and an mcp tool
    /// over stdio.
    fn package() -> (PathBuf, package::Loaded) {
        let root = std::env::temp_dir().join(format!("skill-core-dev-remote-{}", std::process::id()));
        let folder = root.join("tools");
        std::fs::create_dir_all(folder.join("skills")).expect("folders");
        std::fs::write(
            folder.join("package.yaml"),
            "apiVersion: taimen.ai/v1\nkind: Package\nkey: tools\nspec:\n  version: 1.0.0\n  requires: []\n  \
             variables:\n    TOOLS_URL: {kind: url, description: where the tools run, default: 'https://tools.example'}\n",
        )
        .expect("manifest");
        let files = [
            (
                "tools.lookup",
                "{protocol: http, endpoint: '${TOOLS_URL}/skills/tools.lookup@1', auth: {audience: tools-api}}",
            ),
            (
                "tools.rank",
                "{protocol: mcp, endpoint: '${TOOLS_URL}/mcp', entrypoint: rank, auth: {audience: tools-api}}",
            ),
            ("tools.local", "{protocol: mcp, endpoint: 'stdio:tools', entrypoint: tools.local}"),
        ];
        for (key, implementation) in files {
            std::fs::write(folder.join(format!("skills/{key}.yaml")), skill(key, implementation)).expect("skill");
        }
        let loaded = package::load(&folder).expect("loads");
        assert_eq!(package::problems(&loaded), Vec::new(), "a valid package");
        (root, loaded)
    }

    #[test]
    fn remote_skills_are_found_with_their_variables_audiences_and_stdio_names() {
        let (root, loaded) = package();
        let needs = needs(&loaded);
        assert!(needs.any());
        assert_eq!((needs.http.count, needs.mcp_http.count), (1, 1));
        assert_eq!(needs.http.variables.iter().collect::<Vec<_>>(), ["TOOLS_URL"]);
        assert_eq!(needs.mcp_http.audiences.iter().collect::<Vec<_>>(), ["tools-api"]);
        assert_eq!(needs.stdio.iter().collect::<Vec<_>>(), ["tools"]);

        // The variable pointed at the dev host: the origins the executor is allowed.
        let mut variables = BTreeMap::new();
        point(&needs.mcp_http, "https://localhost:9443", &mut variables);
        let lookup = |name: &str| lookup(&variables, name);
        assert_eq!(origins(&loaded, Protocol::Mcp, &lookup).expect("filled"), ["https://localhost:9443"]);
        assert_eq!(origins(&loaded, Protocol::Http, &lookup).expect("filled"), ["https://localhost:9443"]);
        // Unset, the declared default.
        let unset = |_: &str| None;
        assert_eq!(origins(&loaded, Protocol::Http, &unset).expect("filled"), ["https://tools.example"]);
        let _ = std::fs::remove_dir_all(root);
    }
}
