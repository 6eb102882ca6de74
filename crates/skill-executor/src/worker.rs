//! The loop: a session, a few claimers sharing `concurrency` slots — each claim asks for as many
//! calls as there are free slots (`maxCalls`), and each call runs on its own task holding its
//! slot — and the stop.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use skill_api::telemetry::{label, metric};
use skill_api::{ClaimRequest, MAX_CLAIM_CALLS};
use skill_client::{Client, ClientError};
use tokio::sync::{Semaphore, watch};

use crate::call::{End, raised, run_call, transient};
use crate::session::Sessions;
use crate::{Options, Runner, Stats};

/// How long one claim waits at the core for a call.
const CLAIM_WAIT_SECONDS: u32 = 10;
/// How many claims an executor keeps at the core at once: one waits while the other's calls are
/// handed over.
const CLAIMERS: usize = 2;
/// How long a claim still waiting at the stop may take to answer (the drained session makes the
/// core answer at once).
const DRAINED_CLAIM_WAIT: Duration = Duration::from_secs(2);

#[derive(Default)]
struct Counters {
    completed: AtomicU64,
    failed: AtomicU64,
    lost: AtomicU64,
    abandoned: AtomicU64,
}

impl Counters {
    fn count(&self, end: End) {
        let (counter, outcome) = match end {
            End::Completed => (&self.completed, "completed"),
            End::Failed => (&self.failed, "failed"),
            End::Lost => (&self.lost, "lost"),
            End::Abandoned => (&self.abandoned, "abandoned"),
        };
        counter.fetch_add(1, Ordering::Relaxed);
        metrics::counter!(metric::EXECUTOR_CALLS, label::OUTCOME => outcome).increment(1);
    }

    fn stats(&self) -> Stats {
        Stats {
            completed: self.completed.load(Ordering::Relaxed),
            failed: self.failed.load(Ordering::Relaxed),
            lost: self.lost.load(Ordering::Relaxed),
            abandoned: self.abandoned.load(Ordering::Relaxed),
        }
    }
}

/// Claims and runs calls for `runner` from the core `client` speaks to, until `stop` resolves;
/// then finishes within `options.grace` and closes the session. An error ends the loop only
/// when going on cannot help: the token is refused, the executor lacks `skills.execute`, or the
/// core refuses what it declares.
pub async fn run(
    client: Client,
    runner: Arc<dyn Runner>,
    options: Options,
    stop: impl Future<Output = ()>,
) -> Result<Stats, ClientError> {
    // The loop does its own retrying: a call's reports must not wait on the client's. A report
    // is safe to repeat by its fencing token, and a claim is never repeated, so no key is sent
    // (the core keeps no answers for them).
    // With traces on, a request made inside a call's span (its heartbeats, its report) carries
    // the span's context, so the core's span of it joins the call's trace.
    let client = client.with_retries(0).without_keys().with_trace_context(skill_traces::current);
    let declared = runner.declared();
    let sessions = Arc::new(Sessions::new(client.clone(), declared.capabilities.clone(), options.session_ttl_seconds));
    let keep_alive = {
        let sessions = Arc::clone(&sessions);
        tokio::spawn(async move { sessions.keep_alive().await })
    };
    let (stopping, stopping_seen) = watch::channel(false);
    let (abort, abort_seen) = watch::channel(false);
    let (fatal_tx, mut fatal_rx) = tokio::sync::mpsc::channel::<ClientError>(1);
    let counters = Arc::new(Counters::default());
    let claim = ClaimRequest {
        protocols: declared.protocols.clone(),
        local_entrypoints: declared.local_entrypoints.clone(),
        http_origins: declared.http_origins.clone(),
        mcp_endpoints: declared.mcp_endpoints.clone(),
        audiences: declared.audiences.clone(),
        // The core holds the claim until a call comes (or this passes), so a call starts at once.
        wait_seconds: Some(CLAIM_WAIT_SECONDS),
        ..ClaimRequest::default()
    };
    let mut workers = tokio::task::JoinSet::new();
    let slots = Arc::new(Semaphore::new(options.concurrency.max(1)));
    metrics::gauge!(metric::EXECUTOR_SLOTS, label::STATE => "all").set(options.concurrency.max(1) as f64);
    for _ in 0..options.concurrency.clamp(1, CLAIMERS) {
        let worker = Worker {
            slots: Arc::clone(&slots),
            client: client.clone(),
            runner: Arc::clone(&runner),
            sessions: Arc::clone(&sessions),
            options: options.clone(),
            claim: claim.clone(),
            stopping: stopping_seen.clone(),
            abort: abort_seen.clone(),
            counters: Arc::clone(&counters),
            fatal: fatal_tx.clone(),
        };
        workers.spawn(worker.work());
    }
    drop(fatal_tx);
    let fatal = tokio::select! {
        () = stop => None,
        error = fatal_rx.recv() => error,
    };
    // Drained first, so the claims still waiting answer at once and take nothing more; then the
    // workers stop.
    sessions.drain().await;
    let _ = stopping.send(true);
    let finished = async { while workers.join_next().await.is_some() {} };
    if tokio::time::timeout(options.grace, finished).await.is_err() {
        let _ = abort.send(true);
        while workers.join_next().await.is_some() {}
    }
    keep_alive.abort();
    sessions.close().await;
    let stats = counters.stats();
    tracing::info!(
        completed = stats.completed,
        failed = stats.failed,
        lost = stats.lost,
        abandoned = stats.abandoned,
        "executor stopped"
    );
    match fatal {
        Some(error) => Err(error),
        None => Ok(stats),
    }
}

