//! Skill documents (`kind: Skill`): reading leaf and composite documents, the paths of their
//! problems, and the export form round-tripping through the reader.

use serde_json::{Value, json};
use skill_contract::{NormalizeOptions, Skill, SkillBody};

fn leaf_document() -> Value {
    json!({
        "apiVersion": "taimen.ai/v1",
        "kind": "Skill",
        "key": "claim.draft_reply",
        "spec": {
            "version": "1",
            "description": "Draft a reply to a customer claim for a person to review.",
            "sideEffects": "none",
            "riskLevel": "low",
            "contract": {
                "inputs": {"type": "object", "properties": {"claim": {"type": "string"}}, "required": ["claim"]},
                "outputs": {"type": "object", "properties": {"draft": {"type": "string"}}},
                "idempotency": "none",
                "timeoutSeconds": 120,
                "retryPolicy": {"maxAttempts": 1, "backoffSeconds": 0},
                "implementation": {"protocol": "local", "entrypoint": "claims_integration.skills:draft_reply"}
            }
        }
    })
}

fn composite_document() -> Value {
    json!({
        "apiVersion": "taimen.ai/v1",
        "kind": "Skill",
        "key": "claims.toolkit",
        "spec": {
            "version": "2",
            "description": "Everything an agent needs to answer claims.",
            "includes": ["claim.draft_reply@1", "claim.send_reply@1"],
            "tools": [{"name": "crm.lookup", "source": "mcp", "server": "stdio:crm", "writes": false, "riskLevel": "low"}]
        }
    })
}

fn read(document: &Value) -> Result<Skill, skill_contract::ContractError> {
    Skill::from_document(document, &NormalizeOptions::default())
}

/// `(code, field)` of every violation of `document`.
fn problems(document: &Value) -> Vec<(String, String)> {
    let error = read(document).expect_err("refused");
    error.violations().iter().map(|v| (v.code.as_str().to_owned(), v.field.clone())).collect()
}

#[test]
fn a_leaf_document_round_trips() {
    let skill = read(&leaf_document()).expect("valid");
    assert_eq!(skill.skill_ref().to_string(), "claim.draft_reply@1");
    assert!(matches!(skill.body(), SkillBody::Leaf(_)));
    assert_eq!(skill.to_document(), leaf_document());
    let keys: Vec<String> = skill.to_document().as_object().expect("object").keys().cloned().collect();
    assert_eq!(keys, ["apiVersion", "kind", "key", "spec"]);
}

#[test]
fn a_composite_document_round_trips() {
    let skill = read(&composite_document()).expect("valid");
    let SkillBody::Composite(composite) = skill.body() else { panic!("a composite") };
    assert_eq!(composite.includes().len(), 2);
    assert_eq!(composite.tools()[0].name(), "crm.lookup");
    let mut expected = composite_document();
    expected["spec"]["tools"][0]["hasSideEffects"] = json!(false);
    assert_eq!(skill.to_document(), expected);
    assert_eq!(read(&skill.to_document()).expect("reads back"), skill);
}

#[test]
fn the_wrapper_is_checked() {
    let mut doc = leaf_document();
    doc["apiVersion"] = json!("v2");
    doc["kind"] = json!("Agent");
    doc["key"] = json!("Claim.Draft");
    doc["extra"] = json!(1);
    assert_eq!(
        problems(&doc),
        [
            ("invalid_skill_document".into(), "document".into()),
            ("invalid_skill_document".into(), "apiVersion".into()),
            ("invalid_skill_document".into(), "kind".into()),
            ("invalid_skill_document".into(), "key".into()),
        ]
    );
    let error = read(&doc).expect_err("refused").to_string();
    assert!(error.contains("character 'C' at position 1"), "{error}");
}

#[test]
fn a_version_must_be_a_string() {
    let mut doc = leaf_document();
    doc["spec"]["version"] = json!(1.1);
    let error = read(&doc).expect_err("refused");
    assert_eq!(error.field(), "spec.version");
    assert!(error.to_string().contains("quoted string"), "{error}");
    doc["spec"]["version"] = json!("1 0");
    assert_eq!(problems(&doc), [("invalid_skill_document".into(), "spec.version".into())]);
}

