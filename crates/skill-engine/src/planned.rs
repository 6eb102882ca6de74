//! What a package publishes together: the records its documents may name before they are in
//! the catalog.

use skill_store::records::{AgentRecord, ProcessRecord, SkillRecord, TaskTypeRecord};

/// The versions, task types, agents and processes published in the same apply as the document
/// being checked (its agents, rules or processes), which may name them; and the package's key.
#[derive(Default)]
pub(crate) struct Planned<'a> {
    pub(crate) skills: &'a [SkillRecord],
    pub(crate) task_types: &'a [TaskTypeRecord],
    pub(crate) agents: &'a [AgentRecord],
    pub(crate) processes: &'a [ProcessRecord],
    pub(crate) package: Option<&'a str>,
}
