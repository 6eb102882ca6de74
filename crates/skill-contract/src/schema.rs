//! JSON Schema 2020-12: checking that a contract's schema is a self-contained document, and
//! validating a value against it with `format` asserted.
//!
//! Errors come out as `{path, message}` with the reference's shape: the path joins the instance
//! location with `/` (the root is `/`), messages are cut at 500 characters, at most 20 errors are
//! kept, sorted by path. Nothing is ever fetched: an external `$ref` is refused up front.

pub use crate::schema_bounds::{MAX_EXPANSION, MAX_REFS};
use std::cmp::Ordering;
use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The meta-schema URI of JSON Schema draft 2020-12.
pub const DRAFT_2020_12: &str = "https://json-schema.org/draft/2020-12/schema";
/// Most errors reported for one value.
pub const MAX_ERRORS: usize = 20;
/// Longest message kept for one error, in characters.
pub const MAX_MESSAGE: usize = 500;

/// One place where a value does not match its schema.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PathError {
    /// `/` for the root, else `/a/0/b`.
    pub path: String,
    pub message: String,
}

impl PathError {
    pub fn new(path: impl Into<String>, message: impl Into<String>) -> Self {
        Self { path: path.into(), message: cut(&message.into()) }
    }
}

impl fmt::Display for PathError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.path, self.message)
    }
}

/// Why a schema document is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct SchemaDocumentError(String);

/// A compiled schema that validates values.
pub struct SchemaValidator {
    inner: jsonschema::Validator,
}

impl fmt::Debug for SchemaValidator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SchemaValidator").finish_non_exhaustive()
    }
}

fn cut(message: &str) -> String {
    if message.chars().count() <= MAX_MESSAGE {
        message.to_owned()
    } else {
        message.chars().take(MAX_MESSAGE).collect()
    }
}

/// Keywords whose values are data, not subschemas: a `$ref` inside them is not a reference.
const DATA_KEYWORDS: &[&str] = &["const", "enum", "default", "examples"];

fn find_external_ref(value: &Value, at: &mut Vec<String>) -> Option<(String, String)> {
    match value {
        Value::Object(map) => {
            for keyword in ["$ref", "$dynamicRef"] {
                if let Some(Value::String(target)) = map.get(keyword)
                    && !target.starts_with('#')
                {
                    let place = if at.is_empty() { "/".to_owned() } else { format!("/{}", at.join("/")) };
                    return Some((place, target.clone()));
                }
            }
            for (key, child) in map {
                if DATA_KEYWORDS.contains(&key.as_str()) {
                    continue;
                }
                at.push(key.clone());
                let found = find_external_ref(child, at);
                at.pop();
                if found.is_some() {
                    return found;
                }
            }
            None
        }
        Value::Array(items) => items.iter().enumerate().find_map(|(i, child)| {
            at.push(i.to_string());
            let found = find_external_ref(child, at);
            at.pop();
            found
        }),
        _ => None,
    }
}

/// Checks that `schema` is a JSON object that is a valid, self-contained draft 2020-12 document.
pub fn check_schema_document(schema: &Value) -> Result<(), SchemaDocumentError> {
    SchemaValidator::new(schema).map(drop)
}

/// The checks that come before compiling: an object, the draft, no external reference, the
/// bounds on its work ([`crate::schema_bounds`]), the meta-schema.
fn check_before_compiling(schema: &Value) -> Result<(), SchemaDocumentError> {
    let bad = |reason: String| Err(SchemaDocumentError(reason));
    let Value::Object(map) = schema else {
        return bad(format!("expected a JSON object, got {}", crate::json_type(schema)));
    };
    if let Some(declared) = map.get("$schema") {
        let ok = declared.as_str().is_some_and(|s| s.trim_end_matches('#') == DRAFT_2020_12);
        if !ok {
            return bad(format!("`$schema` must be {DRAFT_2020_12}, got {declared}"));
        }
    }
    if let Some((place, target)) = find_external_ref(schema, &mut Vec::new()) {
        return bad(format!(
            "`$ref` at {place} points outside the document ({target}): inline the schema or use a local #/$defs reference"
        ));
    }
    crate::schema_bounds::check(schema).map_err(SchemaDocumentError)?;
    if let Err(error) = jsonschema::draft202012::meta::validate(schema) {
        let place = error.instance_path().as_str();
        let at = schema.pointer(place);
        let place = if place.is_empty() { "/" } else { place };
        return bad(explain(format!("at {place}: {}", cut(&error.to_string())), at));
    }
    Ok(())
}

