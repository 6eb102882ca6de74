//! Processes as a package declares them (`processes/*.yaml`, `kind: Process`) and the API
//! publishes them: durable multi-step work, run by the core step after step as an agent
//! (`identity.agent`). Each step has an `id` and exactly one of:
//!
//! - `call {skill: name@version, input, retry?, onFailure?, decidedBy?}` — a call as the
//!   process's agent; an `external_write` version runs on the process basis while the step is
//!   open, and only on the decision of the task step it names (`decidedBy`);
//! - `task {type: key@version, title, customFields, approval?, draft?}` — a task made for
//!   people (with a gate asked for, and its draft made), waited for until it closes;
//! - `wait {fact: {kind, when?}, timeout?, onTimeout?} | {for: duration} | {until: time}` — a
//!   durable wait for a fact of the instance's workspace or for a time;
//! - `switch {cases: [{when, next}], default}` — the first case whose CEL condition holds;
//! - `set {name: value}` — variables;
//! - `end {status: completed | failed, reason?}`.
//!
//! A step goes on to `next`, or to the step after it; the last one ends the instance
//! `completed`. Values are literals, or paths over the instance's document — `$.input…`,
//! `$.vars.<name>…`, `$.steps.<id>.{output, status, task, fact}…`, `$.instance.{id, key,
//! workspace}` — and titles may hold `{{path}}`s; conditions are CEL over `input`, `vars`,
//! `steps` and `instance`. What needs the catalog (the versions, the task types, the agent) and
//! the CEL compiler is the callers'.

use std::collections::BTreeMap;

use crate::codes::Code;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::DocumentProblem;
use crate::SkillRef;
use crate::agent::is_agent_key;
use crate::rule::{RuleIdentity, is_fact_kind, is_rule_key, template_paths};

/// The most steps of one process, and the most cases of one switch.
pub const MAX_STEPS: usize = 200;
pub const MAX_CASES: usize = 50;
/// The most attempts of one call step (its first included).
pub const MAX_ATTEMPTS: u32 = 10;
/// The longest wait, in seconds (a year and a day).
pub const MAX_WAIT_SECONDS: u64 = 366 * 24 * 3600;

/// The `spec` of a `Process` document (with its `key`, the body of `POST /processes`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ProcessSpec {
    /// 1 to 50 characters, as skill versions; a published version never changes.
    pub version: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub display_name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The agent the instances run as: the authority of their calls, the creator of their tasks.
    pub identity: RuleIdentity,
    pub steps: Vec<Step>,
}

/// One step: an id and exactly one action.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Step {
    /// 1 to 64 of `a-z 0-9 _ -`, starting with a letter; unique in the process.
    pub id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call: Option<CallStep>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task: Option<TaskStep>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wait: Option<WaitStep>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub switch: Option<SwitchStep>,
    /// Variables: name → a literal or a path.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub set: Option<Map<String, Value>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub end: Option<EndStep>,
    /// The step after this one (by default the next in the list).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next: Option<String>,
}

/// `call`: one call of a pinned version.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CallStep {
    /// `name@version`.
    pub skill: String,
    /// The call's inputs: name → a literal or a path.
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub input: Map<String, Value>,
    /// Calls again after a failure, each a new call with a new key (on top of the contract's
    /// own retries within one call).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry: Option<StepRetry>,
    /// The step to go on to when the call failed for good; without one the instance fails.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub on_failure: Option<String>,
    /// The task step whose decision the call stands on: a version that writes to the outside
    /// world needs one. The call is made only when that step's task closed `done` with a gate a
    /// person other than the instance's starter approved, and its inputs read only literals,
    /// `$.instance…` and that step's output (the task as it closed, with the decision).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decided_by: Option<String>,
}

/// `call.retry`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct StepRetry {
    /// Calls in all, the first included: 1 to 10.
    pub attempts: u32,
    /// The wait before each call again (a duration: `30s`, `5m`); none by default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backoff: Option<String>,
}

