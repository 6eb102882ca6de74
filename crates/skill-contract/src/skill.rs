//! The domain model of a skill version and its document form (`kind: Skill`).
//!
//! A skill is either a *leaf* — it has a contract and can be invoked — or a *composite*: no
//! contract, but `includes` (other skills, `name@version`) and declared foreign `tools`.

mod read;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value, json};

use crate::contract::{Contract, NormalizeOptions, unsafe_retry_of};
use crate::names::{SkillName, SkillRef, SkillVersion};
use crate::policy::{RiskLevel, SideEffects};
use crate::violation::ContractError;

/// `apiVersion` of every package document.
pub const API_VERSION: &str = "taimen.ai/v1";
/// `kind` of a skill document.
pub const KIND: &str = "Skill";
/// The source type of tools that are catalog skills (leaves).
pub const SKILL_SOURCE: &str = "skill";
/// The longest description a skill version may have, in characters.
pub const MAX_DESCRIPTION: usize = 16 * 1024;

/// A skill version that can be invoked: its policy and its contract.
#[derive(Debug, Clone, PartialEq)]
pub struct LeafSkill {
    side_effects: SideEffects,
    risk_level: RiskLevel,
    contract: Contract,
}

impl LeafSkill {
    pub fn side_effects(&self) -> SideEffects {
        self.side_effects
    }

    pub fn risk_level(&self) -> RiskLevel {
        self.risk_level
    }

    pub fn contract(&self) -> &Contract {
        &self.contract
    }
}

/// A tool of an external server that a composite skill declares, with its capabilities.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolDeclaration {
    name: String,
    source: String,
    server: Option<String>,
    description: String,
    writes: bool,
    has_side_effects: bool,
    risk_level: RiskLevel,
}

