//! Contract v1: normalization fills every default, and every rule has a rejection that names
//! its code and field.

use serde_json::{Value, json};
use skill_contract::{ContractError, NormalizeOptions, SideEffects, normalize};

fn base() -> Value {
    json!({
        "inputs": {"type": "object", "properties": {"a": {"type": "integer"}}},
        "outputs": {"type": "object"},
        "implementation": {"protocol": "local", "entrypoint": "claims.skills:draft_reply"}
    })
}

/// `base()` with `pointer` set to `value` (`None` removes the key).
fn with(pointer: &str, value: Option<Value>) -> Value {
    let mut doc = base();
    let (parent, key) = pointer.rsplit_once('/').expect("pointer has a parent");
    let mut target = &mut doc;
    for part in parent.split('/').filter(|p| !p.is_empty()) {
        target = target.as_object_mut().expect("object").entry(part).or_insert_with(|| json!({}));
    }
    let map = target.as_object_mut().expect("object");
    match value {
        Some(value) => map.insert(key.to_owned(), value),
        None => map.remove(key),
    };
    doc
}

fn rejected(raw: &Value, side_effects: SideEffects) -> ContractError {
    normalize(raw, side_effects, &NormalizeOptions::default()).expect_err("the contract is refused")
}

/// Asserts that `raw` is refused with exactly one violation of `code` at `field`, whose message
/// contains `says`.
#[track_caller]
fn check(raw: Value, code: &str, field: &str, says: &str) {
    let error = rejected(&raw, SideEffects::None);
    assert_eq!(error.violations().len(), 1, "one violation expected: {error}");
    assert_eq!((error.code(), error.field()), (code, field), "{error}");
    assert!(error.to_string().contains(says), "`{error}` should contain `{says}`");
}

#[test]
fn normalization_fills_every_default() {
    let contract = normalize(&base(), SideEffects::None, &NormalizeOptions::default()).expect("valid");
    assert_eq!(
        contract.to_normalized_json(),
        json!({
            "inputs": base()["inputs"],
            "outputs": {"type": "object"},
            "idempotency": "none",
            "timeoutSeconds": 60,
            "retryPolicy": {"maxAttempts": 1, "backoffSeconds": 0},
            "requiredPermissions": [],
            "preconditions": [],
            "postconditions": [],
            "costModel": null,
            "implementation": {"protocol": "local", "endpoint": null, "auth": null, "entrypoint": "claims.skills:draft_reply"}
        })
    );
    let export = contract.to_export_json();
    let keys: Vec<&String> = export.as_object().expect("object").keys().collect();
    assert_eq!(keys, ["inputs", "outputs", "idempotency", "timeoutSeconds", "retryPolicy", "implementation"]);
}

#[test]
fn export_keeps_the_reference_key_order_with_every_field() {
    let mut raw = base();
    raw["costModel"] = json!({"unit": "request", "estimate": 2});
    raw["requiredPermissions"] = json!(["claims.write", "claims.read", "claims.write"]);
    raw["idempotency"] = json!("required");
    raw["retryPolicy"] = json!({"backoffSeconds": 5, "maxAttempts": 3});
    raw["implementation"] =
        json!({"auth": {"audience": "claims-skills"}, "endpoint": "https://svc/skills/a@1", "protocol": "http"});
    let contract = normalize(&raw, SideEffects::ExternalWrite, &NormalizeOptions::default()).expect("valid");
    let export = contract.to_export_json();
    let keys: Vec<&String> = export.as_object().expect("object").keys().collect();
    assert_eq!(
        keys,
        [
            "inputs",
            "outputs",
            "idempotency",
            "timeoutSeconds",
            "retryPolicy",
            "requiredPermissions",
            "costModel",
            "implementation"
        ]
    );
    assert_eq!(export["requiredPermissions"], json!(["claims.read", "claims.write"]));
    assert_eq!(export["retryPolicy"], json!({"maxAttempts": 3, "backoffSeconds": 5}));
    assert_eq!(export["costModel"], json!({"unit": "request", "estimate": 2}));
    assert_eq!(
        export["implementation"],
        json!({"protocol": "http", "endpoint": "https://svc/skills/a@1", "auth": {"audience": "claims-skills"}})
    );
}

#[test]
fn contract_must_be_an_object() {
    check(json!([1]), "invalid_skill_contract", "contract", "expected an object, got an array");
}

