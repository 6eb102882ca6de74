//! The conditions of a knowledge query, `{attribute, op, value}`, with the platform's semantics.
//!
//! `exists` compares "present and not `[]`" with `value` (default true); otherwise a missing
//! attribute never matches, and a list attribute matches when any element does. `eq` compares
//! numbers as numbers (booleans excluded), booleans by identity, anything else as text; `in` is
//! any `eq`; `prefix` is equality or a start followed by `.` (so `62.011` is not under `62.01`);
//! `lte`/`gte` compare numbers when the condition's value is a number, else ISO dates and times
//! (naive ones in UTC; unreadable ones never match). [`OPS`] are the ops there are: the core
//! refuses a condition with any other (evaluated here, an unknown op behaves like `gte`).

use chrono::{DateTime, NaiveDate, NaiveDateTime, Utc};
use serde_json::Value;

use super::fingerprint::python_float;

/// The ops a condition may name.
pub const OPS: &[&str] = &["eq", "in", "prefix", "lte", "gte", "exists"];

fn number(value: &Value) -> Option<f64> {
    match value {
        Value::Number(n) => n.as_f64(),
        _ => None,
    }
}

fn as_text(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        Value::Number(n) if n.is_f64() => python_float(n.as_f64().unwrap_or(0.0)),
        Value::Number(n) => n.to_string(),
        Value::Bool(b) => if *b { "True" } else { "False" }.to_owned(),
        Value::Null => "None".to_owned(),
        other => other.to_string(),
    }
}

fn equal(attribute: &Value, value: &Value) -> bool {
    match (attribute, value) {
        (Value::Bool(a), Value::Bool(b)) => a == b,
        (Value::Bool(_), _) | (_, Value::Bool(_)) => false,
        (Value::Number(_), Value::Number(_)) => number(attribute) == number(value),
        _ => as_text(attribute) == as_text(value),
    }
}

fn moment(value: &Value) -> Option<DateTime<Utc>> {
    let text = value.as_str()?;
    if let Ok(aware) = DateTime::parse_from_rfc3339(text) {
        return Some(aware.with_timezone(&Utc));
    }
    for format in ["%Y-%m-%dT%H:%M:%S%.f", "%Y-%m-%d %H:%M:%S%.f", "%Y-%m-%dT%H:%M", "%Y-%m-%d %H:%M"] {
        if let Ok(naive) = NaiveDateTime::parse_from_str(text, format) {
            return Some(naive.and_utc());
        }
    }
    NaiveDate::parse_from_str(text, "%Y-%m-%d").ok().and_then(|d| d.and_hms_opt(0, 0, 0)).map(|n| n.and_utc())
}

fn ordered(attribute: &Value, value: &Value, at_most: bool) -> bool {
    let compare = |a: f64, b: f64| if at_most { a <= b } else { a >= b };
    if matches!(value, Value::Number(_)) {
        return match (attribute, number(attribute), number(value)) {
            (Value::Number(_), Some(a), Some(b)) => compare(a, b),
            _ => false,
        };
    }
    match (moment(attribute), moment(value)) {
        (Some(a), Some(b)) => {
            if at_most {
                a <= b
            } else {
                a >= b
            }
        }
        _ => false,
    }
}

fn one(attribute: &Value, op: &str, value: &Value) -> bool {
    match op {
        "eq" => equal(attribute, value),
        "in" => value.as_array().is_some_and(|options| options.iter().any(|v| equal(attribute, v))),
        "prefix" => {
            let (text, prefix) = (as_text(attribute), as_text(value));
            text == prefix || text.starts_with(&format!("{prefix}."))
        }
        "lte" => ordered(attribute, value, true),
        _ => ordered(attribute, value, false),
    }
}

/// Whether `attributes` satisfy `condition`.
pub fn holds(condition: &Value, attributes: &Value) -> bool {
    let name = condition.get("attribute").and_then(Value::as_str).unwrap_or("");
    let op = condition.get("op").and_then(Value::as_str).unwrap_or("eq");
    let value = condition.get("value").unwrap_or(&Value::Null);
    let present = attributes.get(name).filter(|v| !v.is_null());
    if op == "exists" {
        let exists = present.is_some_and(|v| v.as_array().is_none_or(|items| !items.is_empty()));
        return exists == value.as_bool().unwrap_or(true);
    }
    match present {
        None => false,
        Some(Value::Array(items)) => items.iter().any(|item| one(item, op, value)),
        Some(attribute) => one(attribute, op, value),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn check(attributes: Value, condition: Value) -> bool {
        holds(&condition, &attributes)
    }

    #[test]
    fn eq_and_in() {
        assert!(check(json!({"n": 5}), json!({"attribute": "n", "op": "eq", "value": 5.0})));
        assert!(
            !check(json!({"n": true}), json!({"attribute": "n", "op": "eq", "value": 1})),
            "booleans are not numbers"
        );
        assert!(check(json!({"n": true}), json!({"attribute": "n", "op": "eq", "value": true})));
        assert!(check(json!({"s": "5"}), json!({"attribute": "s", "op": "eq", "value": 5})), "else as text");
        assert!(check(json!({"s": ["a", "b"]}), json!({"attribute": "s", "op": "eq", "value": "b"})), "any element");
        assert!(check(json!({"s": "b"}), json!({"attribute": "s", "op": "in", "value": ["a", "b"]})));
        assert!(!check(json!({}), json!({"attribute": "s", "op": "eq", "value": "b"})), "missing never matches");
    }

    #[test]
    fn prefix_stops_at_dots() {
        let under =
            |code: &str| check(json!({"okved": code}), json!({"attribute": "okved", "op": "prefix", "value": "62.01"}));
        assert!(under("62.01") && under("62.01.1"));
        assert!(!under("62.011") && !under("62.0"));
    }

    #[test]
    fn ordering_on_numbers_and_dates() {
        let gte =
            |v: Value, bound: Value| check(json!({"x": v}), json!({"attribute": "x", "op": "gte", "value": bound}));
        assert!(gte(json!(10), json!(9.5)));
        assert!(!gte(json!("10"), json!(9)), "a numeric bound needs a number");
        assert!(gte(json!("2024-05-01"), json!("2024-04-30T23:59:59Z")));
        assert!(gte(json!("2024-05-01T03:00:00+03:00"), json!("2024-05-01T00:00:00")), "naive is UTC");
        assert!(!gte(json!("not a date"), json!("2024-01-01")));
        let lte =
            |v: Value, bound: Value| check(json!({"x": v}), json!({"attribute": "x", "op": "lte", "value": bound}));
        assert!(lte(json!(3), json!(3)) && !lte(json!(4), json!(3)));
        assert!(
            check(json!({"x": 4}), json!({"attribute": "x", "op": "bogus", "value": 3})),
            "unknown ops behave like gte"
        );
    }

    #[test]
    fn exists_compares_with_its_value() {
        let exists = |attributes: Value, value: Option<bool>| {
            let mut condition = json!({"attribute": "x", "op": "exists"});
            if let Some(v) = value {
                condition["value"] = json!(v);
            }
            check(attributes, condition)
        };
        assert!(exists(json!({"x": 1}), None));
        assert!(!exists(json!({"x": []}), None), "an empty list does not exist");
        assert!(exists(json!({}), Some(false)));
        assert!(!exists(json!({"x": "y"}), Some(false)));
    }
}
