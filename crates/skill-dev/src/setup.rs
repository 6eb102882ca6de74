//! What `skill-core dev` sets up for its package before the host starts: the data folder (kept,
//! or thrown away at stop with `--temp`), the environment of the package's skill host — a folder
//! for every `folder` variable, the value of every other variable, and a model for `ctx.llm()` —
//! and the ports dev served on last time, so a restart serves where it did.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use skill_package as package;
use skill_package::VariableKind;

use super::stand_in;

/// The data folder of a run: the database, the artifacts, the folders of the package's host.
pub(crate) struct Data {
    pub(crate) path: PathBuf,
    /// Removed when the run ends (`--temp`).
    throwaway: bool,
}

impl Data {
    /// `chosen`, or `<package>/.skill-core`; with `temp`, a new folder under the system's
    /// temporary folder.
    pub(crate) fn new(package: &Path, chosen: Option<&Path>, temp: bool) -> Result<Self> {
        if temp {
            let path = std::env::temp_dir().join(format!(
                "skill-core-dev-{}-{}",
                std::process::id(),
                chrono::Utc::now().timestamp_micros()
            ));
            std::fs::create_dir_all(&path).with_context(|| format!("creating {}", path.display()))?;
            owner_only(&path)?;
            return Ok(Self { path, throwaway: true });
        }
        let path = chosen.map_or_else(|| package.join(".skill-core"), Path::to_path_buf);
        let new = !path.exists();
        std::fs::create_dir_all(&path).with_context(|| format!("creating {}", path.display()))?;
        if new {
            owner_only(&path)?;
        }
        Ok(Self { path: path.canonicalize().unwrap_or(path), throwaway: false })
    }

    /// What the banner says of it.
    pub(crate) fn shown(&self) -> String {
        let shown = shown(&self.path);
        if self.throwaway { format!("{shown}, removed at stop") } else { shown }
    }
}

impl Drop for Data {
    fn drop(&mut self) {
        if self.throwaway {
            let _ = std::fs::remove_dir_all(&self.path);
        }
    }
}

/// Makes `folder` readable by its owner only: drafts, results and replies are kept in it.
fn owner_only(folder: &Path) -> Result<()> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(folder, std::fs::Permissions::from_mode(0o700))
        .with_context(|| format!("making {} its owner's alone", folder.display()))
}

/// `path` relative to the working folder when it is inside it.
pub(crate) fn shown(path: &Path) -> String {
    std::env::current_dir()
        .ok()
        .and_then(|here| path.strip_prefix(here).ok().map(|relative| relative.display().to_string()))
        .unwrap_or_else(|| path.display().to_string())
}

/// The environment of the package's skill host, and what the banner says of it.
#[derive(Debug, Default)]
pub(crate) struct HostEnv {
    /// Variables set on every process of the host.
    pub(crate) vars: BTreeMap<String, String>,
    /// `(name, what dev did)` for the banner.
    pub(crate) notes: Vec<(String, String)>,
    /// Whether dev's stand-in model answers `ctx.llm()`.
    pub(crate) stand_in: bool,
}

/// The host's environment for `loaded`: every declared variable that is no endpoint's (those
/// are dev's to point, in `pointed`) from the environment, else for a `folder` one a folder in
/// `data`, else its default; and a model. A variable with none of these stops dev, naming it.
pub(crate) async fn host_env(
    loaded: &package::Loaded,
    data: &Path,
    pointed: &BTreeMap<String, String>,
) -> Result<HostEnv> {
    let mut env = HostEnv::default();
    let mut missing = Vec::new();
    for (name, variable) in &loaded.package.variables {
        if let Some(value) = pointed.get(name) {
            env.vars.insert(name.clone(), value.clone());
            continue;
        }
        let set = std::env::var(name).ok().filter(|value| !value.is_empty());
        let value = match (variable.kind, set) {
            (VariableKind::Folder, Some(folder)) => {
                std::fs::create_dir_all(&folder).with_context(|| format!("creating {name}={folder}"))?;
                env.notes.push((name.clone(), format!("{folder} (from the environment)")));
                folder
            }
            (VariableKind::Folder, None) => {
                let folder = data.join(folder_name(name));
                std::fs::create_dir_all(&folder).with_context(|| format!("creating {}", folder.display()))?;
                env.notes.push((name.clone(), format!("{} (made by dev)", shown(&folder))));
                folder.display().to_string()
            }
            (_, Some(value)) => value,
            (_, None) => match &variable.default {
                Some(default) => default.clone(),
                None => {
                    missing.push(format!(
                        "  {name} ({}): set it, e.g. `{name}=… skill-core dev --package …`",
                        if variable.description.is_empty() { "no description" } else { &variable.description }
                    ));
                    continue;
                }
            },
        };
        env.vars.insert(name.clone(), value);
    }
    if !missing.is_empty() {
        bail!(
            "the package needs {} that dev cannot provide:\n{}",
            if missing.len() == 1 { "a variable".to_owned() } else { format!("{} variables", missing.len()) },
            missing.join("\n")
        );
    }
    let installed = ["SKILL_LLM_PROVIDER", "SKILL_LLM_BASE_URL"]
        .into_iter()
        .find_map(|name| std::env::var(name).ok().filter(|value| !value.is_empty()).map(|value| (name, value)));
    match installed {
        Some((name, value)) => {
            env.notes.push(("model".to_owned(), format!("the installation's ({name}={value})")));
        }
        None => {
            let base = stand_in::start().await.context("starting dev's stand-in model")?;
            for (name, value) in [
                ("SKILL_LLM_PROVIDER", "openai"),
                ("SKILL_LLM_BASE_URL", base.as_str()),
                ("SKILL_LLM_API_KEY", "dev-stand-in"),
                ("SKILL_LLM_MODELS", stand_in::MODEL),
            ] {
                env.vars.insert(name.to_owned(), value.to_owned());
            }
            env.notes.push(("model".to_owned(), format!("{} ({base})", stand_in::NOTICE)));
            env.stand_in = true;
        }
    }
    Ok(env)
}

