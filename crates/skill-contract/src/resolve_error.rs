//! [`ResolveError`]: why a skill could not be resolved into its tool set (re-exported as
//! `composite::ResolveError`), and its protocol error.

use crate::error::SkillError;
use crate::error_type::SkillErrorType;
use crate::names::SkillRef;

/// Why a skill could not be resolved.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ResolveError {
    #[error("skill {skill} not found")]
    NotFound { skill: SkillRef },
    #[error("{included_by} includes {include}, which does not exist: publish it or fix the reference")]
    MissingInclude { include: SkillRef, included_by: SkillRef },
    #[error("include cycle: {}", .cycle.iter().map(ToString::to_string).collect::<Vec<_>>().join(" -> "))]
    Cycle {
        /// The skills of the cycle, the first repeated at the end (`a@1 -> b@1 -> a@1`).
        cycle: Vec<SkillRef>,
    },
    #[error(
        "two different tools are named `{name}`: one from {first}, one from {second}; a tool set needs unique names"
    )]
    ToolConflict { name: String, first: SkillRef, second: SkillRef },
}

impl ResolveError {
    pub fn error_type(&self) -> SkillErrorType {
        match self {
            Self::NotFound { .. } => SkillErrorType::SkillNotFound,
            Self::MissingInclude { .. } | Self::ToolConflict { .. } => SkillErrorType::ResolutionFailure,
            Self::Cycle { .. } => SkillErrorType::CycleDetected,
        }
    }

    /// The protocol error, with the skills involved in `details`.
    pub fn to_skill_error(&self, skill_name: &str) -> SkillError {
        use serde_json::json;
        let error = SkillError::of_type(self.error_type(), self.to_string()).for_skill(skill_name);
        match self {
            Self::NotFound { skill } => error.with_detail("skill", json!(skill)),
            Self::MissingInclude { include, included_by } => {
                error.with_detail("include", json!(include)).with_detail("includedBy", json!(included_by))
            }
            Self::Cycle { cycle } => error.with_detail("cycle", json!(cycle)),
            Self::ToolConflict { name, first, second } => {
                error.with_detail("tool", json!(name)).with_detail("skills", json!([first, second]))
            }
        }
    }
}
