//! Changing a published version within what it allows: the description, the config, the schemas
//! of a version without a contract, the status (forward only) and the contract's endpoint (a
//! move). Guarded by `If-Match` against lost updates.

use serde_json::{Value, json};
use skill_api::events::{EndpointMove, SkillUpdated};
use skill_api::{Lifecycle, PatchRequest, SkillOut, SkillStatus, etag, parse_etag};
use skill_contract::codes::Code;
use skill_contract::{Contract, Protocol, SideEffects};
use skill_store::ErrorKind;
use skill_store::records::{SkillChange, SkillRecord};

use super::check_status;
use super::publish::{checked_schema, contract_error};
use super::view::skill_out;
use crate::actor::Actor;
use crate::error::{Class, EngineError, Result};
use crate::{Engine, Origin};

/// The longest endpoint a contract may hold.
const MAX_ENDPOINT: usize = 2000;

impl Engine {
    /// Applies `request` to the version `reference` names (`org.manage`) when `if_match` (the
    /// `If-Match` header) holds its current ETag.
    pub async fn patch(
        &self,
        actor: &Actor,
        reference: &str,
        if_match: Option<&str>,
        request: &PatchRequest,
        request_id: Option<&str>,
    ) -> Result<SkillOut> {
        actor.require("org.manage")?;
        let expected = parse_if_match(if_match)?;
        let entry = self.find(reference).await?;
        let current = &entry.skill;
        if current.row_version != expected {
            return Err(version_conflict(expected, current.row_version));
        }
        let (change, data) = change_of(current, request)?;
        let event = self.event(format!("skill:{}", current.id), &data, &Origin::of(actor, request_id));
        let updated = match self.store.update_skill(&current.id, expected, &change, &event).await {
            Ok(updated) => updated,
            Err(error) if error.kind() == ErrorKind::Stale => {
                let now = self.find(&current.id).await?.skill.row_version;
                return Err(version_conflict(expected, now));
            }
            // A database guard's refusal keeps its own code.
            Err(error) if matches!(error.kind(), ErrorKind::Refused(_)) => {
                return Err(EngineError::from(error).with("skillId", current.id.clone()));
            }
            Err(error) => return Err(error.into()),
        };
        Ok(skill_out(skill_store::records::SkillEntry { skill: updated, package: entry.package }, true))
    }
}

