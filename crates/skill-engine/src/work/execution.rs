//! Work carried out by a skill (reference §10.1): an open task whose type pins an `execution` is
//! done by the core itself, as the principal [`crate::identity::EXECUTION_PRINCIPAL`] (an executor-kind
//! principal no token is issued for). The execution basis is this worker's alone. For each such
//! task whose gates let it — one approved and none pending, or, for an execution that does not
//! write to the outside world, no gate asked for — it starts a run,
//! calls the pinned version with the key `execution:<runId>` (the run and the task named, inputs
//! mapped from the task), waits for the call within the bound of §9, then ends the run and closes
//! the task by the call's result — `done` when it succeeded, `failed` otherwise. A rejected gate
//! ends the task (`failed`, reason `gate_rejected`) without a call; without a gate, or with its
//! gates withdrawn, an execution that writes waits for a gate a person approves (a call queued before it was withdrawn is cancelled
//! at claim, and its run ends).
//!
//! Each step is written before the next and repeats safely (one running run per owner and task,
//! one call per key, one execution call per run and one that may write per task), so any core
//! may do it and any may be killed.
use skill_api::events::RunStarted;
use skill_api::{
    ApprovalStatus, CallStatus, ExecutionResult, Failure, Lifecycle, LostBasis, PrincipalKind, RunStatus, State,
    TaskStatus,
};
use skill_contract::codes::Code;

use chrono::Duration;
use serde_json::Value;
use skill_api::InvokeRequest;
use skill_store::ErrorKind;
use skill_store::records::{InvocationRecord, RunRecord, SkillRecord, TaskRecord, Time, WorkChange};

use crate::actor::Actor;
use crate::basis::{GateState, Internal, execution_inputs, gates_of};
use crate::cancellation::Cancellation;
use crate::error::written;
use crate::error::{Class, Result};
use crate::identity::EXECUTION_PRINCIPAL;
use crate::{Engine, Origin};

