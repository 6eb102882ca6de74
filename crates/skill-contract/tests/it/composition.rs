//! Composition and the protocol types: resolving include chains, diamonds, cycles and missing
//! includes; metadata of read-only, write and mixed tool sets; definitions, gating, results and
//! the error mapping.

use std::collections::BTreeMap;

use serde_json::json;
use skill_contract::composite::{ResolveError, resolve, resolve_skill};
use skill_contract::{
    ErrorClass, NormalizeOptions, ResolvedToolEntry, RiskLevel, Skill, SkillDefinition, SkillErrorType, SkillMetadata,
    SkillRef, SkillResult, map_tool_error,
};

fn leaf(key: &str, side_effects: &str, risk: &str) -> Skill {
    let (name, version) = key.split_once('@').expect("name@version");
    Skill::from_document(
        &json!({
            "apiVersion": "taimen.ai/v1", "kind": "Skill", "key": name,
            "spec": {
                "version": version, "description": format!("leaf {name}"),
                "sideEffects": side_effects, "riskLevel": risk,
                "contract": {
                    "inputs": {"type": "object"}, "outputs": {"type": "object"},
                    "implementation": {"protocol": "local", "entrypoint": "pkg.skills:run"}
                }
            }
        }),
        &NormalizeOptions::default(),
    )
    .expect("valid leaf")
}

fn composite(key: &str, includes: &[&str], tools: serde_json::Value) -> Skill {
    let (name, version) = key.split_once('@').expect("name@version");
    let mut spec = json!({"version": version, "description": format!("composite {name}"), "includes": includes});
    if !tools.is_null() {
        spec["tools"] = tools;
    }
    Skill::from_document(
        &json!({"apiVersion": "taimen.ai/v1", "kind": "Skill", "key": name, "spec": spec}),
        &NormalizeOptions::default(),
    )
    .expect("valid composite")
}

fn catalog(skills: Vec<Skill>) -> BTreeMap<SkillRef, Skill> {
    skills.into_iter().map(|s| (s.skill_ref(), s)).collect()
}

fn r(text: &str) -> SkillRef {
    text.parse().expect("valid ref")
}

fn names(tools: &[ResolvedToolEntry]) -> Vec<&str> {
    tools.iter().map(ResolvedToolEntry::name).collect()
}

#[test]
fn a_leaf_resolves_to_itself() {
    let skills = catalog(vec![leaf("claim.send@1", "external_write", "high")]);
    let resolution = resolve(&r("claim.send@1"), &skills).expect("resolves");
    let tool = &resolution.tools()[0];
    assert_eq!(
        (tool.name(), tool.source_type(), tool.writes(), tool.tool().has_side_effects()),
        ("claim.send", "skill", true, true)
    );
    assert_eq!(tool.tool().risk_level(), RiskLevel::High);
}

#[test]
fn include_chains_flatten_in_order() {
    let skills = catalog(vec![
        leaf("a@1", "none", "low"),
        leaf("b@1", "external_read", "low"),
        composite("inner@1", &["b@1"], json!([{"name": "crm.search", "writes": false}])),
        composite("outer@1", &["a@1", "inner@1"], json!(null)),
    ]);
    let resolution = resolve(&r("outer@1"), &skills).expect("resolves");
    assert_eq!(names(resolution.tools()), ["a", "b", "crm.search"]);
    let visited: Vec<String> = resolution.skills().iter().map(ToString::to_string).collect();
    assert_eq!(visited, ["outer@1", "a@1", "inner@1", "b@1"]);
    assert_eq!(resolution.tools()[2].skill().to_string(), "inner@1", "a foreign tool belongs to its declarer");
}

#[test]
fn diamonds_are_deduplicated() {
    let shared_tool = json!([{"name": "crm.search", "server": "stdio:crm", "writes": false}]);
    let skills = catalog(vec![
        leaf("base@1", "none", "low"),
        composite("left@1", &["base@1"], shared_tool.clone()),
        composite("right@1", &["base@1"], shared_tool),
        composite("top@1", &["left@1", "right@1"], json!(null)),
    ]);
    let resolution = resolve(&r("top@1"), &skills).expect("resolves");
    assert_eq!(names(resolution.tools()), ["base", "crm.search"]);
    assert_eq!(resolution.skills().len(), 4, "base is visited once");
}

