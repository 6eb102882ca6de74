//! Publishing a skill version: the contract normalized and checked by the contract crate's own
//! rules, a composite resolved against the catalog, a catalog row's protocol and policy checked.

use skill_contract::codes::Code;
use std::collections::HashMap;

use serde_json::{Value, json};
use skill_api::events::SkillRegistered;
use skill_api::{DEFAULT_VERSION, PublishRequest, SkillOut, SkillStatus};
use skill_contract::{
    ContractError, NormalizeOptions, PolicyWord, RiskLevel, SideEffects, Skill, SkillBody, SkillRef, composite, schema,
};
use skill_store::ErrorKind;
use skill_store::records::SkillRecord;

use super::view::skill_out;
use crate::actor::Actor;
use crate::error::{Class, EngineError, Result};
use crate::{Engine, Origin};

/// The protocols a catalog row (no contract) may name; only the first three are invocable.
pub const PROTOCOLS: &[&str] = &["http", "local", "mcp", "opencode", "custom"];

impl Engine {
    /// Publishes a version (`org.manage`): `skill_exists` when `name@version` is taken.
    pub async fn publish(&self, actor: &Actor, request: &PublishRequest, request_id: Option<&str>) -> Result<SkillOut> {
        actor.require("org.manage")?;
        let (record, composite) = self.prepare_publication(request).await?;
        if let Some(skill) = &composite {
            self.resolve_for_publication(skill, &HashMap::new()).await?;
        }
        let event = self.registered_event(&record, &Origin::of(actor, request_id));
        match self.store.insert_skill(&record, &event).await {
            Ok(()) => {}
            Err(error) if error.kind() == ErrorKind::Conflict => return Err(skill_exists(&record)),
            Err(error) => return Err(error.into()),
        }
        let entry = skill_store::records::SkillEntry { skill: record, package: None };
        Ok(skill_out(entry, true))
    }

    /// The record `request` publishes, checked by every rule but a composite's resolution, and
    /// the composite itself (to resolve) when it is one.
    pub(crate) async fn prepare_publication(&self, request: &PublishRequest) -> Result<(SkillRecord, Option<Skill>)> {
        no_secret(&serde_json::to_value(request).unwrap_or_default())?;
        let version = request.version.clone().unwrap_or_else(|| DEFAULT_VERSION.to_owned());
        let config = match &request.config {
            None | Some(Value::Null) => json!({}),
            Some(object @ Value::Object(_)) => object.clone(),
            Some(_) => return Err(invalid_contract("config", "`config` must be a JSON object")),
        };
        let now = self.now();
        let record = SkillRecord {
            id: self.new_id(),
            name: request.name.clone(),
            version,
            description: request.description.clone().unwrap_or_default(),
            protocol: None,
            config,
            input_schema: None,
            output_schema: None,
            side_effects: None,
            risk_level: None,
            contract: None,
            composition: None,
            status: SkillStatus::Active,
            row_version: 1,
            created_at: now,
            updated_at: now,
        };
        // Checking a contract compiles its schemas: CPU work, kept off the async workers.
        let owned = request.clone();
        tokio::task::spawn_blocking(move || {
            let mut record = record;
            let composite = if owned.contract.is_some() {
                leaf(&owned, &mut record).map(|()| None)
            } else if owned.includes.is_some() || owned.tools.is_some() {
                composite_skill(&owned, &mut record).map(Some)
            } else {
                catalog_row(&owned, &mut record).map(|()| None)
            };
            composite.map(|composite| (record, composite))
        })
        .await
        .map_err(|error| {
            EngineError::new(Class::Internal, Code::InternalError, format!("the check was lost: {error}"))
        })?
    }

    /// The `skill.registered` event of `record`.
    pub(crate) fn registered_event(&self, record: &SkillRecord, origin: &Origin) -> skill_store::records::Event {
        let registered = SkillRegistered {
            name: record.name.clone(),
            version: record.version.clone(),
            protocol: record.protocol.clone(),
            invocable: record.contract.is_some(),
            side_effects: record.side_effects,
            risk_level: record.risk_level,
        };
        self.event(format!("skill:{}", record.id), &registered, origin)
    }

