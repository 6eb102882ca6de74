//! Retrying a decided outcome whose actions failed for a reason that may pass — the outbox folder
//! was missing, the executor was down, nobody claimed the call in time: a decider of the task asks
//! for the same actions again. Each is the version with the inputs its decision fixed, made with
//! the decider's authority as before and bound to the same approval: retry `n` of an action is the
//! call whose basis carries `"retry": n` (the database covers a retry only as many times as a
//! decider asked for one), with the key `approval-outcome:<approvalId>:<index>:retry-<n>` — while
//! the skill is given the first call's key, since every retry is an attempt at the same effect.
//! Nothing else may spend it, and a failure that says it will not pass (a refusal, invalid output,
//! an unmet `expect`) cannot be retried.
use skill_api::Lifecycle;
use skill_api::events::{OutcomeRetried, RetriedAction};
use skill_contract::codes::Code;

use serde_json::{Value, json};
use skill_api::{ActionStatus, ApprovalOut, OutcomeStatus, RetryRequest};
use skill_store::records::{ActionRecord, ApprovalRecord, WorkChange};

use super::approvals::{MAX_RETRIES, retryable};
use super::comment_event;
use crate::actor::Actor;
use crate::basis::task_terminal;
use crate::error::{Class, EngineError, Result, busy, written};
use crate::{Engine, Origin};

/// The idempotency key of an outcome action's call: the first call's, or retry `n`'s.
pub(crate) fn action_key(action: &ActionRecord) -> String {
    match action.retries {
        0 => format!("approval-outcome:{}:{}", action.approval_id, action.action_index),
        n => format!("approval-outcome:{}:{}:retry-{n}", action.approval_id, action.action_index),
    }
}

/// `409 outcome_not_retryable` for `approval`, with why.
fn not_retryable(approval: &ApprovalRecord, reason: &str, message: String) -> EngineError {
    EngineError::new(Class::Conflict, Code::OutcomeNotRetryable, message)
        .with("approvalId", approval.id.clone())
        .with("reason", reason)
}

