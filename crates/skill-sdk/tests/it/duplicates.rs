//! Two different skills with one `name@version` in a binary: the registry refuses to start and
//! names both. (The binary's linked set holds every test's skills, so the two are given to the
//! registry by hand: the refusal is the same code `Registry::linked` runs.)

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use skill_sdk::registry::{Registry, RegistryError};
use skill_sdk::{SkillError, skill};

#[derive(Debug, Deserialize, JsonSchema)]
pub(crate) struct In {}

#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct Out {}

#[skill("dup.skill", version = "1", side_effects = "none", risk = "low")]
pub(crate) fn first(_inputs: In) -> Result<Out, SkillError> {
    Ok(Out {})
}

pub(crate) mod other {
    use super::*;

    #[skill("dup.skill", version = "1", side_effects = "none", risk = "low")]
    pub(crate) fn second(_inputs: In) -> Result<Out, SkillError> {
        Ok(Out {})
    }
}

#[test]
fn the_registry_names_both_entrypoints() {
    let error = Registry::from_skills([&first::SKILL, &other::second::SKILL]).expect_err("duplicate");
    assert!(matches!(error, RegistryError::Duplicate { .. }));
    let message = error.to_string();
    assert!(message.contains("two different skills are declared as dup.skill@1"), "{message}");
    assert!(message.contains("it.duplicates:first") && message.contains("it.duplicates.other:second"), "{message}");
    assert!(message.contains("tests/it/duplicates.rs:"), "the places are named: {message}");
}

#[test]
fn the_same_skill_twice_is_fine() {
    let registry = Registry::from_skills([&first::SKILL, &first::SKILL]).expect("one skill");
    assert_eq!(registry.skills().len(), 1);
}
