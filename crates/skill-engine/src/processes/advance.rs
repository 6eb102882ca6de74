//! Advancing instances, durably and once. A pass takes the running instances that can move —
//! their time came, the call their open step waits for ended, the task it waits for closed, or
//! (woken by facts) a fact may have come — and moves each as far as it goes: a step ends, the
//! next one begins, until the instance waits or ends. Every move is written with the instance's
//! row version, so two cores never move one instance twice (the second's write is stale and it
//! lets go); a core killed mid-step leaves rows another core picks up where they stand.
//!
//! A call step is opened (its version and inputs fixed on its row) before its call is made, with
//! the key `process:<activity id>` (a retry: `process:<first run's id>:retry-<n>`, whose skill is
//! given the first run's key): a core killed between the two makes the same call again, which is
//! the same call. An `external_write` version runs on the process basis, which the
//! database lets only this step's open row cover. A retry is a new row, so a new key.

use chrono::Duration;
use serde_json::{Value, json};
use skill_api::events::{ProcessEnded, ProcessStepStarted, TaskCreated};
use skill_api::{CallStatus, Failure, InstanceStatus, InvokeRequest, Lifecycle, StepKind, StepStatus, TaskStatus};
use skill_contract::codes::Code;
use skill_contract::export::canonical;
use skill_contract::process::{Action, EndStatus, ProcessSpec, Step, parse_duration};
use skill_store::ErrorKind;
use skill_store::records::{Event, InstanceRecord, ProcessRecord, StepRecord, TaskRecord, Time, WorkChange};

use super::outputs::TaskStepOutput;
use super::{compile, step_ended};
use crate::basis::Internal;
use crate::error::{EngineError, Result};
use crate::scopes::{FactView, InstanceScope};
use crate::{Actor, Engine, Origin};

/// How many steps one instance runs without waiting before it fails as a suspected endless loop.
pub const MAX_TRANSITIONS: usize = 1000;
/// How many step runs one instance makes at most before it fails as a suspected endless loop.
pub(crate) const MAX_STEP_RUNS: usize = 10_000;
/// The backoff of a step's retries when its `retry` names none.
const DEFAULT_BACKOFF_SECONDS: u64 = 1;
/// How many instances in a row may start one another through their tasks' types.
pub(crate) const MAX_CHAIN: usize = 8;
/// How many instances one pass takes at most, and how many move at once.
const BATCH: i64 = 200;
const PARALLEL: usize = 32;
/// How many facts of its kind a wait looks at, newest first.
const FACTS_LOOKED_AT: i64 = 200;

/// What moving an instance came to.
enum Moved {
    /// It waits (or ended): write and stop.
    Waits,
    /// The next step is up: go on.
    Next,
}

/// An instance being moved: its row and steps as they will be once written, and what to write.
struct Moving<'a> {
    process: &'a ProcessRecord,
    instance: InstanceRecord,
    steps: Vec<StepRecord>,
    changes: Vec<WorkChange>,
    events: Vec<Event>,
    /// Whether the instance's row is among `changes` already.
    touched: bool,
    /// The version the call step just entered fixed, read then (its call is made next).
    entered: Option<skill_store::records::SkillRecord>,
}

impl Moving<'_> {
    fn open(&self) -> Option<StepRecord> {
        self.steps.iter().rev().find(|step| step.status == StepStatus::Open).cloned()
    }

    /// What paths and conditions read: `input`, `vars`, `steps.<id>` (its last run), `instance`.
    fn scope(&self) -> InstanceScope {
        InstanceScope::of(&self.instance, &self.steps)
    }

    /// [`Moving::scope`] as the path language reads it.
    fn document(&self) -> Value {
        self.scope().document()
    }

    /// The approved gate a call standing on task step `decider` may write on: that step's last
    /// run ended with its task `done` and a gate approved by someone other than the starter.
    fn decision(&self, decider: &str) -> std::result::Result<String, String> {
        let id = self.decided(decider)?;
        // One decision, one write: the step run that fixed it (and its retries).
        if self.steps.iter().any(|step| step.approval_id.as_deref() == Some(id.as_str())) {
            return Err(format!(
                "the decision of step {decider} covered a write already: a write needs a decision of its own"
            ));
        }
        Ok(id)
    }

    fn decided(&self, decider: &str) -> std::result::Result<String, String> {
        let Some(ran) = self.steps.iter().rev().find(|step| step.step_id == decider) else {
            return Err(format!("step {decider}, whose decision this write stands on, has not run"));
        };
        let output = ran.output.as_ref().filter(|_| ran.status == StepStatus::Done && ran.action == StepKind::Task);
        let Some(output) = output else {
            return Err(format!("step {decider}'s task has not closed"));
        };
        let output = TaskStepOutput::read(output)
            .map_err(|error| format!("step {decider}'s output does not read as a task's ({error})"))?;
        if output.status != TaskStatus::Done {
            return Err(format!("step {decider}'s task closed {}, not done", output.status));
        }
        if output.rejected {
            return Err(format!("a gate of step {decider}'s task was rejected: a rejection stands"));
        }
        let Some((id, decided_by)) =
            output.approval.and_then(|approval| approval.decided_by.map(|decided_by| (approval.id, decided_by)))
        else {
            return Err(format!("no gate of step {decider}'s task was approved"));
        };
        if decided_by == self.instance.started_by {
            return Err(format!(
                "the gate of step {decider}'s task was approved by whoever started the instance: a write needs another person's decision"
            ));
        }
        Ok(id)
    }

    fn step_def(&self, id: &str) -> Option<&Step> {
        self.process.spec.step(id)
    }

    /// The step after `step`: its `next`, or the one after it in the list (none: the end).
    fn after(&self, step: &Step) -> Option<String> {
        step.next.clone().or_else(|| next_in_list(&self.process.spec, &step.id))
    }
}

