//! Generated schemas in the form the reference exports: `$schema` first, and an optional field
//! (`Option<T>`) as pydantic writes `x: T | None = None` — `anyOf: [T, {type: null}]` with
//! `default: null`, and not required (in inputs and outputs alike), so an output may leave it out.

use serde_json::{Map, Value, json};

/// `schema` in the reference's form.
pub(crate) fn reference_form(schema: Value) -> Value {
    let Value::Object(mut map) = schema else { return schema };
    rewrite_optionals(&mut map);
    let mut ordered = Map::new();
    if let Some(meta) = map.remove("$schema") {
        ordered.insert("$schema".into(), meta);
    }
    ordered.extend(map);
    Value::Object(ordered)
}

fn is_null_type(value: &Value) -> bool {
    value.as_object().is_some_and(|branch| branch.len() == 1 && branch.get("type") == Some(&json!("null")))
}

/// Whether a property's schema lets `null` through as a branch of its own (`type: [T, "null"]`
/// or `anyOf` with a `{type: null}` branch) — what schemars makes of an `Option<T>`.
fn optional(schema: &Map<String, Value>) -> bool {
    let typed = schema
        .get("type")
        .and_then(Value::as_array)
        .is_some_and(|types| types.len() > 1 && types.iter().any(|t| t == "null"));
    let branched =
        schema.get("anyOf").and_then(Value::as_array).is_some_and(|branches| branches.iter().any(is_null_type));
    typed || branched
}

/// `type: [T, "null"]` → `anyOf: [{type: T, …}, {type: null}]`, keeping the annotations outside.
fn as_any_of(schema: &mut Map<String, Value>) {
    let Some(Value::Array(types)) = schema.get("type").cloned() else { return };
    if !types.iter().any(|t| t == "null") || types.len() < 2 {
        return;
    }
    let others: Vec<Value> = types.into_iter().filter(|t| t != "null").collect();
    let mut branch = Map::new();
    let mut outside = Map::new();
    for (key, value) in std::mem::take(schema) {
        match key.as_str() {
            "type" => {}
            "description" | "title" | "default" | "examples" | "deprecated" | "readOnly" | "writeOnly" => {
                outside.insert(key, value);
            }
            "enum" => {
                let kept: Vec<Value> =
                    value.as_array().into_iter().flatten().filter(|v| !v.is_null()).cloned().collect();
                branch.insert(key, Value::Array(kept));
            }
            _ => {
                branch.insert(key, value);
            }
        }
    }
    let single = if others.len() == 1 { others[0].clone() } else { Value::Array(others) };
    let mut first = Map::new();
    first.insert("type".into(), single);
    first.extend(branch);
    schema.insert("anyOf".into(), json!([Value::Object(first), {"type": "null"}]));
    schema.extend(outside);
}

/// Walks the whole document: every nullable type becomes an `anyOf`, and every optional
/// property gets `default: null` and leaves `required`.
fn rewrite_optionals(schema: &mut Map<String, Value>) {
    for value in schema.values_mut() {
        match value {
            Value::Object(inner) => rewrite_optionals(inner),
            Value::Array(items) => items.iter_mut().filter_map(Value::as_object_mut).for_each(rewrite_optionals),
            _ => {}
        }
    }
    as_any_of(schema);
    let Some(Value::Object(properties)) = schema.get_mut("properties") else { return };
    let mut optional_names = Vec::new();
    for (name, property) in properties.iter_mut() {
        let Value::Object(property) = property else { continue };
        if optional(property) {
            if !property.contains_key("default") {
                let any_of = property.remove("anyOf");
                let rest = std::mem::take(property);
                if let Some(any_of) = any_of {
                    property.insert("anyOf".into(), any_of);
                }
                property.insert("default".into(), Value::Null);
                property.extend(rest);
            }
            optional_names.push(name.clone());
        }
    }
    if let Some(Value::Array(required)) = schema.get_mut("required") {
        required.retain(|name| !name.as_str().is_some_and(|name| optional_names.iter().any(|o| o == name)));
        if required.is_empty() {
            schema.remove("required");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_nullable_property_reads_as_the_reference_writes_it() {
        let schema = json!({"$defs": {}, "type": "object", "$schema": "x",
            "properties": {
                "claim": {"type": "string"},
                "note": {"type": ["string", "null"], "description": "a note", "maxLength": 5},
                "code": {"type": ["string", "null"], "enum": ["a", "b", null]},
                "lines": {"anyOf": [{"$ref": "#/$defs/Line"}, {"type": "null"}]},
                "any": true,
            },
            "required": ["claim", "note", "code", "lines"]});
        let form = reference_form(schema);
        assert_eq!(form.as_object().expect("an object").keys().next().map(String::as_str), Some("$schema"));
        assert_eq!(form["required"], json!(["claim"]));
        assert_eq!(
            form["properties"]["note"],
            json!({"anyOf": [{"type": "string", "maxLength": 5}, {"type": "null"}], "default": null, "description": "a note"})
        );
        assert_eq!(form["properties"]["code"]["anyOf"][0], json!({"type": "string", "enum": ["a", "b"]}));
        assert_eq!(form["properties"]["lines"]["default"], Value::Null);
        assert_eq!(form["properties"]["claim"], json!({"type": "string"}));
    }

    #[test]
    fn nothing_is_required_when_every_field_is_optional() {
        let form = reference_form(
            json!({"type": "object", "properties": {"a": {"type": ["integer", "null"]}}, "required": ["a"]}),
        );
        assert!(form.get("required").is_none(), "{form}");
    }
}
