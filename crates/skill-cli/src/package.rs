//! `skill-sdk package check|plan|apply`: a package folder read from disk, checked offline, and
//! installed into a core — every skill version created, patched, moved or left as it is, or the
//! whole install refused when a published contract would have to change.

mod core;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use skill_contract::package::{self, MANIFEST, Package, PackageFile, PackageProblem, SkillPlan};
use skill_contract::{NormalizeOptions, Skill};

pub use self::core::Core;

/// Folders that hold no catalog objects.
const SKIPPED: &[&str] = &["schemas", ".layout", "integration", "target", "tests", "node_modules"];

/// A package as read from disk, with the packages it requires (transitively).
#[derive(Debug)]
pub struct Loaded {
    pub package: Package,
    pub required: Vec<Package>,
    pub problems: Vec<PackageProblem>,
    /// SHA-256 over every file read, in path order: equal for equal packages.
    pub install_hash: String,
}

/// Reads the package in `folder` and the packages it requires, from folders beside it.
pub fn load(folder: &Path) -> Result<Loaded, String> {
    let folder = folder
        .canonicalize()
        .map_err(|error| format!("cannot open the package folder {}: {error}", folder.display()))?;
    let (package, mut problems, install_hash) = read_one(&folder)?;
    let Some(package) = package else {
        return Err(problems.iter().map(ToString::to_string).collect::<Vec<_>>().join("\n"));
    };
    let mut required = Vec::new();
    let mut seen: BTreeSet<String> = BTreeSet::from([package.key.clone()]);
    let mut pending: Vec<(String, String)> =
        package.requires.iter().map(|key| (key.clone(), package.key.clone())).collect();
    while let Some((key, by)) = pending.pop() {
        if !seen.insert(key.clone()) {
            continue;
        }
        let beside = folder.parent().map(|parent| parent.join(&key)).unwrap_or_else(|| PathBuf::from(&key));
        match read_one(&beside) {
            Ok((Some(found), _, _)) => {
                pending.extend(found.requires.iter().map(|next| (next.clone(), found.key.clone())));
                required.push(found);
            }
            _ => problems.push(PackageProblem {
                file: MANIFEST.to_owned(),
                path: "spec.requires".to_owned(),
                code: "missing_required_package",
                message: format!("{by} requires {key}, which is not a readable package at {}", beside.display()),
                hint: "put the required package's folder beside this one".to_owned(),
            }),
        }
    }
    Ok(Loaded { package, required, problems, install_hash })
}

type ReadOne = (Option<Package>, Vec<PackageProblem>, String);

fn read_one(folder: &Path) -> Result<ReadOne, String> {
    let mut paths = Vec::new();
    collect(folder, folder, &mut paths).map_err(|error| format!("cannot read {}: {error}", folder.display()))?;
    paths.sort();
    let mut files = Vec::new();
    let mut hash = Sha256::new();
    for relative in paths {
        let text = std::fs::read_to_string(folder.join(&relative))
            .map_err(|error| format!("cannot read {relative}: {error}"))?;
        hash.update(relative.as_bytes());
        hash.update([0]);
        hash.update(text.as_bytes());
        hash.update([0]);
        let document = skill_contract::yaml::from_str(&text).map_err(|error| error.to_string());
        files.push(PackageFile { path: relative, document });
    }
    let name = folder.file_name().and_then(|name| name.to_str()).unwrap_or_default();
    let (package, problems) = package::read(name, &files);
    let digest: String = hash.finalize().iter().map(|byte| format!("{byte:02x}")).collect();
    Ok((package, problems, digest))
}

fn collect(root: &Path, folder: &Path, out: &mut Vec<String>) -> std::io::Result<()> {
    for entry in std::fs::read_dir(folder)? {
        let entry = entry?;
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().into_owned();
        if entry.file_type()?.is_dir() {
            if !name.starts_with('.') && !SKIPPED.contains(&name.as_str()) {
                collect(root, &path, out)?;
            }
        } else if name.ends_with(".yaml") || name.ends_with(".yml") {
            let relative = path.strip_prefix(root).unwrap_or(&path).to_string_lossy().replace('\\', "/");
            out.push(relative);
        }
    }
    Ok(())
}

/// Every problem of the package: reading, requirements, and the offline check.
pub fn problems(loaded: &Loaded) -> Vec<PackageProblem> {
    let mut all = loaded.problems.clone();
    all.extend(package::check(&loaded.package, &loaded.required));
    all
}

/// One line of a plan.
#[derive(Debug, Clone)]
pub struct Change {
    pub key: String,
    pub version: String,
    pub plan: SkillPlan,
}

