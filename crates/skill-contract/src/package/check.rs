//! The offline check of a package: its skill documents by the contract rules, unique object
//! identities, and closed references — every skill a task type, an approval or completion
//! outcome, a work rule or a process step names is declared in the package or in one it
//! requires, pinned to a version where a write is involved.

use std::collections::{BTreeMap, HashMap};

use serde_json::Value;

use super::{Package, PackageObject, PackageProblem};
use crate::task_type::{Criterion, decided_before};
use crate::{NormalizeOptions, SideEffects, Skill, SkillBody};

/// The problems of `package`, whose required packages (all of them, transitively) are
/// `required`.
pub fn check(package: &Package, required: &[Package]) -> Vec<PackageProblem> {
    let mut problems = Vec::new();
    let mut seen: HashMap<String, &str> = HashMap::new();
    for object in &package.objects {
        if let Some(first) = seen.insert(object.identity(), &object.file) {
            problems.push(PackageProblem::new(
                &object.file,
                "key",
                "duplicate_object",
                format!("{} is also declared in {first}", object.identity()),
                "keep one declaration per kind and key (per version for skills)",
            ));
        }
    }
    problems.extend(super::placeholder_problems(package));
    let mut visible: BTreeMap<String, SideEffects> = BTreeMap::new();
    // Skill documents of this package that do not read: what names them is not also unknown.
    let mut broken = std::collections::BTreeSet::new();
    for (index, owner) in std::iter::once(package).chain(required).enumerate() {
        for object in owner.objects.iter().filter(|object| object.kind == "Skill") {
            let options = NormalizeOptions { allow_placeholders: true, allow_conditions: false, stored: false };
            match Skill::from_document(&object.document, &options) {
                Ok(skill) => {
                    visible.insert(skill.skill_ref().to_string(), writes(&skill));
                }
                // The problems of a required package are that package's to fix.
                Err(error) if index == 0 => {
                    if let Some(version) = object.version() {
                        broken.insert(format!("{}@{version}", object.key));
                    }
                    for violation in error.violations() {
                        problems.push(PackageProblem::new(
                            &object.file,
                            &violation.field,
                            violation.code.as_str(),
                            violation.to_string(),
                            "fix the field, or when the skill is written in code: change the code and run `skill-sdk export`",
                        ));
                    }
                }
                Err(_) => {}
            }
        }
    }
    let references = References { visible: &visible, broken: &broken };
    let executions = executions(std::iter::once(package).chain(required));
    let objects = Objects::of(std::iter::once(package).chain(required));
    for object in &package.objects {
        match object.kind.as_str() {
            "TaskType" => references.task_type(object, &objects, &mut problems),
            "WorkRule" => references.work_rule(object, &objects, &mut problems),
            "Process" => references.process(object, &objects, &mut problems),
            "Agent" => agent(object, &executions, &mut problems),
            _ => {}
        }
    }
    problems
}

/// The task type and agent keys the packages given declare.
struct Objects {
    task_types: std::collections::BTreeSet<String>,
    agents: std::collections::BTreeSet<String>,
    processes: std::collections::BTreeSet<String>,
}

impl Objects {
    fn of<'a>(packages: impl Iterator<Item = &'a Package>) -> Self {
        let mut found =
            Self { task_types: Default::default(), agents: Default::default(), processes: Default::default() };
        for object in packages.flat_map(|package| &package.objects) {
            match object.kind.as_str() {
                "TaskType" => {
                    found.task_types.insert(object.key.clone());
                }
                "Agent" => {
                    found.agents.insert(object.key.clone());
                }
                "Process" => {
                    found.processes.insert(object.key.clone());
                }
                _ => {}
            }
        }
        found
    }
}

/// Task type key → the `name@version` of each of its versions' execution, in the packages given.
fn executions<'a>(packages: impl Iterator<Item = &'a Package>) -> BTreeMap<String, Vec<String>> {
    let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for object in packages.flat_map(|package| &package.objects).filter(|object| object.kind == "TaskType") {
        let execution = object.document.pointer("/spec/execution");
        let skill = execution.and_then(|e| e.get("skill")).and_then(Value::as_str);
        let version = execution.and_then(|e| e.get("version")).and_then(Value::as_str);
        if let (Some(skill), Some(version)) = (skill, version) {
            out.entry(object.key.clone()).or_default().push(format!("{skill}@{version}"));
        }
    }
    out
}

