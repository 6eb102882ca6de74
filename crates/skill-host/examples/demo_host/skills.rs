//! The demo host's skills: one per behaviour a host must carry over its transports. The host's
//! tests link this file too (`#[path]`), so in-process and process-level tests see the same skills.

#![allow(dead_code)]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use skill_sdk::{SkillContext, SkillError, skill};

#[derive(Debug, Deserialize, JsonSchema)]
pub(crate) struct Text {
    /// Any text.
    text: String,
}

#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct Echoed {
    /// The text, unchanged.
    text: String,
}

/// Return the text unchanged; costs one op.
#[skill("echo", version = "1", side_effects = "none", risk = "low", idempotency = "natural", timeout = 5)]
pub(crate) async fn echo(inputs: Text, ctx: SkillContext) -> Result<Echoed, SkillError> {
    ctx.add_cost("ops", 1.0);
    Ok(Echoed { text: inputs.text })
}

/// The same echo as a synchronous function (run on the blocking pool); costs one op.
#[skill("echo-sync", version = "1", side_effects = "none", risk = "low", idempotency = "natural", timeout = 5)]
pub(crate) fn echo_sync(inputs: Text, ctx: SkillContext) -> Result<Echoed, SkillError> {
    ctx.add_cost("ops", 1.0);
    Ok(Echoed { text: inputs.text })
}

#[derive(Debug, Deserialize, JsonSchema)]
pub(crate) struct Nothing {}

#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct Call {
    /// The verified token's claims, or null for an anonymous call.
    caller: Option<Map<String, Value>>,
    invocation_id: Option<String>,
    idempotency_key: Option<String>,
    /// The id of the HTTP request that carried the call (its X-Request-Id).
    request_id: Option<String>,
    /// The package settings values of the call.
    settings: Map<String, Value>,
    transport: String,
}

/// Describe the call as the skill sees it.
#[skill("whoami", version = "1", side_effects = "none", risk = "low")]
pub(crate) fn whoami(_inputs: Nothing, ctx: SkillContext) -> Result<Call, SkillError> {
    Ok(Call {
        caller: ctx.caller().and_then(Value::as_object).cloned(),
        invocation_id: ctx.invocation_id().map(str::to_owned),
        idempotency_key: ctx.idempotency_key().map(str::to_owned),
        request_id: ctx.request_id().map(str::to_owned),
        settings: ctx.settings(),
        transport: ctx.transport().as_str().to_owned(),
    })
}

#[derive(Debug, Deserialize, JsonSchema)]
pub(crate) struct Wait {
    /// How long to take, in milliseconds.
    ms: u64,
}

#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct Waited {
    slept_ms: u64,
}

/// How many `slow` calls ran to their end in this process.
pub(crate) static SLOW_CALLS_DONE: AtomicUsize = AtomicUsize::new(0);

/// Take the given time, then answer.
#[skill("slow", version = "1", side_effects = "none", risk = "low", timeout = 10)]
pub(crate) async fn slow(inputs: Wait) -> Result<Waited, SkillError> {
    tokio::time::sleep(Duration::from_millis(inputs.ms)).await;
    SLOW_CALLS_DONE.fetch_add(1, Ordering::SeqCst);
    Ok(Waited { slept_ms: inputs.ms })
}

#[derive(Debug, Deserialize, JsonSchema)]
pub(crate) struct Order {
    /// The order's id.
    order: String,
}

#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct Cancelled {
    order: String,
    cancelled: bool,
}

/// Refuse every order: none is known.
#[skill("refuse", version = "1", side_effects = "none", risk = "low")]
pub(crate) fn refuse(inputs: Order) -> Result<Cancelled, SkillError> {
    Err(SkillError::new("order_unknown")
        .with_message(format!("no order {} — nothing to do", inputs.order))
        .with_detail("order", Value::String(inputs.order)))
}

/// Fail in a way a retry may fix.
#[skill("flaky", version = "1", side_effects = "none", risk = "low")]
pub(crate) fn flaky(_inputs: Nothing) -> Result<Echoed, SkillError> {
    Err(SkillError::new("upstream_busy").with_message("the upstream is busy; try again").with_retryable(true))
}

#[derive(Debug, Deserialize, JsonSchema)]
pub(crate) struct How {
    /// Panic instead of returning an error.
    #[serde(default)]
    panic: bool,
}

/// Crash: an I/O error passed on with `?`, or a panic.
#[skill("crash", version = "1", side_effects = "none", risk = "low")]
pub(crate) fn crash(inputs: How) -> Result<Echoed, SkillError> {
    if inputs.panic {
        panic!("the demo crashes on purpose");
    }
    std::fs::read_to_string("/nonexistent/demo-host/file")?;
    Ok(Echoed { text: String::new() })
}

/// Cancel an order in the shop (a write to the outside world; needs an idempotency key).
#[skill(
    "orders/cancel",
    version = "2",
    side_effects = "external_write",
    risk = "high",
    idempotency = "required",
    permissions = ["orders.cancel"],
    cost_model(unit = "call", estimate = 1)
)]
pub(crate) fn cancel(inputs: Order, ctx: SkillContext) -> Result<Cancelled, SkillError> {
    if ctx.idempotency_key().is_none() {
        return Err(SkillError::new("idempotency_key_required").with_message("orders/cancel needs an idempotency key"));
    }
    Ok(Cancelled { order: inputs.order, cancelled: true })
}

#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct Recorded {
    /// Whether this call made the effect (`false`: an earlier attempt with the same key did).
    first: bool,
}

/// Make one effect per idempotency key: a file named by the key in `DEMO_EFFECTS_DIR`, created
/// only if absent (the fault run counts them). Takes 20 ms, so a killed executor is often mid-call.
#[skill("record", version = "1", side_effects = "none", risk = "low", idempotency = "required", timeout = 5, retry = (10, 0))]
pub(crate) async fn record(_inputs: Nothing, ctx: SkillContext) -> Result<Recorded, SkillError> {
    let Some(key) = ctx.idempotency_key().map(str::to_owned) else {
        return Err(SkillError::new("idempotency_key_required").with_message("record needs an idempotency key"));
    };
    let Some(folder) = std::env::var_os("DEMO_EFFECTS_DIR") else {
        return Err(SkillError::new("not_configured").with_message("set DEMO_EFFECTS_DIR"));
    };
    tokio::time::sleep(Duration::from_millis(20)).await;
    let path = std::path::Path::new(&folder).join(key.replace('/', "_"));
    match std::fs::OpenOptions::new().write(true).create_new(true).open(path) {
        Ok(_) => Ok(Recorded { first: true }),
        Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => Ok(Recorded { first: false }),
        Err(error) => Err(SkillError::new("effect_failed").with_message(error.to_string()).with_retryable(true)),
    }
}
