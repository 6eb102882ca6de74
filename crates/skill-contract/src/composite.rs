//! Resolution of a skill into its tool set: a leaf resolves to itself, a composite to the
//! flattened, de-duplicated union of what it includes and declares.
//!
//! Includes are followed depth-first in the order written, so the tool order is stable. A
//! cycle, a missing include, or two different tools under one name stop resolution with an error
//! that names the skills involved.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::hash::BuildHasher;

use crate::names::SkillRef;
use crate::protocol::ResolvedToolEntry;
pub use crate::resolve_error::ResolveError;
use crate::skill::{Skill, SkillBody};

/// Where the resolver finds the skills a composite includes.
pub trait SkillLookup {
    fn lookup(&self, skill: &SkillRef) -> Option<&Skill>;
}

impl<S: BuildHasher> SkillLookup for HashMap<SkillRef, Skill, S> {
    fn lookup(&self, skill: &SkillRef) -> Option<&Skill> {
        self.get(skill)
    }
}

impl SkillLookup for BTreeMap<SkillRef, Skill> {
    fn lookup(&self, skill: &SkillRef) -> Option<&Skill> {
        self.get(skill)
    }
}

impl SkillLookup for [Skill] {
    fn lookup(&self, skill: &SkillRef) -> Option<&Skill> {
        self.iter().find(|s| s.name() == skill.name() && s.version() == skill.version())
    }
}

impl SkillLookup for Vec<Skill> {
    fn lookup(&self, skill: &SkillRef) -> Option<&Skill> {
        self.as_slice().lookup(skill)
    }
}

/// A resolved tool set and the skills visited to build it (the root first, then depth-first).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resolution {
    tools: Vec<ResolvedToolEntry>,
    skills: Vec<SkillRef>,
}

impl Resolution {
    pub fn tools(&self) -> &[ResolvedToolEntry] {
        &self.tools
    }

    pub fn into_tools(self) -> Vec<ResolvedToolEntry> {
        self.tools
    }

    pub fn skills(&self) -> &[SkillRef] {
        &self.skills
    }
}

/// Resolves the skill `root`, found through `lookup`.
pub fn resolve(root: &SkillRef, lookup: &(impl SkillLookup + ?Sized)) -> Result<Resolution, ResolveError> {
    let skill = lookup.lookup(root).ok_or_else(|| ResolveError::NotFound { skill: root.clone() })?;
    resolve_skill(skill, lookup)
}

/// Resolves a skill in hand (e.g. one about to be published); its includes come from `lookup`.
pub fn resolve_skill(root: &Skill, lookup: &(impl SkillLookup + ?Sized)) -> Result<Resolution, ResolveError> {
    let mut walk =
        Walk { stack: Vec::new(), done: HashSet::new(), out: Resolution { tools: Vec::new(), skills: Vec::new() } };
    walk.visit(root, lookup)?;
    Ok(walk.out)
}

struct Walk {
    stack: Vec<SkillRef>,
    done: HashSet<SkillRef>,
    out: Resolution,
}

impl Walk {
    fn visit(&mut self, skill: &Skill, lookup: &(impl SkillLookup + ?Sized)) -> Result<(), ResolveError> {
        let here = skill.skill_ref();
        if self.done.contains(&here) {
            return Ok(());
        }
        self.stack.push(here.clone());
        self.out.skills.push(here.clone());
        match skill.body() {
            SkillBody::Leaf(_) => {
                let entry = ResolvedToolEntry::for_leaf(skill).expect("invariant: a leaf resolves to itself");
                self.add(entry)?;
            }
            SkillBody::Composite(composite) => {
                for include in composite.includes() {
                    if let Some(start) = self.stack.iter().position(|s| s == include) {
                        let mut cycle = self.stack[start..].to_vec();
                        cycle.push(include.clone());
                        return Err(ResolveError::Cycle { cycle });
                    }
                    let child = lookup.lookup(include).ok_or_else(|| ResolveError::MissingInclude {
                        include: include.clone(),
                        included_by: here.clone(),
                    })?;
                    self.visit(child, lookup)?;
                }
                for tool in composite.tools() {
                    self.add(ResolvedToolEntry::for_declaration(&here, tool))?;
                }
            }
        }
        self.stack.pop();
        self.done.insert(here);
        Ok(())
    }

    fn add(&mut self, entry: ResolvedToolEntry) -> Result<(), ResolveError> {
        match self.out.tools.iter().find(|t| t.name() == entry.name()) {
            None => {
                self.out.tools.push(entry);
                Ok(())
            }
            Some(existing) if existing.same_tool(&entry) => Ok(()),
            Some(existing) => Err(ResolveError::ToolConflict {
                name: entry.name().to_owned(),
                first: existing.skill().clone(),
                second: entry.skill().clone(),
            }),
        }
    }
}
