//! Work rules as a package declares them (`rules/*.yaml`, `kind: WorkRule`) and the API publishes
//! them: which facts the rule is for (`on {kind, when}`), the skill that interprets a fact
//! (`interpretation {skill: name@version, inputs}`), and the work it ensures (`ensureWork: [{task:
//! {type, workKey, title, customFields}} | {process: {process, workKey, input}}]`). The rule acts as an agent (`identity.agent`): that
//! agent's principal is the authority of the interpretation's call and the creator of the work.
//!
//! Values of `inputs`, `workKey`, `title` and `customFields` are literals, or paths over the
//! evaluation's document — `$.fact.{id, workspace, kind, key, data…, source, occurredAt}` and,
//! with an interpretation, `$.interpretation.output…` — written `$` then `.name` and `[n]`.
//!
//! The shape and the rules that need nothing but the document are here, so the offline check
//! and the core refuse the same documents with the same paths; the condition's CEL is compiled
//! by the callers (skill-conditions), and what needs the catalog (unknown or writing versions,
//! task types, the agent) is the core's.

use std::collections::BTreeSet;

use crate::DocumentProblem;
use crate::codes::Code;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::SkillRef;
use crate::agent::is_agent_key;

/// The most work one rule ensures per fact, and the most input or field mappings.
pub const MAX_WORK: usize = 10;
pub const MAX_MAPPINGS: usize = 100;

/// The `spec` of a `WorkRule` document (with its `key`, the body of `POST /rules`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RuleSpec {
    /// 1 to 50 characters, as skill versions; a published version never changes.
    pub version: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub display_name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    pub identity: RuleIdentity,
    pub on: RuleTrigger,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interpretation: Option<Interpretation>,
    pub ensure_work: Vec<EnsureWork>,
}

/// Whom the rule acts as.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RuleIdentity {
    /// The key of the agent whose principal calls the interpretation and creates the work.
    pub agent: String,
}

/// The facts the rule is for.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RuleTrigger {
    /// The fact kind: 1 to 128 of `a-z 0-9 . _ -`, starting with a letter or digit.
    pub kind: String,
    /// A CEL condition over `fact`; without one every fact of the kind matches.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub when: Option<String>,
}

/// The skill that interprets a matching fact.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Interpretation {
    /// `name@version`: one pinned version that does not write to the outside world.
    pub skill: String,
    /// The call's inputs: name → a literal or a path.
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub inputs: Map<String, Value>,
}

/// One piece of work a matching fact ensures.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub enum EnsureWork {
    /// A task, made once per work key in the fact's workspace.
    Task(TaskWork),
    /// A process instance, started once per work key (its key) in the fact's workspace.
    Process(ProcessWork),
}

/// `ensureWork[].process`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ProcessWork {
    /// The process, `key@version`.
    pub process: String,
    /// What names this piece of work (a literal, a path, or a text with `{{path}}`s): the
    /// instance's key, one instance per workspace, process and key.
    pub work_key: String,
    /// The instance's input: name → a literal or a path.
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub input: Map<String, Value>,
}

/// `ensureWork[].task`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TaskWork {
    /// The task type, `key@version`.
    #[serde(rename = "type")]
    pub task_type: String,
    /// What names this piece of work (a literal, a path, or a text with `{{path}}`s): one task
    /// per workspace and work key, however often the fact, the rule or the core repeats.
    pub work_key: String,
    /// The task's title: a literal, a path, or a text with `{{path}}`s (`Claim {{$.fact.key}}`).
    pub title: String,
    /// The task's fields: name → a literal or a path.
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub custom_fields: Map<String, Value>,
}

/// A problem of a rule document: `invalid_rule`, or the reference's `invalid_rule_interpretation`.
fn problem(path: impl Into<String>, code: Code, message: impl Into<String>, hint: &str) -> DocumentProblem {
    DocumentProblem::new(path, code, message, hint)
}

/// Whether `key` names a rule or a task type: 1 to 200 of `a-z 0-9 . _ -`, starting with a letter
/// or digit.
pub fn is_rule_key(key: &str) -> bool {
    (1..=200).contains(&key.len())
        && key.starts_with(|c: char| c.is_ascii_lowercase() || c.is_ascii_digit())
        && key.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"._-".contains(&b))
}

