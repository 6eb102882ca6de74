//! What rmcp answers wrongly for malformed MCP messages, answered before it sees them — one
//! check for the hosts' stdio and streamable HTTP and the core's gateway:
//!
//! | message | rmcp answers | answered here (JSON-RPC 2.0, MCP 2025-11-25) |
//! |---|---|---|
//! | not JSON, or JSON no reader takes whole (a number no `f64` holds, nesting past 128 levels, a bad escape, bytes that are not UTF-8) | HTTP 415 in plain text; on stdio an error without `id` | `-32700` parse error, `"id": null` (HTTP 400) |
//! | a batch (an array) | HTTP 415 in plain text | `-32600` invalid request, `"id": null` (HTTP 400) |
//! | a request whose `id` is neither a string nor an integer (an object, `null`, `1.5`) | HTTP 415 in plain text | `-32600` invalid request, `"id": null` (HTTP 400) |
//! | JSON, but not a JSON-RPC message | an error without `id` | `-32600` invalid request, its `id` or `null` (HTTP 400) |
//! | `tools/call` whose `params` are not `{name: string, arguments?: object}` | `-32601` method not found | `-32602` invalid params, its `id` |
//!
//! Everything else goes to rmcp unchanged.

use std::fmt;

use serde::Deserialize;
use serde::de::{Deserializer, MapAccess, SeqAccess, Visitor};
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

/// Whether a request's `id` is one MCP takes: a string, or an integer (`1.0` and `1e2` are
/// integers written as floats; past 2^53 a float names no one integer).
fn is_request_id(raw: &RawValue) -> bool {
    match serde_json::from_str::<Value>(raw.get()) {
        Ok(Value::String(_)) => true,
        Ok(Value::Number(number)) => {
            number.as_i64().is_some()
                || number.as_f64().is_some_and(|f| f.fract() == 0.0 && f.abs() < 9_007_199_254_740_992.0)
        }
        _ => false,
    }
}

/// The `id` of a message the screen let through, to name it in an answer; `null` when it has
/// none.
pub fn request_id(bytes: &[u8]) -> Value {
    serde_json::from_slice::<Message<'_>>(bytes).map_or(Value::Null, |message| id_of(message.id))
}

/// A JSON value read through, nothing of it built: reading it finds what a reader that builds it
/// refuses — a number no `f64` holds, nesting deeper than 128 levels, a bad escape, bytes that
/// are not UTF-8 — where merely skipping it would not.
struct Checked;

impl<'de> Deserialize<'de> for Checked {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(Checked)
    }
}

impl<'de> Visitor<'de> for Checked {
    type Value = Checked;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E>(self, _: bool) -> Result<Checked, E> {
        Ok(Checked)
    }

    fn visit_i64<E>(self, _: i64) -> Result<Checked, E> {
        Ok(Checked)
    }

    fn visit_u64<E>(self, _: u64) -> Result<Checked, E> {
        Ok(Checked)
    }

    fn visit_f64<E>(self, _: f64) -> Result<Checked, E> {
        Ok(Checked)
    }

    fn visit_str<E>(self, _: &str) -> Result<Checked, E> {
        Ok(Checked)
    }

    fn visit_unit<E>(self) -> Result<Checked, E> {
        Ok(Checked)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut items: A) -> Result<Checked, A::Error> {
        while items.next_element::<Checked>()?.is_some() {}
        Ok(Checked)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut members: A) -> Result<Checked, A::Error> {
        while members.next_key::<Checked>()?.is_some() {
            members.next_value::<Checked>()?;
        }
        Ok(Checked)
    }
}

/// `None` when rmcp may have the message; the answer to send instead otherwise.
pub fn screen(bytes: &[u8]) -> Option<Refusal> {
    let parse_error = |error: serde_json::Error| Refusal {
        id: Value::Null,
        code: PARSE_ERROR,
        message: format!("parse error: {error}"),
    };
    if let Err(error) = serde_json::from_slice::<Checked>(bytes) {
        return Some(parse_error(error));
    }
    let refused = |message: &str| Some(Refusal { id: Value::Null, code: INVALID_REQUEST, message: message.to_owned() });
    match bytes.iter().find(|byte| !byte.is_ascii_whitespace()) {
        Some(b'{') => {}
        // Batches left JSON-RPC over MCP in 2025-06-18: one message a request.
        Some(b'[') => return refused("invalid request: a batch is not taken; send one message a request"),
        _ => return refused("invalid request: a JSON-RPC message is an object"),
    }
    let message: Message<'_> = match serde_json::from_slice(bytes) {
        Ok(message) => message,
        Err(error) => return Some(parse_error(error)),
    };
    if message.method.is_some() && message.id.is_some_and(|id| !is_request_id(id)) {
        return refused("invalid request: a request's `id` is a string or an integer");
    }
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

    #[test]
    fn what_rmcp_could_not_read_is_answered_here() {
        let list = |id: &str, params: &str| {
            code(&format!(r#"{{"jsonrpc": "2.0", "id": {id}, "method": "tools/list", "params": {params}}}"#))
        };
        assert_eq!(
            code(r#"[{"jsonrpc": "2.0", "id": 1, "method": "tools/list"}]"#),
            Some((INVALID_REQUEST, Value::Null))
        );
        assert_eq!(code("[]"), Some((INVALID_REQUEST, Value::Null)));
        for id in [r#"{"a": 1}"#, "[1]", "null", "true", "1.5", "9223372036854775808", "1e300"] {
            assert_eq!(list(id, "{}"), Some((INVALID_REQUEST, Value::Null)), "{id}");
        }
        for id in [r#""a""#, "7", "-7", "1.0", "1e2", "9223372036854775807"] {
            assert_eq!(list(id, "{}"), None, "{id}");
        }
        assert_eq!(list("1e400", "{}"), Some((PARSE_ERROR, Value::Null)));
        assert_eq!(list("1", r#"{"a": [1, -1e400]}"#), Some((PARSE_ERROR, Value::Null)));
        let deep = format!("{}1{}", "[".repeat(3000), "]".repeat(3000));
        assert_eq!(list("1", &format!(r#"{{"a": {deep}}}"#)), Some((PARSE_ERROR, Value::Null)));
        assert_eq!(list("1", r#"{"a": "\ud800"}"#), Some((PARSE_ERROR, Value::Null)));
        let mut bytes = br#"{"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"a": ""#.to_vec();
        bytes.extend([0xff, 0xfe]);
        bytes.extend(br#""}}"#);
        assert_eq!(screen(&bytes).map(|refusal| refusal.code), Some(PARSE_ERROR));
        assert_eq!(screen(b"\xff{}").map(|refusal| refusal.code), Some(PARSE_ERROR));
        // A response may carry any id; rmcp reads it.
        assert_eq!(code(r#"{"jsonrpc": "2.0", "id": null, "error": {"code": 1, "message": "m"}}"#), None);
        assert_eq!(request_id(br#"{"jsonrpc": "2.0", "id": "r-1", "method": "ping"}"#), json!("r-1"));
        assert_eq!(request_id(b"[]"), Value::Null);
    }
}