fn next_in_list(spec: &ProcessSpec, id: &str) -> Option<String> {
    let at = spec.steps.iter().position(|step| step.id == id)?;
    spec.steps.get(at + 1).map(|step| step.id.clone())
}

impl Engine {
    /// Waits until something an instance may wait for happened through this engine (a start, a
    /// call's end, a fact, a task's close), or `within` passed.
    pub async fn processes_due(&self, within: std::time::Duration) {
        self.moments.wait_for_processes(within).await;
    }

    /// One pass: moves every instance that can move at `now`. Answers how many moved.
    pub async fn run_processes(&self, now: Time) -> Result<usize> {
        use futures::StreamExt;
        let mut found = self.store.movable_instances(now, BATCH).await?;
        for waiting in self.store.waiting_for_facts(BATCH).await? {
            if !found.iter().any(|instance| instance.id == waiting.id) {
                found.push(waiting);
            }
        }
        let mut processes: std::collections::HashMap<String, ProcessRecord> = std::collections::HashMap::new();
        for instance in &found {
            if !processes.contains_key(&instance.process_id) {
                processes.insert(instance.process_id.clone(), self.store.process(&instance.process_id).await?);
            }
        }
        // The agents the processes run as, read once for the pass (one that cannot be read is
        // read again, to say why, by the instance it stops).
        let mut agents: std::collections::HashMap<String, Actor> = std::collections::HashMap::new();
        for process in processes.values() {
            if !agents.contains_key(&process.agent_principal_id)
                && let Ok(agent) = self.agent_actor(&process.agent_principal_id).await
            {
                agents.insert(process.agent_principal_id.clone(), agent);
            }
        }
        // Their steps, read in one query.
        let ids: Vec<String> = found.iter().map(|instance| instance.id.clone()).collect();
        let mut steps: std::collections::HashMap<String, Vec<StepRecord>> = std::collections::HashMap::new();
        if !ids.is_empty() {
            for step in self.store.steps_of(&ids).await? {
                steps.entry(step.instance_id.clone()).or_default().push(step);
            }
        }
        let (processes, agents) = (&processes, &agents);
        let moved: Vec<Result<usize>> = futures::stream::iter(found.into_iter().map(|instance| {
            let read = steps.remove(&instance.id).unwrap_or_default();
            (instance, read)
        }))
        .map(|(instance, read)| async move {
            let process = &processes[&instance.process_id];
            self.advance(process, agents.get(&process.agent_principal_id), instance, read, now).await
        })
        .buffer_unordered(PARALLEL)
        .collect()
        .await;
        let mut count = 0;
        for one in moved {
            count += one?;
        }
        Ok(count)
    }

    /// Moves one instance as far as it goes; `0` when another core moved it first.
    async fn advance(
        &self,
        process: &ProcessRecord,
        agent: Option<&Actor>,
        instance: InstanceRecord,
        steps: Vec<StepRecord>,
        now: Time,
    ) -> Result<usize> {
        let mut moving =
            Moving { process, instance, steps, changes: Vec::new(), events: Vec::new(), touched: false, entered: None };
        let agent = match agent {
            Some(agent) => Ok(agent.clone()),
            None => self.agent_actor(&process.agent_principal_id).await,
        };
        let agent = match agent {
            Ok(agent) => agent,
            Err(error) => {
                let error = Failure::new(error.code, format!("the agent the process runs as: {}", error.message));
                self.end_instance(&mut moving, InstanceStatus::Failed, Some(error), now);
                return self.flush(&mut moving, now).await.map(usize::from);
            }
        };
        let mut transitions = 0;
        let mut moved = false;
        loop {
            transitions += 1;
            if transitions > MAX_TRANSITIONS {
                let error =
                    Failure::new("process_loop_suspected", format!("{MAX_TRANSITIONS} steps ran without waiting once"));
                self.end_instance(&mut moving, InstanceStatus::Failed, Some(error), now);
                return self.flush(&mut moving, now).await.map(usize::from);
            }
            let step = match moving.open() {
                Some(open) => self.move_open(&mut moving, &agent, open, now).await?,
                None => self.enter(&mut moving, now).await?,
            };
            match step {
                Some(Moved::Next) => moved = true,
                Some(Moved::Waits) => {
                    if moving.touched || !moving.changes.is_empty() {
                        moved = true;
                        if !self.flush(&mut moving, now).await? {
                            return Ok(0);
                        }
                    }
                    return Ok(usize::from(moved));
                }
                // Another core moved it.
                None => return Ok(0),
            }
        }
    }

