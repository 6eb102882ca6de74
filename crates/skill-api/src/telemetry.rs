//! What the core, the executors and the skill hosts export for operators: the names of their
//! Prometheus metrics and of the labels on them, one list for every binary. Names follow
//! Prometheus's advice (a unit suffix, `_total` on counters); labels take a bounded set of values
//! only — never an id, an input or a principal's name (`docs/observability.md` lists them all).

/// Metric names.
pub mod metric {
    /// Gauge, always 1: the binary's `component` and `version`.
    pub const BUILD_INFO: &str = "skills_build_info";
    /// Counter: HTTP requests answered, by `method`, `route` (the route's template) and `status`.
    pub const HTTP_REQUESTS: &str = "skills_http_requests_total";
    /// Counter: attempts handed to executors, by `skill`.
    pub const CALL_ATTEMPTS: &str = "skills_call_attempts_total";
    /// Counter: failed attempts that will be tried again, by `skill`.
    pub const CALL_RETRIES: &str = "skills_call_retries_total";
    /// Histogram: from when a call could run (its invoke, or the end of its backoff) to the claim
    /// that handed it to an executor, by `skill`.
    pub const SCHEDULE_TO_START: &str = "skills_call_schedule_to_start_seconds";
    /// Histogram: from a call's invoke to its end, by `skill` and `outcome`.
    pub const CALL_DURATION: &str = "skills_call_duration_seconds";
    /// Histogram: from an approval's request to a person's decision, by `decision` (`approved`,
    /// `rejected`).
    pub const DECISION_TIME: &str = "skills_approval_decision_seconds";
    /// Counter: waiting calls a claim cancelled because their basis was gone, by `reason`.
    pub const CANCELLED_AT_CLAIM: &str = "skills_calls_cancelled_at_claim_total";
    /// Counter: running calls whose lease ran out before their executor reported.
    pub const LEASES_EXPIRED: &str = "skills_leases_expired_total";
    /// Gauge, read from the database at each scrape: open calls by `state` (`pending`,
    /// `running`).
    pub const CALLS_OPEN: &str = "skills_calls_open";
    /// Gauge, read at each scrape: pending calls by `reason` (`queued`, `backoff`, `no_executor`,
    /// `held_for_approval`: the waiting reasons a call's page shows).
    pub const CALLS_WAITING: &str = "skills_calls_waiting";
    /// Gauge, read at each scrape: how long the oldest call that could run has waited (0 when
    /// none waits).
    pub const BACKLOG_AGE: &str = "skills_backlog_age_seconds";
    /// Gauge, read at each scrape: approvals not decided yet.
    pub const APPROVALS_PENDING: &str = "skills_approvals_pending";
    /// Gauge, read at each scrape: executor sessions open.
    pub const SESSIONS_ACTIVE: &str = "skills_executor_sessions_active";
    /// Gauge, read at each scrape: the database connections the core holds, by `pool` (`main` on
    /// PostgreSQL; `reader`, `writer`, `calls` on SQLite) and `state` (`open`, `idle`).
    pub const DB_CONNECTIONS: &str = "skills_db_connections";
    /// Counter: scrapes whose reading of the database failed (the gauges keep their last values).
    pub const SCRAPE_ERRORS: &str = "skills_scrape_errors_total";
    /// Histogram: how long a pass of one of the core's workers took, by `worker` (`outcomes`,
    /// `executions`, `agent_requests`, `rules`, `processes`, `leases`).
    pub const WORKER_PASS: &str = "skills_worker_pass_seconds";
    /// Gauge: when a worker's last pass ended (Unix seconds): `time() - it` is how far it lags.
    pub const WORKER_LAST_PASS: &str = "skills_worker_last_pass_timestamp_seconds";
    /// Counter: a worker's passes that failed (it runs again shortly), by `worker`.
    pub const WORKER_ERRORS: &str = "skills_worker_errors_total";
    /// Gauge, read at each scrape: how long the oldest decided approval's outcome has waited to
    /// be carried out (0 when none waits).
    pub const OUTCOMES_WAITING: &str = "skills_outcomes_waiting_seconds";
    /// Counter: calls a skill host ran, by `skill` and `outcome` (`succeeded`, `refused`: the
    /// skill's own error, `retryable`, `crashed`).
    pub const HOST_CALLS: &str = "skills_host_calls_total";
    /// Histogram: how long a skill host's calls ran, by `skill` and `outcome`.
    pub const HOST_CALL_DURATION: &str = "skills_host_call_duration_seconds";
    /// Gauge: the executor's slots, by `state` (`all`, `used`).
    pub const EXECUTOR_SLOTS: &str = "skills_executor_slots";
    /// Counter: calls an executor ran, by `outcome` (`completed`, `failed`, `lost`: its lease
    /// ended first, `abandoned`: still running when its stop's grace ended).
    pub const EXECUTOR_CALLS: &str = "skills_executor_calls_total";
}

