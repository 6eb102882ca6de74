//! The CEL specification's own cases that apply to JSON (`tests/cel-spec-cases.json`, transcribed
//! from the specification's conformance data), run against the pinned implementation. A case
//! passes when the value is the expected one, of the same type (an `int` is not a `uint`), or
//! when an error was expected and the evaluation failed. The cases the implementation answers
//! otherwise are listed in [`KNOWN`] with what it does: the test fails when a case fails that is
//! not listed, and when a listed case passes (a bump fixed it: take it off the list).

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

use base64::Engine as _;
use serde_json::Value;

/// Cases the pinned implementation answers otherwise than the specification: `file/section/name`
/// and what it does instead.
const KNOWN: &[(&str, &str)] = &[];

/// A tagged value of the case file as a CEL value.
fn typed(value: &Value) -> cel::Value {
    let Some((tag, inner)) = value.as_object().and_then(|fields| fields.iter().next()) else {
        panic!("a typed value has one tag: {value}");
    };
    let number = |inner: &Value| -> String { inner.as_str().map_or_else(|| inner.to_string(), str::to_owned) };
    match tag.as_str() {
        "int" => cel::Value::Int(number(inner).parse().expect("an int")),
        "uint" => cel::Value::UInt(number(inner).parse().expect("a uint")),
        "double" => cel::Value::Float(inner.as_f64().unwrap_or_else(|| number(inner).parse().expect("a double"))),
        "string" => cel::Value::String(Arc::new(inner.as_str().expect("a string").to_owned())),
        "bytes" => cel::Value::Bytes(Arc::new(
            base64::engine::general_purpose::STANDARD.decode(inner.as_str().expect("base64")).expect("base64"),
        )),
        "bool" => cel::Value::Bool(inner.as_bool().expect("a bool")),
        "null" => cel::Value::Null,
        "list" => cel::Value::List(Arc::new(inner.as_array().expect("a list").iter().map(typed).collect())),
        "map" => {
            let mut map = HashMap::new();
            for entry in inner.as_array().expect("map entries") {
                let key = match typed(&entry[0]) {
                    cel::Value::Int(n) => cel::objects::Key::Int(n),
                    cel::Value::UInt(n) => cel::objects::Key::Uint(n),
                    cel::Value::Bool(b) => cel::objects::Key::Bool(b),
                    cel::Value::String(s) => cel::objects::Key::String(s),
                    other => panic!("a map key: {other:?}"),
                };
                map.insert(key, typed(&entry[1]));
            }
            cel::Value::Map(cel::objects::Map { map: Arc::new(map) })
        }
        other => panic!("an unknown tag {other}"),
    }
}

/// Whether two values are the same, type included.
fn same(left: &cel::Value, right: &cel::Value) -> bool {
    use cel::Value::{Bool, Bytes, Float, Int, List, Map, Null, String, UInt};
    match (left, right) {
        (Int(a), Int(b)) => a == b,
        (UInt(a), UInt(b)) => a == b,
        (Float(a), Float(b)) => a == b || (a.is_nan() && b.is_nan()),
        (String(a), String(b)) => a == b,
        (Bytes(a), Bytes(b)) => a == b,
        (Bool(a), Bool(b)) => a == b,
        (Null, Null) => true,
        (List(a), List(b)) => a.len() == b.len() && a.iter().zip(b.iter()).all(|(x, y)| same(x, y)),
        (Map(a), Map(b)) => {
            a.map.len() == b.map.len()
                && a.map.iter().all(|(key, value)| b.map.get(key).is_some_and(|other| same(value, other)))
        }
        _ => false,
    }
}

/// The outcome of one case: `None` when it passes, else what happened.
fn run(case: &Value) -> Option<String> {
    let expr = case["expr"].as_str().expect("an expr");
    let program = match cel::Env::stdlib().compile(expr) {
        Ok(program) => program,
        Err(errors) if case.get("error").is_some() => {
            let _ = errors;
            return None;
        }
        Err(errors) => return Some(format!("does not compile: {errors}")),
    };
    let mut context = cel::Context::default();
    for (name, value) in case["bindings"].as_object().into_iter().flatten() {
        context.add_variable_from_value(name.as_str(), typed(value));
    }
    match (program.execute(&context), case.get("value")) {
        (Ok(actual), Some(expected)) if same(&actual, &typed(expected)) => None,
        (Ok(actual), Some(expected)) => Some(format!("is {actual:?}, not {expected}")),
        (Ok(actual), None) => Some(format!("is {actual:?}, not an error")),
        (Err(_), None) => None,
        (Err(error), Some(expected)) => Some(format!("fails ({error}), not {expected}")),
    }
}

#[test]
fn the_specifications_cases_hold_but_the_known_ones() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/cel-spec-cases.json");
    let file: Value = serde_json::from_str(&std::fs::read_to_string(path).expect("the cases")).expect("JSON");
    let cases = file["cases"].as_array().expect("cases");
    assert!(cases.len() >= 150, "the vendored subset is there: {} cases", cases.len());
    let known: BTreeSet<&str> = KNOWN.iter().map(|(name, _)| *name).collect();
    let mut unexpected = Vec::new();
    let mut fixed = Vec::new();
    let mut seen = BTreeSet::new();
    for case in cases {
        let name = format!(
            "{}/{}/{}",
            case["file"].as_str().unwrap_or_default(),
            case["section"].as_str().unwrap_or_default(),
            case["name"].as_str().unwrap_or_default()
        );
        // One evaluation panicking is the implementation failing the case, not the test.
        let outcome = std::panic::catch_unwind(|| run(case)).unwrap_or_else(|_| Some("panics".to_owned()));
        match (outcome, known.contains(name.as_str())) {
            (Some(why), false) => {
                unexpected.push(format!("{name}: `{}` {why}", case["expr"].as_str().unwrap_or_default()))
            }
            (None, true) => fixed.push(name.clone()),
            _ => {}
        }
        seen.insert(name);
    }
    let stale: Vec<_> = known.iter().filter(|name| !seen.contains(**name)).collect();
    assert!(stale.is_empty(), "known cases that are not in the file: {stale:?}");
    assert!(fixed.is_empty(), "known divergences the implementation now gets right (take them off KNOWN): {fixed:#?}");
    assert!(unexpected.is_empty(), "{} cases fail:\n{}", unexpected.len(), unexpected.join("\n"));
}
