//! A skill as an MCP tool: the name, the schemas, the annotations and the `_meta` it is listed with.

use std::sync::Arc;

use rmcp::model::{JsonObject, MetaObject, Tool, ToolAnnotations};
use serde_json::{Value, json};
use skill_sdk::Skill;
use skill_sdk::contract::{Idempotency, SideEffects};

/// MCP tool names allow `[A-Za-z0-9_.-]`: a namespaced `ns/name` is exposed as `ns.name`.
pub fn tool_name(skill_name: &str) -> String {
    skill_name.replace('/', ".")
}

fn object(value: &Value) -> Arc<JsonObject> {
    Arc::new(value.as_object().cloned().unwrap_or_default())
}

/// The hints a client may show or act on, derived from the contract.
pub fn annotations(side_effects: SideEffects, idempotency: Idempotency) -> ToolAnnotations {
    let mut annotations = ToolAnnotations::default();
    annotations.read_only_hint = Some(side_effects != SideEffects::ExternalWrite);
    annotations.destructive_hint = Some(side_effects == SideEffects::ExternalWrite);
    annotations.idempotent_hint = Some(idempotency != Idempotency::None);
    annotations.open_world_hint = Some(side_effects != SideEffects::None);
    annotations
}

/// The tool of `skill`; its `_meta` holds the skill's reference, version and policy.
pub fn tool(skill: &Skill) -> Tool {
    let contract = skill.contract().expect("invariant: the registry built every contract");
    let mut tool = Tool::default();
    tool.name = tool_name(skill.name()).into();
    tool.description = Some(skill.description().to_owned().into());
    tool.input_schema = object(contract.inputs());
    tool.output_schema = Some(object(contract.outputs()));
    tool.annotations = Some(annotations(skill.side_effects(), contract.idempotency()));
    let mut policy = json!({
        "sideEffects": skill.side_effects().as_str(),
        "riskLevel": skill.risk_level().as_str(),
        "idempotency": contract.idempotency().as_str(),
        "timeoutSeconds": contract.timeout_seconds(),
        "retryPolicy": contract.retry_policy().to_json(),
        "requiredPermissions": contract.required_permissions(),
    });
    if let Some(cost_model) = contract.cost_model() {
        policy["costModel"] = cost_model.to_json();
    }
    let meta = json!({
        "skill/ref": skill.reference(),
        "skill/name": skill.name(),
        "skill/version": skill.version(),
        "skill/policy": policy,
    });
    tool.meta = meta.as_object().cloned().map(MetaObject);
    tool
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hints_follow_the_contract() {
        let read = annotations(SideEffects::None, Idempotency::None);
        assert_eq!(
            (read.read_only_hint, read.destructive_hint, read.idempotent_hint, read.open_world_hint),
            (Some(true), Some(false), Some(false), Some(false))
        );
        let write = annotations(SideEffects::ExternalWrite, Idempotency::Required);
        assert_eq!(
            (write.read_only_hint, write.destructive_hint, write.idempotent_hint, write.open_world_hint),
            (Some(false), Some(true), Some(true), Some(true))
        );
        let fetch = annotations(SideEffects::ExternalRead, Idempotency::Natural);
        assert_eq!(
            (fetch.read_only_hint, fetch.idempotent_hint, fetch.open_world_hint),
            (Some(true), Some(true), Some(true))
        );
        assert_eq!(tool_name("local/my-skill"), "local.my-skill");
    }
}
