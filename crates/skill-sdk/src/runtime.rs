//! The one invocation path every transport and the testing kit use: check the inputs, run the
//! function under its deadline, check the outputs, report the cost.

use std::panic::AssertUnwindSafe;
use std::time::Duration;

use futures::FutureExt;
use serde_json::{Map, Value, json};
use skill_contract::schema::PathError;
use tracing::instrument::{Instrument, WithSubscriber};

use crate::SkillError;
use crate::context::{Invocation, SkillContext};
use crate::failure::{input_violation, output_violation, panicked};
use crate::skill::Skill;

/// What a successful call returns.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    pub outputs: Map<String, Value>,
    /// `{"units": {...}}` and, with an LLM, `{"llm": {...}}`; `None` when nothing was reported.
    pub cost: Option<Value>,
}

impl Outcome {
    /// `{"outputs": ..., "cost": ...}`, as the host's `invoke` prints it.
    pub fn to_json(&self) -> Value {
        json!({"outputs": self.outputs, "cost": self.cost})
    }
}

fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// Calls `skill` with `inputs`. Every failure is a [`SkillError`] naming the skill; a failure
/// converted from another error is logged with that error in full (the caller sees only its type).
pub async fn execute(skill: &Skill, inputs: Value, invocation: Invocation) -> Result<Outcome, SkillError> {
    let skill_ref = skill.skill_ref().map_err(|error| prepare_failed(error).for_skill(skill.name()))?;
    let declared = Duration::from_secs(skill.declaration().timeout_seconds.into());
    let timeout = invocation.timeout().map_or(declared, |t| t.min(declared));
    let ctx = SkillContext::new(skill_ref, invocation, timeout);
    let span = ctx.span().clone();
    let result = run(skill, inputs, &ctx).instrument(span.clone()).with_current_subscriber().await;
    result.map_err(|error| {
        match error.cause() {
            Some(cause) => tracing::error!(parent: &span, code = error.code(), error = %cause, "the skill failed"),
            None => tracing::debug!(parent: &span, code = error.code(), "the skill failed"),
        }
        if error.skill_name().is_empty() { error.for_skill(skill.name()) } else { error }
    })
}

/// Whether `error` is a crash (a panic, or another error converted with `?`) rather than a
/// refusal the skill chose: hosts answer crashes with 500 instead of 422.
pub fn is_crash(error: &SkillError) -> bool {
    error.cause().is_some()
}

fn prepare_failed(error: crate::skill::PrepareError) -> SkillError {
    SkillError::new("invalid_skill_contract").with_message(error.to_string())
}

async fn run(skill: &Skill, inputs: Value, ctx: &SkillContext) -> Result<Outcome, SkillError> {
    let (input_schema, output_schema) = skill.validators().map_err(prepare_failed)?;
    let timeout = ctx.timeout();
    if !inputs.is_object() {
        return Err(input_violation(vec![PathError::new("/", "inputs must be a JSON object")]));
    }
    let errors = input_schema.errors(&inputs);
    if !errors.is_empty() {
        return Err(input_violation(errors));
    }

    let call = AssertUnwindSafe((skill.declaration().run)(inputs, ctx.clone())).catch_unwind();
    let outputs = match tokio::time::timeout(ctx.remaining(), call).await {
        Err(_) => {
            return Err(SkillError::new("timeout").with_message(format!(
                "{}: time is up after {} s",
                skill.reference(),
                timeout.as_secs_f64()
            )));
        }
        Ok(Err(panic)) => return Err(panicked(panic.as_ref())),
        Ok(Ok(result)) => result?,
    };
    if !outputs.is_object() {
        let message = format!("outputs must be a JSON object, got {}", type_name(&outputs));
        return Err(output_violation(vec![PathError::new("/", message)]));
    }
    let errors = output_schema.errors(&outputs);
    if !errors.is_empty() {
        return Err(output_violation(errors));
    }
    let Value::Object(outputs) = outputs else { unreachable!("invariant: checked to be an object above") };
    Ok(Outcome { outputs, cost: ctx.cost() })
}
