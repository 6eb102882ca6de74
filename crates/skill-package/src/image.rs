//! `skill-sdk image skills`: the container image of a package's skills executor — a build stage
//! that compiles the integration crate with `--locked` on the pinned toolchain, a small runtime
//! stage that runs the host's `execute` as an unprivileged user with the chosen modules — and the
//! ignore file that keeps the build context to what cargo needs.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::load::Loaded;

/// The runtime image when `--base` is not given.
pub const DEFAULT_BASE: &str = "docker.io/library/debian:bookworm-slim";
/// The user the executor runs as.
pub const USER: u32 = 10001;

/// What `image skills` was asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImageRequest {
    /// `module` or `module:function`, as local entrypoints are written.
    pub modules: Vec<String>,
    pub base: Option<String>,
}

/// What the Dockerfile is rendered from: the package, its crate and its cargo workspace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImageInputs {
    pub package: String,
    pub package_version: String,
    /// The integration crate and its host binary.
    pub krate: String,
    pub binary: String,
    /// The pinned toolchain (`1.95.0`), when the workspace pins one.
    pub toolchain: Option<String>,
    pub modules: Vec<String>,
    pub base: Option<String>,
    /// The folders of the workspace's crates, relative to its root (the build context).
    pub members: Vec<String>,
    /// Files at the workspace root cargo reads: `rust-toolchain.toml`, `.cargo/config.toml`.
    pub root_files: Vec<String>,
}

/// A refusal of `image skills`: what was wrong and what to do.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ImageError(pub String);

/// Whether `module` is `module(.sub)*` or `module(.sub)*:function` with identifier words.
pub fn is_module(module: &str) -> bool {
    let identifier = |word: &str| {
        let mut chars = word.chars();
        chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
    };
    let (path, function) = match module.split_once(':') {
        Some((path, function)) => (path, Some(function)),
        None => (module, None),
    };
    module.len() <= 300 && path.split('.').all(identifier) && function.is_none_or(identifier)
}

/// Whether `module` runs `entrypoint` (`module:function`): named exactly, or its module or one
/// above it named.
fn covers(module: &str, entrypoint: &str) -> bool {
    let of = entrypoint.split_once(':').map_or(entrypoint, |(path, _)| path);
    module == entrypoint
        || (!module.contains(':')
            && (of == module || of.strip_prefix(module).is_some_and(|rest| rest.starts_with('.'))))
}

/// Whether `base` looks like an image reference: `[registry[:port]/]path[:tag][@sha256:digest]`.
pub fn is_image_reference(base: &str) -> bool {
    let (rest, digest) = match base.split_once('@') {
        Some((rest, digest)) => (rest, Some(digest)),
        None => (base, None),
    };
    let digest_ok = digest.is_none_or(|digest| {
        digest.strip_prefix("sha256:").is_some_and(|hex| hex.len() == 64 && hex.bytes().all(|b| b.is_ascii_hexdigit()))
    });
    // A tag follows the last `:` after the last `/` (a `:` before it is a registry's port).
    let (path, tag) = match rest.rfind(':') {
        Some(colon) if !rest[colon..].contains('/') => (&rest[..colon], Some(&rest[colon + 1..])),
        _ => (rest, None),
    };
    let tag_ok = tag.is_none_or(|tag| {
        (1..=128).contains(&tag.len())
            && tag.starts_with(|c: char| c.is_ascii_alphanumeric() || c == '_')
            && tag.bytes().all(|b| b.is_ascii_alphanumeric() || b"_.-".contains(&b))
    });
    let mut parts = path.split('/').peekable();
    let first = parts.next().unwrap_or_default();
    let registry = path.contains('/') && (first.contains('.') || first.contains(':') || first == "localhost");
    let component = |part: &str| {
        !part.is_empty()
            && part.starts_with(|c: char| c.is_ascii_lowercase() || c.is_ascii_digit())
            && part.ends_with(|c: char| c.is_ascii_lowercase() || c.is_ascii_digit())
            && part.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"._-".contains(&b))
    };
    let host_ok = |host: &str| {
        let (name, port) = host.split_once(':').unwrap_or((host, ""));
        !name.is_empty()
            && name.bytes().all(|b| b.is_ascii_alphanumeric() || b".-".contains(&b))
            && (port.is_empty() || (port.len() <= 5 && port.bytes().all(|b| b.is_ascii_digit())))
    };
    let first_ok = if registry { host_ok(first) } else { component(first) };
    !base.is_empty() && base.len() <= 255 && digest_ok && tag_ok && first_ok && parts.all(component)
}

