//! Exporting the skills of a binary into a package (`skills/<name>.yaml`), and checking that the
//! files still say what the code says.

use std::fmt;
use std::path::{Component, Path, PathBuf};

use serde_json::{Value, json};
use skill_contract::export::{Drift, drift, render_skill_file};
use skill_contract::{ContractError, Implementation, NormalizeOptions, yaml};

use crate::skill::{PrepareError, Skill};

/// The implementation to export instead of the one declared in code.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProtocolChoice {
    /// `local`: the function's own `module.path:function` (a custom local entrypoint is ignored).
    Local,
    /// `http`: `<endpoint>/skills/<name>@<version>`, optionally for an IAM audience.
    Http { endpoint: String, audience: Option<String> },
    /// `mcp`: the server at `endpoint`, the tool named after the skill.
    Mcp { endpoint: String, audience: Option<String> },
}

/// Why exporting or checking could not proceed.
#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    #[error("{0}")]
    Skill(#[from] PrepareError),
    #[error("{skill}: the exported implementation is not valid: {error}")]
    Implementation { skill: String, error: ContractError },
    #[error(
        "{first} and {second} would both be written to {path}: a package holds one version of a skill per file; \
         keep one version in this binary"
    )]
    SameFile { first: String, second: String, path: PathBuf },
    #[error("cannot write {path}: {error}")]
    Write { path: PathBuf, error: std::io::Error },
    #[error("the package folder {path} does not exist or is not a folder")]
    NoPackage { path: PathBuf },
}

/// One difference between the code and the package.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Difference {
    Missing { skill: String, path: PathBuf },
    Unreadable { skill: String, path: PathBuf, reason: String },
    Differs { skill: String, path: PathBuf, drift: Drift },
}

impl fmt::Display for Difference {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Missing { skill, path } => write!(f, "{skill}: no file {}", path.display()),
            Self::Unreadable { skill, path, reason } => {
                write!(f, "{skill}: {} cannot be read: {reason}", path.display())
            }
            Self::Differs { skill, path, drift } => {
                write!(f, "{skill}: {} differs from code ({drift})", path.display())
            }
        }
    }
}

/// The implementation a choice stands for, for one skill.
fn implementation(skill: &Skill, choice: Option<&ProtocolChoice>) -> Result<Option<Implementation>, ExportError> {
    let invalid = |error: ContractError| ExportError::Implementation { skill: skill.reference(), error };
    let options = NormalizeOptions { allow_placeholders: true, ..Default::default() };
    let auth = |audience: &Option<String>| audience.as_ref().map(|a| json!({"audience": a}));
    let document = match choice {
        None => return Ok(None),
        Some(ProtocolChoice::Local) => return skill.local_implementation().map(Some).map_err(ExportError::from),
        Some(ProtocolChoice::Http { endpoint, audience }) => json!({
            "protocol": "http",
            "endpoint": format!("{}/skills/{}", endpoint.trim_end_matches('/'), skill.reference()),
            "auth": auth(audience),
        }),
        Some(ProtocolChoice::Mcp { endpoint, audience }) => json!({
            "protocol": "mcp", "endpoint": endpoint, "entrypoint": skill.name().replace('/', "."), "auth": auth(audience),
        }),
    };
    Implementation::parse(&document, &options).map(Some).map_err(invalid)
}

/// `skills/<name>.yaml` inside the package.
pub fn skill_file(package: &Path, skill: &Skill) -> PathBuf {
    package.join("skills").join(format!("{}.yaml", skill.name().replace('/', ".")))
}

/// The relative path from `from` (a folder) to `to`, both absolute.
fn relative(from: &Path, to: &Path) -> PathBuf {
    let from: Vec<Component> = from.components().collect();
    let to: Vec<Component> = to.components().collect();
    let common = from.iter().zip(&to).take_while(|(a, b)| a == b).count();
    let mut path = PathBuf::new();
    for _ in common..from.len() {
        path.push("..");
    }
    for part in &to[common..] {
        path.push(part);
    }
    path
}

/// The `yaml-language-server` hint: the closest `schema/v1/object.schema.json` in a folder
/// above the file, relative to the file's folder.
pub fn schema_hint(file: &Path) -> Option<String> {
    let folder = std::path::absolute(file.parent()?).ok()?;
    folder.ancestors().find_map(|ancestor| {
        let schema = ancestor.join("schema/v1/object.schema.json");
        schema.is_file().then(|| relative(&folder, &schema).to_string_lossy().replace('\\', "/"))
    })
}

