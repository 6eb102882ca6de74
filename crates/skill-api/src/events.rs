//! The events journal as readers see it: every state change appends one event.

mod kinds;

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

pub use kinds::*;

/// One entry of the journal.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct EventOut {
    /// The journal's order: strictly increasing.
    pub seq: i64,
    pub id: String,
    /// `skill.registered`, `skill.updated`, `package.installed`, …
    pub kind: String,
    /// What it is about: `skill:<id>`, `principal:<id>`, `package:<key>`.
    pub subject: String,
    pub data: Value,
    pub actor_id: Option<String>,
    pub request_id: Option<String>,
    pub created_at: String,
}

/// The query of `GET /events`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EventsQuery {
    /// Events after this sequence number (default 0).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub after: Option<i64>,
    /// Only this subject's events.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub subject: Option<String>,
    /// 1 to 1000, default 100.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub limit: Option<u32>,
}

/// `docs/events.md` between its markers: every kind with the fields of its data, then the shapes
/// those fields name, rendered from the types.
pub fn events_markdown() -> String {
    let mut out = String::new();
    let mut shapes: BTreeMap<String, Value> = BTreeMap::new();
    out.push_str("| kind | what it records |\n|---|---|\n");
    for kind in event_kinds() {
        let about = kind.about.trim().replace('\n', " ");
        out.push_str(&format!("| [`{0}`](#{1}) | {about} |\n", kind.kind, anchor(kind.kind)));
    }
    for kind in event_kinds() {
        let schema = kind.schema.as_value();
        if let Some(defs) = schema.get("$defs").and_then(Value::as_object) {
            shapes.extend(defs.iter().map(|(name, def)| (name.clone(), def.clone())));
        }
        out.push_str(&format!("\n### `{}`\n\n{}\n\n", kind.kind, kind.about.trim().replace('\n', " ")));
        out.push_str(&fields_table(schema));
    }
    out.push_str("\n### Shapes\n\nThe types the fields above name.\n");
    for (name, shape) in &shapes {
        out.push_str(&format!("\n#### `{name}`\n\n"));
        if let Some(about) = shape.get("description").and_then(Value::as_str) {
            out.push_str(&format!("{}\n\n", about.replace('\n', " ")));
        }
        if let Some(words) = shape.get("enum").and_then(Value::as_array) {
            out.push_str(&format!("One of {}.\n", words_of(words)));
        } else if let Some(variants) = shape.get("oneOf").and_then(Value::as_array) {
            for variant in variants.iter().filter(|variant| variant.get("properties").is_none()) {
                let about = variant.get("description").and_then(Value::as_str).unwrap_or_default().replace('\n', " ");
                let words: Vec<&Value> = match (variant.get("const"), variant.get("enum")) {
                    (Some(word), _) => vec![word],
                    (None, Some(Value::Array(words))) => words.iter().collect(),
                    _ => Vec::new(),
                };
                for word in words.iter().filter_map(|word| word.as_str()) {
                    out.push_str(&format!("- `{word}`{}{about}\n", if about.is_empty() { "" } else { " — " }));
                }
            }
            for variant in variants.iter().filter(|variant| variant.get("properties").is_some()) {
                let tag = variant.pointer("/properties/kind/const").and_then(Value::as_str).unwrap_or("?");
                let about = variant.get("description").and_then(Value::as_str).unwrap_or_default().replace('\n', " ");
                out.push_str(&format!("`kind: \"{tag}\"` — {about}\n\n"));
                out.push_str(&fields_table(variant));
                out.push('\n');
            }
        } else {
            out.push_str(&fields_table(shape));
        }
    }
    out
}

/// The anchor a `### \`kind\`` heading gets.
fn anchor(kind: &str) -> String {
    kind.chars().filter(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == '-').collect()
}

fn words_of(words: &[Value]) -> String {
    words.iter().filter_map(Value::as_str).map(|word| format!("`{word}`")).collect::<Vec<_>>().join(", ")
}