/// `task`: a task for people, waited for until it closes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TaskStep {
    /// The task type, `key@version`.
    #[serde(rename = "type")]
    pub task_type: String,
    /// A literal, a path, or a text with `{{path}}`s.
    pub title: String,
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub custom_fields: Map<String, Value>,
    /// Asks for a gate approval with the task, as the process's agent (a person decides it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approval: Option<TaskApproval>,
    /// Makes the type's draft on the task as soon as it is made: a call of the draft's version
    /// bound to the task, whose output the reviewer starts from.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub draft: bool,
}

/// `task.approval`: the gate asked for with the task.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TaskApproval {
    /// The request's comment: a literal, a path, or a text with `{{path}}`s.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub comment: Option<String>,
}

/// `wait`: exactly one of `fact`, `for`, `until`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct WaitStep {
    /// A fact of the instance's workspace recorded since the instance started.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fact: Option<FactWait>,
    /// A duration from when the step began: `90s`, `10m`, `2h`, `7d`.
    #[serde(default, rename = "for", skip_serializing_if = "Option::is_none")]
    pub for_: Option<String>,
    /// An RFC 3339 time, or a path to one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub until: Option<String>,
    /// How long a fact is waited for at most (a duration).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout: Option<String>,
    /// The step to go on to when the timeout passed; without one the instance fails.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub on_timeout: Option<String>,
}

/// `wait.fact`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct FactWait {
    pub kind: String,
    /// A CEL condition over `fact`, `input`, `vars`, `steps` and `instance`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub when: Option<String>,
}

/// `switch`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SwitchStep {
    pub cases: Vec<Case>,
    /// The step when no case holds.
    pub default: String,
}

/// `switch.cases[]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Case {
    /// A CEL condition over `input`, `vars`, `steps` and `instance`.
    pub when: String,
    pub next: String,
}

/// `end`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct EndStep {
    pub status: EndStatus,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// How an `end` step ends its instance.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum EndStatus {
    Completed,
    Failed,
}

