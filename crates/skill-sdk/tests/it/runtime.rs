//! The invocation path: deadlines enforced for async and sync skills, settings and
//! configuration per call, the call's span, conversion of foreign errors, and the publication
//! check of the testing kit.

use crate::logs;

use std::time::{Duration, Instant};

use logs::with_logs;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, json};
use skill_sdk::{SkillContext, SkillError, package_settings, skill, testing};

#[derive(Debug, Deserialize, JsonSchema)]
pub(crate) struct Wait {
    /// Milliseconds to sleep.
    pub ms: u64,
}

#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct Report {
    pub remaining_ms: u64,
    pub late: bool,
    pub settings: Map<String, serde_json::Value>,
    pub config: Option<String>,
}

#[skill("rt.sleep_async", version = "1", side_effects = "none", risk = "low", timeout = 1)]
pub(crate) async fn sleep_async(inputs: Wait, ctx: SkillContext) -> Result<Report, SkillError> {
    tokio::time::sleep(Duration::from_millis(inputs.ms)).await;
    Ok(Report {
        remaining_ms: ctx.remaining().as_millis() as u64,
        late: ctx.check_deadline().is_err(),
        settings: Map::new(),
        config: None,
    })
}

#[skill("rt.sleep_sync", version = "1", side_effects = "none", risk = "low", timeout = 1)]
pub(crate) fn sleep_sync(inputs: Wait, ctx: SkillContext) -> Result<Report, SkillError> {
    std::thread::sleep(Duration::from_millis(inputs.ms));
    Ok(Report {
        remaining_ms: ctx.remaining().as_millis() as u64,
        late: ctx.check_deadline().is_err(),
        settings: Map::new(),
        config: None,
    })
}

#[skill("rt.context", version = "1", side_effects = "none", risk = "low")]
pub(crate) fn context(_inputs: Wait, ctx: SkillContext) -> Result<Report, SkillError> {
    let mut settings = ctx.settings();
    settings.insert("changed".into(), json!(true));
    tracing::info!(answer = 42, "inside the skill");
    Ok(Report {
        remaining_ms: ctx.remaining().as_millis() as u64,
        late: false,
        settings: ctx.settings(),
        config: ctx.config("RT_PARAM", Some("the default")),
    })
}

#[skill("rt.fails", version = "1", side_effects = "none", risk = "low")]
pub(crate) fn fails(_inputs: Wait) -> Result<Report, SkillError> {
    let parsed: u32 = "not a number, and private text".parse()?;
    Err(SkillError::new("never").with_detail("parsed", json!(parsed)))
}

#[test]
fn an_async_skill_is_cancelled_at_its_deadline() {
    let started = Instant::now();
    let error = testing::invoke(&sleep_async::SKILL, json!({"ms": 10_000})).expect_err("times out");
    let elapsed = started.elapsed();
    assert_eq!((error.code(), error.retryable()), ("timeout", true));
    assert!(elapsed >= Duration::from_millis(1000), "not before the deadline: {elapsed:?}");
    // The skill would sleep 10 s: ending before that is ending at the deadline, however slow the
    // machine.
    assert!(elapsed < Duration::from_millis(10_000), "at the deadline, not at the end of the sleep: {elapsed:?}");
}

#[test]
fn a_sync_skill_gets_its_error_at_the_deadline_while_its_thread_is_left_behind() {
    let started = Instant::now();
    let error = testing::invoke(&sleep_sync::SKILL, json!({"ms": 10_000})).expect_err("times out");
    let elapsed = started.elapsed();
    assert_eq!(error.code(), "timeout");
    assert!(elapsed < Duration::from_millis(10_000), "the caller does not wait for the thread: {elapsed:?}");
}

#[test]
fn remaining_counts_from_the_start_of_the_call() {
    let outcome = testing::invoke(&sleep_async::SKILL, json!({"ms": 300})).expect("in time");
    let remaining = outcome.outputs["remaining_ms"].as_u64().expect("a number");
    // At least 300 ms of the 1 s went on the sleep; the call ended in time, so some was left.
    assert!((1..=700).contains(&remaining), "at most 700 ms left of 1 s after a 300 ms sleep: {remaining}");
    assert_eq!(outcome.outputs["late"], false);
}

#[test]
fn settings_are_a_private_copy_per_call() {
    let values: Map<String, serde_json::Value> =
        json!({"region": "north", "limits": {"daily": 5}}).as_object().expect("object").clone();
    let outcome = testing::call(&context::SKILL).settings(values.clone()).invoke(json!({"ms": 0})).expect("runs");
    assert_eq!(outcome.outputs["settings"], json!(values), "a change of one copy is not seen in the next");
}