#[test]
fn policy_columns_are_required_next_to_a_contract() {
    let mut doc = leaf_document();
    doc["spec"].as_object_mut().expect("spec").remove("sideEffects");
    doc["spec"]["riskLevel"] = json!("extreme");
    assert_eq!(
        problems(&doc),
        [
            ("invalid_skill_contract".into(), "spec.sideEffects".into()),
            ("invalid_skill_contract".into(), "spec.riskLevel".into()),
        ]
    );
    let error = read(&doc).expect_err("refused");
    assert_eq!(error.details()["allowed"], json!(["none", "external_read", "external_write"]));
}

#[test]
fn contract_problems_carry_their_document_path() {
    let mut doc = leaf_document();
    doc["spec"]["contract"]["timeoutSeconds"] = json!(9999);
    doc["spec"]["contract"]["bogus"] = json!(1);
    assert_eq!(
        problems(&doc),
        [
            ("invalid_skill_contract".into(), "spec.contract".into()),
            ("invalid_skill_contract".into(), "spec.contract.timeoutSeconds".into()),
        ]
    );
}

#[test]
fn the_safe_retry_rule_uses_the_declared_side_effects() {
    let mut doc = leaf_document();
    doc["spec"]["sideEffects"] = json!("external_write");
    doc["spec"]["contract"]["retryPolicy"]["maxAttempts"] = json!(2);
    assert_eq!(problems(&doc), [("invalid_skill_contract".into(), "spec.contract.retryPolicy.maxAttempts".into())]);
}

#[test]
fn leaf_and_composite_fields_do_not_mix() {
    let mut doc = leaf_document();
    doc["spec"]["includes"] = json!(["a@1"]);
    doc["spec"]["inputSchema"] = json!({"type": "object"});
    doc["spec"]["protocol"] = json!("http");
    let found = problems(&doc);
    assert!(found.contains(&("invalid_skill_document".into(), "spec.includes".into())), "{found:?}");
    assert!(found.contains(&("invalid_skill_document".into(), "spec.inputSchema".into())), "{found:?}");
    assert!(found.contains(&("invalid_skill_contract".into(), "spec.protocol".into())), "{found:?}");

    let mut composite = composite_document();
    composite["spec"]["sideEffects"] = json!("none");
    assert_eq!(problems(&composite), [("invalid_skill_document".into(), "spec.sideEffects".into())]);
}

#[test]
fn a_composite_must_hold_something() {
    let mut doc = composite_document();
    doc["spec"]["includes"] = json!([]);
    doc["spec"].as_object_mut().expect("spec").remove("tools");
    let error = read(&doc).expect_err("refused");
    assert_eq!((error.code(), error.field()), ("invalid_skill_document", "spec"));
    assert!(error.to_string().contains("a contract (a leaf skill), or includes or tools"), "{error}");
}

#[test]
fn composite_includes_and_tools_are_checked() {
    let mut doc = composite_document();
    doc["spec"]["includes"] = json!(["claim.draft_reply", 3]);
    doc["spec"]["tools"] = json!([
        {"name": "crm.lookup", "writes": false},
        {"name": "crm.lookup", "writes": true},
        {"name": "x", "source": "skill", "writes": false},
        {"name": "y"},
        {"name": "z", "writes": false, "riskLevel": "huge"}
    ]);
    let error = read(&doc).expect_err("refused");
    let fields: Vec<(&str, Option<usize>)> = error.violations().iter().map(|v| (v.field.as_str(), v.index)).collect();
    assert_eq!(
        fields,
        [
            ("spec.includes", Some(0)),
            ("spec.includes", Some(1)),
            ("spec.tools", None),
            ("spec.tools[2].source", None),
            ("spec.tools[3].writes", None),
            ("spec.tools[4].riskLevel", None),
        ]
    );
    assert!(error.to_string().contains("no `@`"), "{error}");
}

#[test]
fn a_foreign_write_tool_has_side_effects() {
    let mut doc = composite_document();
    doc["spec"]["tools"] =
        json!([{"name": "crm.update", "writes": true, "hasSideEffects": false, "riskLevel": "high"}]);
    let skill = read(&doc).expect("valid");
    let SkillBody::Composite(composite) = skill.body() else { panic!("a composite") };
    let tool = &composite.tools()[0];
    assert!(tool.writes() && tool.has_side_effects());
    assert_eq!(tool.source(), "mcp", "the default source");
}

#[test]
fn skills_serialize_as_their_document() {
    let skill = read(&leaf_document()).expect("valid");
    assert_eq!(serde_json::to_value(&skill).expect("serializes"), leaf_document());
    let back: Skill = serde_json::from_value(leaf_document()).expect("deserializes");
    assert_eq!(back, skill);
}
