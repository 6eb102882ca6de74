//! Processes: publication (every rule of the document checked, the conditions compiled, every
//! reference resolved — the versions its call steps name, the task types of its task steps, the
//! agent its instances run as), reading, starting an instance (idempotent by its key), reading
//! and cancelling instances. A published version never changes.
//!
//! | what | where |
//! |---|---|
//! | publication, starting, reading, cancelling | here |
//! | advancing instances, durable and once | `processes/advance.rs` |

mod advance;
mod outputs;

use serde_json::{Map, Value, json};
use skill_api::events::{ProcessEnded, ProcessPublished, ProcessStepEnded};
use skill_api::four_eyes::InitiatorRole;
use skill_api::{
    CancelInstanceRequest, Failure, InstanceOut, InstanceQuery, InstanceStatus, InstanceStepsQuery, Lifecycle,
    MAX_INPUT_BYTES, Page, ProcessOut, ProcessQuery, ProcessRequest, SkillStatus, StartRequest, StepOut, StepStatus,
    TaskStatus,
};
use skill_conditions::Condition;
use skill_contract::SkillRef;
use skill_contract::codes::Code;
use skill_contract::process::ProcessSpec;
use skill_store::ErrorKind;
use skill_store::records::{AgentRecord, Event, InstanceRecord, ProcessRecord, StepRecord, WorkChange};

pub use advance::MAX_TRANSITIONS;

use crate::actor::Actor;
use crate::catalog::{checked_limit, view_time};
use crate::documents::PackageDocument;
use crate::error::{Class, EngineError, Result, document_problem, written};
use crate::instances::Start;
use crate::planned::Planned;
use crate::{Engine, Origin};
use futures::future::BoxFuture;

/// What a switch's condition reads; a wait's for a fact reads `fact` too.
const SWITCH_READS: &[&str] = &["input", "vars", "steps", "instance"];
const WAIT_READS: &[&str] = &["fact", "input", "vars", "steps", "instance"];

fn invalid(path: &str, message: impl Into<String>) -> EngineError {
    EngineError::new(Class::Invalid, Code::InvalidProcess, message).with("path", path)
}

/// A condition of a process compiled: `422 invalid_condition` with where, when it is not one.
pub(crate) fn compile(path: &str, source: &str, reads_fact: bool) -> Result<Condition> {
    Condition::compile_reading(source, if reads_fact { WAIT_READS } else { SWITCH_READS }).map_err(|error| {
        EngineError::new(Class::Invalid, Code::InvalidCondition, format!("{path} does not compile: {error}"))
            .with("path", path)
            .with("line", error.line)
            .with("column", error.column)
    })
}

/// The process a task belongs to: the instance whose task step made it, and the writes a
/// decision on the task decides (`(step, name@version, inputs)`).
#[derive(Debug, Clone, PartialEq)]
pub struct TaskProcess {
    pub instance_id: String,
    /// `key@version`.
    pub process: String,
    /// The task step that made it.
    pub step: String,
    pub writes: Vec<(String, String, Value)>,
}

impl Engine {
    /// Publishes a process version (`org.manage`).
    pub async fn publish_process(
        &self,
        actor: &Actor,
        request: &ProcessRequest,
        request_id: Option<&str>,
    ) -> Result<ProcessOut> {
        actor.require("org.manage")?;
        let record = self.prepare_process(actor, request, &Planned::default()).await?;
        let record = self.publish_document(record, &Origin::of(actor, request_id)).await?;
        Ok(process_out(record))
    }

    /// The `process.published` event of `record`.
    pub(crate) fn process_event(&self, record: &ProcessRecord, origin: &Origin) -> Event {
        let published = ProcessPublished {
            key: record.key.clone(),
            version: record.version.clone(),
            agent_principal_id: record.agent_principal_id.clone(),
            skills: record.spec.skills().map(|(_, skill)| skill.to_owned()).collect(),
            package: record.package_key.clone(),
        };
        self.event(format!("process:{}", record.id), &published, origin)
    }

