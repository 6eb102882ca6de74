//! The domain model of a skill version and its document form (`kind: Skill`).
//!
//! A skill is either a *leaf* — it has a contract and can be invoked — or a *composite*: no
//! contract, but `includes` (other skills, `name@version`) and declared foreign `tools`.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value, json};

use crate::contract::{Contract, NormalizeOptions, is_tool_name, normalize, unsafe_retry};
use crate::fields::{self, present};
use crate::names::{SkillName, SkillRef, SkillVersion};
use crate::policy::{RiskLevel, SideEffects};
use crate::violation::{ContractError, Problem, Violation, ViolationCode};

/// `apiVersion` of every package document.
pub const API_VERSION: &str = "taimen.ai/v1";
/// `kind` of a skill document.
pub const KIND: &str = "Skill";
/// The source type of tools that are catalog skills (leaves).
pub const SKILL_SOURCE: &str = "skill";

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

    fn to_json(&self) -> Value {
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
        if let Some(violation) = unsafe_retry(side_effects, &contract) {
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
            return Err(ContractError::single(empty_composite()));
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
        let skill = read_document(document, options, &mut out);
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
        let options = NormalizeOptions { allow_placeholders: true, allow_conditions: true };
        Self::from_document(&document, &options).map_err(serde::de::Error::custom)
    }
}

const DOCUMENT_KEYS: &[&str] = &["apiVersion", "kind", "key", "spec"];
const LEAF_KEYS: &[&str] = &["version", "description", "sideEffects", "riskLevel", "contract", "protocol"];
const COMPOSITE_KEYS: &[&str] = &["version", "description", "includes", "tools"];
const TOOL_KEYS: &[&str] = &["name", "source", "server", "description", "writes", "hasSideEffects", "riskLevel"];

fn document_violation(field: impl Into<String>, problem: Problem) -> Violation {
    Violation::new(field, problem).coded(ViolationCode::InvalidSkillDocument)
}

fn empty_composite() -> Violation {
    document_violation(
        "spec",
        Problem::Missing { expected: "a contract (a leaf skill), or includes or tools (a composite skill)" },
    )
}

fn conflict(field: &str, reason: &str) -> Violation {
    document_violation(field, Problem::Conflict { reason: reason.to_owned() })
}

fn read_document(document: &Value, options: &NormalizeOptions, out: &mut Vec<Violation>) -> Option<Skill> {
    let Value::Object(map) = document else {
        out.push(
            fields::wrong_type("document", "a mapping with apiVersion, kind, key and spec", document)
                .coded(ViolationCode::InvalidSkillDocument),
        );
        return None;
    };
    if let Some(place) = fields::find_nul(document, "") {
        out.push(document_violation(place, Problem::NulCharacter));
        return None;
    }
    let unknown_before = out.len();
    fields::check_keys(map, DOCUMENT_KEYS, "document", out);
    for violation in &mut out[unknown_before..] {
        violation.code = ViolationCode::InvalidSkillDocument;
    }
    for (key, expected) in [("apiVersion", API_VERSION), ("kind", KIND)] {
        if map.get(key).and_then(Value::as_str) != Some(expected) {
            let found =
                map.get(key).map_or_else(String::new, |v| v.as_str().map_or_else(|| v.to_string(), str::to_owned));
            let allowed: &'static [&'static str] = if key == "kind" { &[KIND] } else { &[API_VERSION] };
            out.push(document_violation(key, Problem::NotAllowed { found, allowed }));
        }
    }
    let name = match map.get("key") {
        Some(Value::String(text)) => SkillName::new(text)
            .map_err(|e| out.push(document_violation("key", Problem::Conflict { reason: e.to_string() })))
            .ok(),
        _ => {
            out.push(document_violation(
                "key",
                Problem::Missing { expected: "the skill name, e.g. claim.draft_reply" },
            ));
            None
        }
    };
    let Some(Value::Object(spec)) = map.get("spec") else {
        out.push(document_violation(
            "spec",
            Problem::Missing { expected: "a mapping with version, description and a contract" },
        ));
        return None;
    };
    let version = match spec.get("version") {
        Some(Value::String(text)) => SkillVersion::new(text)
            .map_err(|e| out.push(document_violation("spec.version", Problem::Conflict { reason: e.to_string() })))
            .ok(),
        Some(other) => {
            out.push(document_violation(
                "spec.version",
                Problem::Conflict {
                    reason: format!(
                        "write the version as a quoted string ('{other}'): YAML reads 1.10 as the number 1.1"
                    ),
                },
            ));
            None
        }
        None => {
            out.push(document_violation(
                "spec.version",
                Problem::Missing { expected: "the version as a string, e.g. '1'" },
            ));
            None
        }
    };
    let description = match present(spec, "description") {
        None => String::new(),
        Some(value) => fields::string(value, "spec.description", out).map(str::to_owned).unwrap_or_default(),
    };
    let body = if present(spec, "contract").is_some() {
        read_leaf(spec, options, out).map(|leaf| SkillBody::Leaf(Box::new(leaf)))
    } else {
        read_composite(spec, out).map(SkillBody::Composite)
    };
    Some(Skill { name: name?, version: version?, description, body: body? })
}