#[test]
fn package_settings_take_only_non_empty_values() {
    let document = json!({"package": "claims", "version": "1", "schemaRevision": 3, "values": {"a": 1}});
    assert_eq!(package_settings(&document), json!({"a": 1}).as_object().expect("object").clone());
    for raw in [
        json!(null),
        json!({}),
        json!("x"),
        json!([1]),
        json!({"values": null}),
        json!({"values": []}),
        json!({"values": "x"}),
        json!({"values": {}}),
    ] {
        assert!(package_settings(&raw).is_empty(), "{raw}");
    }
}

#[test]
fn config_reads_the_calls_environment_or_the_default() {
    let set = testing::call(&context::SKILL).env("RT_PARAM", "").invoke(json!({"ms": 0})).expect("runs");
    assert_eq!(set.outputs["config"], "", "an empty value is returned as it is");
    let unset = testing::call(&context::SKILL).no_env().invoke(json!({"ms": 0})).expect("runs");
    assert_eq!(unset.outputs["config"], "the default");
}

#[test]
fn the_skill_runs_inside_a_span_naming_the_call() {
    let logs = with_logs(|| {
        testing::call(&context::SKILL).idempotency_key("k").invoke(json!({"ms": 0})).expect("runs");
    });
    let line = logs.lines().find(|l| l.contains("inside the skill")).unwrap_or_else(|| panic!("logged: {logs}"));
    assert!(
        line.contains("skill=rt.context@1") && line.contains("invocation_id=test") && line.contains("answer=42"),
        "{line}"
    );
}

#[test]
fn a_foreign_error_reaches_the_caller_as_its_type_and_the_log_in_full() {
    let mut result = None;
    let logs = with_logs(|| result = Some(testing::invoke(&fails::SKILL, json!({"ms": 0}))));
    let error = result.expect("ran").expect_err("fails");
    assert_eq!((error.code(), error.message()), ("skill_error", "core::num::error::ParseIntError"));
    assert_eq!(error.skill_name(), "rt.fails");
    assert!(!serde_json::to_string(&error).expect("json").contains("private"), "the caller never sees the text");
    assert!(logs.contains("invalid digit found in string"), "the log has the whole error: {logs}");
}

#[test]
fn check_contract_runs_the_publication_checks() {
    let checked = testing::check_contract(&context::SKILL).expect("publishable");
    assert_eq!(checked.skill_ref().to_string(), "rt.context@1");
}

#[derive(Debug, Deserialize, JsonSchema)]
pub(crate) struct Typed {
    pub text: String,
    pub items: Vec<u32>,
}

/// The explicit schema is looser than the type: what passes it can still fail decoding.
#[skill(
    "rt.loose",
    version = "1",
    side_effects = "none",
    risk = "low",
    inputs_schema = json!({"type": "object"})
)]
pub(crate) fn loose(inputs: Typed) -> Result<Report, SkillError> {
    Ok(Report {
        remaining_ms: inputs.items.len() as u64,
        late: inputs.text.is_empty(),
        settings: Map::new(),
        config: None,
    })
}

#[skill("rt.broken", version = "1", side_effects = "none", risk = "low", outputs_schema = json!({"type": "objekt"}))]
pub(crate) fn broken(_inputs: Wait) -> Result<Report, SkillError> {
    Ok(Report { remaining_ms: 0, late: false, settings: Map::new(), config: None })
}

#[test]
fn decoding_errors_name_the_path() {
    let error = testing::invoke(&loose::SKILL, json!({"text": "x", "items": [1, "two"]})).expect_err("decoding fails");
    assert_eq!(error.code(), "input_contract_violation");
    let first = &error.details().expect("details")["errors"][0];
    assert_eq!(first["path"], "/items/1");
    assert!(first["message"].as_str().is_some_and(|m| m.contains("invalid type")), "{first}");
}

#[test]
fn check_contract_refuses_an_invalid_explicit_schema() {
    let error = testing::check_contract(&broken::SKILL).expect_err("invalid schema");
    let message = error.to_string();
    assert!(message.contains("rt.broken@1") && message.contains("outputs") && message.contains("/type"), "{message}");
    let call = testing::invoke(&broken::SKILL, json!({"ms": 0})).expect_err("cannot run either");
    assert_eq!(call.code(), "invalid_skill_contract");
}