/// A step's one action, borrowed.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Action<'a> {
    Call(&'a CallStep),
    Task(&'a TaskStep),
    Wait(&'a WaitStep),
    Switch(&'a SwitchStep),
    Set(&'a Map<String, Value>),
    End(&'a EndStep),
}

impl Action<'_> {
    /// The action's word, as steps are shown and kept.
    pub fn word(self) -> &'static str {
        match self {
            Self::Call(_) => "call",
            Self::Task(_) => "task",
            Self::Wait(_) => "wait",
            Self::Switch(_) => "switch",
            Self::Set(_) => "set",
            Self::End(_) => "end",
        }
    }
}

impl Step {
    /// The step's action: `None` unless it has exactly one.
    pub fn action(&self) -> Option<Action<'_>> {
        let all = [
            self.call.as_ref().map(Action::Call),
            self.task.as_ref().map(Action::Task),
            self.wait.as_ref().map(Action::Wait),
            self.switch.as_ref().map(Action::Switch),
            self.set.as_ref().map(Action::Set),
            self.end.as_ref().map(Action::End),
        ];
        let mut present = all.into_iter().flatten();
        let first = present.next()?;
        present.next().is_none().then_some(first)
    }
}

/// A duration as processes write it — a whole number then `s`, `m`, `h` or `d` (`90s`, `7d`) —
/// in seconds; `None` when it is not one or longer than a year and a day.
pub fn parse_duration(text: &str) -> Option<u64> {
    let unit = text.chars().last()?;
    let number = &text[..text.len() - unit.len_utf8()];
    if number.is_empty() || number.len() > 9 || !number.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let n: u64 = number.parse().ok()?;
    let seconds = n.checked_mul(match unit {
        's' => 1,
        'm' => 60,
        'h' => 3600,
        'd' => 86_400,
        _ => return None,
    })?;
    (seconds <= MAX_WAIT_SECONDS).then_some(seconds)
}

/// Whether `id` names a step: 1 to 64 of `a-z 0-9 _ -`, starting with a letter.
pub fn is_step_id(id: &str) -> bool {
    (1..=64).contains(&id.len())
        && id.starts_with(|c: char| c.is_ascii_lowercase())
        && id.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"_-".contains(&b))
}

/// Whether `name` names a variable: 1 to 64 characters a path can read (`$.vars.<name>`).
pub fn is_variable(name: &str) -> bool {
    name.len() <= 64 && crate::paths::parse(&format!("$.{name}")).is_some_and(|segments| segments.len() == 1)
}

fn problem(path: impl Into<String>, message: impl Into<String>, hint: &str) -> DocumentProblem {
    DocumentProblem::new(path, Code::InvalidProcess, message, hint)
}

/// Reads a process document's `spec`: the spec, or the first problem of its shape, with its path.
pub fn read_spec(spec: &Value) -> Result<ProcessSpec, DocumentProblem> {
    if !spec.is_object() {
        return Err(problem(
            "spec",
            "a process's spec is a mapping",
            "write spec: {version, identity: {agent}, steps: [{id, call|task|wait|switch|set|end}]}",
        ));
    }
    crate::read_typed::<ProcessSpec>(spec, "spec").map_err(|unread| {
        let (path, error) = (unread.path, unread.reason);
        problem(
            path,
            format!("the process document does not read: {error}"),
            "a step has id, one of call {skill, input, retry, onFailure, decidedBy}, task {type, title, customFields, approval, draft}, wait {fact | for | until, timeout, onTimeout}, switch {cases, default}, set, end {status}, and next",
        )
    })
}

impl ProcessSpec {
    /// The step with `id`.
    pub fn step(&self, id: &str) -> Option<&Step> {
        self.steps.iter().find(|step| step.id == id)
    }

    /// The versions the process calls (`name@version`), with their paths.
    pub fn skills(&self) -> impl Iterator<Item = (String, &str)> {
        self.calls().map(|(at, call)| (format!("{at}.skill"), call.skill.as_str()))
    }

    /// The call steps, each with its path (`spec.steps[n].call`).
    pub fn calls(&self) -> impl Iterator<Item = (String, &CallStep)> {
        self.steps
            .iter()
            .enumerate()
            .filter_map(|(index, step)| step.call.as_ref().map(|call| (format!("spec.steps[{index}].call"), call)))
    }

    /// The task types (`key@version`) the process makes tasks of, with their paths.
    pub fn task_types(&self) -> impl Iterator<Item = (String, &str)> {
        self.steps.iter().enumerate().filter_map(|(index, step)| {
            step.task.as_ref().map(|task| (format!("spec.steps[{index}].task.type"), task.task_type.as_str()))
        })
    }

    /// The CEL conditions, with their paths: `(path, source, whether it reads a fact)`.
    pub fn conditions(&self) -> Vec<(String, &str, bool)> {
        let mut out = Vec::new();
        for (index, step) in self.steps.iter().enumerate() {
            if let Some(when) = step.wait.as_ref().and_then(|wait| wait.fact.as_ref()).and_then(|f| f.when.as_deref()) {
                out.push((format!("spec.steps[{index}].wait.fact.when"), when, true));
            }
            for (case_index, case) in step.switch.iter().flat_map(|switch| switch.cases.iter().enumerate()) {
                out.push((format!("spec.steps[{index}].switch.cases[{case_index}].when"), case.when.as_str(), false));
            }
        }
        out
    }

    /// The rules that need nothing but the document (conditions are compiled by the caller).
    pub fn problems(&self) -> Vec<DocumentProblem> {
        let mut out = Vec::new();
        if crate::SkillVersion::new(&self.version).is_err() {
            out.push(problem(
                "spec.version",
                format!("{:?} is not a version: 1 to 50 of letters, digits, `.`, `_`, `+`, `-`", self.version),
                "write e.g. \"1\" or \"2026.1\"",
            ));
        }
        if !is_agent_key(&self.identity.agent) {
            out.push(problem(
                "spec.identity.agent",
                format!("{:?} is not an agent key", self.identity.agent),
                "name the agent the instances run as by its key (agents/<key>.yaml)",
            ));
        }
        for (field, value) in [("displayName", &self.display_name), ("description", &self.description)] {
            if value.as_ref().is_some_and(|text| text.chars().count() > 2000) {
                out.push(problem(
                    format!("spec.{field}"),
                    format!("{field} has at most 2000 characters"),
                    "shorten it",
                ));
            }
        }
        if self.steps.is_empty() || self.steps.len() > MAX_STEPS {
            out.push(problem(
                "spec.steps",
                format!("{} steps; a process has 1 to {MAX_STEPS}", self.steps.len()),
                "list the steps in the order they run",
            ));
        }
        let mut ids: BTreeMap<&str, usize> = BTreeMap::new();
        for (index, step) in self.steps.iter().enumerate() {
            let at = format!("spec.steps[{index}].id");
            if !is_step_id(&step.id) {
                out.push(problem(
                    at,
                    format!("{:?} is not a step id: 1 to 64 of a-z 0-9 _ - starting with a letter", step.id),
                    "write e.g. draft",
                ));
            } else if ids.insert(&step.id, index).is_some() {
                out.push(problem(at, format!("two steps are called {}", step.id), "give each step its own id"));
            }
        }
        for (index, step) in self.steps.iter().enumerate() {
            self.step_problems(index, step, &ids, &mut out);
        }
        out
    }

    fn step_problems(&self, index: usize, step: &Step, ids: &BTreeMap<&str, usize>, out: &mut Vec<DocumentProblem>) {
        let at = format!("spec.steps[{index}]");
        let target = |path: String, id: &str, out: &mut Vec<DocumentProblem>| {
            if !ids.contains_key(id) {
                out.push(problem(path, format!("no step is called {id:?}"), "name a step of this process by its id"));
            }
        };
        if let Some(next) = &step.next {
            target(format!("{at}.next"), next, out);
        }
        let Some(action) = step.action() else {
            out.push(problem(
                at,
                format!("step {} has {} actions; a step has exactly one", step.id, self.action_count(step)),
                "write one of call, task, wait, switch, set, end",
            ));
            return;
        };
        if matches!(action, Action::Switch(_) | Action::End(_)) && step.next.is_some() {
            out.push(problem(
                format!("{at}.next"),
                format!("a {} step does not go on to a next step", action.word()),
                "remove next",
            ));
        }
        match action {
            Action::Call(call) => {
                let path = format!("{at}.call.skill");
                if call.skill.parse::<SkillRef>().is_err() {
                    out.push(problem(
                        path,
                        format!("{:?} is not a pinned version: name@version", call.skill),
                        "a process calls one pinned version: write name@version",
                    ));
                }
                mappings(&call.input, &format!("{at}.call.input"), ids, out);
                if let Some(retry) = &call.retry {
                    if !(1..=MAX_ATTEMPTS).contains(&retry.attempts) {
                        out.push(problem(
                            format!("{at}.call.retry.attempts"),
                            format!("{} attempts; 1 to {MAX_ATTEMPTS}", retry.attempts),
                            "count the first call too",
                        ));
                    }
                    if let Some(backoff) = &retry.backoff {
                        duration(backoff, &format!("{at}.call.retry.backoff"), out);
                    }
                }
                if let Some(on_failure) = &call.on_failure {
                    target(format!("{at}.call.onFailure"), on_failure, out);
                }
                if let Some(decided_by) = &call.decided_by {
                    self.decided_problems(&at, &step.id, decided_by, &call.input, out);
                }
            }
            Action::Task(task) => {
                let pinned = task
                    .task_type
                    .split_once('@')
                    .is_some_and(|(key, version)| is_rule_key(key) && crate::SkillVersion::new(version).is_ok());
                if !pinned {
                    out.push(problem(
                        format!("{at}.task.type"),
                        format!("{:?} is not a pinned task type: key@version", task.task_type),
                        "write e.g. claim-reply@1",
                    ));
                }
                let path = format!("{at}.task.title");
                value_problem(&Value::String(task.title.clone()), &path, ids, out);
                match template_paths(&task.title) {
                    Ok(paths) => {
                        for read in paths {
                            value_problem(&Value::String(read.to_owned()), &path, ids, out);
                        }
                    }
                    Err(message) => out.push(problem(path.clone(), message, "write {{$.input.claim}}")),
                }
                if task.title.trim().is_empty() || task.title.chars().count() > 500 {
                    out.push(problem(path, "the title is 1 to 500 characters", "write a literal or a path"));
                }
                mappings(&task.custom_fields, &format!("{at}.task.customFields"), ids, out);
                if let Some(comment) = task.approval.as_ref().and_then(|a| a.comment.as_ref()) {
                    let path = format!("{at}.task.approval.comment");
                    value_problem(&Value::String(comment.clone()), &path, ids, out);
                    match template_paths(comment) {
                        Ok(paths) => {
                            for read in paths {
                                value_problem(&Value::String(read.to_owned()), &path, ids, out);
                            }
                        }
                        Err(message) => out.push(problem(path.clone(), message, "write {{$.input.claim}}")),
                    }
                    if comment.chars().count() > 10_000 {
                        out.push(problem(path, "a comment has at most 10,000 characters", "shorten it"));
                    }
                }
            }
            Action::Wait(wait) => self.wait_problems(&at, wait, ids, out),
            Action::Switch(switch) => {
                if switch.cases.is_empty() || switch.cases.len() > MAX_CASES {
                    out.push(problem(
                        format!("{at}.switch.cases"),
                        format!("{} cases; a switch has 1 to {MAX_CASES}", switch.cases.len()),
                        "list the cases in the order they are tried",
                    ));
                }
                for (case_index, case) in switch.cases.iter().enumerate() {
                    target(format!("{at}.switch.cases[{case_index}].next"), &case.next, out);
                }
                target(format!("{at}.switch.default"), &switch.default, out);
            }
            Action::Set(set) => {
                if set.is_empty() {
                    out.push(problem(format!("{at}.set"), "a set step sets at least one variable", "name: value"));
                }
                for name in set.keys() {
                    if !is_variable(name) {
                        out.push(problem(
                            format!("{at}.set.{name}"),
                            format!(
                                "{name:?} is not a variable name: 1 to 64 of letters, digits, _ and -, starting with a letter or _"
                            ),
                            "write e.g. followedUp",
                        ));
                    }
                }
                mappings(set, &format!("{at}.set"), ids, out);
            }
            Action::End(end) => {
                if end.reason.as_ref().is_some_and(|reason| reason.chars().count() > 500) {
                    out.push(problem(format!("{at}.end.reason"), "a reason has at most 500 characters", "shorten it"));
                }
            }
        }
    }

    /// `call.decidedBy` names a task step, and the call's inputs read only what that decision
    /// fixed: literals, `$.instance.id`, `$.instance.workspace` and `$.steps.<decidedBy>.output…`.
    fn decided_problems(
        &self,
        at: &str,
        id: &str,
        decided_by: &str,
        input: &Map<String, Value>,
        out: &mut Vec<DocumentProblem>,
    ) {
        let path = format!("{at}.call.decidedBy");
        match self.step(decided_by) {
            Some(decider) if decider.task.is_some() && decider.id != id => {}
            _ => out.push(problem(
                path,
                format!("{decided_by:?} is not a task step of this process"),
                "name the task step whose approved gate decides this call (a person reviews its task)",
            )),
        }
        // The instance's key is the starter's (or a rule's work key): not the decision's.
        let allowed =
            [format!("$.steps.{decided_by}.output"), "$.instance.id".to_owned(), "$.instance.workspace".to_owned()];
        for (name, value) in input {
            let mut read = Vec::new();
            string_leaves(value, &mut read);
            for text in read.into_iter().filter(|text| text.starts_with('$')) {
                let fits = allowed.iter().any(|root| {
                    text == root.as_str()
                        || text.starts_with(&format!("{root}."))
                        || text.starts_with(&format!("{root}["))
                });
                if !fits {
                    out.push(problem(
                        format!("{at}.call.input.{name}"),
                        format!(
                            "{text:?}: a call that stands on step {decided_by}'s decision reads only what the decision fixed — literals, $.instance.id, $.instance.workspace and $.steps.{decided_by}.output…"
                        ),
                        "put the value in the reviewed task's customFields and read it from there, or write it in the process",
                    ));
                }
            }
        }
    }

    fn wait_problems(&self, at: &str, wait: &WaitStep, ids: &BTreeMap<&str, usize>, out: &mut Vec<DocumentProblem>) {
        let count = [wait.fact.is_some(), wait.for_.is_some(), wait.until.is_some()].iter().filter(|b| **b).count();
        if count != 1 {
            out.push(problem(
                format!("{at}.wait"),
                format!("a wait names {count} things to wait for; exactly one of fact, for, until"),
                "write wait: {fact: {kind}} or {for: 10m} or {until: $.input.followUpAt}",
            ));
        }
        if let Some(fact) = &wait.fact
            && !is_fact_kind(&fact.kind)
        {
            out.push(problem(
                format!("{at}.wait.fact.kind"),
                format!(
                    "{:?} is not a fact kind: 1 to 128 of a-z 0-9 . _ - starting with a letter or digit",
                    fact.kind
                ),
                "write e.g. claim.answered",
            ));
        }
        if let Some(text) = &wait.for_ {
            duration(text, &format!("{at}.wait.for"), out);
        }
        if let Some(until) = &wait.until {
            let path = format!("{at}.wait.until");
            if until.starts_with('$') {
                value_problem(&Value::String(until.clone()), &path, ids, out);
            } else if chrono::DateTime::parse_from_rfc3339(until).is_err() {
                out.push(problem(
                    path,
                    format!("{until:?} is neither an RFC 3339 time nor a path"),
                    "write e.g. 2027-01-31T09:00:00Z or $.input.followUpAt",
                ));
            }
        }
        if wait.timeout.is_some() && wait.fact.is_none() {
            out.push(problem(format!("{at}.wait.timeout"), "only a wait for a fact has a timeout", "remove timeout"));
        }
        if let Some(timeout) = &wait.timeout {
            duration(timeout, &format!("{at}.wait.timeout"), out);
        }
        if let Some(on_timeout) = &wait.on_timeout {
            if wait.timeout.is_none() {
                out.push(problem(format!("{at}.wait.onTimeout"), "onTimeout needs a timeout", "add timeout: 7d"));
            }
            if !ids.contains_key(on_timeout.as_str()) {
                out.push(problem(
                    format!("{at}.wait.onTimeout"),
                    format!("no step is called {on_timeout:?}"),
                    "name a step of this process by its id",
                ));
            }
        }
    }

    fn action_count(&self, step: &Step) -> usize {
        [
            step.call.is_some(),
            step.task.is_some(),
            step.wait.is_some(),
            step.switch.is_some(),
            step.set.is_some(),
            step.end.is_some(),
        ]
        .iter()
        .filter(|b| **b)
        .count()
    }
}

/// Every string inside `value` (an object's values, an array's items).
fn string_leaves<'v>(value: &'v Value, out: &mut Vec<&'v str>) {
    match value {
        Value::String(text) => out.push(text),
        Value::Array(items) => items.iter().for_each(|item| string_leaves(item, out)),
        Value::Object(map) => map.values().for_each(|item| string_leaves(item, out)),
        _ => {}
    }
}

