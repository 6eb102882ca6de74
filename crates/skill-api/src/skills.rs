//! Skill versions on the wire: the publish and patch requests, a version as the API answers
//! it, the listing's query, a version's metadata, and the ETag of a row version.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};
use skill_contract::{API_VERSION, KIND, RiskLevel, SideEffects, Skill, SkillBody, SkillMetadata, ToolDeclaration};

use crate::SkillStatus;

/// The largest page of a skill listing, and the page when none is asked for.
pub const MAX_PAGE: u32 = 200;
pub const DEFAULT_PAGE: u32 = 50;

/// The body of `POST /skills`: a leaf (`contract`), a composite (`includes`, `tools`) or a
/// catalog row (`protocol`, neither).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PublishRequest {
    pub name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub protocol: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub config: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub input_schema: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub side_effects: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub risk_level: Option<String>,
    /// A leaf's contract v1.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub contract: Option<Value>,
    /// A composite's included skills (`name@version`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub includes: Option<Value>,
    /// A composite's declared foreign tools.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tools: Option<Value>,
}

/// The version a publication gets when it names none.
pub const DEFAULT_VERSION: &str = "1.0.0";

impl PublishRequest {
    /// The request that publishes `skill` as it is: a leaf with its policy and normalized
    /// contract, a composite with its includes and tools.
    pub fn from_skill(skill: &Skill) -> Self {
        let mut request = Self {
            name: skill.name().as_str().to_owned(),
            version: Some(skill.version().as_str().to_owned()),
            description: Some(skill.description().to_owned()),
            ..Self::default()
        };
        match skill.body() {
            SkillBody::Leaf(leaf) => {
                request.side_effects = Some(leaf.side_effects().as_str().to_owned());
                request.risk_level = Some(leaf.risk_level().as_str().to_owned());
                request.contract = Some(leaf.contract().to_normalized_json());
            }
            SkillBody::Composite(composite) => {
                let includes: Vec<String> = composite.includes().iter().map(ToString::to_string).collect();
                request.includes = Some(json!(includes));
                request.tools = Some(composite.tools().iter().map(ToolDeclaration::to_json).collect());
            }
        }
        request
    }

    /// The request that publishes `published` as a core has it: its contract (or, without
    /// one, its protocol, config and schemas), policy, includes and tools.
    pub fn from_published(published: &SkillOut) -> Self {
        let composite = published.includes.is_some();
        let contract_less = published.contract.is_none() && !composite;
        Self {
            name: published.name.clone(),
            version: Some(published.version.clone()),
            description: Some(published.description.clone()),
            protocol: published.protocol.clone().filter(|_| contract_less),
            config: Some(published.config.clone()).filter(|_| contract_less),
            input_schema: published.input_schema.clone().filter(|_| contract_less),
            output_schema: published.output_schema.clone().filter(|_| contract_less),
            side_effects: published.side_effects.filter(|_| !composite).map(|effects| effects.as_str().to_owned()),
            risk_level: published.risk_level.filter(|_| !composite).map(|risk| risk.as_str().to_owned()),
            contract: published.contract.as_ref().map(skill_contract::Contract::to_normalized_json),
            includes: published.includes.as_ref().map(|includes| json!(includes)),
            tools: published.tools.as_ref().map(|tools| json!(tools)),
        }
    }

    /// The skill document this request describes (`apiVersion`, `kind`, `key`, `spec` with
    /// the version, description, policy, contract, includes and tools it gives), for the
    /// contract crate's reader. The inverse of [`PublishRequest::from_skill`].
    pub fn to_document(&self) -> Value {
        let mut spec = Map::new();
        spec.insert("version".into(), json!(self.version.as_deref().unwrap_or(DEFAULT_VERSION)));
        spec.insert("description".into(), json!(self.description.as_deref().unwrap_or_default()));
        for (key, value) in [
            ("sideEffects", self.side_effects.as_ref().map(|text| json!(text))),
            ("riskLevel", self.risk_level.as_ref().map(|text| json!(text))),
            ("contract", self.contract.clone()),
            ("includes", self.includes.clone()),
            ("tools", self.tools.clone()),
        ] {
            if let Some(value) = value {
                spec.insert(key.into(), value);
            }
        }
        json!({"apiVersion": API_VERSION, "kind": KIND, "key": self.name, "spec": spec})
    }
}

/// The body of `PATCH /skills/{reference}`, sent with `If-Match` (see [`etag`]).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PatchRequest {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub config: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub input_schema: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<Value>,
    /// Forward only: `active` → `deprecated` → `disabled`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    /// Moves the contract's `implementation.endpoint`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub endpoint: Option<String>,
}

