//! Discovery: the metadata of a skill and its full definition (skill, resolved tools,
//! metadata, schemas), with the read-only gating of calls.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{ProtocolError, ResolvedToolEntry, SkillCapabilitySummary, SkillErrorType};
use crate::error::SkillError;
use crate::names::{SkillName, SkillVersion};
use crate::skill::{Skill, SkillBody};

/// Lightweight metadata for discovery and catalogue listings.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "MetadataWire", into = "MetadataWire")]
pub struct SkillMetadata {
    name: SkillName,
    description: String,
    version: SkillVersion,
    tool_count: u32,
    capability_summary: SkillCapabilitySummary,
    source_types: Vec<String>,
    writes: bool,
    read_only: bool,
}

fn default_version() -> SkillVersion {
    SkillVersion::new("0.0.0").expect("invariant: 0.0.0 is a valid version")
}

fn default_true() -> bool {
    true
}

#[derive(Serialize, Deserialize)]
struct MetadataWire {
    name: SkillName,
    description: String,
    #[serde(default = "default_version")]
    version: SkillVersion,
    #[serde(default)]
    tool_count: u32,
    #[serde(default)]
    capability_summary: SkillCapabilitySummary,
    #[serde(default)]
    source_types: Vec<String>,
    #[serde(default)]
    writes: bool,
    #[serde(default = "default_true")]
    read_only: bool,
}

impl TryFrom<MetadataWire> for SkillMetadata {
    type Error = ProtocolError;
    fn try_from(w: MetadataWire) -> Result<Self, ProtocolError> {
        let summary = &w.capability_summary;
        if w.writes != summary.writes() || w.read_only != summary.read_only() {
            return Err(ProtocolError(format!(
                "{}: writes={} and read_only={} disagree with the capability summary ({} write tools, side effects: {})",
                w.name,
                w.writes,
                w.read_only,
                summary.write_tools(),
                summary.has_side_effects()
            )));
        }
        if w.tool_count != summary.read_tools() + summary.write_tools() {
            return Err(ProtocolError(format!(
                "{}: tool_count {} differs from the {} read and {} write tools of the capability summary",
                w.name,
                w.tool_count,
                summary.read_tools(),
                summary.write_tools()
            )));
        }
        Ok(Self {
            name: w.name,
            description: w.description,
            version: w.version,
            tool_count: w.tool_count,
            capability_summary: w.capability_summary,
            source_types: w.source_types,
            writes: w.writes,
            read_only: w.read_only,
        })
    }
}

impl From<SkillMetadata> for MetadataWire {
    fn from(m: SkillMetadata) -> Self {
        Self {
            name: m.name,
            description: m.description,
            version: m.version,
            tool_count: m.tool_count,
            capability_summary: m.capability_summary,
            source_types: m.source_types,
            writes: m.writes,
            read_only: m.read_only,
        }
    }
}

impl SkillMetadata {
    /// Metadata of `skill` over its resolved tools: the capability summary, the distinct source
    /// types (sorted), and `writes` / `read_only` derived from the summary.
    pub fn from_skill(skill: &Skill, resolved: &[ResolvedToolEntry]) -> Self {
        let capability_summary = SkillCapabilitySummary::from_tools(resolved);
        let source_types: BTreeSet<&str> = resolved.iter().map(ResolvedToolEntry::source_type).collect();
        Self {
            name: skill.name().clone(),
            description: skill.description().to_owned(),
            version: skill.version().clone(),
            tool_count: resolved.len() as u32,
            writes: capability_summary.writes(),
            read_only: capability_summary.read_only(),
            capability_summary,
            source_types: source_types.into_iter().map(str::to_owned).collect(),
        }
    }

    pub fn name(&self) -> &SkillName {
        &self.name
    }

    pub fn description(&self) -> &str {
        &self.description
    }

    pub fn version(&self) -> &SkillVersion {
        &self.version
    }

    pub fn tool_count(&self) -> u32 {
        self.tool_count
    }

    pub fn capability_summary(&self) -> &SkillCapabilitySummary {
        &self.capability_summary
    }

    pub fn source_types(&self) -> &[String] {
        &self.source_types
    }

    pub fn writes(&self) -> bool {
        self.writes
    }

    pub fn read_only(&self) -> bool {
        self.read_only
    }
}

/// A skill with its resolved tools, metadata and schemas.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "DefinitionWire", into = "DefinitionWire")]
pub struct SkillDefinition {
    skill: Skill,
    resolved_tools: Vec<ResolvedToolEntry>,
    metadata: SkillMetadata,
    input_schema: Option<Value>,
    output_schema: Option<Value>,
}

