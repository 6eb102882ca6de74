//! Work carried out by a skill (reference §10.1): an open task whose type pins an `execution` is
//! done by the core itself, as the principal [`EXECUTION_PRINCIPAL`] (an executor-kind
//! principal holding only `skills.invoke` and `tasks.write`). For each such task it starts a
//! run, calls the pinned version with the key `execution:<runId>` (the run and the task named,
//! inputs mapped from the task), waits for the call within the bound of §9, then ends the run
//! and closes the task by the call's result — `done` when it succeeded, `failed` otherwise.
//!
//! Each step is written before the next and repeats safely (one running run per owner and task,
//! one call per key, one execution call per run), so any core may do it and any may be killed.

use chrono::{Duration, Utc};
use serde_json::{Value, json};
use skill_api::InvokeRequest;
use skill_store::ErrorKind;
use skill_store::records::{RunRecord, TaskRecord, Time, WorkChange};

use super::{paths, task_view, terminal};
use crate::actor::Actor;
use crate::cancellation::Cancellation;
use crate::error::written;
use crate::error::{Class, Result};
use crate::{Engine, Origin};

/// The name of the principal the core carries out executions as.
pub const EXECUTION_PRINCIPAL: &str = "core.execution";
/// The permissions it holds, organisation-wide.
const EXECUTION_GRANTS: &[&str] = &["skills.invoke", "tasks.write"];
/// The most tasks one pass looks at.
const BATCH: i64 = 50;

impl Engine {
    /// The execution principal with its grants, made on first use.
    async fn execution_actor(&self) -> Result<Actor> {
        self.grant_execution(EXECUTION_GRANTS).await
    }

    /// Grants the execution principal `permissions` organisation-wide (an operator's choice: the
    /// permissions the contracts of the pinned skills require), making it on first use; answers
    /// it with all its grants.
    pub async fn grant_execution(&self, permissions: &[&str]) -> Result<Actor> {
        let origin = Origin::default();
        let principal = self.principal_named(EXECUTION_PRINCIPAL, "executor", &origin).await?;
        let grants = self.store.grants(&principal.id).await?;
        for permission in permissions {
            if grants.iter().any(|grant| grant.workspace_id.is_none() && grant.permission == *permission) {
                continue;
            }
            let grant = skill_store::records::Grant {
                id: self.new_id(),
                principal_id: principal.id.clone(),
                workspace_id: None,
                permission: (*permission).to_owned(),
                created_at: Utc::now(),
            };
            let event = self.event(
                "grant.added",
                format!("principal:{}", principal.id),
                json!({"permission": permission, "workspaceId": null}),
                &origin,
            );
            self.store.add_grant(&grant, &event).await?;
        }
        Ok(Actor::new(principal.clone(), self.store.grants(&principal.id).await?))
    }

    /// One pass over the open tasks whose type pins an execution, at `now`. Answers how many
    /// steps were taken.
    pub async fn run_executions(&self, now: Time) -> Result<usize> {
        let tasks = self.store.open_executions(BATCH).await?;
        if tasks.is_empty() {
            return Ok(0);
        }
        let actor = self.execution_actor().await?;
        if actor.principal().disabled_at.is_some() {
            return Ok(0);
        }
        let mut moved = 0;
        for task in tasks {
            moved += self.advance_execution(&actor, &task, now).await?;
        }
        Ok(moved)
    }

