//! Packages: the manifest (`package.yaml`) and the catalog objects beside it, read from documents
//! already parsed (the caller reads the files) and checked offline ([`check`]). Planning them
//! against a core is the `skill-package` crate's.
//!
//! Every problem names its file, the path inside the file, a stable code and a hint.

mod check;
mod variables;

use serde_json::Value;

pub use check::check;
pub use variables::{Variable, VariableKind, endpoint_variable, fill, is_reserved_variable, placeholder_problems};

/// The kinds of catalog object a package may hold.
pub const KINDS: &[&str] = &[
    "KnowledgePack",
    "WorkspaceType",
    "Capability",
    "Role",
    "Skill",
    "ArtifactType",
    "TaskType",
    "Agent",
    "ProjectTemplate",
    "Calendar",
    "Process",
    "WorkRule",
    "NotificationRule",
];

/// The file of a package's manifest.
pub const MANIFEST: &str = "package.yaml";

/// Whether `key` is a package key: 1 to 100 letters, digits, `-`, `_` and `.`, starting with a
/// letter or digit, never `..` — so a key names a folder beside the package and never a path.
pub fn is_package_key(key: &str) -> bool {
    (1..=100).contains(&key.len())
        && key.starts_with(|c: char| c.is_ascii_alphanumeric())
        && key.chars().all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
        && !key.contains("..")
}

const KEY_RULE: &str = "1 to 100 letters, digits, `-`, `_` and `.`, starting with a letter or digit, no `..`";

/// One YAML file of a package: its path relative to the package folder and what it held.
#[derive(Debug, Clone, PartialEq)]
pub struct PackageFile {
    pub path: String,
    /// The document, or why it could not be read.
    pub document: Result<Value, String>,
}

/// A package read from its files.
#[derive(Debug, Clone, PartialEq)]
pub struct Package {
    pub key: String,
    pub version: String,
    /// The keys of the packages it requires.
    pub requires: Vec<String>,
    /// The installation variables it declares (`spec.variables`), by name.
    pub variables: std::collections::BTreeMap<String, Variable>,
    /// The JSON Schema of the package's settings (`spec.settings`): the values an operator sets
    /// in the core and every call of the package's skills receives.
    pub settings: Option<Value>,
    pub objects: Vec<PackageObject>,
}

/// One catalog object of a package.
#[derive(Debug, Clone, PartialEq)]
pub struct PackageObject {
    pub file: String,
    pub kind: String,
    pub key: String,
    pub document: Value,
}

impl PackageObject {
    /// The document's `spec`, as written (null when it has none): what each kind's reader reads.
    pub fn spec(&self) -> &Value {
        self.document.get("spec").unwrap_or(&Value::Null)
    }

    /// `spec.version` when it is a string.
    pub fn version(&self) -> Option<&str> {
        self.document.pointer("/spec/version").and_then(Value::as_str)
    }

    /// How the object is identified: `Skill/name@version`, `Kind/key` otherwise.
    pub fn identity(&self) -> String {
        match (self.kind.as_str(), self.version()) {
            ("Skill", Some(version)) => format!("Skill/{}@{version}", self.key),
            _ => format!("{}/{}", self.kind, self.key),
        }
    }
}

/// One thing wrong with a package.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PackageProblem {
    pub file: String,
    /// Where in the file: `spec.execution.skill`; empty for the whole file.
    pub path: String,
    pub code: &'static str,
    pub message: String,
    /// What to do about it.
    pub hint: String,
}

impl PackageProblem {
    pub(crate) fn new(file: &str, path: &str, code: &'static str, message: String, hint: &str) -> Self {
        Self { file: file.to_owned(), path: path.to_owned(), code, message, hint: hint.to_owned() }
    }

    /// A problem the document's own reader found, in `file`.
    pub(crate) fn of(file: &str, found: &crate::DocumentProblem) -> Self {
        Self::new(file, &found.path, found.code.as_str(), found.message.clone(), &found.hint)
    }
}

impl std::fmt::Display for PackageProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let at = if self.path.is_empty() { String::new() } else { format!(" at {}", self.path) };
        write!(f, "{}{at}: {} [{}]\n  hint: {}", self.file, self.message, self.code, self.hint)
    }
}