#[derive(Serialize, Deserialize)]
struct DefinitionWire {
    skill: Skill,
    #[serde(default)]
    resolved_tools: Vec<ResolvedToolEntry>,
    metadata: SkillMetadata,
    #[serde(default)]
    input_schema: Option<Value>,
    #[serde(default)]
    output_schema: Option<Value>,
}

impl TryFrom<DefinitionWire> for SkillDefinition {
    type Error = ProtocolError;
    fn try_from(w: DefinitionWire) -> Result<Self, ProtocolError> {
        Self::new(w.skill, w.resolved_tools, w.metadata, w.input_schema, w.output_schema)
    }
}

impl From<SkillDefinition> for DefinitionWire {
    fn from(d: SkillDefinition) -> Self {
        Self {
            skill: d.skill,
            resolved_tools: d.resolved_tools,
            metadata: d.metadata,
            input_schema: d.input_schema,
            output_schema: d.output_schema,
        }
    }
}

fn check_schema_has_type(schema: Option<&Value>, field: &str) -> Result<(), ProtocolError> {
    match schema {
        None => Ok(()),
        Some(Value::Object(map)) if map.contains_key("type") => Ok(()),
        Some(_) => Err(ProtocolError(format!("{field} must be a JSON Schema object with a \"type\" key"))),
    }
}

impl SkillDefinition {
    /// Validates: both schemas (when given) carry `"type"`, the metadata names this skill, and a
    /// read-only skill resolves to no tool that writes.
    pub fn new(
        skill: Skill,
        resolved_tools: Vec<ResolvedToolEntry>,
        metadata: SkillMetadata,
        input_schema: Option<Value>,
        output_schema: Option<Value>,
    ) -> Result<Self, ProtocolError> {
        check_schema_has_type(input_schema.as_ref(), "input_schema")?;
        check_schema_has_type(output_schema.as_ref(), "output_schema")?;
        if metadata.name != *skill.name() || metadata.version != *skill.version() {
            return Err(ProtocolError(format!(
                "metadata describes {}@{}, not {}",
                metadata.name,
                metadata.version,
                skill.skill_ref()
            )));
        }
        if metadata.read_only
            && let Some(tool) = resolved_tools.iter().find(|t| t.writes())
        {
            return Err(ProtocolError(format!(
                "{} is marked read-only but resolves to `{}` (from {}), which writes",
                skill.skill_ref(),
                tool.name(),
                tool.skill()
            )));
        }
        Ok(Self { skill, resolved_tools, metadata, input_schema, output_schema })
    }

    /// The definition of a skill over its resolved tools: metadata derived with
    /// [`SkillMetadata::from_skill`], schemas from the contract of a leaf.
    pub fn build(skill: Skill, resolved_tools: Vec<ResolvedToolEntry>) -> Result<Self, ProtocolError> {
        let metadata = SkillMetadata::from_skill(&skill, &resolved_tools);
        let (input_schema, output_schema) = match skill.body() {
            SkillBody::Leaf(leaf) => (Some(leaf.contract().inputs().clone()), Some(leaf.contract().outputs().clone())),
            SkillBody::Composite(_) => (None, None),
        };
        Self::new(skill, resolved_tools, metadata, input_schema, output_schema)
    }

    pub fn skill(&self) -> &Skill {
        &self.skill
    }

    pub fn resolved_tools(&self) -> &[ResolvedToolEntry] {
        &self.resolved_tools
    }

    pub fn metadata(&self) -> &SkillMetadata {
        &self.metadata
    }

    pub fn input_schema(&self) -> Option<&Value> {
        self.input_schema.as_ref()
    }

    pub fn output_schema(&self) -> Option<&Value> {
        self.output_schema.as_ref()
    }

    /// Read-only gating: the tool a call through this skill may reach. A tool outside the set,
    /// or a tool that writes when the skill is read-only, is `permission_denied`.
    pub fn gate(&self, tool_name: &str) -> Result<&ResolvedToolEntry, SkillError> {
        let skill_name = self.skill.name().as_str();
        let denied = |message: String| {
            SkillError::of_type(SkillErrorType::PermissionDenied, message).for_skill(skill_name).for_tool(tool_name)
        };
        let Some(tool) = self.resolved_tools.iter().find(|t| t.name() == tool_name) else {
            return Err(denied(format!("`{tool_name}` is not a tool of {}", self.skill.skill_ref())));
        };
        if self.metadata.read_only && tool.writes() {
            return Err(denied(format!("{} is read-only: `{tool_name}` writes", self.skill.skill_ref())));
        }
        Ok(tool)
    }
}
