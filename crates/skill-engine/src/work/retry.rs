//! Retrying a decided outcome whose actions failed for a reason that may pass — the outbox folder
//! was missing, the executor was down, nobody claimed the call in time: a decider of the task asks
//! for the same actions again. Each is the version with the inputs its decision fixed, made with
//! the decider's authority as before and bound to the same approval: retry `n` of an action is the
//! call whose basis carries `"retry": n` (the database covers a retry only as many times as a
//! decider asked for one), with the key `approval-outcome:<approvalId>:<index>:retry-<n>`. Nothing
//! else may spend it, and a failure that says it will not pass (a refusal, invalid output, an
//! unmet `expect`) cannot be retried.

use chrono::Utc;
use serde_json::{Value, json};
use skill_api::{ApprovalOut, RetryRequest};
use skill_store::records::{ActionRecord, ApprovalRecord, WorkChange};

use super::tasks::task_terminal;
use super::{comment_event, terminal};
use crate::actor::Actor;
use crate::error::{Class, EngineError, Result, busy, written};
use crate::{Engine, Origin};

/// The most retries of one action.
pub const MAX_RETRIES: i32 = 10;

/// Whether `action` failed for a reason that may pass and may be retried once more.
pub(crate) fn retryable(action: &ActionRecord) -> bool {
    let Some(error) = action.error.as_ref().filter(|_| action.status == "failed") else { return false };
    let code = error.get("code").and_then(Value::as_str).unwrap_or_default();
    let passing = match error.get("retryable").and_then(Value::as_bool) {
        Some(retryable) => retryable,
        // Nobody claimed the call: the executors were away, not the call wrong.
        None if code == "approval_outcome_skill_wait_expired" => true,
        None => skill_contract::codes::code_info(code)
            .is_some_and(|info| info.retryable == skill_contract::codes::Retry::Yes),
    };
    passing && action.retries < MAX_RETRIES
}

/// The idempotency key of an outcome action's call: the first call's, or retry `n`'s.
pub(crate) fn action_key(action: &ActionRecord) -> String {
    match action.retries {
        0 => format!("approval-outcome:{}:{}", action.approval_id, action.action_index),
        n => format!("approval-outcome:{}:{}:retry-{n}", action.approval_id, action.action_index),
    }
}

/// `409 outcome_not_retryable` for `approval`, with why.
fn not_retryable(approval: &ApprovalRecord, reason: &str, message: String) -> EngineError {
    EngineError::new(Class::Conflict, "outcome_not_retryable", message)
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
            let approval = self.visible_approval(actor, id).await?;
            let task = self.store.task(&approval.task_id).await?;
            if !actor.can_in("approvals.decide", &task.workspace_id) {
                return Err(EngineError::forbidden("approvals.decide").with("workspaceId", task.workspace_id));
            }
            // Retrying carries a decision out again: as with deciding, never by who asked for it.
            if approval.requested_by == actor.id() {
                return Err(EngineError::new(
                    Class::Forbidden,
                    "self_approval_refused",
                    "you asked for this approval: another decider of the task retries its outcome",
                )
                .with("approvalId", approval.id.clone()));
            }
            if terminal(&task.status) {
                return Err(task_terminal(&task));
            }
            let status = approval.outcome_status.clone().unwrap_or_default();
            match status.as_str() {
                _ if !matches!(approval.status.as_str(), "approved" | "rejected") => {
                    return Err(not_retryable(
                        &approval,
                        "not_decided",
                        format!("the approval is {}: only a decided approval's outcome is retried", approval.status),
                    ));
                }
                "failed" => {}
                "running" => {
                    return Err(not_retryable(
                        &approval,
                        "running",
                        "the outcome is still running: wait until its calls end".to_owned(),
                    ));
                }
                "" => {
                    return Err(not_retryable(&approval, "no_outcome", "the decision did nothing to retry".to_owned()));
                }
                other => {
                    return Err(not_retryable(
                        &approval,
                        other,
                        format!("the outcome {other}: only a failed one is retried"),
                    ));
                }
            }
            let actions = self.store.actions(&approval.id).await?;
            let again: Vec<&ActionRecord> = actions.iter().filter(|action| retryable(action)).collect();
            if again.is_empty() {
                let failures: Vec<Value> = actions
                    .iter()
                    .filter(|action| action.status == "failed")
                    .map(|action| {
                        json!({"index": action.action_index, "retries": action.retries,
                               "code": action.error.as_ref().and_then(|e| e.get("code")).cloned()})
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
            let now = Utc::now();
            let origin = Origin::of(actor, request_id);
            let mut changes = vec![WorkChange::UpdateApproval(ApprovalRecord {
                outcome_status: Some("running".to_owned()),
                outcome_reaction: None,
                row_version: approval.row_version + 1,
                updated_at: now,
                ..approval.clone()
            })];
            let mut retried = Vec::new();
            for action in again {
                retried.push(json!({"index": action.action_index, "retry": action.retries + 1,
                                    "previousInvocationId": action.invocation_id,
                                    "error": action.error.as_ref().and_then(|e| e.get("code")).cloned()}));
                changes.push(WorkChange::UpdateAction(ActionRecord {
                    status: "pending".to_owned(),
                    invocation_id: None,
                    error: None,
                    retries: action.retries + 1,
                    row_version: action.row_version + 1,
                    updated_at: now,
                    ..action.clone()
                }));
            }
            let mut events = vec![self.event(
                "approval.outcome_retried",
                format!("approval:{}", approval.id),
                json!({"taskId": approval.task_id, "retriedBy": actor.id(), "actions": retried}),
                &origin,
            )];
            if let Some(reason) = &request.reason {
                let comment = self.comment(&task, actor.id(), reason)?;
                events.push(comment_event(&comment, &origin));
                changes.push(WorkChange::InsertComment(comment));
            }
            if written(self.store.write_work(&changes, &events).await)? {
                tracing::info!(approval = %approval.id, task = %approval.task_id, by = %actor.principal().name,
                               actions = retried.len(), "approval outcome retried");
                self.outcomes_due.notify_one();
                return self.approval(actor, &approval.id).await;
            }
        }
        Err(busy())
    }
}
