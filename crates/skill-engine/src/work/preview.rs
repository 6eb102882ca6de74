//! What a decision does, worked out once for both its moments: before it is made (the person
//! deciding sees each action of the gate's outcome — for an `invokeSkill`, the version it calls
//! with that version's side effects and risk, and the inputs it would receive with the
//! expressions filled in from the task and the decision; nothing is written), and when it is made
//! (the same plan, with the decider's comment, fixed in the decision's transaction: the only
//! calls the approval covers).
use skill_api::{ApprovalStatus, Lifecycle, OutcomeAction, SkillStatus, State};
use skill_contract::codes::Code;
use skill_contract::{RiskLevel, SideEffects};

use serde_json::{Map, Value, json};
use skill_contract::SchemaView;
use skill_store::records::{SkillRecord, TaskRecord, TaskTypeRecord, Time};

use crate::Engine;
use crate::actor::Actor;
use crate::catalog::view_time;
use crate::error::{Class, EngineError, Result};
use crate::paths::{self, task_view};

/// What an outcome's input expressions read: `$.task…` (the task's API view) and `$.approval…`
/// (`id`, `comment`, `decidedBy`, `decidedAt`, `outcome`).
pub(crate) fn decision_root(task: Value, approval: Value) -> Value {
    json!({"task": task, "approval": approval})
}

/// The gate of a type's approval schema whose outcomes a gate approval runs.
pub(crate) const GATE: &str = "default";

/// `invalid_outcome` unless `outcome` is a decision: `approved` or `rejected`.
pub(crate) fn check_outcome(outcome: &str) -> Result<ApprovalStatus> {
    match ApprovalStatus::parse(outcome) {
        Ok(decided) if decided.decided() => return Ok(decided),
        _ => {}
    }
    Err(EngineError::new(
        Class::Invalid,
        Code::InvalidOutcome,
        format!("a decision is approved or rejected, not {outcome:?}"),
    )
    .with("field", "outcome"))
}

/// The actions a gate's `outcome` carries out, as the task type writes them.
pub(crate) fn outcome_actions(task_type: &TaskTypeRecord, outcome: ApprovalStatus) -> Result<Vec<OutcomeAction>> {
    // The type's publication checked every action: one that does not read is a corrupted row, and
    // a decision on it carries out nothing rather than part of it.
    let gate = task_type.spec.gate(GATE).map_err(|error| {
        tracing::error!(task_type = %task_type.id, %outcome, %error, "a published outcome does not read");
        EngineError::new(Class::Internal, Code::InternalError, "an internal error occurred; the log has its details")
    })?;
    let outcomes = gate.map(|gate| gate.outcomes).unwrap_or_default();
    Ok(match outcome {
        ApprovalStatus::Approved => outcomes.approved,
        ApprovalStatus::Rejected => outcomes.rejected,
        ApprovalStatus::Pending | ApprovalStatus::Withdrawn => Vec::new(),
    })
}

/// One action of an outcome, as deciding would carry it out.
#[derive(Debug, Clone, PartialEq)]
pub struct ActionPreview {
    /// The action as the task type writes it.
    pub action: Value,
    /// For an `invokeSkill`, the call it would make.
    pub call: Option<CallPreview>,
}

/// The call an `invokeSkill` action would make.
#[derive(Debug, Clone, PartialEq)]
pub struct CallPreview {
    /// `name@version` as the action names it.
    pub skill: String,
    /// The version it resolves to now, with its side effects and risk; `None` when there is none
    /// (the call would fail).
    pub version: Option<CalledVersion>,
    /// The inputs the call would receive.
    pub inputs: Map<String, Value>,
    /// For each input, the expression it is read from.
    pub from: Map<String, Value>,
}

/// The version an `invokeSkill` action resolves to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CalledVersion {
    pub name: String,
    pub version: String,
    pub side_effects: SideEffects,
    pub risk_level: RiskLevel,
    pub status: SkillStatus,
    /// The inputs its contract requires: one the task cannot fill makes the call fail.
    pub required: Vec<String>,
    /// What each input becomes, as its schema says (`title`, else `description`).
    pub labels: Map<String, Value>,
}

/// One action of a decision's outcome, planned: the action, and for an `invokeSkill` the version
/// it resolves to and its filled-in inputs.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Planned {
    pub(crate) action: OutcomeAction,
    pub(crate) call: Option<PlannedCall>,
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct PlannedCall {
    pub(crate) skill: String,
    pub(crate) version: Option<SkillRecord>,
    pub(crate) inputs: Map<String, Value>,
    pub(crate) from: Map<String, Value>,
}

/// Who decides, how, with which comment, and when.
pub(crate) struct Decision<'a> {
    pub(crate) approval_id: &'a str,
    pub(crate) outcome: ApprovalStatus,
    pub(crate) comment: &'a str,
    pub(crate) decided_by: &'a str,
    pub(crate) decided_at: Time,
}