/// An agent document: its key, its shape and rules, and — for the task types this package can
/// see — that it is assigned each execution's version.
fn agent(object: &PackageObject, executions: &BTreeMap<String, Vec<String>>, problems: &mut Vec<PackageProblem>) {
    if !crate::agent::is_agent_key(&object.key) {
        problems.push(PackageProblem::new(
            &object.file,
            "key",
            "invalid_agent",
            format!("{:?} is not an agent key (it is also the agent's principal name)", object.key),
            "use 1 to 100 lower-case letters, digits, `.`, `_`, `-`, starting with a letter or digit",
        ));
    }
    let spec = match crate::agent::read_spec(object.spec()) {
        Ok(spec) => spec,
        Err(found) => {
            problems.push(PackageProblem::of(&object.file, &found));
            return;
        }
    };
    for found in spec.problems() {
        problems.push(PackageProblem::of(&object.file, &found));
    }
    let invoked: Vec<&str> = spec.invoked().map(|(skill, _)| skill).collect();
    for (index, key) in spec.work.task_types.iter().enumerate() {
        for skill in executions.get(key).into_iter().flatten() {
            if !invoked.contains(&skill.as_str()) {
                problems.push(PackageProblem::new(
                    &object.file,
                    &format!("spec.work.taskTypes[{index}]"),
                    "execution_skill_not_invoked",
                    format!("the task type {key} is carried out with {skill}, which the agent is not assigned"),
                    &format!("add {skill} to spec.skills.invoke"),
                ));
            }
        }
    }
}

/// The side effects a skill's calls have: a composite writes when any of its tools may.
fn writes(skill: &Skill) -> SideEffects {
    match skill.body() {
        SkillBody::Leaf(leaf) => leaf.side_effects(),
        SkillBody::Composite(composite) if composite.tools().iter().any(|tool| tool.writes()) => {
            SideEffects::ExternalWrite
        }
        SkillBody::Composite(_) => SideEffects::None,
    }
}

struct References<'a> {
    /// `name@version` → side effects, for every skill the package may name.
    visible: &'a BTreeMap<String, SideEffects>,
    /// `name@version` of this package's skill documents that do not read (their own problems).
    broken: &'a std::collections::BTreeSet<String>,
}

