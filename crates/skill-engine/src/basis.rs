//! The basis of an external write (reference §6, bound tighter here): computed when a call is
//! made, and checked again when an executor is about to take it, since the world may have
//! changed while it waited.
//!
//! What a person decided is the only thing it authorizes:
//! - an approval is spent only by the calls its outcome reserved when it was decided (the version
//!   and the inputs fixed then, with the decider's authority), or by the one call it was
//!   requested for (by its requester, with exactly those inputs);
//! - the execution basis is the core's alone: only its execution worker makes such a call, with
//!   the inputs the type maps from the task, once per task, and only while the task's gates let it
//!   (one approved — or, for an execution that does not write, none asked for; never past a
//!   pending, rejected or withdrawn one).

use serde_json::{Value, json};
use skill_api::four_eyes;
use skill_api::{ApprovalStatus, Basis, Lifecycle, LostBasis, RunStatus, SkillStatus};
use skill_contract::SideEffects;
use skill_contract::codes::Code;
use skill_contract::export::canonical_json;
use skill_store::ErrorKind;
use skill_store::records::{
    ActionRecord, ApprovalRecord, BasisState, Gates, InvocationRecord, RunRecord, SkillRecord, TaskRecord,
    TaskTypeRecord,
};

use crate::Engine;
use crate::actor::Actor;
use crate::error::{Class, EngineError, Result};
use crate::paths::{self, task_view};

/// A call the core makes itself, rather than a caller's own request.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Internal<'a> {
    /// An action of a decided gate's outcome: the call its decision reserved.
    Outcome(&'a ActionRecord),
    /// The task's execution, made by the execution worker in its own run.
    Execution,
    /// An agent's approved request, made by the core as the agent on the request's task: the
    /// basis is the approval requested for exactly this call by this agent.
    Request,
    /// A rule's interpretation of a fact (the evaluation's id), made as the rule's agent: never a
    /// write, so never a basis.
    Rule(&'a str),
    /// A call step of a process instance, made as the process's agent: a write stands on the
    /// process basis while the step is open.
    Process {
        instance: &'a skill_store::records::InstanceRecord,
        step: &'a skill_store::records::StepRecord,
        process: &'a skill_store::records::ProcessRecord,
    },
}

/// What a task's gate approvals make of its execution.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum GateState {
    /// A gate was approved (or, for an execution that does not write, none was asked for): the
    /// execution may run.
    Open,
    /// A gate waits for its decision: the execution waits.
    Pending,
    /// A gate was rejected: the execution never runs, the task ends.
    Rejected,
    /// Nothing was decided — no gate asked for an execution that writes, or every gate
    /// withdrawn: the execution waits for a gate a person approves.
    Undecided,
}

impl GateState {
    /// The state of an execution whose call `writes` (an external write) or not.
    pub(crate) fn of(gates: Gates, writes: bool) -> Self {
        if gates.rejected {
            Self::Rejected
        } else if gates.pending {
            Self::Pending
        } else if gates.approved || !(gates.any() || writes) {
            Self::Open
        } else {
            Self::Undecided
        }
    }
}

/// The gates of a task's approvals.
pub(crate) fn gates_of(approvals: &[ApprovalRecord]) -> Gates {
    Gates::of(approvals.iter().filter(|approval| approval.gates_the_task()).map(|approval| approval.status))
}

/// What the re-check at claim makes of a pending call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Obstacle {
    /// Nothing stands in the way.
    None,
    /// Its basis is gone: cancel it (`basis_revoked`) with this reason.
    Cancel(LostBasis),
    /// Not now: leave it pending (held for a pending gate approval).
    Hold,
}

/// Whether a skill with these side effects writes to the outside world (and so needs a basis).
pub(crate) fn writes(side_effects: Option<SideEffects>) -> bool {
    side_effects.is_some_and(SideEffects::writes)
}

/// The execution basis a call of `skill` would have: the run and the task given, and the task's
/// type pins exactly this version as its execution.
pub(crate) fn execution_candidate(
    skill: &SkillRecord,
    task: Option<&(TaskRecord, TaskTypeRecord)>,
    run: Option<&RunRecord>,
) -> Option<Basis> {
    let ((task, task_type), run) = (task?, run?);
    let execution = task_type.spec.execution.as_ref()?;
    let pinned = execution.pins(&skill.name, &skill.version);
    pinned.then(|| Basis::Execution {
        task_type_id: task_type.id.clone(),
        task_id: task.id.clone(),
        run_id: run.id.clone(),
    })
}

