//! The one error a failed skill call carries, on every transport.
//!
//! It is the SDK's `{code, message, retryable, details}` extended with the protocol's
//! `error_type`, `skill_name` and optional `tool_name`. Every code the platform emits has a fixed
//! `error_type` (see [`crate::codes`]); a skill's own codes are `tool_execution_failure`.

use std::fmt;
use std::sync::Arc;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

use crate::codes::{Retry, code_info};
use crate::error_type::SkillErrorType;

/// The longest error code.
pub const MAX_CODE: usize = 100;

/// A code that does not match `^[a-z0-9][a-z0-9_.-]{0,99}$`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "error code `{0}` is not valid: use 1 to 100 lowercase letters, digits, `_`, `.`, `-`, starting with a letter or digit"
)]
pub struct InvalidErrorCode(pub String);

/// Whether `code` matches `^[a-z0-9][a-z0-9_.-]{0,99}$`.
pub fn is_valid_code(code: &str) -> bool {
    let mut chars = code.chars();
    code.len() <= MAX_CODE
        && chars.next().is_some_and(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '_' | '.' | '-'))
}

/// A failed call: a code, a message for people, whether trying again may help, and details.
///
/// Immutable: built with [`SkillError::new`] (or [`SkillError::try_new`]) and the consuming
/// `with_*` methods.
///
/// Any other error converts into it (so `?` works in a skill on I/O, JSON or HTTP errors): the
/// result is `skill_error` whose message is only the error's type name — a crash never leaks its
/// text to the caller — and which keeps the original as [`SkillError::cause`] for the host's log.
/// For the same reason `SkillError` does not implement `std::error::Error` itself (as with
/// `anyhow::Error`, the blanket conversion would otherwise collide with `From<T> for T`).
///
/// ```
/// use skill_contract::{SkillError, SkillErrorType};
///
/// let error = SkillError::new("upstream_busy").with_message("the CRM is busy").with_retryable(true);
/// assert_eq!(error.error_type(), SkillErrorType::ToolExecutionFailure);
///
/// let timeout = SkillError::new("timeout");
/// assert!(timeout.retryable()); // fixed by the code table
/// assert_eq!(timeout.message(), "timeout"); // the message defaults to the code
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct SkillError(Box<Fields>);

/// Boxed so that `Result<T, SkillError>` stays one pointer wide on the error side.
#[derive(Debug, Clone)]
struct Fields {
    code: String,
    message: String,
    retryable: bool,
    details: Option<Map<String, Value>>,
    error_type: SkillErrorType,
    skill_name: String,
    tool_name: Option<String>,
    /// The error this one was converted from; never serialized.
    cause: Option<Arc<dyn std::error::Error + Send + Sync>>,
}

/// Equal when everything that goes on the wire is equal; the cause is not compared.
impl PartialEq for Fields {
    fn eq(&self, other: &Self) -> bool {
        self.code == other.code
            && self.message == other.message
            && self.retryable == other.retryable
            && self.details == other.details
            && self.error_type == other.error_type
            && self.skill_name == other.skill_name
            && self.tool_name == other.tool_name
    }
}

impl SkillError {
    /// An error with a valid code. The message defaults to the code; `retryable` and
    /// `error_type` come from the code table when the code is the platform's.
    pub fn try_new(code: &str) -> Result<Self, InvalidErrorCode> {
        if !is_valid_code(code) {
            return Err(InvalidErrorCode(code.to_owned()));
        }
        let (error_type, retryable) = match code_info(code) {
            Some(info) => (info.error_type, info.retryable == Retry::Yes),
            None => (SkillErrorType::ToolExecutionFailure, false),
        };
        Ok(Self(Box::new(Fields {
            code: code.to_owned(),
            message: code.to_owned(),
            retryable,
            details: None,
            error_type,
            skill_name: String::new(),
            tool_name: None,
            cause: None,
        })))
    }

    /// Like [`SkillError::try_new`], but an invalid code does not get lost: the error becomes
    /// `invalid_error_code` with the given code in `details.givenCode`.
    pub fn new(code: &str) -> Self {
        match Self::try_new(code) {
            Ok(error) => error,
            Err(InvalidErrorCode(given)) => Self::try_new("invalid_error_code")
                .expect("invariant: table codes are valid")
                .with_detail("givenCode", Value::String(given)),
        }
    }