/// Whether `kind` names a kind of fact: 1 to 128 of `a-z 0-9 . _ -`, starting with a letter or
/// digit.
pub fn is_fact_kind(kind: &str) -> bool {
    (1..=128).contains(&kind.len())
        && kind.starts_with(|c: char| c.is_ascii_lowercase() || c.is_ascii_digit())
        && kind.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"._-".contains(&b))
}

pub use crate::paths::is_path;

/// Reads a rule document's `spec`: the spec, or the first problem of its shape, with its path.
pub fn read_spec(spec: &Value) -> Result<RuleSpec, DocumentProblem> {
    if !spec.is_object() {
        return Err(problem(
            "spec",
            Code::InvalidRule,
            "a rule's spec is a mapping",
            "write spec: {version, identity: {agent}, on: {kind, when?}, interpretation?, ensureWork: [...]}",
        ));
    }
    crate::read_typed::<RuleSpec>(spec, "spec").map_err(|unread| {
        let (path, error) = (unread.path, unread.reason);
        problem(
            path,
            Code::InvalidRule,
            format!("the rule document does not read: {error}"),
            "a rule's spec has version, displayName, description, identity {agent}, on {kind, when}, interpretation {skill, inputs}, ensureWork [{task: {type, workKey, title, customFields}}]",
        )
    })
}

impl RuleSpec {
    /// The interpretation's version, when it names a pinned one.
    pub fn interpretation_ref(&self) -> Option<SkillRef> {
        self.interpretation.as_ref().and_then(|interpretation| interpretation.skill.parse().ok())
    }

    /// The task types (`key@version`) the rule ensures work of, with their paths.
    pub fn task_types(&self) -> impl Iterator<Item = (String, &str)> {
        self.ensure_work.iter().enumerate().filter_map(|(index, work)| match work {
            EnsureWork::Task(task) => Some((format!("spec.ensureWork[{index}].task.type"), task.task_type.as_str())),
            EnsureWork::Process(_) => None,
        })
    }

    /// The processes (`key@version`) the rule starts instances of, with their paths.
    pub fn processes(&self) -> impl Iterator<Item = (String, &str)> {
        self.ensure_work.iter().enumerate().filter_map(|(index, work)| match work {
            EnsureWork::Process(process) => {
                Some((format!("spec.ensureWork[{index}].process.process"), process.process.as_str()))
            }
            EnsureWork::Task(_) => None,
        })
    }

