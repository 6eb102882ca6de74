//! The closed sets of states at the database's edge: each is kept as its word in one column, and
//! read back only through its parse, so a row holding a word the set does not know is an error
//! that names the table, the column and the word — never a default.

use serde::de::DeserializeOwned;
use skill_api::{ActionCall, Basis, DecisionAuthority};
use skill_api::{
    ActionStatus, ApprovalStatus, CallStatus, InstanceStatus, OutcomeReaction, OutcomeStatus, PrincipalKind,
    RequestStatus, RequesterKind, RuleEvaluationStatus, RunStatus, SessionStatus, SkillStatus, State, StepKind,
    StepStatus, TaskStatus, UnknownState,
};
use skill_contract::agent::AgentSpec;
use skill_contract::rule::RuleSpec;
use skill_contract::{RiskLevel, SideEffects};
use sqlx::types::Json;
use sqlx::{Database, Decode, Type, ValueRef};

/// A closed set and the column it is kept in.
pub(crate) trait Stored: State {
    /// `table.column`.
    const AT: &'static str;

    /// The member `word` names, or the error that says where the unknown word was found.
    fn read(word: &str) -> Result<Self, Unreadable> {
        Self::parse(word).map_err(|unknown| Unreadable { at: Self::AT, unknown })
    }
}

/// A stored word its set does not know.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{at} holds `{}`, which is not a {}: the known ones are {}", .unknown.found, .unknown.what, .unknown.allowed.join(", "))]
pub(crate) struct Unreadable {
    /// `table.column`.
    pub(crate) at: &'static str,
    pub(crate) unknown: UnknownState,
}

/// A state column as sqlx decodes it: the text, parsed.
pub(crate) struct Text<T>(pub(crate) T);

/// A nullable state column as sqlx decodes it.
pub(crate) struct Nullable<T>(pub(crate) Option<T>);

/// A wrapper that sqlx sees as the column type `$inner` is.
macro_rules! typed_as {
    ($($wrapper:ident as $inner:ty),+) => {
        $(
            impl<DB: Database, T> Type<DB> for $wrapper<T>
            where
                $inner: Type<DB>,
            {
                fn type_info() -> DB::TypeInfo {
                    <$inner as Type<DB>>::type_info()
                }

                fn compatible(ty: &DB::TypeInfo) -> bool {
                    <$inner as Type<DB>>::compatible(ty)
                }
            }
        )+
    };
}

typed_as!(Text as String, Nullable as String, JsonText as Json<serde_json::Value>);

impl<'r, DB: Database, T: Stored> Decode<'r, DB> for Text<T>
where
    &'r str: Decode<'r, DB>,
{
    fn decode(value: <DB as Database>::ValueRef<'r>) -> Result<Self, sqlx::error::BoxDynError> {
        let word = <&str as Decode<DB>>::decode(value)?;
        Ok(Self(T::read(word)?))
    }
}

impl<'r, DB: Database, T: Stored> Decode<'r, DB> for Nullable<T>
where
    &'r str: Decode<'r, DB>,
{
    fn decode(value: <DB as Database>::ValueRef<'r>) -> Result<Self, sqlx::error::BoxDynError> {
        if value.is_null() {
            return Ok(Self(None));
        }
        let word = <&str as Decode<DB>>::decode(value)?;
        Ok(Self(Some(T::read(word)?)))
    }
}

impl<T> From<Nullable<T>> for Option<T> {
    fn from(value: Nullable<T>) -> Self {
        value.0
    }
}

macro_rules! stored {
    ($($state:ty => $at:literal),+ $(,)?) => {
        $(
            impl Stored for $state {
                const AT: &'static str = $at;
            }

            impl From<Text<$state>> for $state {
                fn from(value: Text<$state>) -> Self {
                    value.0
                }
            }
        )+
    };
}

stored! {
    CallStatus => "skill_invocations.status",
    RequesterKind => "skill_invocations.requested_by_kind",
    TaskStatus => "tasks.status",
    RunStatus => "runs.status",
    ApprovalStatus => "approvals.status",
    OutcomeStatus => "approvals.outcome_status",
    OutcomeReaction => "approvals.outcome_reaction",
    ActionStatus => "approval_actions.status",
    SessionStatus => "executor_sessions.status",
    SkillStatus => "skills.status",
    PrincipalKind => "principals.kind",
    RequestStatus => "agent_requests.status",
    RuleEvaluationStatus => "rule_evaluations.status",
    InstanceStatus => "process_instances.status",
    StepStatus => "process_steps.status",
    StepKind => "process_steps.action",
    SideEffects => "skills.side_effects",
    RiskLevel => "skills.risk_level",
}

/// A fixed-shape JSON document and the nullable column it is kept in.
pub(crate) trait Document: DeserializeOwned {
    /// `table.column`.
    const AT: &'static str;
}

/// A stored document that is not of its shape.
#[derive(Debug, thiserror::Error)]
#[error("{at} holds a document that is not a {what}: {error}")]
pub(crate) struct Misshapen {
    at: &'static str,
    what: &'static str,
    error: serde_json::Error,
}

