//! One test run on its scratch core: what is given, then each step — a person's decision, a
//! task closed, a fact, a start, the clock moved — each followed by the core's work settling
//! (rules, processes, outcomes, executions, and the mock executor answering), and the
//! expectations compared with what happened since the previous one.

use std::collections::{BTreeSet, HashMap};

use serde_json::{Value, json};
use skill_api::{
    ApprovalRequest, CloseTaskRequest, DecideRequest, FactRequest, InstanceQuery, InstanceStepsQuery, OfTaskQuery,
    StartRequest, TaskApproval, TaskQuery, TaskRequest, TestFailure,
};
use skill_engine::{Actor, EngineError};

use crate::file::{Action, Expect, FactIn, Subject, Test};
use crate::mock::{Mock, calls};
use crate::scratch::{Scratch, TESTER};

/// The most rounds the work gets to settle after a step.
pub const SETTLE_ROUNDS: usize = 50;

type Failed = Box<TestFailure>;

pub struct Run<'a> {
    pub s: Scratch,
    test: &'a Test,
    /// `key@version` of the subject.
    subject: String,
    mock: Mock,
    allow_unmocked: bool,
    /// The calls, tasks and instances seen by the previous expectation.
    seen_calls: BTreeSet<String>,
    seen_tasks: BTreeSet<String>,
    seen_instances: BTreeSet<String>,
    /// The facts recorded, the last one last.
    facts: Vec<String>,
    /// A task type's test: its task. A process's: its instance.
    task: Option<String>,
    instance: Option<String>,
    pub warnings: Vec<TestFailure>,
}

fn refused(path: &str, what: &str, error: &EngineError) -> Failed {
    let mut failure =
        TestFailure::new("step_refused", Some(path.to_owned()), format!("{what}: {} ({})", error.message, error.code));
    if !error.details.is_empty() {
        failure.actual = Some(Value::Object(error.details.clone()));
    }
    Box::new(failure)
}

fn broken(error: &EngineError) -> Failed {
    Box::new(TestFailure::new("scratch_core_failed", None, format!("{} ({})", error.message, error.code)))
}

/// Whether `expected` is contained in `actual`: objects key by key, the rest equal.
pub fn subset(expected: &Value, actual: &Value) -> bool {
    match (expected, actual) {
        (Value::Object(wanted), Value::Object(found)) => {
            wanted.iter().all(|(key, value)| found.get(key).is_some_and(|have| subset(value, have)))
        }
        _ => expected == actual,
    }
}

/// The tester's record of `fact` in `workspace`.
fn fact_request(fact: &FactIn, workspace: &str) -> FactRequest {
    FactRequest {
        workspace: workspace.to_owned(),
        kind: fact.kind.clone(),
        key: fact.key.clone(),
        data: fact.data.clone(),
        occurred_at: None,
        source: None,
        caused_by_task: None,
    }
}

/// Whether every `wanted` item fits an `actual` one of its own (a matching: augmenting paths, so
/// an order of the list never makes a fitting set look unfitting).
pub fn each_in_its_own<W, A>(wanted: &[W], actual: &[A], fits: impl Fn(&W, &A) -> bool) -> bool {
    fn assign<W, A>(
        at: usize,
        wanted: &[W],
        actual: &[A],
        fits: &impl Fn(&W, &A) -> bool,
        taken_by: &mut [Option<usize>],
        tried: &mut [bool],
    ) -> bool {
        for (slot, candidate) in actual.iter().enumerate() {
            if tried[slot] || !fits(&wanted[at], candidate) {
                continue;
            }
            tried[slot] = true;
            let free = match taken_by[slot] {
                None => true,
                Some(other) => assign(other, wanted, actual, fits, taken_by, tried),
            };
            if free {
                taken_by[slot] = Some(at);
                return true;
            }
        }
        false
    }
    let mut taken_by = vec![None; actual.len()];
    (0..wanted.len()).all(|at| {
        let mut tried = vec![false; actual.len()];
        assign(at, wanted, actual, &fits, &mut taken_by, &mut tried)
    })
}

impl<'a> Run<'a> {
    pub fn new(s: Scratch, test: &'a Test, subject: String, allow_unmocked: bool) -> Self {
        Self {
            s,
            test,
            subject,
            mock: Mock::default(),
            allow_unmocked,
            seen_calls: BTreeSet::new(),
            seen_tasks: BTreeSet::new(),
            seen_instances: BTreeSet::new(),
            facts: Vec::new(),
            task: None,
            instance: None,
            warnings: Vec::new(),
        }
    }

