//! The path expressions task types use to fill a call's inputs: `$` followed by `.name` and
//! `[n]` segments only (at most 500 characters), read from a JSON document (the task's API view,
//! or `{task, approval}` for an approval's outcome).

use serde_json::{Map, Value};
use skill_api::{TaskOut, TaskTypeRef};
use skill_store::records::{TaskRecord, TaskTypeRecord};

use skill_contract::paths::{Segment, parse};
pub(crate) use skill_contract::paths::{is_path, lookup};

use crate::catalog::view_time;

/// The first input of `inputs` mapped from a `$…` text that is not a path, with that text.
pub(crate) fn first_non_path(inputs: &serde_json::Map<String, Value>) -> Option<(&String, &String)> {
    inputs.iter().find_map(|(name, source)| match source {
        Value::String(text) if text.starts_with('$') && !is_path(text) => Some((name, text)),
        _ => None,
    })
}

/// What is wrong with `text`, which is no path.
pub(crate) fn not_a_path(text: &str) -> String {
    format!("{text:?} is not a path: `$` then .name and [n] segments")
}

/// The name under `prefix` that `path` reads: `field_under("$.task.customFields.claim.id",
/// &["task", "customFields"])` is `claim`; `None` when the path does not go below the prefix.
pub(crate) fn field_under(path: &str, prefix: &[&str]) -> Option<String> {
    let segments = parse(path)?;
    let (head, tail) = (segments.get(..prefix.len())?, segments.get(prefix.len())?);
    let under = head.iter().zip(prefix).all(|(segment, key)| matches!(segment, Segment::Key(k) if k == key));
    match tail {
        Segment::Key(name) if under => Some(name.clone()),
        _ => None,
    }
}

/// Inputs from a mapping: a path string alone is the whole input object; an object maps input
/// names to paths (`$…`) or to literal values. A path that names nothing leaves its input out
/// (the schema decides whether it may be missing).
pub(crate) fn fill(inputs: &Value, root: &Value) -> serde_json::Map<String, Value> {
    match inputs {
        Value::String(path) => match lookup(root, path) {
            Some(Value::Object(object)) => object.clone(),
            _ => serde_json::Map::new(),
        },
        Value::Object(mapping) => mapping
            .iter()
            .filter_map(|(name, source)| match source {
                Value::String(text) if text.starts_with('$') => {
                    lookup(root, text).map(|value| (name.clone(), value.clone()))
                }
                literal => Some((name.clone(), literal.clone())),
            })
            .collect(),
        _ => serde_json::Map::new(),
    }
}

pub(crate) fn task_out(task: TaskRecord, task_type: &TaskTypeRecord) -> TaskOut {
    TaskOut {
        id: task.id,
        workspace_id: task.workspace_id,
        task_type: TaskTypeRef {
            id: task_type.id.clone(),
            key: task_type.key.clone(),
            version: task_type.version.clone(),
        },
        title: task.title,
        custom_fields: task.custom_fields,
        status: task.status,
        created_by: task.created_by,
        initiators: task.initiators,
        created_at: view_time(&task.created_at),
        updated_at: view_time(&task.updated_at),
        closed_at: task.closed_at.as_ref().map(view_time),
        close_reason: task.close_reason,
    }
}

/// The task as paths read it (`$.customFields.x`, `$.title`, …): its API view as JSON.
pub(crate) fn task_view(task: &TaskRecord, task_type: &TaskTypeRecord) -> Value {
    serde_json::to_value(task_out(task.clone(), task_type)).unwrap_or_default()
}

/// The values of a mapping (a rule's inputs and custom fields, a step's input) read from
/// `document`: a `$…` path's value (left out when it names nothing), or the literal.
pub(crate) fn filled(map: &Map<String, Value>, document: &Value) -> Map<String, Value> {
    fill(&Value::Object(map.clone()), document)
}

/// A work key or a title made from `document`: a path's value, or a text with each `{{path}}`
/// replaced by its value.
pub(crate) fn render(template: &str, document: &Value) -> String {
    if template.starts_with('$') {
        return text_of(lookup(document, template).unwrap_or(&Value::Null));
    }
    let mut out = String::new();
    let mut rest = template;
    while let Some(start) = rest.find("{{") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let Some(end) = after.find("}}") else { break };
        let path = after[..end].trim();
        out.push_str(&text_of(&lookup(document, path).cloned().unwrap_or(Value::Null)));
        rest = &after[end + 2..];
    }
    out.push_str(rest);
    out
}

/// A filled value as text: a string as it is, anything else as JSON.
fn text_of(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn paths_have_names_and_indexes_only() {
        for good in ["$", "$.a", "$.customFields.claim", "$.a[0].b_c-d", "$[3]"] {
            assert!(is_path(good), "{good}");
        }
        for bad in [
            "",
            "a",
            "$.",
            "$..a",
            "$.1a",
            "$[x]",
            "$[]",
            "$.a b",
            "$['a']",
            "$.a[0",
            &format!("$.{}", "a".repeat(500)),
        ] {
            assert!(!is_path(bad), "{bad}");
        }
    }

    #[test]
    fn filling_reads_paths_keeps_literals_and_leaves_missing_out() {
        let root =
            json!({"task": {"customFields": {"claim": "C-1", "tags": ["x", "y"]}}, "approval": {"comment": "ok"}});
        let filled = fill(
            &json!({"claim": "$.task.customFields.claim", "tag": "$.task.customFields.tags[1]", "comment": "$.approval.comment",
                    "missing": "$.task.nothing", "fixed": 3, "text": "plain"}),
            &root,
        );
        assert_eq!(
            Value::Object(filled),
            json!({"claim": "C-1", "tag": "y", "comment": "ok", "fixed": 3, "text": "plain"})
        );
        assert_eq!(Value::Object(fill(&json!("$.task.customFields"), &root)), root["task"]["customFields"]);
        assert!(fill(&json!("$.approval.comment"), &root).is_empty(), "a path to a non-object gives no inputs");
    }

    #[test]
    fn the_field_under_a_prefix_is_its_first_name() {
        let fields = ["task", "customFields"];
        assert_eq!(field_under("$.task.customFields.claim", &fields).as_deref(), Some("claim"));
        assert_eq!(field_under("$.task.customFields.claim.id[0]", &fields).as_deref(), Some("claim"));
        assert_eq!(field_under("$.task.customFields", &fields), None, "the whole object names no field");
        assert_eq!(field_under("$.task.title", &fields), None);
        assert_eq!(field_under("$.customFields[0]", &["customFields"]), None);
        assert_eq!(field_under("$.customFields.reply", &["customFields"]).as_deref(), Some("reply"));
        assert_eq!(field_under("not a path", &fields), None);
    }
}
