//! `POST /packages:test`: a package's scenario tests (`tests/*.test.yaml`) run on a scratch core
//! with its skills answered by mocks; what each test came to.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::ApplyRequest;

/// The most tests one request runs.
pub const MAX_TESTS: usize = 100;

/// The longest one run of tests takes: a test not ended by then fails `test_timeout`, and
/// those after it are not started.
pub const MAX_TEST_RUN_SECONDS: u64 = 600;

/// The largest body `POST /packages:test` accepts: the packages and their test files (as
/// `POST /packages:apply` takes a package).
pub const MAX_PACKAGE_TEST_BYTES: usize = 32 * 1024 * 1024;

/// The most workspaces the tests of one run name (`given.workspace`), the default one aside.
pub const MAX_TEST_WORKSPACES: usize = 16;

/// The body of `POST /packages:test`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PackageTestRequest {
    /// The packages installed on the scratch core, each as `POST /packages:apply` takes it: the
    /// required ones first, the package under test last. A version the core has published
    /// already is taken as the core has it.
    pub packages: Vec<ApplyRequest>,
    /// The test files, 1 to 100.
    pub tests: Vec<TestFile>,
    /// A call no mock answers is a warning, not a failure.
    #[serde(default)]
    pub allow_unmocked: bool,
}

/// One test file: its path in the package and its document (the YAML read as JSON).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TestFile {
    pub file: String,
    pub document: Value,
}

/// What `POST /packages:test` answers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PackageTestOut {
    pub tests: Vec<TestOutcome>,
    pub passed: usize,
    pub failed: usize,
    pub seconds: f64,
    /// What concerns the whole run (a skill version taken as the core has it, which differs
    /// from the package's).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<TestFailure>,
}

/// What one test came to.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TestOutcome {
    pub file: String,
    /// The test's `name` (its file when it has none it could read).
    pub name: String,
    pub passed: bool,
    pub seconds: f64,
    /// Why it failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure: Option<TestFailure>,
    /// What did not fail it but should be looked at (a call no mock answered, with
    /// `allowUnmocked`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<TestFailure>,
}

/// Where and why a test failed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TestFailure {
    /// `expectation_failed`, `unmocked_skill_call`, `mock_output_invalid`, `invalid_test`,
    /// `given_refused`, `step_refused`, `test_timeout`, …
    pub code: String,
    pub message: String,
    /// The path in the test file (`steps[2].expect.invokeSkill`, `mocks.skills.x@1[0].output`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expected: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub actual: Option<Value>,
    /// What to do about it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hint: Option<String>,
}

impl TestFailure {
    pub fn new(code: &str, path: Option<String>, message: impl Into<String>) -> Self {
        Self { code: code.to_owned(), message: message.into(), path, expected: None, actual: None, hint: None }
    }

    #[must_use]
    pub fn compared(mut self, expected: Value, actual: Value) -> Self {
        self.expected = Some(expected);
        self.actual = Some(actual);
        self
    }

    #[must_use]
    pub fn hinted(mut self, hint: impl Into<String>) -> Self {
        self.hint = Some(hint.into());
        self
    }
}