fn duration(text: &str, at: &str, out: &mut Vec<DocumentProblem>) {
    if parse_duration(text).is_none() {
        out.push(problem(
            at,
            format!("{text:?} is not a duration: a whole number then s, m, h or d, at most 366d"),
            "write e.g. 30s, 10m, 2h or 7d",
        ));
    }
}

/// The problems of a name → value mapping (inputs, custom fields, variables).
fn mappings(map: &Map<String, Value>, at: &str, ids: &BTreeMap<&str, usize>, out: &mut Vec<DocumentProblem>) {
    if map.len() > crate::rule::MAX_MAPPINGS {
        out.push(problem(at, format!("{} entries; at most {}", map.len(), crate::rule::MAX_MAPPINGS), "map fewer"));
        return;
    }
    for (name, value) in map {
        value_problem(value, &format!("{at}.{name}"), ids, out);
    }
}

/// The roots a process's paths read.
const ROOTS: [&str; 4] = ["input", "vars", "steps", "instance"];

/// A `$…` text must be a path over a root of the instance's document, and `$.steps.<id>` must
/// name a step.
fn value_problem(value: &Value, at: &str, ids: &BTreeMap<&str, usize>, out: &mut Vec<DocumentProblem>) {
    let Value::String(text) = value else { return };
    if !text.starts_with('$') {
        return;
    }
    let Some(segments) = crate::paths::parse(text) else {
        out.push(problem(
            at,
            format!("{text:?} is not a path: `$` then .name and [n] segments"),
            "write e.g. $.input.claim",
        ));
        return;
    };
    use crate::paths::Segment;
    let root = match segments.first() {
        Some(Segment::Key(root)) if ROOTS.contains(&root.as_str()) => root.as_str(),
        _ => {
            out.push(problem(
                at,
                format!("{text} reads none of $.input, $.vars, $.steps, $.instance"),
                "a process's paths read its input, its variables, its steps' results or the instance",
            ));
            return;
        }
    };
    if root == "instance" && !matches!(segments.get(1), None | Some(Segment::Key(_))) {
        out.push(problem(
            at,
            format!("{text} reads no field of the instance"),
            "read $.instance.id, .key or .workspace",
        ));
        return;
    }
    if root == "instance"
        && let Some(Segment::Key(field)) = segments.get(1)
        && !["id", "key", "workspace"].contains(&field.as_str())
    {
        out.push(problem(
            at,
            format!("{text} reads the instance's {field:?}, which it has not"),
            "read $.instance.id, .key or .workspace",
        ));
    }
    if root == "steps"
        && let Some(Segment::Key(id)) = segments.get(1)
        && !ids.contains_key(id.as_str())
    {
        out.push(problem(at, format!("{text} reads step {id:?}, and there is none"), "read $.steps.<id of a step>"));
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn spec() -> Value {
        json!({
            "version": "1",
            "identity": {"agent": "claims-desk"},
            "steps": [
                {"id": "draft", "call": {"skill": "claim.draft_reply@1", "input": {"claim": "$.input.claim"},
                                         "retry": {"attempts": 3, "backoff": "10s"}, "onFailure": "review"}},
                {"id": "review", "task": {"type": "claim-reply@1", "title": "Reply to {{$.input.claim}}",
                                          "customFields": {"draft": "$.steps.draft.output.text"}}},
                {"id": "route", "switch": {"cases": [{"when": "steps.review.task.status == 'done'", "next": "later"}],
                                           "default": "stop"}},
                {"id": "later", "wait": {"for": "7d"}},
                {"id": "remember", "set": {"followedUp": true}},
                {"id": "follow", "call": {"skill": "claim.follow_up@1", "decidedBy": "review",
                                          "input": {"claim": "$.steps.review.output.customFields.claim",
                                                    "text": "Was your claim settled?", "instance": "$.instance.id"}},
                 "next": "done"},
                {"id": "stop", "end": {"status": "failed", "reason": "the reply was not sent"}},
                {"id": "done", "end": {"status": "completed"}}
            ]
        })
    }

    #[test]
    fn a_whole_process_reads_without_problems() {
        let process = read_spec(&spec()).expect("reads");
        assert_eq!(process.problems(), []);
        assert_eq!(
            process.skills().map(|(_, s)| s.to_owned()).collect::<Vec<_>>(),
            ["claim.draft_reply@1", "claim.follow_up@1"]
        );
        assert_eq!(
            process.task_types().map(|(p, t)| (p, t.to_owned())).collect::<Vec<_>>(),
            [("spec.steps[1].task.type".to_owned(), "claim-reply@1".to_owned())]
        );
        assert_eq!(process.conditions().len(), 1);
        assert_eq!(process.step("later").and_then(Step::action).map(Action::word), Some("wait"));
    }

    #[test]
    fn each_problem_names_its_path() {
        let unknown = read_spec(&json!({"version": "1", "identity": {"agent": "a"}, "steps": [], "extra": 1}));
        assert!(unknown.expect_err("unknown field").message.contains("extra"));
        let cases = [
            ("/steps/0/call/skill", json!("claim.draft_reply"), "spec.steps[0].call.skill"),
            ("/steps/0/call/input/claim", json!("$.fact.key"), "spec.steps[0].call.input.claim"),
            ("/steps/0/call/retry/attempts", json!(11), "spec.steps[0].call.retry.attempts"),
            ("/steps/0/call/retry/backoff", json!("10 seconds"), "spec.steps[0].call.retry.backoff"),
            ("/steps/0/call/onFailure", json!("nowhere"), "spec.steps[0].call.onFailure"),
            ("/steps/1/task/type", json!("claim-reply"), "spec.steps[1].task.type"),
            ("/steps/1/task/customFields/draft", json!("$.steps.nope.output"), "spec.steps[1].task.customFields.draft"),
            ("/steps/1/task/title", json!("Reply {{$.input.claim"), "spec.steps[1].task.title"),
            ("/steps/2/switch/default", json!("nowhere"), "spec.steps[2].switch.default"),
            ("/steps/2/switch/cases/0/next", json!("nowhere"), "spec.steps[2].switch.cases[0].next"),
            ("/steps/3/wait/for", json!("7 days"), "spec.steps[3].wait.for"),
            ("/steps/3/wait", json!({"for": "7d", "until": "2027-01-01T00:00:00Z"}), "spec.steps[3].wait"),
            ("/steps/3/wait", json!({"until": "tomorrow"}), "spec.steps[3].wait.until"),
            ("/steps/3/wait", json!({"for": "1d", "timeout": "1d"}), "spec.steps[3].wait.timeout"),
            ("/steps/3/wait", json!({"fact": {"kind": "Claim Answered"}}), "spec.steps[3].wait.fact.kind"),
            (
                "/steps/3/wait",
                json!({"fact": {"kind": "a"}, "timeout": "1d", "onTimeout": "x"}),
                "spec.steps[3].wait.onTimeout",
            ),
            ("/steps/4/set", json!({"Bad Name": 1}), "spec.steps[4].set.Bad Name"),
            ("/steps/5/next", json!("nowhere"), "spec.steps[5].next"),
            ("/steps/5/call/decidedBy", json!("later"), "spec.steps[5].call.decidedBy"),
            ("/steps/5/call/decidedBy", json!("nowhere"), "spec.steps[5].call.decidedBy"),
            ("/steps/5/call/input/claim", json!("$.input.claim"), "spec.steps[5].call.input.claim"),
            ("/steps/5/call/input/text", json!({"nested": ["$.vars.text"]}), "spec.steps[5].call.input.text"),
            ("/steps/5/call/input/claim", json!("$.steps.review.outputs"), "spec.steps[5].call.input.claim"),
            ("/steps/5/call/input/instance", json!("$.instance.key"), "spec.steps[5].call.input.instance"),
            ("/steps/0/call/input/claim", json!("$.instance.startedBy"), "spec.steps[0].call.input.claim"),
            (
                "/steps/1/task",
                json!({"type": "claim-reply@1", "title": "x", "approval": {"comment": "Drafted: {{$.steps.nope.output}}"}}),
                "spec.steps[1].task.approval.comment",
            ),
            ("/steps/7/id", json!("stop"), "spec.steps[7].id"),
            ("/steps/4/id", json!("Remember"), "spec.steps[4].id"),
            ("/identity/agent", json!("Desk Bot"), "spec.identity.agent"),
            ("/version", json!(""), "spec.version"),
        ];
        for (pointer, value, path) in cases {
            let mut document = spec();
            *document.pointer_mut(pointer).expect(pointer) = value;
            let problems = read_spec(&document).expect("reads").problems();
            assert!(
                problems.iter().any(|p| p.path == path && p.code.as_str() == "invalid_process"),
                "{pointer}: {problems:?}"
            );
        }
        let mut two = spec();
        two["steps"][4]["end"] = json!({"status": "completed"});
        let problems = read_spec(&two).expect("reads").problems();
        assert!(problems.iter().any(|p| p.path == "spec.steps[4]" && p.message.contains("2 actions")), "{problems:?}");
        let mut next_of_end = spec();
        next_of_end["steps"][6]["next"] = json!("done");
        let problems = read_spec(&next_of_end).expect("reads").problems();
        assert!(problems.iter().any(|p| p.path == "spec.steps[6].next"), "{problems:?}");
        let mut none = spec();
        none["steps"] = json!([]);
        assert!(read_spec(&none).expect("reads").problems().iter().any(|p| p.path == "spec.steps"));
    }

    #[test]
    fn durations_are_whole_units_up_to_a_year_and_a_day() {
        assert_eq!(parse_duration("90s"), Some(90));
        assert_eq!(parse_duration("10m"), Some(600));
        assert_eq!(parse_duration("2h"), Some(7200));
        assert_eq!(parse_duration("7d"), Some(604_800));
        assert_eq!(parse_duration("366d"), Some(MAX_WAIT_SECONDS));
        for bad in ["", "s", "10", "1.5h", "-1s", "367d", "10 m", "1w", "9999999999s", "1é"] {
            assert_eq!(parse_duration(bad), None, "{bad}");
        }
    }
}
