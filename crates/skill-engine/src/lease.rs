//! Lease arithmetic and the lease-holder check, as pure functions of a stored call.

use chrono::Duration;
use serde_json::Value;
use skill_api::{CallStatus, ReportedError, SessionStatus};
use skill_contract::codes::Code;
use skill_store::records::{InvocationRecord, SessionRecord, Time};

use crate::error::{Class, EngineError, Result};

/// The shortest and longest lease, in seconds.
pub const MIN_LEASE_SECONDS: i64 = 10;
pub const MAX_LEASE_SECONDS: i64 = 3600;

/// The contract's `timeoutSeconds`.
pub(crate) fn timeout_of(contract: &skill_contract::Contract) -> i64 {
    i64::from(contract.timeout_seconds())
}

/// When a lease taken or renewed at `now` ends: `requested` seconds (default the timeout + 30 s)
/// clamped to 10..3600 s, and never past the attempt's cap, `attempt_start + 2 × timeout + 30 s`.
pub(crate) fn lease_end(now: Time, attempt_start: Time, timeout: i64, requested: Option<u32>) -> Time {
    let ttl = requested.map_or(timeout + 30, i64::from).clamp(MIN_LEASE_SECONDS, MAX_LEASE_SECONDS);
    let cap = attempt_start + Duration::seconds(2 * timeout + 30);
    (now + Duration::seconds(ttl)).min(cap)
}

/// Whether a session can hold leases at `now`.
pub(crate) fn session_active(session: &SessionRecord, now: Time) -> bool {
    session.status == SessionStatus::Active && session.expires_at > now
}

/// The check every heartbeat, completion and failure passes first: the caller holds the call's
/// current lease (`409 stale_invocation_lease` otherwise, with the current token).
pub(crate) fn check_holder(
    call: &InvocationRecord,
    executor: &str,
    fencing_token: i64,
    session_id: Option<&str>,
    now: Time,
) -> Result<()> {
    let holds = call.status == CallStatus::Running
        && call.executor_principal_id.as_deref() == Some(executor)
        && call.fencing_token == fencing_token
        && call.lease_expires_at.is_some_and(|end| end > now)
        && call.executor_session_id.as_deref().is_none_or(|session| Some(session) == session_id);
    if holds {
        return Ok(());
    }
    Err(EngineError::new(
        Class::Conflict,
        Code::StaleInvocationLease,
        "this executor does not hold the call's current lease: drop the call and report nothing",
    )
    .with("invocationId", call.id.clone())
    .with("status", call.status)
    .with("fencingToken", fencing_token)
    .with("currentFencingToken", call.fencing_token))
}

/// `call` ended in `status` at `now` with `output` or `error`: no lease, its finish time, one row
/// version on.
pub(crate) fn ended(
    call: &InvocationRecord,
    status: CallStatus,
    output: Option<Value>,
    error: Option<ReportedError>,
    now: Time,
) -> InvocationRecord {
    InvocationRecord {
        status,
        output,
        error,
        lease_expires_at: None,
        finished_at: Some(now),
        updated_at: now,
        row_version: call.row_version + 1,
        ..call.clone()
    }
}

/// `{code, retryable, message, details?}`, the error a call stores.
pub(crate) fn error_value(code: &str, retryable: bool, message: &str, details: Option<Value>) -> ReportedError {
    ReportedError { code: code.to_owned(), message: message.to_owned(), retryable, details }
}

#[cfg(test)]
mod tests {

    use super::*;

    #[test]
    fn leases_are_clamped_and_capped_by_the_attempt() {
        let now = chrono::Utc::now();
        assert_eq!(lease_end(now, now, 60, None), now + Duration::seconds(90));
        assert_eq!(lease_end(now, now, 1, Some(2)), now + Duration::seconds(10), "at least 10 s");
        assert_eq!(lease_end(now, now, 3600, Some(100_000)), now + Duration::seconds(3600), "at most an hour");
        // Renewed late in the attempt: never past start + 2 × timeout + 30 s.
        let start = now - Duration::seconds(100);
        assert_eq!(lease_end(now, start, 60, Some(3600)), start + Duration::seconds(150));
    }
}
