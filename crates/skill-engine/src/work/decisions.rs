//! Decisions: an approval asked for on an open task, decided by someone other than the
//! requester who may decide in the task's workspace (`approvals.decide`), or withdrawn. A decided
//! gate's outcome — the actions the type lists for that decision — is recorded with the decision,
//! in the same transaction, and carried out by the outcome worker with the decider's authority.
use skill_api::Lifecycle;
use skill_api::events::ApprovalDecided;
use skill_contract::codes::Code;

use serde_json::Value;
use skill_api::{
    ActionStatus, ApprovalOut, ApprovalRequest, ApprovalStatus, DecideRequest, OutcomeStatus, RequestedCall,
    WithdrawRequest,
};
use skill_contract::export::canonical;
use skill_store::records::{ActionRecord, ApprovalRecord, WorkChange};

use super::approvals::grant_text;
use super::comment_event;
use super::preview::{Decision, check_outcome, outcome_actions};
use crate::actor::Actor;
use crate::basis::task_terminal;
use crate::error::{Class, EngineError, Result};
use crate::error::{busy, written};
use crate::{Engine, Origin};

impl Engine {
    /// Asks for a decision on an open task (`tasks.write` in its workspace).
    pub async fn request_approval(
        &self,
        actor: &Actor,
        request: &ApprovalRequest,
        request_id: Option<&str>,
    ) -> Result<ApprovalOut> {
        let task = self.visible_task(actor, &request.task_id, Some("tasks.write")).await?;
        if task.status.is_terminal() {
            return Err(task_terminal(&task));
        }
        let call = match &request.call {
            Some(call) => Some(self.requested_call(call, &task).await?),
            None => None,
        };
        let gate = request.gate.unwrap_or(true);
        if call.is_some() && !gate {
            return Err(EngineError::invalid_request(
                "an approval asked for a call is a gate: only an approved gate authorizes a call",
            )
            .with("field", "gate"));
        }
        let (approval, event) = self.new_approval(actor, &task, gate, request.comment.as_deref(), call, request_id)?;
        self.store.write_work(&[WorkChange::InsertApproval(approval.clone())], &[event]).await?;
        self.approval_out(approval, Vec::new()).await
    }

    /// The call an approval is asked for, checked as an invoke would check it: a named version
    /// that can be called, and inputs its contract takes. Answers the version's id and the
    /// inputs, keys in order.
    async fn requested_call(
        &self,
        call: &RequestedCall,
        task: &skill_store::records::TaskRecord,
    ) -> Result<(String, Value)> {
        if !call.skill.contains('@') {
            return Err(EngineError::invalid_request(
                "an approval asked for a call names the version it is for: call.skill is name@version",
            )
            .with("field", "call.skill"));
        }
        let skill = self.find(&call.skill).await.map_err(|error| error.with("field", "call.skill"))?.skill;
        let contract = crate::catalog::invocable(&skill)?;
        // An approval authorizes one call of a version: a version its outcome calls is the
        // outcome's.
        let task_type = self.store.task_type(&task.task_type_id).await?;
        for action in outcome_actions(&task_type, ApprovalStatus::Approved)? {
            let named = &action.invoke_skill.skill;
            if self.find(named).await.is_ok_and(|entry| entry.skill.id == skill.id) {
                return Err(EngineError::invalid_request(format!(
                    "the task's type calls {} when its gate is approved: an approval covers one call of a version, so ask for this call on a task of another type",
                    call.skill
                ))
                .with("field", "call.skill"));
            }
        }
        let inputs = canonical(&Value::Object(call.inputs.clone()));
        self.check_inputs(&skill, contract, &inputs).await?;
        Ok((skill.id, inputs))
    }

