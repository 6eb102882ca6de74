//! What installing a skill document would do to a core: create the version, patch its mutable
//! fields, move its endpoint, leave it, or refuse because the published contract is immutable.

use serde_json::{Map, Value, json};

use crate::{Skill, SkillBody, ToolDeclaration};

/// The plan for one skill version.
#[derive(Debug, Clone, PartialEq)]
pub enum SkillPlan {
    /// Not published yet: `body` is the `POST /skills` request.
    Create { body: Value },
    /// Published, with mutable fields (`description`, `endpoint`) to change: `body` is the
    /// `PATCH` request, to send with `If-Match` of `row_version`.
    Patch { id: String, row_version: i64, fields: Vec<String>, body: Value, moved_from: Option<Value> },
    /// Published as wanted.
    Unchanged,
    /// Published with a different contract (or policy, protocol, composition): only a new version
    /// can carry the change.
    Refuse { fields: Vec<String> },
}

/// Compares the wanted version with the published one (`published`: the core's `SkillOut`).
pub fn plan_skill(wanted: &Skill, published: Option<&Value>) -> SkillPlan {
    let Some(published) = published else { return SkillPlan::Create { body: create_body(wanted) } };
    let mut immutable: Vec<String> = Vec::new();
    let mut body = Map::new();
    let mut moved_from = None;
    match wanted.body() {
        SkillBody::Leaf(leaf) => {
            if published["kind"] != "leaf" {
                return SkillPlan::Refuse { fields: vec!["contract".to_owned()] };
            }
            let contract = leaf.contract();
            for (field, value) in [
                ("sideEffects", leaf.side_effects().as_str()),
                ("riskLevel", leaf.risk_level().as_str()),
                ("protocol", contract.implementation().protocol().as_str()),
            ] {
                if published[field] != value {
                    immutable.push(field.to_owned());
                }
            }
            let wanted_contract = contract.to_normalized_json();
            let stored = &published["contract"];
            if !subset(&wanted_contract, stored) {
                let endpoint = &wanted_contract["implementation"]["endpoint"];
                let mut with_stored_endpoint = wanted_contract.clone();
                with_stored_endpoint["implementation"]["endpoint"] = stored["implementation"]["endpoint"].clone();
                if endpoint.is_string() && subset(&with_stored_endpoint, stored) {
                    body.insert("endpoint".into(), endpoint.clone());
                    moved_from = Some(stored["implementation"]["endpoint"].clone());
                } else {
                    immutable.extend(differing("contract", &wanted_contract, stored));
                }
            }
        }
        SkillBody::Composite(composite) => {
            if published["kind"] != "composite" {
                return SkillPlan::Refuse { fields: vec!["includes".to_owned()] };
            }
            let includes: Vec<String> = composite.includes().iter().map(ToString::to_string).collect();
            if published["includes"] != json!(includes) {
                immutable.push("includes".to_owned());
            }
            let tools: Vec<Value> = composite.tools().iter().map(ToolDeclaration::to_json).collect();
            if published["tools"] != Value::Array(tools) {
                immutable.push("tools".to_owned());
            }
        }
    }
    if !immutable.is_empty() {
        return SkillPlan::Refuse { fields: immutable };
    }
    if published["description"] != wanted.description() {
        body.insert("description".into(), json!(wanted.description()));
    }
    if body.is_empty() {
        return SkillPlan::Unchanged;
    }
    SkillPlan::Patch {
        id: published["id"].as_str().unwrap_or_default().to_owned(),
        row_version: published["rowVersion"].as_i64().unwrap_or_default(),
        fields: body.keys().cloned().collect(),
        body: Value::Object(body),
        moved_from,
    }
}

fn create_body(wanted: &Skill) -> Value {
    let mut body = json!({"name": wanted.name().as_str(), "version": wanted.version().as_str(), "description": wanted.description()});
    match wanted.body() {
        SkillBody::Leaf(leaf) => {
            body["sideEffects"] = json!(leaf.side_effects().as_str());
            body["riskLevel"] = json!(leaf.risk_level().as_str());
            body["contract"] = leaf.contract().to_normalized_json();
        }
        SkillBody::Composite(composite) => {
            let includes: Vec<String> = composite.includes().iter().map(ToString::to_string).collect();
            body["includes"] = json!(includes);
            body["tools"] = composite.tools().iter().map(ToolDeclaration::to_json).collect();
        }
    }
    body
}