/// A document of a nullable JSON column read back.
pub(crate) fn document<T: Document>(value: serde_json::Value) -> Result<T, Misshapen> {
    let what = std::any::type_name::<T>().rsplit("::").next().unwrap_or_default();
    serde_json::from_value(value).map_err(|error| Misshapen { at: T::AT, what, error })
}

/// A nullable JSON column of a fixed shape, as sqlx decodes it.
pub(crate) struct JsonText<T>(pub(crate) Option<T>);

impl<'r, DB: Database, T: Document> Decode<'r, DB> for JsonText<T>
where
    Json<serde_json::Value>: Decode<'r, DB>,
{
    fn decode(value: <DB as Database>::ValueRef<'r>) -> Result<Self, sqlx::error::BoxDynError> {
        if value.is_null() {
            return Ok(Self(None));
        }
        let Json(json) = <Json<serde_json::Value> as Decode<DB>>::decode(value)?;
        Ok(Self(Some(document(json)?)))
    }
}

impl<T> From<JsonText<T>> for Option<T> {
    fn from(value: JsonText<T>) -> Self {
        value.0
    }
}

impl Document for Basis {
    const AT: &'static str = "skill_invocations.authorization_basis";
}

impl Document for skill_api::ReportedError {
    const AT: &'static str = "skill_invocations.error";
}

impl Document for skill_api::TaskTypeSpec {
    const AT: &'static str = "task_types.spec";
}

impl Document for skill_api::TaskExecution {
    const AT: &'static str = "task_types.execution";
}

impl Document for skill_api::OutcomeAction {
    const AT: &'static str = "approval_actions.action";
}

impl Document for skill_api::Failure {
    const AT: &'static str = "the error column of an action, a process instance, a step or a rule's evaluation";
}

impl Document for skill_contract::Contract {
    const AT: &'static str = "skills.contract";
}

impl Document for skill_api::Composition {
    const AT: &'static str = "skills.composition";
}

impl Document for DecisionAuthority {
    const AT: &'static str = "approvals.decision_authority";
}

impl Document for ActionCall {
    const AT: &'static str = "approval_actions.result";
}

impl Document for AgentSpec {
    const AT: &'static str = "agents.spec";
}

/// A document column that is never NULL.
#[derive(Debug, thiserror::Error)]
#[error("{0} is NULL, which it never is")]
pub(crate) struct Missing(&'static str);

/// The documents kept in columns that are never NULL: each is read through `JsonText` and is an
/// error naming its column when the column holds NULL.
macro_rules! never_null {
    ($($document:ty),+ $(,)?) => {
        $(
            impl TryFrom<JsonText<$document>> for $document {
                type Error = Missing;

                fn try_from(value: JsonText<Self>) -> Result<Self, Missing> {
                    value.0.ok_or(Missing(<Self as Document>::AT))
                }
            }
        )+
    };
}

never_null!(
    AgentSpec,
    RuleSpec,
    skill_contract::process::ProcessSpec,
    skill_api::TaskTypeSpec,
    skill_api::OutcomeAction,
);

impl Document for RuleSpec {
    const AT: &'static str = "rules.spec";
}

impl Document for skill_contract::process::ProcessSpec {
    const AT: &'static str = "processes.spec";
}

/// A nullable document column of a rusqlite row.
pub(crate) fn get_document<T: Document>(row: &rusqlite::Row<'_>, index: usize) -> rusqlite::Result<Option<T>> {
    let conversion = |error: Box<dyn std::error::Error + Send + Sync>| {
        rusqlite::Error::FromSqlConversionFailure(index, rusqlite::types::Type::Text, error)
    };
    row.get::<_, Option<String>>(index)?
        .map(|text| {
            let value = serde_json::from_str(&text).map_err(|error| conversion(Box::new(error)))?;
            document(value).map_err(|error| conversion(Box::new(error)))
        })
        .transpose()
}

/// A state column of a rusqlite row.
pub(crate) fn get<T: Stored>(row: &rusqlite::Row<'_>, index: usize) -> rusqlite::Result<T> {
    let word = row.get::<_, String>(index)?;
    T::read(&word)
        .map_err(|error| rusqlite::Error::FromSqlConversionFailure(index, rusqlite::types::Type::Text, Box::new(error)))
}

/// A nullable state column of a rusqlite row.
pub(crate) fn get_maybe<T: Stored>(row: &rusqlite::Row<'_>, index: usize) -> rusqlite::Result<Option<T>> {
    row.get::<_, Option<String>>(index)?
        .map(|word| {
            T::read(&word).map_err(|error| {
                rusqlite::Error::FromSqlConversionFailure(index, rusqlite::types::Type::Text, Box::new(error))
            })
        })
        .transpose()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_never_null_document_column_holding_null_is_an_error_naming_it() {
        let missing = skill_api::TaskTypeSpec::try_from(JsonText(None)).expect_err("NULL");
        assert_eq!(missing.to_string(), "task_types.spec is NULL, which it never is");
        let missing = skill_api::OutcomeAction::try_from(JsonText(None)).expect_err("NULL");
        assert!(missing.to_string().starts_with("approval_actions.action is NULL"), "{missing}");
        let spec = skill_api::TaskTypeSpec::new("1");
        assert_eq!(skill_api::TaskTypeSpec::try_from(JsonText(Some(spec.clone()))).expect("read"), spec);
    }
}
