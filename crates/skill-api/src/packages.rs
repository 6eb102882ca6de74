//! Package installs: which package (key, version, install hash) installed which objects.

use serde::{Deserialize, Serialize};

/// The body of `POST /packages:record`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RecordRequest {
    pub package: PackageRef,
    /// SHA-256 over the package's files: equal for equal packages.
    pub install_hash: String,
    pub objects: Vec<ObjectRef>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PackageRef {
    pub key: String,
    pub version: String,
}

/// An object a package installs: its kind (`Skill`) and key (the skill's name).
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