    async fn advance_execution(&self, actor: &Actor, task: &TaskRecord, now: Time) -> Result<usize> {
        let origin = Origin::of(actor, None);
        let runs = self.store.runs(&task.id).await?;
        let run = runs.into_iter().rev().find(|run| run.owner_principal_id == actor.id() && run.status == "running");
        let run = match run {
            Some(run) => run,
            None => {
                let run = RunRecord {
                    id: self.new_id(),
                    task_id: task.id.clone(),
                    owner_principal_id: actor.id().to_owned(),
                    status: "running".to_owned(),
                    result: None,
                    error: None,
                    row_version: 1,
                    created_at: now,
                    ended_at: None,
                };
                let event = self.event(
                    "run.started",
                    format!("run:{}", run.id),
                    json!({"taskId": task.id, "owner": actor.id(), "execution": true}),
                    &origin,
                );
                match self.store.write_work(&[WorkChange::InsertRun(run.clone())], &[event]).await {
                    Ok(()) => run,
                    // Another core started it: the next pass carries on with it.
                    Err(error) if error.kind() == ErrorKind::Conflict => return Ok(0),
                    Err(error) => return Err(error.into()),
                }
            }
        };
        let task_type = self.store.task_type(&task.task_type_id).await?;
        let Some(execution) = task_type.execution.clone() else { return Ok(0) };
        let skill = format!(
            "{}@{}",
            execution["skill"].as_str().unwrap_or_default(),
            execution["version"].as_str().unwrap_or_default()
        );
        let request = InvokeRequest {
            inputs: Some(paths::fill(&execution["inputs"], &task_view(task, &task_type))),
            idempotency_key: Some(format!("execution:{}", run.id)),
            task_id: Some(task.id.clone()),
            run_id: Some(run.id.clone()),
            approval_id: None,
        };
        let call = match self.invoke(actor, &skill, &request, None).await {
            Ok(invoked) => invoked.invocation,
            // A pending gate holds the execution's write: look again later.
            Err(error) if error.code == "approval_required" => return Ok(0),
            Err(error) if matches!(error.class, Class::Unavailable | Class::Internal) => return Err(error),
            Err(error) => {
                let failure = json!({"code": error.code, "message": error.message});
                return self.finish_execution(task, &run, "failed", None, Some(failure), &origin).await;
            }
        };
        match call.status.as_str() {
            "succeeded" => {
                let result = json!({"skillInvocationId": call.id, "skill": skill, "status": call.status,
                                    "artifactId": call.artifact_id});
                self.finish_execution(task, &run, "succeeded", Some(result), None, &origin).await
            }
            "failed" | "cancelled" => {
                let code = call.error.as_ref().and_then(|e| e.get("code")).and_then(Value::as_str).unwrap_or("unknown");
                let failure = json!({"code": format!("skill_invocation_{}", call.status),
                                     "message": format!("skill_invocation_{}: {code}", call.status),
                                     "skillInvocationId": call.id});
                self.finish_execution(task, &run, "failed", None, Some(failure), &origin).await
            }
            _ => {
                let record = self.store.invocation(&call.id).await?;
                let skill = self.store.skill(&record.skill_id).await?.skill;
                if run.created_at + execution_bound(skill.contract.as_ref().unwrap_or(&Value::Null)) <= now {
                    let cause = Cancellation {
                        code: "basis_revoked",
                        reason: "execution_deadline",
                        by: actor.id(),
                        initiator: "system",
                    };
                    let (cancelled, event) = self.cancelled(&record, &skill, &cause, now, &origin);
                    if written(self.store.update_invocation(&cancelled, &[event]).await)? {
                        return Ok(1);
                    }
                }
                Ok(0)
            }
        }
    }

    /// Ends the run and closes the task by the run's end, in one transaction.
    async fn finish_execution(
        &self,
        task: &TaskRecord,
        run: &RunRecord,
        status: &str,
        result: Option<Value>,
        error: Option<Value>,
        origin: &Origin,
    ) -> Result<usize> {
        let (ended, run_event) = self.ended_run(run, status, result, error, origin);
        let mut events = vec![run_event];
        let mut changes = vec![WorkChange::UpdateRun(ended)];
        if !terminal(&task.status) {
            let closed = self.closed(task, if status == "succeeded" { "done" } else { "failed" }, origin, &mut events);
            changes.push(WorkChange::UpdateTask(closed));
        }
        Ok(usize::from(written(self.store.write_work(&changes, &events).await)?))
    }
}

/// How long an execution waits for its call (§9): `maxAttempts × (2×timeout + 30 + backoff) + 30`
/// seconds.
fn execution_bound(contract: &Value) -> Duration {
    let attempts = contract["retryPolicy"]["maxAttempts"].as_i64().unwrap_or(1).clamp(1, 10);
    let backoff = contract["retryPolicy"]["backoffSeconds"].as_i64().unwrap_or(0).clamp(0, 3600);
    let timeout = crate::lease::timeout_of(contract);
    Duration::seconds(attempts * (2 * timeout + 30 + backoff) + 30)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn an_execution_waits_for_every_attempt_and_its_backoff() {
        let contract = json!({"timeoutSeconds": 30, "retryPolicy": {"maxAttempts": 3, "backoffSeconds": 10}});
        assert_eq!(execution_bound(&contract), Duration::seconds(3 * (2 * 30 + 30 + 10) + 30));
        assert_eq!(
            execution_bound(&json!({})),
            Duration::seconds(2 * 60 + 30 + 30),
            "the defaults: one attempt of 60 s"
        );
    }
}
