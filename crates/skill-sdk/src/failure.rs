//! The errors of the invocation path that name what failed: inputs or outputs that do not
//! match their schema (with JSON paths), and a panic kept as the cause of a `skill_error`.

use serde_json::json;
use skill_contract::schema::PathError;

use crate::SkillError;

/// At most this many errors are reported for one value.
const MAX_ERRORS: usize = skill_contract::schema::MAX_ERRORS;

pub(crate) fn input_violation(mut errors: Vec<PathError>) -> SkillError {
    errors.truncate(MAX_ERRORS);
    SkillError::new("input_contract_violation")
        .with_message("inputs do not match the skill's input schema")
        .with_detail("errors", json!(errors))
}

pub(crate) fn output_violation(mut errors: Vec<PathError>) -> SkillError {
    errors.truncate(MAX_ERRORS);
    SkillError::new("output_contract_violation")
        .with_message("outputs do not match the skill's output schema")
        .with_detail("errors", json!(errors))
}

/// A panic in a skill, kept as the cause of its `skill_error` so the log shows the panic message.
#[derive(Debug, thiserror::Error)]
#[error("the skill panicked: {0}")]
struct Panicked(String);

/// The `skill_error` of a panic whose payload is `payload`.
pub(crate) fn panicked(payload: &(dyn std::any::Any + Send)) -> SkillError {
    let message = payload
        .downcast_ref::<&str>()
        .map(|m| (*m).to_owned())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a non-text panic payload".to_owned());
    SkillError::from_error(Panicked(message)).with_message("the skill panicked")
}

/// A decoding error's place as a path `/a/0/b` (the root is `/`).
pub(crate) fn json_path(path: &serde_path_to_error::Path) -> String {
    let parts: Vec<String> = path
        .iter()
        .filter_map(|segment| match segment {
            serde_path_to_error::Segment::Seq { index } => Some(index.to_string()),
            serde_path_to_error::Segment::Map { key } => Some(key.clone()),
            serde_path_to_error::Segment::Enum { variant } => Some(variant.clone()),
            serde_path_to_error::Segment::Unknown => None,
        })
        .collect();
    format!("/{}", parts.join("/"))
}