    /// The rules that need nothing but the document (the condition is compiled by the caller).
    pub fn problems(&self) -> Vec<DocumentProblem> {
        let mut out = Vec::new();
        if crate::SkillVersion::new(&self.version).is_err() {
            out.push(problem(
                "spec.version",
                Code::InvalidRule,
                format!("{:?} is not a version: 1 to 50 of letters, digits, `.`, `_`, `+`, `-`", self.version),
                "write e.g. \"1\" or \"2026.1\"",
            ));
        }
        if !is_agent_key(&self.identity.agent) {
            out.push(problem(
                "spec.identity.agent",
                Code::InvalidRule,
                format!("{:?} is not an agent key", self.identity.agent),
                "name the agent the rule acts as by its key (agents/<key>.yaml)",
            ));
        }
        if !is_fact_kind(&self.on.kind) {
            out.push(problem(
                "spec.on.kind",
                Code::InvalidRule,
                format!(
                    "{:?} is not a fact kind: 1 to 128 of a-z 0-9 . _ - starting with a letter or digit",
                    self.on.kind
                ),
                "write e.g. claim.received",
            ));
        }
        let reads_output = self.interpretation.is_some();
        if let Some(interpretation) = &self.interpretation {
            let path = "spec.interpretation.skill";
            match interpretation.skill.parse::<SkillRef>() {
                Err(_) if !interpretation.skill.contains('@') => out.push(problem(
                    path,
                    Code::InvalidRuleInterpretation,
                    format!("{} names no version; a rule interprets with one pinned version", interpretation.skill),
                    "write name@version",
                )),
                Err(error) => out.push(problem(
                    path,
                    Code::InvalidRuleInterpretation,
                    format!("{:?}: {error}", interpretation.skill),
                    "write name@version",
                )),
                Ok(_) => {}
            }
            mappings(&interpretation.inputs, "spec.interpretation.inputs", false, &mut out);
        }
        if self.ensure_work.is_empty() || self.ensure_work.len() > MAX_WORK {
            out.push(problem(
                "spec.ensureWork",
                Code::InvalidRule,
                format!("{} entries; a rule ensures 1 to {MAX_WORK} pieces of work", self.ensure_work.len()),
                "list the work a matching fact ensures",
            ));
        }
        let mut keys = BTreeSet::new();
        for (index, work) in self.ensure_work.iter().enumerate() {
            let task = match work {
                EnsureWork::Task(task) => task,
                EnsureWork::Process(process) => {
                    process_problems(process, index, reads_output, &mut keys, &mut out);
                    continue;
                }
            };
            let at = format!("spec.ensureWork[{index}].task");
            let pinned = task
                .task_type
                .split_once('@')
                .is_some_and(|(key, version)| is_rule_key(key) && crate::SkillVersion::new(version).is_ok());
            if !pinned {
                out.push(problem(
                    format!("{at}.type"),
                    Code::InvalidRule,
                    format!("{:?} is not a pinned task type: key@version", task.task_type),
                    "write e.g. claim-reply@1",
                ));
            }
            for (field, value) in [("workKey", &task.work_key), ("title", &task.title)] {
                value_problem(&Value::String(value.clone()), &format!("{at}.{field}"), reads_output, &mut out);
                match template_paths(value) {
                    Ok(paths) => {
                        for path in paths {
                            value_problem(
                                &Value::String(path.to_owned()),
                                &format!("{at}.{field}"),
                                reads_output,
                                &mut out,
                            );
                        }
                    }
                    Err(message) => {
                        out.push(problem(format!("{at}.{field}"), Code::InvalidRule, message, "write {{$.fact.key}}"))
                    }
                }
                if value.trim().is_empty() || value.chars().count() > 500 {
                    out.push(problem(
                        format!("{at}.{field}"),
                        Code::InvalidRule,
                        format!("{field} is 1 to 500 characters"),
                        "write a literal or a path",
                    ));
                }
            }
            if !keys.insert(&task.work_key) {
                out.push(problem(
                    format!("{at}.workKey"),
                    Code::InvalidRule,
                    format!("{} names two pieces of work of this rule", task.work_key),
                    "give each piece of work its own work key",
                ));
            }
            mappings(&task.custom_fields, &format!("{at}.customFields"), reads_output, &mut out);
        }
        for (field, value) in [("displayName", &self.display_name), ("description", &self.description)] {
            if value.as_ref().is_some_and(|text| text.chars().count() > 2000) {
                out.push(problem(
                    format!("spec.{field}"),
                    Code::InvalidRule,
                    format!("{field} has at most 2000 characters"),
                    "shorten it",
                ));
            }
        }
        out
    }
}

/// The problems of one `ensureWork[].process`.
fn process_problems<'a>(
    process: &'a ProcessWork,
    index: usize,
    reads_output: bool,
    keys: &mut BTreeSet<&'a String>,
    out: &mut Vec<DocumentProblem>,
) {
    let at = format!("spec.ensureWork[{index}].process");
    let pinned = process
        .process
        .split_once('@')
        .is_some_and(|(key, version)| is_rule_key(key) && crate::SkillVersion::new(version).is_ok());
    if !pinned {
        out.push(problem(
            format!("{at}.process"),
            Code::InvalidRule,
            format!("{:?} is not a pinned process: key@version", process.process),
            "write e.g. claim-handling@1",
        ));
    }
    let path = format!("{at}.workKey");
    value_problem(&Value::String(process.work_key.clone()), &path, reads_output, out);
    match template_paths(&process.work_key) {
        Ok(paths) => {
            for read in paths {
                value_problem(&Value::String(read.to_owned()), &path, reads_output, out);
            }
        }
        Err(message) => out.push(problem(path.clone(), Code::InvalidRule, message, "write {{$.fact.key}}")),
    }
    if process.work_key.trim().is_empty() || process.work_key.chars().count() > 200 {
        out.push(problem(path, Code::InvalidRule, "workKey is 1 to 200 characters", "write a literal or a path"));
    }
    if !keys.insert(&process.work_key) {
        out.push(problem(
            format!("{at}.workKey"),
            Code::InvalidRule,
            format!("{} names two pieces of work of this rule", process.work_key),
            "give each piece of work its own work key",
        ));
    }
    mappings(&process.input, &format!("{at}.input"), reads_output, out);
}