fn read_leaf(spec: &Map<String, Value>, options: &NormalizeOptions, out: &mut Vec<Violation>) -> Option<LeafSkill> {
    for key in ["includes", "tools"] {
        if spec.contains_key(key) {
            out.push(conflict(
                &format!("spec.{key}"),
                "a skill with a contract is a leaf: put includes and tools into a composite skill",
            ));
        }
    }
    for key in ["inputSchema", "outputSchema", "config"] {
        if spec.contains_key(key) {
            out.push(conflict(
                &format!("spec.{key}"),
                "a skill with a contract takes its schemas from the contract: remove this field",
            ));
        }
    }
    let mut unknown: Vec<String> = Vec::new();
    for key in spec.keys() {
        if !LEAF_KEYS.contains(&key.as_str())
            && !["includes", "tools", "inputSchema", "outputSchema", "config"].contains(&key.as_str())
        {
            unknown.push(key.clone());
        }
    }
    if !unknown.is_empty() {
        out.push(document_violation("spec", Problem::UnknownKeys { unknown, allowed: LEAF_KEYS }));
    }
    let side_effects: Option<SideEffects> = fields::required_word(spec.get("sideEffects"), "spec.sideEffects", out);
    let risk_level: Option<RiskLevel> = fields::required_word(spec.get("riskLevel"), "spec.riskLevel", out);
    let raw = spec.get("contract").unwrap_or(&Value::Null);
    let contract = match normalize(raw, side_effects.unwrap_or(SideEffects::None), options) {
        Ok(contract) => Some(contract),
        Err(error) => {
            for violation in error.violations() {
                let mut violation = violation.clone();
                violation.field = if violation.field == "contract" {
                    "spec.contract".to_owned()
                } else {
                    format!("spec.contract.{}", violation.field)
                };
                out.push(violation);
            }
            None
        }
    };
    if let (Some(contract), Some(protocol)) = (&contract, present(spec, "protocol")) {
        let declared = contract.implementation().protocol().as_str();
        if protocol.as_str() != Some(declared) {
            out.push(Violation::new(
                "spec.protocol",
                Problem::Conflict {
                    reason: format!("{protocol} differs from the contract's implementation protocol {declared}"),
                },
            ));
        }
    }
    Some(LeafSkill { side_effects: side_effects?, risk_level: risk_level?, contract: contract? })
}