#[test]
fn cycles_of_length_one_two_and_three_are_named() {
    let cases: [(Vec<Skill>, &str, &str); 3] = [
        (vec![composite("a@1", &["a@1"], json!(null))], "a@1", "include cycle: a@1 -> a@1"),
        (
            vec![composite("a@1", &["b@1"], json!(null)), composite("b@1", &["a@1"], json!(null))],
            "a@1",
            "include cycle: a@1 -> b@1 -> a@1",
        ),
        (
            vec![
                leaf("x@1", "none", "low"),
                composite("a@1", &["x@1", "b@1"], json!(null)),
                composite("b@1", &["c@1"], json!(null)),
                composite("c@1", &["a@1"], json!(null)),
            ],
            "a@1",
            "include cycle: a@1 -> b@1 -> c@1 -> a@1",
        ),
    ];
    for (skills, root, message) in cases {
        let error = resolve(&r(root), &catalog(skills)).expect_err("a cycle");
        assert!(matches!(error, ResolveError::Cycle { .. }), "{error}");
        assert_eq!(error.to_string(), message);
        let wire = error.to_skill_error(root);
        assert_eq!(wire.error_type(), SkillErrorType::CycleDetected);
        assert_eq!(wire.code(), "cycle_detected");
    }
}

#[test]
fn a_missing_include_is_a_resolution_failure_naming_it() {
    let skills = catalog(vec![composite("top@1", &["gone@3"], json!(null))]);
    let error = resolve(&r("top@1"), &skills).expect_err("missing");
    assert_eq!(error, ResolveError::MissingInclude { include: r("gone@3"), included_by: r("top@1") });
    let wire = error.to_skill_error("top");
    assert_eq!(wire.error_type(), SkillErrorType::ResolutionFailure);
    assert_eq!(wire.details().expect("details")["include"], json!("gone@3"));
    assert!(wire.message().contains("top@1 includes gone@3"), "{}", wire.message());
}

#[test]
fn an_unknown_root_is_skill_not_found() {
    let error = resolve(&r("nobody@1"), &catalog(vec![])).expect_err("absent");
    assert_eq!(error.error_type(), SkillErrorType::SkillNotFound);
    assert_eq!(error.to_skill_error("nobody").code(), "skill_not_found");
}

#[test]
fn two_different_tools_under_one_name_conflict() {
    let skills = catalog(vec![
        leaf("a@1", "none", "low"),
        leaf("a@2", "none", "low"),
        composite("both@1", &["a@1", "a@2"], json!(null)),
    ]);
    let error = resolve(&r("both@1"), &skills).expect_err("conflict");
    assert_eq!(
        error.to_string(),
        "two different tools are named `a`: one from a@1, one from a@2; a tool set needs unique names"
    );
    assert_eq!(error.error_type(), SkillErrorType::ResolutionFailure);

    let redeclared = catalog(vec![
        composite("x@1", &[], json!([{"name": "crm.search", "writes": false}])),
        composite("y@1", &["x@1"], json!([{"name": "crm.search", "writes": true}])),
    ]);
    assert!(matches!(resolve(&r("y@1"), &redeclared), Err(ResolveError::ToolConflict { .. })));
}

#[test]
fn a_skill_in_hand_resolves_against_the_catalog() {
    let skills = vec![leaf("a@1", "none", "low")];
    let draft = composite("new@1", &["a@1"], json!(null));
    assert_eq!(names(resolve_skill(&draft, &skills).expect("resolves").tools()), ["a"]);
}

fn metadata_of(skills: Vec<Skill>, root: &str) -> (Skill, Vec<ResolvedToolEntry>, SkillMetadata) {
    let skills = catalog(skills);
    let tools = resolve(&r(root), &skills).expect("resolves").into_tools();
    let skill = skills[&r(root)].clone();
    let metadata = SkillMetadata::from_skill(&skill, &tools);
    (skill, tools, metadata)
}

#[test]
fn metadata_of_a_read_only_set() {
    let (_, _, metadata) = metadata_of(
        vec![
            leaf("a@1", "none", "low"),
            leaf("b@1", "external_read", "medium"),
            composite("ro@1", &["a@1", "b@1"], json!([{"name": "crm.search", "source": "mcp", "writes": false}])),
        ],
        "ro@1",
    );
    assert_eq!(metadata.tool_count(), 3);
    assert_eq!(metadata.capability_summary().read_tools(), 3);
    assert_eq!(metadata.capability_summary().max_risk_level(), Some(RiskLevel::Medium));
    assert_eq!(metadata.source_types(), ["mcp", "skill"]);
    assert!(metadata.read_only() && !metadata.writes());
}