/// The `local` entrypoints of the package's skills.
pub fn local_entrypoints(loaded: &Loaded) -> Vec<String> {
    let mut out: Vec<String> = loaded
        .package
        .objects
        .iter()
        .filter(|object| object.kind == "Skill")
        .filter_map(|object| {
            let implementation = object.document.pointer("/spec/contract/implementation")?;
            (implementation.get("protocol").and_then(Value::as_str) == Some("local"))
                .then(|| implementation.get("entrypoint").and_then(Value::as_str).map(str::to_owned))?
        })
        .collect();
    out.sort();
    out.dedup();
    out
}

/// Checks the request against the package: at least one module, each well formed and running
/// some local skill of the package; a base that looks like an image. Notes name the package's
/// local skills the image will not run.
pub fn check_request(request: &ImageRequest, entrypoints: &[String]) -> Result<Vec<String>, ImageError> {
    if request.modules.is_empty() {
        return Err(ImageError(
            "--modules names no module: give the modules the image runs, e.g. --modules claims_integration.skills"
                .into(),
        ));
    }
    let known: Vec<String> = {
        let mut modules: Vec<String> =
            entrypoints.iter().map(|e| e.split_once(':').map_or(e.as_str(), |(m, _)| m).to_owned()).collect();
        modules.dedup();
        modules
    };
    for module in &request.modules {
        if !is_module(module) {
            return Err(ImageError(format!(
                "--modules: {module:?} is not a module: write module(.sub)* or module:function, as local entrypoints are written"
            )));
        }
        if !entrypoints.iter().any(|entrypoint| covers(module, entrypoint)) {
            let listed = if known.is_empty() { "none".to_owned() } else { known.join(", ") };
            return Err(ImageError(format!(
                "--modules: {module} holds none of the package's local skills (its local modules: {listed})"
            )));
        }
    }
    if let Some(base) = &request.base
        && !is_image_reference(base)
    {
        return Err(ImageError(format!(
            "--base: {base:?} is not an image reference: write [registry/]name[:tag][@sha256:digest], e.g. docker.io/library/debian:bookworm-slim"
        )));
    }
    Ok(entrypoints
        .iter()
        .filter(|entrypoint| !request.modules.iter().any(|module| covers(module, entrypoint)))
        .map(|entrypoint| format!("{entrypoint} is not in --modules: this image does not run it"))
        .collect())
}

/// The cargo command the build stage runs.
pub fn build_command(inputs: &ImageInputs) -> String {
    format!("cargo build --locked --release --package {} --bin {}", inputs.krate, inputs.binary)
}

