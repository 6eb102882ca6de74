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

/// The hints a client may show or act on, from what the contract promises and nothing more:
///
/// - `readOnlyHint`: the skill does not write to the outside world (`side_effects` is not
///   `external_write`); `destructiveHint` is its negation, since the contract cannot tell an
///   additive write from a destructive one.
/// - `idempotentHint`: a repeat with the same arguments has no further effect. A read-only skill
///   has none; a writing one only with `idempotency = "natural"` — `"required"` deduplicates by
///   the idempotency key in `_meta`, so the same arguments with a new key write again.
/// - `openWorldHint`: always true. `side_effects` says what a skill changes, not what it talks to:
///   `none` allows calling a model or a public API (`claim.draft_reply` does), so no contract
///   promises a closed world.
pub fn annotations(side_effects: SideEffects, idempotency: Idempotency) -> ToolAnnotations {
    let writes = side_effects == SideEffects::ExternalWrite;
    let mut annotations = ToolAnnotations::default();
    annotations.read_only_hint = Some(!writes);
    annotations.destructive_hint = Some(writes);
    annotations.idempotent_hint = Some(!writes || idempotency == Idempotency::Natural);
    annotations.open_world_hint = Some(true);
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
            (Some(true), Some(false), Some(true), Some(true)),
            "a model call is open world even without side effects"
        );
        let keyed = annotations(SideEffects::ExternalWrite, Idempotency::Required);
        assert_eq!(
            (keyed.read_only_hint, keyed.destructive_hint, keyed.idempotent_hint, keyed.open_world_hint),
            (Some(false), Some(true), Some(false), Some(true)),
            "a keyed write repeats its effect under a new key"
        );
        let natural = annotations(SideEffects::ExternalWrite, Idempotency::Natural);
        assert_eq!(natural.idempotent_hint, Some(true));
        let bare = annotations(SideEffects::ExternalWrite, Idempotency::None);
        assert_eq!(bare.idempotent_hint, Some(false));
        assert_eq!(tool_name("local/my-skill"), "local.my-skill");
    }
}