struct Worker {
    /// The executor's free slots: one per call it may run at once.
    slots: Arc<Semaphore>,
    client: Client,
    runner: Arc<dyn Runner>,
    sessions: Arc<Sessions>,
    options: Options,
    claim: ClaimRequest,
    stopping: watch::Receiver<bool>,
    abort: watch::Receiver<bool>,
    counters: Arc<Counters>,
    fatal: tokio::sync::mpsc::Sender<ClientError>,
}

impl Worker {
    async fn work(mut self) {
        let mut calls = tokio::task::JoinSet::new();
        self.claim_and_run(&mut calls).await;
        // The calls still running end on their own, or at the end of the grace period.
        while calls.join_next().await.is_some() {}
    }

    async fn claim_and_run(&mut self, calls: &mut tokio::task::JoinSet<()>) {
        let mut idle = Duration::from_millis(10);
        let mut trouble = Duration::from_millis(100);
        while !*self.stopping.borrow() {
            // A free slot first, then every other free one: a claim takes only what starts at once.
            let mut slots = tokio::select! {
                slot = Arc::clone(&self.slots).acquire_owned() => match slot {
                    Ok(slot) => slot,
                    Err(_) => return,
                },
                () = raised(&mut self.stopping) => return,
            };
            while calls.try_join_next().is_some() {}
            let free = self.slots.available_permits().min(MAX_CLAIM_CALLS as usize - 1);
            if free > 0
                && let Ok(more) = Arc::clone(&self.slots).try_acquire_many_owned(free as u32)
            {
                slots.merge(more);
            }
            let session = match self.sessions.current().await {
                Ok(session) => session,
                Err(error) => {
                    drop(slots);
                    if !self.pause_after(error, &mut trouble).await {
                        return;
                    }
                    continue;
                }
            };
            let most = slots.num_permits() as u32;
            let request = ClaimRequest {
                session_id: Some(session.clone()),
                max_calls: (most > 1).then_some(most),
                ..self.claim.clone()
            };
            // At the stop the session is drained: a waiting claim answers at once, with the calls
            // it took in that moment, if any, which then run within the grace period. One that
            // does not answer soon (the core unreachable) is given up: closing the session puts
            // what it took back in the queue.
            let client = self.client.clone();
            let claimed = {
                let claim = client.claim(&request);
                tokio::pin!(claim);
                tokio::select! {
                    claimed = &mut claim => claimed,
                    () = raised(&mut self.stopping) => {
                        match tokio::time::timeout(DRAINED_CLAIM_WAIT, &mut claim).await {
                            Ok(claimed) => claimed,
                            Err(_) => return,
                        }
                    }
                }
            };
            match claimed {
                Ok(Some(mut first)) => {
                    idle = Duration::from_millis(10);
                    trouble = Duration::from_millis(100);
                    let more = std::mem::take(&mut first.more);
                    for call in std::iter::once(first).chain(more) {
                        // Each call holds one slot until it ends; the slots left over are freed.
                        let slot = slots.split(1);
                        let (client, runner, options) =
                            (self.client.clone(), Arc::clone(&self.runner), self.options.clone());
                        let (session, abort, counters) =
                            (session.clone(), self.abort.clone(), Arc::clone(&self.counters));
                        calls.spawn(async move {
                            let used = metrics::gauge!(metric::EXECUTOR_SLOTS, label::STATE => "used");
                            used.increment(1.0);
                            let end = run_call(&client, &runner, call, Some(session), &options, abort).await;
                            counters.count(end);
                            used.decrement(1.0);
                            drop(slot);
                        });
                    }
                }
                Ok(None) => {
                    drop(slots);
                    trouble = Duration::from_millis(100);
                    self.sleep(idle).await;
                    idle = (idle * 2).min(self.options.idle_wait);
                }
                Err(error) if matches!(error.code(), Some("session_not_active" | "not_found")) => {
                    self.sessions.lost(&session);
                }
                Err(error) => {
                    drop(slots);
                    if !self.pause_after(error, &mut trouble).await {
                        return;
                    }
                }
            }
        }
    }

    /// After a failed request: wait and go on when it may pass (`true`), else report it as the
    /// reason the loop ends.
    async fn pause_after(&mut self, error: ClientError, wait: &mut Duration) -> bool {
        if !transient(&error) {
            tracing::error!(error = %error, "the core refuses this executor; stopping");
            let _ = self.fatal.try_send(error);
            return false;
        }
        tracing::warn!(error = %error, "the core is not answering; trying again");
        self.sleep(*wait).await;
        *wait = (*wait * 2).min(Duration::from_secs(5));
        true
    }

    /// Sleeps `wait`, or less when the stop comes.
    async fn sleep(&mut self, wait: Duration) {
        let _ = tokio::time::timeout(wait, raised(&mut self.stopping)).await;
    }
}