fn compile(schema: &Value) -> Result<jsonschema::Validator, SchemaDocumentError> {
    jsonschema::draft202012::options()
        .should_validate_formats(true)
        .should_ignore_unknown_formats(true)
        // Inputs come from callers: `pattern` runs on a linear-time engine, never a backtracking one.
        .with_pattern_options(jsonschema::PatternOptions::regex())
        .offline()
        .build(schema)
        .map_err(|error| {
            let at = schema.pointer(error.instance_path().as_str());
            SchemaDocumentError(explain(cut(&error.to_string()), at))
        })
}

/// Adds the cause and what to do to the validator's terser messages; `at` is the value the
/// message is about.
fn explain(mut reason: String, at: Option<&Value>) -> String {
    if reason.ends_with("is not a \"regex\"") {
        // Patterns run on the linear-time engine: say why this one does not compile there.
        // `at` is the pattern, or the `patternProperties` whose keys are patterns; the message
        // itself quotes the pattern as JSON.
        let quoted = reason.strip_suffix(" is not a \"regex\"").map(|head| match head.strip_prefix("at ") {
            Some(placed) => placed.split_once(": ").map_or(head, |(_, quoted)| quoted),
            None => head,
        });
        let quoted: Option<String> = quoted.and_then(|text| serde_json::from_str(text).ok());
        let mut patterns: Vec<&str> = match at {
            Some(Value::String(pattern)) => vec![pattern],
            Some(Value::Object(map)) => map.keys().map(String::as_str).collect(),
            _ => Vec::new(),
        };
        patterns.extend(quoted.as_deref());
        let failure = patterns.into_iter().map(regex::Regex::new).find(Result::is_err);
        let cause = match failure {
            Some(Err(regex::Error::CompiledTooBig(limit))) => format!(
                "the pattern compiles to more than {limit} bytes: repeat less (nested counted repetitions multiply)"
            ),
            Some(Err(regex::Error::Syntax(message))) => {
                let last = message.lines().rev().find(|line| !line.trim().is_empty()).unwrap_or_default();
                format!("{}; patterns run on a linear-time engine", last.trim().trim_start_matches("error: "))
            }
            _ => "patterns run on a linear-time engine: look-around and backreferences are not supported".to_owned(),
        };
        reason.push_str(&format!(" ({cause})"));
    }
    reason
}

#[derive(PartialEq, Eq, PartialOrd, Ord)]
enum Segment {
    Index(usize),
    Property(String),
}

impl SchemaValidator {
    /// Checks that `schema` is a valid, self-contained draft 2020-12 document and compiles it.
    pub fn new(schema: &Value) -> Result<Self, SchemaDocumentError> {
        check_before_compiling(schema)?;
        Ok(Self { inner: compile(schema)? })
    }

    pub fn is_valid(&self, instance: &Value) -> bool {
        self.inner.is_valid(instance)
    }

