//! Installation variables: what a package declares in `package.yaml`
//! (`spec.variables: {NAME: {kind, description, default?, example?}}`) and the one place a
//! package may use one — the beginning of a skill's endpoint,
//! `spec.contract.implementation.endpoint: ${NAME}/skills/x@1`.
//!
//! A placeholder anywhere else is refused, and so is one naming a variable the package did not
//! declare: filling every `${…}` of every string from the installer's environment would publish
//! whatever that environment holds (the core token included) where every reader of the catalog
//! sees it. The platform's own variables (`SKILL_…`) cannot be declared at all.

use std::collections::BTreeMap;

use serde_json::Value;

use super::{MANIFEST, Package, PackageObject, PackageProblem};

/// The one field of a package object that may begin with a placeholder.
const ENDPOINT: &str = "spec.contract.implementation.endpoint";
/// The prefix of the platform's own variables (the core's address and token, the hosts' token
/// settings, model keys), which no package may declare.
const RESERVED_PREFIX: &str = "SKILL_";

/// One declared installation variable.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Variable {
    /// What kind of value it holds (`spec.variables.NAME.kind`).
    pub kind: VariableKind,
    /// What it is for (`spec.variables.NAME.description`).
    pub description: String,
    /// The value used when the installation does not set one.
    pub default: Option<String>,
}

/// What an installation variable holds. Every one is in the environment of the package's skill
/// host (`ctx.config(NAME)`); a `url` may also begin a skill's endpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum VariableKind {
    /// An origin such as `https://claims.example` (the default kind).
    #[default]
    Url,
    /// A folder the host reads or writes; an installation makes it (`skill-core dev` makes one in
    /// its data folder).
    Folder,
    /// Any other text the host reads.
    Text,
}

impl VariableKind {
    /// The words `kind` takes.
    pub const WORDS: [&'static str; 3] = ["url", "folder", "text"];

    fn parse(word: &str) -> Option<Self> {
        match word {
            "url" => Some(Self::Url),
            "folder" => Some(Self::Folder),
            "text" => Some(Self::Text),
            _ => None,
        }
    }
}

/// Whether `name` is one of the platform's own variables.
pub fn is_reserved_variable(name: &str) -> bool {
    name.to_ascii_uppercase().starts_with(RESERVED_PREFIX)
}

fn is_name(text: &str) -> bool {
    let mut chars = text.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
        && text.len() <= 100
}

/// Reads `spec.variables` of the manifest; what is wrong with it becomes a problem and the
/// entry is left out.
pub(super) fn read(value: Option<&Value>, problems: &mut Vec<PackageProblem>) -> BTreeMap<String, Variable> {
    let mut variables = BTreeMap::new();
    let Some(value) = value else { return variables };
    let mut bad = |path: String, code: &'static str, message: String, hint: &str| {
        problems.push(PackageProblem::new(MANIFEST, &path, code, message, hint));
    };
    let Some(map) = value.as_object() else {
        bad(
            "spec.variables".into(),
            "invalid_package",
            "variables is not a mapping".into(),
            "write variables: {NAME: {kind: url, description: ...}}",
        );
        return variables;
    };
    for (name, entry) in map {
        let path = format!("spec.variables.{name}");
        if !is_name(name) {
            bad(
                path,
                "invalid_package",
                format!("{name:?} is not a variable name"),
                "use letters, digits and `_`, not starting with a digit (at most 100), e.g. CLAIMS_SKILLS_URL",
            );
            continue;
        }
        if is_reserved_variable(name) {
            bad(
                path,
                "reserved_variable",
                format!(
                    "{name} is one of the platform's own variables ({RESERVED_PREFIX}…), which a package cannot use"
                ),
                "name the variable after the package, e.g. CLAIMS_SKILLS_URL",
            );
            continue;
        }
        let Some(entry) = entry.as_object() else {
            bad(
                path,
                "invalid_package",
                format!("variable {name} is not a mapping"),
                "write {kind, description, default?}",
            );
            continue;
        };
        let default = match entry.get("default") {
            None | Some(Value::Null) => None,
            Some(Value::String(text)) => Some(text.clone()),
            Some(_) => {
                bad(
                    format!("{path}.default"),
                    "invalid_package",
                    format!("the default of {name} is not a string"),
                    "quote the default value",
                );
                continue;
            }
        };
        let kind = match entry.get("kind") {
            None | Some(Value::Null) => VariableKind::Url,
            Some(word) => match word.as_str().and_then(VariableKind::parse) {
                Some(kind) => kind,
                None => {
                    bad(
                        format!("{path}.kind"),
                        "invalid_package",
                        format!("the kind of {name} is {word}: it is one of {}", VariableKind::WORDS.join(", ")),
                        "url for an origin (what an endpoint may begin with), folder for a folder the host uses, text for anything else",
                    );
                    continue;
                }
            },
        };
        let description = entry.get("description").and_then(Value::as_str).unwrap_or_default().to_owned();
        variables.insert(name.clone(), Variable { kind, description, default });
    }
    variables
}