/// The properties of an object schema as a table.
fn fields_table(schema: &Value) -> String {
    let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
        return "No fields.\n".to_owned();
    };
    let mut out = String::from("| field | type | what |\n|---|---|---|\n");
    for (name, property) in properties {
        let about = property.get("description").and_then(Value::as_str).unwrap_or_default().replace('\n', " ");
        out.push_str(&format!("| `{name}` | {} | {about} |\n", type_of(property)));
    }
    out
}

/// A field's type as people read it: `string`, `integer or null`, `array of string`, a shape's
/// name, or a list of words.
fn type_of(property: &Value) -> String {
    if let Some(reference) = property.get("$ref").and_then(Value::as_str) {
        let name = reference.rsplit('/').next().unwrap_or(reference);
        return format!("[`{name}`](#{})", name.to_lowercase());
    }
    if let Some(constant) = property.get("const") {
        return format!("`{constant}`");
    }
    if let Some(words) = property.get("enum").and_then(Value::as_array) {
        return words_of(words);
    }
    if let Some(any) = property.get("anyOf").and_then(Value::as_array) {
        return any.iter().map(type_of).collect::<Vec<_>>().join(" or ");
    }
    match property.get("type") {
        Some(Value::String(kind)) if kind == "array" => {
            format!("array of {}", property.get("items").map_or_else(|| "any JSON".to_owned(), type_of))
        }
        Some(Value::String(kind)) => kind.clone(),
        Some(Value::Array(kinds)) => {
            let kinds: Vec<String> = kinds
                .iter()
                .filter_map(Value::as_str)
                .map(|kind| match kind {
                    "array" => {
                        format!("array of {}", property.get("items").map_or_else(|| "any JSON".to_owned(), type_of))
                    }
                    other => other.to_owned(),
                })
                .collect();
            kinds.join(" or ")
        }
        _ => "any JSON".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_is_listed_once() {
        let kinds: Vec<&str> = event_kinds().iter().map(|kind| kind.kind).collect();
        let unique: std::collections::BTreeSet<&str> = kinds.iter().copied().collect();
        assert_eq!(unique.len(), kinds.len(), "a kind twice: {kinds:?}");
        for kind in &kinds {
            let (subject, what) = kind.split_once('.').expect("subject.what");
            assert!(!subject.is_empty() && !what.is_empty(), "{kind}");
        }
    }

    #[test]
    fn a_payload_is_what_it_always_was() {
        let closed = TaskClosed { status: crate::TaskStatus::Done, workspace_id: "w".into(), reason: None };
        assert_eq!(
            serde_json::to_value(&closed).expect("serializes"),
            serde_json::json!({"status": "done", "workspaceId": "w", "reason": null}),
            "an absent reason is null, as before"
        );
        let started = RunStarted { task_id: "t".into(), owner: "p".into(), execution: None };
        assert_eq!(
            serde_json::to_value(&started).expect("serializes"),
            serde_json::json!({"taskId": "t", "owner": "p"})
        );
        assert_eq!(<RunStarted as EventData>::KIND, "run.started");
    }

    #[test]
    fn docs_events_md_is_current() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/events.md");
        let text = std::fs::read_to_string(&path).expect("docs/events.md exists");
        let (start, end) = ("<!-- events:start -->\n", "<!-- events:end -->");
        let begin = text.find(start).expect("start marker") + start.len();
        let finish = text.find(end).expect("end marker");
        let rendered = events_markdown();
        if text[begin..finish] != rendered {
            if std::env::var_os("SKILL_UPDATE_DOCS").is_some() {
                let updated = format!("{}{}{}", &text[..begin], rendered, &text[finish..]);
                std::fs::write(&path, updated).expect("docs/events.md is writable");
            } else {
                panic!("docs/events.md is out of date: run `SKILL_UPDATE_DOCS=1 cargo test -p skill-api events`");
            }
        }
    }
}