    /// Decides a pending approval: `approved` or `rejected`, with a comment. The decider holds
    /// `approvals.decide` in the task's workspace and is not the requester; its authority is kept
    /// with the decision, and a gate's outcome actions are queued with it.
    pub async fn decide(
        &self,
        actor: &Actor,
        id: &str,
        request: &DecideRequest,
        request_id: Option<&str>,
    ) -> Result<ApprovalOut> {
        let outcome = check_outcome(&request.outcome)?;
        let comment = request.comment.clone().unwrap_or_default();
        if comment.chars().count() > 10_000 {
            return Err(EngineError::invalid_request("a comment is at most 10,000 characters").with("field", "comment"));
        }
        for _ in 0..5 {
            let (approval, task) = self.for_decider(actor, id).await?;
            if approval.status != ApprovalStatus::Pending {
                return Err(EngineError::new(
                    Class::Conflict,
                    Code::ApprovalNotPending,
                    format!("the approval is {} already", approval.status),
                )
                .with("approvalId", approval.id)
                .with("status", approval.status));
            }
            if task.status.is_terminal() {
                return Err(task_terminal(&task));
            }
            let now = self.now();
            // An agent's request decides in time or not at all.
            if let Some(asked) = self.store.agent_request_of_approval(&approval.id).await?
                && now >= asked.expires_at
            {
                return Err(EngineError::new(
                    Class::Conflict,
                    Code::RequestExpired,
                    "the agent's request expired before this decision: nothing will be called; the agent may ask again",
                )
                .with("requestId", asked.id)
                .with("expiresAt", crate::catalog::view_time(&asked.expires_at)));
            }
            // What the outcome calls, fixed now: the versions and the inputs this decision makes
            // them with are the only calls it authorizes.
            // A gate asked for one call covers that call only: the type's outcome is not run.
            let planned = if approval.gates_the_task() {
                let task_type = self.store.task_type(&task.task_type_id).await?;
                let decision = Decision {
                    approval_id: &approval.id,
                    outcome,
                    comment: &comment,
                    decided_by: actor.id(),
                    decided_at: now,
                };
                self.plan_outcome(&task, &task_type, &decision).await?
            } else {
                Vec::new()
            };
            let decided = ApprovalRecord {
                status: outcome,
                decided_by: Some(actor.id().to_owned()),
                decided_at: Some(now),
                comment: comment.clone(),
                decision_authority: Some(actor.snapshot()),
                outcome_status: (!planned.is_empty()).then_some(OutcomeStatus::Running),
                row_version: approval.row_version + 1,
                updated_at: now,
                ..approval.clone()
            };
            let rows: Vec<ActionRecord> = planned
                .into_iter()
                .enumerate()
                .map(|(index, planned)| ActionRecord {
                    approval_id: approval.id.clone(),
                    action_index: i32::try_from(index).unwrap_or(i32::MAX),
                    action: planned.action,
                    skill_id: planned
                        .call
                        .as_ref()
                        .and_then(|call| call.version.as_ref())
                        .map(|skill| skill.id.clone()),
                    inputs: planned.call.map(|call| canonical(&Value::Object(call.inputs))),
                    status: ActionStatus::Pending,
                    invocation_id: None,
                    result: None,
                    error: None,
                    attempts: 0,
                    retries: 0,
                    row_version: 1,
                    created_at: now,
                    updated_at: now,
                })
                .collect();
            let decision = ApprovalDecided {
                task_id: approval.task_id.clone(),
                outcome,
                decided_by: actor.id().to_owned(),
                decider_kind: Some(actor.principal().kind),
                token_id: actor.token_id().map(str::to_owned),
                grants: actor.grants().iter().map(grant_text).collect(),
                gate: approval.gate,
                actions: rows.len(),
            };
            let event = self.event(format!("approval:{}", approval.id), &decision, &Origin::of(actor, request_id));
            let mut changes = vec![WorkChange::UpdateApproval(decided.clone())];
            changes.extend(rows.iter().cloned().map(WorkChange::InsertAction));
            if written(self.store.write_work(&changes, &[event]).await)? {
                tracing::info!(approval = %decided.id, task = %decided.task_id, outcome = %request.outcome,
                               by = %actor.principal().name, actions = rows.len(), "approval decided");
                crate::metered::decided(decided.status, decided.created_at, now);
                // The outcome's actions, or a task's execution that the decision lets go on (or
                // ends), are carried out next.
                self.moments.outcomes_due();
                return self.approval_out(decided, rows).await;
            }
        }
        Err(busy())
    }

    /// Withdraws a pending or approved approval (its requester, or `approvals.decide` in the
    /// task's workspace). A call queued on it is cancelled when claimed (`approval_withdrawn`).
    pub async fn withdraw(
        &self,
        actor: &Actor,
        id: &str,
        request: &WithdrawRequest,
        request_id: Option<&str>,
    ) -> Result<ApprovalOut> {
        for _ in 0..5 {
            let approval = self.visible_approval(actor, id).await?;
            let task = self.store.task(&approval.task_id).await?;
            if approval.requested_by != actor.id() && !actor.can_in("approvals.decide", &task.workspace_id) {
                return Err(EngineError::forbidden("approvals.decide").with("workspaceId", task.workspace_id));
            }
            if !approval.status.can_become(ApprovalStatus::Withdrawn) {
                return Err(EngineError::new(
                    Class::Conflict,
                    Code::ApprovalNotWithdrawable,
                    format!("a {} approval cannot be withdrawn: only a pending or approved one", approval.status),
                )
                .with("approvalId", approval.id)
                .with("status", approval.status));
            }
            // A closed task's decision stands: what it allowed has run or was cancelled with it.
            if task.status.is_terminal() {
                return Err(task_terminal(&task).with("approvalId", approval.id));
            }
            let origin = Origin::of(actor, request_id);
            let (withdrawn, event) = self.withdrawal(&approval, Some(actor.id()), &origin);
            let mut events = vec![event];
            let mut changes = vec![WorkChange::UpdateApproval(withdrawn.clone())];
            if let Some(reason) = &request.reason {
                let comment = self.comment(&task, actor.id(), reason)?;
                events.push(comment_event(&comment, &origin));
                changes.push(WorkChange::InsertComment(comment));
            }
            if written(self.store.write_work(&changes, &events).await)? {
                self.moments.outcomes_due();
                let actions = self.store.actions(&approval.id).await?;
                return self.approval_out(withdrawn, actions).await;
            }
        }
        Err(busy())
    }
}
