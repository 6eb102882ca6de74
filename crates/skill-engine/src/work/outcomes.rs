//! The outcome of a decided gate (reference §10.2): each `invokeSkill` action becomes a call with
//! the decider's authority (as it was when deciding, and only while the decider is enabled),
//! the key `approval-outcome:<approvalId>:<index>`, the task, and the approval as its basis;
//! inputs filled from `$.task…` and `$.approval…`. When every action's call has ended, each
//! action's `onSuccess` (succeeded, and `expect` met) or `onFailure` reactions run, in one
//! transaction with the outcome's end. A call left unclaimed for [`SKILL_WAIT`] is cancelled
//! (`approval_outcome_skill_wait_expired`) and counts as failed; one cancelled because the task
//! closed or the approval was withdrawn runs neither branch. A failure that may pass can be
//! retried by a decider (`retry.rs`): the retried actions run again and react again.
//!
//! Every step is written before the next is taken and repeats safely (the call's key names one
//! call), so any number of cores may run this and any of them may be killed at any moment.
use skill_api::events::{ActionEnded, ActionInvoked, OutcomeEnded};
use skill_api::{
    ActionCall, ActionStatus, CallStatus, Failure, Lifecycle, LostBasis, OutcomeReaction, OutcomeStatus, Reaction,
    State,
};
use skill_contract::codes::Code;

use chrono::Duration;
use serde_json::Value;
use skill_api::InvokeRequest;
use skill_store::records::{ActionRecord, ApprovalRecord, Event, InvocationRecord, Time, WorkChange};

use super::comment_event;
use crate::actor::Actor;
use crate::basis::Internal;
use crate::cancellation::Cancellation;
use crate::error::written;
use crate::error::{Class, EngineError, Result};
use crate::{Engine, Origin};

/// How long an outcome's call may wait unclaimed.
pub const SKILL_WAIT: Duration = Duration::hours(24);
/// The most decided approvals one pass looks at.
const BATCH: i64 = 50;

impl Engine {
    /// One pass over the outcomes that are running, at `now`: calls made, ended calls noted,
    /// finished outcomes reacted to. Answers how many actions or outcomes moved.
    pub async fn run_outcomes(&self, now: Time) -> Result<usize> {
        let mut moved = 0;
        for approval in self.store.running_outcomes(BATCH).await? {
            moved += self.advance_outcome(&approval, now).await?;
        }
        Ok(moved)
    }

    /// Waits until a decision queued actions here or `within` passes.
    pub async fn outcomes_due(&self, within: std::time::Duration) {
        self.moments.wait_for_outcomes(within).await;
    }

    async fn advance_outcome(&self, approval: &ApprovalRecord, now: Time) -> Result<usize> {
        let task = self.store.task(&approval.task_id).await?;
        let decider = self.decider(approval).await?;
        let system = Origin::default();
        let mut moved = 0;
        let mut actions = self.store.actions(&approval.id).await?;
        for action in &mut actions {
            let next = match action.status {
                ActionStatus::Pending => self.invoke_action(approval, action, decider.as_ref()).await?,
                ActionStatus::Invoked => self.watch_action(action, now).await?,
                ActionStatus::Succeeded | ActionStatus::Failed | ActionStatus::Skipped => None,
            };
            if let Some((next, event)) = next {
                if written(self.store.write_work(&[WorkChange::UpdateAction(next.clone())], &[event]).await)? {
                    moved += 1;
                    *action = next;
                } else {
                    // Another core moved it meanwhile: the next pass sees where it is.
                    return Ok(moved);
                }
            }
        }
        if actions.iter().any(|action| matches!(action.status, ActionStatus::Pending | ActionStatus::Invoked)) {
            return Ok(moved);
        }
        let succeeded = actions.iter().all(|action| action.status == ActionStatus::Succeeded);
        let skipped = actions.iter().all(|action| action.status == ActionStatus::Skipped);
        let mut changes = Vec::new();
        let mut events = Vec::new();
        let mut task_now = task.clone();
        let mut reaction = None;
        // Reactions run once per action's end: after a retry, only the retried actions' (an
        // action in retry round n was in every round before it, so the round is the most retries).
        let round = actions.iter().map(|action| action.retries).max().unwrap_or_default();
        for action in actions.iter().filter(|action| action.retries == round) {
            let branch = match action.status {
                ActionStatus::Succeeded => OutcomeReaction::OnSuccess,
                ActionStatus::Failed => OutcomeReaction::OnFailure,
                ActionStatus::Pending | ActionStatus::Invoked | ActionStatus::Skipped => continue,
            };
            reaction =
                Some(if reaction == Some(OutcomeReaction::OnFailure) { OutcomeReaction::OnFailure } else { branch });
            for reaction in action.action.invoke_skill.reactions(branch) {
                match reaction {
                    // The type's publication let only a closing status through.
                    Reaction::SetTaskStatus(status) => {
                        if !task_now.status.is_terminal() {
                            self.withdraw_gates(&task_now, &system, &mut changes, &mut events).await?;
                            task_now = self.closed(&task_now, *status, &system, &mut events);
                        }
                    }
                    Reaction::AddComment(text) => {
                        let author = approval.decided_by.clone().unwrap_or_default();
                        let comment = self.comment(&task, &author, text)?;
                        events.push(comment_event(&comment, &system));
                        changes.push(WorkChange::InsertComment(comment));
                    }
                }
            }
        }
        if task_now != task {
            changes.insert(0, WorkChange::UpdateTask(task_now));
        }
        let status = if skipped {
            OutcomeStatus::Skipped
        } else if succeeded {
            OutcomeStatus::Succeeded
        } else {
            OutcomeStatus::Failed
        };
        let ended = ApprovalRecord {
            outcome_status: Some(status),
            outcome_reaction: reaction,
            row_version: approval.row_version + 1,
            updated_at: self.now(),
            ..approval.clone()
        };
        let ended_event = OutcomeEnded { task_id: approval.task_id.clone(), status, reaction };
        events.push(self.event(format!("approval:{}", approval.id), &ended_event, &system));
        changes.insert(0, WorkChange::UpdateApproval(ended));
        // A stale approval or task (a withdrawal, a close meanwhile): the next pass decides again.
        if written(self.store.write_work(&changes, &events).await)? {
            let reaction = reaction.map_or("none", |reaction| reaction.as_str());
            if status == OutcomeStatus::Failed {
                tracing::warn!(approval = %approval.id, task = %approval.task_id, %status, %reaction, "approval outcome ended");
            } else {
                tracing::info!(approval = %approval.id, task = %approval.task_id, %status, %reaction, "approval outcome ended");
            }
            moved += 1;
        }
        Ok(moved)
    }

