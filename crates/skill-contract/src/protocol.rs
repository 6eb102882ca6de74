//! The skill protocol types for discovery, composition, execution and error reporting:
//! [`SkillErrorType`], [`SkillCapabilitySummary`], [`ResolvedToolEntry`], [`SkillMetadata`],
//! [`SkillDefinition`], [`SkillResult`] and [`map_tool_error`].
//!
//! Every value is immutable after construction: fields are private, constructors validate,
//! and deserialization goes through the same constructors. Field names on the wire are the
//! protocol's (snake_case).

use std::collections::BTreeSet;
use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

use crate::error::SkillError;
use crate::names::{SkillName, SkillRef, SkillVersion};
use crate::policy::RiskLevel;
use crate::skill::{SKILL_SOURCE, Skill, SkillBody, ToolDeclaration};

/// The category of a skill error.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SkillErrorType {
    SkillNotFound,
    ResolutionFailure,
    CycleDetected,
    ToolActivationFailure,
    ToolExecutionFailure,
    ValidationError,
    PermissionDenied,
}

impl SkillErrorType {
    pub const ALL: &'static [SkillErrorType] = &[
        Self::SkillNotFound,
        Self::ResolutionFailure,
        Self::CycleDetected,
        Self::ToolActivationFailure,
        Self::ToolExecutionFailure,
        Self::ValidationError,
        Self::PermissionDenied,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::SkillNotFound => "skill_not_found",
            Self::ResolutionFailure => "resolution_failure",
            Self::CycleDetected => "cycle_detected",
            Self::ToolActivationFailure => "tool_activation_failure",
            Self::ToolExecutionFailure => "tool_execution_failure",
            Self::ValidationError => "validation_error",
            Self::PermissionDenied => "permission_denied",
        }
    }
}

impl fmt::Display for SkillErrorType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for SkillErrorType {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Self::ALL.iter().copied().find(|t| t.as_str() == s).ok_or_else(|| {
            let allowed: Vec<&str> = Self::ALL.iter().map(|t| t.as_str()).collect();
            format!("unknown error_type `{s}`, use one of: {}", allowed.join(", "))
        })
    }
}

impl Serialize for SkillErrorType {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for SkillErrorType {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        String::deserialize(deserializer)?.parse().map_err(serde::de::Error::custom)
    }
}

/// A protocol value that broke one of its invariants.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ProtocolError(String);

impl ProtocolError {
    /// The same failure as a `validation_error`.
    pub fn to_skill_error(&self, skill_name: &str) -> SkillError {
        SkillError::of_type(SkillErrorType::ValidationError, self.0.clone()).for_skill(skill_name)
    }
}

/// One tool of a skill's resolved tool set: a catalog skill (source type `skill`) or a foreign
/// tool declared by a composite.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "ToolWire", into = "ToolWire")]
pub struct ResolvedToolEntry {
    name: String,
    skill: SkillRef,
    source_type: String,
    server: Option<String>,
    description: String,
    writes: bool,
    has_side_effects: bool,
    risk_level: RiskLevel,
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
        Ok(Self {
            name: w.name,
            skill: w.skill,
            source_type: w.source_type,
            server: w.server,
            description: w.description,
            writes: w.writes,
            has_side_effects: w.has_side_effects || w.writes,
            risk_level: w.risk_level,
        })
    }
}

impl From<ResolvedToolEntry> for ToolWire {
    fn from(e: ResolvedToolEntry) -> Self {
        Self {
            name: e.name,
            skill: e.skill,
            source_type: e.source_type,
            server: e.server,
            description: e.description,
            writes: e.writes,
            has_side_effects: e.has_side_effects,
            risk_level: e.risk_level,
        }
    }
}

impl ResolvedToolEntry {
    /// The tool a leaf skill resolves to: itself. `external_write` writes and has side effects;
    /// `external_read` and `none` are read-only.
    pub fn for_leaf(skill: &Skill) -> Option<Self> {
        let leaf = skill.as_leaf()?;
        let writes = leaf.side_effects().writes();
        Some(Self {
            name: skill.name().as_str().to_owned(),
            skill: skill.skill_ref(),
            source_type: SKILL_SOURCE.to_owned(),
            server: None,
            description: skill.description().to_owned(),
            writes,
            has_side_effects: writes,
            risk_level: leaf.risk_level(),
        })
    }