/// The permissions it holds, organisation-wide (the operator grants the contracts' own with
/// `skill-core grant`).
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
        let principal = self.principal_named(EXECUTION_PRINCIPAL, PrincipalKind::Executor, &origin).await?;
        let grants = self.store.grants(&principal.id).await?;
        for permission in permissions {
            if grants.iter().any(|grant| grant.workspace_id.is_none() && grant.permission == *permission) {
                continue;
            }
            self.add_grant(&principal, permission, None, &origin).await?;
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
        let task_type = self.store.task_type(&task.task_type_id).await?;
        let Some(skill) = super::execution_reference(&task_type) else { return Ok(0) };
        let runs = self.store.runs(&task.id).await?;
        let running =
            runs.into_iter().rev().find(|run| run.owner_principal_id == actor.id() && run.status == RunStatus::Running);
        let approvals = self.store.approvals(&task.id).await?;
        // The pinned version, read once a pass: what it writes, and how long its call may take.
        let version = self.find(&skill).await?.skill;
        let writes = crate::basis::writes(version.side_effects);
        let state = GateState::of(gates_of(&approvals), writes);
        if state != GateState::Open {
            return self.gated_execution(task, running.as_ref(), &version, state, now, &origin).await;
        }
        let run = match running {
            Some(run) => run,
            None => match self.start_execution_run(actor, task, now, &origin).await? {
                Some(run) => run,
                None => return Ok(0),
            },
        };
        let inputs = match execution_inputs(task, &task_type) {
            Value::Object(inputs) => inputs,
            _ => serde_json::Map::new(),
        };
        let request = InvokeRequest {
            inputs: Some(inputs),
            idempotency_key: Some(execution_key(&run)),
            task_id: Some(task.id.clone()),
            run_id: Some(run.id.clone()),
            approval_id: None,
        };
        let call = match self.invoke_by(actor, &skill, &request, None, Some(Internal::Execution)).await {
            Ok(invoked) => self.store.invocation(&invoked.invocation.id).await?,
            // The gates moved meanwhile: look again later.
            Err(error) if error.is(Code::ApprovalRequired) || error.is(Code::GateRejected) => return Ok(0),
            Err(error) if matches!(error.class, Class::Unavailable | Class::Internal) => return Err(error),
            Err(error) => {
                let failure = Failure::new(error.code, error.message);
                return self.finish_execution(task, Some(&run), RunStatus::Failed, None, Some(failure), &origin).await;
            }
        };
        if let Some(moved) = self.ended_execution(task, &run, &call, &skill, &origin).await? {
            return Ok(moved);
        }
        // Still waiting: at most the bound of §9, counted from the run's start or the gate's
        // approval, whichever is later.
        let approved = approvals
            .iter()
            .filter(|a| a.gates_the_task() && a.status == ApprovalStatus::Approved)
            .filter_map(|a| a.decided_at)
            .max();
        let since = approved.map_or(run.created_at, |at| at.max(run.created_at));
        if since + execution_bound(crate::catalog::contract_of(&version)?) <= now {
            let cause = Cancellation {
                code: "basis_revoked",
                reason: LostBasis::ExecutionDeadline.as_str(),
                by: actor.id(),
                initiator: "system",
            };
            let (cancelled, event) = self.cancelled(&call, &version, &cause, now, &origin);
            if written(self.store.update_invocation(&cancelled, &[event]).await)? {
                self.moments.call_moved(&cancelled, &version.name, &version.version);
                return Ok(1);
            }
        }
        Ok(0)
    }

    /// A new run of the execution principal on `task`; `None` when another core started one.
    async fn start_execution_run(
        &self,
        actor: &Actor,
        task: &TaskRecord,
        now: Time,
        origin: &Origin,
    ) -> Result<Option<RunRecord>> {
        let run = self.new_run(&task.id, actor.id(), now);
        let started = RunStarted { task_id: task.id.clone(), owner: actor.id().to_owned(), execution: Some(true) };
        let event = self.event(format!("run:{}", run.id), &started, origin);
        match self.store.write_work(&[WorkChange::InsertRun(run.clone())], &[event]).await {
            Ok(()) => Ok(Some(run)),
            // Another core started it: the next pass carries on with it.
            Err(error) if error.kind() == ErrorKind::Conflict => Ok(None),
            Err(error) => Err(error.into()),
        }
    }

    /// A task whose gates hold its execution. Rejected: the task fails (`gate_rejected`) once no
    /// call of it runs. Withdrawn: a queued call is cancelled (nothing was decided) and its run
    /// ends; the task waits for a new gate. Pending: it waits.
    async fn gated_execution(
        &self,
        task: &TaskRecord,
        run: Option<&RunRecord>,
        version: &SkillRecord,
        state: GateState,
        now: Time,
        origin: &Origin,
    ) -> Result<usize> {
        let call = match run {
            Some(run) => self.execution_call(version, run).await?,
            None => None,
        };
        let skill = format!("{}@{}", version.name, version.version);
        let skill = skill.as_str();
        // A call an executor holds may be acting: it finishes, and its end decides.
        if call.as_ref().is_some_and(|call| call.status == CallStatus::Running) || state == GateState::Pending {
            return Ok(0);
        }
        if let (Some(run), Some(call)) = (run, &call)
            && let Some(moved) = self.ended_execution(task, run, call, skill, origin).await?
        {
            return Ok(moved);
        }
        match (state, run, call) {
            (GateState::Rejected, _, _) => {
                let failure = Failure::new("gate_rejected", "the task's gate was rejected");
                self.finish_execution(task, run, RunStatus::Failed, None, Some(failure), origin).await
            }
            (GateState::Undecided, Some(_), Some(call)) if call.status == CallStatus::Pending => {
                let cause = Cancellation {
                    code: "basis_revoked",
                    reason: LostBasis::ApprovalWithdrawn.as_str(),
                    by: "system",
                    initiator: "system",
                };
                let (cancelled, event) = self.cancelled(&call, version, &cause, now, origin);
                let wrote = written(self.store.update_invocation(&cancelled, &[event]).await)?;
                if wrote {
                    self.moments.call_moved(&cancelled, &version.name, &version.version);
                }
                Ok(usize::from(wrote))
            }
            (GateState::Undecided, Some(run), None) => {
                let failure = crate::document(&Failure::new("gate_withdrawn", "the task's gate was withdrawn"));
                let (ended, event) = self.ended_run(run, RunStatus::Cancelled, None, Some(failure), origin);
                Ok(usize::from(written(self.store.write_work(&[WorkChange::UpdateRun(ended)], &[event]).await)?))
            }
            _ => Ok(0),
        }
    }

    /// The execution call of `run`, if it made one.
    async fn execution_call(&self, version: &SkillRecord, run: &RunRecord) -> Result<Option<InvocationRecord>> {
        match self.store.invocation_by_key(&version.id, &execution_key(run)).await {
            Ok(call) => Ok(Some(call)),
            Err(error) if error.kind() == ErrorKind::NotFound => Ok(None),
            Err(error) => Err(error.into()),
        }
    }

    /// What the end of the execution's `call` does: the run and the task end by it — but a call
    /// cancelled because the task's gate was withdrawn before anyone ran it only ends its run
    /// (nothing was written; a new gate approved makes the task's one write). `None` while the
    /// call has not ended.
    async fn ended_execution(
        &self,
        task: &TaskRecord,
        run: &RunRecord,
        call: &InvocationRecord,
        skill: &str,
        origin: &Origin,
    ) -> Result<Option<usize>> {
        let error = call.error.as_ref();
        let code = error.map_or("unknown", |error| error.code.as_str());
        let lost = error
            .and_then(|error| LostBasis::parse(&error.message).ok())
            .filter(|_| Code::parse(code) == Some(Code::BasisRevoked));
        let moved = match call.status {
            CallStatus::Succeeded => {
                let result = ExecutionResult {
                    skill_invocation_id: call.id.clone(),
                    skill: skill.to_owned(),
                    status: call.status,
                    artifact_id: call.artifact_id.clone(),
                };
                let result = Some(crate::document(&result));
                self.finish_execution(task, Some(run), RunStatus::Succeeded, result, None, origin).await?
            }
            CallStatus::Cancelled if call.attempt == 0 && lost == Some(LostBasis::ApprovalWithdrawn) => {
                let failure = crate::document(&Failure {
                    skill_invocation_id: Some(call.id.clone()),
                    ..Failure::new("gate_withdrawn", "the task's gate was withdrawn before the call ran")
                });
                let (ended, event) = self.ended_run(run, RunStatus::Cancelled, None, Some(failure), origin);
                usize::from(written(self.store.write_work(&[WorkChange::UpdateRun(ended)], &[event]).await)?)
            }
            CallStatus::Failed | CallStatus::Cancelled => {
                let failed = if lost == Some(LostBasis::GateRejected) {
                    "gate_rejected".to_owned()
                } else if lost == Some(LostBasis::DeciderDisabled) {
                    // The gate stays approved by someone who may no longer decide: the task fails
                    // rather than run again on that decision.
                    "decider_disabled".to_owned()
                } else {
                    format!("skill_invocation_{}", call.status)
                };
                let failure = Failure {
                    skill_invocation_id: Some(call.id.clone()),
                    ..Failure::new(failed, format!("skill_invocation_{}: {code}", call.status))
                };
                self.finish_execution(task, Some(run), RunStatus::Failed, None, Some(failure), origin).await?
            }
            CallStatus::Pending | CallStatus::Running => return Ok(None),
        };
        Ok(Some(moved))
    }

    /// Ends the run and closes the task by the run's end, in one transaction.
    async fn finish_execution(
        &self,
        task: &TaskRecord,
        run: Option<&RunRecord>,
        status: RunStatus,
        result: Option<Value>,
        error: Option<Failure>,
        origin: &Origin,
    ) -> Result<usize> {
        let reason = error.as_ref().map(|error| error.code.clone());
        let error = error.as_ref().map(crate::document);
        let mut events = Vec::new();
        let mut changes = Vec::new();
        if let Some(run) = run {
            let (ended, run_event) = self.ended_run(run, status, result, error, origin);
            events.push(run_event);
            changes.push(WorkChange::UpdateRun(ended));
        }
        if !task.status.is_terminal() {
            let closed_as = if status == RunStatus::Succeeded { TaskStatus::Done } else { TaskStatus::Failed };
            self.withdraw_gates(task, origin, &mut changes, &mut events).await?;
            let closed = self.closed_for(task, closed_as, reason.as_deref(), origin, &mut events);
            changes.push(WorkChange::UpdateTask(closed));
        }
        Ok(usize::from(written(self.store.write_work(&changes, &events).await)?))
    }
}