/// Whether `wanted` is contained in `published`: objects compare only the wanted keys,
/// recursively; lists and scalars compare exactly.
pub fn subset(wanted: &Value, published: &Value) -> bool {
    match (wanted, published) {
        (Value::Object(wanted), Value::Object(published)) => {
            wanted.iter().all(|(key, value)| published.get(key).is_some_and(|stored| subset(value, stored)))
        }
        _ => wanted == published,
    }
}

/// The dotted paths under `path` where `wanted` is not contained in `published`, down to the
/// keys of `implementation`.
fn differing(path: &str, wanted: &Value, published: &Value) -> Vec<String> {
    match (wanted, published) {
        (Value::Object(wanted), Value::Object(published)) if path.matches('.').count() < 2 => wanted
            .iter()
            .filter(|(key, value)| !published.get(key.as_str()).is_some_and(|stored| subset(value, stored)))
            .flat_map(|(key, value)| {
                differing(&format!("{path}.{key}"), value, published.get(key.as_str()).unwrap_or(&Value::Null))
            })
            .collect(),
        _ => vec![path.to_owned()],
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::NormalizeOptions;

    fn skill(timeout: u32, endpoint: &str, description: &str) -> Skill {
        let document = json!({"apiVersion": "taimen.ai/v1", "kind": "Skill", "key": "a.b", "spec": {
            "version": "1", "description": description, "sideEffects": "external_read", "riskLevel": "low",
            "contract": {"inputs": {"type": "object"}, "outputs": {"type": "object"}, "timeoutSeconds": timeout,
                         "implementation": {"protocol": "http", "endpoint": endpoint}}}});
        Skill::from_document(&document, &NormalizeOptions::default()).expect("a skill")
    }

    fn published(skill: &Skill) -> Value {
        let SkillPlan::Create { body } = plan_skill(skill, None) else { panic!("absent means create") };
        let mut out = body;
        out["id"] = json!("id-1");
        out["rowVersion"] = json!(4);
        out["kind"] = json!("leaf");
        out["protocol"] = json!("http");
        out
    }

    #[test]
    fn a_changed_contract_is_refused_naming_the_field() {
        let stored = published(&skill(60, "https://a", "d"));
        assert_eq!(plan_skill(&skill(60, "https://a", "d"), Some(&stored)), SkillPlan::Unchanged);
        let SkillPlan::Refuse { fields } = plan_skill(&skill(30, "https://a", "d"), Some(&stored)) else {
            panic!("refused")
        };
        assert_eq!(fields, ["contract.timeoutSeconds"]);
        let SkillPlan::Refuse { fields } = plan_skill(&skill(30, "https://b", "d"), Some(&stored)) else {
            panic!("refused")
        };
        assert_eq!(
            fields,
            ["contract.timeoutSeconds", "contract.implementation.endpoint"],
            "not a move when more changed"
        );
    }

    #[test]
    fn an_endpoint_change_is_a_move_and_a_description_a_patch() {
        let stored = published(&skill(60, "https://a", "d"));
        let SkillPlan::Patch { id, row_version, fields, body, moved_from } =
            plan_skill(&skill(60, "https://b", "new"), Some(&stored))
        else {
            panic!("a patch")
        };
        assert_eq!((id.as_str(), row_version), ("id-1", 4));
        assert_eq!(fields, ["endpoint", "description"]);
        assert_eq!(body, json!({"endpoint": "https://b", "description": "new"}));
        assert_eq!(moved_from, Some(json!("https://a")));
    }

    #[test]
    fn subsets_compare_wanted_keys_only() {
        assert!(subset(&json!({"a": {"b": 1}}), &json!({"a": {"b": 1, "c": 2}, "d": 3})));
        assert!(!subset(&json!({"a": [1]}), &json!({"a": [1, 2]})));
        assert!(!subset(&json!({"a": null}), &json!({})));
    }
}
