//! Reading a JSON document into its type, with the path of the first part that does not read:
//! how every document an author writes (a task type's parts, a rule, a process, an agent) is
//! checked, so an error names the field.

use serde::de::DeserializeOwned;

use crate::codes::Code;
use serde_json::Value;

/// A part of a document that does not read as its type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unread {
    /// Where: `root`, then `.field` and `[n]` segments.
    pub path: String,
    /// Why, as the reader said it (`unknown field "x", expected one of …`, `missing field …`).
    pub reason: String,
}

/// One thing wrong with an author's document (a rule, a process, an agent), by its path
/// (`spec.ensureWork[0].task.type`): the code the core refuses it with, and what to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DocumentProblem {
    pub path: String,
    pub code: Code,
    pub message: String,
    pub hint: String,
}

impl DocumentProblem {
    pub fn new(path: impl Into<String>, code: Code, message: impl Into<String>, hint: &str) -> Self {
        Self { path: path.into(), code, message: message.into(), hint: hint.to_owned() }
    }
}

/// `value` read as a `T`; the path under `root` of the first part that does not read otherwise
/// (`root` itself when the whole value does not).
pub fn read_typed<T: DeserializeOwned>(value: &Value, root: &str) -> Result<T, Unread> {
    let mut track = serde_path_to_error::Track::new();
    let deserializer = serde_path_to_error::Deserializer::new(value, &mut track);
    T::deserialize(deserializer).map_err(|error| {
        let at = track.path().to_string();
        let path = match at.as_str() {
            "." => root.to_owned(),
            _ if root.is_empty() => at,
            _ if at.starts_with('[') => format!("{root}{at}"),
            _ => format!("{root}.{at}"),
        };
        Unread { path, reason: error.to_string() }
    })
}

#[cfg(test)]
mod tests {
    use serde::Deserialize;
    use serde_json::json;

    use super::*;

    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code, reason = "read, not used")]
    struct Slot {
        key: String,
        #[serde(default)]
        required: bool,
    }

    #[test]
    fn the_path_names_the_field_under_the_root() {
        let unread = read_typed::<Vec<Slot>>(&json!([{"key": "a"}, {"key": "b", "required": "yes"}]), "outputs")
            .expect_err("a string is no bool");
        assert_eq!(unread.path, "outputs[1].required");
        assert!(unread.reason.contains("expected a boolean"), "{}", unread.reason);
        let unread = read_typed::<Slot>(&json!({"key": "a", "colour": 1}), "spec").expect_err("unknown");
        assert_eq!(unread.path, "spec.colour");
        assert!(unread.reason.contains("unknown field `colour`"), "{}", unread.reason);
        let unread = read_typed::<Slot>(&json!(5), "spec").expect_err("not a mapping");
        assert_eq!(unread.path, "spec");
        let unread = read_typed::<Slot>(&json!({"key": 1}), "").expect_err("not a string");
        assert_eq!(unread.path, "key");
        assert_eq!(read_typed::<Slot>(&json!({"key": "a"}), "spec").expect("reads").key, "a");
    }
}
