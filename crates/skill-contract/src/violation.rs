//! Contract violations: which field, what is wrong, what is allowed, and the stable error code.
//!
//! Normalization collects every violation it finds instead of stopping at the first, so an
//! author fixes a contract in one pass. The first violation names the code of the whole error.

use std::fmt;

use serde_json::{Map, Value, json};

use crate::policy::Idempotency;

/// The stable code a violation is reported under.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ViolationCode {
    /// The contract or the policy columns break a rule.
    InvalidSkillContract,
    /// Pre- or postconditions are given; no expression language exists yet.
    UnsupportedSkillCondition,
    /// Something that looks like a credential sits where only names may be.
    SecretMaterialRejected,
    /// `inputs` or `outputs` is not a valid, self-contained JSON Schema 2020-12 document.
    InvalidJsonSchema,
    /// A skill document's wrapper, name, version or composition is malformed.
    InvalidSkillDocument,
}

impl ViolationCode {
    /// The registered code it is.
    pub fn code(self) -> crate::codes::Code {
        use crate::codes::Code;
        match self {
            Self::InvalidSkillContract => Code::InvalidSkillContract,
            Self::UnsupportedSkillCondition => Code::UnsupportedSkillCondition,
            Self::SecretMaterialRejected => Code::SecretMaterialRejected,
            Self::InvalidJsonSchema => Code::InvalidJsonSchema,
            Self::InvalidSkillDocument => Code::InvalidSkillDocument,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::InvalidSkillContract => "invalid_skill_contract",
            Self::UnsupportedSkillCondition => "unsupported_skill_condition",
            Self::SecretMaterialRejected => "secret_material_rejected",
            Self::InvalidJsonSchema => "invalid_json_schema",
            Self::InvalidSkillDocument => "invalid_skill_document",
        }
    }
}

/// What is wrong with one field.
#[derive(Debug, Clone, PartialEq)]
pub enum Problem {
    Missing { expected: &'static str },
    MissingWord { allowed: &'static [&'static str] },
    WrongType { expected: &'static str, found: &'static str },
    NotAllowed { found: String, allowed: &'static [&'static str] },
    OutOfRange { found: String, min: u64, max: u64 },
    BadFormat { found: String, rule: &'static str },
    UnknownKeys { unknown: Vec<String>, allowed: &'static [&'static str] },
    UnsafeRetry { max_attempts: u64, idempotency: Idempotency },
    NotEmpty,
    SecretMaterial,
    InvalidSchema { reason: String },
    TooLong { length: usize, max: usize },
    TooMany { count: usize, max: usize },
    TooLarge { bytes: usize, max: usize },
    NulCharacter,
    Conflict { reason: String },
}

/// One broken rule, at one field of the contract (or of the policy columns).
#[derive(Debug, Clone, PartialEq)]
pub struct Violation {
    pub code: ViolationCode,
    /// Dotted path inside the contract, e.g. `retryPolicy.maxAttempts`; policy columns are
    /// `sideEffects` and `riskLevel`; the contract as a whole is `contract`.
    pub field: String,
    /// Position inside a list field, e.g. the third scope.
    pub index: Option<usize>,
    pub problem: Problem,
}

/// Shortens a value echoed in a message so that a huge input does not flood the error.
pub(crate) fn echo(text: &str) -> String {
    const MAX: usize = 120;
    let mut out: String = text
        .chars()
        .take(MAX)
        .flat_map(|c| if c.is_control() { c.escape_default().collect::<Vec<_>>() } else { vec![c] })
        .collect();
    if text.chars().count() > MAX {
        out.push('…');
    }
    out
}

impl Violation {
    pub fn new(field: impl Into<String>, problem: Problem) -> Self {
        let code = match problem {
            Problem::SecretMaterial => ViolationCode::SecretMaterialRejected,
            Problem::InvalidSchema { .. } => ViolationCode::InvalidJsonSchema,
            Problem::NotEmpty => ViolationCode::UnsupportedSkillCondition,
            _ => ViolationCode::InvalidSkillContract,
        };
        Self { code, field: field.into(), index: None, problem }
    }

    /// The same violation reported under another code.
    pub(crate) fn coded(mut self, code: ViolationCode) -> Self {
        self.code = code;
        self
    }

    pub fn at(mut self, index: usize) -> Self {
        self.index = Some(index);
        self
    }