/// A placeholder found in a package object.
struct Found {
    path: String,
    /// The variable it names, when it is the one placeholder allowed there.
    allowed: Option<String>,
}

/// Every string of `object` holding `${`, with its path.
fn placeholders(object: &PackageObject) -> Vec<Found> {
    let mut found = Vec::new();
    walk(&object.document, String::new(), &mut |path, text| {
        if !text.contains("${") {
            return;
        }
        let allowed = (object.kind == "Skill" && path == ENDPOINT).then(|| leading_variable(text)).flatten();
        found.push(Found { path: path.to_owned(), allowed: allowed.map(str::to_owned) });
    });
    found
}

/// The `NAME` of a string that is `${NAME}` followed by text without another `${`.
fn leading_variable(text: &str) -> Option<&str> {
    let (name, tail) = text.strip_prefix("${")?.split_once('}')?;
    (is_name(name) && !tail.contains("${")).then_some(name)
}

fn walk(value: &Value, path: String, visit: &mut dyn FnMut(&str, &str)) {
    match value {
        Value::String(text) => visit(&path, text),
        Value::Array(items) => {
            for (index, item) in items.iter().enumerate() {
                walk(item, format!("{path}[{index}]"), visit);
            }
        }
        Value::Object(map) => {
            for (key, item) in map {
                let inner = if path.is_empty() { key.clone() } else { format!("{path}.{key}") };
                walk(item, inner, visit);
            }
        }
        _ => {}
    }
}

/// The problems of the placeholders of `object`: one outside the endpoint, or one naming a
/// variable `package` does not declare.
fn object_problems(package: &Package, object: &PackageObject) -> Vec<PackageProblem> {
    let mut problems = Vec::new();
    for found in placeholders(object) {
        match found.allowed {
            None => problems.push(PackageProblem::new(
                &object.file,
                &found.path,
                "variable_not_allowed",
                format!("a ${{…}} placeholder may only begin a skill's {ENDPOINT}"),
                "write the value itself here; only the endpoint's origin differs between installations",
            )),
            Some(name) if package.variables.get(&name).is_some_and(|v| v.kind != VariableKind::Url) => {
                problems.push(PackageProblem::new(
                    &object.file,
                    &found.path,
                    "variable_not_allowed",
                    format!(
                        "the endpoint begins with ${{{name}}}, which package.yaml declares as a {} and not a url",
                        match package.variables[&name].kind {
                            VariableKind::Folder => "folder",
                            _ => "text",
                        }
                    ),
                    &format!("declare {name} with kind: url, or begin the endpoint with a url variable"),
                ));
            }
            Some(name) if !package.variables.contains_key(&name) => problems.push(PackageProblem::new(
                &object.file,
                &found.path,
                if is_reserved_variable(&name) { "reserved_variable" } else { "undeclared_variable" },
                format!("the endpoint uses ${{{name}}}, which package.yaml does not declare"),
                &format!(
                    "declare it in package.yaml: spec.variables: {{{name}: {{kind: url, description: ...}}}} \
                     (the platform's own {RESERVED_PREFIX}… variables cannot be used)"
                ),
            )),
            Some(_) => {}
        }
    }
    problems
}