    /// Writes what the move made, with the instance's row one version on; `false` when the
    /// instance moved on meanwhile (another core moves it).
    async fn flush(&self, moving: &mut Moving<'_>, now: Time) -> Result<bool> {
        let mut next = moving.instance.clone();
        next.row_version += 1;
        next.updated_at = now;
        let mut changes = std::mem::take(&mut moving.changes);
        changes.push(WorkChange::UpdateInstance(next.clone()));
        let events = std::mem::take(&mut moving.events);
        match self.store.write_work(&changes, &events).await {
            Ok(()) => {
                moving.instance = next;
                moving.touched = false;
                // The rows written are one version on from what they were.
                Ok(true)
            }
            Err(error) if matches!(error.kind(), ErrorKind::Stale | ErrorKind::Conflict) => Ok(false),
            Err(error) => Err(error.into()),
        }
    }

    /// Ends the instance (its open step closed, if any).
    fn end_instance(&self, moving: &mut Moving<'_>, status: InstanceStatus, error: Option<Failure>, now: Time) {
        if let Some(open) = moving.open() {
            let closed = StepRecord {
                status: StepStatus::Closed,
                row_version: open.row_version + 1,
                ended_at: Some(now),
                wake_at: None,
                ..open
            };
            self.replace_step(moving, closed);
        }
        let code = error.as_ref().map(|error| error.code.clone());
        let ended = ProcessEnded { status, step: moving.instance.at_step.clone(), code };
        moving.events.push(self.event(format!("process_instance:{}", moving.instance.id), &ended, &Origin::default()));
        moving.instance.status = status;
        moving.instance.error = error;
        moving.instance.wake_at = None;
        moving.instance.ended_at = Some(now);
        moving.touched = true;
    }

    /// Puts `step` (one version on) in place of its row, to be written; a row not written yet is
    /// inserted as it is now.
    fn replace_step(&self, moving: &mut Moving<'_>, step: StepRecord) {
        if step.status != StepStatus::Open {
            moving.events.push(self.event(
                format!("process_instance:{}", moving.instance.id),
                &step_ended(&step),
                &Origin::default(),
            ));
        }
        let inserted = moving.changes.iter_mut().find_map(|change| match change {
            WorkChange::InsertStep(inserted) if inserted.id == step.id => Some(inserted),
            _ => None,
        });
        let step = match inserted {
            Some(inserted) => {
                *inserted = StepRecord { row_version: 1, ..step };
                inserted.clone()
            }
            None => {
                moving.changes.push(WorkChange::UpdateStep(step.clone()));
                step
            }
        };
        if let Some(at) = moving.steps.iter().position(|s| s.id == step.id) {
            moving.steps[at] = step;
        }
    }

    /// A new step row (open, or already ended for the steps that end at once).
    fn new_step(&self, moving: &mut Moving<'_>, step: &Step, attempt: i32, now: Time) -> StepRecord {
        let seq = moving.steps.last().map_or(1, |last| last.seq + 1);
        let action = step.action().map_or(StepKind::Set, kind_of);
        let record = StepRecord {
            id: self.new_id(),
            instance_id: moving.instance.id.clone(),
            seq,
            step_id: step.id.clone(),
            action,
            status: StepStatus::Open,
            attempt,
            skill_id: None,
            inputs: None,
            invocation_id: None,
            task_id: None,
            fact_id: None,
            wait_kind: None,
            output: None,
            error: None,
            wake_at: None,
            row_version: 1,
            started_at: now,
            ended_at: None,
            approval_id: None,
        };
        let started = ProcessStepStarted {
            activity_id: record.id.clone(),
            step: step.id.clone(),
            action: action.as_str().to_owned(),
            attempt,
        };
        moving.events.push(self.event(
            format!("process_instance:{}", moving.instance.id),
            &started,
            &Origin::default(),
        ));
        record
    }

    /// Ends the open (or just made) step `step` with `status`, and points the instance at `next`
    /// (none: it completes).
    #[allow(clippy::too_many_arguments)]
    fn finish(
        &self,
        moving: &mut Moving<'_>,
        step: StepRecord,
        status: StepStatus,
        output: Option<Value>,
        error: Option<Failure>,
        next: Option<String>,
        now: Time,
    ) -> Moved {
        let ended = StepRecord {
            status,
            output,
            error,
            wake_at: None,
            row_version: step.row_version + 1,
            ended_at: Some(now),
            ..step
        };
        self.replace_step(moving, ended);
        moving.instance.wake_at = Some(now);
        moving.touched = true;
        match next {
            Some(next) => {
                moving.instance.at_step = Some(next);
                Moved::Next
            }
            None => {
                self.end_instance(moving, InstanceStatus::Completed, None, now);
                Moved::Waits
            }
        }
    }