/// The inputs a task's execution calls with: the type's mapping filled from the task.
pub(crate) fn execution_inputs(task: &TaskRecord, task_type: &TaskTypeRecord) -> Value {
    let mapping = task_type.spec.execution.as_ref().map_or(Value::Null, |execution| execution.inputs.clone());
    Value::Object(paths::fill(&mapping, &task_view(task, task_type)))
}

/// The process basis of a call step's call: a running instance's open call step that fixed
/// exactly this version and these inputs, and the approved gate it stands on — decided by a
/// person other than whoever started the instance.
fn process_basis(
    skill: &SkillRecord,
    inputs: &Value,
    instance: &skill_store::records::InstanceRecord,
    step: &skill_store::records::StepRecord,
    process: &skill_store::records::ProcessRecord,
    decision: Option<&skill_store::records::ApprovalRecord>,
) -> Result<Basis> {
    let open = instance.status == skill_api::InstanceStatus::Running
        && step.status == skill_api::StepStatus::Open
        && step.instance_id == instance.id
        && step.action == skill_api::StepKind::Call;
    if !open {
        return Err(unauthorized(skill, None, "process_step_closed", "the process step is no longer open"));
    }
    let fixed = step.skill_id.as_deref() == Some(skill.id.as_str())
        && step.inputs.as_ref().is_some_and(|fixed| same_inputs(fixed, inputs));
    if !fixed {
        return Err(unauthorized(
            skill,
            None,
            "not_the_process_step",
            "a process step covers exactly the version and inputs it opened with",
        ));
    }
    let decided = decision.and_then(|approval| {
        let decider = approval.decided_by.as_ref()?;
        (approval.gates_the_task()
            && approval.status == ApprovalStatus::Approved
            && *decider != instance.started_by
            && decision_holds(approval, &instance.workspace_id))
        .then(|| (approval.id.clone(), decider.clone()))
    });
    let Some((approval_id, decided_by)) = decided else {
        return Err(unauthorized(
            skill,
            None,
            "process_write_not_decided",
            "a process writes only on a gate approved by a person who holds approvals.decide and did not set the instance in motion (the step's decidedBy)",
        ));
    };
    Ok(Basis::Process {
        instance_id: instance.id.clone(),
        activity_id: step.id.clone(),
        step: step.step_id.clone(),
        definition_key: process.key.clone(),
        definition_version: process.version.clone(),
        approval_id,
        decided_by,
    })
}

/// Whether `approval`'s recorded decision stands under the four-eyes rule
/// ([`four_eyes::may_decide`]): its decider (a person: the database keeps deciders persons) held
/// `approvals.decide` in `workspace_id` when deciding, did not ask for it and is none of its work's
/// initiators.
pub(crate) fn decision_holds(approval: &ApprovalRecord, workspace_id: &str) -> bool {
    let (Some(decided_by), Some(authority)) = (&approval.decided_by, &approval.decision_authority) else {
        return false;
    };
    let decider =
        four_eyes::Decider { id: decided_by, kind: skill_api::PrincipalKind::Person, grants: &authority.grants };
    let work = four_eyes::Work { workspace_id, requested_by: &approval.requested_by, initiators: &approval.initiators };
    four_eyes::may_decide(&decider, &work).is_ok()
}

/// `403 skill_side_effect_not_authorized` for a call of `skill`, with why.
fn unauthorized(skill: &SkillRecord, approval_id: Option<&str>, reason: &str, why: &str) -> EngineError {
    let name = format!("{}@{}", skill.name, skill.version);
    EngineError::new(
        Class::Forbidden,
        Code::SkillSideEffectNotAuthorized,
        format!("{name} writes to the outside world and runs only on a basis: {why}"),
    )
    .with("skill", name)
    .with("sideEffects", SideEffects::ExternalWrite.as_str())
    .with("approvalId", approval_id.map_or(Value::Null, |id| json!(id)))
    .with("reason", reason)
}

/// The basis a call spends `approval` with; retry `n` of an outcome's action names it.
fn approval_basis(approval: &ApprovalRecord, retry: i32) -> Basis {
    Basis::Approval {
        approval_id: approval.id.clone(),
        decided_by: approval.decided_by.clone().unwrap_or_default(),
        retry: (retry > 0).then_some(retry),
    }
}

