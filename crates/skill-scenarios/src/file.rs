//! A scenario test file, read as written (`tests/<name>.test.yaml`): its subject, what is given,
//! the mocks that answer its skills' calls, and its steps. Anything it cannot read is refused
//! with the path in the file, what was expected there, and what to write instead.

use std::collections::BTreeMap;

use serde_json::{Map, Value};
use skill_api::TestFailure;
use skill_conditions::Condition;

/// The workspace a test works in when its `given` names none.
pub const DEFAULT_WORKSPACE: &str = "test";
/// The most steps one test has.
pub const MAX_STEPS: usize = 500;

/// What a test tests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Subject {
    Process,
    Rule,
    TaskType,
}

impl Subject {
    /// The field naming the subject's key.
    pub fn field(self) -> &'static str {
        match self {
            Self::Process => "process",
            Self::Rule => "rule",
            Self::TaskType => "taskType",
        }
    }
}

/// A test as read.
#[derive(Debug, Clone)]
pub struct Test {
    pub name: String,
    pub subject: Subject,
    /// The subject's key (of the package's own objects).
    pub key: String,
    pub version: Option<String>,
    pub given: Given,
    /// `name@version` → answers, in call order.
    pub mocks: BTreeMap<String, Vec<Answer>>,
    pub steps: Vec<Step>,
}

/// What is there before the steps.
#[derive(Debug, Clone, Default)]
pub struct Given {
    /// The workspace the test works in (`test` without one).
    pub workspace: String,
    /// A task type's test: the task made before the first step.
    pub task: Option<GivenTask>,
    /// Facts recorded before the first step.
    pub facts: Vec<FactIn>,
}

#[derive(Debug, Clone, Default)]
pub struct GivenTask {
    pub title: String,
    pub custom_fields: Map<String, Value>,
    /// A gate asked for with the task, with this comment.
    pub approval: Option<String>,
}

#[derive(Debug, Clone)]
pub struct FactIn {
    pub kind: String,
    pub key: String,
    pub data: Value,
}

/// One answer of a mock.
#[derive(Debug, Clone)]
pub struct Answer {
    pub reply: Reply,
    /// Only for the calls of this process step.
    pub step: Option<String>,
    /// Only for calls whose input this holds for (`input.<field>`).
    pub when: Option<std::sync::Arc<Condition>>,
    /// Where it is written (`mocks.skills.<ref>[<n>]`).
    pub path: String,
}

#[derive(Debug, Clone)]
pub enum Reply {
    Output(Value),
    Error {
        code: String,
        status: Option<u16>,
        detail: Option<String>,
    },
    /// The call is left pending.
    Timeout,
}

/// One step.
#[derive(Debug, Clone)]
pub struct Step {
    /// `steps[<n>]`.
    pub path: String,
    pub action: Action,
}

#[derive(Debug, Clone)]
pub enum Action {
    /// A person decides the gate of the task (asked for when none is pending).
    Approve {
        approved: bool,
        by: String,
        comment: Option<String>,
        task_step: Option<String>,
    },
    /// The task closes with this status.
    Complete {
        status: String,
        task_step: Option<String>,
    },
    Fact(FactIn),
    Start {
        input: Value,
        key: Option<String>,
    },
    /// The clock moves on this many seconds.
    Advance(u64),
    Expect(Box<Expect>),
}

#[derive(Debug, Clone, Default)]
pub struct Expect {
    pub invoke_skill: Option<Vec<ExpectedCall>>,
    pub no_side_effects: bool,
    pub ensure_work: Option<Vec<Value>>,
    pub status: Option<String>,
    pub step: Option<String>,
    pub vars: Option<Value>,
    pub comments: Option<Vec<String>>,
    pub result: Option<String>,
}

#[derive(Debug, Clone)]
pub struct ExpectedCall {
    pub skill: String,
    pub inputs: Option<Value>,
}

type Refusal = Box<TestFailure>;

fn invalid(path: &str, message: impl Into<String>) -> Refusal {
    Box::new(TestFailure::new("invalid_test", Some(path.to_owned()), message))
}