    /// The record a publication of `request` writes, every rule checked; what it names is looked
    /// up among `planned` first, then the catalog.
    pub(crate) async fn prepare_process(
        &self,
        actor: &Actor,
        request: &ProcessRequest,
        planned: &Planned<'_>,
    ) -> Result<ProcessRecord> {
        if !skill_contract::rule::is_rule_key(&request.key) {
            return Err(invalid(
                "key",
                format!(
                    "{:?} is not a process key: 1 to 200 of a-z 0-9 . _ - starting with a letter or digit",
                    request.key
                ),
            ));
        }
        let spec = skill_contract::process::read_spec(&request.spec).map_err(document_problem)?;
        if let Some(found) = spec.problems().into_iter().next() {
            return Err(document_problem(found));
        }
        for (path, source, reads_fact) in spec.conditions() {
            compile(&path, source, reads_fact)?;
        }
        let mut called = Vec::new();
        for (at, call) in spec.calls() {
            let path = format!("{at}.skill");
            let reference: SkillRef =
                call.skill.parse().map_err(|_| invalid(&path, format!("{:?} is not name@version", call.skill)))?;
            let skill = self.called_version(&path, &reference, planned).await?;
            if call.decided_by.is_none() && crate::basis::writes(skill.side_effects) {
                return Err(invalid(
                    &format!("{at}.decidedBy"),
                    format!(
                        "{reference} writes to the outside world, and a process writes only what a person decided: name the task step whose approved gate decides this call (decidedBy), and read its inputs from that step's output"
                    ),
                ));
            }
            called.push((path, skill));
        }
        let agent = self.process_agent(&spec, &called, planned).await?;
        for (path, task_type) in spec.task_types() {
            self.ensured_type(&path, task_type, planned.task_types).await?;
        }
        Ok(ProcessRecord {
            id: self.new_id(),
            key: request.key.clone(),
            version: spec.version.clone(),
            agent_principal_id: agent.principal_id,
            package_key: planned.package.map(str::to_owned),
            published_by: actor.id().to_owned(),
            created_at: self.now(),
            spec,
        })
    }

    /// A version a call step names: known, enabled, with a contract (it may write: on the
    /// process basis).
    async fn called_version(
        &self,
        path: &str,
        reference: &SkillRef,
        planned: &Planned<'_>,
    ) -> Result<skill_store::records::SkillRecord> {
        let (name, version) = (reference.name().as_str(), reference.version().as_str());
        let found = match planned.skills.iter().find(|s| s.name == name && s.version == version) {
            Some(skill) => Some(skill.clone()),
            None => match self.store.skill_version(name, version).await {
                Ok(entry) => Some(entry.skill),
                Err(error) if error.kind() == ErrorKind::NotFound => None,
                Err(error) => return Err(error.into()),
            },
        };
        let Some(skill) = found else {
            return Err(EngineError::new(
                Class::Invalid,
                Code::UnknownSkill,
                format!("{reference} is not in the catalog: publish it, or name a version it has"),
            )
            .with("path", path)
            .with("value", reference.to_string()));
        };
        if skill.status == SkillStatus::Disabled {
            return Err(EngineError::new(Class::Invalid, Code::SkillDisabled, format!("{reference} is disabled"))
                .with("path", path)
                .with("value", reference.to_string()));
        }
        if skill.contract.is_none() {
            return Err(invalid(
                path,
                format!("{reference} has no contract: a process calls versions the core can call"),
            ));
        }
        Ok(skill)
    }