    /// A step that failed with nowhere to go: the instance fails with its error.
    fn fail_step(&self, moving: &mut Moving<'_>, step: StepRecord, error: Failure, code: &str, now: Time) -> Moved {
        let ended = StepRecord {
            status: StepStatus::Failed,
            error: Some(error.clone()),
            wake_at: None,
            row_version: step.row_version + 1,
            ended_at: Some(now),
            ..step.clone()
        };
        self.replace_step(moving, ended);
        let failure = Failure {
            step: Some(step.step_id.clone()),
            cause: Some(Box::new(error)),
            ..Failure::new(code, format!("step {} failed", step.step_id))
        };
        self.end_instance(moving, InstanceStatus::Failed, Some(failure), now);
        Moved::Waits
    }

    /// Enters the step the instance is at: the steps that end at once end; the others open.
    async fn enter(&self, moving: &mut Moving<'_>, now: Time) -> Result<Option<Moved>> {
        let Some(at) = moving.instance.at_step.clone() else {
            self.end_instance(moving, InstanceStatus::Completed, None, now);
            return Ok(Some(Moved::Waits));
        };
        let Some(step) = moving.step_def(&at).cloned() else {
            let error = Failure::new("invalid_process", format!("the process has no step {at}"));
            self.end_instance(moving, InstanceStatus::Failed, Some(error), now);
            return Ok(Some(Moved::Waits));
        };
        if moving.steps.len() >= MAX_STEP_RUNS {
            let error = Failure::new("process_loop_suspected", format!("{MAX_STEP_RUNS} steps ran in one instance"));
            self.end_instance(moving, InstanceStatus::Failed, Some(error), now);
            return Ok(Some(Moved::Waits));
        }
        let mut record = self.new_step(moving, &step, 1, now);
        let document = moving.document();
        if let Some(Action::Call(call)) = step.action() {
            // Its version and inputs are fixed on its row: the call its process basis covers.
            match self.find(&call.skill).await {
                Ok(entry) => {
                    record.skill_id = Some(entry.skill.id.clone());
                    moving.entered = Some(entry.skill);
                }
                Err(error) => {
                    let error = Failure::new(error.code, error.message);
                    moving.steps.push(record.clone());
                    moving.changes.push(WorkChange::InsertStep(record.clone()));
                    return Ok(Some(self.fail_step(moving, record, error, "process_step_failed", now)));
                }
            }
            record.inputs = Some(canonical(&Value::Object(crate::paths::filled(&call.input, &document))));
            if let Some(decider) = &call.decided_by {
                match moving.decision(decider) {
                    Ok(approval_id) => record.approval_id = Some(approval_id),
                    Err(message) => {
                        let error = Failure::new("process_write_not_decided", message);
                        moving.steps.push(record.clone());
                        moving.changes.push(WorkChange::InsertStep(record.clone()));
                        let target = call.on_failure.as_ref();
                        return Ok(Some(self.failed_to(
                            moving,
                            record,
                            error,
                            target,
                            "process_write_not_decided",
                            now,
                        )));
                    }
                }
            }
        }
        moving.steps.push(record.clone());
        moving.changes.push(WorkChange::InsertStep(record.clone()));
        moving.touched = true;
        let next = moving.after(&step);
        Ok(Some(match step.action() {
            Some(Action::Set(values)) => {
                let filled = crate::paths::filled(values, &document);
                if let Value::Object(vars) = &mut moving.instance.vars {
                    for (name, value) in &filled {
                        vars.insert(name.clone(), value.clone());
                    }
                }
                self.finish(moving, record, StepStatus::Done, Some(Value::Object(filled)), None, next, now)
            }
            Some(Action::Switch(switch)) => {
                let mut chosen = None;
                for (index, case) in switch.cases.iter().enumerate() {
                    let path = format!("steps[{}].switch.cases[{index}].when", step.id);
                    match compile(&path, &case.when, false)
                        .and_then(|c| c.eval(&document).map_err(|e| EngineError::invalid_request(e.message)))
                    {
                        Ok(true) => {
                            chosen = Some(case.next.clone());
                            break;
                        }
                        Ok(false) => {}
                        Err(error) => {
                            let error = Failure { case: Some(index), ..Failure::new("condition_error", error.message) };
                            return Ok(Some(self.fail_step(moving, record, error, "process_step_failed", now)));
                        }
                    }
                }
                let next = chosen.unwrap_or_else(|| switch.default.clone());
                self.finish(moving, record, StepStatus::Done, Some(json!({"next": next})), None, Some(next), now)
            }
            Some(Action::End(end)) => {
                let ended = StepRecord {
                    status: StepStatus::Done,
                    row_version: record.row_version + 1,
                    ended_at: Some(now),
                    ..record
                };
                self.replace_step(moving, ended);
                let (status, error) = match end.status {
                    EndStatus::Completed => (InstanceStatus::Completed, None),
                    EndStatus::Failed => (
                        InstanceStatus::Failed,
                        Some(Failure {
                            step: Some(step.id.clone()),
                            ..Failure::new("process_ended_failed", end.reason.clone().unwrap_or_default())
                        }),
                    ),
                };
                self.end_instance(moving, status, error, now);
                Moved::Waits
            }
            // The call is made, the task made, as the open step moves (next).
            Some(Action::Call(_) | Action::Task(_)) => Moved::Next,
            Some(Action::Wait(wait)) => {
                let wake = if let Some(text) = &wait.for_ {
                    parse_duration(text).map(|seconds| now + seconds_of(seconds))
                } else if let Some(until) = &wait.until {
                    let text = crate::paths::render(until, &document);
                    match chrono::DateTime::parse_from_rfc3339(&text) {
                        Ok(at) => Some(at.to_utc()),
                        Err(_) => {
                            let error = Failure::new(
                                "invalid_process",
                                format!("wait.until is {text:?}, not an RFC 3339 time"),
                            );
                            return Ok(Some(self.fail_step(moving, record, error, "process_step_failed", now)));
                        }
                    }
                } else {
                    wait.timeout.as_deref().and_then(parse_duration).map(|seconds| now + seconds_of(seconds))
                };
                let kind = wait.fact.as_ref().map(|fact| fact.kind.clone());
                let waiting = StepRecord { wake_at: wake, wait_kind: kind, ..record };
                self.replace_step(moving, waiting);
                // It looks at once: a time passed, or a fact that came before, counts.
                Moved::Next
            }
            None => {
                let error = Failure::new("invalid_process", "the step has no one action");
                self.fail_step(moving, record, error, "process_step_failed", now)
            }
        }))
    }

