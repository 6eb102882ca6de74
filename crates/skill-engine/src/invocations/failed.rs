//! The next state of a running call that failed: back in the queue after the backoff when the
//! error is retryable and attempts remain, else failed — with its event.

use serde_json::Value;
use skill_api::events::{FailureSummary, InvocationFailed, InvocationRetryScheduled, RetriedError};
use skill_api::{CallStatus, ReportedError};
use skill_store::records::{InvocationRecord, SkillRecord, Time};

use crate::lease::ended;
use crate::{Engine, Origin};
impl Engine {
    /// The next state of a running `call` that failed with `error`, and its event: pending after
    /// the backoff when the error is retryable and attempts remain, else failed.
    pub(crate) fn failed(
        &self,
        call: InvocationRecord,
        skill: &SkillRecord,
        error: ReportedError,
        cost: Option<Value>,
        now: Time,
        origin: &Origin,
    ) -> (InvocationRecord, skill_store::records::Event) {
        let retryable = error.retryable;
        let subject = format!("skill_invocation:{}", call.id);
        let summary = FailureSummary { code: Some(error.code.clone()), retryable, message: cut(&error.message, 500) };
        if retryable && call.attempt < call.max_attempts {
            let backoff = skill.contract.as_ref().map_or(0, |contract| contract.retry_policy().backoff_seconds());
            let available_at = now + chrono::Duration::seconds(i64::from(backoff));
            let scheduled = InvocationRetryScheduled {
                skill_id: skill.id.clone(),
                attempt: call.attempt,
                max_attempts: call.max_attempts,
                available_at: crate::catalog::view_time(&available_at),
                error: RetriedError { code: Some(error.code.clone()), retryable: true },
            };
            let event = self.event(subject, &scheduled, origin);
            let next = InvocationRecord {
                status: CallStatus::Pending,
                available_at,
                error: Some(error),
                cost: cost.or(call.cost.clone()),
                executor_principal_id: None,
                executor_session_id: None,
                lease_expires_at: None,
                updated_at: now,
                row_version: call.row_version + 1,
                ..call
            };
            return (next, event);
        }
        let failed = InvocationFailed {
            skill_id: skill.id.clone(),
            skill: skill.name.clone(),
            version: skill.version.clone(),
            attempt: call.attempt,
            max_attempts: call.max_attempts,
            task_id: call.task_id.clone(),
            run_id: call.run_id.clone(),
            error: summary,
        };
        let event = self.event(subject, &failed, origin);
        let next = InvocationRecord {
            cost: cost.or(call.cost.clone()),
            ..ended(&call, CallStatus::Failed, None, Some(error), now)
        };
        (next, event)
    }
}

fn cut(text: &str, max: usize) -> String {
    text.chars().take(max).collect()
}