fn object<'a>(value: &'a Value, path: &str) -> Result<&'a Map<String, Value>, Refusal> {
    value.as_object().ok_or_else(|| invalid(path, format!("{path} is a mapping, not {}", kind(value))))
}

fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "empty",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "text",
        Value::Array(_) => "a list",
        Value::Object(_) => "a mapping",
    }
}

fn text(value: Option<&Value>, path: &str) -> Result<Option<String>, Refusal> {
    match value {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(text)) => Ok(Some(text.clone())),
        // `version: 1` is meant as text.
        Some(Value::Number(number)) => Ok(Some(number.to_string())),
        Some(other) => Err(invalid(path, format!("{path} is text, not {}", kind(other)))),
    }
}

fn only(map: &Map<String, Value>, path: &str, known: &[&str]) -> Result<(), Refusal> {
    match map.keys().find(|key| !known.contains(&key.as_str())) {
        Some(unknown) => {
            let at = if path.is_empty() { unknown.clone() } else { format!("{path}.{unknown}") };
            Err(invalid(&at, format!("{at} is not a field here; the fields are {}", known.join(", "))))
        }
        None => Ok(()),
    }
}

/// Reads a test document.
pub fn read(document: &Value) -> Result<Test, Refusal> {
    let top = object(document, "the test")?;
    only(
        top,
        "",
        &[
            "name",
            "description",
            "subject",
            "process",
            "rule",
            "taskType",
            "version",
            "given",
            "mocks",
            "steps",
            "coverage",
        ],
    )?;
    let name = text(top.get("name"), "name")?.unwrap_or_default();
    if name.trim().is_empty() || name.chars().count() > 200 {
        return Err(invalid("name", "a test has a name of 1 to 200 characters"));
    }
    let subject = match text(top.get("subject"), "subject")?.as_deref() {
        None | Some("process") => Subject::Process,
        Some("rule") => Subject::Rule,
        Some("taskType") => Subject::TaskType,
        Some(other) => return Err(invalid("subject", format!("subject is process, rule or taskType, not {other:?}"))),
    };
    let key = text(top.get(subject.field()), subject.field())?.filter(|key| !key.is_empty()).ok_or_else(|| {
        invalid(subject.field(), format!("a {} test names its subject: `{}: <key>`", subject.field(), subject.field()))
    })?;
    let version = text(top.get("version"), "version")?;
    let given = given(top.get("given"), subject)?;
    let mocks = mocks(top.get("mocks"))?;
    let steps = match top.get("steps") {
        Some(Value::Array(steps)) if !steps.is_empty() && steps.len() <= MAX_STEPS => steps,
        _ => return Err(invalid("steps", format!("steps is a list of 1 to {MAX_STEPS} steps"))),
    };
    let steps = steps.iter().enumerate().map(|(n, step)| read_step(step, n, subject)).collect::<Result<_, _>>()?;
    Ok(Test { name, subject, key, version, given, mocks, steps })
}

