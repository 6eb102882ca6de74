//! Artifacts: immutable documents of a workspace, a task's or a run's.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// The largest artifact content: 16 MiB.
pub const MAX_ARTIFACT_BYTES: usize = 16 * 1024 * 1024;

/// The body of `POST /artifacts`: the content as `text` (UTF-8) or `base64`, exactly one.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ArtifactRequest {
    /// The workspace (id or key); the task's when `taskId` is given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workspace: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_id: Option<String>,
    /// A run of the task.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_id: Option<String>,
    /// What kind of document: 1 to 200 of `a-z 0-9 _ . -` (`claim_reply`, `skill_result`).
    #[serde(rename = "type")]
    pub kind: String,
    /// 1 to 500 characters.
    pub name: String,
    /// `type/subtype`, such as `text/csv` or `application/json`.
    pub media_type: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Map<String, Value>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base64: Option<String>,
}

/// An artifact as the API shows it (its content is at `GET /artifacts/{id}/content`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ArtifactOut {
    pub id: String,
    pub workspace_id: String,
    pub task_id: Option<String>,
    pub run_id: Option<String>,
    #[serde(rename = "type")]
    pub kind: String,
    pub name: String,
    pub media_type: String,
    pub size_bytes: i64,
    /// Hex SHA-256 of the content.
    pub sha256: String,
    pub metadata: Value,
    pub author_principal_id: String,
    pub skill_invocation_id: Option<String>,
    /// The previous head of its type in its task, which it replaces (a typed output's).
    pub supersedes_id: Option<String>,
    pub created_at: String,
}

/// The query of `GET /artifacts/{id}` and its content: `forTask` names the task of the call an
/// executor runs, whose authority decides what it may read.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ArtifactQuery {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub for_task: Option<String>,
    /// For the listing: the task whose artifacts to list.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task: Option<String>,
}

/// The body of `POST /artifact-types`: one version of an artifact type, immutable once
/// published. The fields are a package's `ArtifactType` spec; `key` is the document's key.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ArtifactTypeRequest {
    /// 1 to 200 of `a-z 0-9 _ . -`, starting with a letter or digit: the `type` of its artifacts.
    pub key: String,
    /// 1 to 50 characters, as skill versions.
    pub version: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub display_name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The media types its artifacts may have; `["application/json"]` when left out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub media_types: Option<Vec<String>>,
    /// The most bytes of content; 16 MiB (the most there is) when left out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_bytes: Option<u64>,
    /// A JSON Schema (draft 2020-12) its artifacts' metadata matches — and a typed output's value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata_schema: Option<Value>,
}

/// An artifact type version as the API shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ArtifactTypeOut {
    pub id: String,
    pub key: String,
    pub version: String,
    pub display_name: String,
    pub description: String,
    pub media_types: Vec<String>,
    pub max_bytes: i64,
    pub metadata_schema: Option<Value>,
    pub created_at: String,
}

/// The query of `GET /artifact-types`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ArtifactTypeQuery {
    /// Only the versions of this key.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub limit: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cursor: Option<String>,
}