    /// The agent the instances run as: known, an agent, assigned every version the process calls.
    async fn process_agent(
        &self,
        spec: &ProcessSpec,
        called: &[(String, skill_store::records::SkillRecord)],
        planned: &Planned<'_>,
    ) -> Result<AgentRecord> {
        let path = "spec.identity.agent";
        let key = spec.identity.agent.as_str();
        let agent = match planned.agents.iter().find(|agent| agent.key == key) {
            Some(agent) => agent.clone(),
            None => self.store.agent(key).await.map_err(|error| match error.kind() {
                ErrorKind::NotFound => EngineError::new(
                    Class::Invalid,
                    Code::UnknownReference,
                    format!("no agent {key}: declare it (agents/{key}.yaml) in the package, or in one it requires"),
                )
                .with("path", path)
                .with("value", key),
                _ => error.into(),
            })?,
        };
        if agent.spec.identity.kind != skill_contract::agent::AgentKind::Agent {
            return Err(invalid(
                path,
                format!("{key} is an executor: a process runs as an agent (identity.kind agent)"),
            ));
        }
        for (at, skill) in called {
            let reference = format!("{}@{}", skill.name, skill.version);
            if !agent.spec.invoked().any(|(assigned, _)| assigned == reference) {
                return Err(EngineError::new(
                    Class::Invalid,
                    Code::SkillsInvokeNotPermitted,
                    format!("the agent {key} is not assigned {reference}, which {at} calls"),
                )
                .with("path", path)
                .with("missing", reference));
            }
        }
        Ok(agent)
    }

    /// One process version: an id, `key@version`, or a key (its newest version) (`org.read`).
    pub async fn process(&self, actor: &Actor, reference: &str) -> Result<ProcessOut> {
        actor.require("org.read")?;
        self.find_process(reference).await.map(process_out)
    }

    /// Process versions in publication order (`org.read`).
    pub async fn processes(&self, actor: &Actor, query: &ProcessQuery) -> Result<Page<ProcessOut>> {
        actor.require("org.read")?;
        let limit = checked_limit(query.limit, 50, 200)?;
        let mut found =
            self.store.processes(query.key.as_deref(), query.cursor.as_deref(), i64::from(limit) + 1).await?;
        let more = found.len() > limit as usize;
        found.truncate(limit as usize);
        let next_cursor = if more { found.last().map(|process| process.id.clone()) } else { None };
        Ok(Page { items: found.into_iter().map(process_out).collect(), next_cursor })
    }

    /// Starts an instance of a process version in a workspace (`tasks.write` there), or answers
    /// the one its key made before (the same input; other input is `409 process_key_reuse`).
    pub async fn start_process(
        &self,
        actor: &Actor,
        reference: &str,
        request: &StartRequest,
        request_id: Option<&str>,
    ) -> Result<InstanceOut> {
        let workspace = self.find_workspace(&request.workspace).await?;
        if !actor.can_in("tasks.write", &workspace) {
            return Err(EngineError::forbidden("tasks.write").with("workspaceId", workspace));
        }
        let process = self.find_process(reference).await?;
        self.agent_may_work(&process, &workspace).await.map_err(|error| error.shown_to(actor.can("org.read")))?;
        let input = checked_input(&request.input)?;
        let key = match &request.key {
            Some(key) => checked_key(key)?,
            None => self.new_id(),
        };
        let starter = actor.initiators(InitiatorRole::Started);
        let origin = Origin::of(actor, request_id);
        let start = Start {
            process: &process,
            workspace: &workspace,
            key: &key,
            input,
            started_by: (actor.id(), &starter),
            by: "api",
        };
        self.start_instance(start, &origin).await
    }

