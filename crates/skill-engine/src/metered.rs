//! What the engine counts and times for operators, through the `metrics` facade (a no-op unless
//! the binary installed a recorder): attempts handed out and how long they waited, how calls
//! ended and how long they took from the invoke, retries, cancellations at claim, expired leases.
//! A skill is a label (`name@version`) for the first [`MAX_SKILL_LABELS`] seen; the rest share
//! `other`, so the series stay bounded however many skills the catalog holds.

use std::collections::HashSet;
use std::sync::{Mutex, PoisonError};

use skill_api::telemetry::{MAX_SKILL_LABELS, OTHER, label, metric};
use skill_api::{ApprovalStatus, CallStatus, WaitingReason};
use skill_store::records::{InvocationRecord, Time};

static LABELLED: Mutex<Option<HashSet<String>>> = Mutex::new(None);

/// The label of `name@version`: its own while fewer than [`MAX_SKILL_LABELS`] have one, else
/// `other`.
pub(crate) fn skill_label(name: &str, version: &str) -> String {
    let skill = format!("{name}@{version}");
    let mut labelled = LABELLED.lock().unwrap_or_else(PoisonError::into_inner);
    let labelled = labelled.get_or_insert_with(HashSet::new);
    if labelled.contains(&skill) {
        return skill;
    }
    if labelled.len() < MAX_SKILL_LABELS {
        labelled.insert(skill.clone());
        return skill;
    }
    OTHER.to_owned()
}

/// A claim handed `call` (now running) to an executor at `now`.
pub(crate) fn claimed(call: &InvocationRecord, name: &str, version: &str, now: Time) {
    let skill = skill_label(name, version);
    let ready = call.available_at.max(call.created_at);
    metrics::counter!(metric::CALL_ATTEMPTS, label::SKILL => skill.clone()).increment(1);
    metrics::histogram!(metric::SCHEDULE_TO_START, label::SKILL => skill).record(seconds(now - ready));
}

/// `call` was written as it now is: an end is timed from the invoke, a retry counted.
pub(crate) fn moved(call: &InvocationRecord, name: &str, version: &str) {
    let outcome = match call.status {
        CallStatus::Succeeded => "succeeded",
        CallStatus::Failed => "failed",
        CallStatus::Cancelled => "cancelled",
        CallStatus::Pending if call.error.is_some() => {
            metrics::counter!(metric::CALL_RETRIES, label::SKILL => skill_label(name, version)).increment(1);
            return;
        }
        _ => return,
    };
    let Some(at) = call.finished_at else { return };
    let skill = skill_label(name, version);
    metrics::histogram!(metric::CALL_DURATION, label::SKILL => skill, label::OUTCOME => outcome)
        .record(seconds(at - call.created_at));
}

/// A person decided an approval asked for at `asked`: the time it waited, by decision.
pub(crate) fn decided(status: ApprovalStatus, asked: Time, now: Time) {
    metrics::histogram!(metric::DECISION_TIME, label::DECISION => status.as_str()).record(seconds(now - asked));
}

/// A claim cancelled a waiting call for `reason` (a lost basis's word).
pub(crate) fn cancelled_at_claim(reason: &'static str) {
    metrics::counter!(metric::CANCELLED_AT_CLAIM, label::REASON => reason).increment(1);
}

/// A sweep ended the lease of a running call.
pub(crate) fn lease_expired() {
    metrics::counter!(metric::LEASES_EXPIRED).increment(1);
}

fn seconds(elapsed: chrono::Duration) -> f64 {
    elapsed.to_std().map_or(0.0, |elapsed| elapsed.as_secs_f64())
}

impl crate::Engine {
    /// Reads what waits from the database into the gauges (at each scrape): open calls by state,
    /// pending ones by waiting reason, the backlog's age, the outcomes' wait, pending approvals,
    /// open sessions; the database connections this core holds. A
    /// reason no call has now reads 0, not its last value.
    ///
    /// # Errors
    /// When the database cannot be read (the gauges keep their last values).
    pub async fn record_backlog(&self) -> crate::error::Result<()> {
        let now = self.now();
        let backlog = self.store.backlog(now).await?;
        let (mut pending, mut running) = (0, 0);
        let reasons =
            [WaitingReason::Queued, WaitingReason::Backoff, WaitingReason::NoExecutor, WaitingReason::HeldForApproval];
        let mut waiting = reasons.map(|reason| (reason, 0));
        for group in &backlog.calls {
            if group.status == CallStatus::Running {
                running += group.count;
                continue;
            }
            pending += group.count;
            let reason = WaitingReason::of(group.held, group.later, !group.covered);
            if let Some(slot) = waiting.iter_mut().find(|(r, _)| *r == reason) {
                slot.1 += group.count;
            }
        }
        metrics::gauge!(metric::CALLS_OPEN, label::STATE => "pending").set(pending as f64);
        metrics::gauge!(metric::CALLS_OPEN, label::STATE => "running").set(running as f64);
        for (reason, count) in waiting {
            metrics::gauge!(metric::CALLS_WAITING, label::REASON => reason.as_str()).set(count as f64);
        }
        let age = backlog.oldest_due.map_or(0.0, |since| seconds(now - since));
        metrics::gauge!(metric::BACKLOG_AGE).set(age);
        let outcomes = backlog.oldest_outcome.map_or(0.0, |since| seconds(now - since));
        metrics::gauge!(metric::OUTCOMES_WAITING).set(outcomes);
        metrics::gauge!(metric::APPROVALS_PENDING).set(backlog.approvals_pending as f64);
        metrics::gauge!(metric::SESSIONS_ACTIVE).set(backlog.sessions_active as f64);
        for (pool, open, idle) in self.store.connections() {
            metrics::gauge!(metric::DB_CONNECTIONS, label::POOL => pool, label::STATE => "open").set(f64::from(open));
            metrics::gauge!(metric::DB_CONNECTIONS, label::POOL => pool, label::STATE => "idle").set(f64::from(idle));
        }
        Ok(())
    }
}
