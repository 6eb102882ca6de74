//! Ending a pending or running call for a cause — a principal's cancel, a lost basis, a disabled
//! authority, a waiting caller giving up — with its event. The executor of a running call is
//! fenced out either way.

use serde_json::json;
use skill_api::CallStatus;
use skill_api::events::InvocationCancelled;
use skill_store::records::{InvocationRecord, SkillRecord};

use crate::{Engine, Origin};

/// Why a call is cancelled: its error code (`cancelled`, `basis_revoked`), the reason (the
/// error's message), who cancelled it and whether a principal or the system did.
pub(crate) struct Cancellation<'a> {
    pub(crate) code: &'a str,
    pub(crate) reason: &'a str,
    pub(crate) by: &'a str,
    pub(crate) initiator: &'a str,
}

impl Engine {
    /// `call` cancelled for `cause`, and its `skill.invocation_cancelled` event; `details` of the
    /// error say who and whether it was running (its executor is fenced out either way).
    pub(crate) fn cancelled(
        &self,
        call: &InvocationRecord,
        skill: &SkillRecord,
        cause: &Cancellation<'_>,
        now: skill_store::records::Time,
        origin: &Origin,
    ) -> (InvocationRecord, skill_store::records::Event) {
        cancellation(call, (&skill.name, &skill.version), cause, now, origin)
    }
}

/// `call` of the version `(name, version)` cancelled for `cause`, and its event.
pub(crate) fn cancellation(
    call: &InvocationRecord,
    (name, version): (&str, &str),
    cause: &Cancellation<'_>,
    now: skill_store::records::Time,
    origin: &Origin,
) -> (InvocationRecord, skill_store::records::Event) {
    let was_running = call.status == CallStatus::Running;
    let details = json!({"cancelledBy": cause.by, "initiator": cause.initiator, "wasRunning": was_running});
    let error = crate::lease::error_value(cause.code, false, cause.reason, Some(details));
    let cancelled = InvocationCancelled {
        skill_id: call.skill_id.clone(),
        skill: name.to_owned(),
        version: version.to_owned(),
        attempt: call.attempt,
        task_id: call.task_id.clone(),
        run_id: call.run_id.clone(),
        code: cause.code.to_owned(),
        reason: cause.reason.to_owned(),
        was_running,
        cancelled_by: cause.by.to_owned(),
        initiator: cause.initiator.to_owned(),
    };
    let event = crate::new_event(format!("skill_invocation:{}", call.id), &cancelled, origin);
    (crate::lease::ended(call, CallStatus::Cancelled, None, Some(error), now), event)
}