    /// The instance `start` names (its key in its workspace): made, or the one there (`created`
    /// says which).
    pub(crate) async fn start_instance(&self, start: Start<'_>, origin: &Origin) -> Result<InstanceOut> {
        let (process, workspace, key, input) = (start.process, start.workspace, start.key, &start.input);
        let wanted = input.clone();
        let same = |found: InstanceRecord| -> Result<InstanceOut> {
            if found.input != wanted || found.process_id != process.id {
                return Err(EngineError::new(
                    Class::Conflict,
                    Code::ProcessKeyReuse,
                    format!(
                        "an instance of {} in this workspace has the key {key:?} with another input or version: a key names one instance",
                        process.key
                    ),
                )
                .with("instanceId", found.id));
            }
            Ok(instance_out(found, Vec::new(), &format!("{}@{}", process.key, process.version), false))
        };
        if let Some(found) = self.store.instance_by_key(workspace, &process.key, key).await? {
            return same(found);
        }
        let now = self.now();
        let (record, event) = self.new_instance_by(start, now, origin);
        let process_ref = format!("{}@{}", process.key, process.version);
        match self.store.write_work(&[WorkChange::InsertInstance(record.clone())], &[event]).await {
            Ok(()) => {
                self.moments.processes_due();
                Ok(instance_out(record, Vec::new(), &process_ref, true))
            }
            // Started twice at once: the other one was first.
            Err(error) if error.kind() == ErrorKind::Conflict => {
                let found = self.store.instance_by_key(workspace, &process.key, key).await?;
                same(found.ok_or_else(|| EngineError::from(error))?)
            }
            Err(error) => Err(error.into()),
        }
    }

    /// An instance with its steps (`tasks.read` in its workspace).
    pub async fn instance(&self, actor: &Actor, id: &str, query: &InstanceStepsQuery) -> Result<InstanceOut> {
        let limit = match query.steps_limit {
            None => 200,
            Some(limit @ 1..=1000) => i64::from(limit),
            Some(other) => {
                return Err(EngineError::invalid_request(format!("`stepsLimit` is 1 to 1000, not {other}"))
                    .with("field", "stepsLimit")
                    .with("max", 1000));
            }
        };
        let after = match query.steps_after {
            None => 0,
            Some(after) if after >= 0 => after,
            Some(other) => {
                return Err(EngineError::invalid_request(format!(
                    "`stepsAfter` is the seq of a step (the stepsNext of the page before), not {other}"
                ))
                .with("field", "stepsAfter"));
            }
        };
        let mut instance = self.visible_instance(actor, id, "tasks.read").await?;
        let process = self.store.process(&instance.process_id).await?;
        // The instance and its steps as of one write: every move writes its steps with the
        // instance's row one version on, so the same version read before and after the steps
        // means the steps are those of that version (else a core moved it meanwhile: again).
        let mut steps = self.store.steps_page(&instance.id, after, limit + 1).await?;
        for _ in 0..5 {
            let again = self.store.instance(&instance.id).await?;
            if again.row_version == instance.row_version {
                break;
            }
            instance = again;
            steps = self.store.steps_page(&instance.id, after, limit + 1).await?;
        }
        let more = steps.len() > usize::try_from(limit).unwrap_or(usize::MAX);
        steps.truncate(usize::try_from(limit).unwrap_or(usize::MAX));
        let next = if more { steps.last().map(|step| step.seq) } else { None };
        let mut out = instance_out(instance, steps, &format!("{}@{}", process.key, process.version), false);
        out.steps_next = next;
        Ok(out)
    }

    /// The instance `id`, when the actor may `permission` in its workspace (else `404`, so its
    /// existence is not told).
    async fn visible_instance(&self, actor: &Actor, id: &str, permission: &str) -> Result<InstanceRecord> {
        let missing = || EngineError::not_found(&format!("process instance {id}")).with("instanceId", id);
        let instance = self.store.instance(id).await.map_err(|error| match error.kind() {
            ErrorKind::NotFound => missing(),
            _ => error.into(),
        })?;
        if !actor.can_in("tasks.read", &instance.workspace_id) {
            return Err(missing());
        }
        if !actor.can_in(permission, &instance.workspace_id) {
            return Err(EngineError::forbidden(permission).with("workspaceId", instance.workspace_id.clone()));
        }
        Ok(instance)
    }