impl ToolDeclaration {
    /// A tool with its capabilities; a tool that writes always has side effects.
    pub(crate) fn new(
        name: String,
        source: String,
        server: Option<String>,
        description: String,
        writes: bool,
        has_side_effects: bool,
        risk_level: RiskLevel,
    ) -> Self {
        Self { name, source, server, description, writes, has_side_effects: has_side_effects || writes, risk_level }
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// Where the tool comes from, e.g. `mcp`.
    pub fn source(&self) -> &str {
        &self.source
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

    /// True for every write tool, and for tools that act on the world without writing data.
    pub fn has_side_effects(&self) -> bool {
        self.has_side_effects
    }

    pub fn risk_level(&self) -> RiskLevel {
        self.risk_level
    }

    /// The declaration as a skill document writes it.
    pub fn to_json(&self) -> Value {
        let mut map = Map::new();
        map.insert("name".into(), json!(self.name));
        map.insert("source".into(), json!(self.source));
        if let Some(server) = &self.server {
            map.insert("server".into(), json!(server));
        }
        if !self.description.is_empty() {
            map.insert("description".into(), json!(self.description));
        }
        map.insert("writes".into(), json!(self.writes));
        map.insert("hasSideEffects".into(), json!(self.has_side_effects));
        map.insert("riskLevel".into(), json!(self.risk_level.as_str()));
        Value::Object(map)
    }
}

/// A skill made of other skills and foreign tools. It cannot be invoked directly.
#[derive(Debug, Clone, PartialEq)]
pub struct CompositeSkill {
    includes: Vec<SkillRef>,
    tools: Vec<ToolDeclaration>,
}

impl CompositeSkill {
    pub fn includes(&self) -> &[SkillRef] {
        &self.includes
    }

    pub fn tools(&self) -> &[ToolDeclaration] {
        &self.tools
    }
}

/// What a skill is: invocable, or a composition.
#[derive(Debug, Clone, PartialEq)]
pub enum SkillBody {
    Leaf(Box<LeafSkill>),
    Composite(CompositeSkill),
}

/// One version of a skill.
#[derive(Debug, Clone, PartialEq)]
pub struct Skill {
    name: SkillName,
    version: SkillVersion,
    description: String,
    body: SkillBody,
}

impl Skill {
    /// A leaf skill. The contract is already normalized, so this cannot fail — except for the
    /// safe-retry rule, which needs the side effects and is checked here.
    pub fn leaf(
        name: SkillName,
        version: SkillVersion,
        description: impl Into<String>,
        side_effects: SideEffects,
        risk_level: RiskLevel,
        contract: Contract,
    ) -> Result<Self, ContractError> {
        if let Some(violation) = unsafe_retry_of(side_effects, &contract) {
            return Err(ContractError::single(violation));
        }
        Ok(Self {
            name,
            version,
            description: description.into(),
            body: SkillBody::Leaf(Box::new(LeafSkill { side_effects, risk_level, contract })),
        })
    }

    /// A composite skill; it must include a skill or declare a tool.
    pub fn composite(
        name: SkillName,
        version: SkillVersion,
        description: impl Into<String>,
        includes: Vec<SkillRef>,
        tools: Vec<ToolDeclaration>,
    ) -> Result<Self, ContractError> {
        if includes.is_empty() && tools.is_empty() {
            return Err(ContractError::single(read::empty_composite()));
        }
        Ok(Self {
            name,
            version,
            description: description.into(),
            body: SkillBody::Composite(CompositeSkill { includes, tools }),
        })
    }

    pub fn name(&self) -> &SkillName {
        &self.name
    }

    pub fn version(&self) -> &SkillVersion {
        &self.version
    }

    pub fn skill_ref(&self) -> SkillRef {
        SkillRef::new(self.name.clone(), self.version.clone())
    }

    pub fn description(&self) -> &str {
        &self.description
    }

    pub fn body(&self) -> &SkillBody {
        &self.body
    }

    /// The leaf part, when the skill can be invoked.
    pub fn as_leaf(&self) -> Option<&LeafSkill> {
        match &self.body {
            SkillBody::Leaf(leaf) => Some(leaf),
            SkillBody::Composite(_) => None,
        }
    }

    /// The document as the SDK exports it: `apiVersion`, `kind`, `key`, `spec` in this order.
    pub fn to_document(&self) -> Value {
        let mut spec = Map::new();
        spec.insert("version".into(), json!(self.version.as_str()));
        spec.insert("description".into(), json!(self.description));
        match &self.body {
            SkillBody::Leaf(leaf) => {
                spec.insert("sideEffects".into(), json!(leaf.side_effects.as_str()));
                spec.insert("riskLevel".into(), json!(leaf.risk_level.as_str()));
                spec.insert("contract".into(), leaf.contract.to_export_json());
            }
            SkillBody::Composite(composite) => {
                if !composite.includes.is_empty() {
                    let includes: Vec<String> = composite.includes.iter().map(ToString::to_string).collect();
                    spec.insert("includes".into(), json!(includes));
                }
                if !composite.tools.is_empty() {
                    spec.insert("tools".into(), composite.tools.iter().map(ToolDeclaration::to_json).collect());
                }
            }
        }
        json!({"apiVersion": API_VERSION, "kind": KIND, "key": self.name.as_str(), "spec": spec})
    }

    /// Reads a skill document, reporting every problem with its path in the document
    /// (`spec.contract.timeoutSeconds`).
    pub fn from_document(document: &Value, options: &NormalizeOptions) -> Result<Self, ContractError> {
        let mut out = Vec::new();
        let skill = read::document(document, options, &mut out);
        match (skill, ContractError::from_violations(out)) {
            (_, Some(error)) => Err(error),
            (Some(skill), None) => Ok(skill),
            (None, None) => unreachable!("invariant: a failed read reports a violation"),
        }
    }
}

impl Serialize for Skill {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.to_document().serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for Skill {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let document = Value::deserialize(deserializer)?;
        let options = NormalizeOptions { allow_placeholders: true, allow_conditions: true, stored: false };
        Self::from_document(&document, &options).map_err(serde::de::Error::custom)
    }
}
