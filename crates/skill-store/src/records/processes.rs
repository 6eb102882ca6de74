//! The rows of processes: a published version, an instance, and each step an instance ran.

use serde_json::Value;
use skill_api::{Failure, InstanceStatus, StepKind, StepStatus};
use skill_contract::process::ProcessSpec;

use super::Time;
use crate::states::{JsonText, Text};

/// A published process version (`processes`): never changes.
#[derive(sqlx::FromRow, Debug, Clone, PartialEq)]
pub struct ProcessRecord {
    pub id: String,
    pub key: String,
    pub version: String,
    #[sqlx(try_from = "JsonText<ProcessSpec>")]
    pub spec: ProcessSpec,
    pub agent_principal_id: String,
    pub package_key: Option<String>,
    pub published_by: String,
    pub created_at: Time,
}

/// An instance of a process (`process_instances`).
#[derive(sqlx::FromRow, Debug, Clone, PartialEq)]
pub struct InstanceRecord {
    pub id: String,
    pub process_id: String,
    pub process_key: String,
    pub workspace_id: String,
    pub key: String,
    #[sqlx(json)]
    pub input: Value,
    #[sqlx(json)]
    pub vars: Value,
    #[sqlx(try_from = "Text<InstanceStatus>")]
    pub status: InstanceStatus,
    /// The step it is at: the open one's, or the one it enters next.
    pub at_step: Option<String>,
    /// When it looks again on its own.
    pub wake_at: Option<Time>,
    /// Why it failed.
    #[sqlx(try_from = "JsonText<Failure>")]
    pub error: Option<Failure>,
    pub started_by: String,
    pub row_version: i32,
    pub created_at: Time,
    pub updated_at: Time,
    pub ended_at: Option<Time>,
    /// Who set it in motion (fixed when made).
    #[sqlx(json)]
    pub initiators: Vec<skill_api::Initiator>,
}

/// One step an instance ran (`process_steps`): its activity.
#[derive(sqlx::FromRow, Debug, Clone, PartialEq)]
pub struct StepRecord {
    pub id: String,
    pub instance_id: String,
    pub seq: i32,
    pub step_id: String,
    #[sqlx(try_from = "Text<StepKind>")]
    pub action: StepKind,
    #[sqlx(try_from = "Text<StepStatus>")]
    pub status: StepStatus,
    pub attempt: i32,
    /// A call step's version and inputs, fixed when it opened.
    pub skill_id: Option<String>,
    #[sqlx(json(nullable))]
    pub inputs: Option<Value>,
    pub invocation_id: Option<String>,
    pub task_id: Option<String>,
    pub fact_id: Option<String>,
    /// A wait for a fact: the kind it waits for.
    pub wait_kind: Option<String>,
    #[sqlx(json(nullable))]
    pub output: Option<Value>,
    /// Why it failed.
    #[sqlx(try_from = "JsonText<Failure>")]
    pub error: Option<Failure>,
    pub wake_at: Option<Time>,
    pub row_version: i32,
    pub started_at: Time,
    pub ended_at: Option<Time>,
    /// A call step on the process basis: the approved gate it stands on, fixed when it opened.
    pub approval_id: Option<String>,
}