    fn tester(&self) -> Actor {
        self.s.people[TESTER].clone()
    }

    /// The given, then every step.
    pub async fn run(&mut self) -> Result<(), Failed> {
        crate::mock::check_outputs(&self.s, &self.test.mocks).await?;
        let tester = self.tester();
        let workspace = self.test.given.workspace.clone();
        if let Some(task) = &self.test.given.task {
            let request = TaskRequest {
                workspace: workspace.clone(),
                task_type: self.subject.clone(),
                title: if task.title.is_empty() { self.test.name.clone() } else { task.title.clone() },
                custom_fields: Some(task.custom_fields.clone()),
                approval: task
                    .approval
                    .as_ref()
                    .map(|comment| TaskApproval { comment: (!comment.is_empty()).then(|| comment.clone()) }),
            };
            let made = self.s.engine.create_task(&tester, &request, None).await.map_err(|error| {
                let mut failure = *refused("given.task", "the given task was refused", &error);
                failure.code = "given_refused".to_owned();
                Box::new(failure)
            })?;
            self.seen_tasks.insert(made.id.clone());
            self.task = Some(made.id);
        }
        for (n, fact) in self.test.given.facts.iter().enumerate() {
            self.s.engine.record_fact(&tester, &fact_request(fact, &workspace), None).await.map_err(|error| {
                let mut failure = *refused(&format!("given.facts[{n}]"), "the given fact was refused", &error);
                failure.code = "given_refused".to_owned();
                Box::new(failure)
            })?;
        }
        self.settle().await?;
        for step in &self.test.steps {
            self.step(&step.path, &step.action).await?;
        }
        Ok(())
    }

    async fn step(&mut self, path: &str, action: &Action) -> Result<(), Failed> {
        let tester = self.tester();
        let workspace = self.test.given.workspace.clone();
        match action {
            Action::Approve { approved, by, comment, task_step } => {
                let task = self.task_of(path, task_step.as_deref()).await?;
                let listed = self
                    .s
                    .engine
                    .approvals(&tester, &OfTaskQuery { task: task.clone() })
                    .await
                    .map_err(|error| broken(&error))?;
                let pending = listed.items.iter().find(|a| a.gate && a.status == skill_api::ApprovalStatus::Pending);
                let gate = match pending {
                    Some(gate) => gate.id.clone(),
                    None => {
                        let request =
                            ApprovalRequest { task_id: task.clone(), gate: Some(true), comment: None, call: None };
                        let asked = self.s.engine.request_approval(&tester, &request, None).await;
                        asked.map_err(|error| refused(path, "the task's gate could not be asked for", &error))?.id
                    }
                };
                let decider = self.s.person(by).await?;
                let request = DecideRequest {
                    outcome: if *approved { "approved" } else { "rejected" }.to_owned(),
                    comment: comment.clone(),
                };
                self.s
                    .engine
                    .decide(&decider, &gate, &request, None)
                    .await
                    .map_err(|error| refused(path, &format!("{by}'s decision was refused"), &error))?;
            }
            Action::Complete { status, task_step } => {
                let task = self.task_of(path, task_step.as_deref()).await?;
                let request = CloseTaskRequest { status: status.clone(), comment: None };
                self.s
                    .engine
                    .close_task(&tester, &task, &request, None)
                    .await
                    .map_err(|error| refused(path, "the task could not be closed", &error))?;
            }
            Action::Fact(fact) => {
                let recorded = self.s.engine.record_fact(&tester, &fact_request(fact, &workspace), None).await;
                self.facts.push(recorded.map_err(|error| refused(path, "the fact was refused", &error))?.0.id);
            }
            Action::Start { input, key } => {
                let request = StartRequest { workspace, input: input.clone(), key: key.clone() };
                let started = self.s.engine.start_process(&tester, &self.subject, &request, None).await;
                let started = started.map_err(|error| refused(path, "the instance could not start", &error))?;
                self.seen_instances.insert(started.id.clone());
                self.instance = Some(started.id);
            }
            Action::Advance(seconds) => {
                self.s.clock.advance(chrono::Duration::seconds(i64::try_from(*seconds).unwrap_or(i64::MAX / 1000)));
            }
            Action::Expect(expect) => return self.expect(&format!("{path}.expect"), expect).await,
        }
        self.settle().await
    }

