//! What the core's own workers report of each pass (through the `metrics` facade: nothing
//! without a recorder): how long it took, when it last ended — so `time() - last pass` is how far
//! a worker lags, and a stalled one shows — and the passes that failed.

use std::time::{Instant, SystemTime, UNIX_EPOCH};

use skill_api::telemetry::{label, metric};

/// A pass of `worker` that began at `started` ended, `ok` or not.
pub(crate) fn ended(worker: &'static str, started: Instant, ok: bool) {
    metrics::histogram!(metric::WORKER_PASS, label::WORKER => worker).record(started.elapsed().as_secs_f64());
    let now = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0.0, |since| since.as_secs_f64());
    metrics::gauge!(metric::WORKER_LAST_PASS, label::WORKER => worker).set(now);
    if !ok {
        metrics::counter!(metric::WORKER_ERRORS, label::WORKER => worker).increment(1);
    }
}