impl Change {
    pub fn operation(&self) -> &'static str {
        match &self.plan {
            SkillPlan::Create { .. } => "create",
            SkillPlan::Patch { moved_from: Some(_), fields, .. } if fields.len() == 1 => "move",
            SkillPlan::Patch { .. } => "patch",
            SkillPlan::Unchanged => "unchanged",
            SkillPlan::Refuse { .. } => "refuse",
        }
    }

    pub fn to_json(&self) -> Value {
        let mut out = json!({"kind": "Skill", "key": self.key, "version": self.version, "operation": self.operation()});
        match &self.plan {
            SkillPlan::Patch { fields, row_version, moved_from, body, .. } => {
                out["fields"] = json!(fields);
                out["expected"] = json!({"rowVersion": row_version});
                if let Some(from) = moved_from {
                    out["endpoint"] = json!({"from": from, "to": body["endpoint"]});
                }
            }
            SkillPlan::Refuse { fields } => {
                out["fields"] = json!(fields);
                out["message"] = json!(refusal(fields));
            }
            _ => {}
        }
        out
    }

    pub fn describe(&self) -> String {
        let name = format!("{}@{}", self.key, self.version);
        match &self.plan {
            SkillPlan::Create { .. } => format!("  + create     {name}"),
            SkillPlan::Patch { fields, moved_from, body, .. } => {
                let mut line = format!("  ~ {:<10} {name} ({})", self.operation(), fields.join(", "));
                if let Some(from) = moved_from {
                    line.push_str(&format!(": endpoint {} → {}", text(from), text(&body["endpoint"])));
                }
                line
            }
            SkillPlan::Unchanged => format!("  = unchanged  {name}"),
            SkillPlan::Refuse { fields } => format!("  ! refused    {name}: {}", refusal(fields)),
        }
    }
}

fn text(value: &Value) -> String {
    value.as_str().map_or_else(|| value.to_string(), str::to_owned)
}

/// The message of a refusal.
pub fn refusal(fields: &[String]) -> String {
    format!("the contract of a published version is immutable: raise spec.version (changed: {})", fields.join(", "))
}

/// The plan of every skill of the package against `core`. `${VAR}` placeholders are filled
/// from the environment first.
pub async fn plan(loaded: &Loaded, core: &Core) -> Result<Vec<Change>, String> {
    let mut changes = Vec::new();
    for object in loaded.package.objects.iter().filter(|object| object.kind == "Skill") {
        let (document, missing) = package::substitute(&object.document, &|name| std::env::var(name).ok());
        if !missing.is_empty() {
            return Err(format!(
                "{}: set the installation variables {} before planning",
                object.file,
                missing.join(", ")
            ));
        }
        let skill = Skill::from_document(&document, &NormalizeOptions::default())
            .map_err(|error| format!("{}: {error}", object.file))?;
        let reference = skill.skill_ref().to_string();
        let published = core.skill(&reference).await?;
        changes.push(Change {
            key: skill.name().as_str().to_owned(),
            version: skill.version().as_str().to_owned(),
            plan: package::plan_skill(&skill, published.as_ref()),
        });
    }
    Ok(changes)
}

/// What an apply did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Applied {
    /// The changes were written and the install recorded.
    Done,
    /// Nothing to write: every version as wanted and the same install recorded.
    Already,
}

/// Carries out `changes` (which must hold no refusal) and records the install; `done` is told
/// of each change written.
pub async fn apply(
    loaded: &Loaded,
    core: &Core,
    changes: &[Change],
    mut done: impl FnMut(&Change),
) -> Result<Applied, String> {
    if let Some(change) = changes.iter().find(|change| matches!(change.plan, SkillPlan::Refuse { .. })) {
        return Err(format!("{}@{} is refused: {}", change.key, change.version, change.describe()));
    }
    let writes: Vec<&Change> = changes.iter().filter(|change| change.operation() != "unchanged").collect();
    let installed = core.install(&loaded.package.key).await?;
    let same_install = installed.as_ref().is_some_and(|install| {
        install["installHash"] == loaded.install_hash.as_str() && install["version"] == loaded.package.version.as_str()
    });
    if writes.is_empty() && same_install {
        return Ok(Applied::Already);
    }
    for change in writes {
        let reference = format!("{}@{}", change.key, change.version);
        match &change.plan {
            SkillPlan::Create { body } => core.create(&reference, body).await?,
            SkillPlan::Patch { id, row_version, body, .. } => core.patch(&reference, id, *row_version, body).await?,
            SkillPlan::Unchanged | SkillPlan::Refuse { .. } => {}
        }
        done(change);
    }
    let mut objects: Vec<Value> = loaded
        .package
        .objects
        .iter()
        .filter(|object| object.kind == "Skill")
        .map(|object| json!({"kind": "Skill", "key": object.key}))
        .collect();
    objects.dedup();
    let record = json!({
        "package": {"key": loaded.package.key, "version": loaded.package.version},
        "installHash": loaded.install_hash,
        "objects": objects,
    });
    core.record(&record).await?;
    Ok(Applied::Done)
}