/// The change `request` makes to `current`, checked by the rules of what a published version
/// may change, and the data of its `skill.updated` event.
pub(crate) fn change_of(current: &SkillRecord, request: &PatchRequest) -> Result<(SkillChange, SkillUpdated)> {
    super::publish::no_secret(&serde_json::to_value(request).unwrap_or_default())?;
    let mut change = SkillChange::from_record(current);
    let mut changed: Vec<&str> = Vec::new();
    let mut moved = None;
    if let Some(description) = request.description.as_ref().filter(|d| **d != current.description) {
        if description.chars().count() > skill_contract::MAX_DESCRIPTION {
            return Err(EngineError::new(
                Class::Invalid,
                Code::InvalidSkillDocument,
                format!("a description has at most {} characters", skill_contract::MAX_DESCRIPTION),
            )
            .with("field", "description"));
        }
        change.description = description.clone();
        changed.push("description");
    }
    if let Some(config) = &request.config {
        if !config.is_object() {
            return Err(EngineError::invalid_request("`config` must be a JSON object").with("field", "config"));
        }
        if *config != current.config {
            change.config = config.clone();
            changed.push("config");
        }
    }
    let mut frozen = Vec::new();
    for (field, wanted, stored, slot) in [
        ("inputSchema", &request.input_schema, &current.input_schema, &mut change.input_schema),
        ("outputSchema", &request.output_schema, &current.output_schema, &mut change.output_schema),
    ] {
        let Some(wanted) = wanted.as_ref().filter(|wanted| Some(*wanted) != stored.as_ref()) else { continue };
        if current.contract.is_some() {
            frozen.push(field);
            continue;
        }
        *slot = checked_schema(field, Some(wanted))?;
        changed.push(field);
    }
    if !frozen.is_empty() {
        return Err(EngineError::new(
            Class::Conflict,
            Code::SkillVersionImmutable,
            format!(
                "{} of a version with a contract come from the contract, which is immutable: publish a new version",
                frozen.join(" and ")
            ),
        )
        .with("skillId", current.id.clone())
        .with("fields", frozen));
    }
    if let Some(word) = request.status.as_deref().filter(|status| *status != current.status.as_str()) {
        let status = check_status(word)?;
        if !SkillStatus::allows(current.status, status) {
            return Err(EngineError::new(
                Class::Conflict,
                Code::InvalidStatusTransition,
                format!(
                    "a status only moves forward (active → deprecated → disabled), not {} → {word}",
                    current.status
                ),
            )
            .with("from", current.status)
            .with("to", word));
        }
        change.status = status;
        changed.push("status");
    }
    if let Some(endpoint) = &request.endpoint {
        let (contract, from) = moved_contract(current, endpoint)?;
        if current.contract.as_ref() != Some(&contract) {
            change.contract = Some(contract);
            moved = Some(EndpointMove { from, to: endpoint.clone() });
            changed.push("endpoint");
        }
    }
    if changed.is_empty() {
        return Err(EngineError::new(Class::Invalid, Code::EmptyUpdate, "the request changes nothing"));
    }
    let data = SkillUpdated {
        changed_fields: changed.into_iter().map(str::to_owned).collect(),
        row_version: current.row_version + 1,
        endpoint: moved,
    };
    Ok((change, data))
}

/// The contract with its endpoint moved to `endpoint`, checked by the publication rules, and the
/// endpoint it had.
fn moved_contract(current: &SkillRecord, endpoint: &str) -> Result<(Contract, Value)> {
    let field = "implementation.endpoint";
    let Some(contract) = &current.contract else {
        return Err(EngineError::new(
            Class::Conflict,
            Code::SkillNotInvocable,
            "this version has no contract, so it has no endpoint to move",
        )
        .with("reason", "no_contract"));
    };
    if endpoint.is_empty() || endpoint.chars().count() > MAX_ENDPOINT {
        return Err(EngineError::new(
            Class::Invalid,
            Code::InvalidSkillContract,
            format!("an endpoint has 1 to {MAX_ENDPOINT} characters"),
        )
        .with("field", field));
    }
    if contract.implementation().protocol() == Protocol::Local {
        return Err(EngineError::new(
            Class::Invalid,
            Code::InvalidSkillContract,
            "a local implementation runs in the executor's process and has no endpoint",
        )
        .with("field", field));
    }
    super::endpoint::check_endpoint(field, endpoint)?;
    let from = json!(contract.implementation().endpoint());
    let side_effects: SideEffects = current.side_effects.unwrap_or_default();
    let normalized = contract.with_endpoint(endpoint, side_effects).map_err(|error| contract_error(&error))?;
    Ok((normalized, from))
}

/// The row version an `If-Match: "skill-<n>"` header names.
fn parse_if_match(header: Option<&str>) -> Result<i32> {
    let Some(header) = header else {
        return Err(EngineError::new(
            Class::PreconditionRequired,
            Code::IfMatchRequired,
            "send If-Match with the ETag of the version you read (\"skill-<rowVersion>\")",
        ));
    };
    parse_etag(header).ok_or_else(|| {
        EngineError::new(
            Class::BadRequest,
            Code::InvalidIfMatch,
            format!("If-Match must look like {}, not {header}", etag(1)),
        )
    })
}

pub(crate) fn version_conflict(expected: i32, current: i32) -> EngineError {
    EngineError::new(
        Class::Conflict,
        Code::VersionConflict,
        format!("the version changed since it was read (row version {current}, not {expected}): read it again"),
    )
    .with("expectedVersion", expected)
    .with("currentVersion", current)
}