    /// The decider as it was when deciding, if it is still enabled.
    async fn decider(&self, approval: &ApprovalRecord) -> Result<Option<Actor>> {
        let Some(decided_by) = &approval.decided_by else { return Ok(None) };
        let principal = self.store.principal(decided_by).await?;
        if principal.disabled_at.is_some() {
            return Ok(None);
        }
        Ok(approval.decision_authority.as_ref().and_then(|snapshot| Actor::from_snapshot(principal, snapshot)))
    }

    /// Makes the call of a pending action — the version and the inputs its decision fixed; a
    /// refusal fails the action, a passing failure (the database) leaves it for the next pass.
    async fn invoke_action(
        &self,
        approval: &ApprovalRecord,
        action: &ActionRecord,
        decider: Option<&Actor>,
    ) -> Result<Option<(ActionRecord, Event)>> {
        let skill = action.action.invoke_skill.skill.clone();
        let Some(decider) = decider else {
            let error = Failure::new("authority_inactive", "the decider is disabled: its decision acts no more");
            return Ok(Some(self.action_ended(action, ActionStatus::Failed, None, Some(error))));
        };
        let (Some(version), Some(Value::Object(inputs))) = (&action.skill_id, &action.inputs) else {
            let error =
                Failure::new("not_found", format!("{skill} named no published version when the decision was made"));
            return Ok(Some(self.action_ended(action, ActionStatus::Failed, None, Some(error))));
        };
        let request = InvokeRequest {
            inputs: Some(inputs.clone()),
            idempotency_key: Some(super::retry::action_key(action)),
            task_id: Some(approval.task_id.clone()),
            run_id: None,
            approval_id: Some(approval.id.clone()),
        };
        match self.invoke_checked(decider, &skill, version, &request, action).await {
            Ok((call, created)) => {
                let result = ActionCall {
                    invocation_id: call.id.clone(),
                    skill: skill.clone(),
                    status: call.status,
                    created,
                    authorization_basis: call.authorization_basis.clone(),
                };
                let next = ActionRecord {
                    status: ActionStatus::Invoked,
                    invocation_id: Some(call.id.clone()),
                    result: Some(result),
                    attempts: action.attempts + 1,
                    row_version: action.row_version + 1,
                    updated_at: self.now(),
                    ..action.clone()
                };
                let invoked =
                    ActionInvoked { index: action.action_index, invocation_id: call.id.clone(), skill: skill.clone() };
                let event = self.event(format!("approval:{}", approval.id), &invoked, &Origin::default());
                Ok(Some((next, event)))
            }
            Err(error) if matches!(error.class, Class::Unavailable | Class::Internal) => Err(error),
            Err(error) => {
                let failure = Failure::new(error.code, error.message).with_details(Value::Object(error.details));
                Ok(Some(self.action_ended(action, ActionStatus::Failed, None, Some(failure))))
            }
        }
    }

