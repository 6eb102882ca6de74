//! [`SkillErrorType`]: the seven categories of a skill error in the protocol. Every error code
//! of the registry has one, and the wire error carries it.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// The category of a skill error.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SkillErrorType {
    SkillNotFound,
    ResolutionFailure,
    CycleDetected,
    ToolActivationFailure,
    ToolExecutionFailure,
    ValidationError,
    PermissionDenied,
}

impl SkillErrorType {
    pub const ALL: &'static [SkillErrorType] = &[
        Self::SkillNotFound,
        Self::ResolutionFailure,
        Self::CycleDetected,
        Self::ToolActivationFailure,
        Self::ToolExecutionFailure,
        Self::ValidationError,
        Self::PermissionDenied,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::SkillNotFound => "skill_not_found",
            Self::ResolutionFailure => "resolution_failure",
            Self::CycleDetected => "cycle_detected",
            Self::ToolActivationFailure => "tool_activation_failure",
            Self::ToolExecutionFailure => "tool_execution_failure",
            Self::ValidationError => "validation_error",
            Self::PermissionDenied => "permission_denied",
        }
    }
}

impl fmt::Display for SkillErrorType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for SkillErrorType {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Self::ALL.iter().copied().find(|t| t.as_str() == s).ok_or_else(|| {
            let allowed: Vec<&str> = Self::ALL.iter().map(|t| t.as_str()).collect();
            format!("unknown error_type `{s}`, use one of: {}", allowed.join(", "))
        })
    }
}

impl Serialize for SkillErrorType {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for SkillErrorType {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        String::deserialize(deserializer)?.parse().map_err(serde::de::Error::custom)
    }
}