    /// A composite must resolve now: every include published (so no cycle can ever form) and no
    /// two different tools under one name.
    /// `planned`: versions not published yet that are published with it (a package's plan).
    pub(crate) async fn resolve_for_publication(
        &self,
        skill: &Skill,
        planned: &HashMap<SkillRef, Skill>,
    ) -> Result<()> {
        let known = self.closure(skill, planned).await?;
        composite::resolve_skill(skill, &known).map(drop).map_err(|error| crate::error::resolve_error(skill, &error))
    }
}

fn leaf(request: &PublishRequest, record: &mut SkillRecord) -> Result<()> {
    for (field, given) in [
        ("inputSchema", request.input_schema.is_some()),
        ("outputSchema", request.output_schema.is_some()),
        ("includes", request.includes.is_some()),
        ("tools", request.tools.is_some()),
    ] {
        if given {
            return Err(invalid_contract(
                field,
                &format!("a skill with a contract takes its schemas and tools from the contract: remove `{field}`"),
            ));
        }
    }
    let skill = read(request)?;
    let Some(leaf) = skill.as_leaf() else {
        return Err(EngineError::new(Class::Internal, Code::InternalError, "a contract read as a composite"));
    };
    let contract = leaf.contract();
    let protocol = contract.implementation().protocol().as_str();
    if let Some(given) = request.protocol.as_deref().filter(|given| *given != protocol) {
        return Err(invalid_contract(
            "protocol",
            &format!(
                "`protocol` is {given:?} but the contract's implementation is {protocol:?}: drop `protocol` or make them equal"
            ),
        ));
    }
    if let Some(endpoint) = contract.implementation().endpoint() {
        super::endpoint::check_endpoint("implementation.endpoint", endpoint)?;
    }
    record.protocol = Some(protocol.to_owned());
    record.side_effects = Some(leaf.side_effects());
    record.risk_level = Some(leaf.risk_level());
    record.input_schema = Some(contract.inputs().clone());
    record.output_schema = Some(contract.outputs().clone());
    record.contract = Some(contract.clone());
    Ok(())
}

fn composite_skill(request: &PublishRequest, record: &mut SkillRecord) -> Result<Skill> {
    for (field, given) in [
        ("protocol", request.protocol.is_some()),
        ("sideEffects", request.side_effects.is_some()),
        ("riskLevel", request.risk_level.is_some()),
    ] {
        if given {
            return Err(EngineError::new(
                Class::Invalid,
                Code::InvalidSkillDocument,
                format!("a composite skill takes `{field}` from what it includes: remove `{field}`"),
            )
            .with("field", field));
        }
    }
    let skill = read(request)?;
    let SkillBody::Composite(composite) = skill.body() else {
        return Err(EngineError::new(Class::Internal, Code::InternalError, "a composite read as a leaf"));
    };
    let includes: Vec<String> = composite.includes().iter().map(ToString::to_string).collect();
    let tools: Vec<Value> = composite.tools().iter().map(skill_contract::ToolDeclaration::to_json).collect();
    record.composition = Some(skill_api::Composition { includes, tools });
    record.input_schema = checked_schema("inputSchema", request.input_schema.as_ref())?;
    record.output_schema = checked_schema("outputSchema", request.output_schema.as_ref())?;
    Ok(skill)
}

fn catalog_row(request: &PublishRequest, record: &mut SkillRecord) -> Result<()> {
    let protocol = match request.protocol.as_deref() {
        Some(protocol) if PROTOCOLS.contains(&protocol) => protocol,
        other => {
            let message = match other {
                None => "a skill without a contract or includes needs `protocol`".to_owned(),
                Some(found) => format!("`protocol` is one of {}, not {found:?}", PROTOCOLS.join(", ")),
            };
            return Err(
                EngineError::new(Class::Invalid, Code::InvalidProtocol, message).with("allowed", PROTOCOLS.to_vec())
            );
        }
    };
    if request.side_effects.is_some() || request.risk_level.is_some() {
        record.side_effects = Some(word::<SideEffects>("sideEffects", request.side_effects.as_deref())?);
        record.risk_level = Some(word::<RiskLevel>("riskLevel", request.risk_level.as_deref())?);
    }
    record.protocol = Some(protocol.to_owned());
    record.input_schema = checked_schema("inputSchema", request.input_schema.as_ref())?;
    record.output_schema = checked_schema("outputSchema", request.output_schema.as_ref())?;
    Ok(())
}

