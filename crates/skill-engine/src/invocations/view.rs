//! A stored call as the API shows it.

use skill_api::{CallStatus, CalledSkill, InvocationOut, RequestedBy, Waiting, WaitingReason};
use skill_store::records::{InvocationRecord, SkillRecord, Time};

use crate::catalog::view_time;

/// What was looked up about a pending call besides the call itself.
#[derive(Debug, Clone, Default)]
pub(crate) struct Looked {
    /// Whether an active executor session covers the call's implementation (a pending call that
    /// no one covers waits for `no_executor`); `None` when not looked up.
    pub(crate) covered: Option<bool>,
    /// The pending gate approvals of its task that hold it (an external write on the task's
    /// execution waits for them: `held_for_approval`).
    pub(crate) held_by: Vec<String>,
}

pub(crate) fn invocation_out(call: InvocationRecord, skill: &SkillRecord, now: Time, looked: &Looked) -> InvocationOut {
    let time = |t: Option<Time>| t.as_ref().map(view_time);
    let waiting = (call.status == CallStatus::Pending).then(|| waiting(&call, now, looked));
    let trace_id = call.traceparent.as_deref().and_then(skill_api::telemetry::trace_id).map(str::to_owned);
    InvocationOut {
        id: call.id,
        skill_id: call.skill_id,
        skill: CalledSkill { name: skill.name.clone(), version: skill.version.clone() },
        inputs: call.inputs,
        requested_by: RequestedBy { kind: call.requested_by_kind, reference: call.requested_by_ref },
        authority_principal_id: call.authority_principal_id,
        authorization_basis: call.authorization_basis,
        idempotency_key: call.idempotency_key,
        status: call.status,
        attempt: call.attempt,
        max_attempts: call.max_attempts,
        available_at: view_time(&call.available_at),
        output: call.output,
        error: call.error,
        cost: call.cost,
        fencing_token: call.fencing_token,
        executor_principal_id: call.executor_principal_id,
        executor_session_id: call.executor_session_id,
        lease_expires_at: time(call.lease_expires_at),
        heartbeat_at: time(call.heartbeat_at),
        task_id: call.task_id,
        run_id: call.run_id,
        artifact_id: call.artifact_id,
        created_at: view_time(&call.created_at),
        updated_at: view_time(&call.updated_at),
        started_at: time(call.started_at),
        finished_at: time(call.finished_at),
        waiting,
        trace_id,
    }
}

/// The implementation an executor must cover to take `call`.
pub(crate) fn implementation(call: &InvocationRecord) -> String {
    format!("{}:{}", call.protocol, call.target)
}

fn waiting(call: &InvocationRecord, now: Time, looked: &Looked) -> Waiting {
    let implementation = implementation(call);
    let reason = WaitingReason::of(!looked.held_by.is_empty(), call.available_at > now, looked.covered == Some(false));
    let message = match reason {
        WaitingReason::HeldForApproval => format!(
            "an external write of its task's execution: held until the task's gate approval {} is decided",
            looked.held_by.join(", ")
        ),
        WaitingReason::Backoff => format!("retried after a failure: waits until {}", view_time(&call.available_at)),
        WaitingReason::NoExecutor => format!(
            "no executor session covers {implementation}: start an executor that runs it (for a local skill, \
             the package's host with `execute`), or check its allow-list"
        ),
        WaitingReason::Queued => format!("waits for an executor that runs {implementation}"),
    };
    Waiting { reason, message, implementation }
}
