//! How a skill version reads from outside (`skill_api::SkillOut`), and the bridge from a
//! stored record to the contract crate's `Skill` through the one document assembly of
//! `skill_api::PublishRequest`.

use serde_json::{Map, Value};
use skill_api::{PackageOut, PublishRequest, SkillKind, SkillOut};
use skill_contract::{NormalizeOptions, Skill};
use skill_store::records::{PackageInstall, SkillEntry, SkillRecord};

pub(crate) fn kind(record: &SkillRecord) -> SkillKind {
    match (&record.contract, &record.composition) {
        (Some(_), _) => SkillKind::Leaf,
        (None, Some(_)) => SkillKind::Composite,
        (None, None) => SkillKind::Catalog,
    }
}

pub(crate) fn time(at: &skill_store::records::Time) -> String {
    at.to_rfc3339_opts(chrono::SecondsFormat::Micros, true)
}

/// The version as the API answers it; `config` only for callers who hold `org.read`.
pub(crate) fn skill_out(entry: SkillEntry, show_config: bool) -> SkillOut {
    let SkillEntry { skill, package } = entry;
    let (includes, tools) = match &skill.composition {
        Some(composition) => (Some(composition.includes.clone()), Some(composition.tools.clone())),
        None => (None, None),
    };
    SkillOut {
        kind: kind(&skill),
        status: skill.status,
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
        row_version: skill.row_version,
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
    let mut request = PublishRequest {
        name: record.name.clone(),
        version: Some(record.version.clone()),
        description: Some(record.description.clone()),
        ..PublishRequest::default()
    };
    if let Some(contract) = &record.contract {
        request.side_effects = record.side_effects.map(|s| s.as_str().to_owned());
        request.risk_level = record.risk_level.map(|r| r.as_str().to_owned());
        request.contract = Some(contract.to_normalized_json());
    } else if let Some(composition) = &record.composition {
        let includes = composition.includes.iter().cloned().map(Value::String).collect();
        request.includes = (!composition.includes.is_empty()).then_some(Value::Array(includes));
        request.tools = (!composition.tools.is_empty()).then(|| Value::Array(composition.tools.clone()));
    } else {
        return None;
    }
    // Checked whole when it was published: read back without compiling its schemas again.
    let options = NormalizeOptions { allow_placeholders: true, allow_conditions: true, stored: true };
    Some(Skill::from_document(&request.to_document(), &options))
}
