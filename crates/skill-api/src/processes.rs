//! Processes — durable multi-step work the core carries from start to end — and their
//! instances: a definition's document, starting an instance (idempotent by its key), and an
//! instance's steps as they ran.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use skill_contract::process::ProcessSpec;

use crate::{InstanceStatus, StepStatus};

/// The largest input of an instance, serialized: 256 KiB.
pub const MAX_INPUT_BYTES: usize = 256 * 1024;

/// A process document as `POST /processes` and `POST /packages:apply` carry it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ProcessRequest {
    /// 1 to 200 of `a-z 0-9 . _ -`, starting with a letter or digit.
    pub key: String,
    /// The document's spec (`ProcessSpec`), read by the core with the document's paths.
    #[schemars(with = "ProcessSpec")]
    pub spec: Value,
}

/// A process version as the core keeps it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProcessOut {
    pub id: String,
    pub key: String,
    pub version: String,
    pub spec: ProcessSpec,
    /// The principal of the agent its instances run as.
    pub agent_principal_id: String,
    pub package: Option<String>,
    pub published_by: String,
    pub created_at: String,
}

/// `GET /processes`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ProcessQuery {
    /// Only the versions of this key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cursor: Option<String>,
}

/// The body of `POST /processes/{reference}:start`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct StartRequest {
    /// The workspace (its key or id) the instance works in.
    pub workspace: String,
    /// What the instance starts with (`$.input…`): an object of at most 256 KiB.
    #[serde(default)]
    pub input: Value,
    /// What makes the instance one (1 to 200 characters): a start with the same workspace,
    /// process and key is the same instance. A new key is made when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
}

/// The body of `POST /process-instances/{id}:cancel`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CancelInstanceRequest {
    /// Why (1 to 500 characters): shown on the instance.
    pub reason: String,
}

/// An instance as the core keeps it, with its steps (on `GET /process-instances/{id}`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct InstanceOut {
    pub id: String,
    pub process_id: String,
    /// `key@version`.
    pub process: String,
    pub workspace_id: String,
    pub key: String,
    pub status: InstanceStatus,
    pub input: Value,
    /// Its variables (`$.vars…`).
    pub vars: Value,
    /// The step it is at (or ended at).
    pub step: Option<String>,
    /// When it next looks again on its own (a timer, a retry's backoff).
    pub wake_at: Option<String>,
    /// Why it failed or was cancelled.
    pub error: Option<crate::Failure>,
    pub started_by: String,
    /// Who set it in motion (`{person, role, agent?, via}`), fixed when it was made: none of
    /// them decides what lets its work write.
    #[serde(default)]
    pub initiators: Vec<crate::Initiator>,
    pub created_at: String,
    pub updated_at: String,
    pub ended_at: Option<String>,
    /// Whether this answer made it (`false`: a start with its key had made it before).
    #[serde(default)]
    pub created: bool,
    /// Its steps as they ran, oldest first (on `GET /process-instances/{id}`, a page of them;
    /// empty in lists).
    #[serde(default)]
    pub steps: Vec<StepOut>,
    /// More steps follow: pass this as `stepsAfter` for the next page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steps_next: Option<i32>,
}

/// `GET /process-instances/{id}`: which of its steps to answer.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct InstanceStepsQuery {
    /// The steps after this `seq` (the `stepsNext` of the page before); from the first without it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steps_after: Option<i32>,
    /// How many steps at most: 1 to 1,000, 200 without it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steps_limit: Option<u32>,
}

/// One step of an instance as it ran (a step run again — a call's retry, a loop — is a row of
/// its own).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct StepOut {
    /// The activity's id: what a call's process basis names.
    pub id: String,
    pub seq: i32,
    /// The step's id in the definition.
    pub step: String,
    /// `call`, `task`, `wait`, `switch`, `set` or `end`.
    pub action: crate::StepKind,
    pub status: StepStatus,
    /// Which call of the step this is (1 first; a retry is the next).
    pub attempt: i32,
    pub invocation_id: Option<String>,
    pub task_id: Option<String>,
    /// The fact a wait took.
    pub fact_id: Option<String>,
    /// A call step that writes to the outside world: the approved gate it stands on.
    pub approval_id: Option<String>,
    /// What later steps read as `$.steps.<id>.output`.
    pub output: Option<Value>,
    /// Why it failed.
    pub error: Option<crate::Failure>,
    /// When a timer fires or a wait times out.
    pub wake_at: Option<String>,
    pub started_at: String,
    pub ended_at: Option<String>,
}

/// `GET /process-instances`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct InstanceQuery {
    /// The workspace (its key or id).
    pub workspace: String,
    /// Only the instances of this process key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub process: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<InstanceStatus>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cursor: Option<String>,
}
