//! Reading fields out of untyped JSON while collecting violations with their field paths.
//!
//! Contracts and skill documents arrive as JSON or YAML values; these readers turn each field
//! into a typed value or a [`Violation`] that names the field and what was expected, and keep
//! going so that one pass reports every problem.

use serde_json::{Map, Value};

use crate::json_type;
use crate::policy::PolicyWord;
use crate::violation::{Problem, Violation};

/// Joins a parent field path and a key (`implementation` + `auth` → `implementation.auth`).
pub(crate) fn join(parent: &str, key: &str) -> String {
    if parent.is_empty() { key.to_owned() } else { format!("{parent}.{key}") }
}

/// Reports keys of `map` that are not in `allowed`.
pub(crate) fn check_keys(
    map: &Map<String, Value>,
    allowed: &'static [&'static str],
    field: &str,
    out: &mut Vec<Violation>,
) {
    let unknown: Vec<String> = map.keys().filter(|k| !allowed.contains(&k.as_str())).cloned().collect();
    if !unknown.is_empty() {
        out.push(Violation::new(field, Problem::UnknownKeys { unknown, allowed }));
    }
}

/// A present, non-null value of `key`.
pub(crate) fn present<'a>(map: &'a Map<String, Value>, key: &str) -> Option<&'a Value> {
    map.get(key).filter(|v| !v.is_null())
}

pub(crate) fn wrong_type(field: &str, expected: &'static str, found: &Value) -> Violation {
    Violation::new(field, Problem::WrongType { expected, found: json_type(found) })
}

/// A string field; `None` (with a violation) when it has another type.
pub(crate) fn string<'a>(value: &'a Value, field: &str, out: &mut Vec<Violation>) -> Option<&'a str> {
    match value {
        Value::String(s) => Some(s),
        other => {
            out.push(wrong_type(field, "a string", other));
            None
        }
    }
}

/// A non-empty string of at most `max` characters.
pub(crate) fn bounded_string<'a>(
    value: &'a Value,
    field: &str,
    max: usize,
    out: &mut Vec<Violation>,
) -> Option<&'a str> {
    let text = string(value, field, out)?;
    let length = text.chars().count();
    if text.trim().is_empty() {
        out.push(Violation::new(field, Problem::Missing { expected: "a non-empty string" }));
        return None;
    }
    if length > max {
        out.push(Violation::new(field, Problem::TooLong { length, max }));
        return None;
    }
    Some(text)
}

/// An integer in `min..=max` (booleans and floats refused); the default when absent or null.
pub(crate) fn integer_in(
    map: &Map<String, Value>,
    key: &str,
    field: &str,
    (min, max, default): (u64, u64, u64),
    out: &mut Vec<Violation>,
) -> u64 {
    let Some(value) = present(map, key) else {
        return default;
    };
    let Value::Number(number) = value else {
        out.push(wrong_type(field, "an integer", value));
        return default;
    };
    if !(number.is_i64() || number.is_u64()) {
        out.push(Violation::new(field, Problem::WrongType { expected: "an integer", found: "a float" }));
        return default;
    }
    match number.as_u64() {
        Some(n) if (min..=max).contains(&n) => n,
        _ => {
            out.push(Violation::new(field, Problem::OutOfRange { found: number.to_string(), min, max }));
            default
        }
    }
}

/// A word from a closed set; the default when absent or null.
pub(crate) fn word<T>(map: &Map<String, Value>, key: &str, field: &str, out: &mut Vec<Violation>) -> T
where
    T: PolicyWord + Default,
{
    let Some(value) = present(map, key) else {
        return T::default();
    };
    let Some(text) = string(value, field, out) else {
        return T::default();
    };
    match text.parse() {
        Ok(parsed) => parsed,
        Err(error) => {
            out.push(Violation::new(field, Problem::NotAllowed { found: error.found, allowed: error.allowed }));
            T::default()
        }
    }
}

/// A required word from a closed set.
pub(crate) fn required_word<T: PolicyWord>(value: Option<&Value>, field: &str, out: &mut Vec<Violation>) -> Option<T> {
    let Some(value) = value.filter(|v| !v.is_null()) else {
        out.push(Violation::new(field, Problem::MissingWord { allowed: T::WORDS }));
        return None;
    };
    let text = string(value, field, out)?;
    match text.parse() {
        Ok(parsed) => Some(parsed),
        Err(error) => {
            out.push(Violation::new(field, Problem::NotAllowed { found: error.found, allowed: error.allowed }));
            None
        }
    }
}

/// The first place a NUL character appears in a value (keys included), as a dotted path.
pub(crate) fn find_nul(value: &Value, at: &str) -> Option<String> {
    match value {
        Value::String(s) => s.contains('\0').then(|| at.to_owned()),
        Value::Array(items) => items.iter().enumerate().find_map(|(i, item)| find_nul(item, &format!("{at}[{i}]"))),
        Value::Object(map) => map.iter().find_map(|(key, item)| {
            let here = join(at, key);
            if key.contains('\0') { Some(here) } else { find_nul(item, &here) }
        }),
        _ => None,
    }
}