impl PatchRequest {
    /// The names of the fields this request sets, in the wire's spelling.
    pub fn fields(&self) -> Vec<&'static str> {
        [
            ("description", self.description.is_some()),
            ("config", self.config.is_some()),
            ("inputSchema", self.input_schema.is_some()),
            ("outputSchema", self.output_schema.is_some()),
            ("status", self.status.is_some()),
            ("endpoint", self.endpoint.is_some()),
        ]
        .into_iter()
        .filter_map(|(name, set)| set.then_some(name))
        .collect()
    }
}

/// What a version is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum SkillKind {
    /// It has a contract: it can be invoked.
    Leaf,
    /// It has includes and tools: it resolves to a tool set.
    Composite,
    /// Neither: a catalog row naming a protocol.
    Catalog,
}

/// A skill version as the API returns it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SkillOut {
    pub id: String,
    pub name: String,
    pub version: String,
    pub kind: SkillKind,
    pub description: String,
    pub protocol: Option<String>,
    /// `{}` unless the caller holds `org.read`.
    pub config: Value,
    pub input_schema: Option<Value>,
    pub output_schema: Option<Value>,
    pub side_effects: Option<SideEffects>,
    pub risk_level: Option<RiskLevel>,
    /// A leaf's normalized contract (every field present).
    pub contract: Option<skill_contract::Contract>,
    /// A composite's includes (`name@version`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub includes: Option<Vec<String>>,
    /// A composite's declared foreign tools.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<Vec<Value>>,
    pub status: SkillStatus,
    /// Moves by one with every change; the ETag is `"skill-<rowVersion>"`.
    pub row_version: i32,
    pub created_at: String,
    pub updated_at: String,
    /// The package whose install last linked this skill.
    pub package: Option<PackageOut>,
}

impl SkillOut {
    /// `name@version`.
    pub fn reference(&self) -> String {
        format!("{}@{}", self.name, self.version)
    }
}

/// The package a skill version belongs to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PackageOut {
    pub key: String,
    pub version: String,
    pub install_hash: String,
    pub installed_at: String,
}

/// The query of `GET /skills`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ListQuery {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// A status word; another word is `422 invalid_status`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    /// A package key.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub package: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub limit: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cursor: Option<String>,
}

/// A version's metadata (`GET /skills/{reference}:metadata`, the catalogue's items): the
/// protocol's `SkillMetadata` with the version's id, status and kind.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct MetadataOut {
    #[serde(flatten)]
    #[schemars(schema_with = "crate::protocol_schema::metadata")]
    pub metadata: SkillMetadata,
    pub id: String,
    pub status: SkillStatus,
    pub kind: SkillKind,
}

/// The ETag of a row version: `"skill-<rowVersion>"`.
pub fn etag(row_version: i32) -> String {
    format!("\"skill-{row_version}\"")
}

/// The row version an `If-Match` value names, if it is an ETag of [`etag`]'s form.
pub fn parse_etag(header: &str) -> Option<i32> {
    header
        .trim()
        .strip_prefix("\"skill-")
        .and_then(|rest| rest.strip_suffix('"'))
        .and_then(|number| number.parse::<i32>().ok())
        .filter(|number| *number >= 1)
}

/// A composite version's parts as the core keeps them: the versions it includes
/// (`name@version`) and the foreign tools it declares.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Composition {
    #[serde(default)]
    pub includes: Vec<String>,
    #[serde(default)]
    pub tools: Vec<Value>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn etags_round_trip_and_odd_ones_are_refused() {
        assert_eq!(parse_etag(&etag(7)), Some(7));
        for odd in ["skill-7", "\"skill-0\"", "\"skill-x\"", "\"row-7\"", ""] {
            assert_eq!(parse_etag(odd), None, "{odd}");
        }
    }

    #[test]
    fn a_skill_reads_back_from_the_request_that_publishes_it() {
        let document = json!({"apiVersion": API_VERSION, "kind": KIND, "key": "a.b", "spec": {
            "version": "2", "description": "d", "sideEffects": "external_read", "riskLevel": "low",
            "contract": {"inputs": {"type": "object"}, "outputs": {"type": "object"},
                         "implementation": {"protocol": "http", "endpoint": "https://a"}}}});
        let options = skill_contract::NormalizeOptions::default();
        let skill = Skill::from_document(&document, &options).expect("a skill");
        let request = PublishRequest::from_skill(&skill);
        assert_eq!(request.version.as_deref(), Some("2"));
        let again = Skill::from_document(&request.to_document(), &options).expect("reads back");
        assert_eq!(again, skill);
        let bare = PublishRequest { name: "c".into(), ..PublishRequest::default() }.to_document();
        assert_eq!(bare["spec"], json!({"version": DEFAULT_VERSION, "description": ""}));
    }

    #[test]
    fn statuses_read_from_their_words_only() {
        use crate::State;

        assert_eq!(SkillStatus::parse("deprecated"), Ok(SkillStatus::Deprecated));
        assert!(SkillStatus::parse("Deprecated").is_err());
        assert!(SkillStatus::Active < SkillStatus::Disabled, "the order is the order of moves");
    }
}
