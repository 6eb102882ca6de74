//! What rmcp answers wrongly for malformed MCP messages, answered before it sees them — one
//! check for the hosts' stdio and streamable HTTP and the core's gateway:
//!
//! | message | rmcp answers | answered here (JSON-RPC 2.0, MCP 2025-11-25) |
//! |---|---|---|
//! | not JSON | HTTP 415; on stdio an error without `id` | `-32700` parse error, `"id": null` (HTTP 400) |
//! | JSON, but not a JSON-RPC message | an error without `id` | `-32600` invalid request, its `id` or `null` (HTTP 400) |
//! | `tools/call` whose `params` are not `{name: string, arguments?: object}` | `-32601` method not found | `-32602` invalid params, its `id` |
//!
//! Everything else goes to rmcp unchanged.

use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{Value, json};

pub const PARSE_ERROR: i64 = -32700;
pub const INVALID_REQUEST: i64 = -32600;
pub const INVALID_PARAMS: i64 = -32602;

/// A JSON-RPC error to answer instead of passing the message on.
#[derive(Debug, Clone, PartialEq)]
pub struct Refusal {
    pub id: Value,
    pub code: i64,
    pub message: String,
}

impl Refusal {
    /// The JSON-RPC error response.
    pub fn to_json(&self) -> Value {
        json!({"jsonrpc": "2.0", "id": self.id, "error": {"code": self.code, "message": self.message}})
    }

    /// Whether the transport should answer it as a malformed request (HTTP 400) rather than as a
    /// request whose call failed (HTTP 200).
    pub fn is_malformed(&self) -> bool {
        self.code != INVALID_PARAMS
    }
}

/// The members of a message the screen looks at, borrowed as raw JSON: nothing is built
/// (this runs on every request, before rmcp parses the message for itself).
#[derive(Deserialize)]
struct Message<'a> {
    #[serde(borrow, default, deserialize_with = "present")]
    jsonrpc: Option<&'a RawValue>,
    #[serde(borrow, default, deserialize_with = "present")]
    id: Option<&'a RawValue>,
    #[serde(borrow, default, deserialize_with = "present")]
    method: Option<&'a RawValue>,
    #[serde(borrow, default, deserialize_with = "present")]
    params: Option<&'a RawValue>,
    #[serde(borrow, default, deserialize_with = "present")]
    result: Option<&'a RawValue>,
    #[serde(borrow, default, deserialize_with = "present")]
    error: Option<&'a RawValue>,
}

#[derive(Deserialize)]
struct CallParams<'a> {
    #[serde(borrow, default, deserialize_with = "present")]
    name: Option<&'a RawValue>,
    #[serde(borrow, default, deserialize_with = "present")]
    arguments: Option<&'a RawValue>,
}

/// A member that is there, even when it is `null`.
fn present<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<Option<&'de RawValue>, D::Error> {
    <&RawValue>::deserialize(deserializer).map(Some)
}

/// The first character of a raw value: what kind of JSON value it is.
fn kind(raw: Option<&RawValue>) -> Option<u8> {
    raw.and_then(|raw| raw.get().bytes().next())
}

/// An `id` JSON-RPC allows (a string or a number), else `null`.
fn id_of(raw: Option<&RawValue>) -> Value {
    match kind(raw) {
        Some(b'"' | b'-' | b'0'..=b'9') => {
            raw.and_then(|raw| serde_json::from_str(raw.get()).ok()).unwrap_or(Value::Null)
        }
        _ => Value::Null,
    }
}

