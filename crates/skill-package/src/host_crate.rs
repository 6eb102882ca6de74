//! Finding a package's integration crate and building its skill host binary.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::Value;

/// Why the host binary could not be found or built.
#[derive(Debug, thiserror::Error)]
pub enum HostError {
    #[error(
        "no Cargo.toml in {0}/integration or {0}: the package's integration crate lives in its integration/ folder"
    )]
    NoManifest(String),
    #[error("no crate named `{name}` in the workspace of {manifest}; it has: {known}")]
    UnknownCrate { name: String, manifest: String, known: String },
    #[error("crate `{0}` has no binary: add src/main.rs with `skill_sdk::host_main!(<crate>);`")]
    NoBinary(String),
    #[error("crate `{name}` has several binaries ({known}): name the host binary `{name}`")]
    SeveralBinaries { name: String, known: String },
    #[error("cannot run cargo: {0}")]
    Cargo(std::io::Error),
    #[error("cargo metadata failed:\n{0}")]
    Metadata(String),
    #[error("building `{name}` failed:\n{output}")]
    Build { name: String, output: String },
    #[error("cargo built `{0}` but reported no executable")]
    NoExecutable(String),
}

impl HostError {
    /// 2 for what the user passed (a crate that does not exist), 1 for everything else.
    pub fn exit_code(&self) -> u8 {
        match self {
            Self::NoManifest(_) | Self::UnknownCrate { .. } => 2,
            _ => 1,
        }
    }
}

/// The host binary of a crate: the crate's manifest and its binary target.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostCrate {
    pub name: String,
    pub manifest: PathBuf,
    pub binary: String,
}

fn cargo() -> Command {
    Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()))
}

/// The manifest to start from: `<package>/integration/Cargo.toml`, else `<package>/Cargo.toml`.
fn start_manifest(package: &Path) -> Result<PathBuf, HostError> {
    ["integration/Cargo.toml", "Cargo.toml"]
        .iter()
        .map(|candidate| package.join(candidate))
        .find(|path| path.is_file())
        .ok_or_else(|| HostError::NoManifest(package.display().to_string()))
}

/// The start manifest and every crate of its workspace, from `cargo metadata`.
fn workspace_crates(package: &Path) -> Result<(PathBuf, Vec<Value>), HostError> {
    let (manifest, metadata) = metadata(package)?;
    Ok((manifest, metadata["packages"].as_array().cloned().unwrap_or_default()))
}

/// The start manifest and `cargo metadata --no-deps` of its workspace.
pub(crate) fn metadata(package: &Path) -> Result<(PathBuf, Value), HostError> {
    let manifest = start_manifest(package)?;
    let output = cargo()
        .args(["metadata", "--format-version", "1", "--no-deps", "--manifest-path"])
        .arg(&manifest)
        .stderr(Stdio::piped())
        .output()
        .map_err(HostError::Cargo)?;
    if !output.status.success() {
        return Err(HostError::Metadata(String::from_utf8_lossy(&output.stderr).into_owned()));
    }
    let metadata: Value = serde_json::from_slice(&output.stdout)
        .map_err(|error| HostError::Metadata(format!("unreadable output: {error}")))?;
    Ok((manifest, metadata))
}

/// Finds the crate `name` in the workspace of the package's integration folder.
pub fn locate(package: &Path, name: &str) -> Result<HostCrate, HostError> {
    let (manifest, packages) = workspace_crates(package)?;
    let Some(found) = packages.iter().find(|p| p["name"] == name) else {
        let mut known: Vec<&str> = packages.iter().filter_map(|p| p["name"].as_str()).collect();
        known.sort_unstable();
        return Err(HostError::UnknownCrate {
            name: name.to_owned(),
            manifest: manifest.display().to_string(),
            known: known.join(", "),
        });
    };
    host_of(found, name, manifest)
}

/// The crate whose manifest is the package's own (`<package>/integration/Cargo.toml`), whatever
/// its name.
pub fn locate_own(package: &Path) -> Result<HostCrate, HostError> {
    let (manifest, packages) = workspace_crates(package)?;
    let own = manifest.canonicalize().unwrap_or_else(|_| manifest.clone());
    let found = packages.iter().find(|p| {
        p["manifest_path"].as_str().and_then(|path| Path::new(path).canonicalize().ok()).is_some_and(|path| path == own)
    });
    let Some(found) = found else {
        return Err(HostError::Metadata(format!("cargo does not list the crate of {}", manifest.display())));
    };
    let name = found["name"].as_str().unwrap_or_default().to_owned();
    host_of(found, &name, manifest)
}

fn host_of(found: &Value, name: &str, manifest: PathBuf) -> Result<HostCrate, HostError> {
    let binaries: Vec<&str> = found["targets"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|t| t["kind"].as_array().is_some_and(|kinds| kinds.iter().any(|k| k == "bin")))
        .filter_map(|t| t["name"].as_str())
        .collect();
    let binary = match binaries.as_slice() {
        [] => return Err(HostError::NoBinary(name.to_owned())),
        [only] => (*only).to_owned(),
        several => match several.iter().find(|b| **b == name) {
            Some(named) => (*named).to_owned(),
            None => return Err(HostError::SeveralBinaries { name: name.to_owned(), known: several.join(", ") }),
        },
    };
    let manifest = found["manifest_path"].as_str().map(PathBuf::from).unwrap_or(manifest);
    Ok(HostCrate { name: name.to_owned(), manifest, binary })
}

/// A spinner on a terminal (never under CI), nothing otherwise.
fn spinner(message: String) -> Option<indicatif::ProgressBar> {
    if !std::io::stderr().is_terminal() || std::env::var_os("CI").is_some() {
        return None;
    }
    let bar = indicatif::ProgressBar::new_spinner().with_message(message);
    bar.enable_steady_tick(Duration::from_millis(100));
    Some(bar)
}

/// Builds the host binary quietly (cargo's output is shown only when the build fails) and
/// returns the executable's path.
pub fn build(host: &HostCrate) -> Result<PathBuf, HostError> {
    let bar = spinner(format!("building {}", host.name));
    let output = cargo()
        .args(["build", "--quiet", "--message-format", "json-render-diagnostics", "--manifest-path"])
        .arg(&host.manifest)
        .args(["--bin", &host.binary])
        .stdin(Stdio::null())
        .output()
        .map_err(HostError::Cargo);
    if let Some(bar) = bar {
        bar.finish_and_clear();
    }
    let output = output?;
    if !output.status.success() {
        return Err(HostError::Build {
            name: host.name.clone(),
            output: String::from_utf8_lossy(&output.stderr).into_owned(),
        });
    }
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|message| message["reason"] == "compiler-artifact" && message["target"]["name"] == host.binary.as_str())
        .find_map(|message| message["executable"].as_str().map(PathBuf::from))
        .ok_or_else(|| HostError::NoExecutable(host.binary.clone()))
}