/// The placeholder problems of every object of `package` (part of `check`).
pub fn placeholder_problems(package: &Package) -> Vec<PackageProblem> {
    package.objects.iter().flat_map(|object| object_problems(package, object)).collect()
}

/// The variable a skill object's endpoint begins with, and the rest of the endpoint after it:
/// `${CLAIMS_SKILLS_URL}/skills/claim.lookup@1` → (`CLAIMS_SKILLS_URL`, `/skills/claim.lookup@1`).
pub fn endpoint_variable(object: &PackageObject) -> Option<(String, String)> {
    if object.kind != "Skill" {
        return None;
    }
    let endpoint = object.document.pointer("/spec/contract/implementation/endpoint")?.as_str()?;
    let name = leading_variable(endpoint)?;
    Some((name.to_owned(), endpoint[name.len() + 3..].to_owned()))
}

/// The document of `object` with its endpoint's variable filled: the installation's value
/// (`lookup`, when set and not empty), else the declared default. Any placeholder problem, or a
/// variable with neither, is refused with the file and path.
pub fn fill(
    package: &Package,
    object: &PackageObject,
    lookup: &dyn Fn(&str) -> Option<String>,
) -> Result<Value, Vec<PackageProblem>> {
    let problems = object_problems(package, object);
    if !problems.is_empty() {
        return Err(problems);
    }
    let mut document = object.document.clone();
    let Some(Value::String(endpoint)) = document.pointer_mut("/spec/contract/implementation/endpoint") else {
        return Ok(document);
    };
    let Some(name) = leading_variable(endpoint).map(str::to_owned) else { return Ok(document) };
    let declared = &package.variables[&name];
    let Some(value) = lookup(&name).filter(|value| !value.is_empty()).or_else(|| declared.default.clone()) else {
        return Err(vec![PackageProblem::new(
            &object.file,
            ENDPOINT,
            "variable_not_set",
            format!("the installation variable {name} is not set and has no default"),
            &format!("set {name} in the environment (e.g. {name}=https://skills.example.com) and plan again"),
        )]);
    };
    let tail = &endpoint[name.len() + 3..];
    *endpoint = format!("{value}{tail}");
    Ok(document)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn package(variables: Value, objects: Vec<(&str, Value)>) -> (Package, Vec<PackageProblem>) {
        let mut problems = Vec::new();
        let variables = read(Some(&variables), &mut problems);
        let objects = objects
            .into_iter()
            .map(|(kind, spec)| PackageObject {
                file: format!("{}.yaml", kind.to_lowercase()),
                kind: kind.into(),
                key: "a.b".into(),
                document: json!({"apiVersion": "taimen.ai/v1", "kind": kind, "key": "a.b", "spec": spec}),
            })
            .collect();
        (
            Package { key: "p".into(), version: "1".into(), requires: vec![], variables, settings: None, objects },
            problems,
        )
    }

    fn skill(endpoint: &str, description: &str) -> Value {
        json!({"version": "1", "description": description,
               "contract": {"implementation": {"protocol": "http", "endpoint": endpoint}}})
    }

    fn codes(problems: &[PackageProblem]) -> Vec<(&str, &str)> {
        problems.iter().map(|p| (p.code, p.path.as_str())).collect()
    }

    #[test]
    fn only_a_declared_variable_at_the_start_of_the_endpoint_is_filled() {
        let (package, problems) = package(
            json!({"SVC_URL": {"kind": "url", "description": "where the skills run"}}),
            vec![("Skill", skill("${SVC_URL}/skills/a.b@1", "plain"))],
        );
        assert!(problems.is_empty(), "{problems:?}");
        let lookup = |name: &str| (name == "SVC_URL").then(|| "https://svc.example".to_owned());
        let document = fill(&package, &package.objects[0], &lookup).expect("filled");
        assert_eq!(document["spec"]["contract"]["implementation"]["endpoint"], "https://svc.example/skills/a.b@1");
        assert_eq!(document["spec"]["description"], "plain");
    }

    #[test]
    fn a_variable_has_a_kind_and_only_a_url_begins_an_endpoint() {
        let (package, problems) = package(
            json!({"OUTBOX_DIR": {"kind": "folder", "description": "replies"}, "MODE": {"kind": "text", "default": "fast"},
                   "SVC_URL": {"description": "no kind: a url"}, "ODD": {"kind": "path"}}),
            vec![("Skill", skill("${OUTBOX_DIR}/x", "plain"))],
        );
        assert_eq!(codes(&problems), [("invalid_package", "spec.variables.ODD.kind")]);
        let kinds: Vec<(&str, VariableKind)> = package.variables.iter().map(|(n, v)| (n.as_str(), v.kind)).collect();
        assert_eq!(
            kinds,
            [("MODE", VariableKind::Text), ("OUTBOX_DIR", VariableKind::Folder), ("SVC_URL", VariableKind::Url)]
        );
        assert_eq!(codes(&placeholder_problems(&package)), [("variable_not_allowed", ENDPOINT)]);
    }

    #[test]
    fn the_core_token_cannot_be_published_through_a_placeholder() {
        let secret = |name: &str| Some(format!("value-of-{name}"));
        for (spec, expected) in [
            (
                skill("https://x.example/skills/a.b@1", "token ${SKILL_CORE_TOKEN}"),
                ("variable_not_allowed", "spec.description"),
            ),
            (skill("${SKILL_CORE_TOKEN}/x", "plain"), ("reserved_variable", ENDPOINT)),
            (skill("${HOME}/x", "plain"), ("undeclared_variable", ENDPOINT)),
            (skill("${SVC_URL}/x?t=${SKILL_CORE_TOKEN}", "plain"), ("variable_not_allowed", ENDPOINT)),
            (skill("https://x.example/${SVC_URL}", "plain"), ("variable_not_allowed", ENDPOINT)),
        ] {
            let (package, _) = package(json!({"SVC_URL": {"kind": "url"}}), vec![("Skill", spec)]);
            let refused = fill(&package, &package.objects[0], &secret).expect_err("refused");
            assert_eq!(codes(&refused), [expected]);
            assert_eq!(refused[0].file, "skill.yaml");
            assert_eq!(codes(&placeholder_problems(&package)), [expected]);
        }
        let (package, _) = package(json!({}), vec![("TaskType", json!({"title": "${SVC_URL}", "tags": ["${X}"]}))]);
        assert_eq!(
            codes(&placeholder_problems(&package)),
            [("variable_not_allowed", "spec.title"), ("variable_not_allowed", "spec.tags[0]")]
        );
    }

    #[test]
    fn a_missing_value_falls_back_to_the_default_or_is_refused() {
        let (package, _) = package(
            json!({"WITH": {"default": "https://d.example"}, "WITHOUT": {}}),
            vec![("Skill", skill("${WITH}/a", "")), ("Skill", skill("${WITHOUT}/b", ""))],
        );
        let unset = |_: &str| Some(String::new());
        let filled = fill(&package, &package.objects[0], &unset).expect("the default");
        assert_eq!(filled["spec"]["contract"]["implementation"]["endpoint"], "https://d.example/a");
        let refused = fill(&package, &package.objects[1], &unset).expect_err("no value");
        assert_eq!(codes(&refused), [("variable_not_set", ENDPOINT)]);
        assert!(refused[0].hint.contains("WITHOUT="), "{}", refused[0].hint);
    }

    #[test]
    fn declarations_are_checked() {
        let (package, problems) = package(
            json!({"SKILL_CORE_TOKEN": {}, "skill_sdk_x": {}, "1BAD": {}, "NOT_MAP": 3, "BAD_DEFAULT": {"default": 3}, "OK": {"description": "d"}}),
            vec![],
        );
        assert_eq!(
            codes(&problems),
            [
                ("reserved_variable", "spec.variables.SKILL_CORE_TOKEN"),
                ("reserved_variable", "spec.variables.skill_sdk_x"),
                ("invalid_package", "spec.variables.1BAD"),
                ("invalid_package", "spec.variables.NOT_MAP"),
                ("invalid_package", "spec.variables.BAD_DEFAULT.default"),
            ]
        );
        assert_eq!(package.variables.keys().collect::<Vec<_>>(), ["OK"]);
        assert_eq!(package.variables["OK"].description, "d");
    }
}
