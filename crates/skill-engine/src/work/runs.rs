//! Runs: a principal's attempt at a task, started on an open task and ended by its owner.
use skill_api::Lifecycle;
use skill_api::events::{RunEnded, RunStarted};
use skill_contract::codes::Code;

use serde_json::{Value, json};
use skill_api::{EndRunRequest, RunOut, RunRequest, RunStatus};
use skill_store::ErrorKind;
use skill_store::records::{RunRecord, WorkChange};

use crate::actor::Actor;
use crate::basis::task_terminal;
use crate::catalog::view_time;
use crate::error::{Class, EngineError, Result, requested_state};
use crate::error::{busy, written};
use crate::visibility::check_owned_and_running;
use crate::{Engine, Origin};

impl Engine {
    /// Starts a run on an open task (`tasks.write` in its workspace); the caller owns it.
    pub async fn start_run(&self, actor: &Actor, request: &RunRequest, request_id: Option<&str>) -> Result<RunOut> {
        let task = self.visible_task(actor, &request.task_id, Some("tasks.write")).await?;
        if task.status.is_terminal() {
            return Err(task_terminal(&task));
        }
        let run = self.new_run(&task.id, actor.id(), self.now());
        let started =
            RunStarted { task_id: run.task_id.clone(), owner: run.owner_principal_id.clone(), execution: None };
        let event = self.event(format!("run:{}", run.id), &started, &Origin::of(actor, request_id));
        match self.store.write_work(&[WorkChange::InsertRun(run.clone())], &[event]).await {
            Ok(()) => Ok(run_out(run)),
            Err(error) if error.kind() == ErrorKind::Conflict => {
                let running = self
                    .store
                    .runs(&task.id)
                    .await?
                    .into_iter()
                    .rev()
                    .find(|other| other.owner_principal_id == actor.id() && other.status == RunStatus::Running);
                Err(EngineError::new(
                    Class::Conflict,
                    Code::RunAlreadyRunning,
                    "you have a running run on this task already: end it first, or use it",
                )
                .with("runId", running.map_or(Value::Null, |run| json!(run.id))))
            }
            Err(error) => Err(error.into()),
        }
    }

    /// A new running run of `owner` on the task `task_id`, started `now`.
    pub(crate) fn new_run(&self, task_id: &str, owner: &str, now: skill_store::records::Time) -> RunRecord {
        RunRecord {
            id: self.new_id(),
            task_id: task_id.to_owned(),
            owner_principal_id: owner.to_owned(),
            status: RunStatus::Running,
            result: None,
            error: None,
            row_version: 1,
            created_at: now,
            ended_at: None,
        }
    }

    /// One run (`tasks.read` in its task's workspace).
    pub async fn run(&self, actor: &Actor, id: &str) -> Result<RunOut> {
        Ok(run_out(self.visible_run(actor, id).await?))
    }

    /// Ends one's own running run.
    pub async fn end_run(
        &self,
        actor: &Actor,
        id: &str,
        request: &EndRunRequest,
        request_id: Option<&str>,
    ) -> Result<RunOut> {
        let status = requested_state(
            &request.status,
            &[RunStatus::Succeeded, RunStatus::Failed, RunStatus::Cancelled],
            "a run's ending status",
        )?;
        for _ in 0..5 {
            let run = self.visible_run(actor, id).await?;
            check_owned_and_running(actor, &run)?;
            let (ended, event) = self.ended_run(
                &run,
                status,
                request.result.clone().map(Value::Object),
                request.error.clone().map(Value::Object),
                &Origin::of(actor, request_id),
            );
            if written(self.store.write_work(&[WorkChange::UpdateRun(ended.clone())], &[event]).await)? {
                return Ok(run_out(ended));
            }
        }
        Err(busy())
    }

    /// `run` ended as `status` now, and its `run.ended` event.
    pub(crate) fn ended_run(
        &self,
        run: &RunRecord,
        status: RunStatus,
        result: Option<Value>,
        error: Option<Value>,
        origin: &Origin,
    ) -> (RunRecord, skill_store::records::Event) {
        let ended = RunRecord {
            status,
            result,
            error,
            ended_at: Some(self.now()),
            row_version: run.row_version + 1,
            ..run.clone()
        };
        let event = self.event(format!("run:{}", run.id), &RunEnded { task_id: run.task_id.clone(), status }, origin);
        (ended, event)
    }
}

pub(crate) fn run_out(run: RunRecord) -> RunOut {
    RunOut {
        id: run.id,
        task_id: run.task_id,
        owner_principal_id: run.owner_principal_id,
        status: run.status,
        result: run.result,
        error: run.error,
        created_at: view_time(&run.created_at),
        ended_at: run.ended_at.as_ref().map(view_time),
    }
}
