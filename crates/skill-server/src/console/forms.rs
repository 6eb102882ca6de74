//! Forms made from JSON Schema: a task type's custom fields, a skill's inputs. Each property of
//! an object becomes a field named `f.<property>` — a text box or a text area for a string (a
//! list for an enum), a number box, a check box, or JSON for anything else — labelled by its
//! `title` (else its name), with its description, marked when required. What comes back is read
//! into JSON by the same schema: an empty field is left out (the engine then says what is
//! missing), a number or JSON that does not read is an error naming the field.

use maud::{Markup, html};
use serde_json::{Map, Value};
use skill_api::{JsonType, SchemaView};

/// The prefix of every generated field's name.
const PREFIX: &str = "f.";

/// The properties of an object schema, in order, with whether each is required; each one
/// without a `null` alternative (`Option<T>` is `anyOf [T, null]`).
fn properties(schema: &Value) -> Vec<(&String, SchemaView<'_>, bool)> {
    let schema = SchemaView(schema);
    let required = schema.required();
    schema
        .properties()
        .map(|(name, property)| (name, property.without_null(), required.contains(&name.as_str())))
        .collect()
}

/// How a property is entered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Line,
    Text,
    Choice,
    Integer,
    Number,
    Flag,
    Json,
}

/// Names of strings that hold prose: a text area, unless a `maxLength` of at most 200 says
/// otherwise.
const LONG: [&str; 12] = [
    "text",
    "message",
    "body",
    "reply",
    "comment",
    "description",
    "content",
    "notes",
    "note",
    "draft",
    "prompt",
    "summary",
];

fn kind(name: &str, property: SchemaView<'_>) -> Kind {
    if property.choices().is_some_and(|values| values.iter().all(Value::is_string)) {
        return Kind::Choice;
    }
    match property.kind() {
        Some(JsonType::String) => match property.max_length() {
            Some(max) if max > 200 => Kind::Text,
            Some(_) => Kind::Line,
            None if LONG.contains(&name) => Kind::Text,
            None => Kind::Line,
        },
        Some(JsonType::Integer) => Kind::Integer,
        Some(JsonType::Number) => Kind::Number,
        Some(JsonType::Boolean) => Kind::Flag,
        _ => Kind::Json,
    }
}

/// The fields of `schema` (an object schema), filled with `values` when given (what was sent,
/// or what the task already holds).
pub(super) fn fields(schema: &Value, values: &Map<String, Value>, id_prefix: &str) -> Markup {
    html! {
        @for (name, property, required) in properties(schema) {
            @let id = format!("{id_prefix}{name}");
            @let field = format!("{PREFIX}{name}");
            @let label = property.title().unwrap_or(name);
            @let description = property.description();
            @let value = values.get(name);
            @let text = value.map(|value| match value { Value::String(text) => text.clone(), other => other.to_string() });
            div.field {
                label for=(id) { (label) @if required { " " span.required title="required" { "*" } } }
                @match kind(name, property) {
                    Kind::Line => input id=(id) type="text" name=(field) value=[text.as_deref()] required[required];
                    Kind::Text => textarea id=(id) name=(field) rows="4" required[required] { (text.clone().unwrap_or_default()) },
                    Kind::Choice => {
                        select id=(id) name=(field) required[required] {
                            @if !required { option value="" { "—" } }
                            @for choice in property.choices().into_iter().flatten().filter_map(Value::as_str) {
                                option value=(choice) selected[text.as_deref() == Some(choice)] { (choice) }
                            }
                        }
                    }
                    Kind::Integer => input id=(id) type="number" step="1" name=(field) value=[text.as_deref()] required[required];
                    Kind::Number => input id=(id) type="number" step="any" name=(field) value=[text.as_deref()] required[required];
                    Kind::Flag => input id=(id) type="checkbox" name=(field) value="true" checked[value == Some(&Value::Bool(true))];
                    Kind::Json => textarea.json id=(id) name=(field) rows="3" placeholder="JSON" { (text.clone().unwrap_or_default()) },
                }
                @if let Some(description) = description { p.help { (description) } }
            }
        }
    }
}