/// Whether two inputs are the same document (canonical JSON).
fn same_inputs(a: &Value, b: &Value) -> bool {
    canonical_json(a) == canonical_json(b)
}

/// What a call with an approval basis must be, for the error that says what it covers.
fn coverage(skill: &str, inputs: Option<&Value>, by: &str) -> Value {
    json!({"skill": skill, "inputs": inputs, "by": by})
}

impl Engine {
    /// The basis of a call (invoke step 13) by `actor` with `inputs`: the execution basis (the
    /// core's execution only), an approval's for an external write it covers, or the refusal
    /// (`skill_side_effect_not_authorized`, `approval_does_not_cover`, `task_terminal`,
    /// `approval_required`, `gate_rejected`). Whether the approval (or the task's one execution
    /// write) is spent already is the insert's to say (unique indexes), so two calls at once
    /// cannot both spend it.
    #[allow(clippy::too_many_arguments)]
    pub(crate) async fn basis(
        &self,
        actor: &Actor,
        skill: &SkillRecord,
        inputs: &Value,
        task: Option<&(TaskRecord, TaskTypeRecord)>,
        run: Option<&RunRecord>,
        approval_id: Option<&str>,
        internal: Option<Internal<'_>>,
    ) -> Result<Option<Basis>> {
        let writes = writes(skill.side_effects);
        match internal {
            Some(Internal::Execution) => self.execution_basis(skill, inputs, task, run).await.map(Some),
            Some(Internal::Outcome(action)) if writes => {
                self.outcome_basis(actor, skill, inputs, task, action).await.map(Some)
            }
            Some(Internal::Outcome(_) | Internal::Request) if !writes => Ok(None),
            Some(Internal::Rule(_)) if !writes => Ok(None),
            Some(Internal::Rule(_)) => Err(unauthorized(
                skill,
                None,
                "rule_skill_side_effects",
                "a rule has no human decision to refer to: it never calls a version that writes",
            )),
            Some(Internal::Outcome(_)) => Ok(None),
            Some(Internal::Process { .. }) if !writes => Ok(None),
            Some(Internal::Process { instance, step, process }) => {
                let decision = match &step.approval_id {
                    Some(id) => Some(self.store.approval(id).await?),
                    None => None,
                };
                process_basis(skill, inputs, instance, step, process, decision.as_ref()).map(Some)
            }
            Some(Internal::Request) => {
                self.requested_basis(actor, skill, inputs, task, run, approval_id).await.map(Some)
            }
            None if !writes => Ok(None),
            None => self.requested_basis(actor, skill, inputs, task, run, approval_id).await.map(Some),
        }
    }

    /// The execution basis: the worker's call in its run, with the type's inputs, while the
    /// task is open and its gates let it.
    async fn execution_basis(
        &self,
        skill: &SkillRecord,
        inputs: &Value,
        task: Option<&(TaskRecord, TaskTypeRecord)>,
        run: Option<&RunRecord>,
    ) -> Result<Basis> {
        let refuse = |why: &str| unauthorized(skill, None, "not_the_execution", why);
        let Some(candidate) = execution_candidate(skill, task, run) else {
            return Err(refuse("the task's type does not pin this version as its execution"));
        };
        let Some((task, task_type)) = task else { return Err(refuse("the execution names its task")) };
        if !same_inputs(inputs, &execution_inputs(task, task_type)) {
            return Err(refuse("an execution calls with exactly the inputs its type maps from the task"));
        }
        if task.status.is_terminal() {
            return Err(task_terminal(task));
        }
        let approvals = self.store.approvals(&task.id).await?;
        match GateState::of(gates_of(&approvals), writes(skill.side_effects)) {
            GateState::Open => Ok(candidate),
            GateState::Rejected => Err(EngineError::new(
                Class::Conflict,
                Code::GateRejected,
                "the task's gate was rejected: its execution never runs",
            )
            .with("taskId", task.id.clone())),
            GateState::Pending => {
                let pending: Vec<Value> = approvals
                    .iter()
                    .filter(|approval| approval.gates_the_task() && approval.status == ApprovalStatus::Pending)
                    .map(|approval| json!({"approvalId": approval.id, "requestedBy": approval.requested_by}))
                    .collect();
                Err(EngineError::new(
                    Class::Conflict,
                    Code::ApprovalRequired,
                    "the task has a pending gate approval: its execution waits for the decision",
                )
                .with("taskId", task.id.clone())
                .with("pendingApprovals", json!(pending)))
            }
            GateState::Undecided => Err(EngineError::new(
                Class::Conflict,
                Code::ApprovalRequired,
                "nothing was decided on the task: its execution writes to the outside world and waits for a gate approved by a person",
            )
            .with("taskId", task.id.clone())
            .with("pendingApprovals", json!([]))
            .with("reason", if gates_of(&approvals).withdrawn { "gate_withdrawn" } else { "no_gate" })),
        }
    }