    /// A foreign tool declared by the composite `declared_by`.
    pub fn for_declaration(declared_by: &SkillRef, tool: &ToolDeclaration) -> Self {
        Self {
            name: tool.name().to_owned(),
            skill: declared_by.clone(),
            source_type: tool.source().to_owned(),
            server: tool.server().map(str::to_owned),
            description: tool.description().to_owned(),
            writes: tool.writes(),
            has_side_effects: tool.has_side_effects() || tool.writes(),
            risk_level: tool.risk_level(),
        }
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// The skill that provides the tool: the leaf itself, or the composite that declares it.
    pub fn skill(&self) -> &SkillRef {
        &self.skill
    }

    /// `skill` for catalog skills, else the declared source (e.g. `mcp`).
    pub fn source_type(&self) -> &str {
        &self.source_type
    }

    pub fn server(&self) -> Option<&str> {
        self.server.as_deref()
    }

    pub fn description(&self) -> &str {
        &self.description
    }

    pub fn writes(&self) -> bool {
        self.writes
    }

    pub fn has_side_effects(&self) -> bool {
        self.has_side_effects
    }

    pub fn risk_level(&self) -> RiskLevel {
        self.risk_level
    }

    /// Whether two entries are the same tool reached twice: the same catalog skill, or the same
    /// foreign tool (name, source, server) with the same declared capabilities.
    pub fn same_tool(&self, other: &Self) -> bool {
        if self.source_type == SKILL_SOURCE {
            return self == other;
        }
        self.name == other.name
            && self.source_type == other.source_type
            && self.server == other.server
            && self.writes == other.writes
            && self.has_side_effects == other.has_side_effects
            && self.risk_level == other.risk_level
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
        let write_tools = tools.iter().filter(|t| t.writes).count() as u32;
        Self {
            read_tools: tools.len() as u32 - write_tools,
            write_tools,
            has_side_effects: tools.iter().any(|t| t.has_side_effects),
            max_risk_level: tools.iter().map(|t| t.risk_level).max(),
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
                w.name, w.writes, w.read_only, summary.write_tools, summary.has_side_effects
            )));
        }
        if w.tool_count != summary.read_tools + summary.write_tools {
            return Err(ProtocolError(format!(
                "{}: tool_count {} differs from the {} read and {} write tools of the capability summary",
                w.name, w.tool_count, summary.read_tools, summary.write_tools
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
        let source_types: BTreeSet<&str> = resolved.iter().map(|t| t.source_type.as_str()).collect();
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
            && let Some(tool) = resolved_tools.iter().find(|t| t.writes)
        {
            return Err(ProtocolError(format!(
                "{} is marked read-only but resolves to `{}` (from {}), which writes",
                skill.skill_ref(),
                tool.name,
                tool.skill
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
        let Some(tool) = self.resolved_tools.iter().find(|t| t.name == tool_name) else {
            return Err(denied(format!("`{tool_name}` is not a tool of {}", self.skill.skill_ref())));
        };
        if self.metadata.read_only && tool.writes {
            return Err(denied(format!("{} is read-only: `{tool_name}` writes", self.skill.skill_ref())));
        }
        Ok(tool)
    }
}

/// The outcome of one skill-tool invocation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "ResultWire", into = "ResultWire")]
pub struct SkillResult {
    skill_name: String,
    tool_name: String,
    success: bool,
    output_data: Value,
    error: Option<SkillError>,
    duration_ms: f64,
    resource_changes: Vec<Map<String, Value>>,
}

#[derive(Serialize, Deserialize)]
struct ResultWire {
    skill_name: String,
    tool_name: String,
    success: bool,
    #[serde(default)]
    output_data: Value,
    #[serde(default)]
    error: Option<SkillError>,
    #[serde(default)]
    duration_ms: f64,
    #[serde(default)]
    resource_changes: Vec<Map<String, Value>>,
}

impl TryFrom<ResultWire> for SkillResult {
    type Error = ProtocolError;
    fn try_from(w: ResultWire) -> Result<Self, ProtocolError> {
        if w.success == w.error.is_some() {
            return Err(ProtocolError(if w.success {
                "a successful result carries no error".into()
            } else {
                "a failed result carries its error".into()
            }));
        }
        if !(w.duration_ms.is_finite() && w.duration_ms >= 0.0) {
            return Err(ProtocolError(format!("duration_ms must be a finite number ≥ 0, got {}", w.duration_ms)));
        }
        Ok(Self {
            skill_name: w.skill_name,
            tool_name: w.tool_name,
            success: w.success,
            output_data: w.output_data,
            error: w.error,
            duration_ms: w.duration_ms,
            resource_changes: w.resource_changes,
        })
    }
}

impl From<SkillResult> for ResultWire {
    fn from(r: SkillResult) -> Self {
        Self {
            skill_name: r.skill_name,
            tool_name: r.tool_name,
            success: r.success,
            output_data: r.output_data,
            error: r.error,
            duration_ms: r.duration_ms,
            resource_changes: r.resource_changes,
        }
    }
}

fn clean_duration(duration_ms: f64) -> f64 {
    if duration_ms.is_finite() && duration_ms > 0.0 { duration_ms } else { 0.0 }
}

impl SkillResult {
    pub fn succeeded(skill_name: &str, tool_name: &str, output_data: Value, duration_ms: f64) -> Self {
        Self {
            skill_name: skill_name.to_owned(),
            tool_name: tool_name.to_owned(),
            success: true,
            output_data,
            error: None,
            duration_ms: clean_duration(duration_ms),
            resource_changes: Vec::new(),
        }
    }

    pub fn failed(skill_name: &str, tool_name: &str, error: SkillError, duration_ms: f64) -> Self {
        Self {
            skill_name: skill_name.to_owned(),
            tool_name: tool_name.to_owned(),
            success: false,
            output_data: Value::Null,
            error: Some(error),
            duration_ms: clean_duration(duration_ms),
            resource_changes: Vec::new(),
        }
    }

    /// The same result with descriptors of what the call changed.
    pub fn with_resource_changes(self, resource_changes: Vec<Map<String, Value>>) -> Self {
        Self { resource_changes, ..self }
    }

    pub fn skill_name(&self) -> &str {
        &self.skill_name
    }

    pub fn tool_name(&self) -> &str {
        &self.tool_name
    }

    pub fn success(&self) -> bool {
        self.success
    }

    pub fn output_data(&self) -> &Value {
        &self.output_data
    }

    pub fn error(&self) -> Option<&SkillError> {
        self.error.as_ref()
    }

    pub fn duration_ms(&self) -> f64 {
        self.duration_ms
    }

    pub fn resource_changes(&self) -> &[Map<String, Value>] {
        &self.resource_changes
    }
}

/// The kind of a failure, for [`map_tool_error`]: Rust has no exception classes, so the caller
/// says which family the failure belongs to (see [`ErrorClass::of`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorClass {
    /// A bad value or a lookup that failed (the reference's `ValueError`).
    Value,
    /// The operation was refused for lack of rights.
    Permission,
    /// Data did not pass validation.
    Validation,
    /// Anything else.
    Other,
}

impl ErrorClass {
    /// Classifies errors whose family is known: I/O permission errors, JSON errors, contract
    /// and reference errors, resolution errors. Everything else is [`ErrorClass::Other`].
    pub fn of(error: &(dyn std::error::Error + 'static)) -> Self {
        if let Some(io) = error.downcast_ref::<std::io::Error>() {
            return if io.kind() == std::io::ErrorKind::PermissionDenied { Self::Permission } else { Self::Other };
        }
        if error.is::<serde_json::Error>()
            || error.is::<crate::ContractError>()
            || error.is::<crate::schema::SchemaDocumentError>()
            || error.is::<ProtocolError>()
        {
            return Self::Validation;
        }
        if error.is::<crate::RefError>() || error.is::<crate::composite::ResolveError>() {
            return Self::Value;
        }
        Self::Other
    }
}

/// Normalises any failure of a tool into a [`SkillError`], by the protocol's rules:
///
/// | class | message contains | error type |
/// |---|---|---|
/// | Value | `cycle` | `cycle_detected` |
/// | Value | `not found` | `skill_not_found` |
/// | Value | other | `resolution_failure` |
/// | Permission | — | `permission_denied` |
/// | Validation | — | `validation_error` |
/// | any other | `activation` | `tool_activation_failure` |
/// | any other | other | `tool_execution_failure` |
///
/// ```
/// use skill_contract::{ErrorClass, SkillErrorType, map_tool_error};
/// let error = map_tool_error(ErrorClass::Value, "include cycle: a -> a", "local/my-skill", Some("local/my-tool"));
/// assert_eq!(error.error_type(), SkillErrorType::CycleDetected);
/// assert_eq!(error.skill_name(), "local/my-skill");
/// assert_eq!(error.tool_name(), Some("local/my-tool"));
/// ```
pub fn map_tool_error(class: ErrorClass, message: &str, skill_name: &str, tool_name: Option<&str>) -> SkillError {
    let lower = message.to_lowercase();
    let error_type = match class {
        ErrorClass::Value if lower.contains("cycle") => SkillErrorType::CycleDetected,
        ErrorClass::Value if lower.contains("not found") => SkillErrorType::SkillNotFound,
        ErrorClass::Value => SkillErrorType::ResolutionFailure,
        ErrorClass::Permission => SkillErrorType::PermissionDenied,
        ErrorClass::Validation => SkillErrorType::ValidationError,
        ErrorClass::Other if lower.contains("activation") => SkillErrorType::ToolActivationFailure,
        ErrorClass::Other => SkillErrorType::ToolExecutionFailure,
    };
    let error = SkillError::of_type(error_type, message).for_skill(skill_name);
    match tool_name {
        Some(tool) => error.for_tool(tool),
        None => error,
    }
}