fn given(value: Option<&Value>, subject: Subject) -> Result<Given, Refusal> {
    let mut given = Given { workspace: DEFAULT_WORKSPACE.to_owned(), ..Given::default() };
    let Some(value) = value.filter(|value| !value.is_null()) else {
        if subject == Subject::TaskType {
            given.task = Some(GivenTask::default());
        }
        return Ok(given);
    };
    let map = object(value, "given")?;
    only(map, "given", &["workspace", "task", "facts"])?;
    if let Some(workspace) = text(map.get("workspace"), "given.workspace")? {
        if !skill_contract::agent::is_workspace_key(&workspace) {
            return Err(invalid(
                "given.workspace",
                format!("a workspace key is 1 to 100 lowercase letters, digits, - or _, not {workspace:?}"),
            ));
        }
        given.workspace = workspace;
    }
    if let Some(task) = map.get("task") {
        if subject != Subject::TaskType {
            return Err(invalid("given.task", "given.task is the task of a taskType test"));
        }
        let fields = object(task, "given.task")?;
        only(fields, "given.task", &["title", "customFields", "approval"])?;
        let custom_fields = match fields.get("customFields") {
            None | Some(Value::Null) => Map::new(),
            Some(value) => object(value, "given.task.customFields")?.clone(),
        };
        let approval = match fields.get("approval") {
            None | Some(Value::Null | Value::Bool(false)) => None,
            Some(Value::Bool(true)) => Some(String::new()),
            Some(Value::Object(approval)) => {
                Some(text(approval.get("comment"), "given.task.approval.comment")?.unwrap_or_default())
            }
            Some(other) => {
                return Err(invalid(
                    "given.task.approval",
                    format!("approval is true or {{comment}}, not {}", kind(other)),
                ));
            }
        };
        let title = text(fields.get("title"), "given.task.title")?.unwrap_or_default();
        given.task = Some(GivenTask { title, custom_fields, approval });
    } else if subject == Subject::TaskType {
        given.task = Some(GivenTask::default());
    }
    if let Some(facts) = map.get("facts") {
        let Value::Array(facts) = facts else { return Err(invalid("given.facts", "given.facts is a list of facts")) };
        for (n, fact) in facts.iter().enumerate() {
            given.facts.push(fact_in(fact, &format!("given.facts[{n}]"))?);
        }
    }
    Ok(given)
}

fn fact_in(value: &Value, path: &str) -> Result<FactIn, Refusal> {
    let map = object(value, path)?;
    only(map, path, &["kind", "key", "data"])?;
    let kind_of = text(map.get("kind"), &format!("{path}.kind"))?
        .filter(|kind| !kind.is_empty())
        .ok_or_else(|| invalid(&format!("{path}.kind"), "a fact has a kind"))?;
    let key = text(map.get("key"), &format!("{path}.key"))?.unwrap_or_default();
    let data = map.get("data").cloned().unwrap_or_else(|| Value::Object(Map::new()));
    Ok(FactIn { kind: kind_of, key, data })
}

fn mocks(value: Option<&Value>) -> Result<BTreeMap<String, Vec<Answer>>, Refusal> {
    let mut found = BTreeMap::new();
    let Some(value) = value.filter(|value| !value.is_null()) else { return Ok(found) };
    let map = object(value, "mocks")?;
    only(map, "mocks", &["skills", "agents", "recall"])?;
    for unsupported in ["agents", "recall"] {
        if map.contains_key(unsupported) {
            return Err(invalid(
                &format!("mocks.{unsupported}"),
                format!("mocks.{unsupported} is not supported: only skills' calls are mocked (mocks.skills)"),
            ));
        }
    }
    let Some(skills) = map.get("skills") else { return Ok(found) };
    for (reference, answers) in object(skills, "mocks.skills")? {
        let at = format!("mocks.skills.{reference}");
        let well_formed = reference.split_once('@').is_some_and(|(name, version)| {
            !name.is_empty()
                && !version.is_empty()
                && !reference.chars().any(char::is_whitespace)
                && !version.contains('@')
        });
        if !well_formed {
            return Err(invalid(&at, format!("{reference:?} is not name@version: a mock answers one pinned version")));
        }
        let Value::Array(answers) = answers else {
            return Err(invalid(&at, format!("{at} is a list of answers, in call order")));
        };
        if answers.is_empty() {
            return Err(invalid(&at, format!("{at} has at least one answer")));
        }
        let read = answers
            .iter()
            .enumerate()
            .map(|(n, answer)| read_answer(answer, &format!("{at}[{n}]")))
            .collect::<Result<_, _>>()?;
        found.insert(reference.clone(), read);
    }
    Ok(found)
}