/// The Dockerfile.
pub fn dockerfile(inputs: &ImageInputs, build_from: &str) -> String {
    let rust = match &inputs.toolchain {
        Some(version) => format!("docker.io/library/rust:{version}-slim-bookworm"),
        None => "docker.io/library/rust:slim-bookworm".to_owned(),
    };
    let base = inputs.base.as_deref().unwrap_or(DEFAULT_BASE);
    let modules = inputs.modules.join(",");
    let binary = &inputs.binary;
    let mut lines = vec![
        "# syntax=docker/dockerfile:1".to_owned(),
        format!(
            "# The skills executor of the package {} {}: the host of its integration crate {},",
            inputs.package, inputs.package_version, inputs.krate
        ),
        format!("# running the local skills of {modules}. Generated by `skill-sdk image skills`."),
        "# The build context is the crate's cargo workspace:".to_owned(),
        format!("#   {build_from}"),
        "# Run it with a token of the package's executor agent (skill-core token create --agent <key>):".to_owned(),
        format!(
            "#   docker run -e SKILL_CORE_URL=https://core.example -e SKILL_CORE_TOKEN=skp_… {}-skills",
            inputs.package
        ),
        format!("ARG RUST_IMAGE={rust}"),
        format!("ARG RUNTIME_IMAGE={base}"),
        String::new(),
        "FROM ${RUST_IMAGE} AS build".to_owned(),
        "WORKDIR /build".to_owned(),
        "COPY . .".to_owned(),
        format!("RUN {}", build_command(inputs)),
        String::new(),
        "FROM ${RUNTIME_IMAGE}".to_owned(),
    ];
    if inputs.base.is_none() {
        lines.push(
            "RUN apt-get update && apt-get install -y --no-install-recommends ca-certificates && rm -rf /var/lib/apt/lists/*"
                .to_owned(),
        );
    }
    lines.extend([
        format!("COPY --from=build /build/target/release/{binary} /usr/local/bin/{binary}"),
        format!("ENV SKILL_SDK_MODULES=\"{modules}\""),
        format!("USER {USER}"),
        format!("ENTRYPOINT [\"/usr/local/bin/{binary}\", \"execute\"]"),
    ]);
    lines.join("\n") + "\n"
}

/// The ignore file: the build context holds the workspace's manifests, lock file, root
/// configuration and crates — no `target/`, no secrets, nothing else.
pub fn dockerignore(inputs: &ImageInputs) -> String {
    let mut lines = vec![
        "# Generated by `skill-sdk image skills`: the build context holds only what cargo needs.".to_owned(),
        "*".to_owned(),
        "!Cargo.toml".to_owned(),
        "!Cargo.lock".to_owned(),
    ];
    lines.extend(inputs.root_files.iter().map(|file| format!("!{file}")));
    lines.extend(inputs.members.iter().filter(|member| !member.is_empty()).map(|member| format!("!{member}/")));
    lines.extend(["**/target/".to_owned(), "**/.git/".to_owned(), "**/*.env".to_owned()]);
    lines.join("\n") + "\n"
}

/// The rendered files and what to tell the user.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Image {
    pub dockerfile: String,
    pub dockerignore: String,
    /// The build context: the integration crate's cargo workspace root.
    pub context: PathBuf,
    /// The local skills the image will not run.
    pub notes: Vec<String>,
}

/// Renders the image of the package `folder` (already loaded and checked) for `request`; the
/// Dockerfile will be at `out` (for the build command it shows), else read from stdin.
pub fn render(folder: &Path, loaded: &Loaded, request: &ImageRequest, out: Option<&Path>) -> Result<Image, ImageError> {
    let notes = check_request(request, &local_entrypoints(loaded))?;
    let host = crate::host_crate::locate_own(folder).map_err(|error| ImageError(error.to_string()))?;
    let Layout { root: context, members, root_files, toolchain } = workspace_layout(folder)?;
    let inputs = ImageInputs {
        package: loaded.package.key.clone(),
        package_version: loaded.package.version.clone(),
        krate: host.name,
        binary: host.binary,
        toolchain,
        modules: request.modules.clone(),
        base: request.base.clone(),
        members,
        root_files,
    };
    let tag = format!("{}-skills", inputs.package);
    let build_from = match out {
        Some(out) => {
            let absolute = std::path::absolute(out).unwrap_or_else(|_| out.to_path_buf());
            let shown = absolute
                .strip_prefix(&context)
                .map_or_else(|_| absolute.display().to_string(), |p| p.display().to_string());
            format!("cd {} && docker build -f {shown} -t {tag} .", context.display())
        }
        None => format!("cd {} && docker build -f - -t {tag} . < Dockerfile.skills", context.display()),
    };
    let mut notes = notes;
    if inputs.toolchain.is_none() {
        notes.push("the workspace pins no toolchain (rust-toolchain.toml with channel = \"1.x.y\"): the image builds on the newest stable Rust".to_owned());
    }
    Ok(Image { dockerfile: dockerfile(&inputs, &build_from), dockerignore: dockerignore(&inputs), context, notes })
}