/// The key of a run's execution call.
fn execution_key(run: &RunRecord) -> String {
    format!("execution:{}", run.id)
}

/// How long an execution waits for its call (§9): `maxAttempts × (2×timeout + 30 + backoff) + 30`
/// seconds.
fn execution_bound(contract: &skill_contract::Contract) -> Duration {
    let attempts = i64::from(contract.retry_policy().max_attempts());
    let backoff = i64::from(contract.retry_policy().backoff_seconds());
    let timeout = crate::lease::timeout_of(contract);
    Duration::seconds(attempts * (2 * timeout + 30 + backoff) + 30)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn contract(value: serde_json::Value) -> skill_contract::Contract {
        let mut value = value;
        value["implementation"] = json!({"protocol": "local", "entrypoint": "a:b"});
        skill_contract::Contract::from_stored(&value).expect("a stored contract")
    }

    #[test]
    fn an_execution_waits_for_every_attempt_and_its_backoff() {
        let three = contract(json!({"timeoutSeconds": 30, "retryPolicy": {"maxAttempts": 3, "backoffSeconds": 10}}));
        assert_eq!(execution_bound(&three), Duration::seconds(3 * (2 * 30 + 30 + 10) + 30));
        assert_eq!(
            execution_bound(&contract(json!({}))),
            Duration::seconds(2 * 60 + 30 + 30),
            "the defaults: one attempt of 60 s"
        );
    }
}
