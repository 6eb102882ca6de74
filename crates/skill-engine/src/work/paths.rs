//! The path expressions task types use to fill a call's inputs: `$` followed by `.name` and
//! `[n]` segments only (at most 500 characters), read from a JSON document (the task's API view,
//! or `{task, approval}` for an approval's outcome).

use serde_json::Value;

use skill_contract::paths::{Segment, parse};
pub(crate) use skill_contract::paths::{is_path, lookup};

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