/// A cargo workspace as the image needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layout {
    /// Its root: the build context.
    pub root: PathBuf,
    /// Its crates' folders, relative to the root.
    pub members: Vec<String>,
    /// The files at its root cargo reads.
    pub root_files: Vec<String>,
    /// The toolchain it pins.
    pub toolchain: Option<String>,
}

/// The cargo workspace of the package's integration crate.
pub fn workspace_layout(package: &Path) -> Result<Layout, ImageError> {
    let (_, metadata) = crate::host_crate::metadata(package).map_err(|error| ImageError(error.to_string()))?;
    let root = PathBuf::from(metadata["workspace_root"].as_str().unwrap_or_default());
    let mut members: Vec<String> = metadata["packages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|p| p["manifest_path"].as_str())
        .filter_map(|manifest| Path::new(manifest).parent()?.strip_prefix(&root).ok().map(|p| p.display().to_string()))
        .collect();
    members.sort();
    members.dedup();
    let root_files: Vec<String> = ["rust-toolchain.toml", "rust-toolchain", ".cargo/config.toml"]
        .iter()
        .filter(|file| root.join(file).is_file())
        .map(|file| (*file).to_owned())
        .collect();
    let toolchain = toolchain(&root);
    Ok(Layout { root, members, root_files, toolchain })
}

/// The version `rust-toolchain.toml` pins (`channel = "1.95.0"`), when it pins one.
fn toolchain(root: &Path) -> Option<String> {
    let text = std::fs::read_to_string(root.join("rust-toolchain.toml"))
        .or_else(|_| std::fs::read_to_string(root.join("rust-toolchain")))
        .ok()?;
    let channel = text
        .lines()
        .find_map(|line| {
            line.trim().strip_prefix("channel").map(|rest| rest.trim_start().trim_start_matches('=').trim())
        })
        .unwrap_or_else(|| text.trim());
    let version = channel.trim_matches('"');
    let pinned = !version.is_empty()
        && version.split('.').all(|part| !part.is_empty() && part.bytes().all(|b| b.is_ascii_digit()));
    pinned.then(|| version.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modules_and_bases_are_checked() {
        for good in ["claims_integration.skills", "a", "_x.y:run"] {
            assert!(is_module(good), "{good}");
        }
        for bad in ["", "a..b", "1a", "a:b:c", "a b", "a-b", "a:"] {
            assert!(!is_module(bad), "{bad}");
        }
        for good in [
            "debian:bookworm-slim",
            "docker.io/library/debian:bookworm-slim",
            "localhost:5000/team/runner:1.2",
            "gcr.io/distroless/cc-debian12",
            &format!("debian@sha256:{}", "a".repeat(64)),
        ] {
            assert!(is_image_reference(good), "{good}");
        }
        for bad in ["", "Debian", "debian:", "debian:bad tag", "-x", "a//b", "debian@sha256:xyz", "http://x/y"] {
            assert!(!is_image_reference(bad), "{bad}");
        }
        let entrypoints = vec!["claims_integration.skills:classify".to_owned(), "other.mod:run".to_owned()];
        let request = |modules: &[&str], base: Option<&str>| ImageRequest {
            modules: modules.iter().map(|m| (*m).to_owned()).collect(),
            base: base.map(str::to_owned),
        };
        let notes = check_request(&request(&["claims_integration.skills"], None), &entrypoints).expect("fine");
        assert_eq!(notes, ["other.mod:run is not in --modules: this image does not run it"]);
        assert!(check_request(&request(&[], None), &entrypoints).is_err());
        let unknown = check_request(&request(&["claims_integration"], None), &entrypoints);
        assert!(unknown.is_ok(), "a module above the skills' module covers them");
        let unknown = check_request(&request(&["claims_integrationx"], None), &entrypoints).expect_err("no skill");
        assert!(unknown.0.contains("claims_integration.skills, other.mod"), "{unknown}");
        assert!(check_request(&request(&["claims_integration.skills"], Some("Bad")), &entrypoints).is_err());
    }
}