/// What a generated form sent: each `f.<property>` of `schema` read as its kind says; a field
/// left empty is not sent. `Err((field, why))` names the first that does not read.
pub(super) fn read(schema: &Value, sent: &[(String, String)]) -> Result<Map<String, Value>, (String, String)> {
    let mut out = Map::new();
    for (name, property, _) in properties(schema) {
        let field = format!("{PREFIX}{name}");
        let value = sent.iter().rev().find(|(key, _)| *key == field).map(|(_, value)| value.as_str());
        let kind = kind(name, property);
        if kind == Kind::Flag {
            out.insert(name.clone(), Value::Bool(value == Some("true")));
            continue;
        }
        let Some(text) = value.filter(|text| !text.trim().is_empty()) else { continue };
        let read = match kind {
            Kind::Line | Kind::Text | Kind::Choice => Value::String(lines(text)),
            Kind::Integer => text
                .trim()
                .parse::<i64>()
                .map(Value::from)
                .map_err(|_| (name.clone(), format!("{name} is a whole number, not {text:?}")))?,
            Kind::Number => text
                .trim()
                .parse::<f64>()
                .ok()
                .and_then(serde_json::Number::from_f64)
                .map(Value::Number)
                .ok_or_else(|| (name.clone(), format!("{name} is a number, not {text:?}")))?,
            Kind::Json => {
                serde_json::from_str(text).map_err(|error| (name.clone(), format!("{name} is JSON: {error}")))?
            }
            Kind::Flag => unreachable!("invariant: flags are read above"),
        };
        out.insert(name.clone(), read);
    }
    Ok(out)
}

/// The generated fields a form sent, as they were typed: what the form shows again when it is
/// sent back with an error.
pub(super) fn as_typed(sent: &[(String, String)]) -> Map<String, Value> {
    sent.iter()
        .filter_map(|(key, value)| Some((key.strip_prefix(PREFIX)?.to_owned(), Value::String(value.clone()))))
        .collect()
}

/// `text` with the CRLF line breaks a browser sends as `\n`.
pub(super) fn lines(text: &str) -> String {
    text.replace("\r\n", "\n")
}

/// The value of the plain (not generated) field `name` that a form sent.
pub(super) fn plain<'a>(sent: &'a [(String, String)], name: &str) -> Option<&'a str> {
    sent.iter().rev().find(|(key, _)| key == name).map(|(_, value)| value.as_str())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn schema() -> Value {
        json!({"type": "object", "required": ["claim"], "properties": {
            "claim": {"type": "string", "maxLength": 20, "title": "Claim number"},
            "message": {"type": "string", "description": "What the customer wrote."},
            "count": {"type": "integer"}, "share": {"type": "number"}, "urgent": {"type": "boolean"},
            "tone": {"enum": ["warm", "plain"]}, "tags": {"type": "array"},
            "note": {"anyOf": [{"type": "string", "maxLength": 10}, {"type": "null"}]}}})
    }

    #[test]
    fn each_property_becomes_a_field_of_its_kind() {
        let html = fields(&schema(), &Map::new(), "new-").into_string();
        for expected in [
            r#"<label for="new-claim">Claim number <span class="required" title="required">*</span></label>"#,
            r#"<input id="new-claim" type="text" name="f.claim" required>"#,
            r#"<textarea id="new-message" name="f.message" rows="4">"#,
            r#"<p class="help">What the customer wrote.</p>"#,
            r#"type="number" step="1" name="f.count""#,
            r#"type="checkbox" name="f.urgent""#,
            r#"<option value="warm">warm</option>"#,
            r#"placeholder="JSON""#,
            r#"<input id="new-note" type="text" name="f.note">"#,
        ] {
            assert!(html.contains(expected), "{expected} in {html}");
        }
        let filled = fields(&schema(), &json!({"claim": "C-<1>"}).as_object().cloned().unwrap_or_default(), "x-");
        assert!(filled.into_string().contains(r#"value="C-&lt;1&gt;""#), "escaped");
    }

    #[test]
    fn what_comes_back_is_read_by_the_schema() {
        let sent: Vec<(String, String)> = [
            ("f.claim", "C-1"),
            ("f.message", ""),
            ("f.count", " 3 "),
            ("f.share", "0.5"),
            ("f.urgent", "true"),
            ("f.tags", "[\"a\"]"),
            ("f.unknown", "x"),
            ("csrf", "t"),
        ]
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
        let read = read(&schema(), &sent).expect("reads");
        assert_eq!(
            Value::Object(read),
            json!({"claim": "C-1", "count": 3, "share": 0.5, "urgent": true, "tags": ["a"]}),
            "empty left out, unknown ignored"
        );
        let bad = vec![("f.count".to_owned(), "three".to_owned())];
        assert_eq!(super::read(&schema(), &bad).expect_err("refused").0, "count");
        let bad = vec![("f.tags".to_owned(), "[".to_owned())];
        assert!(super::read(&schema(), &bad).expect_err("refused").1.contains("tags is JSON"));
        assert_eq!(plain(&sent, "csrf"), Some("t"));
    }
}
