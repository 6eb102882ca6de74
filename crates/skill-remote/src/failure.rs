//! Failures as the executor reports them.

use serde_json::Value;
use skill_api::ReportedError;
use skill_executor::Outcome;

/// A failed outcome.
pub(crate) fn failed(code: &str, retryable: bool, message: String, details: Option<Value>) -> Outcome {
    let message: String = message.chars().take(4000).collect();
    Outcome::Fail(ReportedError { code: code.to_owned(), message, retryable, details })
}