/// Reads a package from its files (`package.yaml` and every object file). `folder` is the
/// package folder's name, which must equal the manifest's key.
pub fn read(folder: &str, files: &[PackageFile]) -> (Option<Package>, Vec<PackageProblem>) {
    let mut problems = Vec::new();
    let Some(manifest) = files.iter().find(|file| file.path == MANIFEST) else {
        problems.push(PackageProblem::new(
            MANIFEST,
            "",
            "invalid_package",
            "the folder has no package.yaml".to_owned(),
            "create package.yaml: {apiVersion: taimen.ai/v1, kind: Package, key: <folder name>, spec: {version: '1.0.0'}}",
        ));
        return (None, problems);
    };
    let package = match &manifest.document {
        Err(reason) => {
            problems.push(unreadable(MANIFEST, reason));
            None
        }
        Ok(document) => read_manifest(folder, document, &mut problems),
    };
    let mut objects = Vec::new();
    for file in files.iter().filter(|file| file.path != MANIFEST) {
        match &file.document {
            Err(reason) => problems.push(unreadable(&file.path, reason)),
            Ok(document) => {
                if let Some(object) = read_object(&file.path, document, &mut problems) {
                    objects.push(object);
                }
            }
        }
    }
    (package.map(|package| Package { objects, ..package }), problems)
}

fn unreadable(file: &str, reason: &str) -> PackageProblem {
    PackageProblem::new(
        file,
        "",
        "invalid_yaml",
        format!("the file is not readable YAML: {reason}"),
        "fix the YAML syntax",
    )
}

fn read_manifest(folder: &str, document: &Value, problems: &mut Vec<PackageProblem>) -> Option<Package> {
    let mut bad = |path: &str, message: String, hint: &str| {
        problems.push(PackageProblem::new(MANIFEST, path, "invalid_package", message, hint));
    };
    if document.get("apiVersion").and_then(Value::as_str) != Some(crate::API_VERSION)
        || document.get("kind").and_then(Value::as_str) != Some("Package")
    {
        bad(
            "",
            "package.yaml is not a package manifest".to_owned(),
            "start it with apiVersion: taimen.ai/v1 and kind: Package",
        );
        return None;
    }
    let Some(key) = document.get("key").and_then(Value::as_str) else {
        bad("key", "the manifest has no key".to_owned(), "add key: <the folder's name>");
        return None;
    };
    if !is_package_key(key) {
        bad("key", format!("{key:?} is not a package key"), &format!("use {KEY_RULE}"));
        return None;
    }
    if key != folder {
        bad(
            "key",
            format!("the package key {key:?} differs from its folder's name {folder:?}"),
            "rename the folder or the key so they are equal",
        );
    }
    let Some(version) = document.pointer("/spec/version").and_then(Value::as_str) else {
        bad(
            "spec.version",
            "the manifest has no version".to_owned(),
            "add spec.version as a quoted string, e.g. '1.0.0'",
        );
        return None;
    };
    let mut requires = Vec::new();
    if let Some(list) = document.pointer("/spec/requires") {
        let Some(items) = list.as_array() else {
            bad("spec.requires", "requires is not a list".to_owned(), "write requires: [other-package, ...]");
            return None;
        };
        for (index, item) in items.iter().enumerate() {
            match item.as_str().or_else(|| item.get("package").and_then(Value::as_str)) {
                Some(required) if !is_package_key(required) => bad(
                    &format!("spec.requires[{index}]"),
                    format!("{required:?} is not a package key: a required package is named by its key, never a path"),
                    &format!("write the key of a package whose folder is beside this one ({KEY_RULE})"),
                ),
                Some(required) => requires.push(required.to_owned()),
                None => bad(
                    &format!("spec.requires[{index}]"),
                    "a requirement is a package key or {package, version}".to_owned(),
                    "write the key of the required package",
                ),
            }
        }
    }
    let variables = variables::read(document.pointer("/spec/variables"), problems);
    let settings = document.pointer("/spec/settings").and_then(|schema| settings_schema(schema, problems));
    Some(Package {
        key: key.to_owned(),
        version: version.to_owned(),
        requires,
        variables,
        settings,
        objects: Vec::new(),
    })
}

