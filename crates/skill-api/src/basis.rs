//! Why an external write may happen, and the other fixed-shape documents the core keeps about
//! work: what a decider could do when deciding, and what an outcome's action did.

use serde::{Deserialize, Serialize};

use crate::CallStatus;

/// The basis of a call that writes to the outside world (`authorizationBasis`). Every call of an
/// `external_write` version has one; a call that does not write has none.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "kind")]
pub enum Basis {
    /// An approved gate: the call its outcome reserved when it was decided (made by the core
    /// with the decider's authority), or the one call it was requested for (made by its
    /// requester) — with exactly the version and inputs fixed then.
    #[serde(rename = "approval", rename_all = "camelCase")]
    Approval {
        approval_id: String,
        /// The person who approved it.
        decided_by: String,
        /// Retry `n` of an outcome's action that failed for a reason that may pass (left out
        /// of the first call).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        retry: Option<i32>,
    },
    /// The task type's execution: the core's own call in its run, with the inputs the type maps
    /// from the task, once per task, while the task's gates let it.
    #[serde(rename = "execution", rename_all = "camelCase")]
    Execution { task_type_id: String, task_id: String, run_id: String },
    /// A call step of a running process instance that names exactly this version: the core's
    /// own call, valid while the step (its activity) is open.
    #[serde(rename = "process", rename_all = "camelCase")]
    Process {
        instance_id: String,
        /// The step's run (`StepOut.id`).
        activity_id: String,
        /// The step's id in the definition.
        step: String,
        definition_key: String,
        definition_version: String,
        /// The decision it stands on: an approved gate of a task the instance waited for
        /// (`decidedBy` on the step), and the person who approved it.
        approval_id: String,
        decided_by: String,
    },
}

impl Basis {
    /// The approval it spends, if it is an approval's.
    pub fn approval_id(&self) -> Option<&str> {
        match self {
            Self::Approval { approval_id, .. } => Some(approval_id),
            Self::Execution { .. } | Self::Process { .. } => None,
        }
    }

    /// Its kind's word (`approval`, `execution`), as it is kept.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Approval { .. } => "approval",
            Self::Execution { .. } => "execution",
            Self::Process { .. } => "process",
        }
    }
}

/// A decider's authority as it was when deciding: what the outcome's calls are made with.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DecisionAuthority {
    pub principal_id: String,
    pub grants: Vec<HeldGrant>,
}

/// One permission a principal held, in a workspace or (`null`) in all of them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HeldGrant {
    pub workspace_id: Option<String>,
    pub permission: String,
}

/// What an outcome's `invokeSkill` action did: the call it made.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ActionCall {
    pub invocation_id: String,
    /// `name@version`.
    pub skill: String,
    /// The call's status when the action was carried out.
    pub status: CallStatus,
    /// Whether the call was made then (or one with its key existed).
    pub created: bool,
    pub authorization_basis: Option<Basis>,
}

/// Why something the core ran failed: an outcome's action, a run of the core's, a process
/// instance or one of its steps, a rule's evaluation. One shape for all of them, stored as it is
/// shown; each field but the code and message only where it says something.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Failure {
    pub code: String,
    #[serde(default, deserialize_with = "null_as_empty")]
    pub message: String,
    /// Whether trying again may pass (a call's own failure says; absent, the code's registry entry
    /// decides).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retryable: Option<bool>,
    /// The refusal's details, when a call was refused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub details: Option<serde_json::Value>,
    /// The call whose end it was (an outcome's action, a task's execution).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skill_invocation_id: Option<String>,
    /// The call whose end it was (a process step, a rule's interpretation).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub invocation_id: Option<String>,
    /// Who ended it (a cancelled process instance).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub by: Option<String>,
    /// The process step it failed at.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step: Option<String>,
    /// The case of a `switch` whose condition failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub case: Option<usize>,
    /// The step's failure an instance failed of.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cause: Option<Box<Failure>>,
}

impl Failure {
    pub fn new(code: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            code: code.into(),
            message: message.into(),
            retryable: None,
            details: None,
            skill_invocation_id: None,
            invocation_id: None,
            by: None,
            step: None,
            case: None,
            cause: None,
        }
    }

    /// Whether its code is the registered code `code`.
    pub fn is(&self, code: skill_contract::codes::Code) -> bool {
        self.code == code.as_str()
    }

    /// The failure with `details` (none when they are JSON `null`).
    #[must_use]
    pub fn with_details(self, details: serde_json::Value) -> Self {
        Self { details: Some(details).filter(|details| !details.is_null()), ..self }
    }

    /// The failure of the call whose end it was (a process step, a rule's interpretation).
    #[must_use]
    pub fn of_invocation(self, id: impl Into<String>) -> Self {
        Self { invocation_id: Some(id.into()), ..self }
    }
}