    /// The task a step acts on: the task type test's task; for a process, the task of the step
    /// `named` (its last run), else the one its instance waits for.
    async fn task_of(&self, path: &str, named: Option<&str>) -> Result<String, Failed> {
        if let Some(task) = &self.task {
            return Ok(task.clone());
        }
        let Some(instance) = &self.instance else {
            return Err(Box::new(TestFailure::new(
                "step_refused",
                Some(path.to_owned()),
                "no instance was started (a start step comes first)",
            )));
        };
        let read = self
            .s
            .engine
            .instance(&self.tester(), instance, &InstanceStepsQuery { steps_after: None, steps_limit: Some(1000) })
            .await;
        let read = read.map_err(|error| broken(&error))?;
        let found = match named {
            Some(step) => read.steps.iter().rev().find(|s| s.step == step).and_then(|s| s.task_id.clone()),
            None => read
                .steps
                .iter()
                .rev()
                .find(|s| s.status == skill_api::StepStatus::Open)
                .and_then(|s| s.task_id.clone()),
        };
        found.ok_or_else(|| {
            let what =
                named.map_or("the instance waits for no task".to_owned(), |step| format!("step {step} made no task"));
            Box::new(TestFailure::new(
                "step_refused",
                Some(path.to_owned()),
                format!("{what} (the instance is at {})", read.step.unwrap_or_default()),
            ))
        })
    }

    /// Runs the core's work until nothing moves.
    async fn settle(&mut self) -> Result<(), Failed> {
        let wants_steps = self.test.mocks.values().flatten().any(|answer| answer.step.is_some());
        for _ in 0..SETTLE_ROUNDS {
            let engine = &self.s.engine;
            let now = engine.now();
            let mut moved = engine.run_rule_evaluations(now).await.map_err(|e| broken(&e))?;
            moved += engine.run_processes(now).await.map_err(|e| broken(&e))?;
            moved += engine.run_outcomes(now).await.map_err(|e| broken(&e))?;
            moved += engine.run_executions(now).await.map_err(|e| broken(&e))?;
            moved += engine.run_agent_requests(now).await.map_err(|e| broken(&e))?;
            let pending = calls(&self.s, Some(skill_api::CallStatus::Pending)).await?;
            // The steps of the instances are read only for a call met now, when an answer names one.
            let step_of =
                if wants_steps && self.mock.meets_new(&pending) { self.step_map().await? } else { HashMap::new() };
            moved += self.mock.pass(&self.s, &self.test.mocks, &pending, &step_of).await?;
            for unmocked in std::mem::take(&mut self.mock.unmocked) {
                if !self.allow_unmocked {
                    return Err(Box::new(unmocked));
                }
                self.warnings.push(unmocked);
            }
            if moved == 0 {
                return Ok(());
            }
        }
        Err(Box::new(TestFailure::new(
            "settle_limit",
            None,
            format!("the work still moved after {SETTLE_ROUNDS} rounds: a loop between rules, processes or outcomes?"),
        )))
    }

    /// The step (its id in the definition) of each step run of the workspace's instances.
    async fn step_map(&self) -> Result<HashMap<String, String>, Failed> {
        let mut map = HashMap::new();
        for instance in self.instances().await? {
            for step in skill_store::ProcessStore::steps(&**self.s.engine.store(), &instance)
                .await
                .map_err(|e| Box::new(TestFailure::new("scratch_core_failed", None, e.to_string())))?
            {
                map.insert(step.id, step.step_id);
            }
        }
        Ok(map)
    }

    async fn instances(&self) -> Result<Vec<String>, Failed> {
        let query =
            InstanceQuery { workspace: self.test.given.workspace.clone(), limit: Some(200), ..Default::default() };
        let found = self.s.engine.instances(&self.tester(), &query).await.map_err(|e| broken(&e))?;
        Ok(found.items.into_iter().map(|instance| instance.id).collect())
    }

