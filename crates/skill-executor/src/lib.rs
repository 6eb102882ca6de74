//! The executor loop: what every executor of the platform does around the one thing that differs
//! between them, running a call. A [`Runner`] says what it runs (protocols, local entrypoints,
//! origins, audiences) and runs one claimed call; [`run`] does the rest:
//!
//! - opens an executor session and keeps it alive (a new one when the core lost it);
//! - claims with as many calls as it has free slots of `concurrency` (`maxCalls`), each call on
//!   its own task;
//! - heartbeats every `min(interval, remaining / 3)` (at least 50 ms) while the call runs;
//! - on a lost lease (`stale_invocation_lease`, `not_found`, `session_not_active`, or the lease
//!   time passing without a heartbeat) aborts the call and reports nothing;
//! - reports the outcome (`:complete` or `:fail`); a 5xx or a dropped connection is never a
//!   verdict: it backs off and tries again until the lease ends;
//! - on stop, claims nothing more, lets running calls finish within the grace period, aborts the
//!   rest and closes the session, which puts them back in the queue.
//!
//! | what | where |
//! |---|---|
//! | what an executor runs and how | [`Runner`], [`Declared`], [`Outcome`] |
//! | the loop | [`run`], [`Options`], [`Stats`] |

mod call;
mod session;
mod worker;

use std::time::Duration;

use futures::future::BoxFuture;
use serde_json::{Map, Value};
use skill_api::{ClaimOut, ReportedError};

pub use worker::run;

/// What an executor declares when it claims.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Declared {
    /// `local`, `http`, `mcp`.
    pub protocols: Vec<String>,
    pub local_entrypoints: Vec<String>,
    pub http_origins: Vec<String>,
    pub mcp_endpoints: Vec<String>,
    pub audiences: Vec<String>,
    /// Session capabilities (`skills.protocol.local`, …).
    pub capabilities: Vec<String>,
}

/// How a call ended at the executor.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// The call's output (the core checks it against the contract) and its cost, if reported.
    Complete {
        output: Map<String, Value>,
        cost: Option<Map<String, Value>>,
    },
    Fail(ReportedError),
}

/// Runs calls of one kind (local skills of a host binary, remote http or mcp endpoints).
pub trait Runner: Send + Sync + 'static {
    fn declared(&self) -> Declared;
    /// Runs one claimed call to its outcome. The future is dropped when the lease is lost or
    /// the stop's grace period ends, so what it does must be safe to abandon.
    fn run(&self, claimed: ClaimOut) -> BoxFuture<'static, Outcome>;
}

/// How the loop runs.
#[derive(Debug, Clone)]
pub struct Options {
    /// Calls run at once.
    pub concurrency: usize,
    /// The longest pause between claims when the queue is empty.
    pub idle_wait: Duration,
    /// The longest pause between heartbeats of a running call.
    pub heartbeat_every: Duration,
    /// The session's life without a heartbeat, in seconds (10 to 600).
    pub session_ttl_seconds: u32,
    /// How long running calls may finish after the stop.
    pub grace: Duration,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            concurrency: 1,
            idle_wait: Duration::from_secs(1),
            heartbeat_every: Duration::from_secs(10),
            session_ttl_seconds: 60,
            grace: Duration::from_secs(30),
        }
    }
}

/// What a run of the loop did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stats {
    pub completed: u64,
    pub failed: u64,
    /// Calls whose lease was lost: aborted, nothing reported.
    pub lost: u64,
    /// Calls still running at the end of the grace period: aborted, back to the queue.
    pub abandoned: u64,
}