/// A message written as JSON `null` (by older versions) reads as empty.
fn null_as_empty<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<String, D::Error> {
    Ok(Option::<String>::deserialize(deserializer)?.unwrap_or_default())
}

/// What became of one typed output slot of a call on a task (`outputs.<slot>`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SlotOutcome {
    pub status: crate::OutputStatus,
    /// The slot's artifact type (not on a rejected value).
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub artifact_id: Option<String>,
    /// Why its value was rejected.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

/// The result of a run in which the core carried out a task's execution.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ExecutionResult {
    pub skill_invocation_id: String,
    /// `name@version`.
    pub skill: String,
    pub status: CallStatus,
    /// The artifact made of its output, if any.
    pub artifact_id: Option<String>,
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_basis_is_kept_as_it_always_was() {
        let approval = Basis::Approval { approval_id: "a".into(), decided_by: "p".into(), retry: None };
        assert_eq!(
            serde_json::to_value(&approval).expect("serializes"),
            json!({"kind": "approval", "approvalId": "a", "decidedBy": "p"})
        );
        let retried = Basis::Approval { approval_id: "a".into(), decided_by: "p".into(), retry: Some(2) };
        assert_eq!(serde_json::to_value(&retried).expect("serializes")["retry"], json!(2));
        let execution = Basis::Execution { task_type_id: "tt".into(), task_id: "t".into(), run_id: "r".into() };
        assert_eq!(
            serde_json::to_value(&execution).expect("serializes"),
            json!({"kind": "execution", "taskTypeId": "tt", "taskId": "t", "runId": "r"})
        );
        let process = Basis::Process {
            instance_id: "i".into(),
            activity_id: "s".into(),
            step: "send".into(),
            definition_key: "p".into(),
            definition_version: "1".into(),
            approval_id: "a".into(),
            decided_by: "reviewer".into(),
        };
        assert_eq!(
            serde_json::to_value(&process).expect("serializes"),
            json!({"kind": "process", "instanceId": "i", "activityId": "s", "step": "send", "definitionKey": "p",
                   "definitionVersion": "1", "approvalId": "a", "decidedBy": "reviewer"})
        );
        let partial = serde_json::from_value::<Basis>(json!({"kind": "process", "stepId": "s"}));
        assert!(partial.expect_err("a process basis names its instance").to_string().contains("instanceId"));
        let unknown = serde_json::from_value::<Basis>(json!({"kind": "delegation"}));
        assert!(unknown.expect_err("an unknown kind").to_string().contains("delegation"));
        assert!(serde_json::from_value::<Basis>(json!({"kind": "approval"})).is_err(), "a basis names its approval");
    }

    #[test]
    fn every_failure_the_core_writes_reads_back_as_it_was_written() {
        let written = [
            json!({"code": "process_cancelled", "message": "stopped", "by": "p-1"}),
            json!({"code": "process_step_failed", "message": "step a failed", "step": "a",
                   "cause": {"code": "condition_error", "message": "no value", "case": 1}}),
            json!({"code": "call_failed", "message": "boom", "invocationId": "c-1"}),
            json!({"code": "outbox_unavailable", "message": "down", "retryable": true, "details": {"host": "x"}}),
            json!({"code": "gate_withdrawn", "message": "withdrawn", "skillInvocationId": "c-2"}),
        ];
        for value in written {
            let failure: Failure = serde_json::from_value(value.clone()).expect("a failure");
            assert_eq!(serde_json::to_value(&failure).expect("serializes"), value);
        }
        let older: Failure = serde_json::from_value(json!({"code": "call_failed", "message": null})).expect("reads");
        assert_eq!((older.code.as_str(), older.message.as_str()), ("call_failed", ""));
        assert!(serde_json::from_value::<Failure>(json!({"message": "no code"})).is_err(), "a failure has a code");
    }

    #[test]
    fn a_calls_failure_keeps_whether_it_may_pass() {
        let reported = crate::invocations::ReportedError {
            code: "outbox_unavailable".into(),
            message: "down".into(),
            retryable: true,
            details: None,
        };
        let failure = Failure::from(&reported);
        assert_eq!((failure.retryable, failure.code.as_str()), (Some(true), "outbox_unavailable"));
        assert_eq!(serde_json::to_value(&failure).expect("json"), serde_json::to_value(&reported).expect("json"));
    }
}