    /// The call of an outcome — of `version`, the one its decision resolved `skill` to: never a
    /// bare name that resolves to an external write.
    async fn invoke_checked(
        &self,
        decider: &Actor,
        skill: &str,
        version: &str,
        request: &InvokeRequest,
        action: &ActionRecord,
    ) -> Result<(skill_api::InvocationOut, bool)> {
        if !skill.contains('@') && crate::basis::writes(self.find(version).await?.skill.side_effects) {
            return Err(EngineError::new(
                Class::Invalid,
                Code::UnpinnedExternalWrite,
                format!("{skill} writes to the outside world: an outcome names the version it was approved for"),
            ));
        }
        let invoked = self.invoke_by(decider, version, request, None, Some(Internal::Outcome(action))).await?;
        Ok((invoked.invocation, invoked.created))
    }

    /// Notes the end of an invoked action's call; cancels it when it waited too long unclaimed.
    async fn watch_action(&self, action: &ActionRecord, now: Time) -> Result<Option<(ActionRecord, Event)>> {
        let Some(id) = &action.invocation_id else { return Ok(None) };
        let call = self.store.invocation(id).await?;
        let call = match call.status {
            CallStatus::Pending if call.attempt == 0 && call.created_at + SKILL_WAIT <= now => {
                match self.give_up(&call, now).await? {
                    Some(cancelled) => cancelled,
                    None => return Ok(None),
                }
            }
            CallStatus::Pending | CallStatus::Running => return Ok(None),
            CallStatus::Succeeded | CallStatus::Failed | CallStatus::Cancelled => call,
        };
        Ok(Some(self.ended_action(action, &call)))
    }

    /// Cancels a call nobody claimed in time; `None` when it moved meanwhile.
    async fn give_up(&self, call: &InvocationRecord, now: Time) -> Result<Option<InvocationRecord>> {
        let skill = self.store.skill(&call.skill_id).await?.skill;
        let cause = Cancellation {
            code: "approval_outcome_skill_wait_expired",
            reason: "nobody claimed the outcome's call within 24 hours",
            by: "system",
            initiator: "system",
        };
        let (cancelled, event) = self.cancelled(call, &skill, &cause, now, &Origin::default());
        let wrote = written(self.store.update_invocation(&cancelled, &[event]).await)?;
        if wrote {
            self.moments.call_moved(&cancelled, &skill.name, &skill.version);
        }
        Ok(wrote.then_some(cancelled))
    }

    /// The action's end from its call's: succeeded when the call succeeded and every `expect`
    /// field equals the output's (type-sensitive); skipped when the call lost its basis because
    /// the task closed or the approval was withdrawn; failed otherwise.
    fn ended_action(&self, action: &ActionRecord, call: &InvocationRecord) -> (ActionRecord, Event) {
        let expect = action.action.invoke_skill.expect.as_ref();
        let met = expect.is_none_or(|expect| {
            expect.iter().all(|(key, wanted)| call.output.as_ref().and_then(|output| output.get(key)) == Some(wanted))
        });
        let error = call.error.as_ref();
        let code = error.map(|error| error.code.as_str());
        let reason = error.map(|error| error.message.as_str());
        let status = match call.status {
            CallStatus::Succeeded if met => ActionStatus::Succeeded,
            CallStatus::Cancelled
                if code.and_then(Code::parse) == Some(Code::BasisRevoked)
                    && matches!(
                        reason.and_then(|word| LostBasis::parse(word).ok()),
                        Some(LostBasis::TaskTerminal | LostBasis::ApprovalWithdrawn)
                    ) =>
            {
                ActionStatus::Skipped
            }
            _ => ActionStatus::Failed,
        };
        let result = action.result.clone().map(|result| ActionCall { status: call.status, ..result });
        let failure = match (status, call.status) {
            (ActionStatus::Failed, CallStatus::Succeeded) => {
                Some(Failure::new("expectation_not_met", "the output does not match expect"))
            }
            (ActionStatus::Failed | ActionStatus::Skipped, _) => call.error.as_ref().map(Failure::from),
            _ => None,
        };
        self.action_ended(action, status, result, failure)
    }

    fn action_ended(
        &self,
        action: &ActionRecord,
        status: ActionStatus,
        result: Option<ActionCall>,
        error: Option<Failure>,
    ) -> (ActionRecord, Event) {
        let next = ActionRecord {
            status,
            result: result.or_else(|| action.result.clone()),
            error,
            row_version: action.row_version + 1,
            updated_at: self.now(),
            ..action.clone()
        };
        let ended = ActionEnded { index: action.action_index, status, invocation_id: action.invocation_id.clone() };
        let event = self.event(format!("approval:{}", action.approval_id), &ended, &Origin::default());
        (next, event)
    }
}
