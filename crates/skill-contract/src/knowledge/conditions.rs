//! The conditions of a knowledge query, `{attribute, op, value}`, with the platform's semantics.
//!
//! `exists` compares "present and not `[]`" with `value` (default true); otherwise a missing
//! attribute never matches, and a list attribute matches when any element does. `eq` compares
//! numbers as numbers (booleans excluded), booleans by identity, anything else as text; `in` is
//! any `eq`; `prefix` is equality or a start followed by `.` (so `62.011` is not under `62.01`);
//! `lte`/`gte` compare numbers when the condition's value is a number, else ISO dates and times
//! (naive ones in UTC; unreadable ones never match). [`Op`] is the ops there are ([`OPS`] as
//! written): a condition with any other does not read, and the core refuses it naming the field.

use chrono::{DateTime, NaiveDate, NaiveDateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::fingerprint::python_float;

/// The ops a condition may name, as written.
pub const OPS: &[&str] = &["eq", "in", "prefix", "lte", "gte", "exists"];

/// How a condition compares.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Op {
    #[default]
    Eq,
    In,
    Prefix,
    Lte,
    Gte,
    Exists,
}

/// One condition of a query: `{attribute, op (default eq), value}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Condition {
    pub attribute: String,
    #[serde(default)]
    pub op: Op,
    #[serde(default)]
    pub value: Value,
}

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

fn one(attribute: &Value, op: Op, value: &Value) -> bool {
    match op {
        Op::Eq => equal(attribute, value),
        Op::In => value.as_array().is_some_and(|options| options.iter().any(|v| equal(attribute, v))),
        Op::Prefix => {
            let (text, prefix) = (as_text(attribute), as_text(value));
            text == prefix || text.starts_with(&format!("{prefix}."))
        }
        Op::Lte => ordered(attribute, value, true),
        Op::Gte | Op::Exists => ordered(attribute, value, false),
    }
}

/// Whether `attributes` (an entity's attributes object) satisfy `condition`.
pub fn holds(condition: &Condition, attributes: &Value) -> bool {
    let value = &condition.value;
    let present = attributes.get(condition.attribute.as_str()).filter(|v| !v.is_null());
    if condition.op == Op::Exists {
        let exists = present.is_some_and(|v| v.as_array().is_none_or(|items| !items.is_empty()));
        return exists == value.as_bool().unwrap_or(true);
    }
    match present {
        None => false,
        Some(Value::Array(items)) => items.iter().any(|item| one(item, condition.op, value)),
        Some(attribute) => one(attribute, condition.op, value),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn check(attributes: Value, condition: Value) -> bool {
        holds(&serde_json::from_value(condition).expect("a condition"), &attributes)
    }

    #[test]
    fn a_condition_reads_with_eq_by_default_and_refuses_an_unknown_op() {
        let plain: Condition = serde_json::from_value(json!({"attribute": "n", "value": 5})).expect("reads");
        assert_eq!(plain.op, Op::Eq);
        assert!(serde_json::from_value::<Condition>(json!({"attribute": "n", "op": "near"})).is_err());
        assert!(serde_json::from_value::<Condition>(json!({"op": "eq"})).is_err(), "an attribute is named");
        let every: Vec<Op> = OPS.iter().map(|op| serde_json::from_value(json!(op)).expect("an op")).collect();
        assert_eq!(every, [Op::Eq, Op::In, Op::Prefix, Op::Lte, Op::Gte, Op::Exists], "OPS names each op");
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
