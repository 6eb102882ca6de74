//! The checks a new call passes after its key's look-up, in the reference's order — its
//! contract and key, its inputs, where it is placed (a run, a task and the permissions there),
//! what the caller may call, and its basis — and the call and event they make.

use serde_json::{Value, json};
use skill_api::events::{InvocationRequested, Requester};
use skill_api::{Basis, CallStatus, InvokeRequest, RequesterKind};
use skill_contract::codes::Code;
use skill_contract::{Contract, Idempotency, Implementation};
use skill_store::records::{Event, InvocationRecord, RunRecord, SkillRecord, TaskRecord, TaskTypeRecord};

use super::endpoint_target;
use crate::actor::Actor;
use crate::basis::Internal;
use crate::catalog::invocable;
use crate::error::{Class, EngineError, Result};
use crate::{Engine, Origin};

/// A call as it was asked for: by whom, of which version, with what, and (for a call the core
/// makes itself) on which of its own grounds.
#[derive(Clone, Copy)]
pub(super) struct Asked<'a> {
    pub(super) actor: &'a Actor,
    pub(super) skill: &'a SkillRecord,
    pub(super) request: &'a InvokeRequest,
    pub(super) request_id: Option<&'a str>,
    pub(super) internal: Option<Internal<'a>>,
    pub(super) key: Option<&'a str>,
    /// Canonical, so equal inputs are stored as the same text.
    pub(super) inputs: &'a Value,
}

/// Where a call is placed: the caller's run and the task (with its type) it works on.
struct Placed {
    run: Option<RunRecord>,
    task: Option<(TaskRecord, TaskTypeRecord)>,
}

impl Engine {
    /// The new call and its event, once every check after the key's look-up passed, and the
    /// basis it stands on.
    pub(super) async fn checked_call(&self, asked: Asked<'_>) -> Result<(InvocationRecord, Event, Option<Basis>)> {
        let Asked { actor, skill, request, .. } = asked;
        let contract = invocable(skill)?;
        if asked.key.is_none() && contract.idempotency() == Idempotency::Required {
            return Err(EngineError::new(
                Class::BadRequest,
                Code::IdempotencyKeyRequired,
                format!("{}@{} needs an idempotencyKey: its contract requires one", skill.name, skill.version),
            )
            .with("skill", format!("{}@{}", skill.name, skill.version)));
        }
        self.check_inputs(skill, contract, asked.inputs).await?;
        let placed = self.placed(asked).await?;
        check_permissions(actor, skill, contract, placed.task.as_ref())?;
        // Step 12: an agent calls only what its assignments grant.
        self.check_tool_policy(actor, skill).await?;
        // Step 13: the basis of an external write.
        let (task, run) = (placed.task.as_ref(), placed.run.as_ref());
        let basis =
            self.basis(actor, skill, asked.inputs, task, run, request.approval_id.as_deref(), asked.internal).await?;
        let call = self.new_call(asked, contract, &placed, basis.clone());
        let event = self.requested(asked, &call);
        Ok((call, event, basis))
    }

    /// Steps 8–10: the run (the caller's own, running), the task (visible; the run's), and
    /// `tasks.write` in the task's workspace.
    async fn placed(&self, asked: Asked<'_>) -> Result<Placed> {
        let Asked { actor, request, .. } = asked;
        let run = match &request.run_id {
            Some(run_id) => Some(self.visible_run(actor, run_id).await?),
            None => None,
        };
        if let Some(run) = &run {
            crate::visibility::check_owned_and_running(actor, run)?;
        }
        // An agent's approved request is made on the task the core made for it.
        let request_made = matches!(asked.internal, Some(Internal::Request));
        let task = match (&request.task_id, &run) {
            (Some(task_id), _) if request_made => Some(self.store.task(task_id).await?),
            (Some(task_id), _) => Some(self.visible_task(actor, task_id, None).await?),
            (None, Some(run)) => Some(self.visible_task(actor, &run.task_id, None).await?),
            (None, None) => None,
        };
        if let (Some(task), Some(run)) = (&task, &run)
            && task.id != run.task_id
        {
            return Err(EngineError::new(
                Class::Invalid,
                Code::InvocationMismatch,
                "runId is a run of another task than taskId",
            )
            .with("taskId", task.id.clone())
            .with("runId", run.id.clone()));
        }
        let task = match task {
            Some(task) if !request_made && !actor.can_in("tasks.write", &task.workspace_id) => {
                return Err(EngineError::forbidden("tasks.write").with("workspaceId", task.workspace_id));
            }
            Some(task) => {
                let task_type = self.store.task_type(&task.task_type_id).await?;
                Some((task, task_type))
            }
            None => None,
        };
        Ok(Placed { run, task })
    }

