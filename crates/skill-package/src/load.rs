//! A package folder read from disk: its YAML files (in path order, hashed into the install
//! hash), the packages it requires from folders beside it, and every problem the offline check
//! finds.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};
use skill_contract::package::{self, MANIFEST, Package, PackageFile, PackageProblem};

use crate::files::{self, FileText};

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
        // The manifest reader keeps only keys (never a path); checked again where it is joined.
        let beside = folder.parent().map(|parent| parent.join(&key)).unwrap_or_else(|| PathBuf::from(&key));
        let readable = package::is_package_key(&key).then(|| beside.canonicalize().ok()).flatten();
        match readable.map(|beside| read_one(&beside)) {
            Some(Ok((Some(found), _, _))) => {
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
    let (texts, mut problems) =
        files::read_package(folder).map_err(|error| format!("cannot read {}: {error}", folder.display()))?;
    let mut files = Vec::new();
    let mut hash = Sha256::new();
    for FileText { relative, text } in texts {
        hash.update(relative.as_bytes());
        hash.update([0]);
        hash.update(text.as_bytes());
        hash.update([0]);
        let document = skill_contract::yaml::from_str(&text).map_err(|error| error.to_string());
        files.push(PackageFile { path: relative, document });
    }
    let name = match folder.file_name().map(|name| name.to_str()) {
        Some(Some(name)) => name,
        Some(None) => {
            return Err(format!(
                "the package folder {} has a name that is not UTF-8: name the folder as the package's key",
                folder.display()
            ));
        }
        None => "",
    };
    let (package, read_problems) = package::read(name, &files);
    problems.extend(read_problems);
    let digest: String = hash.finalize().iter().map(|byte| format!("{byte:02x}")).collect();
    Ok((package, problems, digest))
}

/// Every problem of the package: reading, requirements, the offline check, and the conditions
/// its rules are for (compiled as the core compiles them).
pub fn problems(loaded: &Loaded) -> Vec<PackageProblem> {
    let mut all = loaded.problems.clone();
    all.extend(package::check(&loaded.package, &loaded.required));
    for object in loaded.package.objects.iter().filter(|object| object.kind == "WorkRule") {
        let Some(when) = object.document.pointer("/spec/on/when").and_then(serde_json::Value::as_str) else {
            continue;
        };
        if let Err(error) = skill_conditions::Condition::compile_reading(when, &["fact"]) {
            all.push(PackageProblem {
                file: object.file.clone(),
                path: "spec.on.when".to_owned(),
                code: "invalid_condition",
                message: format!("the condition does not compile: {error}"),
                hint: "write a CEL expression over `fact` that is true or false, e.g. fact.data.amount > 100"
                    .to_owned(),
            });
        }
    }
    for object in loaded.package.objects.iter().filter(|object| object.kind == "Process") {
        let Ok(spec) = skill_contract::process::read_spec(object.spec()) else { continue };
        for (path, source, reads_fact) in spec.conditions() {
            let names: &[&str] = if reads_fact {
                &["fact", "input", "vars", "steps", "instance"]
            } else {
                &["input", "vars", "steps", "instance"]
            };
            if let Err(error) = skill_conditions::Condition::compile_reading(source, names) {
                all.push(PackageProblem {
                    file: object.file.clone(),
                    path,
                    code: "invalid_condition",
                    message: format!("the condition does not compile: {error}"),
                    hint: format!("write a CEL expression over {} that is true or false", names.join(", ")),
                });
            }
        }
    }
    all
}

#[cfg(test)]
mod tests {
    use std::ffi::OsStr;
    use std::os::unix::ffi::OsStrExt;

    use super::*;

    /// A name that is not UTF-8 is reported as such, for the folder and for a file in it.
    #[test]
    fn names_that_are_not_utf8_are_named_as_the_cause() {
        let base = std::env::temp_dir().join(format!("skill-package-load-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        let manifest = "apiVersion: taimen.ai/v1\nkind: Package\nkey: claims\nspec:\n  version: 1.0.0\n";
        let folder = base.join(OsStr::from_bytes(b"claims\xff"));
        std::fs::create_dir_all(&folder).expect("folder");
        std::fs::write(folder.join("package.yaml"), manifest).expect("manifest");
        let error = load(&folder).expect_err("refused");
        assert!(error.contains("has a name that is not UTF-8"), "{error}");

        let folder = base.join("claims");
        std::fs::create_dir_all(folder.join("skills")).expect("folder");
        std::fs::write(folder.join("package.yaml"), manifest).expect("manifest");
        std::fs::write(folder.join("skills").join(OsStr::from_bytes(b"a\xff.yaml")), "kind: Skill\n").expect("file");
        let loaded = load(&folder).expect("loaded");
        let problems: Vec<(&str, &str)> = loaded.problems.iter().map(|p| (p.code, p.message.as_str())).collect();
        assert_eq!(problems, [("unreadable_file", "the file name is not UTF-8")]);
        let _ = std::fs::remove_dir_all(&base);
    }
}