/// `spec.settings`, when it is a self-contained JSON Schema of an object without secrets (a
/// problem otherwise).
fn settings_schema(schema: &Value, problems: &mut Vec<PackageProblem>) -> Option<Value> {
    let mut bad = |message: String, hint: &str| {
        problems.push(PackageProblem::new(MANIFEST, "spec.settings", "invalid_package_settings", message, hint));
        None
    };
    if schema.get("type").and_then(Value::as_str) != Some("object") {
        return bad(
            "the settings schema must describe an object (type: object)".to_owned(),
            "write spec.settings as a JSON Schema with type: object and the settings as its properties",
        );
    }
    if let Err(error) = crate::schema::check_schema_document(schema) {
        return bad(format!("the settings schema is not a valid JSON Schema: {error}"), "fix the schema");
    }
    if let Some(found) = crate::find_secret_material(schema, "spec.settings") {
        return bad(
            format!("the settings schema holds what looks like a secret at {found}"),
            "settings are not secrets: keep secrets in the secret store and name them here",
        );
    }
    Some(schema.clone())
}

fn read_object(file: &str, document: &Value, problems: &mut Vec<PackageProblem>) -> Option<PackageObject> {
    let kind = document.get("kind").and_then(Value::as_str);
    let key = document.get("key").and_then(Value::as_str);
    let (Some(kind), Some(key)) = (kind, key) else {
        problems.push(PackageProblem::new(
            file,
            "",
            "invalid_object",
            "a catalog object needs apiVersion, kind, key and spec".to_owned(),
            "start the file with apiVersion: taimen.ai/v1, kind: <Kind>, key: <key>",
        ));
        return None;
    };
    if !KINDS.contains(&kind) {
        problems.push(PackageProblem::new(
            file,
            "kind",
            "unknown_kind",
            format!("{kind:?} is not a kind of catalog object"),
            &format!("use one of {}", KINDS.join(", ")),
        ));
        return None;
    }
    if !document.get("spec").is_some_and(Value::is_object) {
        problems.push(PackageProblem::new(
            file,
            "spec",
            "invalid_object",
            "the object has no spec mapping".to_owned(),
            "add spec: {...}",
        ));
        return None;
    }
    Some(PackageObject {
        file: file.to_owned(),
        kind: kind.to_owned(),
        key: key.to_owned(),
        document: document.clone(),
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn manifests_name_their_problems() {
        let files = [PackageFile {
            path: MANIFEST.into(),
            document: Ok(json!({"apiVersion": "taimen.ai/v1", "kind": "Package", "key": "claims", "spec": {}})),
        }];
        let (package, problems) = read("other", &files);
        assert!(package.is_none());
        let paths: Vec<&str> = problems.iter().map(|p| p.path.as_str()).collect();
        assert_eq!(paths, ["key", "spec.version"]);
        let (_, problems) = read("x", &[]);
        assert_eq!(problems[0].code, "invalid_package");
    }

    #[test]
    fn a_required_package_is_a_key_never_a_path() {
        for key in ["claims", "crm-core", "a.b_c", "7up"] {
            assert!(is_package_key(key), "{key}");
        }
        for key in ["", "/etc", "../x", "..", "a/b", "a\\b", ".hidden", "a..b", "-x", "ü", &"k".repeat(101)] {
            assert!(!is_package_key(key), "{key}");
        }
        let files = [PackageFile {
            path: MANIFEST.into(),
            document: Ok(json!({"apiVersion": "taimen.ai/v1", "kind": "Package", "key": "claims",
                                "spec": {"version": "1", "requires": ["crm", "/etc", {"package": "../../x"}]}})),
        }];
        let (package, problems) = read("claims", &files);
        assert_eq!(package.expect("read").requires, ["crm"]);
        let paths: Vec<&str> = problems.iter().map(|p| p.path.as_str()).collect();
        assert_eq!(paths, ["spec.requires[1]", "spec.requires[2]"]);
        let files = [PackageFile {
            path: MANIFEST.into(),
            document: Ok(
                json!({"apiVersion": "taimen.ai/v1", "kind": "Package", "key": "../claims", "spec": {"version": "1"}}),
            ),
        }];
        assert!(read("../claims", &files).0.is_none());
    }
}
