//! How a skill version reads from outside (`SkillOut`), and the bridge from a stored record to
//! the contract crate's `Skill`.

use serde::Serialize;
use serde_json::{Map, Value, json};
use skill_contract::{API_VERSION, KIND, NormalizeOptions, Skill};
use skill_store::records::{PackageInstall, SkillEntry, SkillRecord};

/// A skill version as the API returns it (camelCase).
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SkillOut {
    pub id: String,
    pub name: String,
    pub version: String,
    /// `leaf` (a contract: invocable), `composite` (includes and tools) or `catalog` (neither).
    pub kind: &'static str,
    pub description: String,
    pub protocol: Option<String>,
    /// `{}` unless the caller holds `org.read`.
    pub config: Value,
    pub input_schema: Option<Value>,
    pub output_schema: Option<Value>,
    pub side_effects: Option<String>,
    pub risk_level: Option<String>,
    pub contract: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub includes: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tools: Option<Value>,
    pub status: String,
    pub row_version: i32,
    pub created_at: String,
    pub updated_at: String,
    pub package: Option<PackageOut>,
}

#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PackageOut {
    pub key: String,
    pub version: String,
    pub install_hash: String,
    pub installed_at: String,
}

/// The ETag of a row version: `"skill-<rowVersion>"`.
pub fn etag(row_version: i32) -> String {
    format!("\"skill-{row_version}\"")
}

pub(crate) fn kind(record: &SkillRecord) -> &'static str {
    match (&record.contract, &record.composition) {
        (Some(_), _) => "leaf",
        (None, Some(_)) => "composite",
        (None, None) => "catalog",
    }
}

pub(crate) fn time(at: &skill_store::records::Time) -> String {
    at.to_rfc3339_opts(chrono::SecondsFormat::Micros, true)
}

impl SkillOut {
    pub(crate) fn new(entry: SkillEntry, show_config: bool) -> Self {
        let SkillEntry { skill, package } = entry;
        let kind = kind(&skill);
        let (includes, tools) = match &skill.composition {
            Some(composition) => (
                Some(composition.get("includes").cloned().unwrap_or_else(|| json!([]))),
                Some(composition.get("tools").cloned().unwrap_or_else(|| json!([]))),
            ),
            None => (None, None),
        };
        Self {
            kind,
            created_at: time(&skill.created_at),
            updated_at: time(&skill.updated_at),
            config: if show_config { skill.config } else { Value::Object(Map::new()) },
            package: package.map(package_out),
            id: skill.id,
            name: skill.name,
            version: skill.version,
            description: skill.description,
            protocol: skill.protocol,
            input_schema: skill.input_schema,
            output_schema: skill.output_schema,
            side_effects: skill.side_effects,
            risk_level: skill.risk_level,
            contract: skill.contract,
            includes,
            tools,
            status: skill.status,
            row_version: skill.row_version,
        }
    }
}

fn package_out(install: PackageInstall) -> PackageOut {
    PackageOut {
        installed_at: time(&install.installed_at),
        key: install.key,
        version: install.version,
        install_hash: install.install_hash,
    }
}

/// The stored version as a contract-crate `Skill` (leaf or composite); `None` for a catalog row.
/// Stored rows were checked at publication, so reading them back only fails on a corrupted row.
pub(crate) fn to_skill(record: &SkillRecord) -> Option<Result<Skill, skill_contract::ContractError>> {
    let mut spec = Map::new();
    spec.insert("version".into(), json!(record.version));
    spec.insert("description".into(), json!(record.description));
    if let Some(contract) = &record.contract {
        spec.insert("sideEffects".into(), json!(record.side_effects));
        spec.insert("riskLevel".into(), json!(record.risk_level));
        spec.insert("contract".into(), contract.clone());
    } else if let Some(Value::Object(composition)) = &record.composition {
        for key in ["includes", "tools"] {
            if let Some(value) = composition.get(key).filter(|value| value.as_array().is_some_and(|a| !a.is_empty())) {
                spec.insert(key.into(), value.clone());
            }
        }
    } else {
        return None;
    }
    let document = json!({"apiVersion": API_VERSION, "kind": KIND, "key": record.name, "spec": spec});
    let options = NormalizeOptions { allow_placeholders: true, allow_conditions: true };
    Some(Skill::from_document(&document, &options))
}
