//! Starting a process instance: the process a reference names, whether its agent may work in a
//! workspace, a new instance with its `process.started` event (written by the caller, with what
//! started it), and the instance a new task starts when its type names a process.

use serde_json::{Value, json};
use skill_api::InstanceStatus;
use skill_api::events::ProcessStarted;
use skill_api::four_eyes::{self, Initiator};
use skill_store::ErrorKind;
use skill_store::records::{Event, InstanceRecord, ProcessRecord, Time};

use crate::error::{EngineError, Result};
use crate::{Engine, Origin};

/// What starts an instance: of which process, in which workspace, under which key, with what
/// input; started by the principal `started_by.0` for the initiators `started_by.1` (carried to
/// the instance), through `by` (`api`, `rule`, `task`).
pub(crate) struct Start<'a> {
    pub(crate) process: &'a ProcessRecord,
    pub(crate) workspace: &'a str,
    pub(crate) key: &'a str,
    pub(crate) input: Value,
    pub(crate) started_by: (&'a str, &'a [Initiator]),
    pub(crate) by: &'a str,
}

impl Engine {
    /// The process version `reference` names: an id, `key@version`, or a key (its newest
    /// version); `404` when there is none.
    pub(crate) async fn find_process(&self, reference: &str) -> Result<ProcessRecord> {
        let found = if let Some((key, version)) = reference.split_once('@') {
            self.store.process_version(key, version).await
        } else if uuid::Uuid::try_parse(reference).is_ok() {
            self.store.process(reference).await
        } else {
            self.store.newest_process(reference).await
        };
        found.map_err(|error| match error.kind() {
            ErrorKind::NotFound => EngineError::not_found(&format!("process {reference}")).with("process", reference),
            _ => error.into(),
        })
    }

    /// `403` unless the agent `process` runs as may work in `workspace` (`tasks.write` there): an
    /// instance works, and writes, only where its agent was let work — whoever starts it.
    pub(crate) async fn agent_may_work(&self, process: &ProcessRecord, workspace: &str) -> Result<()> {
        let agent = self.agent_actor(&process.agent_principal_id).await?;
        if agent.can_in("tasks.write", workspace) {
            return Ok(());
        }
        Err(EngineError::forbidden("tasks.write")
            .with("workspaceId", workspace)
            .with("agent", agent.principal().name.as_str())
            .with("reason", "the process's agent may not work in this workspace"))
    }

    /// A new instance and its `process.started` event (not written).
    pub(crate) fn new_instance(&self, start: Start<'_>, now: Time) -> (InstanceRecord, Event) {
        self.new_instance_by(start, now, &Origin::default())
    }

    /// A new instance and its event, with the request's origin.
    pub(crate) fn new_instance_by(&self, start: Start<'_>, now: Time, origin: &Origin) -> (InstanceRecord, Event) {
        let Start { process, workspace, key, input, started_by: (started_by, behind), by } = start;
        let first = process.spec.steps.first().map(|step| step.id.clone());
        let id = self.new_id();
        let initiators = four_eyes::carried(behind, &format!("instance:{id}"), &[]);
        let record = InstanceRecord {
            id,
            process_id: process.id.clone(),
            process_key: process.key.clone(),
            workspace_id: workspace.to_owned(),
            key: key.to_owned(),
            input,
            vars: json!({}),
            status: InstanceStatus::Running,
            at_step: first,
            wake_at: Some(now),
            error: None,
            started_by: started_by.to_owned(),
            row_version: 1,
            created_at: now,
            updated_at: now,
            ended_at: None,
            initiators,
        };
        let started = ProcessStarted {
            process_id: process.id.clone(),
            process: format!("{}@{}", process.key, process.version),
            workspace_id: workspace.to_owned(),
            key: key.to_owned(),
            by: by.to_owned(),
            initiators: record.initiators.clone(),
        };
        let event = self.event(format!("process_instance:{}", record.id), &started, origin);
        (record, event)
    }

    /// The instance a new task of `task_type` starts when the type names a process — key
    /// `task:<task id>`, input filled from the task, its starter `starter` (the person behind the
    /// task: its creator, the recorder of a rule's fact, the starter of the instance whose step
    /// made it) — to be written with the task. `403` when the process's agent may not work in
    /// its workspace.
    pub(crate) async fn task_instance(
        &self,
        task: &skill_store::records::TaskRecord,
        task_type: &skill_store::records::TaskTypeRecord,
        starter: &str,
    ) -> Result<Option<(InstanceRecord, Event)>> {
        let Some(named) = &task_type.spec.process else { return Ok(None) };
        let process = self.find_process(&named.process).await?;
        self.agent_may_work(&process, &task.workspace_id).await?;
        let view = crate::paths::task_view(task, task_type);
        let input = Value::Object(crate::paths::filled(&named.input, &view));
        let key = format!("task:{}", task.id);
        let now = self.now();
        let started_by = (starter, task.initiators.as_slice());
        let start =
            Start { process: &process, workspace: &task.workspace_id, key: &key, input, started_by, by: "task" };
        Ok(Some(self.new_instance(start, now)))
    }
}