#[test]
fn metadata_of_a_write_set_and_a_mixed_set() {
    let (_, _, writes) = metadata_of(vec![leaf("w@1", "external_write", "high")], "w@1");
    assert!(writes.writes() && !writes.read_only());
    assert_eq!(writes.capability_summary().write_tools(), 1);

    let (_, _, mixed) = metadata_of(
        vec![
            leaf("r@1", "none", "low"),
            leaf("w@1", "external_write", "high"),
            composite("m@1", &["r@1", "w@1"], json!(null)),
        ],
        "m@1",
    );
    assert_eq!((mixed.capability_summary().read_tools(), mixed.capability_summary().write_tools()), (1, 1));
    assert!(mixed.writes() && !mixed.read_only());

    let (_, _, side_effects) = metadata_of(
        vec![composite("notify@1", &[], json!([{"name": "chat.post", "writes": false, "hasSideEffects": true}]))],
        "notify@1",
    );
    assert_eq!(side_effects.capability_summary().write_tools(), 0);
    assert!(side_effects.writes() && !side_effects.read_only(), "side effects alone make a skill non-read-only");
}

#[test]
fn metadata_defaults_and_consistency_on_the_wire() {
    let metadata: SkillMetadata =
        serde_json::from_value(json!({"name": "local/my-skill", "description": "d"})).expect("defaults");
    assert_eq!(metadata.version().as_str(), "0.0.0");
    assert_eq!((metadata.tool_count(), metadata.writes(), metadata.read_only()), (0, false, true));
    assert!(metadata.source_types().is_empty());

    let inconsistent = json!({"name": "x", "description": "d", "writes": true, "read_only": true});
    let error = serde_json::from_value::<SkillMetadata>(inconsistent).expect_err("refused").to_string();
    assert!(error.contains("disagree with the capability summary"), "{error}");

    let (_, _, metadata) = metadata_of(vec![leaf("w@1", "external_write", "high")], "w@1");
    let wire = serde_json::to_value(&metadata).expect("serializes");
    assert_eq!(
        wire["capability_summary"],
        json!({"read_tools": 0, "write_tools": 1, "has_side_effects": true, "max_risk_level": "high"})
    );
    assert_eq!(serde_json::from_value::<SkillMetadata>(wire).expect("reads back"), metadata);
}

#[test]
fn a_definition_of_a_leaf_carries_its_schemas() {
    let (skill, tools, _) = metadata_of(vec![leaf("a@1", "none", "low")], "a@1");
    let definition = SkillDefinition::build(skill, tools).expect("valid");
    assert_eq!(definition.input_schema(), Some(&json!({"type": "object"})));
    let wire = serde_json::to_value(&definition).expect("serializes");
    assert_eq!(wire["skill"]["key"], json!("a"));
    assert_eq!(serde_json::from_value::<SkillDefinition>(wire).expect("reads back"), definition);
}

#[test]
fn a_definition_refuses_schemas_without_type() {
    let (skill, tools, metadata) = metadata_of(vec![leaf("a@1", "none", "low")], "a@1");
    let error =
        SkillDefinition::new(skill, tools, metadata, Some(json!({"properties": {}})), None).expect_err("refused");
    assert_eq!(error.to_string(), "input_schema must be a JSON Schema object with a \"type\" key");
    assert_eq!(error.to_skill_error("a").error_type(), SkillErrorType::ValidationError);
}

#[test]
fn a_read_only_definition_refuses_a_write_tool() {
    let (skill, tools, _) = metadata_of(
        vec![
            leaf("r@1", "none", "low"),
            leaf("w@1", "external_write", "high"),
            composite("m@1", &["r@1", "w@1"], json!(null)),
        ],
        "m@1",
    );
    let read_only: SkillMetadata = serde_json::from_value(json!({
        "name": "m", "description": "d", "version": "1", "tool_count": 1,
        "capability_summary": {"read_tools": 1, "write_tools": 0, "has_side_effects": false},
        "writes": false, "read_only": true
    }))
    .expect("consistent on its own");
    let error = SkillDefinition::new(skill, tools, read_only, None, None).expect_err("refused");
    assert_eq!(error.to_string(), "m@1 is marked read-only but resolves to `w` (from w@1), which writes");
}