/// Label names.
pub mod label {
    /// The binary: `core`, `executor`, `host`.
    pub const COMPONENT: &str = "component";
    /// The binary's version.
    pub const VERSION: &str = "version";
    /// An HTTP method.
    pub const METHOD: &str = "method";
    /// A route's template (`/api/v1/skill-invocations/{id}`), `unmatched` when none matched.
    pub const ROUTE: &str = "route";
    /// An HTTP status code.
    pub const STATUS: &str = "status";
    /// `name@version` of a skill, for the first [`super::MAX_SKILL_LABELS`] seen; `other` after.
    pub const SKILL: &str = "skill";
    /// How a call ended: `succeeded`, `failed`, `cancelled`.
    pub const OUTCOME: &str = "outcome";
    /// Why a claim cancelled a call (a lost basis's word).
    pub const REASON: &str = "reason";
    /// A state of what is counted.
    pub const STATE: &str = "state";
    /// A pool of database connections.
    pub const POOL: &str = "pool";
    /// One of the core's workers.
    pub const WORKER: &str = "worker";
    /// A person's decision: `approved`, `rejected`.
    pub const DECISION: &str = "decision";
}

/// How many skill versions get a label of their own; the rest share [`OTHER`], so 100 skills
/// and more keep a scrape within a thousand series.
pub const MAX_SKILL_LABELS: usize = 16;

/// The label value of whatever is past a bound.
pub const OTHER: &str = "other";

/// The upper bounds (seconds) of the latency histograms' buckets: from a fast local call to a
/// slow remote one; few, because every bucket is a series per label set.
pub const LATENCY_BUCKETS: [f64; 8] = [0.005, 0.025, 0.1, 0.5, 2.5, 10.0, 60.0, 300.0];

/// The trace id of a well-formed `traceparent` (32 lower-case hex digits, not all zero).
pub fn trace_id(traceparent: &str) -> Option<&str> {
    let mut parts = traceparent.split('-');
    let (version, trace, span, flags) = (parts.next()?, parts.next()?, parts.next()?, parts.next()?);
    let hex =
        |text: &str, len: usize| text.len() == len && text.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'));
    let version_ok = hex(version, 2) && version != "ff" && (version != "00" || parts.next().is_none());
    let ok = version_ok
        && hex(trace, 32)
        && trace.bytes().any(|b| b != b'0')
        && hex(span, 16)
        && span.bytes().any(|b| b != b'0')
        && hex(flags, 2);
    ok.then_some(trace)
}

#[cfg(test)]
mod tests {
    #[test]
    fn only_well_formed_parents_name_a_trace() {
        let good = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
        assert_eq!(super::trace_id(good), Some("4bf92f3577b34da6a3ce929d0e0e4736"));
        assert_eq!(
            super::trace_id("01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00-later"),
            Some("4bf92f3577b34da6a3ce929d0e0e4736")
        );
        for bad in [
            "",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra",
            "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0x",
        ] {
            assert_eq!(super::trace_id(bad), None, "{bad}");
        }
    }
}
