//! What `skill-sdk package test` hands the scenario runner: the package and the ones it requires
//! as `packages:apply` bodies (every skill version to publish on a scratch core), and its test
//! files (`tests/**/*.test.yaml`) read as YAML.

use std::path::Path;

use skill_api::{ApplyRequest, ObjectRef, PackageRef, PackageTestRequest, PublishRequest, TestFile};
use skill_contract::package::{Package, PackageProblem};
use skill_contract::{NormalizeOptions, Skill};

use crate::load::Loaded;

/// A test file that could not be read as YAML, or at all: the file and why.
#[derive(Debug, Clone, PartialEq)]
pub struct UnreadTest {
    pub file: String,
    pub message: String,
}

/// The test files of the package in `folder`, each read as YAML (what cannot be read is kept
/// apart, to be reported as a failed test).
pub fn test_files(folder: &Path) -> Result<(Vec<TestFile>, Vec<UnreadTest>), String> {
    let root = folder
        .canonicalize()
        .map_err(|error| format!("cannot open the package folder {}: {error}", folder.display()))?;
    let (texts, problems) =
        crate::files::read_tests(&root).map_err(|error| format!("cannot read {}/tests: {error}", root.display()))?;
    let mut unread: Vec<UnreadTest> = problems
        .iter()
        .map(|p: &PackageProblem| UnreadTest { file: p.file.clone(), message: p.message.clone() })
        .collect();
    let mut files = Vec::new();
    for text in texts {
        match skill_contract::yaml::from_str(&text.text) {
            Ok(document) => files.push(TestFile { file: text.relative, document }),
            Err(error) => unread.push(UnreadTest { file: text.relative, message: format!("not YAML: {error}") }),
        }
    }
    Ok((files, unread))
}

/// The scratch core's packages: the required ones (in the order they are needed), then the
/// package itself; every skill's endpoint variable filled from the environment, its default, or
/// a stand-in address (no skill runs: mocks answer the calls).
pub fn test_request(loaded: &Loaded, tests: Vec<TestFile>, allow_unmocked: bool) -> Result<PackageTestRequest, String> {
    let mut packages = Vec::new();
    for required in loaded.required.iter().rev() {
        packages.push(apply_request(required, &loaded.install_hash)?);
    }
    packages.push(apply_request(&loaded.package, &loaded.install_hash)?);
    Ok(PackageTestRequest { packages, tests, allow_unmocked })
}

fn apply_request(package: &Package, install_hash: &str) -> Result<ApplyRequest, String> {
    let one = Loaded {
        package: package.clone(),
        required: Vec::new(),
        problems: Vec::new(),
        install_hash: install_hash.to_owned(),
    };
    let lookup = |name: &str| {
        std::env::var(name)
            .ok()
            .filter(|value| !value.is_empty())
            .or_else(|| package.variables.get(name).and_then(|declared| declared.default.clone()))
            .or_else(|| Some(format!("https://{}.test.invalid", name.to_lowercase().replace('_', "-"))))
    };
    let mut create = Vec::new();
    for object in package.objects.iter().filter(|object| object.kind == "Skill") {
        let document = crate::fill(package, object, &lookup)
            .map_err(|problems| problems.iter().map(ToString::to_string).collect::<Vec<_>>().join("\n"))?;
        let skill = Skill::from_document(&document, &NormalizeOptions::default())
            .map_err(|error| format!("{}: {error}", object.file))?;
        create.push(PublishRequest::from_skill(&skill));
    }
    let mut objects: Vec<ObjectRef> = package
        .objects
        .iter()
        .filter(|object| matches!(object.kind.as_str(), "Skill" | "Agent"))
        .map(|object| ObjectRef { kind: object.kind.clone(), key: object.key.clone() })
        .collect();
    objects.sort();
    objects.dedup();
    Ok(ApplyRequest {
        package: PackageRef { key: package.key.clone(), version: package.version.clone() },
        install_hash: install_hash.to_owned(),
        create,
        patch: Vec::new(),
        objects,
        adopt: Vec::new(),
        settings_schema: package.settings.clone(),
        task_types: crate::task_type_requests(&one)?,
        artifact_types: crate::artifact_type_requests(&one)?,
        agents: crate::agent_requests(&one)?,
        rules: crate::rule_requests(&one)?,
        processes: crate::process_requests(&one)?,
    })
}