/// The paths a template reads: `Claim {{$.fact.data.claim}}` reads `$.fact.data.claim`; a text
/// without `{{` reads none. An unclosed `{{` or one around no path is an error.
pub fn template_paths(text: &str) -> Result<Vec<&str>, String> {
    let mut paths = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find("{{") {
        let after = &rest[start + 2..];
        let Some(end) = after.find("}}") else {
            return Err(format!("{text:?} opens {{{{ without closing it"));
        };
        let path = after[..end].trim();
        if !is_path(path) {
            return Err(format!("{{{{{path}}}}} in {text:?} is not a path: `$` then .name and [n] segments"));
        }
        paths.push(path);
        rest = &after[end + 2..];
    }
    Ok(paths)
}

/// The problems of a name → value mapping (inputs, custom fields).
fn mappings(map: &Map<String, Value>, at: &str, reads_output: bool, out: &mut Vec<DocumentProblem>) {
    if map.len() > MAX_MAPPINGS {
        out.push(problem(at, Code::InvalidRule, format!("{} entries; at most {MAX_MAPPINGS}", map.len()), "map fewer"));
        return;
    }
    for (name, value) in map {
        value_problem(value, &format!("{at}.{name}"), reads_output, out);
    }
}

/// A `$…` text must be a path over `$.fact` (or `$.interpretation` when the rule has one).
fn value_problem(value: &Value, at: &str, reads_output: bool, out: &mut Vec<DocumentProblem>) {
    let Value::String(text) = value else { return };
    if !text.starts_with('$') {
        return;
    }
    if !is_path(text) {
        out.push(problem(
            at,
            Code::InvalidRule,
            format!("{text:?} is not a path: `$` then .name and [n] segments"),
            "write e.g. $.fact.data.claim",
        ));
    } else if text.starts_with("$.interpretation") && !reads_output {
        out.push(problem(
            at,
            Code::InvalidRule,
            format!("{text} reads an interpretation, and the rule has none"),
            "add spec.interpretation, or read $.fact",
        ));
    } else if !(text == "$.fact"
        || text.starts_with("$.fact.")
        || text.starts_with("$.fact[")
        || text == "$.interpretation"
        || text.starts_with("$.interpretation."))
    {
        out.push(problem(
            at,
            Code::InvalidRule,
            format!("{text} reads neither $.fact nor $.interpretation"),
            "a rule's paths read the fact ($.fact.data…) or the interpretation's output ($.interpretation.output…)",
        ));
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn spec() -> Value {
        json!({
            "version": "1",
            "identity": {"agent": "claims-intake"},
            "on": {"kind": "claim.received", "when": "size(fact.data.text) > 0"},
            "interpretation": {"skill": "claim.classify@1", "inputs": {"text": "$.fact.data.text"}},
            "ensureWork": [{"task": {"type": "claim-reply@1", "workKey": "$.fact.key", "title": "$.fact.data.subject",
                                     "customFields": {"claim": "$.fact.key", "category": "$.interpretation.output.category"}}}]
        })
    }

    #[test]
    fn a_whole_rule_reads_without_problems() {
        let rule = read_spec(&spec()).expect("reads");
        assert_eq!(rule.problems(), []);
        assert_eq!(rule.interpretation_ref().map(|r| r.to_string()).as_deref(), Some("claim.classify@1"));
        assert_eq!(rule.task_types().map(|(_, t)| t.to_owned()).collect::<Vec<_>>(), ["claim-reply@1"]);
    }

    #[test]
    fn each_problem_names_its_path() {
        let unknown = read_spec(
            &json!({"version": "1", "identity": {"agent": "a"}, "on": {"kind": "k"}, "ensureWork": [], "extra": 1}),
        );
        assert!(unknown.expect_err("unknown field").message.contains("extra"));
        let wrong =
            read_spec(&json!({"version": "1", "identity": {"agent": "a"}, "on": {"kind": 3}, "ensureWork": []}));
        assert_eq!(wrong.expect_err("a number").path, "spec.on.kind");

        let cases = [
            (
                "/interpretation/skill",
                json!("claim.classify"),
                "spec.interpretation.skill",
                "invalid_rule_interpretation",
            ),
            ("/interpretation/inputs/text", json!("$.fact..x"), "spec.interpretation.inputs.text", "invalid_rule"),
            ("/ensureWork/0/task/type", json!("claim-reply"), "spec.ensureWork[0].task.type", "invalid_rule"),
            ("/ensureWork/0/task/workKey", json!("$.task.id"), "spec.ensureWork[0].task.workKey", "invalid_rule"),
            ("/on/kind", json!("Claim Received"), "spec.on.kind", "invalid_rule"),
            ("/identity/agent", json!("Desk Bot"), "spec.identity.agent", "invalid_rule"),
            ("/version", json!(""), "spec.version", "invalid_rule"),
        ];
        for (pointer, value, path, code) in cases {
            let mut document = spec();
            *document.pointer_mut(pointer).expect(pointer) = value;
            let problems = read_spec(&document).expect("reads").problems();
            assert!(problems.iter().any(|p| p.path == path && p.code.as_str() == code), "{pointer}: {problems:?}");
        }
        let mut without = spec();
        without.as_object_mut().expect("an object").remove("interpretation");
        let problems = read_spec(&without).expect("reads").problems();
        assert!(problems.iter().any(|p| p.path == "spec.ensureWork[0].task.customFields.category"), "{problems:?}");
        let mut none = spec();
        none["ensureWork"] = json!([]);
        assert!(read_spec(&none).expect("reads").problems().iter().any(|p| p.path == "spec.ensureWork"));
    }

    #[test]
    fn a_rule_may_start_a_process() {
        let mut document = spec();
        document["ensureWork"] = json!([{"process": {"process": "claim-handling@1", "workKey": "claim:{{$.fact.key}}",
                                                      "input": {"claim": "$.fact.data.claim", "category": "$.interpretation.output.category"}}}]);
        let rule = read_spec(&document).expect("reads");
        assert_eq!(rule.problems(), []);
        assert_eq!(
            rule.processes().map(|(p, r)| (p, r.to_owned())).collect::<Vec<_>>(),
            [("spec.ensureWork[0].process.process".to_owned(), "claim-handling@1".to_owned())]
        );
        assert_eq!(rule.task_types().count(), 0);
        for (pointer, value, path) in [
            ("/ensureWork/0/process/process", json!("claim-handling"), "spec.ensureWork[0].process.process"),
            ("/ensureWork/0/process/workKey", json!("$.task.id"), "spec.ensureWork[0].process.workKey"),
            ("/ensureWork/0/process/input/claim", json!("$.fact..x"), "spec.ensureWork[0].process.input.claim"),
        ] {
            let mut changed = document.clone();
            *changed.pointer_mut(pointer).expect(pointer) = value;
            let problems = read_spec(&changed).expect("reads").problems();
            assert!(problems.iter().any(|p| p.path == path), "{pointer}: {problems:?}");
        }
    }

    #[test]
    fn templates_read_paths() {
        assert_eq!(
            template_paths("Claim {{$.fact.key}} ({{ $.interpretation.output.category }})"),
            Ok(vec!["$.fact.key", "$.interpretation.output.category"])
        );
        assert_eq!(template_paths("plain"), Ok(vec![]));
        assert!(template_paths("Claim {{$.fact.key").is_err());
        assert!(template_paths("Claim {{fact.key}}").is_err());
        let mut document = spec();
        document["ensureWork"][0]["task"]["title"] = json!("Claim {{$.task.id}}");
        let problems = read_spec(&document).expect("reads").problems();
        assert!(problems.iter().any(|p| p.path == "spec.ensureWork[0].task.title"), "{problems:?}");
    }

    #[test]
    fn paths_are_the_task_types_grammar() {
        for good in ["$", "$.fact", "$.fact.data.items[0].name", "$.interpretation.output._x-y"] {
            assert!(is_path(good), "{good}");
        }
        for bad in ["fact.data", "$.", "$..a", "$.a[", "$.a[x]", "$.1a", "$.a b"] {
            assert!(!is_path(bad), "{bad}");
        }
    }
}
