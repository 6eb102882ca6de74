//! Backend errors mapped, in this one place, to a neutral kind the engine can act on.

use skill_contract::codes::Code;
use std::fmt;

/// What went wrong, whatever the backend.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// The row is not there.
    NotFound,
    /// A unique key is taken (`name@version`, a token hash, a principal's name, …).
    Conflict,
    /// The row changed since it was read (its `row_version` moved).
    Stale,
    /// A database guard refused the change: `code` is the guard's code (`skill_version_immutable`,
    /// `invalid_status_transition`, `events_append_only`, `row_version_required`,
    /// `unknown_reference`), or a rule checked in the transaction (`package_object_conflict`).
    Refused(Code),
    /// A constraint refused the row (a check or a reference): a bug in the caller's validation.
    Invalid,
    /// The database cannot be reached or is overloaded; retrying later may help.
    Unavailable,
    /// Anything else.
    Internal,
}

/// A store failure: its kind and a message for the logs.
#[derive(Debug, thiserror::Error)]
#[error("{message}")]
pub struct StoreError {
    kind: ErrorKind,
    message: String,
    details: serde_json::Map<String, serde_json::Value>,
}

/// The codes the database's guards raise, as the first word of their message.
const GUARD_CODES: &[Code] = &[
    Code::SkillVersionImmutable,
    Code::InvalidStatusTransition,
    Code::EventsAppendOnly,
    Code::RowVersionRequired,
    Code::UnknownReference,
    Code::InvocationImmutable,
    Code::BasisUnknown,
    Code::SigningKeyImmutable,
    Code::TaskTypeImmutable,
    Code::WorkImmutable,
    Code::SelfApprovalRefused,
    Code::ArtifactImmutable,
    Code::ArtifactTypeImmutable,
    Code::ConsoleSessionImmutable,
    Code::BasisNotCovered,
    Code::DeciderNotAPerson,
    Code::DeciderIsInitiator,
    Code::AgentPrincipalConflict,
    Code::TooManyRequests,
    Code::RuleImmutable,
    Code::InvalidRule,
    Code::RuleSkillSideEffects,
    Code::PrincipalDisabled,
    Code::ProcessImmutable,
    Code::InvalidProcess,
    Code::TaskTerminal,
    Code::JournalEntry,
    Code::JournalGap,
    Code::JournalAppendOnly,
    Code::JournalCheckpoint,
];

impl StoreError {
    pub fn new(kind: ErrorKind, message: impl fmt::Display) -> Self {
        Self { kind, message: message.to_string(), details: serde_json::Map::new() }
    }

    /// Adds a machine-readable detail for the caller (which objects, which owner).
    pub fn with(mut self, key: &str, value: serde_json::Value) -> Self {
        self.details.insert(key.to_owned(), value);
        self
    }

    pub fn details(&self) -> &serde_json::Map<String, serde_json::Value> {
        &self.details
    }

    pub fn kind(&self) -> ErrorKind {
        self.kind
    }

    pub fn message(&self) -> &str {
        &self.message
    }
}

impl From<sqlx::Error> for StoreError {
    fn from(error: sqlx::Error) -> Self {
        let kind = match &error {
            sqlx::Error::RowNotFound => ErrorKind::NotFound,
            sqlx::Error::Database(database) => database_kind(database.as_ref()),
            sqlx::Error::Io(_)
            | sqlx::Error::Tls(_)
            | sqlx::Error::PoolTimedOut
            | sqlx::Error::PoolClosed
            | sqlx::Error::WorkerCrashed
            | sqlx::Error::Protocol(_) => ErrorKind::Unavailable,
            _ => ErrorKind::Internal,
        };
        Self::new(kind, error)
    }
}

fn database_kind(error: &dyn sqlx::error::DatabaseError) -> ErrorKind {
    let message = error.message();
    if let Some(code) = GUARD_CODES.iter().find(|code| message.starts_with(code.as_str())) {
        return ErrorKind::Refused(*code);
    }
    match error.kind() {
        sqlx::error::ErrorKind::UniqueViolation => ErrorKind::Conflict,
        sqlx::error::ErrorKind::ForeignKeyViolation
        | sqlx::error::ErrorKind::NotNullViolation
        | sqlx::error::ErrorKind::CheckViolation => ErrorKind::Invalid,
        _ => match error.code().as_deref() {
            // SQLite: busy / locked; PostgreSQL: serialization failure, deadlock, admin shutdown,
            // cannot connect now, too many connections.
            Some("5" | "6" | "517" | "40001" | "40P01" | "57P01" | "57P03" | "53300") => ErrorKind::Unavailable,
            _ => ErrorKind::Internal,
        },
    }
}

pub type Result<T, E = StoreError> = std::result::Result<T, E>;

impl From<rusqlite::Error> for StoreError {
    fn from(error: rusqlite::Error) -> Self {
        let kind = match &error {
            rusqlite::Error::QueryReturnedNoRows => ErrorKind::NotFound,
            rusqlite::Error::SqliteFailure(failure, message) => {
                let message = message.as_deref().unwrap_or_default();
                match GUARD_CODES.iter().find(|code| message.starts_with(code.as_str())) {
                    Some(code) => ErrorKind::Refused(*code),
                    None => sqlite_kind(failure.extended_code),
                }
            }
            _ => ErrorKind::Internal,
        };
        Self::new(kind, error)
    }
}

/// The kind of an SQLite result code (extended codes, as the unique and check ones are).
fn sqlite_kind(code: i32) -> ErrorKind {
    match code {
        // SQLITE_CONSTRAINT_UNIQUE, _PRIMARYKEY
        2067 | 1555 => ErrorKind::Conflict,
        // SQLITE_CONSTRAINT_CHECK, _FOREIGNKEY, _NOTNULL, _TRIGGER
        275 | 787 | 1299 | 1811 => ErrorKind::Invalid,
        // SQLITE_FULL, SQLITE_IOERR and its extended codes, SQLITE_CANTOPEN
        13 | 14 => ErrorKind::Unavailable,
        code if code & 0xff == 10 => ErrorKind::Unavailable,
        // SQLITE_BUSY, SQLITE_LOCKED and their extended codes
        code if matches!(code & 0xff, 5 | 6) => ErrorKind::Unavailable,
        _ => ErrorKind::Internal,
    }
}