    /// A workspace's instances, newest first (`tasks.read` there).
    pub async fn instances(&self, actor: &Actor, query: &InstanceQuery) -> Result<Page<InstanceOut>> {
        let limit = checked_limit(query.limit, 50, 200)?;
        let workspace = self.find_workspace(&query.workspace).await?;
        if !actor.can_in("tasks.read", &workspace) {
            return Err(EngineError::forbidden("tasks.read").with("workspaceId", workspace));
        }
        let before = match &query.cursor {
            Some(cursor) => {
                let at = self.store.instance(cursor).await.map_err(|_| {
                    EngineError::new(Class::BadRequest, Code::InvalidRequest, "the cursor names no instance")
                        .with("field", "cursor")
                })?;
                Some((at.created_at, at.id))
            }
            None => None,
        };
        let mut found = self
            .store
            .instances(&workspace, query.process.as_deref(), query.status, before, i64::from(limit) + 1)
            .await?;
        let more = found.len() > limit as usize;
        found.truncate(limit as usize);
        let next_cursor = if more { found.last().map(|instance| instance.id.clone()) } else { None };
        let mut items = Vec::new();
        for instance in found {
            let process = self.store.process(&instance.process_id).await?;
            items.push(instance_out(instance, Vec::new(), &format!("{}@{}", process.key, process.version), false));
        }
        Ok(Page { items, next_cursor })
    }

    /// The instance whose task step made task `id` (`tasks.read` in its workspace), if a process
    /// made it, with the writes a decision on the task decides: each call step standing on that
    /// step (`decidedBy`), with its version and the inputs it will have as far as the task fixes
    /// them now (what reads the decision itself is left out).
    pub async fn task_process(&self, actor: &Actor, id: &str) -> Result<Option<TaskProcess>> {
        let task = self.visible_task(actor, id, None).await?;
        let Some(step) = self.store.step_of_task(&task.id).await? else { return Ok(None) };
        let instance = self.store.instance(&step.instance_id).await?;
        let process = self.store.process(&instance.process_id).await?;
        let document = json!({
            "steps": {step.step_id.clone(): {"output": {"id": task.id, "customFields": task.custom_fields}}},
            "instance": {"id": instance.id, "workspace": instance.workspace_id},
        });
        let mut writes = Vec::new();
        for later in &process.spec.steps {
            let Some(call) = later.call.as_ref().filter(|call| call.decided_by.as_deref() == Some(&step.step_id))
            else {
                continue;
            };
            let inputs = Value::Object(crate::paths::filled(&call.input, &document));
            writes.push((later.id.clone(), call.skill.clone(), inputs));
        }
        Ok(Some(TaskProcess {
            instance_id: instance.id,
            process: format!("{}@{}", process.key, process.version),
            step: step.step_id,
            writes,
        }))
    }

    /// How many instances started one another through task types before `instance`: its task
    /// step's task started an instance, whose task step's task started one, … (counted up to
    /// `limit`).
    pub(crate) async fn chain_depth(&self, instance: &InstanceRecord, limit: usize) -> Result<usize> {
        let mut depth = 0;
        let mut key = instance.key.clone();
        while depth < limit {
            let Some(task) = key.strip_prefix("task:") else { break };
            let Some(step) = self.store.step_of_task(task).await? else { break };
            key = self.store.instance(&step.instance_id).await?.key;
            depth += 1;
        }
        Ok(depth)
    }

