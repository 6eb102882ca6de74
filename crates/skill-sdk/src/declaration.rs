//! What `#[skill]` expands to: a constant declaration of the skill, the registration, and the
//! glue that decodes inputs, runs the function and encodes its outputs. Not a public API: the
//! attribute is; these items live under `skill_sdk::__private`.

use std::future::Future;
use std::pin::Pin;

use schemars::JsonSchema;
use schemars::generate::SchemaSettings;
use serde::Serialize;
use serde::de::DeserializeOwned;
pub use serde_json::Value;
use skill_contract::schema::PathError;
use skill_contract::{Idempotency, RiskLevel, SideEffects};

pub use inventory;

use crate::SkillError;

/// The future a skill's glue returns: the outputs as JSON, or the failure.
pub type Run = Pin<Box<dyn Future<Output = Result<Value, SkillError>> + Send + 'static>>;

/// The declared cost estimate, as written in the attribute.
#[derive(Debug, Clone, Copy)]
pub enum Estimate {
    Integer(u64),
    Float(f64),
}

/// `cost_model(unit = .., estimate = ..)`.
#[derive(Debug, Clone, Copy)]
pub struct DeclaredCost {
    pub unit: &'static str,
    pub estimate: Option<Estimate>,
}

/// `implementation = ...` as written; the local default entrypoint is derived from the module.
#[derive(Debug, Clone, Copy)]
pub enum DeclaredImplementation {
    Local { entrypoint: Option<&'static str> },
    Http { endpoint: &'static str, audience: Option<&'static str> },
    Mcp { endpoint: &'static str, tool: Option<&'static str>, audience: Option<&'static str> },
}

/// Everything `#[skill]` knows at compile time.
#[derive(Debug)]
pub struct Declaration {
    pub name: &'static str,
    pub version: &'static str,
    pub description: &'static str,
    pub side_effects: SideEffects,
    pub risk_level: RiskLevel,
    pub idempotency: Idempotency,
    pub timeout_seconds: u32,
    pub max_attempts: u32,
    pub backoff_seconds: u32,
    pub permissions: &'static [&'static str],
    pub cost_model: Option<DeclaredCost>,
    pub implementation: DeclaredImplementation,
    pub inputs_schema: fn() -> Value,
    pub outputs_schema: fn() -> Value,
    pub run: fn(Value, crate::SkillContext) -> Run,
    pub function: &'static str,
    /// `module_path!()` inside the generated module, so it ends with `::<function>`.
    pub module_path: &'static str,
    pub file: &'static str,
    pub line: u32,
}

/// The draft 2020-12 schema of the inputs, as they are deserialized, in the reference's form.
pub fn inputs_schema<T: JsonSchema + DeserializeOwned>() -> Value {
    let schema = SchemaSettings::draft2020_12().for_deserialize().into_generator().into_root_schema_for::<T>();
    crate::schema_form::reference_form(schema.to_value())
}

/// The draft 2020-12 schema of the outputs, as they are serialized, in the reference's form.
pub fn outputs_schema<T: JsonSchema + Serialize>() -> Value {
    let schema = SchemaSettings::draft2020_12().for_serialize().into_generator().into_root_schema_for::<T>();
    crate::schema_form::reference_form(schema.to_value())
}

/// An explicit schema, used verbatim.
pub fn explicit_schema(schema: impl Into<Value>) -> Value {
    schema.into()
}

/// Decodes validated inputs into the function's type; a mismatch names the path.
pub fn decode_inputs<T: DeserializeOwned>(inputs: Value) -> Result<T, SkillError> {
    serde_path_to_error::deserialize(inputs).map_err(|error| {
        crate::failure::input_violation(vec![PathError::new(
            crate::failure::json_path(error.path()),
            error.inner().to_string(),
        )])
    })
}

/// Encodes the outputs; `null` fields are kept.
pub fn encode_outputs<T: Serialize>(outputs: &T) -> Result<Value, SkillError> {
    serde_json::to_value(outputs).map_err(|error| {
        crate::failure::output_violation(vec![PathError::new(
            "/",
            format!("outputs cannot be encoded as JSON: {error}"),
        )])
    })
}

/// The function's result with its error turned into a [`SkillError`].
pub fn into_result<O, E: Into<SkillError>>(result: Result<O, E>) -> Result<O, SkillError> {
    result.map_err(Into::into)
}

/// Runs a synchronous skill on the blocking pool, so it never stalls the async workers, inside
/// the call's span. At the deadline the caller gets `timeout`; the thread is left to finish.
pub async fn run_blocking<R: Send + 'static>(call: impl FnOnce() -> R + Send + 'static) -> Result<R, SkillError> {
    let span = tracing::Span::current();
    let dispatch = tracing::dispatcher::get_default(Clone::clone);
    let traced = move || tracing::dispatcher::with_default(&dispatch, || span.in_scope(call));
    tokio::task::spawn_blocking(traced).await.map_err(|error| match error.try_into_panic() {
        Ok(panic) => crate::failure::panicked(panic.as_ref()),
        Err(error) => SkillError::from_error(error).with_message("the skill's thread was cancelled"),
    })
}
