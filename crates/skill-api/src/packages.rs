//! Package installs: which package (key, version, install hash) installed which objects.

use serde::{Deserialize, Serialize};

use crate::{PatchRequest, PublishRequest, SkillOut};

/// The largest body `POST /packages:apply` accepts: a whole package (each contract in it is
/// still at most 512 KiB).
pub const MAX_APPLY_BYTES: usize = 32 * 1024 * 1024;

/// The body of `POST /packages:apply`: a package's whole plan, written in one transaction or
/// not at all.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ApplyRequest {
    pub package: PackageRef,
    /// SHA-256 over the package's files (64 hex digits).
    pub install_hash: String,
    /// Versions to publish; a composite may include a version published in the same plan.
    #[serde(default)]
    pub create: Vec<PublishRequest>,
    /// Published versions to change, each at the row version the plan read.
    #[serde(default)]
    pub patch: Vec<PlannedPatch>,
    /// The objects the package installs: skills by name, agents by key.
    pub objects: Vec<ObjectRef>,
    /// Objects of `objects` that another package installed and this install takes over;
    /// without it such an object is refused (`409 package_object_conflict`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub adopt: Vec<ObjectRef>,
    /// The JSON Schema of the package's settings (`spec.settings` of its manifest).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub settings_schema: Option<serde_json::Value>,
    /// The package's task types: each version published unless it is already, as it is here (a
    /// published version that differs is refused: `409 task_type_exists`). They may name skills
    /// the same apply publishes.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub task_types: Vec<crate::TaskTypeRequest>,
    /// The package's artifact types, published (before its task types, which may name them) as
    /// its task types are: `409 artifact_type_exists` for a published version that differs.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub artifact_types: Vec<crate::ArtifactTypeRequest>,
    /// The package's agents: each one's principal (named by its key) created or brought to what
    /// the document says — its permissions, its assigned versions, an executor's allow-list —
    /// whole. List them in `objects` as `{kind: Agent, key}` too.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub agents: Vec<crate::AgentRequest>,
    /// Work rule versions to publish (after the agents they act as and the task types they
    /// ensure); a version published already with the same document is left alone.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rules: Vec<crate::RuleRequest>,
    /// Process versions to publish (after the agents they run as and the task types they make);
    /// a version published already with the same document is left alone.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub processes: Vec<crate::ProcessRequest>,
}

/// One change of a package plan.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PlannedPatch {
    /// The version's id.
    pub id: String,
    /// The row version the plan read (the change is refused when it moved on).
    pub row_version: i32,
    pub change: PatchRequest,
}

/// What `POST /packages:apply` wrote.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ApplyOut {
    pub install: InstallOut,
    pub created: Vec<SkillOut>,
    pub patched: Vec<SkillOut>,
    /// The task type versions this apply published.
    #[serde(default)]
    pub task_types: Vec<crate::TaskTypeOut>,
    /// The artifact type versions this apply published.
    #[serde(default)]
    pub artifact_types: Vec<crate::ArtifactTypeOut>,
    /// The agents this apply created or changed.
    #[serde(default)]
    pub agents: Vec<crate::AgentOut>,
    /// The work rule versions this apply published.
    #[serde(default)]
    pub rules: Vec<crate::RuleOut>,
    /// The process versions this apply published.
    #[serde(default)]
    pub processes: Vec<crate::ProcessOut>,
}

/// The body of `POST /packages:record`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RecordRequest {
    pub package: PackageRef,
    /// SHA-256 over the package's files: equal for equal packages.
    pub install_hash: String,
    /// The objects the package installs (skills by name, each published in some version).
    pub objects: Vec<ObjectRef>,
    /// Objects of `objects` that another package installed and this install takes over;
    /// without it such an object is refused (`409 package_object_conflict`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub adopt: Vec<ObjectRef>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PackageRef {
    pub key: String,
    pub version: String,
}

/// An object a package installs: its kind (`Skill`, `Agent`) and key (the skill's name, the
/// agent's key).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ObjectRef {
    pub kind: String,
    pub key: String,
}

/// The last install of a package.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct InstallOut {
    pub key: String,
    pub version: String,
    pub install_hash: String,
    pub installed_at: String,
    /// The principal that installed it.
    pub installed_by: Option<String>,
    pub objects: Vec<ObjectRef>,
}

/// A package's settings (`GET /packages/{key}/settings`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SettingsOut {
    pub package: String,
    /// The version of the package's last install.
    pub package_version: String,
    /// The JSON Schema the values must fit.
    pub schema: serde_json::Value,
    /// Moves when an install brings a different schema.
    pub schema_revision: i32,
    pub values: serde_json::Value,
    /// Moves with every change of the values (0: never set).
    pub values_revision: i32,
    pub updated_at: String,
    pub updated_by: Option<String>,
}

/// The body of `POST /packages/{key}/settings`: the package's new values, whole.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SettingsRequest {
    /// Checked against the package's settings schema; no secrets.
    pub values: serde_json::Map<String, serde_json::Value>,
    /// The values revision this change was made from (refused with `409 version_conflict` when
    /// it moved on).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expected_revision: Option<i32>,
}