    /// Moves the open step: a call is made or its end read, a task made or its close read, a
    /// wait's time or fact looked for. `None`: another core moved the instance.
    async fn move_open(
        &self,
        moving: &mut Moving<'_>,
        agent: &Actor,
        open: StepRecord,
        now: Time,
    ) -> Result<Option<Moved>> {
        let Some(step) = moving.step_def(&open.step_id).cloned() else {
            let error = Failure::new("invalid_process", format!("the process has no step {}", open.step_id));
            return Ok(Some(self.fail_step(moving, open, error, "process_step_failed", now)));
        };
        let next = moving.after(&step);
        match step.action() {
            Some(Action::Call(call)) => self.move_call(moving, agent, open, &step, call, next, now).await,
            Some(Action::Task(task)) => self.move_task(moving, agent, open, task, next, now).await,
            Some(Action::Wait(wait)) => self.move_wait(moving, open, &step, wait, next, now).await.map(Some),
            // The others end as they are entered: an open one was left by a core that died.
            _ => Ok(Some(self.finish(moving, open, StepStatus::Done, None, None, next, now))),
        }
    }

    #[allow(clippy::too_many_arguments)]
    async fn move_call(
        &self,
        moving: &mut Moving<'_>,
        agent: &Actor,
        open: StepRecord,
        step: &Step,
        call: &skill_contract::process::CallStep,
        next: Option<String>,
        now: Time,
    ) -> Result<Option<Moved>> {
        let Some(invocation_id) = open.invocation_id.clone() else {
            if open.wake_at.is_some_and(|at| at > now) {
                // A retry's backoff.
                moving.instance.wake_at = open.wake_at;
                return Ok(Some(Moved::Waits));
            }
            // The step's row must be written before the call is made: the process basis names it.
            if (!moving.changes.is_empty() || moving.touched) && !self.flush(moving, now).await? {
                return Ok(None);
            }
            // A retry's key names the step's first run: the skill is given that run's key, so
            // each retry is one more attempt at the same effect (`work::effect_key`).
            let first = moving
                .steps
                .iter()
                .rev()
                .find(|step| step.step_id == open.step_id && step.attempt == 1 && step.seq < open.seq)
                .filter(|_| open.attempt > 1);
            let key = match first {
                Some(first) => format!("process:{}:retry-{}", first.id, open.attempt - 1),
                None => format!("process:{}", open.id),
            };
            let request = InvokeRequest {
                inputs: open.inputs.clone().and_then(|inputs| inputs.as_object().cloned()),
                idempotency_key: Some(key),
                ..InvokeRequest::default()
            };
            let entered = moving.entered.take().filter(|skill| open.skill_id.as_deref() == Some(skill.id.as_str()));
            let internal = Internal::Process { instance: &moving.instance, step: &open, process: moving.process };
            let invoked = match entered {
                Some(skill) => self.invoke_version(agent, skill, &request, None, Some(internal)).await,
                None => self.invoke_by(agent, &call.skill, &request, None, Some(internal)).await,
            };
            let invoked = match invoked {
                Ok(invoked) => invoked,
                Err(error) => {
                    let error = Failure::new(error.code, error.message).with_details(Value::Object(error.details));
                    return Ok(Some(self.step_failed(moving, open, step, call, error, now)));
                }
            };
            let called = StepRecord {
                invocation_id: Some(invoked.invocation.id.clone()),
                row_version: open.row_version + 1,
                ..open
            };
            self.replace_step(moving, called);
            moving.instance.wake_at = None;
            moving.touched = true;
            if !self.flush(moving, now).await? {
                return Ok(None);
            }
            return Ok(Some(Moved::Next));
        };
        let made = self.store.invocation(&invocation_id).await?;
        Ok(Some(match made.status {
            CallStatus::Pending | CallStatus::Running => {
                moving.instance.wake_at = None;
                Moved::Waits
            }
            CallStatus::Succeeded => self.finish(moving, open, StepStatus::Done, made.output.clone(), None, next, now),
            CallStatus::Failed | CallStatus::Cancelled => {
                let (code, message) =
                    made.error.as_ref().map_or(("call_failed", "the call ended without saying why"), |error| {
                        (error.code.as_str(), error.message.as_str())
                    });
                let error = Failure::new(code, message).of_invocation(&made.id);
                self.step_failed(moving, open, step, call, error, now)
            }
        }))
    }