    /// The approval basis of an outcome's call: exactly the version and inputs its decision
    /// reserved, on the approved gate of the same open task, with the decider's authority.
    async fn outcome_basis(
        &self,
        actor: &Actor,
        skill: &SkillRecord,
        inputs: &Value,
        task: Option<&(TaskRecord, TaskTypeRecord)>,
        action: &ActionRecord,
    ) -> Result<Basis> {
        let Some((task, _)) = task else {
            return Err(unauthorized(skill, Some(&action.approval_id), "no_task", "an outcome acts on its task"));
        };
        if task.status.is_terminal() {
            return Err(task_terminal(task));
        }
        let approval = self.store.approval(&action.approval_id).await?;
        let decided = approval.status == ApprovalStatus::Approved
            && approval.gates_the_task()
            && approval.task_id == task.id
            && approval.decided_by.as_deref() == Some(actor.id());
        if !decided {
            return Err(unauthorized(
                skill,
                Some(&approval.id),
                "approval_not_approved",
                "the outcome's approval is no longer an approved gate of this task",
            ));
        }
        let reserved = action.skill_id.as_deref() == Some(skill.id.as_str())
            && action.inputs.as_ref().is_some_and(|reserved| same_inputs(reserved, inputs));
        if !reserved {
            return Err(self.does_not_cover(&approval, skill).await?);
        }
        Ok(approval_basis(&approval, action.retries))
    }

    /// The basis of a caller's own external write: only an approved gate requested for exactly
    /// this call, by this caller.
    async fn requested_basis(
        &self,
        actor: &Actor,
        skill: &SkillRecord,
        inputs: &Value,
        task: Option<&(TaskRecord, TaskTypeRecord)>,
        run: Option<&RunRecord>,
        approval_id: Option<&str>,
    ) -> Result<Basis> {
        let no_basis = || {
            unauthorized(
                skill,
                approval_id,
                "no_basis",
                "an approved gate of the same open task, requested for this call",
            )
        };
        let pair = task;
        let Some((task, _)) = task else { return Err(no_basis()) };
        let Some(approval_id) = approval_id else {
            if execution_candidate(skill, pair, run).is_some() {
                return Err(unauthorized(
                    skill,
                    None,
                    "execution_is_the_cores",
                    "the task's execution is carried out by the core itself, once its gate is approved; a run of your own never authorizes it",
                ));
            }
            return Err(no_basis());
        };
        if task.status.is_terminal() {
            return Err(task_terminal(task));
        }
        let approval = match self.store.approval(approval_id).await {
            Ok(approval) => Some(approval),
            Err(error) if error.kind() == ErrorKind::NotFound => None,
            Err(error) => return Err(error.into()),
        };
        let Some(approval) =
            approval.filter(|a| a.status == ApprovalStatus::Approved && a.gate && a.task_id == task.id)
        else {
            return Err(unauthorized(
                skill,
                Some(approval_id),
                "approval_not_approved",
                "the approval must be an approved gate of the same open task",
            ));
        };
        let covered = approval.call_skill_id.as_deref() == Some(skill.id.as_str())
            && approval.call_inputs.as_ref().is_some_and(|asked| same_inputs(asked, inputs))
            && approval.requested_by == actor.id();
        if !covered {
            return Err(self.does_not_cover(&approval, skill).await?);
        }
        // Whoever makes the call sets the write in motion too: never the person who decided it
        // (through an agent's token they operate or had issued).
        let decider = approval.decided_by.as_deref().unwrap_or_default();
        if actor.initiators(skill_api::InitiatorRole::Asked).iter().any(|initiator| initiator.person == decider) {
            return Err(unauthorized(
                skill,
                Some(approval_id),
                "decider_is_initiator",
                "the person who decided the approval does not make its call too: a second person decides what another makes",
            ));
        }
        Ok(approval_basis(&approval, 0))
    }