fn read_answer(value: &Value, path: &str) -> Result<Answer, Refusal> {
    let map = object(value, path)?;
    only(map, path, &["output", "error", "timeout", "step", "when"])?;
    let given: Vec<&str> = ["output", "error", "timeout"].into_iter().filter(|key| map.contains_key(*key)).collect();
    if given.len() != 1 {
        return Err(invalid(
            path,
            format!(
                "an answer is exactly one of output, error, timeout (here: {})",
                if given.is_empty() { "none".to_owned() } else { given.join(", ") }
            ),
        ));
    }
    let reply = match given[0] {
        "output" => Reply::Output(map["output"].clone()),
        "timeout" => match map["timeout"] {
            Value::Bool(true) => Reply::Timeout,
            _ => return Err(invalid(&format!("{path}.timeout"), "timeout is true: the call is left pending")),
        },
        _ => {
            let at = format!("{path}.error");
            let error = object(&map["error"], &at)?;
            only(error, &at, &["type", "status", "detail"])?;
            let code =
                text(error.get("type"), &format!("{at}.type"))?.filter(|code| !code.is_empty()).ok_or_else(|| {
                    invalid(&format!("{at}.type"), "an error has a type: the call fails with it as its code")
                })?;
            let status = match error.get("status") {
                None | Some(Value::Null) => None,
                Some(value) => Some(
                    value
                        .as_u64()
                        .and_then(|n| u16::try_from(n).ok())
                        .ok_or_else(|| invalid(&format!("{at}.status"), "status is a number"))?,
                ),
            };
            Reply::Error { code, status, detail: text(error.get("detail"), &format!("{at}.detail"))? }
        }
    };
    let when = match text(map.get("when"), &format!("{path}.when"))? {
        None => None,
        Some(source) => {
            Some(std::sync::Arc::new(Condition::compile_reading(&source, &["input"]).map_err(|error| {
                invalid(
                    &format!("{path}.when"),
                    format!("{path}.when does not compile: {error} (it reads the call's input as `input`)"),
                )
            })?))
        }
    };
    Ok(Answer { reply, step: text(map.get("step"), &format!("{path}.step"))?, when, path: path.to_owned() })
}

fn read_step(value: &Value, n: usize, subject: Subject) -> Result<Step, Refusal> {
    let path = format!("steps[{n}]");
    let map = object(value, &path)?;
    if map.len() != 1 {
        return Err(invalid(&path, format!("a step is one of {}", allowed(subject).join(", "))));
    }
    let (word, body) = map.iter().next().expect("one entry");
    if !allowed(subject).contains(&word.as_str()) {
        let message = if word == "verify" {
            "verify is not supported: this core keeps acceptance criteria but does not check them yet".to_owned()
        } else {
            format!("a {} test's step is one of {}, not {word}", subject.field(), allowed(subject).join(", "))
        };
        return Err(invalid(&format!("{path}.{word}"), message));
    }
    let at = format!("{path}.{word}");
    let action = match word.as_str() {
        "approve" => {
            let fields = object(body, &at)?;
            only(fields, &at, &["decision", "by", "gate", "comment", "task"])?;
            let approved = match text(fields.get("decision"), &format!("{at}.decision"))?.as_deref() {
                Some("approved") => true,
                Some("rejected") => false,
                _ => return Err(invalid(&format!("{at}.decision"), "decision is approved or rejected")),
            };
            match text(fields.get("gate"), &format!("{at}.gate"))?.as_deref() {
                None | Some("default") => {}
                Some(other) => {
                    return Err(invalid(&format!("{at}.gate"), format!("a task has one gate, default, not {other:?}")));
                }
            }
            let by =
                text(fields.get("by"), &format!("{at}.by"))?.unwrap_or_else(|| crate::scratch::REVIEWER.to_owned());
            if by.is_empty() || by.chars().count() > 200 || by.chars().any(char::is_control) {
                return Err(invalid(
                    &format!("{at}.by"),
                    "by names a person: 1 to 200 characters and no control characters",
                ));
            }
            Action::Approve {
                approved,
                by,
                comment: text(fields.get("comment"), &format!("{at}.comment"))?,
                task_step: text(fields.get("task"), &format!("{at}.task"))?,
            }
        }
        "complete" => {
            let fields = match body {
                Value::Null => Map::new(),
                other => object(other, &at)?.clone(),
            };
            only(&fields, &at, &["status", "task"])?;
            let status = text(fields.get("status"), &format!("{at}.status"))?.unwrap_or_else(|| "done".to_owned());
            if !["done", "failed", "cancelled"].contains(&status.as_str()) {
                return Err(invalid(&format!("{at}.status"), "a task closes done, failed or cancelled"));
            }
            Action::Complete { status, task_step: text(fields.get("task"), &format!("{at}.task"))? }
        }
        "fact" => Action::Fact(fact_in(body, &at)?),
        "start" => {
            let fields = match body {
                Value::Null => Map::new(),
                other => object(other, &at)?.clone(),
            };
            only(&fields, &at, &["input", "key"])?;
            let input = fields.get("input").cloned().unwrap_or_else(|| Value::Object(Map::new()));
            Action::Start { input, key: text(fields.get("key"), &format!("{at}.key"))? }
        }
        "advance" => {
            let duration = text(Some(body), &at)?.unwrap_or_default();
            let seconds = skill_contract::process::parse_duration(&duration).ok_or_else(|| {
                invalid(&at, format!("advance is a duration like 30s, 15m, 25h or 8d, not {duration:?}"))
            })?;
            Action::Advance(seconds)
        }
        _ => Action::Expect(Box::new(expect(body, &at, subject)?)),
    };
    Ok(Step { path, action })
}

