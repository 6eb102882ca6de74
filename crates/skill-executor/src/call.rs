//! One claimed call: run it, keep its lease alive, report its outcome — or, once the lease is
//! lost, abort it and report nothing.

use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use skill_api::{CallStatus, ClaimOut, CompleteRequest, FailRequest, HeartbeatRequest, InvocationOut, ReportedError};
use skill_client::{Client, ClientError};
use tokio::sync::watch;
use tracing::Instrument as _;

use crate::{Options, Outcome, Runner};

/// How a call ended for this executor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum End {
    Completed,
    Failed,
    /// The lease was lost: aborted, nothing reported.
    Lost,
    /// Aborted at the end of the stop's grace period.
    Abandoned,
}

/// Whether the core says this executor no longer holds the call.
pub(crate) fn lease_lost(error: &ClientError) -> bool {
    matches!(error.code(), Some("stale_invocation_lease" | "not_found" | "session_not_active"))
}

/// Whether an error may pass: the core did not answer, or answered that it could not now.
pub(crate) fn transient(error: &ClientError) -> bool {
    match error {
        ClientError::Api(api) => api.retryable() || api.status >= 500,
        ClientError::Unreachable { .. } => true,
        ClientError::Unexpected { status, .. } => *status >= 500,
        _ => false,
    }
}

fn lease_end(invocation: &InvocationOut) -> DateTime<Utc> {
    invocation
        .lease_expires_at
        .as_deref()
        .and_then(|text| DateTime::parse_from_rfc3339(text).ok())
        .map_or_else(Utc::now, |end| end.to_utc())
}

fn until(end: DateTime<Utc>) -> Duration {
    (end - Utc::now()).to_std().unwrap_or_default()
}

/// Resolves once the flag is up (never, when its sender is gone without raising it).
pub(crate) async fn raised(flag: &mut watch::Receiver<bool>) {
    loop {
        if *flag.borrow_and_update() {
            return;
        }
        if flag.changed().await.is_err() {
            std::future::pending::<()>().await;
        }
    }
}

/// Runs `claimed` to its end.
pub(crate) async fn run_call(
    client: &Client,
    runner: &Arc<dyn Runner>,
    claimed: ClaimOut,
    session: Option<String>,
    options: &Options,
    mut abort: watch::Receiver<bool>,
) -> End {
    let id = claimed.invocation.id.clone();
    let fencing_token = claimed.invocation.fencing_token;
    let mut end = lease_end(&claimed.invocation);
    let span = skill_traces::spans::execution(
        &claimed.invocation.skill.name,
        &claimed.invocation.skill.version,
        &id,
        claimed.invocation.attempt,
        claimed.traceparent.as_deref(),
    );
    let mut running = if span.is_none() {
        tokio::spawn(runner.run(claimed))
    } else {
        tokio::spawn(runner.run(claimed).instrument(span.clone()))
    };
    let outcome = loop {
        let wait = options.heartbeat_every.min(until(end) / 3).max(Duration::from_millis(50));
        tokio::select! {
            finished = &mut running => break match finished {
                Ok(outcome) => outcome,
                Err(error) => Outcome::Fail(ReportedError {
                    code: "executor_error".to_owned(),
                    message: format!("the call's task ended without an outcome: {error}"),
                    retryable: true,
                    details: None,
                }),
            },
            () = raised(&mut abort) => {
                running.abort();
                tracing::warn!(invocation = %id, "still running at the end of the grace period: left to the queue");
                return End::Abandoned;
            }
            () = tokio::time::sleep(wait) => {
                if Utc::now() >= end {
                    running.abort();
                    tracing::warn!(invocation = %id, "the lease ran out without a heartbeat: the call is aborted, nothing is reported");
                    return End::Lost;
                }
                let beat = HeartbeatRequest { fencing_token, lease_seconds: None, session_id: session.clone() };
                match client.heartbeat(&id, &beat).instrument(span.clone()).await {
                    Ok(renewed) => end = lease_end(&renewed),
                    Err(error) if lease_lost(&error) => {
                        running.abort();
                        tracing::warn!(invocation = %id, code = error.code().unwrap_or_default(), "the lease was lost: the call is aborted, nothing is reported");
                        return End::Lost;
                    }
                    Err(error) => tracing::warn!(invocation = %id, error = %error, "a heartbeat failed; trying again"),
                }
            }
        }
    };
    if let Outcome::Fail(error) = &outcome {
        skill_traces::spans::failed(&span, &error.code);
    }
    report(client, &id, fencing_token, session, outcome, end).instrument(span).await
}

/// Reports `outcome`, trying again after transient failures until the lease ends.
async fn report(
    client: &Client,
    id: &str,
    fencing_token: i64,
    session_id: Option<String>,
    mut outcome: Outcome,
    end: DateTime<Utc>,
) -> End {
    let mut wait = Duration::from_millis(100);
    loop {
        let (sent, ended) = match &outcome {
            Outcome::Complete { output, cost } => {
                let request = CompleteRequest {
                    fencing_token,
                    output: output.clone(),
                    cost: cost.clone(),
                    session_id: session_id.clone(),
                };
                (client.complete(id, &request).await, End::Completed)
            }
            Outcome::Fail(error) => {
                let request = FailRequest { fencing_token, error: error.clone(), session_id: session_id.clone() };
                (client.fail(id, &request).await, End::Failed)
            }
        };
        match sent {
            // A rejected output is a failure the core recorded.
            Ok(call) => return if call.status == CallStatus::Succeeded { ended } else { End::Failed },
            Err(error) if lease_lost(&error) => {
                tracing::warn!(invocation = %id, code = error.code().unwrap_or_default(), "the lease was lost before the report: nothing is reported");
                return End::Lost;
            }
            Err(error) if transient(&error) && Utc::now() < end => {
                tracing::warn!(invocation = %id, error = %error, "the report did not arrive; trying again");
                tokio::time::sleep(wait.min(until(end))).await;
                wait = (wait * 2).min(Duration::from_secs(2));
            }
            Err(error) if matches!(outcome, Outcome::Complete { .. }) && !transient(&error) => {
                // The core refused the output itself (too large, not an object): a failure.
                outcome = Outcome::Fail(ReportedError {
                    code: "output_contract_violation".to_owned(),
                    message: format!("the core refused the output: {error}"),
                    retryable: false,
                    details: None,
                });
            }
            Err(error) => {
                tracing::error!(invocation = %id, error = %error, "the outcome could not be reported; the lease will end it");
                return End::Lost;
            }
        }
    }
}