    /// Every mismatch of `instance`, sorted by path, at most [`MAX_ERRORS`].
    pub fn errors(&self, instance: &Value) -> Vec<PathError> {
        // The common case, without building any error.
        if self.inner.is_valid(instance) {
            return Vec::new();
        }
        let mut found: Vec<(Vec<Segment>, PathError)> = self
            .inner
            .iter_errors(instance)
            .map(|error| {
                let location = error.instance_path();
                let segments: Vec<Segment> = location
                    .iter()
                    .map(|segment| match segment {
                        jsonschema::paths::LocationSegment::Index(i) => Segment::Index(i),
                        jsonschema::paths::LocationSegment::Property(p) => Segment::Property(p.into_owned()),
                    })
                    .collect();
                let path = segments
                    .iter()
                    .map(|s| match s {
                        Segment::Index(i) => i.to_string(),
                        Segment::Property(p) => p.clone(),
                    })
                    .collect::<Vec<_>>()
                    .join("/");
                (segments, PathError::new(format!("/{path}"), error.to_string()))
            })
            .collect();
        found.sort_by(|a, b| a.0.cmp(&b.0).then(Ordering::Equal));
        found.into_iter().take(MAX_ERRORS).map(|(_, error)| error).collect()
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn accepts_a_plain_object_schema() {
        let schema = json!({"$schema": DRAFT_2020_12, "type": "object", "properties": {"a": {"type": "integer"}}});
        assert!(check_schema_document(&schema).is_ok());
        let with_hash = json!({"$schema": format!("{DRAFT_2020_12}#"), "type": "object"});
        assert!(check_schema_document(&with_hash).is_ok());
    }

    #[test]
    fn refuses_other_drafts_external_refs_and_broken_documents() {
        let cases = [
            (json!({"$schema": "http://json-schema.org/draft-07/schema#"}), "`$schema` must be"),
            (json!({"properties": {"a": {"$ref": "https://example.com/a.json"}}}), "at /properties/a points outside"),
            (json!({"type": "objekt"}), "at /type"),
            (json!({"minimum": "five"}), "at /minimum"),
            (json!(["type", "object"]), "expected a JSON object, got an array"),
            (json!({"type": "string", "pattern": "("}), "("),
            (
                json!({"type": "string", "pattern": "^(?=a)a$"}),
                "(look-around, including look-ahead and look-behind, is not supported; patterns run on a linear-time engine)",
            ),
            (
                json!({"type": "string", "pattern": "(a)\\1"}),
                "(backreferences are not supported; patterns run on a linear-time engine)",
            ),
            // Valid syntax, but too large once compiled: the message says so, not "look-around".
            (
                json!({"type": "string", "pattern": "((a{100}){100}){100}"}),
                "(the pattern compiles to more than 10485760 bytes",
            ),
            (json!({"patternProperties": {"((a{100}){100}){100}": {}}}), "compiles to more than"),
        ];
        for (schema, expected) in cases {
            let error = check_schema_document(&schema).expect_err("refused").to_string();
            assert!(error.contains(expected), "{schema}: {error}");
        }
    }

    #[test]
    fn a_ref_inside_data_keywords_is_not_a_reference() {
        let schema = json!({"const": {"$ref": "https://example.com"}, "$defs": {"x": {"type": "string"}},
                            "properties": {"y": {"$ref": "#/$defs/x"}}});
        assert!(check_schema_document(&schema).is_ok());
    }

    #[test]
    fn errors_are_sorted_by_path_and_capped() {
        let schema = json!({
            "type": "object",
            "properties": {
                "b": {"type": "integer", "minimum": 0},
                "a": {"type": "array", "items": {"type": "string"}},
                "mail": {"type": "string", "format": "email"}
            },
            "required": ["z"]
        });
        let validator = SchemaValidator::new(&schema).expect("valid schema");
        let errors = validator.errors(&json!({"b": -1, "a": ["x", 2, 3], "mail": "not-an-address"}));
        let paths: Vec<&str> = errors.iter().map(|e| e.path.as_str()).collect();
        assert_eq!(paths, ["/", "/a/1", "/a/2", "/b", "/mail"]);
        assert!(errors[4].message.contains("email"), "{}", errors[4].message);

        let many = json!({"type": "array", "items": {"type": "integer"}});
        let validator = SchemaValidator::new(&many).expect("valid schema");
        let errors = validator.errors(&json!(vec!["x"; 50]));
        assert_eq!(errors.len(), MAX_ERRORS);
        assert_eq!(errors[19].path, "/19");
    }

    #[test]
    fn long_messages_are_cut() {
        let validator = SchemaValidator::new(&json!({"type": "integer"})).expect("valid schema");
        let errors = validator.errors(&json!("x".repeat(2000)));
        assert_eq!(errors[0].message.chars().count(), MAX_MESSAGE);
    }
}
