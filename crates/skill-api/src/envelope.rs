//! The error envelope every failed request answers with:
//! `{"error": {code, message, retryable, details, requestId}}`.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// The body of every error answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ErrorEnvelope {
    pub error: ErrorBody,
}

/// What went wrong, for people (`message`) and for programs (`code`, `details`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ErrorBody {
    /// A stable code (`skill_exists`, `invalid_token`, …), listed per operation in the OpenAPI
    /// document.
    pub code: String,
    pub message: String,
    /// Whether the same request may succeed later (the database was unavailable, say).
    #[serde(default)]
    pub retryable: bool,
    /// Machine-readable context (`field`, `allowed`, …); `null` when there is none.
    #[serde(default, deserialize_with = "null_as_empty", serialize_with = "empty_as_null")]
    #[schemars(with = "Option<Map<String, Value>>")]
    pub details: Map<String, Value>,
    /// The request's id, also in the `X-Request-Id` header: quote it when reporting a problem.
    #[serde(default)]
    pub request_id: Option<String>,
}

impl ErrorBody {
    /// A detail as text, when it is one.
    pub fn detail_str(&self, key: &str) -> Option<&str> {
        self.details.get(key).and_then(Value::as_str)
    }
}

fn null_as_empty<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<Map<String, Value>, D::Error> {
    Ok(Option::<Map<String, Value>>::deserialize(deserializer)?.unwrap_or_default())
}

/// Empty details are written as `null`, as the reference does.
fn empty_as_null<S: serde::Serializer>(details: &Map<String, Value>, serializer: S) -> Result<S::Ok, S::Error> {
    if details.is_empty() { serializer.serialize_none() } else { details.serialize(serializer) }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn the_envelope_reads_with_null_or_missing_details() {
        let envelope: ErrorEnvelope =
            serde_json::from_value(json!({"error": {"code": "x", "message": "m", "details": null}})).expect("reads");
        assert!(envelope.error.details.is_empty());
        assert!(!envelope.error.retryable);
        let envelope: ErrorEnvelope = serde_json::from_value(
            json!({"error": {"code": "x", "message": "m", "retryable": true, "details": {"field": "a"}, "requestId": "r"}}),
        )
        .expect("reads");
        assert_eq!(envelope.error.detail_str("field"), Some("a"));
        assert_eq!(envelope.error.request_id.as_deref(), Some("r"));
        assert!(envelope.error.retryable);
        let empty = ErrorEnvelope {
            error: ErrorBody {
                code: "x".into(),
                message: "m".into(),
                retryable: false,
                details: Map::new(),
                request_id: None,
            },
        };
        assert_eq!(
            serde_json::to_value(&empty).expect("writes"),
            json!({"error": {"code": "x", "message": "m", "retryable": false, "details": null, "requestId": null}})
        );
    }
}
