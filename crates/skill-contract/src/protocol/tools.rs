//! The resolved tool set of a skill: one entry per tool, and the capabilities aggregated over
//! the set.

use serde::{Deserialize, Serialize};

use super::ProtocolError;
use crate::names::SkillRef;
use crate::policy::RiskLevel;
use crate::skill::{SKILL_SOURCE, Skill, ToolDeclaration};

/// One tool of a skill's resolved tool set: a catalog skill (source type `skill`) or a foreign
/// tool declared by a composite.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "ToolWire", into = "ToolWire")]
pub struct ResolvedToolEntry {
    skill: SkillRef,
    tool: ToolDeclaration,
}

#[derive(Serialize, Deserialize)]
struct ToolWire {
    name: String,
    skill: SkillRef,
    source_type: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    server: Option<String>,
    #[serde(default)]
    description: String,
    writes: bool,
    #[serde(default)]
    has_side_effects: bool,
    #[serde(default)]
    risk_level: RiskLevel,
}

impl TryFrom<ToolWire> for ResolvedToolEntry {
    type Error = ProtocolError;
    fn try_from(w: ToolWire) -> Result<Self, ProtocolError> {
        if w.name.is_empty() || w.source_type.is_empty() {
            return Err(ProtocolError("a resolved tool needs a name and a source_type".into()));
        }
        let tool = ToolDeclaration::new(
            w.name,
            w.source_type,
            w.server,
            w.description,
            w.writes,
            w.has_side_effects,
            w.risk_level,
        );
        Ok(Self { skill: w.skill, tool })
    }
}

impl From<ResolvedToolEntry> for ToolWire {
    fn from(e: ResolvedToolEntry) -> Self {
        let t = e.tool;
        Self {
            name: t.name().to_owned(),
            skill: e.skill,
            source_type: t.source().to_owned(),
            server: t.server().map(str::to_owned),
            description: t.description().to_owned(),
            writes: t.writes(),
            has_side_effects: t.has_side_effects(),
            risk_level: t.risk_level(),
        }
    }
}

impl ResolvedToolEntry {
    /// The tool a leaf skill resolves to: itself. `external_write` writes and has side effects;
    /// `external_read` and `none` are read-only.
    pub fn for_leaf(skill: &Skill) -> Option<Self> {
        let leaf = skill.as_leaf()?;
        let writes = leaf.side_effects().writes();
        let tool = ToolDeclaration::new(
            skill.name().as_str().to_owned(),
            SKILL_SOURCE.to_owned(),
            None,
            skill.description().to_owned(),
            writes,
            writes,
            leaf.risk_level(),
        );
        Some(Self { skill: skill.skill_ref(), tool })
    }

    /// A foreign tool declared by the composite `declared_by`.
    pub fn for_declaration(declared_by: &SkillRef, tool: &ToolDeclaration) -> Self {
        Self { skill: declared_by.clone(), tool: tool.clone() }
    }

    /// The skill that provides the tool: the leaf itself, or the composite that declares it.
    pub fn skill(&self) -> &SkillRef {
        &self.skill
    }

    /// The tool: its name, source (`skill` for catalog skills, e.g. `mcp` for foreign tools),
    /// server and capabilities.
    pub fn tool(&self) -> &ToolDeclaration {
        &self.tool
    }

    pub fn name(&self) -> &str {
        self.tool.name()
    }

    pub fn source_type(&self) -> &str {
        self.tool.source()
    }

    /// Whether the tool is a catalog skill (source `skill`), not a foreign tool.
    pub fn is_skill(&self) -> bool {
        self.tool.source() == SKILL_SOURCE
    }

    pub fn writes(&self) -> bool {
        self.tool.writes()
    }

    /// Whether two entries are the same tool reached twice: the same catalog skill, or the same
    /// foreign tool (name, source, server) with the same declared capabilities.
    pub fn same_tool(&self, other: &Self) -> bool {
        if self.is_skill() {
            return self == other;
        }
        let (a, b) = (&self.tool, &other.tool);
        a.name() == b.name()
            && a.source() == b.source()
            && a.server() == b.server()
            && a.writes() == b.writes()
            && a.has_side_effects() == b.has_side_effects()
            && a.risk_level() == b.risk_level()
    }
}

/// Capabilities aggregated over a resolved tool set.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SkillCapabilitySummary {
    read_tools: u32,
    write_tools: u32,
    has_side_effects: bool,
    max_risk_level: Option<RiskLevel>,
}

impl SkillCapabilitySummary {
    pub fn from_tools(tools: &[ResolvedToolEntry]) -> Self {
        let write_tools = tools.iter().filter(|t| t.writes()).count() as u32;
        Self {
            read_tools: tools.len() as u32 - write_tools,
            write_tools,
            has_side_effects: tools.iter().any(|t| t.tool().has_side_effects()),
            max_risk_level: tools.iter().map(|t| t.tool().risk_level()).max(),
        }
    }

    pub fn read_tools(&self) -> u32 {
        self.read_tools
    }

    pub fn write_tools(&self) -> u32 {
        self.write_tools
    }

    pub fn has_side_effects(&self) -> bool {
        self.has_side_effects
    }

    pub fn max_risk_level(&self) -> Option<RiskLevel> {
        self.max_risk_level
    }

    /// `writes` = `write_tools > 0` or side effects.
    pub fn writes(&self) -> bool {
        self.write_tools > 0 || self.has_side_effects
    }

    /// `read_only` = no write tool and no side effects.
    pub fn read_only(&self) -> bool {
        self.write_tools == 0 && !self.has_side_effects
    }
}