#[test]
fn unknown_top_level_keys_are_refused() {
    let error = rejected(&with("/timeout", Some(json!(5))), SideEffects::None);
    assert_eq!((error.code(), error.field()), ("invalid_skill_contract", "contract"));
    assert_eq!(error.details()["unknown"], json!(["timeout"]));
}

#[test]
fn schemas_are_required_objects() {
    check(with("/inputs", None), "invalid_skill_contract", "inputs", "is required");
    check(with("/outputs", Some(json!("object"))), "invalid_skill_contract", "outputs", "got a string");
}

#[test]
fn schemas_must_be_self_contained_2020_12_documents() {
    check(
        with("/inputs", Some(json!({"$schema": "http://json-schema.org/draft-07/schema#", "type": "object"}))),
        "invalid_json_schema",
        "inputs",
        "`$schema` must be https://json-schema.org/draft/2020-12/schema",
    );
    check(
        with("/outputs", Some(json!({"type": "object", "properties": {"a": {"$ref": "https://x.example/a.json"}}}))),
        "invalid_json_schema",
        "outputs",
        "points outside the document",
    );
    check(with("/outputs", Some(json!({"type": "objekt"}))), "invalid_json_schema", "outputs", "at /type");
}

#[test]
fn idempotency_is_a_closed_word() {
    let error = rejected(&with("/idempotency", Some(json!("sometimes"))), SideEffects::None);
    assert_eq!((error.code(), error.field()), ("invalid_skill_contract", "idempotency"));
    assert_eq!(error.details()["allowed"], json!(["required", "natural", "none"]));
}

#[test]
fn timeout_is_an_integer_from_1_to_3600() {
    for bad in [json!(0), json!(3601), json!(-5)] {
        check(with("/timeoutSeconds", Some(bad)), "invalid_skill_contract", "timeoutSeconds", "from 1 to 3600");
    }
    check(with("/timeoutSeconds", Some(json!(true))), "invalid_skill_contract", "timeoutSeconds", "got a boolean");
    check(with("/timeoutSeconds", Some(json!(60.5))), "invalid_skill_contract", "timeoutSeconds", "got a float");
    check(with("/timeoutSeconds", Some(json!("60"))), "invalid_skill_contract", "timeoutSeconds", "got a string");
    for good in [1, 3600] {
        let contract = normalize(&with("/timeoutSeconds", Some(json!(good))), SideEffects::None, &Default::default());
        assert_eq!(contract.expect("in range").timeout_seconds(), good);
    }
}

#[test]
fn retry_policy_ranges_and_keys() {
    check(with("/retryPolicy", Some(json!(3))), "invalid_skill_contract", "retryPolicy", "expected an object");
    check(
        with("/retryPolicy/maxAttempts", Some(json!(0))),
        "invalid_skill_contract",
        "retryPolicy.maxAttempts",
        "from 1 to 10",
    );
    check(
        with("/retryPolicy/maxAttempts", Some(json!(11))),
        "invalid_skill_contract",
        "retryPolicy.maxAttempts",
        "from 1 to 10",
    );
    check(
        with("/retryPolicy/backoffSeconds", Some(json!(3601))),
        "invalid_skill_contract",
        "retryPolicy.backoffSeconds",
        "from 0 to 3600",
    );
    check(with("/retryPolicy/jitter", Some(json!(1))), "invalid_skill_contract", "retryPolicy", "unknown key `jitter`");
    let contract =
        normalize(&with("/retryPolicy/maxAttempts", Some(json!(10))), SideEffects::None, &Default::default())
            .expect("in range");
    assert_eq!((contract.retry_policy().max_attempts(), contract.retry_policy().backoff_seconds()), (10, 0));
}

#[test]
fn permissions_are_dotted_words_sorted_and_unique() {
    check(
        with("/requiredPermissions", Some(json!("claims.write"))),
        "invalid_skill_contract",
        "requiredPermissions",
        "expected a list",
    );
    let error =
        rejected(&with("/requiredPermissions", Some(json!(["claims.write", "Claims Write"]))), SideEffects::None);
    assert_eq!((error.code(), error.field()), ("invalid_skill_contract", "requiredPermissions"));
    assert_eq!(error.details()["index"], json!(1));
    let many: Vec<String> = (0..51).map(|i| format!("p.n{i}")).collect();
    check(
        with("/requiredPermissions", Some(json!(many))),
        "invalid_skill_contract",
        "requiredPermissions",
        "at most 50",
    );
    let contract = normalize(
        &with("/requiredPermissions", Some(json!(["skills.invoke", "claims.write", "skills.invoke"]))),
        SideEffects::None,
        &Default::default(),
    )
    .expect("valid");
    assert_eq!(contract.required_permissions(), ["claims.write", "skills.invoke"]);
}

