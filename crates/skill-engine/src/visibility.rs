//! What an actor may see of work: a task needs `tasks.read` in its workspace (`tasks.write` and
//! `approvals.decide` include it), a run its task; to anyone else neither exists (`404`).

use skill_api::RunStatus;
use skill_contract::codes::Code;
use skill_store::ErrorKind;
use skill_store::records::{RunRecord, TaskRecord};

use crate::Engine;
use crate::actor::Actor;
use crate::error::{Class, EngineError, Result};

/// The built-in task type of agents' requests (made by the core for an agent's write through
/// the MCP gateway, never by hand).
pub const REQUEST_TYPE: &str = "agent-request";

impl Engine {
    /// The task `id` if `actor` may read it; `404` otherwise (as for a missing one). With
    /// `permission`, also `403` unless the actor holds it in the task's workspace.
    pub(crate) async fn visible_task(&self, actor: &Actor, id: &str, permission: Option<&str>) -> Result<TaskRecord> {
        let hidden = || EngineError::not_found(&format!("task {id}")).with("taskId", id);
        let task = match self.store.task(id).await {
            Ok(task) => task,
            Err(error) if error.kind() == ErrorKind::NotFound => return Err(hidden()),
            Err(error) => return Err(error.into()),
        };
        if !actor.can_in("tasks.read", &task.workspace_id) {
            return Err(hidden());
        }
        // An agent's request is decided and handled by people: no agent reads or changes its task
        // (its own agent follows it through the gateway).
        if actor.principal().kind == skill_api::PrincipalKind::Agent
            && self.store.task_type(&task.task_type_id).await?.key == REQUEST_TYPE
        {
            return Err(hidden());
        }
        if let Some(permission) = permission
            && !actor.can_in(permission, &task.workspace_id)
        {
            return Err(EngineError::forbidden(permission).with("workspaceId", task.workspace_id));
        }
        Ok(task)
    }

    /// The run `id` if its task is visible to `actor`; `404` otherwise.
    pub(crate) async fn visible_run(&self, actor: &Actor, id: &str) -> Result<RunRecord> {
        let hidden = || EngineError::not_found(&format!("run {id}")).with("runId", id);
        let run = match self.store.run(id).await {
            Ok(run) => run,
            Err(error) if error.kind() == ErrorKind::NotFound => return Err(hidden()),
            Err(error) => return Err(error.into()),
        };
        self.visible_task(actor, &run.task_id, None).await.map_err(|_| hidden())?;
        Ok(run)
    }
}

/// `403 run_owner_mismatch` unless `actor` owns the run; `409 run_not_active` unless it runs.
pub(crate) fn check_owned_and_running(actor: &Actor, run: &RunRecord) -> Result<()> {
    if run.owner_principal_id != actor.id() {
        return Err(EngineError::new(Class::Forbidden, Code::RunOwnerMismatch, "the run belongs to another principal")
            .with("runId", run.id.clone()));
    }
    if run.status != RunStatus::Running {
        return Err(EngineError::new(
            Class::Conflict,
            Code::RunNotActive,
            format!("the run has ended ({})", run.status),
        )
        .with("runId", run.id.clone())
        .with("status", run.status));
    }
    Ok(())
}
