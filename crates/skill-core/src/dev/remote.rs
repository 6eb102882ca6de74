//! The package's `http` skills in `skill-core dev`: its host serves them over https on loopback
//! (with a CA made for the run, in the data folder), verifying tokens against this core's JWKS;
//! the package's URL variables point at it; and a remote executor runs in this process — loopback
//! listed as private, the run's CA trusted, tokens from this core.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use skill_package as package;
use skill_remote::guard::SystemLookup;
use skill_remote::{Config, CoreTokens, Remote};
use tokio::io::{AsyncBufReadExt, BufReader};

/// What the package's `http` skills need: the variables their endpoints start with and the
/// audiences they name.
#[derive(Debug, Default)]
pub(crate) struct HttpSkills {
    pub(crate) variables: BTreeSet<String>,
    pub(crate) audiences: BTreeSet<String>,
    pub(crate) count: usize,
}

/// The package's `http` skills, if it has any.
pub(crate) fn http_skills(loaded: &package::Loaded) -> Option<HttpSkills> {
    let mut found = HttpSkills::default();
    for object in loaded.package.objects.iter().filter(|object| object.kind == "Skill") {
        let Some(implementation) = object.document.pointer("/spec/contract/implementation") else { continue };
        if implementation["protocol"] != "http" {
            continue;
        }
        found.count += 1;
        let endpoint = implementation["endpoint"].as_str().unwrap_or_default();
        if let Some(name) = endpoint.strip_prefix("${").and_then(|rest| rest.split_once('}')).map(|(name, _)| name) {
            found.variables.insert(name.to_owned());
        }
        if let Some(audience) = implementation["auth"]["audience"].as_str() {
            found.audiences.insert(audience.to_owned());
        }
    }
    (found.count > 0).then_some(found)
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

/// Starts `executable serve http` on 127.0.0.1 over TLS, verifying tokens of `audience` against
/// `core_url`'s JWKS (anonymous when the skills name no audience); returns it and its port.
#[allow(clippy::print_stderr)]
pub(crate) async fn serve_host(
    executable: &Path,
    tls: &DevTls,
    core_url: &str,
    audience: Option<&str>,
) -> Result<(tokio::process::Child, u16)> {
    let mut command = tokio::process::Command::new(executable);
    command
        .args(["serve", "http", "--host", "127.0.0.1", "--port", "0", "--tls-cert"])
        .arg(&tls.cert)
        .arg("--tls-key")
        .arg(&tls.key)
        .stdin(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    match audience {
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
    let mut child = command.spawn().with_context(|| format!("cannot start {}", executable.display()))?;
    let mut lines = BufReader::new(child.stderr.take().context("the host's stderr")?).lines();
    let port = loop {
        match tokio::time::timeout(Duration::from_secs(60), lines.next_line()).await {
            Ok(Ok(Some(line))) => {
                eprintln!("{line}");
                if let Some(rest) = line.split(" on https://").nth(1) {
                    let address = rest.split([' ', '/']).next().unwrap_or_default();
                    let port = address.rsplit(':').next().and_then(|port| port.parse::<u16>().ok());
                    break port.context("the host's start line names no port")?;
                }
            }
            _ => bail!("the package's host did not start serving https; its output is above"),
        }
    };
    tokio::spawn(async move {
        while let Ok(Some(line)) = lines.next_line().await {
            eprintln!("{line}");
        }
    });
    Ok((child, port))
}

/// The endpoint origins of the package's `http` skills once `variables` are filled.
pub(crate) fn origins(loaded: &package::Loaded, variables: &dyn Fn(&str) -> Option<String>) -> Result<Vec<String>> {
    let mut origins = BTreeSet::new();
    for object in loaded.package.objects.iter().filter(|object| object.kind == "Skill") {
        let document = package::fill(&loaded.package, object, variables).map_err(|problems| {
            anyhow::anyhow!("{}", problems.iter().map(ToString::to_string).collect::<Vec<_>>().join("\n"))
        })?;
        let implementation = &document["spec"]["contract"]["implementation"];
        if implementation["protocol"] != "http" {
            continue;
        }
        let endpoint = implementation["endpoint"].as_str().unwrap_or_default();
        let url = reqwest::Url::parse(endpoint).with_context(|| format!("{}: the endpoint {endpoint}", object.key))?;
        origins.insert(skill_remote::guard::origin_of(&url).with_context(|| format!("{}: {endpoint}", object.key))?);
    }
    Ok(origins.into_iter().collect())
}

/// Runs a remote executor for `origins` until `stop` resolves.
pub(crate) fn executor(
    core_url: &str,
    token: &str,
    origins: Vec<String>,
    audiences: &BTreeSet<String>,
    tls: &DevTls,
    stop: impl std::future::Future<Output = ()> + Send + 'static,
) -> Result<tokio::task::JoinHandle<()>> {
    let pem = std::fs::read(&tls.ca)?;
    let config = Config {
        protocols: vec!["http".to_owned()],
        http_origins: origins,
        audiences: audiences.iter().cloned().collect(),
        private_hosts: vec!["localhost".to_owned(), "127.0.0.1".to_owned()],
        roots: vec![reqwest::Certificate::from_pem(&pem).context("the dev CA")?],
        mcp_servers: BTreeMap::new(),
        ..Config::default()
    };
    let client = skill_client::Client::new(core_url, token.to_owned())?;
    let tokens = Arc::new(CoreTokens::new(client.clone()));
    let remote = Remote::new(&config, Arc::new(SystemLookup), Some(tokens)).map_err(anyhow::Error::msg)?;
    let options = skill_executor::Options { concurrency: 4, grace: Duration::from_secs(5), ..Default::default() };
    let remote = Arc::new(remote);
    Ok(tokio::spawn(async move {
        let runner = Arc::clone(&remote) as Arc<dyn skill_executor::Runner>;
        if let Err(error) = skill_executor::run(client, runner, options, stop).await {
            tracing::error!(%error, "the remote executor stopped");
        }
        remote.close().await;
    }))
}

/// `https://localhost:<port>` for every variable the `http` skills start with, unless the
/// environment sets it.
pub(crate) fn variables(skills: &HttpSkills, port: u16) -> BTreeMap<String, String> {
    skills
        .variables
        .iter()
        .filter(|name| std::env::var_os(name).is_none())
        .map(|name| (name.clone(), format!("https://localhost:{port}")))
        .collect()
}

/// The one audience the host verifies: the skills' only one (several: the first, with a
/// warning; none: the host serves anonymously on loopback).
#[allow(clippy::print_stderr)]
pub(crate) fn audience(skills: &HttpSkills) -> Option<String> {
    if skills.audiences.len() > 1 {
        eprintln!(
            "warning: the http skills name {} audiences ({}); the dev host verifies only {}",
            skills.audiences.len(),
            skills.audiences.iter().cloned().collect::<Vec<_>>().join(", "),
            skills.audiences.first().map_or("", String::as_str)
        );
    }
    skills.audiences.first().cloned()
}

/// A variable's value: from `set`, else the environment.
pub(crate) fn lookup(set: &BTreeMap<String, String>, name: &str) -> Option<String> {
    set.get(name).cloned().or_else(|| std::env::var(name).ok())
}
