//! A skill host with one skill per behaviour a host must carry over its transports: an echo that
//! reports a cost, the call's own context, a slow call, a refusal, a retryable failure, crashes,
//! a namespaced external write, and one effect per idempotency key (the fault run's `record`).
//! The host tests, the Python interop tests, the P2/P3/P4 benchmarks and the fault run use it.
//!
//! ```text
//! cargo run -p skill-host --example demo_host -- serve http --port 8080 --allow-anonymous
//! ```

mod skills;

skill_host::host_main!();
