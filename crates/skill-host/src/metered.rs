//! What a host counts of the calls it runs, through the `metrics` facade (a no-op unless the
//! host serves `--metrics-listen`): each call by skill and outcome, with its time.

use std::time::Instant;

use skill_api::telemetry::{label, metric};
use skill_sdk::{Skill, SkillError, runtime};

/// Runs `call` (of `skill`) and counts it.
pub(crate) async fn timed<F>(skill: &Skill, call: F) -> Result<runtime::Outcome, SkillError>
where
    F: std::future::Future<Output = Result<runtime::Outcome, SkillError>>,
{
    let started = Instant::now();
    let result = call.await;
    let outcome = match &result {
        Ok(_) => "succeeded",
        Err(error) if runtime::is_crash(error) => "crashed",
        Err(error) if error.retryable() => "retryable",
        Err(_) => "refused",
    };
    let skill = skill.reference();
    metrics::counter!(metric::HOST_CALLS, label::SKILL => skill.clone(), label::OUTCOME => outcome).increment(1);
    metrics::histogram!(metric::HOST_CALL_DURATION, label::SKILL => skill, label::OUTCOME => outcome)
        .record(started.elapsed().as_secs_f64());
    result
}
