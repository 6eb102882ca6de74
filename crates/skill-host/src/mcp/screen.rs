//! What rmcp answers wrongly for malformed messages, answered here before it sees them — one
//! check for stdio and streamable HTTP:
//!
//! | message | rmcp answers | answered here (JSON-RPC 2.0, MCP 2025-11-25) |
//! |---|---|---|
//! | not JSON | HTTP 415; on stdio an error without `id` | `-32700` parse error, `"id": null` (HTTP 400) |
//! | JSON, but not a JSON-RPC message | an error without `id` | `-32600` invalid request, its `id` or `null` (HTTP 400) |
//! | `tools/call` whose `params` are not `{name: string, arguments?: object}` | `-32601` method not found | `-32602` invalid params, its `id` |
//!
//! Everything else goes to rmcp unchanged.

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

/// An `id` JSON-RPC allows (a string or a number), else `null`.
fn id_of(message: &serde_json::Map<String, Value>) -> Value {
    match message.get("id") {
        Some(id @ (Value::String(_) | Value::Number(_))) => id.clone(),
        _ => Value::Null,
    }
}

/// `None` when rmcp may have the message; the answer to send instead otherwise.
pub fn screen(bytes: &[u8]) -> Option<Refusal> {
    let value: Value = match serde_json::from_slice(bytes) {
        Ok(value) => value,
        Err(error) => {
            return Some(Refusal { id: Value::Null, code: PARSE_ERROR, message: format!("parse error: {error}") });
        }
    };
    // A batch is rmcp's to refuse or answer (batches left JSON-RPC over MCP in 2025-06-18).
    let Value::Object(message) = value else {
        return match value {
            Value::Array(_) => None,
            _ => Some(Refusal {
                id: Value::Null,
                code: INVALID_REQUEST,
                message: "invalid request: a JSON-RPC message is an object".to_owned(),
            }),
        };
    };
    let id = id_of(&message);
    let invalid = |message: &str| Some(Refusal { id: id.clone(), code: INVALID_REQUEST, message: message.to_owned() });
    if message.get("jsonrpc") != Some(&json!("2.0")) {
        return invalid("invalid request: `jsonrpc` must be \"2.0\"");
    }
    let method = match message.get("method") {
        Some(Value::String(method)) => method.as_str(),
        Some(_) => return invalid("invalid request: `method` must be a string"),
        None if message.contains_key("result") || message.contains_key("error") => return None,
        None => return invalid("invalid request: a request has a `method`"),
    };
    if method != "tools/call" {
        return None;
    }
    let params = match message.get("params") {
        Some(Value::Object(params)) => params,
        _ => return Some(invalid_params(id, "`params` must be an object: {\"name\": ..., \"arguments\": {...}}")),
    };
    if !matches!(params.get("name"), Some(Value::String(_))) {
        return Some(invalid_params(id, "`params.name` must be the tool's name, a string"));
    }
    if !matches!(params.get("arguments"), None | Some(Value::Null | Value::Object(_))) {
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