#[test]
fn conditions_must_be_empty_at_publication() {
    check(
        with("/preconditions", Some(json!(["x > 0"]))),
        "unsupported_skill_condition",
        "preconditions",
        "must be empty",
    );
    check(
        with("/postconditions", Some(json!([{"x": 1}]))),
        "unsupported_skill_condition",
        "postconditions",
        "must be empty",
    );
    check(with("/preconditions", Some(json!("x"))), "invalid_skill_contract", "preconditions", "expected a list");
    let kept = normalize(
        &with("/preconditions", Some(json!(["x > 0"]))),
        SideEffects::None,
        &NormalizeOptions { allow_conditions: true, ..Default::default() },
    )
    .expect("kept when reading");
    assert_eq!(kept.preconditions(), [json!("x > 0")]);
    assert_eq!(kept.to_export_json()["preconditions"], json!(["x > 0"]));
}

#[test]
fn cost_model_is_unit_and_optional_estimate() {
    check(with("/costModel", Some(json!("cheap"))), "invalid_skill_contract", "costModel", "expected an object");
    check(with("/costModel", Some(json!({"estimate": 1}))), "invalid_skill_contract", "costModel.unit", "is required");
    check(with("/costModel", Some(json!({"unit": " "}))), "invalid_skill_contract", "costModel.unit", "non-empty");
    check(
        with("/costModel", Some(json!({"unit": "page", "estimate": -1}))),
        "invalid_skill_contract",
        "costModel.estimate",
        "negative",
    );
    check(
        with("/costModel", Some(json!({"unit": "page", "estimate": "1"}))),
        "invalid_skill_contract",
        "costModel.estimate",
        "got a string",
    );
    check(
        with("/costModel", Some(json!({"unit": "page", "currency": "RUB"}))),
        "invalid_skill_contract",
        "costModel",
        "unknown key `currency`",
    );
    for estimate in [json!(3), json!(0.25)] {
        let raw = with("/costModel", Some(json!({"unit": "page", "estimate": estimate.clone()})));
        let contract = normalize(&raw, SideEffects::None, &Default::default()).expect("valid");
        assert_eq!(contract.to_export_json()["costModel"]["estimate"], estimate, "kept as written");
    }
}

#[test]
fn implementation_shape() {
    check(with("/implementation", None), "invalid_skill_contract", "implementation", "is required");
    check(
        with("/implementation", Some(json!("local"))),
        "invalid_skill_contract",
        "implementation",
        "expected an object",
    );
    check(
        with("/implementation/module", Some(json!("x"))),
        "invalid_skill_contract",
        "implementation",
        "unknown key `module`",
    );
    check(
        with("/implementation/protocol", None),
        "invalid_skill_contract",
        "implementation.protocol",
        "http, local, mcp",
    );
    let error = rejected(&with("/implementation/protocol", Some(json!("opencode"))), SideEffects::None);
    assert_eq!(error.field(), "implementation.protocol");
    assert_eq!(error.details()["allowed"], json!(["http", "local", "mcp"]));
}

#[test]
fn local_needs_a_module_function_entrypoint_and_nothing_else() {
    let local = |entrypoint: Value| json!({"protocol": "local", "entrypoint": entrypoint});
    check(
        with("/implementation", Some(json!({"protocol": "local"}))),
        "invalid_skill_contract",
        "implementation.entrypoint",
        "is required",
    );
    for bad in ["claims.skills", "claims.skills:", "claims..skills:f", "1claims:f", "claims-x:f", ":f"] {
        check(
            with("/implementation", Some(local(json!(bad)))),
            "invalid_skill_contract",
            "implementation.entrypoint",
            "module.path:function",
        );
    }
    let mut doc = local(json!("claims.skills:f"));
    doc["endpoint"] = json!("https://x");
    check(with("/implementation", Some(doc)), "invalid_skill_contract", "implementation.endpoint", "has no endpoint");
    let mut doc = local(json!("claims.skills:f"));
    doc["auth"] = json!({"audience": "a"});
    check(with("/implementation", Some(doc)), "invalid_skill_contract", "implementation.auth", "has no auth");
    let normalized_form = json!({"protocol": "local", "endpoint": null, "auth": null, "entrypoint": "claims.skills:f"});
    assert!(normalize(&with("/implementation", Some(normalized_form)), SideEffects::None, &Default::default()).is_ok());
}