fn documents(
    skills: &[&'static Skill],
    package: &Path,
    choice: Option<&ProtocolChoice>,
) -> Result<Vec<(&'static Skill, PathBuf, Value)>, ExportError> {
    if !package.is_dir() {
        return Err(ExportError::NoPackage { path: package.to_path_buf() });
    }
    let mut out: Vec<(&'static Skill, PathBuf, Value)> = Vec::new();
    for skill in skills {
        let path = skill_file(package, skill);
        if let Some((other, _, _)) = out.iter().find(|(_, p, _)| *p == path) {
            return Err(ExportError::SameFile { first: other.reference(), second: skill.reference(), path });
        }
        let document = skill.document(implementation(skill, choice)?)?;
        out.push((skill, path, document));
    }
    Ok(out)
}

/// Writes a file whole or not at all: the text goes to a temporary file that is renamed over the
/// target, so an interrupted export never leaves half a document. There is no fsync: the files
/// are derived from the code and an export can always be run again, while a thousand fsyncs would
/// cost most of a second.
fn write_atomically(path: &Path, text: &str) -> Result<(), ExportError> {
    let fail = |error| ExportError::Write { path: path.to_path_buf(), error };
    let folder = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(folder).map_err(fail)?;
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    let temporary = folder.join(format!(".{name}.tmp-{}", std::process::id()));
    let result = std::fs::write(&temporary, text).and_then(|()| std::fs::rename(&temporary, path));
    if result.is_err() {
        let _ = std::fs::remove_file(&temporary);
    }
    result.map_err(fail)
}

/// What export did with one file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Written {
    /// The file was created or its text changed.
    Written(PathBuf),
    /// The file already held exactly this text and was left alone.
    Unchanged(PathBuf),
}

impl fmt::Display for Written {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Written(path) => write!(f, "written {}", path.display()),
            Self::Unchanged(path) => write!(f, "unchanged {}", path.display()),
        }
    }
}

/// Writes `skills/<name>.yaml` for every skill, leaving files that already hold the right text
/// untouched; returns what happened to each file, in skill order.
pub fn export(
    skills: &[&'static Skill],
    package: &Path,
    choice: Option<&ProtocolChoice>,
) -> Result<Vec<Written>, ExportError> {
    let documents = documents(skills, package, choice)?;
    let mut written = Vec::with_capacity(documents.len());
    for (_, path, document) in documents {
        let text = render_skill_file(&document, schema_hint(&path).as_deref());
        if std::fs::read(&path).is_ok_and(|existing| existing == text.as_bytes()) {
            written.push(Written::Unchanged(path));
        } else {
            write_atomically(&path, &text)?;
            written.push(Written::Written(path));
        }
    }
    Ok(written)
}

/// Every difference between what the code exports and what the package holds. Files in
/// `skills/` that belong to no skill of this binary are not reported.
pub fn check(
    skills: &[&'static Skill],
    package: &Path,
    choice: Option<&ProtocolChoice>,
) -> Result<Vec<Difference>, ExportError> {
    let mut differences = Vec::new();
    for (skill, path, wanted) in documents(skills, package, choice)? {
        let skill = skill.reference();
        let text = match std::fs::read_to_string(&path) {
            Ok(text) => text,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
                differences.push(Difference::Missing { skill, path });
                continue;
            }
            Err(error) => {
                differences.push(Difference::Unreadable { skill, path, reason: error.to_string() });
                continue;
            }
        };
        match yaml::from_str(&text) {
            Err(error) => differences.push(Difference::Unreadable { skill, path, reason: error.to_string() }),
            Ok(found) => match drift(&wanted, &found) {
                Drift::Same => {}
                drift => differences.push(Difference::Differs { skill, path, drift }),
            },
        }
    }
    Ok(differences)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_paths_climb_and_descend() {
        assert_eq!(
            relative(Path::new("/a/b/skills"), Path::new("/a/schema/v1/object.schema.json")),
            PathBuf::from("../../schema/v1/object.schema.json")
        );
        assert_eq!(relative(Path::new("/a/skills"), Path::new("/a/skills/x.json")), PathBuf::from("x.json"));
    }
}
