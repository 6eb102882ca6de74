//! The outcome of one skill-tool invocation, and the mapping of any failure to a
//! [`SkillError`].

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::{ProtocolError, SkillErrorType};
use crate::error::SkillError;

/// The outcome of one skill-tool invocation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "ResultWire", into = "ResultWire")]
pub struct SkillResult {
    skill_name: String,
    tool_name: String,
    success: bool,
    output_data: Value,
    error: Option<SkillError>,
    duration_ms: f64,
    resource_changes: Vec<Map<String, Value>>,
}

#[derive(Serialize, Deserialize)]
struct ResultWire {
    skill_name: String,
    tool_name: String,
    success: bool,
    #[serde(default)]
    output_data: Value,
    #[serde(default)]
    error: Option<SkillError>,
    #[serde(default)]
    duration_ms: f64,
    #[serde(default)]
    resource_changes: Vec<Map<String, Value>>,
}

impl TryFrom<ResultWire> for SkillResult {
    type Error = ProtocolError;
    fn try_from(w: ResultWire) -> Result<Self, ProtocolError> {
        if w.success == w.error.is_some() {
            return Err(ProtocolError(if w.success {
                "a successful result carries no error".into()
            } else {
                "a failed result carries its error".into()
            }));
        }
        if !(w.duration_ms.is_finite() && w.duration_ms >= 0.0) {
            return Err(ProtocolError(format!("duration_ms must be a finite number ≥ 0, got {}", w.duration_ms)));
        }
        Ok(Self {
            skill_name: w.skill_name,
            tool_name: w.tool_name,
            success: w.success,
            output_data: w.output_data,
            error: w.error,
            duration_ms: w.duration_ms,
            resource_changes: w.resource_changes,
        })
    }
}

impl From<SkillResult> for ResultWire {
    fn from(r: SkillResult) -> Self {
        Self {
            skill_name: r.skill_name,
            tool_name: r.tool_name,
            success: r.success,
            output_data: r.output_data,
            error: r.error,
            duration_ms: r.duration_ms,
            resource_changes: r.resource_changes,
        }
    }
}

fn clean_duration(duration_ms: f64) -> f64 {
    if duration_ms.is_finite() && duration_ms > 0.0 { duration_ms } else { 0.0 }
}

impl SkillResult {
    pub fn succeeded(skill_name: &str, tool_name: &str, output_data: Value, duration_ms: f64) -> Self {
        Self {
            skill_name: skill_name.to_owned(),
            tool_name: tool_name.to_owned(),
            success: true,
            output_data,
            error: None,
            duration_ms: clean_duration(duration_ms),
            resource_changes: Vec::new(),
        }
    }

    pub fn failed(skill_name: &str, tool_name: &str, error: SkillError, duration_ms: f64) -> Self {
        Self {
            skill_name: skill_name.to_owned(),
            tool_name: tool_name.to_owned(),
            success: false,
            output_data: Value::Null,
            error: Some(error),
            duration_ms: clean_duration(duration_ms),
            resource_changes: Vec::new(),
        }
    }

    /// The same result with descriptors of what the call changed.
    pub fn with_resource_changes(self, resource_changes: Vec<Map<String, Value>>) -> Self {
        Self { resource_changes, ..self }
    }

    pub fn skill_name(&self) -> &str {
        &self.skill_name
    }

    pub fn tool_name(&self) -> &str {
        &self.tool_name
    }

    pub fn success(&self) -> bool {
        self.success
    }

    pub fn output_data(&self) -> &Value {
        &self.output_data
    }

    pub fn error(&self) -> Option<&SkillError> {
        self.error.as_ref()
    }

    pub fn duration_ms(&self) -> f64 {
        self.duration_ms
    }

    pub fn resource_changes(&self) -> &[Map<String, Value>] {
        &self.resource_changes
    }
}

/// The kind of a failure, for [`map_tool_error`]: Rust has no exception classes, so the caller
/// says which family the failure belongs to (see [`ErrorClass::of`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorClass {
    /// A bad value or a lookup that failed (the reference's `ValueError`).
    Value,
    /// The operation was refused for lack of rights.
    Permission,
    /// Data did not pass validation.
    Validation,
    /// Anything else.
    Other,
}

impl ErrorClass {
    /// Classifies errors whose family is known: I/O permission errors, JSON errors, contract
    /// and reference errors, resolution errors. Everything else is [`ErrorClass::Other`].
    pub fn of(error: &(dyn std::error::Error + 'static)) -> Self {
        if let Some(io) = error.downcast_ref::<std::io::Error>() {
            return if io.kind() == std::io::ErrorKind::PermissionDenied { Self::Permission } else { Self::Other };
        }
        if error.is::<serde_json::Error>()
            || error.is::<crate::ContractError>()
            || error.is::<crate::schema::SchemaDocumentError>()
            || error.is::<ProtocolError>()
        {
            return Self::Validation;
        }
        if error.is::<crate::RefError>() || error.is::<crate::resolve_error::ResolveError>() {
            return Self::Value;
        }
        Self::Other
    }
}

/// Normalises any failure of a tool into a [`SkillError`], by the protocol's rules:
///
/// | class | message contains | error type |
/// |---|---|---|
/// | Value | `cycle` | `cycle_detected` |
/// | Value | `not found` | `skill_not_found` |
/// | Value | other | `resolution_failure` |
/// | Permission | — | `permission_denied` |
/// | Validation | — | `validation_error` |
/// | any other | `activation` | `tool_activation_failure` |
/// | any other | other | `tool_execution_failure` |
///
/// ```
/// use skill_contract::{ErrorClass, SkillErrorType, map_tool_error};
/// let error = map_tool_error(ErrorClass::Value, "include cycle: a -> a", "local/my-skill", Some("local/my-tool"));
/// assert_eq!(error.error_type(), SkillErrorType::CycleDetected);
/// assert_eq!(error.skill_name(), "local/my-skill");
/// assert_eq!(error.tool_name(), Some("local/my-tool"));
/// ```
pub fn map_tool_error(class: ErrorClass, message: &str, skill_name: &str, tool_name: Option<&str>) -> SkillError {
    let lower = message.to_lowercase();
    let error_type = match class {
        ErrorClass::Value if lower.contains("cycle") => SkillErrorType::CycleDetected,
        ErrorClass::Value if lower.contains("not found") => SkillErrorType::SkillNotFound,
        ErrorClass::Value => SkillErrorType::ResolutionFailure,
        ErrorClass::Permission => SkillErrorType::PermissionDenied,
        ErrorClass::Validation => SkillErrorType::ValidationError,
        ErrorClass::Other if lower.contains("activation") => SkillErrorType::ToolActivationFailure,
        ErrorClass::Other => SkillErrorType::ToolExecutionFailure,
    };
    let error = SkillError::of_type(error_type, message).for_skill(skill_name);
    match tool_name {
        Some(tool) => error.for_tool(tool),
        None => error,
    }
}
