//! Read-only gating at run time: an agent principal calls only what its assignments grant — an
//! assigned leaf, or a tool of an assigned composite's resolved set — and a read-only assignment
//! never grants a tool that writes, whatever the composite contains.

use skill_api::PrincipalKind;
use skill_contract::codes::Code;
use skill_store::records::SkillRecord;

use crate::Engine;
use crate::actor::Actor;
use crate::error::{Class, EngineError, Result};

impl Engine {
    /// `403 tool_not_authorized {skill, reason}` when `actor` is an agent whose assignments do
    /// not grant `skill` (`not_assigned`) or grant it only read-only while it writes
    /// (`read_only`). People and executors are not gated by assignments.
    pub(crate) async fn check_tool_policy(&self, actor: &Actor, skill: &SkillRecord) -> Result<()> {
        if actor.principal().kind != PrincipalKind::Agent {
            return Ok(());
        }
        let name = format!("{}@{}", skill.name, skill.version);
        let writes = crate::basis::writes(skill.side_effects);
        let mut read_only_grant = false;
        for assignment in self.store.assignments(actor.id()).await? {
            let granted = if assignment.skill_id == skill.id {
                true
            } else {
                let assigned = self.store.skill(&assignment.skill_id).await?.skill;
                if assigned.composition.is_none() {
                    continue;
                }
                // A composite that no longer resolves grants nothing.
                let Ok((_, resolution)) = self.resolve_record(&assigned).await else { continue };
                resolution.tools().iter().any(|tool| tool.is_skill() && tool.skill().to_string() == name)
            };
            if !granted {
                continue;
            }
            if assignment.read_only && writes {
                read_only_grant = true;
                continue;
            }
            return Ok(());
        }
        let (reason, message) = if read_only_grant {
            ("read_only", format!("{name} writes to the outside world, and this agent holds it only read-only"))
        } else {
            ("not_assigned", format!("{name} is not among the skills assigned to this agent"))
        };
        Err(EngineError::new(Class::Forbidden, Code::ToolNotAuthorized, message)
            .with("skill", name)
            .with("reason", reason))
    }
}