    /// A call step that failed: asked for again (a new row, so a new call) while attempts
    /// remain, then on to `onFailure`, or the instance fails.
    fn step_failed(
        &self,
        moving: &mut Moving<'_>,
        open: StepRecord,
        step: &Step,
        call: &skill_contract::process::CallStep,
        error: Failure,
        now: Time,
    ) -> Moved {
        let attempts = call.retry.as_ref().map_or(1, |retry| retry.attempts);
        if u32::try_from(open.attempt).unwrap_or(u32::MAX) < attempts {
            let failed = StepRecord {
                status: StepStatus::Failed,
                error: Some(error),
                wake_at: None,
                row_version: open.row_version + 1,
                ended_at: Some(now),
                ..open.clone()
            };
            self.replace_step(moving, failed);
            let backoff = retry_delay(call.retry.as_ref().and_then(|r| r.backoff.as_deref()), open.attempt);
            let mut again = self.new_step(moving, step, open.attempt + 1, now);
            again.skill_id = open.skill_id.clone();
            again.inputs = open.inputs.clone();
            again.approval_id = open.approval_id.clone();
            again.wake_at = (backoff > 0).then(|| now + seconds_of(backoff));
            moving.steps.push(again.clone());
            moving.changes.push(WorkChange::InsertStep(again.clone()));
            moving.instance.wake_at = Some(again.wake_at.unwrap_or(now));
            moving.touched = true;
            // A retry due at once is made in this move: the loop guard counts it as a step that
            // did not wait (a `0s` backoff looping through onFailure is caught like any loop).
            return if again.wake_at.is_some() { Moved::Waits } else { Moved::Next };
        }
        self.failed_to(moving, open, error, call.on_failure.as_ref(), "process_step_failed", now)
    }

    /// A step that failed for good: on to `target` (its `onFailure` or `onTimeout`), else the
    /// instance fails with `code`.
    fn failed_to(
        &self,
        moving: &mut Moving<'_>,
        step: StepRecord,
        error: Failure,
        target: Option<&String>,
        code: &str,
        now: Time,
    ) -> Moved {
        match target {
            Some(target) => self.finish(moving, step, StepStatus::Failed, None, Some(error), Some(target.clone()), now),
            None => self.fail_step(moving, step, error, code, now),
        }
    }