#[test]
fn http_needs_a_url_and_no_entrypoint() {
    let http = |endpoint: &str| json!({"protocol": "http", "endpoint": endpoint});
    check(
        with("/implementation", Some(json!({"protocol": "http"}))),
        "invalid_skill_contract",
        "implementation.endpoint",
        "is required",
    );
    for bad in ["ftp://svc/x", "svc/x", "https://", "https:///x", "https://svc/a b"] {
        check(
            with("/implementation", Some(http(bad))),
            "invalid_skill_contract",
            "implementation.endpoint",
            "http:// or https://",
        );
    }
    let long = format!("https://svc/{}", "a".repeat(2000));
    check(
        with("/implementation", Some(http(&long))),
        "invalid_skill_contract",
        "implementation.endpoint",
        "at most 2000",
    );
    let mut doc = http("https://svc/x");
    doc["entrypoint"] = json!("x:y");
    check(
        with("/implementation", Some(doc)),
        "invalid_skill_contract",
        "implementation.entrypoint",
        "has no entrypoint",
    );
}

#[test]
fn placeholders_need_the_option() {
    let raw = with("/implementation", Some(json!({"protocol": "http", "endpoint": "${CLAIMS_SKILLS_URL}/skills/a@1"})));
    check(raw.clone(), "invalid_skill_contract", "implementation.endpoint", "http:// or https://");
    let options = NormalizeOptions { allow_placeholders: true, ..Default::default() };
    let contract = normalize(&raw, SideEffects::None, &options).expect("placeholder allowed");
    assert_eq!(contract.implementation().endpoint(), Some("${CLAIMS_SKILLS_URL}/skills/a@1"));
    let bad = with("/implementation", Some(json!({"protocol": "http", "endpoint": "${}/x"})));
    assert!(normalize(&bad, SideEffects::None, &options).is_err());
}

#[test]
fn mcp_needs_an_endpoint_and_a_tool() {
    let mcp = |endpoint: &str, tool: Value| json!({"protocol": "mcp", "endpoint": endpoint, "entrypoint": tool});
    for endpoint in ["stdio:crm", "https://mcp.example/mcp"] {
        let raw = with("/implementation", Some(mcp(endpoint, json!("claim.draft_reply"))));
        assert!(normalize(&raw, SideEffects::None, &Default::default()).is_ok(), "{endpoint}");
    }
    check(
        with("/implementation", Some(mcp("stdio:", json!("t")))),
        "invalid_skill_contract",
        "implementation.endpoint",
        "stdio:<name>",
    );
    check(
        with("/implementation", Some(mcp("tcp://x", json!("t")))),
        "invalid_skill_contract",
        "implementation.endpoint",
        "stdio:<name>",
    );
    check(
        with("/implementation", Some(json!({"protocol": "mcp", "endpoint": "stdio:crm"}))),
        "invalid_skill_contract",
        "implementation.entrypoint",
        "MCP tool name",
    );
    check(
        with("/implementation", Some(mcp("stdio:crm", json!("-x")))),
        "invalid_skill_contract",
        "implementation.entrypoint",
        "MCP tool name",
    );
}

#[test]
fn auth_names_an_audience_and_scopes_never_a_secret() {
    let http = |auth: Value| {
        with("/implementation", Some(json!({"protocol": "http", "endpoint": "https://svc/x", "auth": auth})))
    };
    check(http(json!("claims")), "invalid_skill_contract", "implementation.auth", "expected an object");
    check(http(json!({"scopes": ["a"]})), "invalid_skill_contract", "implementation.auth.audience", "is required");
    check(
        http(json!({"audience": "a", "realm": "x"})),
        "invalid_skill_contract",
        "implementation.auth.realm",
        "unknown key",
    );
    check(
        http(json!({"audience": "a", "token": "x"})),
        "secret_material_rejected",
        "implementation.auth.token",
        "credential",
    );
    check(
        http(json!({"audience": "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ4In0.c2lnbmF0dXJlMTIz"})),
        "secret_material_rejected",
        "implementation.auth.audience",
        "credential",
    );
    check(
        http(json!({"audience": "a", "scopes": "read"})),
        "invalid_skill_contract",
        "implementation.auth.scopes",
        "expected a list",
    );
    check(
        http(json!({"audience": "a", "scopes": ["read", "bad scope"]})),
        "invalid_skill_contract",
        "implementation.auth.scopes",
        "[1]",
    );
    let error = rejected(&http(json!({"audience": "a", "scopes": ["read", "Bearer abc"]})), SideEffects::None);
    assert_eq!((error.code(), error.field()), ("secret_material_rejected", "implementation.auth.scopes"));
    assert_eq!(error.details()["index"], json!(1));
    let too_many: Vec<String> = (0..21).map(|i| format!("s{i}")).collect();
    check(
        http(json!({"audience": "a", "scopes": too_many})),
        "invalid_skill_contract",
        "implementation.auth.scopes",
        "at most 20",
    );
    let contract =
        normalize(&http(json!({"audience": "a", "scopes": ["b", "a", "b"]})), SideEffects::None, &Default::default())
            .expect("valid");
    assert_eq!(contract.implementation().auth().expect("auth").scopes(), ["b", "a"]);
}