    async fn expect(&mut self, path: &str, expect: &Expect) -> Result<(), Failed> {
        let tester = self.tester();
        let failed = |field: &str, message: String, expected: Value, actual: Value| {
            Box::new(
                TestFailure::new("expectation_failed", Some(format!("{path}.{field}")), message)
                    .compared(expected, actual),
            )
        };
        // The calls requested since the previous expectation.
        let mut new_calls = Vec::new();
        for call in calls(&self.s, None).await? {
            if self.seen_calls.insert(call.id.clone()) {
                let skill = self
                    .s
                    .engine
                    .store()
                    .skill(&call.skill_id)
                    .await
                    .map_err(|e| Box::new(TestFailure::new("scratch_core_failed", None, e.to_string())))?;
                let writes = skill.skill.side_effects == Some(skill_api::SideEffects::ExternalWrite);
                new_calls.push((
                    json!({"skill": format!("{}@{}", skill.skill.name, skill.skill.version), "inputs": call.inputs}),
                    writes,
                ));
            }
        }
        let actual_calls: Vec<Value> = new_calls.iter().map(|(call, _)| call.clone()).collect();
        if let Some(expected) = &expect.invoke_skill {
            let wanted: Vec<Value> = expected
                .iter()
                .map(|call| match &call.inputs {
                    Some(inputs) => json!({"skill": call.skill, "inputs": inputs}),
                    None => json!({"skill": call.skill}),
                })
                .collect();
            if wanted.len() != actual_calls.len() || !each_in_its_own(&wanted, &actual_calls, subset) {
                let message = format!(
                    "expected {} call{} since the previous expectation, each containing what is listed; {} were requested",
                    wanted.len(),
                    if wanted.len() == 1 { "" } else { "s" },
                    actual_calls.len()
                );
                return Err(failed("invokeSkill", message, json!(wanted), json!(actual_calls)));
            }
        }
        if expect.no_side_effects {
            let writes: Vec<Value> =
                new_calls.iter().filter(|(_, writes)| *writes).map(|(call, _)| call.clone()).collect();
            if !writes.is_empty() {
                let message = format!(
                    "{} external write{} requested",
                    writes.len(),
                    if writes.len() == 1 { " was" } else { "s were" }
                );
                return Err(failed("noSideEffects", message, json!([]), json!(writes)));
            }
        }
        // The work made since the previous expectation: tasks and instances.
        let mut work = Vec::new();
        let query =
            TaskQuery { workspace: Some(self.test.given.workspace.clone()), limit: Some(200), ..Default::default() };
        let mut tasks = self.s.engine.tasks(&tester, &query).await.map_err(|e| broken(&e))?.items;
        tasks.reverse();
        for task in tasks {
            if self.seen_tasks.insert(task.id.clone()) {
                work.push(json!({"taskType": format!("{}@{}", task.task_type.key, task.task_type.version),
                                 "title": task.title, "customFields": task.custom_fields}));
            }
        }
        let query =
            InstanceQuery { workspace: self.test.given.workspace.clone(), limit: Some(200), ..Default::default() };
        let mut instances = self.s.engine.instances(&tester, &query).await.map_err(|e| broken(&e))?.items;
        instances.reverse();
        for instance in instances {
            if self.seen_instances.insert(instance.id.clone()) {
                work.push(json!({"process": instance.process, "key": instance.key, "input": instance.input}));
            }
        }
        if let Some(expected) = &expect.ensure_work {
            let fits = |wanted: &Value, actual: &Value| {
                let Value::Object(wanted) = wanted else { return false };
                wanted.iter().all(|(key, value)| match (key.as_str(), value, actual.get(key)) {
                    ("taskType" | "process", Value::String(reference), Some(Value::String(have))) => {
                        have == reference || have.split('@').next() == Some(reference.as_str())
                    }
                    (_, value, Some(have)) => subset(value, have),
                    _ => false,
                })
            };
            if expected.len() != work.len() || !each_in_its_own(expected, &work, fits) {
                let message = format!(
                    "expected {} piece(s) of work made since the previous expectation; {} were",
                    expected.len(),
                    work.len()
                );
                return Err(failed("ensureWork", message, json!(expected), json!(work)));
            }
        }
        self.expect_subject(path, expect, &tester, failed).await?;
        self.facts.clear();
        Ok(())
    }