    /// A task step: the task made (with its gate asked for), its draft made, then its close read.
    /// `None`: another core moved the instance.
    async fn move_task(
        &self,
        moving: &mut Moving<'_>,
        agent: &Actor,
        open: StepRecord,
        task: &skill_contract::process::TaskStep,
        next: Option<String>,
        now: Time,
    ) -> Result<Option<Moved>> {
        let Some(task_id) = open.task_id.clone() else {
            let document = moving.document();
            let task_type = match self.find_task_type(&task.task_type).await {
                Ok(found) => found,
                Err(error) => {
                    let error = Failure::new(error.code, error.message);
                    return Ok(Some(self.fail_step(moving, open, error, "process_step_failed", now)));
                }
            };
            let title: String = crate::paths::render(&task.title, &document).chars().take(500).collect();
            let title =
                if title.trim().is_empty() { format!("{} {}", moving.process.key, open.step_id) } else { title };
            let fields = Value::Object(
                crate::paths::filled(&task.custom_fields, &document)
                    .into_iter()
                    .filter(|(_, v)| !v.is_null())
                    .collect(),
            );
            if let Err(error) = self.agent_may_work(moving.process, &moving.instance.workspace_id).await {
                let error = Failure::new(error.code, error.message).with_details(Value::Object(error.details));
                return Ok(Some(self.fail_step(moving, open, error, "process_step_failed", now)));
            }
            let checked = match crate::work::check_fields(&task_type, &fields) {
                Ok(()) => self.check_required_fields(&task_type, &fields).await,
                Err(error) => Err(error),
            };
            if let Err(error) = checked {
                let error = Failure::new(error.code, error.message).with_details(Value::Object(error.details));
                return Ok(Some(self.fail_step(moving, open, error, "process_step_failed", now)));
            }
            let id = self.new_id();
            // Whoever set the instance in motion set its tasks in motion too.
            let initiators = skill_api::four_eyes::carried(&moving.instance.initiators, &format!("task:{id}"), &[]);
            let record = TaskRecord {
                id,
                workspace_id: moving.instance.workspace_id.clone(),
                task_type_id: task_type.id.clone(),
                title,
                custom_fields: fields,
                status: TaskStatus::Open,
                created_by: moving.process.agent_principal_id.clone(),
                row_version: 1,
                created_at: now,
                updated_at: now,
                closed_at: None,
                close_reason: None,
                initiators,
            };
            let made = TaskCreated {
                workspace_id: record.workspace_id.clone(),
                task_type_id: record.task_type_id.clone(),
                task_type: format!("{}@{}", task_type.key, task_type.version),
                initiators: record.initiators.clone(),
            };
            moving.events.push(self.event(format!("task:{}", record.id), &made, &Origin::default()));
            if task_type.spec.process.is_some() && self.chain_depth(&moving.instance, MAX_CHAIN).await? >= MAX_CHAIN {
                let error = Failure::new(
                    "process_loop_suspected",
                    format!("{MAX_CHAIN} instances in a row started one another through their tasks"),
                );
                return Ok(Some(self.fail_step(moving, open, error, "process_loop_suspected", now)));
            }
            let started = match self.task_instance(&record, &task_type, &moving.instance.started_by).await {
                Ok(started) => started,
                Err(error) => {
                    let error = Failure::new(error.code, error.message).with_details(Value::Object(error.details));
                    return Ok(Some(self.fail_step(moving, open, error, "process_step_failed", now)));
                }
            };
            let waiting = StepRecord { task_id: Some(record.id.clone()), row_version: open.row_version + 1, ..open };
            let made_task = record.clone();
            // Written before the step's row that names it (which may be among the changes).
            moving.changes.insert(0, WorkChange::InsertTask(record));
            if let Some((instance, event)) = started {
                moving.changes.push(WorkChange::InsertInstance(instance));
                moving.events.push(event);
            }
            if let Some(approval) = &task.approval {
                // The gate a person decides, asked for by the agent with the task.
                let comment = approval
                    .comment
                    .as_deref()
                    .map(|comment| crate::paths::render(comment, &document).chars().take(10_000).collect::<String>());
                let (approval, event) = self.new_approval(agent, &made_task, true, comment.as_deref(), None, None)?;
                moving.changes.insert(1, WorkChange::InsertApproval(approval));
                moving.events.push(event);
            }
            self.replace_step(moving, waiting);
            moving.instance.wake_at = None;
            moving.touched = true;
            self.moments.outcomes_due();
            if !task.draft {
                return Ok(Some(Moved::Waits));
            }
            // The draft is a call bound to the task: the task is written first.
            if !self.flush(moving, now).await? {
                return Ok(None);
            }
            return Ok(Some(Moved::Next));
        };
        let found = self.store.task(&task_id).await?;
        if !found.status.is_terminal() {
            if task.draft && open.invocation_id.is_none() && open.error.is_none() {
                self.draft_task(moving, agent, open, &found).await?;
            }
            moving.instance.wake_at = None;
            return Ok(Some(Moved::Waits));
        }
        let approvals = self.store.approvals(&found.id).await?;
        let output = TaskStepOutput::of(&found, &approvals).to_value();
        Ok(Some(self.finish(moving, open, StepStatus::Done, Some(output), None, next, now)))
    }

    /// Makes the task's draft: its type's draft version, bound to the task, as the agent, once
    /// (the key `process:<activity>:draft`). A refusal is kept on the step, and shown on the task.
    async fn draft_task(
        &self,
        moving: &mut Moving<'_>,
        agent: &Actor,
        open: StepRecord,
        task: &TaskRecord,
    ) -> Result<()> {
        let drafted = match self.draft_for(task).await? {
            None => {
                Err(EngineError::new(crate::error::Class::Invalid, Code::NoDraft, "the task's type declares no draft"))
            }
            Some((draft, inputs)) => {
                let request = InvokeRequest {
                    inputs: Some(inputs),
                    idempotency_key: Some(format!("process:{}:draft", open.id)),
                    task_id: Some(task.id.clone()),
                    ..InvokeRequest::default()
                };
                let internal = Internal::Process { instance: &moving.instance, step: &open, process: moving.process };
                self.invoke_by(agent, &draft.skill, &request, None, Some(internal)).await
            }
        };
        let step = match drafted {
            Ok(invoked) => {
                StepRecord { invocation_id: Some(invoked.invocation.id), row_version: open.row_version + 1, ..open }
            }
            Err(error) => {
                tracing::warn!(task = %task.id, code = %error.code, "a process step could not draft its task: {}", error.message);
                let error = Failure::new(error.code, error.message).with_details(Value::Object(error.details));
                StepRecord { error: Some(error), row_version: open.row_version + 1, ..open }
            }
        };
        self.replace_step(moving, step);
        moving.touched = true;
        Ok(())
    }

