//! Every skill linked into this binary, collected from the `#[skill]` registrations.

use std::collections::BTreeMap;

use crate::skill::{PrepareError, Registration, Skill};

/// Why the skills of this binary cannot be served.
#[derive(Debug, thiserror::Error)]
pub enum RegistryError {
    #[error(
        "two different skills are declared as {reference}: {first} ({first_at}) and {second} ({second_at}); \
         give one of them another name or version"
    )]
    Duplicate { reference: String, first: String, first_at: String, second: String, second_at: String },
    #[error("{0}")]
    Invalid(#[from] PrepareError),
}

/// The skills of this binary, sorted by `name@version` (code-point order).
#[derive(Debug, Clone)]
pub struct Registry {
    skills: Vec<&'static Skill>,
}

impl Registry {
    /// Every skill registered with `#[skill]` in the crates linked into this binary.
    pub fn linked() -> Result<Self, RegistryError> {
        Self::from_skills(inventory::iter::<Registration>.into_iter().map(|r| r.0))
    }

    /// A registry of the given skills: duplicates refused, every contract built.
    pub fn from_skills(skills: impl IntoIterator<Item = &'static Skill>) -> Result<Self, RegistryError> {
        let mut by_ref: BTreeMap<String, &'static Skill> = BTreeMap::new();
        for skill in skills {
            let reference = skill.reference();
            match by_ref.get(&reference) {
                Some(existing) if std::ptr::eq(*existing, skill) => {}
                Some(existing) => {
                    return Err(RegistryError::Duplicate {
                        reference,
                        first: existing.entrypoint(),
                        first_at: existing.location(),
                        second: skill.entrypoint(),
                        second_at: skill.location(),
                    });
                }
                None => {
                    skill.check()?;
                    by_ref.insert(reference, skill);
                }
            }
        }
        Ok(Self { skills: by_ref.into_values().collect() })
    }

    pub fn skills(&self) -> &[&'static Skill] {
        &self.skills
    }

    pub fn is_empty(&self) -> bool {
        self.skills.is_empty()
    }

    /// The skill with this `name@version`.
    pub fn find(&self, reference: &str) -> Option<&'static Skill> {
        self.skills.iter().copied().find(|s| s.reference() == reference)
    }
}