/// The folder dev makes for a `folder` variable: its name in lower case, without a trailing
/// `_DIR`, `_` as `-` (`CLAIMS_OUTBOX_DIR` → `claims-outbox`).
fn folder_name(variable: &str) -> String {
    let lower = variable.to_ascii_lowercase();
    let stem = lower.strip_suffix("_dir").filter(|stem| !stem.is_empty()).unwrap_or(&lower);
    stem.replace('_', "-")
}

/// The ports dev's hosts served on, kept in the data folder (`dev-ports.json`): a restart asks
/// for the same ones, so the endpoints it published stay where they are.
pub(crate) struct Ports {
    file: PathBuf,
    ports: BTreeMap<String, u16>,
}

impl Ports {
    pub(crate) fn read(data: &Path) -> Self {
        let file = data.join("dev-ports.json");
        let ports = std::fs::read(&file).ok().and_then(|bytes| serde_json::from_slice(&bytes).ok()).unwrap_or_default();
        Self { file, ports }
    }

    /// The port `transport` had, if it is free now (else 0: any).
    pub(crate) fn wanted(&self, transport: &str) -> u16 {
        match self.ports.get(transport) {
            Some(&port) if std::net::TcpListener::bind(("127.0.0.1", port)).is_ok() => port,
            _ => 0,
        }
    }

    /// Keeps the port `transport` serves on now.
    pub(crate) fn keep(&mut self, transport: &str, port: u16) {
        self.ports.insert(transport.to_owned(), port);
        if let Ok(text) = serde_json::to_vec_pretty(&self.ports) {
            let _ = std::fs::write(&self.file, text);
        }
    }
}

/// The file dev keeps the journal's signing key in, in its data folder.
pub(crate) const JOURNAL_KEY_FILE: &str = "journal.key";
/// The file each checkpoint dev signs is written to, in its data folder.
pub(crate) const CHECKPOINT_FILE: &str = "checkpoint.note";

/// Dev's journal key: the one in `data`, made there (readable by its owner only) the first time.
pub(crate) fn journal_key(data: &Path) -> Result<skill_journal::Signer> {
    let path = data.join(JOURNAL_KEY_FILE);
    if !path.exists() {
        let signer =
            skill_journal::Signer::generate("skill-core-dev/journal").map_err(|error| anyhow::anyhow!("{error}"))?;
        let private = signer.private_text().map_err(|error| anyhow::anyhow!("{error}"))?;
        let mut options = std::fs::OpenOptions::new();
        options.write(true).create_new(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
        let mut file = options.open(&path).with_context(|| format!("cannot create {}", path.display()))?;
        std::io::Write::write_all(&mut file, format!("{private}\n").as_bytes())?;
    }
    skill_server::checkpoints::read_key(&path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_folder_variable_names_its_folder() {
        assert_eq!(folder_name("CLAIMS_OUTBOX_DIR"), "claims-outbox");
        assert_eq!(folder_name("UPLOADS"), "uploads");
        assert_eq!(folder_name("_DIR"), "-dir");
    }

    #[test]
    fn ports_are_kept_and_asked_for_again_when_free() {
        let folder = std::env::temp_dir().join(format!("skill-core-dev-ports-{}", std::process::id()));
        std::fs::create_dir_all(&folder).expect("folder");
        let taken = std::net::TcpListener::bind("127.0.0.1:0").expect("a port");
        let busy = taken.local_addr().expect("address").port();
        let free = {
            let probe = std::net::TcpListener::bind("127.0.0.1:0").expect("a port");
            probe.local_addr().expect("address").port()
        };
        let mut ports = Ports::read(&folder);
        assert_eq!(ports.wanted("http"), 0, "nothing kept yet");
        ports.keep("http", free);
        ports.keep("mcp-http", busy);
        let again = Ports::read(&folder);
        assert_eq!(again.wanted("http"), free, "kept, and free");
        assert_eq!(again.wanted("mcp-http"), 0, "kept, but taken now");
        let _ = std::fs::remove_dir_all(folder);
    }
}
