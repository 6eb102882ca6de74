//! The basis of an external write (reference §6): computed when a call is made, and checked
//! again when an executor is about to take it, since the world may have changed while it waited.

use serde_json::{Value, json};
use skill_store::ErrorKind;
use skill_store::records::{BasisState, InvocationRecord, RunRecord, SkillRecord, TaskRecord, TaskTypeRecord};

use super::tasks::task_terminal;
use super::terminal;
use crate::Engine;
use crate::error::{Class, EngineError, Result};

/// What the re-check at claim makes of a pending call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Obstacle {
    /// Nothing stands in the way.
    None,
    /// Its basis is gone: cancel it (`basis_revoked`) with this reason.
    Cancel(&'static str),
    /// Not now: leave it pending (this reason, for who looks).
    Hold(&'static str),
}

/// The execution basis a call would have: the run and the task given, and the task's type pins
/// exactly this version as its execution.
pub(crate) fn execution_candidate(
    skill: &SkillRecord,
    task: Option<&(TaskRecord, TaskTypeRecord)>,
    run: Option<&RunRecord>,
) -> Option<Value> {
    let ((task, task_type), run) = (task?, run?);
    let execution = task_type.execution.as_ref()?;
    let pinned = execution.get("skill").and_then(Value::as_str) == Some(skill.name.as_str())
        && execution.get("version").and_then(Value::as_str) == Some(skill.version.as_str());
    pinned.then(|| json!({"kind": "execution", "taskTypeId": task_type.id, "taskId": task.id, "runId": run.id}))
}

impl Engine {
    /// The basis of a call (invoke step 13): the execution candidate, an approval's basis for an
    /// external write, or the refusal (`skill_side_effect_not_authorized`, `task_terminal`,
    /// `approval_required`). Whether the approval is spent already is the insert's to say (a
    /// unique index), so two calls at once cannot both spend it.
    pub(crate) async fn basis(
        &self,
        skill: &SkillRecord,
        task: Option<&(TaskRecord, TaskTypeRecord)>,
        run: Option<&RunRecord>,
        approval_id: Option<&str>,
    ) -> Result<Option<Value>> {
        let candidate = execution_candidate(skill, task, run);
        if skill.side_effects.as_deref() != Some("external_write") {
            return Ok(candidate);
        }
        let name = format!("{}@{}", skill.name, skill.version);
        let unauthorized = || {
            EngineError::new(
                Class::Forbidden,
                "skill_side_effect_not_authorized",
                format!(
                    "{name} writes to the outside world: it runs only on a basis (an approved gate of the same open task, or the task's execution)"
                ),
            )
            .with("skill", name.clone())
            .with("sideEffects", "external_write")
            .with("approvalId", approval_id.map_or(Value::Null, |id| json!(id)))
        };
        let Some((task, _)) = task else { return Err(unauthorized()) };
        let Some(approval_id) = approval_id else {
            let Some(candidate) = candidate else { return Err(unauthorized()) };
            if terminal(&task.status) {
                return Err(task_terminal(task));
            }
            let pending: Vec<Value> = self
                .store
                .approvals(&task.id)
                .await?
                .into_iter()
                .filter(|approval| approval.gate && approval.status == "pending")
                .map(|approval| json!({"approvalId": approval.id, "requestedBy": approval.requested_by}))
                .collect();
            if !pending.is_empty() {
                return Err(EngineError::new(
                    Class::Conflict,
                    "approval_required",
                    "the task has a pending gate approval: its external write waits for the decision",
                )
                .with("taskId", task.id.clone())
                .with("pendingApprovals", json!(pending)));
            }
            return Ok(Some(candidate));
        };
        if terminal(&task.status) {
            return Err(task_terminal(task));
        }
        let approval = match self.store.approval(approval_id).await {
            Ok(approval) => Some(approval),
            Err(error) if error.kind() == ErrorKind::NotFound => None,
            Err(error) => return Err(error.into()),
        };
        let Some(approval) = approval.filter(|a| a.status == "approved" && a.gate && a.task_id == task.id) else {
            return Err(unauthorized());
        };
        Ok(Some(json!({"kind": "approval", "approvalId": approval.id, "decidedBy": approval.decided_by})))
    }
}

/// The obstacle a pending call meets at claim, from the state of its basis read in the claim's
/// transaction: a lost basis is named before a disabled version; a call without a basis is not
/// held or cancelled by its task's state.
pub(crate) fn recheck(call: &InvocationRecord, state: &BasisState) -> Obstacle {
    let kind = call.authorization_basis.as_ref().and_then(|basis| basis.get("kind")).and_then(Value::as_str);
    let from_basis = match kind {
        None => Obstacle::None,
        Some(_) if state.task_status.as_deref().is_some_and(|status| status != "open") => {
            Obstacle::Cancel("task_terminal")
        }
        Some("approval") if state.approval_status.as_deref() != Some("approved") => {
            Obstacle::Cancel("approval_withdrawn")
        }
        Some("execution") if state.run_status.as_deref() != Some("running") => Obstacle::Cancel("run_not_active"),
        Some("execution") if state.side_effects.as_deref() == Some("external_write") && state.pending_gate => {
            Obstacle::Hold("approval_required")
        }
        Some("approval" | "execution") => Obstacle::None,
        // A kind this core does not know (a process step before processes exist) has no basis.
        Some(_) => Obstacle::Cancel("basis_unknown"),
    };
    match from_basis {
        Obstacle::Cancel(reason) => Obstacle::Cancel(reason),
        _ if state.skill_status == "disabled" => Obstacle::Cancel("skill_disabled"),
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(basis: Option<Value>) -> InvocationRecord {
        let now = chrono::Utc::now();
        InvocationRecord {
            id: "c".into(),
            skill_id: "s".into(),
            protocol: "local".into(),
            target: "t".into(),
            audience: None,
            inputs: json!({}),
            requested_by_kind: "principal".into(),
            requested_by_ref: "p".into(),
            authority_principal_id: "p".into(),
            authorization_basis: basis,
            idempotency_key: None,
            status: "pending".into(),
            attempt: 0,
            max_attempts: 1,
            available_at: now,
            output: None,
            error: None,
            cost: None,
            fencing_token: 0,
            executor_principal_id: None,
            executor_session_id: None,
            lease_expires_at: None,
            heartbeat_at: None,
            task_id: Some("t".into()),
            run_id: Some("r".into()),
            artifact_id: None,
            row_version: 1,
            created_at: now,
            updated_at: now,
            started_at: None,
            attempt_started_at: None,
            finished_at: None,
        }
    }

    fn state(task: &str, approval: Option<&str>, run: Option<&str>, gate: bool, skill: &str) -> BasisState {
        BasisState {
            task_status: Some(task.into()),
            approval_status: approval.map(Into::into),
            run_status: run.map(Into::into),
            pending_gate: gate,
            skill_status: skill.into(),
            side_effects: Some("external_write".into()),
            skill_name: "claim.send".into(),
            skill_version: "1".into(),
        }
    }

    #[test]
    fn the_recheck_follows_the_reference_order() {
        let approval = call(Some(json!({"kind": "approval", "approvalId": "a"})));
        let execution = call(Some(json!({"kind": "execution", "runId": "r"})));
        let none = call(None);
        let ok = state("open", Some("approved"), Some("running"), false, "active");
        assert_eq!(recheck(&approval, &ok), Obstacle::None);
        assert_eq!(recheck(&execution, &ok), Obstacle::None);
        let closed = state("done", Some("approved"), Some("running"), false, "active");
        assert_eq!(recheck(&approval, &closed), Obstacle::Cancel("task_terminal"));
        assert_eq!(recheck(&execution, &closed), Obstacle::Cancel("task_terminal"));
        assert_eq!(recheck(&none, &closed), Obstacle::None, "a call without a basis outlives its task");
        for gone in [Some("withdrawn"), Some("pending"), None] {
            let withdrawn = state("open", gone, Some("running"), false, "active");
            assert_eq!(recheck(&approval, &withdrawn), Obstacle::Cancel("approval_withdrawn"));
        }
        let ended = state("open", None, Some("succeeded"), true, "disabled");
        assert_eq!(recheck(&execution, &ended), Obstacle::Cancel("run_not_active"), "a lost basis is named first");
        let gated = state("open", None, Some("running"), true, "active");
        assert_eq!(recheck(&execution, &gated), Obstacle::Hold("approval_required"));
        let gated_disabled = state("open", None, Some("running"), true, "disabled");
        assert_eq!(recheck(&execution, &gated_disabled), Obstacle::Cancel("skill_disabled"), "even a held call");
        let reading = BasisState { side_effects: Some("none".into()), ..gated };
        assert_eq!(recheck(&execution, &reading), Obstacle::None, "only a write waits for the gate");
        assert_eq!(recheck(&none, &state("open", None, None, false, "disabled")), Obstacle::Cancel("skill_disabled"));
    }
}