    async fn expect_subject(
        &self,
        path: &str,
        expect: &Expect,
        tester: &Actor,
        failed: impl Fn(&str, String, Value, Value) -> Failed,
    ) -> Result<(), Failed> {
        match self.test.subject {
            Subject::TaskType => {
                let Some(task) = &self.task else { return Ok(()) };
                let read = self.s.engine.task(tester, task).await.map_err(|e| broken(&e))?;
                if let Some(status) = &expect.status
                    && read.status.as_str() != status
                {
                    return Err(failed(
                        "status",
                        format!("the task is {}, not {status}", read.status),
                        json!(status),
                        json!(read.status),
                    ));
                }
                if let Some(wanted) = &expect.comments {
                    let found = self
                        .s
                        .engine
                        .comments(tester, &OfTaskQuery { task: task.clone() })
                        .await
                        .map_err(|e| broken(&e))?;
                    let bodies: Vec<String> = found.items.into_iter().map(|c| c.body).collect();
                    if !each_in_its_own(wanted, &bodies, |text: &String, body: &String| body.contains(text.as_str())) {
                        let message =
                            "the task's comments do not contain each text listed, each in a comment of its own";
                        return Err(failed("comments", message.to_owned(), json!(wanted), json!(bodies)));
                    }
                }
            }
            Subject::Process => {
                let Some(instance) = &self.instance else {
                    let asks = expect.status.is_some() || expect.step.is_some() || expect.vars.is_some();
                    if asks {
                        return Err(Box::new(TestFailure::new(
                            "step_refused",
                            Some(path.to_owned()),
                            "no instance was started (a start step comes first)",
                        )));
                    }
                    return Ok(());
                };
                let read = self
                    .s
                    .engine
                    .instance(tester, instance, &InstanceStepsQuery::default())
                    .await
                    .map_err(|e| broken(&e))?;
                if let Some(status) = &expect.status
                    && read.status.as_str() != status
                {
                    let message = format!(
                        "the instance is {}, not {status}{}",
                        read.status,
                        read.error.as_ref().map(|e| format!(" ({})", serde_json::json!(e))).unwrap_or_default()
                    );
                    return Err(failed("status", message, json!(status), json!(read.status)));
                }
                if let Some(step) = &expect.step
                    && read.step.as_deref() != Some(step.as_str())
                {
                    let message = format!(
                        "the instance is at {}, not {step}",
                        read.step.clone().unwrap_or_else(|| "no step".into())
                    );
                    return Err(failed("step", message, json!(step), json!(read.step)));
                }
                if let Some(vars) = &expect.vars
                    && !subset(vars, &read.vars)
                {
                    return Err(failed(
                        "vars",
                        "the instance's variables do not contain what is expected".into(),
                        vars.clone(),
                        read.vars.clone(),
                    ));
                }
            }
            Subject::Rule => {
                if let Some(result) = &expect.result {
                    let actual = match self.facts.last() {
                        None => "none".to_owned(),
                        Some(fact) => {
                            let read = self.s.engine.fact(tester, fact).await.map_err(|e| broken(&e))?;
                            read.evaluations
                                .iter()
                                .find(|evaluation| evaluation.rule == self.subject)
                                .map_or_else(|| "none".to_owned(), |evaluation| evaluation.status.as_str().to_owned())
                        }
                    };
                    if &actual != result {
                        let message = format!("the rule's evaluation of the last fact is {actual}, not {result}");
                        return Err(failed("result", message, json!(result), json!(actual)));
                    }
                }
            }
        }
        Ok(())
    }
}

impl std::fmt::Debug for Run<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Run").field("test", &self.test.name).field("scratch", &self.s).finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::{each_in_its_own, subset};

    #[test]
    fn each_wanted_item_takes_a_call_of_its_own() {
        let calls = [json!({"skill": "x@1", "inputs": {"a": 1}}), json!({"skill": "x@1", "inputs": {"a": 2}})];
        // The first wanted fits both calls; taking the first call for it must not leave the
        // second wanted without one.
        let wanted = [json!({"skill": "x@1"}), json!({"skill": "x@1", "inputs": {"a": 1}})];
        assert!(each_in_its_own(&wanted, &calls, subset));
        let twice = [json!({"skill": "x@1", "inputs": {"a": 1}}), json!({"skill": "x@1", "inputs": {"a": 1}})];
        assert!(!each_in_its_own(&twice, &calls, subset), "one call counts once");
        assert!(!each_in_its_own(&[json!({"skill": "y@1"})], &calls, subset));
        assert!(each_in_its_own::<serde_json::Value, serde_json::Value>(&[], &calls, subset));
    }

    #[test]
    fn subset_compares_objects_key_by_key_and_the_rest_whole() {
        assert!(subset(&json!({"a": {"b": 1}}), &json!({"a": {"b": 1, "c": 2}, "d": 3})));
        assert!(!subset(&json!({"a": [1]}), &json!({"a": [1, 2]})), "lists are equal or not");
        assert!(!subset(&json!({"a": 1}), &json!({})));
    }
}
