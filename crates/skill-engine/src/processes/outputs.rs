//! What a task step's run keeps as its output, typed: the task as it closed and the decision on
//! its gates — what later steps' paths read (`$.steps.<id>.output.customFields`) and what a write
//! standing on the step (`decidedBy`) checks. Other steps' outputs are what their calls or
//! switches made, read only by paths.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use skill_api::{ApprovalStatus, TaskStatus};
use skill_store::records::{ApprovalRecord, TaskRecord};

/// A closed task step's output.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct TaskStepOutput {
    pub(crate) id: String,
    pub(crate) status: TaskStatus,
    pub(crate) close_reason: Option<String>,
    pub(crate) custom_fields: Value,
    /// The newest approved gate, unless a gate was rejected.
    pub(crate) approval: Option<StepDecision>,
    /// Whether a gate of the task was rejected (a rejection stands).
    pub(crate) rejected: bool,
}

/// The decision a later write may stand on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct StepDecision {
    pub(crate) id: String,
    pub(crate) decided_by: Option<String>,
    pub(crate) comment: String,
    pub(crate) decided_at: Option<String>,
}

impl TaskStepOutput {
    /// The output of a task step whose task closed as `task`, with its approvals.
    pub(crate) fn of(task: &TaskRecord, approvals: &[ApprovalRecord]) -> Self {
        let gates = || approvals.iter().filter(|a| a.gates_the_task());
        let rejected = gates().any(|a| a.status == ApprovalStatus::Rejected);
        // The decision later steps may stand on: the newest approved gate (one asked for a
        // single call decides that call alone).
        let approval = gates()
            .filter(|a| a.status == ApprovalStatus::Approved)
            .max_by(|a, b| a.decided_at.cmp(&b.decided_at))
            .filter(|_| !rejected)
            .map(|a| StepDecision {
                id: a.id.clone(),
                decided_by: a.decided_by.clone(),
                comment: a.comment.clone(),
                decided_at: a.decided_at.as_ref().map(crate::catalog::view_time),
            });
        Self {
            id: task.id.clone(),
            status: task.status,
            close_reason: task.close_reason.clone(),
            custom_fields: task.custom_fields.clone(),
            approval,
            rejected,
        }
    }

    /// The stored output as JSON, in the shape paths read.
    pub(crate) fn to_value(&self) -> Value {
        serde_json::to_value(self).unwrap_or_default()
    }

    /// A stored task step's output read back.
    pub(crate) fn read(output: &Value) -> Result<Self, serde_json::Error> {
        Self::deserialize(output)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn it_keeps_the_shape_paths_read_and_reads_back() {
        let output = TaskStepOutput {
            id: "t".into(),
            status: TaskStatus::Done,
            close_reason: None,
            custom_fields: serde_json::json!({"claim": "C-1"}),
            approval: Some(StepDecision {
                id: "a".into(),
                decided_by: Some("p".into()),
                comment: "ok".into(),
                decided_at: Some("2026-12-07T00:00:00Z".into()),
            }),
            rejected: false,
        };
        let value = output.to_value();
        assert_eq!(
            value,
            serde_json::json!({"id": "t", "status": "done", "closeReason": null, "customFields": {"claim": "C-1"},
                               "approval": {"id": "a", "decidedBy": "p", "comment": "ok",
                                            "decidedAt": "2026-12-07T00:00:00Z"},
                               "rejected": false})
        );
        assert_eq!(TaskStepOutput::read(&value).expect("reads"), output);
        assert!(TaskStepOutput::read(&serde_json::json!({"id": "t", "status": "shut"})).is_err(), "an unknown status");
    }
}
