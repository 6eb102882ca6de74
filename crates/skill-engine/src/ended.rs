//! One log line for every call that ends — the operator's record of what happened, beside the
//! journal: its skill, status, attempts, how long it took from the request, and for a failure
//! or a cancellation its code and message (`info` when it succeeded, `warn` otherwise). An
//! attempt that will be retried is a `debug` line. The metrics count the same moments. The message is a caller's or a skill's text:
//! it is written quoted, its line breaks and control characters escaped, so it cannot forge a
//! line of its own.

use skill_store::records::InvocationRecord;

/// The most characters of an error's message the line shows.
const SHOWN: usize = 300;

/// Logs `call` (of `name@version`) as it now is, if it ended or will be retried, and counts it
/// in the metrics.
pub(crate) fn log(call: &InvocationRecord, name: &str, version: &str) {
    crate::metered::moved(call, name, version);
    let status = call.status.as_str();
    let skill = format_args!("{name}@{version}");
    let attempt = format_args!("{}/{}", call.attempt, call.max_attempts);
    let task = call.task_id.as_deref().unwrap_or("-");
    let code = call.error.as_ref().map_or("", |error| error.code.as_str());
    let message: String = call.error.as_ref().map_or("", |error| error.message.as_str()).chars().take(SHOWN).collect();
    match (status, call.finished_at) {
        ("succeeded", Some(at)) => {
            let took_ms = (at - call.created_at).num_milliseconds();
            tracing::info!(call = %call.id, %skill, %status, %attempt, took_ms, %task, "call ended");
        }
        (_, Some(at)) => {
            let took_ms = (at - call.created_at).num_milliseconds();
            tracing::warn!(call = %call.id, %skill, %status, %attempt, took_ms, %task, %code, reason = message.as_str(), "call ended");
        }
        ("pending", None) if call.error.is_some() => {
            tracing::debug!(call = %call.id, %skill, %attempt, %code, reason = message.as_str(), "call attempt failed; retried");
        }
        _ => {}
    }
}
