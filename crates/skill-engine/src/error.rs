//! The engine's one error: a stable code, a message for people, machine-readable details, and
//! the class a transport turns into its status.

use serde_json::{Map, Value};
use skill_contract::codes::Code;
use skill_contract::composite::ResolveError;
use skill_contract::{Skill, SkillErrorType};
use skill_store::{ErrorKind, StoreError};

/// What kind of failure an error is; the HTTP API maps each to one status.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Class {
    /// The request itself is malformed (400).
    BadRequest,
    /// The request is larger than accepted (413).
    TooLarge,
    /// The request did not arrive in time (408).
    Timeout,
    /// The body is not in a format the route reads (415).
    UnsupportedMedia,
    /// The route does not serve this method (405).
    MethodNotAllowed,
    /// No valid credential (401).
    Unauthenticated,
    /// The caller may not do this (403).
    Forbidden,
    /// The thing is not there, or the caller may not know it is (404).
    NotFound,
    /// The request conflicts with the current state (409).
    Conflict,
    /// A precondition header is missing (428).
    PreconditionRequired,
    /// The request is well-formed but breaks a domain rule (422).
    Invalid,
    /// The database cannot be reached; retrying later may help (503).
    Unavailable,
    /// A bug or an unexpected state (500).
    Internal,
}

#[derive(Debug, Clone, PartialEq)]
pub struct EngineError {
    pub class: Class,
    pub code: Code,
    pub message: String,
    pub details: Map<String, Value>,
}

impl EngineError {
    /// Whether it is the registered code `code`.
    pub fn is(&self, code: Code) -> bool {
        self.code == code
    }

    pub fn new(class: Class, code: Code, message: impl Into<String>) -> Self {
        Self { class, code, message: message.into(), details: Map::new() }
    }

    pub fn with(mut self, key: &str, value: impl Into<Value>) -> Self {
        self.details.insert(key.to_owned(), value.into());
        self
    }

    /// The error as told to a caller who may read the organisation's definitions (`org.read`)
    /// or not: without, it does not name the agent a process runs as.
    #[must_use]
    pub(crate) fn shown_to(mut self, reads_definitions: bool) -> Self {
        if !reads_definitions {
            self.details.remove("agent");
        }
        self
    }

    pub fn with_details(mut self, details: Map<String, Value>) -> Self {
        self.details.extend(details);
        self
    }

    /// Whether repeating the request later may succeed: the database was unavailable, or the
    /// code says so in the platform's table (`idempotency_in_flight`).
    pub fn retryable(&self) -> bool {
        self.class == Class::Unavailable || self.code.info().retryable == skill_contract::codes::Retry::Yes
    }

    pub fn not_found(what: &str) -> Self {
        Self::new(Class::NotFound, Code::NotFound, format!("{what} not found"))
    }

    pub fn forbidden(permission: &str) -> Self {
        Self::new(Class::Forbidden, Code::PermissionDenied, format!("this needs the permission {permission}"))
            .with("permission", permission)
    }

    pub fn invalid_request(message: impl Into<String>) -> Self {
        Self::new(Class::BadRequest, Code::InvalidRequest, message)
    }

    /// The envelope body: `{"error": {code, message, retryable, details, requestId}}`.
    pub fn to_envelope(&self, request_id: Option<&str>) -> skill_api::ErrorEnvelope {
        skill_api::ErrorEnvelope {
            error: skill_api::ErrorBody {
                code: self.code.as_str().to_owned(),
                message: capped_message(&self.message),
                retryable: self.retryable(),
                details: capped(&self.details),
                request_id: request_id.map(str::to_owned),
            },
        }
    }
}

/// The longest string an error's details echo, in characters; the most items of a list.
const ECHOED_CHARS: usize = 300;
const ECHOED_ITEMS: usize = 100;

/// The longest message an answer carries, in characters: a message that echoes a value is cut.
const MESSAGE_CHARS: usize = 1_000;

fn capped_message(message: &str) -> String {
    if message.chars().count() <= MESSAGE_CHARS {
        return message.to_owned();
    }
    format!("{}…", message.chars().take(MESSAGE_CHARS).collect::<String>())
}

/// `details` as an answer echoes them: every string at most [`ECHOED_CHARS`] characters (cut
/// with `…`), every list at most [`ECHOED_ITEMS`] items, nesting at most eight deep — an error
/// never carries back a caller's megabyte.
fn capped(details: &Map<String, Value>) -> Map<String, Value> {
    fn cap(value: &Value, depth: usize) -> Value {
        match value {
            Value::String(text) if text.chars().count() > ECHOED_CHARS => {
                Value::String(format!("{}…", text.chars().take(ECHOED_CHARS).collect::<String>()))
            }
            Value::Array(items) if depth < 8 => {
                Value::Array(items.iter().take(ECHOED_ITEMS).map(|item| cap(item, depth + 1)).collect())
            }
            Value::Object(map) if depth < 8 => {
                Value::Object(map.iter().take(ECHOED_ITEMS).map(|(k, v)| (k.clone(), cap(v, depth + 1))).collect())
            }
            Value::Array(_) | Value::Object(_) => Value::String("…".to_owned()),
            other => other.clone(),
        }
    }
    details.iter().map(|(key, value)| (key.clone(), cap(value, 0))).collect()
}