    async fn move_wait(
        &self,
        moving: &mut Moving<'_>,
        open: StepRecord,
        step: &Step,
        wait: &skill_contract::process::WaitStep,
        next: Option<String>,
        now: Time,
    ) -> Result<Moved> {
        let Some(fact_wait) = &wait.fact else {
            // A timer.
            if open.wake_at.is_none_or(|at| at <= now) {
                let output = json!({"firedAt": crate::catalog::view_time(&now)});
                return Ok(self.finish(moving, open, StepStatus::Done, Some(output), None, next, now));
            }
            moving.instance.wake_at = open.wake_at;
            return Ok(Moved::Waits);
        };
        let taken: Vec<String> = moving.steps.iter().filter_map(|s| s.fact_id.clone()).collect();
        let mut facts =
            self.store.facts(&moving.instance.workspace_id, Some(&fact_wait.kind), None, FACTS_LOOKED_AT).await?;
        facts.retain(|fact| fact.created_at >= moving.instance.created_at && !taken.contains(&fact.id));
        facts.reverse();
        let workspace_key = self.store.workspace_by_reference(&moving.instance.workspace_id).await?.key;
        let mut scope = moving.scope();
        for fact in facts {
            let matched = match &fact_wait.when {
                None => true,
                Some(when) => {
                    scope.fact = Some(FactView::of(&fact, &workspace_key));
                    let document = scope.document();
                    let path = format!("steps[{}].wait.fact.when", step.id);
                    // A fact the condition cannot read is not the one waited for.
                    compile(&path, when, true)
                        .and_then(|c| c.eval(&document).map_err(|e| EngineError::invalid_request(e.message)))
                        .unwrap_or_default()
                }
            };
            if matched {
                let output = crate::document(&FactView::of(&fact, &workspace_key));
                let taken = StepRecord { fact_id: Some(fact.id.clone()), ..open };
                return Ok(self.finish(moving, taken, StepStatus::Done, Some(output), None, next, now));
            }
        }
        if open.wake_at.is_some_and(|at| at <= now) {
            let error = Failure::new("process_wait_timed_out", format!("no {} fact came in time", fact_wait.kind));
            return Ok(self.failed_to(moving, open, error, wait.on_timeout.as_ref(), "process_wait_timed_out", now));
        }
        moving.instance.wake_at = open.wake_at;
        Ok(Moved::Waits)
    }
}

/// How long the retry after failed attempt `attempt` waits: the backoff (1 s without one),
/// doubled for each attempt before, at most an hour (or the backoff, when longer).
fn retry_delay(backoff: Option<&str>, attempt: i32) -> u64 {
    let base = backoff.and_then(parse_duration).unwrap_or(DEFAULT_BACKOFF_SECONDS);
    let doublings = u32::try_from(attempt.saturating_sub(1)).unwrap_or(0).min(20);
    base.saturating_mul(1 << doublings).min(base.max(3600))
}

fn seconds_of(seconds: u64) -> Duration {
    Duration::seconds(i64::try_from(seconds).unwrap_or(i64::MAX / 1000))
}

/// The kind of step `action` is, as its row keeps it.
fn kind_of(action: Action<'_>) -> StepKind {
    match action {
        Action::Call(_) => StepKind::Call,
        Action::Task(_) => StepKind::Task,
        Action::Wait(_) => StepKind::Wait,
        Action::Switch(_) => StepKind::Switch,
        Action::Set(_) => StepKind::Set,
        Action::End(_) => StepKind::End,
    }
}

#[cfg(test)]
mod tests {
    use super::retry_delay;

    #[test]
    fn retries_wait_longer_each_time() {
        assert_eq!([1, 2, 3, 4].map(|n| retry_delay(None, n)), [1, 2, 4, 8]);
        assert_eq!([1, 2, 3].map(|n| retry_delay(Some("30s"), n)), [30, 60, 120]);
        assert_eq!(retry_delay(Some("0s"), 5), 0, "0s retries at once");
        assert_eq!(retry_delay(Some("40m"), 3), 3600, "an hour at most");
        assert_eq!(retry_delay(Some("2h"), 4), 7200, "a backoff longer than an hour is kept");
        assert_eq!(retry_delay(None, 10), 512);
    }
}