impl References<'_> {
    /// The side effects of `reference` when it is visible, else a problem.
    fn resolve(
        &self,
        object: &PackageObject,
        path: &str,
        reference: &str,
        problems: &mut Vec<PackageProblem>,
    ) -> Option<SideEffects> {
        if let Some(side_effects) = self.visible.get(reference) {
            return Some(*side_effects);
        }
        let versions: Vec<&str> = self
            .visible
            .keys()
            .filter(|known| {
                known.split_once('@').is_some_and(|(name, _)| name == reference.split('@').next().unwrap_or_default())
            })
            .map(String::as_str)
            .collect();
        let hint = if versions.is_empty() {
            "declare the skill in skills/ of this package, or require the package that declares it".to_owned()
        } else {
            format!("the package can see {}", versions.join(", "))
        };
        problems.push(PackageProblem::new(
            &object.file,
            path,
            "unknown_reference",
            format!("{reference} is not declared in this package or in a package it requires"),
            &hint,
        ));
        None
    }

    fn task_type(&self, object: &PackageObject, objects: &Objects, problems: &mut Vec<PackageProblem>) {
        let spec = object.spec();
        if let Some(process) = spec.get("process") {
            let named = process.get("process").and_then(Value::as_str).unwrap_or_default();
            let key = named.split_once('@').map(|(key, _)| key);
            match key {
                None => problems.push(PackageProblem::new(
                    &object.file,
                    "spec.process.process",
                    "invalid_task_type",
                    format!("{named:?} is not a pinned process: key@version"),
                    "write process: {process: <key>@<version>, input: {...}}",
                )),
                Some(key) if !objects.processes.contains(key) => problems.push(PackageProblem::new(
                    &object.file,
                    "spec.process.process",
                    "unknown_reference",
                    format!("the process {key} is not declared in this package or in a package it requires"),
                    "declare it in processes/, or require the package that declares it",
                )),
                Some(_) => {}
            }
        }
        if let Some(execution) = spec.get("execution").filter(|value| value.is_object()) {
            let skill = execution.get("skill").and_then(Value::as_str).unwrap_or_default();
            let version = execution.get("version").and_then(Value::as_str).unwrap_or_default();
            if skill.is_empty() || version.is_empty() {
                problems.push(PackageProblem::new(
                    &object.file,
                    "spec.execution",
                    "invalid_task_execution",
                    "execution needs skill (a name) and version".to_owned(),
                    "write execution: {skill: <name>, version: '<version>', inputs: ...}",
                ));
            } else {
                self.resolve(object, "spec.execution.skill", &format!("{skill}@{version}"), problems);
            }
        }
        for part in ["approvalSchema", "completionSchema"] {
            if let Some(schema) = spec.get(part) {
                self.invoke_skills(object, schema, &format!("spec.{part}"), problems);
            }
        }
        self.drafts(object, spec, problems);
        self.acceptance(object, spec, problems);
    }

    /// Every `invokeSkill: {skill: <literal>}` under `value`.
    fn invoke_skills(&self, object: &PackageObject, value: &Value, path: &str, problems: &mut Vec<PackageProblem>) {
        match value {
            Value::Object(map) => {
                for (key, item) in map {
                    let here = format!("{path}.{key}");
                    if key == "invokeSkill"
                        && let Some(skill) =
                            item.get("skill").and_then(Value::as_str).filter(|skill| !skill.contains('$'))
                    {
                        self.invoke_skill(object, skill, &format!("{here}.skill"), problems);
                    }
                    self.invoke_skills(object, item, &here, problems);
                }
            }
            Value::Array(items) => {
                for (index, item) in items.iter().enumerate() {
                    self.invoke_skills(object, item, &format!("{path}[{index}]"), problems);
                }
            }
            _ => {}
        }
    }

    fn invoke_skill(&self, object: &PackageObject, skill: &str, path: &str, problems: &mut Vec<PackageProblem>) {
        if !skill.contains('@') {
            let write = self
                .visible
                .iter()
                .find(|(known, side_effects)| {
                    known.split('@').next() == Some(skill) && **side_effects == SideEffects::ExternalWrite
                })
                .map(|(known, _)| known.clone());
            if let Some(pinned) = write {
                problems.push(PackageProblem::new(
                    &object.file,
                    path,
                    "unpinned_external_write",
                    format!(
                        "{skill} writes to the outside world, so an outcome must name the version it was approved for"
                    ),
                    &format!("pin the version: skill: {pinned}"),
                ));
                return;
            }
        }
        self.resolve(object, path, skill, problems);
    }

    /// A gate's draft names a visible version that does not write.
    fn drafts(&self, object: &PackageObject, spec: &Value, problems: &mut Vec<PackageProblem>) {
        let Some(gates) = spec.pointer("/approvalSchema/gates").and_then(Value::as_object) else { return };
        for (name, gate) in gates {
            let Some(skill) = gate.pointer("/draft/skill").and_then(Value::as_str) else { continue };
            let path = format!("spec.approvalSchema.gates.{name}.draft.skill");
            if self.resolve(object, &path, skill, problems) == Some(SideEffects::ExternalWrite) {
                problems.push(PackageProblem::new(
                    &object.file,
                    &path,
                    "invalid_task_type",
                    format!("{skill} writes to the outside world: a draft is prepared by a skill that does not"),
                    "draft with a none or external_read skill; the write is the gate's outcome",
                ));
            }
        }
    }

    fn acceptance(&self, object: &PackageObject, spec: &Value, problems: &mut Vec<PackageProblem>) {
        // A list that does not read is the core's to refuse, with the path of what does not.
        let Some(Ok(criteria)) = spec.get("acceptance").map(|list| crate::read_typed::<Vec<Criterion>>(list, ""))
        else {
            return;
        };
        for (index, criterion) in criteria.iter().enumerate() {
            let Some(skill) = criterion.skill().and_then(Value::as_str) else { continue };
            let path = format!("spec.acceptance[{index}].spec.skill");
            if self.resolve(object, &path, skill, problems) != Some(SideEffects::ExternalWrite) {
                continue;
            }
            if !decided_before(&criteria, index) {
                problems.push(PackageProblem::new(
                    &object.file,
                    &path,
                    "invalid_acceptance_spec",
                    format!("{skill} writes to the outside world, and no human or llm_judge check with the same when comes before it (external_write_without_decision)"),
                    "put a human or llm_judge criterion with the same when before this one",
                ));
            }
        }
    }

    /// A rule document: its shape and rules, its interpretation (pinned, visible, not writing),
    /// the task types and the agent it names (declared here or in a required package).
    fn work_rule(&self, object: &PackageObject, objects: &Objects, problems: &mut Vec<PackageProblem>) {
        if !crate::rule::is_rule_key(&object.key) {
            problems.push(PackageProblem::new(
                &object.file,
                "key",
                "invalid_rule",
                format!("{:?} is not a rule key", object.key),
                "use 1 to 200 lower-case letters, digits, `.`, `_`, `-`, starting with a letter or digit",
            ));
        }
        let spec = match crate::rule::read_spec(object.spec()) {
            Ok(spec) => spec,
            Err(found) => {
                problems.push(PackageProblem::of(&object.file, &found));
                return;
            }
        };
        let found = spec.problems();
        for found in &found {
            problems.push(PackageProblem::of(&object.file, found));
        }
        let path = "spec.interpretation.skill";
        if let Some(skill) = spec
            .interpretation
            .as_ref()
            .map(|i| i.skill.as_str())
            .filter(|skill| !found.iter().any(|p| p.path == path) && !self.broken.contains(*skill))
        {
            let before = problems.len();
            match self.resolve(object, path, skill, problems) {
                Some(SideEffects::ExternalWrite) => problems.push(PackageProblem::new(
                    &object.file,
                    path,
                    "rule_skill_side_effects",
                    format!("{skill} writes to the outside world, and a rule has no human decision to refer to"),
                    "interpret with a none or external_read skill; write through an approval outcome or a process step",
                )),
                // The core's word for a rule's unknown interpretation.
                None => problems.iter_mut().skip(before).for_each(|problem| problem.code = "unknown_skill"),
                Some(_) => {}
            }
        }
        for (path, task_type) in spec.task_types() {
            let key = task_type.split('@').next().unwrap_or_default();
            if !found.iter().any(|p| p.path == path) && !objects.task_types.contains(key) {
                problems.push(PackageProblem::new(
                    &object.file,
                    &path,
                    "unknown_reference",
                    format!("the task type {key} is not declared in this package or in a package it requires"),
                    "declare it in task-types/, or require the package that declares it",
                ));
            }
        }
        for (path, process) in spec.processes() {
            let key = process.split('@').next().unwrap_or_default();
            if !found.iter().any(|p| p.path == path) && !objects.processes.contains(key) {
                problems.push(PackageProblem::new(
                    &object.file,
                    &path,
                    "unknown_reference",
                    format!("the process {key} is not declared in this package or in a package it requires"),
                    "declare it in processes/, or require the package that declares it",
                ));
            }
        }
        if !found.iter().any(|p| p.path == "spec.identity.agent") && !objects.agents.contains(&spec.identity.agent) {
            problems.push(PackageProblem::new(
                &object.file,
                "spec.identity.agent",
                "unknown_reference",
                format!(
                    "the agent {} is not declared in this package or in a package it requires",
                    spec.identity.agent
                ),
                "declare the agent the rule acts as in agents/, or require the package that declares it",
            ));
        }
    }

    /// A process: its document, the versions its call steps name, the task types of its task
    /// steps and the agent it runs as (a process may call a version that writes: on the process
    /// basis, while its step is open, on the decision of the task step it names).
    fn process(&self, object: &PackageObject, objects: &Objects, problems: &mut Vec<PackageProblem>) {
        if !crate::rule::is_rule_key(&object.key) {
            problems.push(PackageProblem::new(
                &object.file,
                "key",
                "invalid_process",
                format!("{:?} is not a process key", object.key),
                "use 1 to 200 lower-case letters, digits, `.`, `_`, `-`, starting with a letter or digit",
            ));
        }
        let spec = match crate::process::read_spec(object.spec()) {
            Ok(spec) => spec,
            Err(found) => {
                problems.push(PackageProblem::of(&object.file, &found));
                return;
            }
        };
        let found = spec.problems();
        for found in &found {
            problems.push(PackageProblem::of(&object.file, found));
        }
        let flagged = |path: &str| found.iter().any(|p| p.path == path);
        for (at, call) in spec.calls() {
            let (path, skill) = (format!("{at}.skill"), call.skill.as_str());
            if !flagged(&path) && !self.broken.contains(skill) {
                let writes = self.resolve(object, &path, skill, problems) == Some(SideEffects::ExternalWrite);
                if writes && call.decided_by.is_none() {
                    problems.push(PackageProblem::new(
                        &object.file,
                        &format!("{at}.decidedBy"),
                        "invalid_process",
                        format!("{skill} writes to the outside world: a process writes only what a person decided"),
                        "name the task step whose approved gate decides this call (decidedBy: <task step>), and read its inputs from that step's output",
                    ));
                }
            }
        }
        for (path, task_type) in spec.task_types() {
            let key = task_type.split('@').next().unwrap_or_default();
            if !flagged(&path) && !objects.task_types.contains(key) {
                problems.push(PackageProblem::new(
                    &object.file,
                    &path,
                    "unknown_reference",
                    format!("the task type {key} is not declared in this package or in a package it requires"),
                    "declare it in task-types/, or require the package that declares it",
                ));
            }
        }
        if !flagged("spec.identity.agent") && !objects.agents.contains(&spec.identity.agent) {
            problems.push(PackageProblem::new(
                &object.file,
                "spec.identity.agent",
                "unknown_reference",
                format!(
                    "the agent {} is not declared in this package or in a package it requires",
                    spec.identity.agent
                ),
                "declare the agent the process runs as in agents/, or require the package that declares it",
            ));
        }
    }
}