fn allowed(subject: Subject) -> &'static [&'static str] {
    match subject {
        Subject::TaskType => &["approve", "complete", "expect"],
        Subject::Rule => &["fact", "expect"],
        Subject::Process => &["start", "fact", "approve", "complete", "advance", "expect"],
    }
}

fn expect(body: &Value, at: &str, subject: Subject) -> Result<Expect, Refusal> {
    let fields = object(body, at)?;
    let known: &[&str] = match subject {
        Subject::TaskType => &["ensureWork", "invokeSkill", "status", "comments", "noSideEffects"],
        Subject::Rule => &["result", "ensureWork", "invokeSkill", "noSideEffects"],
        Subject::Process => &["step", "status", "vars", "invokeSkill", "noSideEffects"],
    };
    only(fields, at, known)?;
    let mut expect = Expect::default();
    if let Some(calls) = fields.get("invokeSkill") {
        let Value::Array(calls) = calls else {
            return Err(invalid(
                &format!("{at}.invokeSkill"),
                "invokeSkill is a list of {skill: name@version, inputs?}",
            ));
        };
        let mut read = Vec::new();
        for (n, call) in calls.iter().enumerate() {
            let path = format!("{at}.invokeSkill[{n}]");
            let call = object(call, &path)?;
            only(call, &path, &["skill", "inputs"])?;
            let skill = text(call.get("skill"), &format!("{path}.skill"))?
                .filter(|skill| skill.contains('@'))
                .ok_or_else(|| invalid(&format!("{path}.skill"), "skill is name@version"))?;
            read.push(ExpectedCall { skill, inputs: call.get("inputs").cloned() });
        }
        expect.invoke_skill = Some(read);
    }
    expect.no_side_effects = match fields.get("noSideEffects") {
        None | Some(Value::Null | Value::Bool(false)) => false,
        Some(Value::Bool(true)) => true,
        Some(_) => return Err(invalid(&format!("{at}.noSideEffects"), "noSideEffects is true or false")),
    };
    if let Some(work) = fields.get("ensureWork") {
        let Value::Array(work) = work else {
            return Err(invalid(&format!("{at}.ensureWork"), "ensureWork is a list of the work expected"));
        };
        expect.ensure_work = Some(work.clone());
    }
    expect.status = match fields.get("status") {
        Some(Value::Object(status)) => text(status.get("key"), &format!("{at}.status.key"))?,
        other => text(other, &format!("{at}.status"))?,
    };
    expect.step = text(fields.get("step"), &format!("{at}.step"))?;
    expect.vars = fields.get("vars").cloned();
    if let Some(comments) = fields.get("comments") {
        let texts = comments
            .as_array()
            .and_then(|items| items.iter().map(|item| item.as_str().map(str::to_owned)).collect::<Option<Vec<_>>>());
        expect.comments =
            Some(texts.ok_or_else(|| {
                invalid(&format!("{at}.comments"), "comments is a list of texts each comment contains")
            })?);
    }
    expect.result = text(fields.get("result"), &format!("{at}.result"))?;
    Ok(expect)
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::{Action, Reply, Subject, read};

    fn refused(document: &Value) -> (String, String) {
        let refusal = read(document).expect_err("refused");
        (refusal.path.clone().unwrap_or_default(), refusal.message.clone())
    }

    #[test]
    fn a_test_is_read_as_written() {
        let test = read(&json!({"name": "n", "subject": "process", "process": "p", "version": 2,
            "mocks": {"skills": {"a.b@1": [{"output": {"x": 1}, "step": "s", "when": "input.x > 0"}, {"timeout": true}]}},
            "steps": [{"start": {"input": {"x": 1}}}, {"advance": "25h"}, {"expect": {"step": "s", "vars": {"x": 1}}}]}))
        .expect("read");
        assert_eq!((test.subject, test.key.as_str(), test.version.as_deref()), (Subject::Process, "p", Some("2")));
        assert_eq!(test.given.workspace, "test");
        let answers = &test.mocks["a.b@1"];
        assert!(matches!(answers[0].reply, Reply::Output(_)) && matches!(answers[1].reply, Reply::Timeout));
        assert_eq!(answers[0].path, "mocks.skills.a.b@1[0]");
        assert!(matches!(test.steps[1].action, Action::Advance(90_000)));
    }

    #[test]
    fn what_cannot_be_read_is_refused_at_its_path() {
        let base = |steps: Value| json!({"name": "n", "subject": "rule", "rule": "r", "steps": steps});
        let fact = json!([{"fact": {"kind": "k"}}]);
        let cases = [
            (
                json!({"name": "n", "rule": "r", "subject": "rule", "steps": fact, "given": {"workspace": "No Spaces"}}),
                "given.workspace",
            ),
            (json!({"name": "n", "subject": "rule", "rule": "r", "steps": fact, "extra": 1}), "extra"),
            (json!({"name": "", "subject": "rule", "rule": "r", "steps": fact}), "name"),
            (json!({"name": "n", "subject": "rule", "steps": fact}), "rule"),
            (base(json!([{"start": {}}])), "steps[0].start"),
            (base(json!([{"fact": {"kind": "k"}, "expect": {}}])), "steps[0]"),
            (base(json!([{"expect": {"step": "x"}}])), "steps[0].expect.step"),
            (json!({"name": "n", "process": "p", "steps": [{"advance": "1w"}]}), "steps[0].advance"),
            (
                json!({"name": "n", "process": "p", "steps": [{"start": {}}],
                       "mocks": {"skills": {"a@1": [{"output": {}, "timeout": true}]}}}),
                "mocks.skills.a@1[0]",
            ),
            (
                json!({"name": "n", "process": "p", "steps": [{"start": {}}], "mocks": {"skills": {"a": [{"timeout": true}]}}}),
                "mocks.skills.a",
            ),
            (
                json!({"name": "n", "process": "p", "steps": [{"start": {}}],
                       "mocks": {"skills": {"a@1": [{"timeout": true, "when": "input.x >"}]}}}),
                "mocks.skills.a@1[0].when",
            ),
            (
                json!({"name": "n", "subject": "taskType", "taskType": "t",
                       "steps": [{"approve": {"decision": "approved", "by": "two\nlines"}}]}),
                "steps[0].approve.by",
            ),
            (
                json!({"name": "n", "subject": "taskType", "taskType": "t",
                       "steps": [{"approve": {"decision": "approved", "by": "x".repeat(201)}}]}),
                "steps[0].approve.by",
            ),
        ];
        for (document, path) in cases {
            assert_eq!(refused(&document).0, path, "{document}");
        }
        let (_, message) = refused(&base(json!([{"verify": {}}])));
        assert!(message.contains("not supported"), "{message}");
    }
}