    /// The call the checks made, pending from now.
    fn new_call(
        &self,
        asked: Asked<'_>,
        contract: &Contract,
        placed: &Placed,
        basis: Option<Basis>,
    ) -> InvocationRecord {
        let Asked { actor, skill, .. } = asked;
        let (kind, reference) = requested_by(asked, placed.run.as_ref());
        let now = self.now();
        let implementation = contract.implementation();
        let target = match implementation {
            Implementation::Local { entrypoint } => entrypoint.clone(),
            Implementation::Http { endpoint, .. } | Implementation::Mcp { endpoint, .. } => endpoint_target(endpoint),
        };
        InvocationRecord {
            id: self.new_id(),
            skill_id: skill.id.clone(),
            protocol: implementation.protocol().as_str().to_owned(),
            target,
            audience: implementation.auth().map(|auth| auth.audience().to_owned()),
            inputs: asked.inputs.clone(),
            requested_by_kind: kind,
            requested_by_ref: reference,
            authority_principal_id: actor.id().to_owned(),
            authorization_basis: basis,
            idempotency_key: asked.key.map(str::to_owned),
            status: CallStatus::Pending,
            attempt: 0,
            max_attempts: i32::try_from(contract.retry_policy().max_attempts()).unwrap_or(1),
            available_at: now,
            output: None,
            error: None,
            cost: None,
            fencing_token: 0,
            executor_principal_id: None,
            executor_session_id: None,
            lease_expires_at: None,
            heartbeat_at: None,
            task_id: placed.task.as_ref().map(|(task, _)| task.id.clone()),
            run_id: placed.run.as_ref().map(|run| run.id.clone()),
            artifact_id: None,
            row_version: 1,
            created_at: now,
            updated_at: now,
            started_at: None,
            attempt_started_at: None,
            finished_at: None,
            traceparent: (self.trace_of_call)(&skill.name, &skill.version),
        }
    }

    /// The `skill.invocation_requested` event of `call`.
    fn requested(&self, asked: Asked<'_>, call: &InvocationRecord) -> Event {
        let Asked { actor, skill, .. } = asked;
        let requested = InvocationRequested {
            skill_id: skill.id.clone(),
            skill: skill.name.clone(),
            version: skill.version.clone(),
            side_effects: skill.side_effects,
            risk_level: skill.risk_level,
            requested_by: Requester { kind: call.requested_by_kind, reference: call.requested_by_ref.clone() },
            task_id: call.task_id.clone(),
            run_id: call.run_id.clone(),
            authorization_basis: call.authorization_basis.clone(),
            initiators: match actor.principal().kind {
                skill_api::PrincipalKind::Agent => actor.initiators(skill_api::InitiatorRole::Asked),
                _ => Vec::new(),
            },
        };
        self.event(format!("skill_invocation:{}", call.id), &requested, &Origin::of(actor, asked.request_id))
    }
}

/// Who a call is requested by: the run it is made in, the rule whose evaluation makes it, or
/// the caller.
fn requested_by(asked: Asked<'_>, run: Option<&RunRecord>) -> (RequesterKind, String) {
    match (run, asked.internal) {
        (Some(run), _) => (RequesterKind::Run, run.id.clone()),
        (None, Some(Internal::Rule(evaluation))) => (RequesterKind::Rule, evaluation.to_owned()),
        (None, _) => (RequesterKind::Principal, asked.actor.id().to_owned()),
    }
}

/// Step 11: the contract's permissions, held in the task's workspace (else the organisation).
fn check_permissions(
    actor: &Actor,
    skill: &SkillRecord,
    contract: &Contract,
    task: Option<&(TaskRecord, TaskTypeRecord)>,
) -> Result<()> {
    let workspace = task.map(|(task, _)| task.workspace_id.as_str());
    let missing: Vec<&str> = contract
        .required_permissions()
        .iter()
        .map(String::as_str)
        .filter(|permission| match workspace {
            Some(workspace) => !actor.can_in(permission, workspace),
            None => !actor.can(permission),
        })
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    Err(EngineError::new(
        Class::Forbidden,
        Code::SkillPermissionDenied,
        format!("calling {}@{} needs the permissions {}", skill.name, skill.version, missing.join(", ")),
    )
    .with("missing", json!(missing))
    .with("resource", workspace.unwrap_or("organization")))
}