    /// `403 approval_does_not_cover`, with what the approval does cover: the calls its outcome
    /// reserved (made by the core with the decider's authority) and the call it was requested for
    /// (made by its requester).
    async fn does_not_cover(&self, approval: &ApprovalRecord, skill: &SkillRecord) -> Result<EngineError> {
        let mut covers = Vec::new();
        for action in self.store.actions(&approval.id).await? {
            if let Some(id) = &action.skill_id {
                let reserved = self.store.skill(id).await?.skill;
                let name = format!("{}@{}", reserved.name, reserved.version);
                covers.push(coverage(&name, action.inputs.as_ref(), "outcome"));
            }
        }
        if let Some(id) = &approval.call_skill_id {
            let asked = self.store.skill(id).await?.skill;
            let name = format!("{}@{}", asked.name, asked.version);
            covers.push(coverage(&name, approval.call_inputs.as_ref(), "requester"));
        }
        let name = format!("{}@{}", skill.name, skill.version);
        Ok(EngineError::new(
            Class::Forbidden,
            Code::ApprovalDoesNotCover,
            format!(
                "approval {} does not cover this call of {name}: it covers only the calls its outcome names (made by the core) and the call it was requested for, with exactly those inputs, by its requester",
                approval.id
            ),
        )
        .with("approvalId", approval.id.clone())
        .with("skill", name)
        .with("covers", json!(covers)))
    }
}

/// The obstacle a pending call meets at claim, from the state of its basis read in the claim's
/// transaction: a lost basis is named before a disabled version; a call without a basis is not
/// held or cancelled by its task's state.
pub(crate) fn recheck(call: &InvocationRecord, state: &BasisState) -> Obstacle {
    if state.authority_disabled {
        // Made for someone disabled meanwhile: whatever else it stands on, it is not made.
        return Obstacle::Cancel(LostBasis::AuthorityDisabled);
    }
    let closed = state.task_status.is_some_and(Lifecycle::is_terminal);
    let from_basis = match &call.authorization_basis {
        None => Obstacle::None,
        Some(Basis::Execution { .. }) => match GateState::of(state.gates, writes(state.side_effects)) {
            GateState::Rejected => Obstacle::Cancel(LostBasis::GateRejected),
            _ if closed => Obstacle::Cancel(LostBasis::TaskTerminal),
            _ if state.run_status != Some(RunStatus::Running) => Obstacle::Cancel(LostBasis::RunNotActive),
            _ if state.decider_disabled => Obstacle::Cancel(LostBasis::DeciderDisabled),
            _ if state.operator_disabled => Obstacle::Cancel(LostBasis::OperatorDisabled),
            GateState::Pending => Obstacle::Hold,
            GateState::Undecided => Obstacle::Cancel(LostBasis::ApprovalWithdrawn),
            GateState::Open => Obstacle::None,
        },
        Some(Basis::Approval { .. }) if closed => Obstacle::Cancel(LostBasis::TaskTerminal),
        Some(Basis::Approval { .. }) if state.approval_status != Some(ApprovalStatus::Approved) => {
            Obstacle::Cancel(LostBasis::ApprovalWithdrawn)
        }
        Some(Basis::Approval { .. }) if state.decider_disabled => Obstacle::Cancel(LostBasis::DeciderDisabled),
        // An agent acts for its person only while that person may act.
        Some(Basis::Approval { .. }) if state.operator_disabled => Obstacle::Cancel(LostBasis::OperatorDisabled),
        Some(Basis::Approval { .. }) => Obstacle::None,
        Some(Basis::Process { .. }) => match (state.instance_status, state.activity_status) {
            (Some(skill_api::InstanceStatus::Running), Some(skill_api::StepStatus::Open))
                if state.approval_status != Some(ApprovalStatus::Approved) =>
            {
                Obstacle::Cancel(LostBasis::ApprovalWithdrawn)
            }
            (Some(skill_api::InstanceStatus::Running), Some(skill_api::StepStatus::Open)) if state.decider_disabled => {
                Obstacle::Cancel(LostBasis::DeciderDisabled)
            }
            (Some(skill_api::InstanceStatus::Running), Some(skill_api::StepStatus::Open)) => Obstacle::None,
            (None | Some(skill_api::InstanceStatus::Cancelled), _) => Obstacle::Cancel(LostBasis::ProcessCancelled),
            _ => Obstacle::Cancel(LostBasis::ProcessStepClosed),
        },
    };
    match from_basis {
        Obstacle::Cancel(reason) => Obstacle::Cancel(reason),
        _ if state.skill_status == SkillStatus::Disabled => Obstacle::Cancel(LostBasis::SkillDisabled),
        other => other,
    }
}

