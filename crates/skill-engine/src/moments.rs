//! The moments the engine's workers wait for, and whom each one wakes — one table, so a moment
//! reaches every worker that waits for it from every place it happens. "A call moved" in
//! particular is said in one place ([`Moments::call_moved`]) by every path that ends a call or
//! puts it back in the queue: completion, failure, cancellation, lease expiry, a cancel at claim,
//! a closed session, a disabled principal.
//!
//! | moment | wakes |
//! |---|---|
//! | a call was queued here | one waiting claim; the task telling other cores |
//! | claims must look again (a drain, lost wake-ups) | every waiting claim |
//! | there may be more calls than wake-ups said | the next waiting claim |
//! | a call moved back to pending | one waiting claim; those waiting for calls' ends |
//! | a call ended | those waiting for calls' ends; its task's outcome worker, its rule's evaluation, its process step — whichever it has |
//! | a fact was recorded | the rule evaluation; the process worker |
//! | actions or an execution are due | the outcome worker |
//! | an instance may move | the process worker |
//!
//! Every wake-up is a hint: each worker also looks again on its own, for what happened through
//! other cores.

use std::time::Duration;

use skill_api::{CallStatus, RequesterKind};
use skill_store::records::InvocationRecord;
use tokio::sync::Notify;
use tokio::sync::futures::Notified;

/// The subscriptions of one engine (shared by its clones).
#[derive(Debug, Default)]
pub(crate) struct Moments {
    /// Claims waiting for a call.
    queued: Notify,
    /// The next waiting claim, told there may be more calls than wake-ups said.
    more: Notify,
    /// The task that tells the other cores sharing the database that calls were queued here.
    queued_here: Notify,
    /// Those waiting for a call's end.
    ended: Notify,
    /// The outcome worker.
    outcomes_due: Notify,
    /// The rule evaluation.
    rules_due: Notify,
    /// The process worker.
    processes_due: Notify,
}

impl Moments {
    /// A call was queued through this engine.
    pub(crate) fn call_queued(&self) {
        self.queued.notify_one();
        self.queued_here.notify_one();
    }

    /// Every waiting claim looks again (an executor drains, other cores' wake-ups were lost).
    pub(crate) fn claims_look_again(&self) {
        self.queued.notify_waiters();
    }

    /// There may be more calls than the wake-ups said (a look found one; another core told of
    /// calls queued there): the next waiting claim looks.
    pub(crate) fn more_calls(&self) {
        self.more.notify_one();
    }

    /// `call` (of `name@version`) moved to an end, or back to the queue for another attempt:
    /// logs it, counts it, and wakes whoever waits for it.
    pub(crate) fn call_moved(&self, call: &InvocationRecord, name: &str, version: &str) {
        crate::ended::log(call, name, version);
        self.ended.notify_waiters();
        if call.status == CallStatus::Pending {
            self.queued.notify_one();
            return;
        }
        for due in self.waiting_for_end(call).into_iter().flatten() {
            due.notify_one();
        }
    }

    /// The workers `call`'s end concerns, by what it belongs to: its task's outcome or
    /// execution, its rule's evaluation, its process step.
    fn waiting_for_end(&self, call: &InvocationRecord) -> [Option<&Notify>; 3] {
        [
            call.task_id.is_some().then_some(&self.outcomes_due),
            (call.requested_by_kind == RequesterKind::Rule).then_some(&self.rules_due),
            is_process_call(call).then_some(&self.processes_due),
        ]
    }

    /// A fact was recorded through this engine.
    pub(crate) fn fact_recorded(&self) {
        self.rules_due.notify_one();
        self.processes_due.notify_one();
    }

    /// A decision, a retry or new work queued actions or an execution.
    pub(crate) fn outcomes_due(&self) {
        self.outcomes_due.notify_one();
    }

    /// An instance started or something it may wait for happened.
    pub(crate) fn processes_due(&self) {
        self.processes_due.notify_one();
    }