#[test]
fn credentials_in_an_endpoint_are_secret_material() {
    let http = |endpoint: &str| with("/implementation", Some(json!({"protocol": "http", "endpoint": endpoint})));
    check(http("https://user:pass@svc/x"), "secret_material_rejected", "implementation.endpoint", "credential");
    check(http("https://svc/x?api_key=abc"), "secret_material_rejected", "implementation.endpoint", "credential");
    assert!(normalize(&http("https://svc/x?page=2"), SideEffects::None, &Default::default()).is_ok());
}

#[test]
fn an_external_write_without_idempotency_is_not_retried() {
    let raw = with("/retryPolicy", Some(json!({"maxAttempts": 3, "backoffSeconds": 10})));
    let error = rejected(&raw, SideEffects::ExternalWrite);
    assert_eq!((error.code(), error.field()), ("invalid_skill_contract", "retryPolicy.maxAttempts"));
    assert_eq!(error.details()["maxAttempts"], json!(3));
    assert_eq!(error.details()["idempotency"], json!("none"));
    assert!(error.to_string().contains("second effect"), "{error}");

    for (side_effects, idempotency) in [
        (SideEffects::ExternalRead, "none"),
        (SideEffects::ExternalWrite, "natural"),
        (SideEffects::ExternalWrite, "required"),
    ] {
        let mut ok = raw.clone();
        ok["idempotency"] = json!(idempotency);
        assert!(normalize(&ok, side_effects, &Default::default()).is_ok(), "{side_effects} {idempotency}");
    }
    let once = with("/retryPolicy", Some(json!({"maxAttempts": 1, "backoffSeconds": 10})));
    assert!(normalize(&once, SideEffects::ExternalWrite, &Default::default()).is_ok());
}

#[test]
fn nul_characters_and_oversized_contracts_are_refused() {
    check(
        with("/implementation/entrypoint", Some(json!("a:b\u{0}"))),
        "invalid_skill_contract",
        "implementation.entrypoint",
        "NUL",
    );
    let huge = json!({"type": "object", "description": "x".repeat(600 * 1024)});
    let error = rejected(&with("/inputs", Some(huge)), SideEffects::None);
    assert_eq!(error.field(), "contract");
    assert!(error.to_string().contains("at most 524288"), "{error}");
}

#[test]
fn every_violation_is_reported_in_one_pass() {
    let mut raw = base();
    raw["timeoutSeconds"] = json!(0);
    raw["idempotency"] = json!("maybe");
    raw["implementation"] = json!({"protocol": "local", "entrypoint": "nope"});
    let error = rejected(&raw, SideEffects::None);
    let fields: Vec<&str> = error.violations().iter().map(|v| v.field.as_str()).collect();
    assert_eq!(fields, ["idempotency", "timeoutSeconds", "implementation.entrypoint"]);
    assert_eq!(error.details()["problems"].as_array().map(Vec::len), Some(3));
    assert!(error.to_string().starts_with("3 problems: "), "{error}");
}

/// A stored contract is read back without compiling its schemas: a schema no publication would
/// accept (here, a `$ref` cycle) reads back, which shows the compiler did not run; every other
/// rule still holds.
#[test]
fn a_stored_contract_reads_back_without_compiling_its_schemas() {
    let cycle = json!({"$defs": {"a": {"$ref": "#/$defs/a"}}, "$ref": "#/$defs/a"});
    let raw = with("/inputs", Some(cycle.clone()));
    check(raw.clone(), "invalid_json_schema", "inputs", "leads back to");
    let stored = NormalizeOptions { stored: true, ..Default::default() };
    let contract = normalize(&raw, SideEffects::None, &stored).expect("read back");
    assert_eq!(contract.inputs(), &cycle);
    let still_checked = with("/timeoutSeconds", Some(json!(0)));
    assert!(normalize(&still_checked, SideEffects::None, &stored).is_err());
}
