//! What a composite skill stands on: every version it includes, directly or not.

use skill_contract::codes::Code;
use std::collections::HashMap;

use skill_contract::{Skill, SkillBody, SkillRef};
use skill_store::ErrorKind;

use super::to_skill;
use crate::Engine;
use crate::error::{Class, EngineError, Result};

impl Engine {
    /// Every skill `skill` includes, directly or not, as far as `planned` (versions published
    /// together with it) or the catalog has them.
    pub(crate) async fn closure(
        &self,
        skill: &Skill,
        planned: &HashMap<SkillRef, Skill>,
    ) -> Result<HashMap<SkillRef, Skill>> {
        let mut known: HashMap<SkillRef, Skill> = HashMap::new();
        let mut pending: Vec<SkillRef> = includes(skill);
        while let Some(reference) = pending.pop() {
            if known.contains_key(&reference) {
                continue;
            }
            if let Some(included) = planned.get(&reference) {
                pending.extend(includes(included));
                known.insert(reference, included.clone());
                continue;
            }
            let record = match self.store.skill_version(reference.name().as_str(), reference.version().as_str()).await {
                Ok(entry) => entry.skill,
                Err(error) if error.kind() == ErrorKind::NotFound => continue,
                Err(error) => return Err(error.into()),
            };
            let Some(Ok(included)) = to_skill(&record) else {
                return Err(EngineError::new(
                    Class::Invalid,
                    Code::ResolutionFailure,
                    format!("{reference} is a catalog row without a contract and cannot be included"),
                )
                .with("include", reference.to_string()));
            };
            pending.extend(includes(&included));
            known.insert(reference, included);
        }
        Ok(known)
    }
}

fn includes(skill: &Skill) -> Vec<SkillRef> {
    match skill.body() {
        SkillBody::Composite(composite) => composite.includes().to_vec(),
        SkillBody::Leaf(_) => Vec::new(),
    }
}