    /// Cancels a running instance with a reason (`tasks.write` in its workspace): its open step
    /// closes (a pending call of it is cancelled at claim, `process_step_closed` or
    /// `process_cancelled`; one already claimed runs to its end), and the open task it waits for
    /// is cancelled with it (`process_cancelled`).
    pub async fn cancel_instance(
        &self,
        actor: &Actor,
        id: &str,
        request: &CancelInstanceRequest,
        request_id: Option<&str>,
    ) -> Result<InstanceOut> {
        let reason = request.reason.trim();
        if reason.is_empty() || reason.chars().count() > 500 || reason.chars().any(skill_api::is_invisible_or_bidi) {
            return Err(EngineError::new(
                Class::BadRequest,
                Code::InvalidRequest,
                "a reason is 1 to 500 characters, without invisible or direction-changing ones",
            )
            .with("field", "reason"));
        }
        for _ in 0..5 {
            let instance = self.visible_instance(actor, id, "tasks.write").await?;
            if instance.status.is_terminal() {
                return Err(EngineError::new(
                    Class::Conflict,
                    Code::InstanceEnded,
                    format!("the instance is {} already", instance.status),
                )
                .with("status", instance.status.as_str()));
            }
            let now = self.now();
            let origin = Origin::of(actor, request_id);
            let mut changes = Vec::new();
            let mut events = Vec::new();
            let steps = self.store.steps(&instance.id).await?;
            if let Some(open) = steps.iter().find(|step| step.status == StepStatus::Open) {
                let closed = StepRecord {
                    status: StepStatus::Closed,
                    error: Some(Failure::new("process_cancelled", reason)),
                    wake_at: None,
                    row_version: open.row_version + 1,
                    ended_at: Some(now),
                    ..open.clone()
                };
                events.push(self.event(format!("process_instance:{}", instance.id), &step_ended(&closed), &origin));
                changes.push(WorkChange::UpdateStep(closed));
                // The task it waits for is the process's work: it is cancelled with it, so no
                // decision is taken on it any more (nor an outcome run on one).
                if let Some(task_id) = &open.task_id {
                    let task = self.store.task(task_id).await?;
                    if !task.status.is_terminal() {
                        let mut gates = Vec::new();
                        self.withdraw_gates(&task, &origin, &mut gates, &mut events).await?;
                        let closed = self.closed_for(
                            &task,
                            TaskStatus::Cancelled,
                            Some("process_cancelled"),
                            &origin,
                            &mut events,
                        );
                        gates.insert(0, WorkChange::UpdateTask(closed));
                        changes.splice(0..0, gates);
                    }
                }
            }
            let ended = ProcessEnded {
                status: InstanceStatus::Cancelled,
                step: instance.at_step.clone(),
                code: Some("process_cancelled".to_owned()),
            };
            events.push(self.event(format!("process_instance:{}", instance.id), &ended, &origin));
            let cancelled = InstanceRecord {
                status: InstanceStatus::Cancelled,
                wake_at: None,
                error: Some(Failure { by: Some(actor.id().to_owned()), ..Failure::new("process_cancelled", reason) }),
                row_version: instance.row_version + 1,
                updated_at: now,
                ended_at: Some(now),
                ..instance
            };
            changes.push(WorkChange::UpdateInstance(cancelled));
            if written(self.store.write_work(&changes, &events).await)? {
                return self.instance(actor, id, &InstanceStepsQuery::default()).await;
            }
        }
        Err(crate::error::busy())
    }
}

/// The `process.step_ended` event of a step that ended.
pub(crate) fn step_ended(step: &StepRecord) -> ProcessStepEnded {
    ProcessStepEnded {
        activity_id: step.id.clone(),
        step: step.step_id.clone(),
        status: step.status,
        invocation_id: step.invocation_id.clone(),
        task_id: step.task_id.clone(),
        code: step.error.as_ref().map(|error| error.code.clone()),
    }
}

/// An instance's input: an object of at most 256 KiB.
fn checked_input(input: &Value) -> Result<Value> {
    let input = if input.is_null() { Value::Object(Map::new()) } else { input.clone() };
    if !input.is_object() {
        return Err(EngineError::new(Class::Invalid, Code::InvalidInput, "an instance's input is an object")
            .with("field", "input"));
    }
    let size = serde_json::to_vec(&input).map_or(usize::MAX, |bytes| bytes.len());
    if size > MAX_INPUT_BYTES {
        return Err(EngineError::new(
            Class::TooLarge,
            Code::InvalidInput,
            format!("the input is {size} bytes as JSON; at most {MAX_INPUT_BYTES}"),
        )
        .with("field", "input")
        .with("maxBytes", MAX_INPUT_BYTES));
    }
    Ok(input)
}

