//! The skill protocol types for discovery, composition, execution and error reporting:
//! [`SkillErrorType`], [`SkillCapabilitySummary`], [`ResolvedToolEntry`], [`SkillMetadata`],
//! [`SkillDefinition`], [`SkillResult`] and [`map_tool_error`].
//!
//! Every value is immutable after construction: fields are private, constructors validate,
//! and deserialization goes through the same constructors. Field names on the wire are the
//! protocol's (snake_case).

mod definition;
mod result;
mod tools;

pub use definition::{SkillDefinition, SkillMetadata};
pub use result::{ErrorClass, SkillResult, map_tool_error};
pub use tools::{ResolvedToolEntry, SkillCapabilitySummary};

use crate::error::SkillError;
pub use crate::error_type::SkillErrorType;

/// A protocol value that broke one of its invariants.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ProtocolError(pub(crate) String);

impl ProtocolError {
    /// The same failure as a `validation_error`.
    pub fn to_skill_error(&self, skill_name: &str) -> SkillError {
        SkillError::of_type(SkillErrorType::ValidationError, self.0.clone()).for_skill(skill_name)
    }
}