    /// `skill_error` for any other error: the message is the error's type name only, the error
    /// itself is kept as the cause.
    pub fn from_error<E: std::error::Error + Send + Sync + 'static>(error: E) -> Self {
        let type_name = std::any::type_name::<E>();
        let type_name = type_name.split('<').next().unwrap_or(type_name);
        let mut converted = Self::new("skill_error").with_message(type_name);
        converted.0.cause = Some(Arc::new(error));
        converted
    }

    /// The error this one was converted from, for logs; never sent to a caller.
    pub fn cause(&self) -> Option<&(dyn std::error::Error + Send + Sync + 'static)> {
        self.0.cause.as_deref()
    }

    /// An error of one of the protocol's types; the code is the type's own word.
    pub fn of_type(error_type: SkillErrorType, message: impl Into<String>) -> Self {
        Self::try_new(error_type.as_str()).expect("invariant: error types are valid codes").with_message(message)
    }

    fn map(mut self, change: impl FnOnce(&mut Fields)) -> Self {
        change(&mut self.0);
        self
    }

    pub fn with_message(self, message: impl Into<String>) -> Self {
        self.map(|f| f.message = message.into())
    }

    pub fn with_retryable(self, retryable: bool) -> Self {
        self.map(|f| f.retryable = retryable)
    }

    pub fn with_details(self, details: Map<String, Value>) -> Self {
        self.map(|f| f.details = Some(details))
    }

    pub fn with_detail(self, key: &str, value: Value) -> Self {
        self.map(|f| {
            f.details.get_or_insert_with(Map::new).insert(key.to_owned(), value);
        })
    }

    pub fn with_error_type(self, error_type: SkillErrorType) -> Self {
        self.map(|f| f.error_type = error_type)
    }

    /// Names the skill the error comes from.
    pub fn for_skill(self, skill_name: impl Into<String>) -> Self {
        self.map(|f| f.skill_name = skill_name.into())
    }

    /// Names the tool the error comes from.
    pub fn for_tool(self, tool_name: impl Into<String>) -> Self {
        self.map(|f| f.tool_name = Some(tool_name.into()))
    }

    pub fn code(&self) -> &str {
        &self.0.code
    }

    pub fn message(&self) -> &str {
        &self.0.message
    }

    pub fn retryable(&self) -> bool {
        self.0.retryable
    }

    pub fn details(&self) -> Option<&Map<String, Value>> {
        self.0.details.as_ref()
    }

    pub fn error_type(&self) -> SkillErrorType {
        self.0.error_type
    }

    /// Empty until the runtime names the skill.
    pub fn skill_name(&self) -> &str {
        &self.0.skill_name
    }

    pub fn tool_name(&self) -> Option<&str> {
        self.0.tool_name.as_deref()
    }

    /// `{"error": {...}}`, the envelope of HTTP and MCP failures.
    pub fn to_envelope(&self) -> Value {
        let mut map = Map::new();
        map.insert("error".into(), serde_json::to_value(self).expect("invariant: the error serializes"));
        Value::Object(map)
    }
}

impl fmt::Display for SkillError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0.message)
    }
}

impl<E: std::error::Error + Send + Sync + 'static> From<E> for SkillError {
    fn from(error: E) -> Self {
        Self::from_error(error)
    }
}

#[derive(Serialize, Deserialize)]
struct Wire {
    code: String,
    #[serde(default)]
    message: Option<String>,
    #[serde(default)]
    retryable: bool,
    #[serde(default)]
    details: Option<Map<String, Value>>,
    #[serde(default)]
    error_type: Option<SkillErrorType>,
    #[serde(default)]
    skill_name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    tool_name: Option<String>,
}

impl Serialize for SkillError {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let f = &self.0;
        Wire {
            code: f.code.clone(),
            message: Some(f.message.clone()),
            retryable: f.retryable,
            details: f.details.clone(),
            error_type: Some(f.error_type),
            skill_name: Some(f.skill_name.clone()),
            tool_name: f.tool_name.clone(),
        }
        .serialize(serializer)
    }
}

/// Reads the platform's envelope and the reference's shorter one (`error_type`, `skill_name`
/// absent): missing fields take the code table's values.
impl<'de> Deserialize<'de> for SkillError {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let wire = Wire::deserialize(deserializer)?;
        let base = Self::try_new(&wire.code).map_err(serde::de::Error::custom)?;
        Ok(base.map(|f| {
            if let Some(message) = wire.message {
                f.message = message;
            }
            f.retryable = wire.retryable;
            f.details = wire.details;
            if let Some(error_type) = wire.error_type {
                f.error_type = error_type;
            }
            f.skill_name = wire.skill_name.unwrap_or_default();
            f.tool_name = wire.tool_name;
        }))
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn code_rule() {
        for code in ["a", "0", "upstream_busy", "a.b-c_d", &"a".repeat(100)] {
            assert!(is_valid_code(code), "{code}");
        }
        for code in ["", "_a", "-a", "A", "a b", "ä", &"a".repeat(101)] {
            assert!(!is_valid_code(code), "{code}");
        }
    }

    #[test]
    fn an_invalid_code_is_kept_visible() {
        let error = SkillError::new("Bad Code");
        assert_eq!(error.code(), "invalid_error_code");
        assert_eq!(error.details().and_then(|d| d.get("givenCode")), Some(&json!("Bad Code")));
    }

    #[test]
    fn wire_shape_and_key_order() {
        let error = SkillError::new("input_contract_violation").for_skill("math.add").with_detail("errors", json!([]));
        let text = serde_json::to_string(&error).expect("serializes");
        assert_eq!(
            text,
            r#"{"code":"input_contract_violation","message":"input_contract_violation","retryable":false,"details":{"errors":[]},"error_type":"validation_error","skill_name":"math.add"}"#
        );
        let back: SkillError = serde_json::from_str(&text).expect("reads back");
        assert_eq!(back, error);
    }

    #[test]
    fn any_error_converts_without_leaking_its_text() {
        fn read() -> Result<Vec<u8>, SkillError> {
            Ok(std::fs::read("/nonexistent/secret-path")?)
        }
        let error = read().expect_err("missing file");
        assert_eq!((error.code(), error.message()), ("skill_error", "std::io::error::Error"));
        assert!(!error.retryable());
        assert!(!serde_json::to_string(&error).expect("serializes").contains("secret-path"));
        assert!(error.cause().expect("kept").to_string().contains("No such file"));
    }

    #[test]
    fn reads_the_reference_envelope() {
        let error: SkillError = serde_json::from_value(
            json!({"code": "timeout", "message": "time is up", "retryable": true, "details": null}),
        )
        .expect("reads");
        assert_eq!(error.error_type(), SkillErrorType::ToolExecutionFailure);
        assert!(error.retryable());
        assert!(serde_json::from_value::<SkillError>(json!({"code": "Nope"})).is_err());
    }
}