    /// A future that completes at the next call queued here or look asked of every claim.
    /// Made before looking, so a call queued in between is not missed.
    pub(crate) fn queued(&self) -> Notified<'_> {
        self.queued.notified()
    }

    /// A future that completes when the next waiting claim is told there may be more calls.
    pub(crate) fn more(&self) -> Notified<'_> {
        self.more.notified()
    }

    /// Waits until a call was queued here since the last time.
    pub(crate) async fn queued_here(&self) {
        self.queued_here.notified().await;
    }

    /// A future that completes when a call moves through this engine.
    pub(crate) fn ended(&self) -> Notified<'_> {
        self.ended.notified()
    }

    /// Waits until actions or an execution are due, or `within` passed.
    pub(crate) async fn wait_for_outcomes(&self, within: Duration) {
        let _ = tokio::time::timeout(within, self.outcomes_due.notified()).await;
    }

    /// Waits until a rule may have something to evaluate, or `within` passed.
    pub(crate) async fn wait_for_rules(&self, within: Duration) {
        let _ = tokio::time::timeout(within, self.rules_due.notified()).await;
    }

    /// Waits until an instance may move, or `within` passed.
    pub(crate) async fn wait_for_processes(&self, within: Duration) {
        let _ = tokio::time::timeout(within, self.processes_due.notified()).await;
    }
}

/// Whether a process step made the call (its key is the step's).
pub(crate) fn is_process_call(call: &InvocationRecord) -> bool {
    call.idempotency_key.as_deref().is_some_and(|key| key.starts_with("process:"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(status: CallStatus, task: bool, by: RequesterKind, key: Option<&str>) -> InvocationRecord {
        let mut call = crate::basis::tests::call(None);
        call.status = status;
        call.task_id = task.then(|| "task-1".to_owned());
        call.requested_by_kind = by;
        call.idempotency_key = key.map(str::to_owned);
        call
    }

    fn woken(moments: &Moments, call: &InvocationRecord) -> [bool; 3] {
        moments.waiting_for_end(call).map(|due| due.is_some())
    }

    #[test]
    fn a_call_that_ended_wakes_every_worker_it_belongs_to() {
        let moments = Moments::default();
        // A failed call of a rule's task: the outcome worker and the rule evaluation both.
        let failed = call(CallStatus::Failed, true, RequesterKind::Rule, None);
        assert_eq!(woken(&moments, &failed), [true, true, false]);
        let step = call(CallStatus::Succeeded, false, RequesterKind::Principal, Some("process:i-1:2"));
        assert_eq!(woken(&moments, &step), [false, false, true]);
        let plain = call(CallStatus::Cancelled, false, RequesterKind::Principal, Some("mine"));
        assert_eq!(woken(&moments, &plain), [false, false, false]);
    }

    /// Whether `notify` holds a wake-up (a waiter made now completes at once).
    fn holds(notify: &Notify) -> bool {
        let notified = notify.notified();
        tokio::pin!(notified);
        notified.as_mut().enable()
    }

    #[test]
    fn a_failed_call_of_a_rule_with_a_task_wakes_the_rule_evaluation_too() {
        let moments = Moments::default();
        moments.call_moved(&call(CallStatus::Failed, true, RequesterKind::Rule, None), "a", "1");
        assert!(holds(&moments.rules_due), "the rule's evaluation was woken");
        assert!(holds(&moments.outcomes_due), "the task's outcome worker was woken");
        assert!(!holds(&moments.processes_due), "no process step waits for it");
        assert!(!holds(&moments.queued), "nothing went back to the queue");
    }

    #[test]
    fn a_call_back_in_the_queue_wakes_a_claim_not_the_workers() {
        let moments = Moments::default();
        moments.call_moved(&call(CallStatus::Pending, true, RequesterKind::Rule, None), "a", "1");
        assert!(holds(&moments.queued), "a claim looks");
        assert!(!holds(&moments.rules_due) && !holds(&moments.outcomes_due), "the workers wait for the call's end");
    }
}