#[test]
fn gating_lets_calls_reach_only_the_skills_tools() {
    let (skill, tools, _) =
        metadata_of(vec![leaf("r@1", "none", "low"), composite("ro@1", &["r@1"], json!(null))], "ro@1");
    let definition = SkillDefinition::build(skill, tools).expect("valid");
    assert_eq!(definition.gate("r").expect("allowed").name(), "r");
    let denied = definition.gate("w").expect_err("not in the set");
    assert_eq!((denied.error_type(), denied.tool_name()), (SkillErrorType::PermissionDenied, Some("w")));
}

#[test]
fn results_succeed_or_fail_never_both() {
    let ok = SkillResult::succeeded("math.add", "math.add", json!({"sum": 3}), 1.5);
    let wire = serde_json::to_value(&ok).expect("serializes");
    assert_eq!(
        wire,
        json!({"skill_name": "math.add", "tool_name": "math.add", "success": true, "output_data": {"sum": 3},
               "error": null, "duration_ms": 1.5, "resource_changes": []})
    );
    let minimal: SkillResult =
        serde_json::from_value(json!({"skill_name": "s", "tool_name": "t", "success": true})).expect("defaults");
    assert_eq!((minimal.output_data(), minimal.duration_ms()), (&json!(null), 0.0));

    for bad in [
        json!({"skill_name": "s", "tool_name": "t", "success": false}),
        json!({"skill_name": "s", "tool_name": "t", "success": true, "error": {"code": "timeout"}}),
        json!({"skill_name": "s", "tool_name": "t", "success": true, "duration_ms": -1.0}),
    ] {
        assert!(serde_json::from_value::<SkillResult>(bad.clone()).is_err(), "{bad}");
    }
    let failed = SkillResult::failed("s", "t", skill_contract::SkillError::new("timeout"), f64::NAN)
        .with_resource_changes(vec![json!({"kind": "ticket", "id": "T-1"}).as_object().expect("object").clone()]);
    assert_eq!((failed.success(), failed.duration_ms()), (false, 0.0));
    assert_eq!(failed.resource_changes().len(), 1);
}

#[test]
fn tool_errors_map_by_the_protocol_table() {
    let cases = [
        (ErrorClass::Value, "include cycle found", SkillErrorType::CycleDetected),
        (ErrorClass::Value, "skill x not found", SkillErrorType::SkillNotFound),
        (ErrorClass::Value, "bad include", SkillErrorType::ResolutionFailure),
        (ErrorClass::Value, "activation failed", SkillErrorType::ResolutionFailure),
        (ErrorClass::Permission, "not found", SkillErrorType::PermissionDenied),
        (ErrorClass::Validation, "cycle", SkillErrorType::ValidationError),
        (ErrorClass::Other, "tool activation failed", SkillErrorType::ToolActivationFailure),
        (ErrorClass::Other, "boom", SkillErrorType::ToolExecutionFailure),
    ];
    for (class, message, expected) in cases {
        let error = map_tool_error(class, message, "local/my-skill", None);
        assert_eq!(error.error_type(), expected, "{class:?} {message}");
        assert_eq!((error.skill_name(), error.tool_name(), error.message()), ("local/my-skill", None, message));
    }
}

#[test]
fn error_classes_of_known_errors() {
    let io = std::io::Error::new(std::io::ErrorKind::PermissionDenied, "no");
    assert_eq!(ErrorClass::of(&io), ErrorClass::Permission);
    let json_error = serde_json::from_str::<u8>("x").expect_err("bad json");
    assert_eq!(ErrorClass::of(&json_error), ErrorClass::Validation);
    let ref_error = "x".parse::<SkillRef>().expect_err("bad ref");
    assert_eq!(ErrorClass::of(&ref_error), ErrorClass::Value);
    let cycle = ResolveError::Cycle { cycle: vec![r("a@1"), r("a@1")] };
    let mapped = map_tool_error(ErrorClass::of(&cycle), &cycle.to_string(), "a", Some("a"));
    assert_eq!(mapped.error_type(), SkillErrorType::CycleDetected);
    assert_eq!(ErrorClass::of(&std::fmt::Error), ErrorClass::Other);
}