/// An instance's key: 1 to 200 characters without control, invisible or direction-changing ones.
fn checked_key(key: &str) -> Result<String> {
    let bad = key.chars().any(|c| c.is_control() || skill_api::is_invisible_or_bidi(c));
    if key.is_empty() || key.chars().count() > 200 || bad {
        return Err(EngineError::new(
            Class::Invalid,
            Code::InvalidInput,
            "a key is 1 to 200 characters without control, invisible or direction-changing ones",
        )
        .with("field", "key"));
    }
    Ok(key.to_owned())
}

pub(crate) fn process_out(record: ProcessRecord) -> ProcessOut {
    ProcessOut {
        id: record.id,
        key: record.key,
        version: record.version,
        spec: record.spec,
        agent_principal_id: record.agent_principal_id,
        package: record.package_key,
        published_by: record.published_by,
        created_at: view_time(&record.created_at),
    }
}

pub(crate) fn instance_out(
    record: InstanceRecord,
    steps: Vec<StepRecord>,
    process: &str,
    created: bool,
) -> InstanceOut {
    InstanceOut {
        id: record.id,
        process_id: record.process_id,
        process: process.to_owned(),
        workspace_id: record.workspace_id,
        key: record.key,
        status: record.status,
        input: record.input,
        vars: record.vars,
        step: record.at_step,
        wake_at: record.wake_at.as_ref().map(view_time),
        error: record.error,
        started_by: record.started_by,
        initiators: record.initiators,
        created_at: view_time(&record.created_at),
        updated_at: view_time(&record.updated_at),
        ended_at: record.ended_at.as_ref().map(view_time),
        created,
        steps: steps.into_iter().map(step_out).collect(),
        steps_next: None,
    }
}

fn step_out(step: StepRecord) -> StepOut {
    StepOut {
        id: step.id,
        seq: step.seq,
        step: step.step_id,
        action: step.action,
        status: step.status,
        attempt: step.attempt,
        invocation_id: step.invocation_id,
        task_id: step.task_id,
        fact_id: step.fact_id,
        approval_id: step.approval_id,
        output: step.output,
        error: step.error,
        wake_at: step.wake_at.as_ref().map(view_time),
        started_at: view_time(&step.started_at),
        ended_at: step.ended_at.as_ref().map(view_time),
    }
}

impl PackageDocument for ProcessRecord {
    fn reference(&self) -> (&str, &str) {
        (&self.key, &self.version)
    }

    fn stored<'a>(engine: &'a Engine, key: &'a str, version: &'a str) -> BoxFuture<'a, skill_store::Result<Self>> {
        engine.store.process_version(key, version)
    }

    fn same_as(&self, stored: &Self) -> bool {
        stored.spec == self.spec
    }

    fn exists(&self) -> EngineError {
        crate::documents::published_otherwise(Code::ProcessExists, "process", &self.key, &self.version)
    }

    fn event(&self, engine: &Engine, origin: &Origin) -> Event {
        engine.process_event(self, origin)
    }

    fn insert<'a>(&'a self, engine: &'a Engine, event: &'a Event) -> BoxFuture<'a, skill_store::Result<()>> {
        engine.store.insert_process(self, event)
    }

    fn published_already(&self) -> EngineError {
        let reference = format!("{}@{}", self.key, self.version);
        EngineError::new(
            Class::Conflict,
            Code::ProcessExists,
            format!("{reference} is published already: a published process never changes; publish another version"),
        )
        .with("process", reference)
    }
}