    /// The machine-readable details of the error envelope: `field` and what was expected.
    pub fn details(&self) -> Map<String, Value> {
        let mut details = Map::new();
        details.insert("field".into(), json!(self.field));
        if let Some(index) = self.index {
            details.insert("index".into(), json!(index));
        }
        match &self.problem {
            Problem::NotAllowed { allowed, .. } | Problem::MissingWord { allowed } => {
                details.insert("allowed".into(), json!(allowed));
            }
            Problem::OutOfRange { min, max, .. } => {
                details.insert("min".into(), json!(min));
                details.insert("max".into(), json!(max));
            }
            Problem::UnknownKeys { unknown, allowed } => {
                details.insert("unknown".into(), json!(unknown));
                details.insert("allowed".into(), json!(allowed));
            }
            Problem::UnsafeRetry { max_attempts, idempotency } => {
                details.insert("maxAttempts".into(), json!(max_attempts));
                details.insert("idempotency".into(), json!(idempotency.as_str()));
            }
            Problem::WrongType { expected, .. } | Problem::Missing { expected } => {
                details.insert("expected".into(), json!(expected));
            }
            Problem::BadFormat { rule, .. } => {
                details.insert("expected".into(), json!(rule));
            }
            Problem::TooLong { max, .. } | Problem::TooMany { max, .. } | Problem::TooLarge { max, .. } => {
                details.insert("max".into(), json!(max));
            }
            _ => {}
        }
        details
    }
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Missing { expected } => write!(f, "is required: give {expected}"),
            Self::MissingWord { allowed } => write!(f, "is required: use one of: {}", allowed.join(", ")),
            Self::WrongType { expected, found } => write!(f, "expected {expected}, got {found}"),
            Self::NotAllowed { found, allowed } => {
                write!(f, "`{}` is not allowed, use one of: {}", echo(found), allowed.join(", "))
            }
            Self::OutOfRange { found, min, max } => {
                write!(f, "{} is out of range, use an integer from {min} to {max}", echo(found))
            }
            Self::BadFormat { found, rule } => write!(f, "`{}` is not {rule}", echo(found)),
            Self::UnknownKeys { unknown, allowed } => write!(
                f,
                "unknown key{} {}: the allowed keys are {}",
                if unknown.len() == 1 { "" } else { "s" },
                unknown.iter().map(|k| format!("`{}`", echo(k))).collect::<Vec<_>>().join(", "),
                allowed.join(", ")
            ),
            Self::UnsafeRetry { max_attempts, idempotency } => write!(
                f,
                "an external write without idempotency is not retried: maxAttempts is {max_attempts} with \
                 idempotency {idempotency}; a retried write without a key makes a second effect, so set \
                 maxAttempts to 1 or declare idempotency natural or required"
            ),
            Self::NotEmpty => {
                f.write_str("must be empty: conditions are reserved until the expression language exists")
            }
            Self::SecretMaterial => {
                f.write_str("looks like a credential: a contract names audiences and scopes, it never carries secrets")
            }
            Self::InvalidSchema { reason } => write!(f, "is not a valid JSON Schema 2020-12 document: {reason}"),
            Self::TooLong { length, max } => write!(f, "is {length} characters long, at most {max} are allowed"),
            Self::TooMany { count, max } => write!(f, "has {count} items, at most {max} are allowed"),
            Self::TooLarge { bytes, max } => write!(f, "is {bytes} bytes, at most {max} are allowed"),
            Self::NulCharacter => f.write_str("contains a NUL character"),
            Self::Conflict { reason } => f.write_str(reason),
        }
    }
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.index {
            Some(index) => write!(f, "{}[{index}]: {}", self.field, self.problem),
            None => write!(f, "{}: {}", self.field, self.problem),
        }
    }
}

/// A contract that breaks one or more rules. Never empty.
#[derive(Debug, Clone, PartialEq)]
pub struct ContractError {
    violations: Vec<Violation>,
}

impl ContractError {
    /// Wraps collected violations; `None` when there are none.
    pub(crate) fn from_violations(violations: Vec<Violation>) -> Option<Self> {
        (!violations.is_empty()).then_some(Self { violations })
    }

    pub(crate) fn single(violation: Violation) -> Self {
        Self { violations: vec![violation] }
    }

    pub fn violations(&self) -> &[Violation] {
        &self.violations
    }

    fn first(&self) -> &Violation {
        &self.violations[0]
    }

    /// The code of the first violation, e.g. `invalid_skill_contract`.
    pub fn code(&self) -> &'static str {
        self.first().code.as_str()
    }

    /// The field of the first violation.
    pub fn field(&self) -> &str {
        &self.first().field
    }

    /// Details of the first violation, plus every problem when there are several.
    pub fn details(&self) -> Map<String, Value> {
        let mut details = self.first().details();
        if self.violations.len() > 1 {
            let problems: Vec<Value> = self
                .violations
                .iter()
                .map(|v| json!({"code": v.code.as_str(), "field": v.field, "message": v.to_string()}))
                .collect();
            details.insert("problems".into(), Value::Array(problems));
        }
        details
    }
}

impl fmt::Display for ContractError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let [only] = self.violations.as_slice() {
            return write!(f, "{only}");
        }
        write!(f, "{} problems: ", self.violations.len())?;
        for (i, violation) in self.violations.iter().enumerate() {
            if i > 0 {
                f.write_str("; ")?;
            }
            write!(f, "{violation}")?;
        }
        Ok(())
    }
}

impl std::error::Error for ContractError {}