/// The policy word `value` when it is one of `W`'s words.
fn word<W: PolicyWord>(field: &str, value: Option<&str>) -> Result<W> {
    match value.map(str::parse::<W>) {
        Some(Ok(word)) => Ok(word),
        _ => Err(invalid_contract(field, &format!("`{field}` is one of {}", W::WORDS.join(", ")))
            .with("allowed", W::WORDS.to_vec())),
    }
}

pub(crate) fn checked_schema(field: &str, schema: Option<&Value>) -> Result<Option<Value>> {
    match schema {
        None | Some(Value::Null) => Ok(None),
        Some(document) => match schema::check_schema_document(document) {
            Ok(()) => Ok(Some(document.clone())),
            Err(error) => Err(EngineError::new(Class::Invalid, Code::InvalidJsonSchema, format!("`{field}`: {error}"))
                .with("field", field)),
        },
    }
}

/// `secret_material_rejected` when anything in `request` holds a credential: what a version
/// holds is shown to every reader of the catalog.
pub(crate) fn no_secret(value: &Value) -> Result<()> {
    match skill_contract::find_secret_material(value, "") {
        None => Ok(()),
        Some(field) => Err(EngineError::new(
            Class::Invalid,
            Code::SecretMaterialRejected,
            format!("`{field}` holds what looks like a credential; keep secrets out of the catalog (use the executor's secrets)"),
        )
        .with("field", field)),
    }
}

/// `skill_exists` for `record`'s `name@version`.
pub(crate) fn skill_exists(record: &SkillRecord) -> EngineError {
    EngineError::new(
        Class::Conflict,
        Code::SkillExists,
        format!("{}@{} is already published; publish a new version", record.name, record.version),
    )
    .with("name", record.name.clone())
    .with("version", record.version.clone())
}

fn invalid_contract(field: &str, message: &str) -> EngineError {
    EngineError::new(Class::Invalid, Code::InvalidSkillContract, message).with("field", field)
}

/// Reads the skill through the contract crate, with every problem's field named as the request
/// names it (`retryPolicy.maxAttempts`, `sideEffects`, `includes`, `name`).
fn read(request: &PublishRequest) -> Result<Skill> {
    Skill::from_document(&request.to_document(), &NormalizeOptions::default()).map_err(|error| contract_error(&error))
}

pub(crate) fn contract_error(error: &ContractError) -> EngineError {
    let violations: Vec<skill_contract::Violation> = error
        .violations()
        .iter()
        .map(|violation| {
            let mut violation = violation.clone();
            violation.field = request_field(&violation.field);
            violation
        })
        .collect();
    let message = match violations.as_slice() {
        [only] => only.to_string(),
        many => {
            format!("{} problems: {}", many.len(), many.iter().map(ToString::to_string).collect::<Vec<_>>().join("; "))
        }
    };
    let mut details = violations[0].details();
    if violations.len() > 1 {
        let problems: Vec<Value> = violations
            .iter()
            .map(|v| json!({"code": v.code.as_str(), "field": v.field, "message": v.to_string()}))
            .collect();
        details.insert("problems".into(), Value::Array(problems));
    }
    EngineError::new(Class::Invalid, violations[0].code.code(), message).with_details(details)
}

/// Where a request holds what its document holds at `field`.
fn request_field(field: &str) -> String {
    match field {
        "key" => "name".to_owned(),
        "spec.contract" => "contract".to_owned(),
        _ => field.strip_prefix("spec.contract.").or_else(|| field.strip_prefix("spec.")).unwrap_or(field).to_owned(),
    }
}