impl Engine {
    /// What deciding an approval of `task` as `decision` says does: each action of the type's gate
    /// for that outcome, an `invokeSkill`'s version resolved and its inputs filled from `$.task…`
    /// and `$.approval…`.
    pub(crate) async fn plan_outcome(
        &self,
        task: &TaskRecord,
        task_type: &TaskTypeRecord,
        decision: &Decision<'_>,
    ) -> Result<Vec<Planned>> {
        let root = decision_root(
            task_view(task, task_type),
            json!({"id": decision.approval_id, "comment": decision.comment, "decidedBy": decision.decided_by,
                   "decidedAt": view_time(&decision.decided_at), "outcome": decision.outcome}),
        );
        let mut planned = Vec::new();
        for action in outcome_actions(task_type, decision.outcome)? {
            let skill = action.invoke_skill.skill.clone();
            let written = action.invoke_skill.inputs.clone().unwrap_or_default();
            let version = self.resolved(&skill).await?;
            let call = PlannedCall {
                skill,
                version,
                inputs: paths::fill(&Value::Object(written.clone()), &root),
                from: written,
            };
            planned.push(Planned { action, call: Some(call) });
        }
        Ok(planned)
    }

    /// The actions deciding approval `id` as `outcome` with `comment` would carry out, for a
    /// decider (`approvals.decide` in the task's workspace; anyone who may read the task sees it
    /// too, so that a reviewer without the right can still see what is asked).
    pub async fn outcome_preview(
        &self,
        actor: &Actor,
        id: &str,
        outcome: &str,
        comment: &str,
    ) -> Result<Vec<ActionPreview>> {
        let outcome = check_outcome(outcome)?;
        let approval = self.visible_approval(actor, id).await?;
        if !approval.gates_the_task() {
            return Ok(Vec::new());
        }
        let task = self.store.task(&approval.task_id).await?;
        let task_type = self.store.task_type(&task.task_type_id).await?;
        let decision =
            Decision { approval_id: &approval.id, outcome, comment, decided_by: actor.id(), decided_at: self.now() };
        let mut planned: Vec<(Value, Option<PlannedCall>)> = self
            .plan_outcome(&task, &task_type, &decision)
            .await?
            .into_iter()
            .map(|planned| (json!(planned.action), planned.call))
            .collect();
        // A gate of an execution-pinned task also decides the execution: approving lets the core
        // make its call, rejecting fails the task.
        if let (Some(execution), Some(skill)) =
            (task_type.spec.execution.as_ref(), super::execution_reference(&task_type))
            && !task.status.is_terminal()
        {
            planned.push(if outcome == ApprovalStatus::Approved {
                let version = self.resolved(&skill).await?;
                let inputs = match crate::basis::execution_inputs(&task, &task_type) {
                    Value::Object(inputs) => inputs,
                    _ => Map::new(),
                };
                let from = execution.inputs.as_object().cloned().unwrap_or_default();
                (json!({"execution": {"skill": skill}}), Some(PlannedCall { skill, version, inputs, from }))
            } else {
                (json!({"setTaskStatus": "failed", "closeReason": "gate_rejected"}), None)
            });
        }
        Ok(planned
            .into_iter()
            .map(|(action, call)| ActionPreview {
                action,
                call: call.map(|call| CallPreview {
                    skill: call.skill,
                    version: call.version.map(|skill| CalledVersion {
                        required: required_inputs(&skill),
                        labels: input_labels(&skill),
                        name: skill.name,
                        version: skill.version,
                        side_effects: skill.side_effects.unwrap_or_default(),
                        risk_level: skill.risk_level.unwrap_or_default(),
                        status: skill.status,
                    }),
                    inputs: call.inputs,
                    from: call.from,
                }),
            })
            .collect())
    }
}

/// Whether `skill`'s contract requires the input `name`.
pub(crate) fn requires(skill: &SkillRecord, name: &str) -> bool {
    required_inputs(skill).iter().any(|required| required == name)
}

/// The inputs `skill`'s contract requires.
pub(crate) fn required_inputs(skill: &SkillRecord) -> Vec<String> {
    let Some(contract) = &skill.contract else { return Vec::new() };
    SchemaView(contract.inputs()).required().into_iter().map(str::to_owned).collect()
}

/// What each input of `skill` is, from its contract's input schema: the property's `title`, else
/// its `description`.
fn input_labels(skill: &SkillRecord) -> Map<String, Value> {
    let Some(contract) = &skill.contract else { return Map::new() };
    SchemaView(contract.inputs())
        .properties()
        .filter_map(|(name, schema)| Some((name.clone(), Value::from(schema.label()?))))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn task_type(approval_schema: Value) -> TaskTypeRecord {
        TaskTypeRecord {
            id: "tt".into(),
            key: "claim.review".into(),
            version: "1".into(),
            display_name: String::new(),
            description: String::new(),
            spec: skill_api::TaskTypeSpec {
                approval_schema: Some(approval_schema),
                ..skill_api::TaskTypeSpec::new("1")
            },
            created_by: None,
            created_at: chrono::Utc::now(),
        }
    }

    #[test]
    fn an_outcome_that_does_not_read_fails_the_decision_instead_of_doing_nothing() {
        let good = json!({"gates": {"default": {"outcomes": {"approved": [{"invokeSkill": {"skill": "a@1"}}]}}}});
        let read = outcome_actions(&task_type(good), ApprovalStatus::Approved).expect("reads");
        assert_eq!(read.len(), 1);
        assert!(outcome_actions(&task_type(json!({})), ApprovalStatus::Rejected).expect("none").is_empty());
        let corrupted = json!({"gates": {"default": {"outcomes": {"approved": [{"invokeSkill": {"skil": "a@1"}}]}}}});
        let error = outcome_actions(&task_type(corrupted), ApprovalStatus::Approved).expect_err("refused");
        assert_eq!(error.code, Code::InternalError);
    }
}