fn read_composite(spec: &Map<String, Value>, out: &mut Vec<Violation>) -> Option<CompositeSkill> {
    for key in ["sideEffects", "riskLevel"] {
        if spec.contains_key(key) {
            out.push(conflict(
                &format!("spec.{key}"),
                "a composite skill takes its capabilities from what it includes: remove this field",
            ));
        }
    }
    let unknown: Vec<String> = spec
        .keys()
        .filter(|k| !COMPOSITE_KEYS.contains(&k.as_str()) && !["sideEffects", "riskLevel"].contains(&k.as_str()))
        .cloned()
        .collect();
    if !unknown.is_empty() {
        out.push(document_violation("spec", Problem::UnknownKeys { unknown, allowed: COMPOSITE_KEYS }));
    }
    let before = out.len();
    let mut includes = Vec::new();
    match present(spec, "includes") {
        None => {}
        Some(Value::Array(items)) => {
            for (index, item) in items.iter().enumerate() {
                match item.as_str().map(SkillRef::parse) {
                    Some(Ok(r)) if !includes.contains(&r) => includes.push(r),
                    Some(Ok(_)) => {}
                    Some(Err(e)) => out.push(
                        document_violation("spec.includes", Problem::Conflict { reason: e.to_string() }).at(index),
                    ),
                    None => out.push(
                        fields::wrong_type("spec.includes", "a name@version string", item)
                            .coded(ViolationCode::InvalidSkillDocument)
                            .at(index),
                    ),
                }
            }
        }
        Some(other) => out.push(
            fields::wrong_type("spec.includes", "a list of name@version", other)
                .coded(ViolationCode::InvalidSkillDocument),
        ),
    }
    let mut tools: Vec<ToolDeclaration> = Vec::new();
    match present(spec, "tools") {
        None => {}
        Some(Value::Array(items)) => {
            for (index, item) in items.iter().enumerate() {
                if let Some(tool) = read_tool(item, index, out) {
                    if tools.iter().any(|t| t.name == tool.name) {
                        out.push(conflict("spec.tools", &format!("tool `{}` is declared twice", tool.name)));
                    } else {
                        tools.push(tool);
                    }
                }
            }
        }
        Some(other) => out.push(
            fields::wrong_type("spec.tools", "a list of tool declarations", other)
                .coded(ViolationCode::InvalidSkillDocument),
        ),
    }
    if out.len() != before {
        return None;
    }
    if includes.is_empty() && tools.is_empty() {
        out.push(empty_composite());
        return None;
    }
    Some(CompositeSkill { includes, tools })
}

fn read_tool(item: &Value, index: usize, out: &mut Vec<Violation>) -> Option<ToolDeclaration> {
    let field = format!("spec.tools[{index}]");
    let Value::Object(map) = item else {
        out.push(
            fields::wrong_type(&field, "a tool declaration {name, source, writes, ...}", item)
                .coded(ViolationCode::InvalidSkillDocument),
        );
        return None;
    };
    let before = out.len();
    fields::check_keys(map, TOOL_KEYS, &field, out);
    let name = match present(map, "name").and_then(Value::as_str) {
        Some(name) if is_tool_name(name) => Some(name.to_owned()),
        Some(name) => {
            out.push(document_violation(
                format!("{field}.name"),
                Problem::BadFormat {
                    found: name.to_owned(),
                    rule: "a tool name (letters, digits, `_`, `.`, `-`, `/`; at most 200)",
                },
            ));
            None
        }
        None => {
            out.push(document_violation(
                format!("{field}.name"),
                Problem::Missing { expected: "the tool's name on its server" },
            ));
            None
        }
    };
    let source = match present(map, "source").and_then(Value::as_str) {
        None => "mcp".to_owned(),
        Some(SKILL_SOURCE) => {
            out.push(conflict(
                &format!("{field}.source"),
                "`skill` is reserved for catalog skills: include the skill by name@version instead",
            ));
            String::new()
        }
        Some(source)
            if source.len() <= 32
                && source.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_')
                && !source.is_empty() =>
        {
            source.to_owned()
        }
        Some(source) => {
            out.push(document_violation(
                format!("{field}.source"),
                Problem::BadFormat { found: source.to_owned(), rule: "a lowercase source label such as mcp" },
            ));
            String::new()
        }
    };
    let server = present(map, "server")
        .and_then(|v| fields::bounded_string(v, &format!("{field}.server"), 2000, out))
        .map(str::to_owned);
    let description = present(map, "description")
        .and_then(|v| fields::string(v, &format!("{field}.description"), out))
        .unwrap_or_default()
        .to_owned();
    let writes = match present(map, "writes") {
        Some(Value::Bool(b)) => *b,
        _ => {
            out.push(document_violation(
                format!("{field}.writes"),
                Problem::Missing { expected: "true or false: whether the tool can write to the outside world" },
            ));
            false
        }
    };
    let has_side_effects = match present(map, "hasSideEffects") {
        None => writes,
        Some(Value::Bool(b)) => *b || writes,
        Some(other) => {
            out.push(
                fields::wrong_type(&format!("{field}.hasSideEffects"), "true or false", other)
                    .coded(ViolationCode::InvalidSkillDocument),
            );
            writes
        }
    };
    let risk_level: RiskLevel = fields::word(map, "riskLevel", &format!("{field}.riskLevel"), out);
    if out.len() != before {
        return None;
    }
    Some(ToolDeclaration { name: name?, source, server, description, writes, has_side_effects, risk_level })
}