/// `None` when rmcp may have the message; the answer to send instead otherwise.
pub fn screen(bytes: &[u8]) -> Option<Refusal> {
    let parse_error = |error: serde_json::Error| Refusal {
        id: Value::Null,
        code: PARSE_ERROR,
        message: format!("parse error: {error}"),
    };
    match bytes.iter().find(|byte| !byte.is_ascii_whitespace()) {
        Some(b'{') => {}
        // A batch is rmcp's to refuse or answer (batches left JSON-RPC over MCP in 2025-06-18).
        Some(b'[') => return None,
        _ => {
            return match serde_json::from_slice::<serde::de::IgnoredAny>(bytes) {
                Err(error) => Some(parse_error(error)),
                Ok(_) => Some(Refusal {
                    id: Value::Null,
                    code: INVALID_REQUEST,
                    message: "invalid request: a JSON-RPC message is an object".to_owned(),
                }),
            };
        }
    }
    let message: Message<'_> = match serde_json::from_slice(bytes) {
        Ok(message) => message,
        Err(error) => return Some(parse_error(error)),
    };
    let id = id_of(message.id);
    let invalid = |text: &str| Some(Refusal { id: id.clone(), code: INVALID_REQUEST, message: text.to_owned() });
    if message.jsonrpc.map(RawValue::get) != Some("\"2.0\"") {
        return invalid("invalid request: `jsonrpc` must be \"2.0\"");
    }
    let method = match message.method {
        Some(raw) if kind(Some(raw)) == Some(b'"') => raw.get(),
        Some(_) => return invalid("invalid request: `method` must be a string"),
        None if message.result.is_some() || message.error.is_some() => return None,
        None => return invalid("invalid request: a request has a `method`"),
    };
    if method != "\"tools/call\"" {
        return None;
    }
    let params = match message.params {
        Some(raw) if kind(Some(raw)) == Some(b'{') => serde_json::from_str::<CallParams<'_>>(raw.get()).ok(),
        _ => None,
    };
    let Some(params) = params else {
        return Some(invalid_params(id, "`params` must be an object: {\"name\": ..., \"arguments\": {...}}"));
    };
    if kind(params.name) != Some(b'"') {
        return Some(invalid_params(id, "`params.name` must be the tool's name, a string"));
    }
    if !matches!(kind(params.arguments), None | Some(b'n' | b'{')) {
        return Some(invalid_params(id, "`params.arguments` must be an object"));
    }
    None
}

fn invalid_params(id: Value, message: &str) -> Refusal {
    Refusal { id, code: INVALID_PARAMS, message: format!("invalid params: {message}") }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn code(text: &str) -> Option<(i64, Value)> {
        screen(text.as_bytes()).map(|refusal| (refusal.code, refusal.id))
    }

    #[test]
    fn malformed_messages_get_the_codes_json_rpc_names() {
        assert_eq!(code("{"), Some((PARSE_ERROR, Value::Null)));
        assert_eq!(code("7"), Some((INVALID_REQUEST, Value::Null)));
        assert_eq!(code(r#"{"jsonrpc": "2.0", "id": 4}"#), Some((INVALID_REQUEST, json!(4))));
        assert_eq!(code(r#"{"jsonrpc": "1.0", "id": "a", "method": "ping"}"#), Some((INVALID_REQUEST, json!("a"))));
        let call = |params: &str| {
            code(&format!(r#"{{"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": {params}}}"#))
        };
        assert_eq!(call(r#"{"name": "echo", "arguments": [1]}"#), Some((INVALID_PARAMS, json!(9))));
        assert_eq!(call(r#"{"arguments": {}}"#), Some((INVALID_PARAMS, json!(9))));
        assert_eq!(call("[1]"), Some((INVALID_PARAMS, json!(9))));
        assert_eq!(call(r#"{"name": "echo", "arguments": {"text": "a"}}"#), None);
        assert_eq!(call(r#"{"name": "echo"}"#), None);
        assert_eq!(code(r#"{"jsonrpc": "2.0", "id": 1, "method": "tools/list"}"#), None);
        assert_eq!(code(r#"{"jsonrpc": "2.0", "id": 1, "result": {}}"#), None);
        assert_eq!(code(r#"{"jsonrpc": "2.0", "method": "notifications/initialized"}"#), None);
    }
}