/// `409 task_terminal`.
pub(crate) fn task_terminal(task: &TaskRecord) -> EngineError {
    EngineError::new(
        Class::Conflict,
        Code::TaskTerminal,
        format!("the task is closed ({}): nothing more happens on it", task.status),
    )
    .with("taskId", task.id.clone())
    .with("status", task.status)
}

/// The key the skill is given for `call`: a retry of an outcome's action is one more attempt at
/// the one effect its decision allowed, so the skill sees the first call's key — and an attempt
/// that timed out but wrote after all is found by the retry, not written twice. Any other call's
/// key as it is.
pub(crate) fn effect_key(call: &InvocationRecord) -> Option<String> {
    let key = call.idempotency_key.clone()?;
    // A process step's retry, `process:<first run>:retry-<n>`: the first run's key.
    if key.starts_with("process:")
        && let Some((first, n)) = key.rsplit_once(":retry-")
        && !n.is_empty()
        && n.bytes().all(|b| b.is_ascii_digit())
    {
        return Some(first.to_owned());
    }
    let retry = match &call.authorization_basis {
        Some(Basis::Approval { retry, .. }) => *retry,
        Some(Basis::Execution { .. } | Basis::Process { .. }) | None => None,
    };
    match retry {
        Some(n) => Some(key.strip_suffix(&format!(":retry-{n}")).map_or(key.clone(), str::to_owned)),
        None => Some(key),
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A pending call with `basis`, on task `t` and run `r`.
    pub(crate) fn call(basis: Option<Basis>) -> InvocationRecord {
        let now = chrono::Utc::now();
        InvocationRecord {
            id: "c".into(),
            skill_id: "s".into(),
            protocol: "local".into(),
            target: "t".into(),
            audience: None,
            inputs: json!({}),
            requested_by_kind: skill_api::RequesterKind::Principal,
            requested_by_ref: "p".into(),
            authority_principal_id: "p".into(),
            authorization_basis: basis,
            idempotency_key: None,
            status: skill_api::CallStatus::Pending,
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
            traceparent: None,
        }
    }

    fn state(task: &str, approval: Option<&str>, run: Option<&str>, gates: &[&str], skill: &str) -> BasisState {
        let word = |word: &str| word.parse().expect("a state");
        BasisState {
            task_status: Some(word(task)),
            approval_status: approval.map(|status| status.parse().expect("a state")),
            decider_disabled: false,
            run_status: run.map(|status| status.parse().expect("a state")),
            gates: Gates::of(gates.iter().map(|status| status.parse().expect("a state"))),
            skill_status: skill.parse().expect("a state"),
            side_effects: Some(SideEffects::ExternalWrite),
            skill_name: "claim.send".into(),
            skill_version: "1".into(),
            instance_status: None,
            activity_status: None,
            authority_disabled: false,
            operator_disabled: false,
        }
    }

    fn approval_of(id: &str) -> Basis {
        Basis::Approval { approval_id: id.into(), decided_by: "d".into(), retry: None }
    }

    fn execution_of(run: &str) -> Basis {
        Basis::Execution { task_type_id: "tt".into(), task_id: "t".into(), run_id: run.into() }
    }

    #[test]
    fn the_recheck_names_what_was_lost_first() {
        let approval = call(Some(approval_of("a")));
        let execution = call(Some(execution_of("r")));
        let none = call(None);
        let ok = state("open", Some("approved"), Some("running"), &["approved"], "active");
        assert_eq!(recheck(&approval, &ok), Obstacle::None);
        assert_eq!(recheck(&execution, &ok), Obstacle::None, "an approved gate");
        let ungated = state("open", None, Some("running"), &[], "active");
        assert_eq!(
            recheck(&execution, &ungated),
            Obstacle::Cancel(LostBasis::ApprovalWithdrawn),
            "a write waits for a gate"
        );
        let reading = BasisState { side_effects: Some(SideEffects::None), ..ungated };
        assert_eq!(recheck(&execution, &reading), Obstacle::None, "a read needs no gate");
        let closed = state("done", Some("approved"), Some("running"), &[], "active");
        assert_eq!(recheck(&approval, &closed), Obstacle::Cancel(LostBasis::TaskTerminal));
        assert_eq!(recheck(&execution, &closed), Obstacle::Cancel(LostBasis::TaskTerminal));
        assert_eq!(recheck(&none, &closed), Obstacle::None, "a call without a basis outlives its task");
        for gone in [Some("withdrawn"), Some("pending"), Some("rejected"), None] {
            let withdrawn = state("open", gone, Some("running"), &[], "active");
            assert_eq!(recheck(&approval, &withdrawn), Obstacle::Cancel(LostBasis::ApprovalWithdrawn));
        }
        let approved = state("open", Some("approved"), None, &[], "active");
        assert_eq!(recheck(&approval, &approved), Obstacle::None);
        let disowned = BasisState { decider_disabled: true, ..approved.clone() };
        assert_eq!(recheck(&approval, &disowned), Obstacle::Cancel(LostBasis::DeciderDisabled));
        let operator_gone = BasisState { operator_disabled: true, ..approved };
        assert_eq!(recheck(&approval, &operator_gone), Obstacle::Cancel(LostBasis::OperatorDisabled));
        let agent_for_the_disabled = BasisState { operator_disabled: true, ..ok.clone() };
        assert_eq!(recheck(&execution, &agent_for_the_disabled), Obstacle::Cancel(LostBasis::OperatorDisabled));
        let gate_by_the_disabled = BasisState { decider_disabled: true, ..ok.clone() };
        assert_eq!(recheck(&execution, &gate_by_the_disabled), Obstacle::Cancel(LostBasis::DeciderDisabled));
        // A call made for someone disabled meanwhile is not made, whatever it stands on.
        let abandoned = BasisState { authority_disabled: true, ..ok.clone() };
        for call in [&none, &approval, &execution] {
            assert_eq!(recheck(call, &abandoned), Obstacle::Cancel(LostBasis::AuthorityDisabled));
        }
        let ended = state("open", None, Some("succeeded"), &["pending"], "disabled");
        assert_eq!(
            recheck(&execution, &ended),
            Obstacle::Cancel(LostBasis::RunNotActive),
            "a lost basis is named first"
        );
        let gated = state("open", None, Some("running"), &["pending"], "active");
        assert_eq!(recheck(&execution, &gated), Obstacle::Hold);
        let gated_disabled = state("open", None, Some("running"), &["pending"], "disabled");
        assert_eq!(
            recheck(&execution, &gated_disabled),
            Obstacle::Cancel(LostBasis::SkillDisabled),
            "even a held call"
        );
        assert_eq!(
            recheck(&none, &state("open", None, None, &[], "disabled")),
            Obstacle::Cancel(LostBasis::SkillDisabled)
        );
    }

    #[test]
    fn a_process_write_holds_only_while_its_step_is_open() {
        let process = call(Some(Basis::Process {
            instance_id: "i".into(),
            activity_id: "s".into(),
            step: "send".into(),
            definition_key: "p".into(),
            definition_version: "1".into(),
            approval_id: "a".into(),
            decided_by: "reviewer".into(),
        }));
        let at = |instance: Option<&str>, step: Option<&str>, skill: &str| BasisState {
            task_status: None,
            approval_status: Some(ApprovalStatus::Approved),
            instance_status: instance.map(|s| s.parse().expect("a state")),
            activity_status: step.map(|s| s.parse().expect("a state")),
            authority_disabled: false,
            ..state("open", None, None, &[], skill)
        };
        assert_eq!(recheck(&process, &at(Some("running"), Some("open"), "active")), Obstacle::None);
        assert_eq!(
            recheck(&process, &at(Some("cancelled"), Some("closed"), "active")),
            Obstacle::Cancel(LostBasis::ProcessCancelled)
        );
        assert_eq!(recheck(&process, &at(None, None, "active")), Obstacle::Cancel(LostBasis::ProcessCancelled));
        for (instance, step) in
            [("running", "closed"), ("running", "failed"), ("failed", "closed"), ("completed", "done")]
        {
            assert_eq!(
                recheck(&process, &at(Some(instance), Some(step), "active")),
                Obstacle::Cancel(LostBasis::ProcessStepClosed),
                "{instance}/{step}"
            );
        }
        assert_eq!(
            recheck(&process, &at(Some("running"), Some("open"), "disabled")),
            Obstacle::Cancel(LostBasis::SkillDisabled)
        );
        let disowned = BasisState { decider_disabled: true, ..at(Some("running"), Some("open"), "active") };
        assert_eq!(recheck(&process, &disowned), Obstacle::Cancel(LostBasis::DeciderDisabled));
        let withdrawn = BasisState {
            approval_status: Some(ApprovalStatus::Withdrawn),
            ..at(Some("running"), Some("open"), "active")
        };
        assert_eq!(recheck(&process, &withdrawn), Obstacle::Cancel(LostBasis::ApprovalWithdrawn));
    }

    #[test]
    fn an_execution_moves_only_past_an_approved_gate() {
        let execution = call(Some(execution_of("r")));
        let at = |gates: &[&str]| recheck(&execution, &state("open", None, Some("running"), gates, "active"));
        assert_eq!(at(&["approved"]), Obstacle::None);
        assert_eq!(at(&["withdrawn", "approved"]), Obstacle::None, "a new gate approved after a withdrawn one");
        assert_eq!(at(&["rejected"]), Obstacle::Cancel(LostBasis::GateRejected));
        assert_eq!(at(&["approved", "rejected"]), Obstacle::Cancel(LostBasis::GateRejected), "one rejection ends it");
        assert_eq!(at(&["withdrawn"]), Obstacle::Cancel(LostBasis::ApprovalWithdrawn), "withdrawn is not decided");
        assert_eq!(at(&["approved", "pending"]), Obstacle::Hold);
        let closed_rejected = state("failed", None, Some("running"), &["rejected"], "active");
        assert_eq!(
            recheck(&execution, &closed_rejected),
            Obstacle::Cancel(LostBasis::GateRejected),
            "the gate is named"
        );
        assert_eq!(GateState::of(Gates::default(), true), GateState::Undecided, "no write without a decision");
        assert_eq!(GateState::of(Gates::default(), false), GateState::Open);
        assert_eq!(GateState::of(Gates::of([ApprovalStatus::Withdrawn]), false), GateState::Undecided);
        let withdrawn_and_pending = Gates::of([ApprovalStatus::Withdrawn, ApprovalStatus::Pending]);
        assert_eq!(GateState::of(withdrawn_and_pending, true), GateState::Pending);
    }

    #[test]
    fn a_retry_gives_the_skill_the_first_calls_key() {
        let call = |key: &str, basis: Value| InvocationRecord {
            idempotency_key: Some(key.into()),
            ..call(Some(serde_json::from_value(basis).expect("a basis")))
        };
        let retried = call(
            "approval-outcome:a:0:retry-2",
            json!({"kind": "approval", "approvalId": "a", "decidedBy": "d", "retry": 2}),
        );
        assert_eq!(effect_key(&retried).as_deref(), Some("approval-outcome:a:0"));
        let first = call("approval-outcome:a:0", json!({"kind": "approval", "approvalId": "a", "decidedBy": "d"}));
        assert_eq!(effect_key(&first).as_deref(), Some("approval-outcome:a:0"));
        let odd = call("mine:retry-2", json!({"kind": "approval", "approvalId": "a", "decidedBy": "d", "retry": 3}));
        assert_eq!(effect_key(&odd).as_deref(), Some("mine:retry-2"), "only its own retry's suffix comes off");
        let step = json!({"kind": "process", "instanceId": "i", "activityId": "s2", "step": "send",
                          "definitionKey": "p", "definitionVersion": "1", "approvalId": "a", "decidedBy": "d"});
        assert_eq!(effect_key(&call("process:s1:retry-1", step.clone())).as_deref(), Some("process:s1"));
        assert_eq!(effect_key(&call("process:s1", step.clone())).as_deref(), Some("process:s1"));
        assert_eq!(effect_key(&call("process:s1:draft", step)).as_deref(), Some("process:s1:draft"));
    }
}