impl Engine {
    /// Retries the actions of a decided outcome that failed for a retryable reason
    /// (`approvals.decide` in the task's workspace, not the approval's requester, on an open task).
    pub async fn retry_outcome(
        &self,
        actor: &Actor,
        id: &str,
        request: &RetryRequest,
        request_id: Option<&str>,
    ) -> Result<ApprovalOut> {
        for _ in 0..5 {
            let (approval, task) = self.for_decider(actor, id).await?;
            if task.status.is_terminal() {
                return Err(task_terminal(&task));
            }
            match approval.outcome_status {
                _ if !approval.status.decided() => {
                    return Err(not_retryable(
                        &approval,
                        "not_decided",
                        format!("the approval is {}: only a decided approval's outcome is retried", approval.status),
                    ));
                }
                Some(OutcomeStatus::Failed) => {}
                Some(OutcomeStatus::Running) => {
                    return Err(not_retryable(
                        &approval,
                        "running",
                        "the outcome is still running: wait until its calls end".to_owned(),
                    ));
                }
                None => {
                    return Err(not_retryable(&approval, "no_outcome", "the decision did nothing to retry".to_owned()));
                }
                Some(other @ (OutcomeStatus::Succeeded | OutcomeStatus::Skipped)) => {
                    return Err(not_retryable(
                        &approval,
                        other.as_str(),
                        format!("the outcome {other}: only a failed one is retried"),
                    ));
                }
            }
            let actions = self.store.actions(&approval.id).await?;
            // Read after the approval: a retry made in between shows here first.
            if actions.iter().any(|action| matches!(action.status, ActionStatus::Pending | ActionStatus::Invoked)) {
                return Err(not_retryable(
                    &approval,
                    "running",
                    "the outcome is still running: wait until its calls end".to_owned(),
                ));
            }
            let again: Vec<&ActionRecord> = actions.iter().filter(|action| retryable(action)).collect();
            if again.is_empty() {
                let failures: Vec<Value> = actions
                    .iter()
                    .filter(|action| action.status == ActionStatus::Failed)
                    .map(|action| {
                        json!({"index": action.action_index, "retries": action.retries,
                               "code": action.error.as_ref().map(|error| error.code.as_str())})
                    })
                    .collect();
                let limit = actions.iter().any(|action| action.retries >= MAX_RETRIES);
                let (reason, message) = if limit {
                    ("retry_limit", format!("the failed actions were retried {MAX_RETRIES} times already"))
                } else {
                    ("not_retryable", "no action failed for a reason that may pass: its failure is final".to_owned())
                };
                return Err(not_retryable(&approval, reason, message).with("failures", json!(failures)));
            }
            let now = self.now();
            let origin = Origin::of(actor, request_id);
            let mut changes = vec![WorkChange::UpdateApproval(ApprovalRecord {
                outcome_status: Some(OutcomeStatus::Running),
                outcome_reaction: None,
                row_version: approval.row_version + 1,
                updated_at: now,
                ..approval.clone()
            })];
            let mut retried = Vec::new();
            for action in again {
                retried.push(RetriedAction {
                    index: action.action_index,
                    retry: action.retries + 1,
                    previous_invocation_id: action.invocation_id.clone(),
                    error: action.error.as_ref().map(|error| error.code.clone()),
                });
                changes.push(WorkChange::UpdateAction(ActionRecord {
                    status: ActionStatus::Pending,
                    invocation_id: None,
                    error: None,
                    retries: action.retries + 1,
                    row_version: action.row_version + 1,
                    updated_at: now,
                    ..action.clone()
                }));
            }
            let retry = OutcomeRetried {
                task_id: approval.task_id.clone(),
                retried_by: actor.id().to_owned(),
                actions: retried,
            };
            let mut events = vec![self.event(format!("approval:{}", approval.id), &retry, &origin)];
            if let Some(reason) = &request.reason {
                let comment = self.comment(&task, actor.id(), reason)?;
                events.push(comment_event(&comment, &origin));
                changes.push(WorkChange::InsertComment(comment));
            }
            if written(self.store.write_work(&changes, &events).await)? {
                tracing::info!(approval = %approval.id, task = %approval.task_id, by = %actor.principal().name,
                               actions = retry.actions.len(), "approval outcome retried");
                self.moments.outcomes_due();
                return self.approval(actor, &approval.id).await;
            }
        }
        Err(busy())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn action(status: &str, error: Option<Value>, retries: i32) -> ActionRecord {
        let now = chrono::Utc::now();
        ActionRecord {
            approval_id: "a".into(),
            action_index: 0,
            action: serde_json::from_value(json!({"invokeSkill": {"skill": "a"}})).expect("an action"),
            skill_id: Some("s".into()),
            inputs: Some(json!({})),
            status: status.parse().expect("a status"),
            invocation_id: None,
            result: None,
            error: error.map(|error| serde_json::from_value(error).expect("a failure")),
            attempts: 1,
            retries,
            row_version: 1,
            created_at: now,
            updated_at: now,
        }
    }

    #[test]
    fn only_a_failure_that_may_pass_is_retried_and_only_so_often() {
        let passing = Some(json!({"code": "outbox_unavailable", "retryable": true}));
        assert!(retryable(&action("failed", passing.clone(), 0)));
        assert!(!retryable(&action("failed", passing.clone(), MAX_RETRIES)), "retries run out");
        assert!(!retryable(&action("succeeded", passing, 0)));
        assert!(!retryable(&action(
            "failed",
            Some(json!({"code": "output_contract_violation", "retryable": false})),
            0
        )));
        assert!(retryable(&action("failed", Some(json!({"code": "approval_outcome_skill_wait_expired"})), 0)));
        assert!(!retryable(&action("failed", Some(json!({"code": "skill_permission_denied"})), 0)), "a refusal");
        assert!(retryable(&action("failed", Some(json!({"code": "config_missing"})), 0)), "the table says it may pass");
        assert_eq!(action_key(&action("pending", None, 0)), "approval-outcome:a:0");
        assert_eq!(action_key(&action("pending", None, 2)), "approval-outcome:a:0:retry-2");
    }
}