impl std::fmt::Display for EngineError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.code, self.message)
    }
}

impl std::error::Error for EngineError {}

/// Store failures: a database guard's refusal keeps its code (409, or 422 for a reference the
/// catalog lacks, 403 for a basis that does not cover its call) with the store's message and details; unavailable stays retryable; anything
/// else is internal (the message goes to the log, not to the caller).
impl From<StoreError> for EngineError {
    fn from(error: StoreError) -> Self {
        match error.kind() {
            ErrorKind::Refused(code) => {
                let class = match code {
                    Code::UnknownReference | Code::InvalidRule | Code::RuleSkillSideEffects => Class::Invalid,
                    Code::BasisNotCovered | Code::DeciderNotAPerson | Code::DeciderIsInitiator => Class::Forbidden,
                    _ => Class::Conflict,
                };
                // The guard's own words, from its code on (not the driver's prefix).
                let message = error.message();
                let message = message.find(code.as_str()).map_or(message, |at| &message[at..]);
                Self::new(class, code, message.to_owned()).with_details(error.details().clone())
            }
            ErrorKind::Unavailable => {
                Self::new(Class::Unavailable, Code::Unavailable, "the database is unavailable; retry later")
            }
            ErrorKind::NotFound => Self::not_found("the record"),
            _ => {
                tracing::error!(error = %error, kind = ?error.kind(), "store failure");
                Self::new(Class::Internal, Code::InternalError, "an internal error occurred; the log has its details")
            }
        }
    }
}

/// A composite that does not resolve: `cycle_detected` or `resolution_failure`, with the skills
/// involved in the details.
pub(crate) fn resolve_error(skill: &Skill, error: &ResolveError) -> EngineError {
    let code = match error.error_type() {
        SkillErrorType::CycleDetected => Code::CycleDetected,
        _ => Code::ResolutionFailure,
    };
    let wire = error.to_skill_error(skill.name().as_str());
    EngineError::new(Class::Invalid, code, error.to_string()).with_details(wire.details().cloned().unwrap_or_default())
}

pub type Result<T, E = EngineError> = std::result::Result<T, E>;

/// A problem of an author's document (an agent, a rule, a process), at its path, with what to do:
/// `403 agent_permission_forbidden`, else `422` with the problem's code.
pub(crate) fn document_problem(found: skill_contract::DocumentProblem) -> EngineError {
    let class =
        if found.code == skill_contract::agent::PERMISSION_FORBIDDEN { Class::Forbidden } else { Class::Invalid };
    EngineError::new(class, found.code, format!("{} ({})", found.message, found.hint)).with("path", found.path)
}

/// Whether a version-checked write happened: `false` when the row moved on since it was read
/// (the caller reads it again and decides anew), an error for anything else.
/// The state a request names among `allowed` (`what` says of which thing: `a task's status`);
/// `422 invalid_status` listing the allowed words otherwise.
pub(crate) fn requested_state<S: skill_api::State>(word: &str, allowed: &[S], what: &str) -> Result<S> {
    S::parse(word).ok().filter(|state| allowed.contains(state)).ok_or_else(|| {
        let words: Vec<&str> = allowed.iter().map(|state| state.as_str()).collect();
        EngineError::new(
            Class::Invalid,
            Code::InvalidStatus,
            format!("{what} is one of {}, not {word:?}", words.join(", ")),
        )
        .with("allowed", words)
    })
}

pub(crate) fn written(result: skill_store::Result<()>) -> Result<bool> {
    match result {
        Ok(()) => Ok(true),
        Err(error) if error.kind() == ErrorKind::Stale => Ok(false),
        Err(error) => Err(error.into()),
    }
}

/// The row changed under every attempt to change it: retry later.
pub(crate) fn busy() -> EngineError {
    EngineError::new(Class::Unavailable, Code::Unavailable, "the row is changing under heavy contention; retry")
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn an_error_echoes_at_most_a_little_of_what_it_was_sent() {
        let long = "x".repeat(10_000);
        let error = EngineError::new(Class::Invalid, Code::InvalidRequest, "no")
            .with("value", long.clone())
            .with("items", json!((0..500).collect::<Vec<_>>()))
            .with("nested", json!({"deep": [{"text": long}]}));
        let body = error.to_envelope(None).error.details;
        assert_eq!(body["value"].as_str().map(|s| s.chars().count()), Some(ECHOED_CHARS + 1));
        assert_eq!(body["items"].as_array().map(Vec::len), Some(ECHOED_ITEMS));
        assert!(body["nested"]["deep"][0]["text"].as_str().is_some_and(|s| s.ends_with('…')));
        assert_eq!(error.details["value"].as_str().map(str::len), Some(10_000), "the log keeps it whole");
        let echoed = EngineError::new(Class::NotFound, Code::NotFound, format!("no workspace {long}"));
        assert_eq!(echoed.to_envelope(None).error.message.chars().count(), MESSAGE_CHARS + 1);
    }
}
