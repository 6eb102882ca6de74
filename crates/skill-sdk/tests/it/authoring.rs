//! What `#[skill]` derives from the code: descriptions, schemas, the contract, entrypoints, and
//! the four function forms running through the runtime.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;
use skill_sdk::contract::export::drift;
use skill_sdk::export::ProtocolChoice;
use skill_sdk::{SkillContext, SkillError, skill, testing};

#[derive(Debug, Deserialize, JsonSchema)]
pub(crate) struct EchoIn {
    pub text: String,
    /// How many times to repeat.
    #[serde(default = "one")]
    pub times: u32,
}

fn one() -> u32 {
    1
}

#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct EchoOut {
    pub text: String,
    pub note: Option<String>,
}

fn echo_out(inputs: &EchoIn) -> EchoOut {
    EchoOut { text: inputs.text.repeat(inputs.times as usize), note: None }
}

/// Echo the text.
/// Twice if asked.
///
/// This second paragraph is not part of the description.
#[skill("test.sync_plain", version = "1", side_effects = "none", risk = "low")]
pub(crate) fn sync_plain(inputs: EchoIn) -> Result<EchoOut, SkillError> {
    Ok(echo_out(&inputs))
}

/// Echo with the context.
#[skill("test.sync_ctx", version = "1", side_effects = "none", risk = "low", description = "Given explicitly.")]
pub(crate) fn sync_ctx(inputs: EchoIn, ctx: SkillContext) -> Result<EchoOut, SkillError> {
    ctx.add_cost("echo", 2.0);
    ctx.add_cost("echo", 0.5);
    Ok(EchoOut { note: ctx.idempotency_key().map(str::to_owned), ..echo_out(&inputs) })
}

#[skill("test.async_plain", version = "2", side_effects = "external_read", risk = "medium")]
pub(crate) async fn async_plain(inputs: EchoIn) -> Result<EchoOut, SkillError> {
    tokio::task::yield_now().await;
    Ok(echo_out(&inputs))
}

#[skill(
    "test.async_ctx",
    version = "1",
    side_effects = "external_write",
    risk = "high",
    idempotency = "required",
    retry = (3, 10),
    permissions = ["claims.write", "claims.read", "claims.write"],
    cost_model(unit = "page", estimate = 0.5),
    implementation = http(endpoint = "${ECHO_URL}/skills/test.async_ctx@1", audience = "echo-service")
)]
pub(crate) async fn async_ctx(inputs: EchoIn, ctx: SkillContext) -> Result<EchoOut, SkillError> {
    ctx.check_deadline()?;
    Ok(EchoOut { note: Some(ctx.transport().as_str().to_owned()), ..echo_out(&inputs) })
}

#[skill(
    "test.explicit",
    version = "1",
    side_effects = "none",
    risk = "low",
    inputs_schema = json!({"type": "object", "properties": {"text": {"type": "string"}, "times": {"type": "integer"}}, "required": ["text"]}),
    outputs_schema = json!({"type": "object", "properties": {"text": {"type": "string", "maxLength": 3}}}),
    implementation = mcp(endpoint = "stdio:echo")
)]
pub(crate) fn explicit(inputs: EchoIn) -> Result<EchoOut, SkillError> {
    Ok(echo_out(&inputs))
}

/// An untyped map is accepted where an explicit schema describes it.
#[skill(
    "test.untyped",
    version = "1",
    side_effects = "none",
    risk = "low",
    inputs_schema = json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]})
)]
pub(crate) fn untyped(inputs: serde_json::Map<String, serde_json::Value>) -> Result<EchoOut, SkillError> {
    Ok(EchoOut { text: inputs.len().to_string(), note: None })
}

#[skill("test.slow", version = "1", side_effects = "none", risk = "low", timeout = 1)]
pub(crate) async fn slow(_inputs: EchoIn) -> Result<EchoOut, SkillError> {
    tokio::time::sleep(std::time::Duration::from_secs(30)).await;
    Err(SkillError::new("never"))
}

#[skill("test.panics", version = "1", side_effects = "none", risk = "low", implementation = local(entrypoint = "legacy.echo:panics"))]
pub(crate) fn panics(_inputs: EchoIn) -> Result<EchoOut, SkillError> {
    panic!("secret detail that must not reach the caller")
}

pub(crate) mod nested {
    use super::*;

    #[skill("test.nested", version = "1", side_effects = "none", risk = "low")]
    pub(crate) async fn deep(inputs: EchoIn) -> Result<EchoOut, SkillError> {
        Ok(echo_out(&inputs))
    }
}

#[test]
fn the_description_is_the_first_paragraph_of_the_doc_comment() {
    assert_eq!(sync_plain::SKILL.description(), "Echo the text.\nTwice if asked.");
    assert_eq!(sync_ctx::SKILL.description(), "Given explicitly.");
    assert_eq!(async_plain::SKILL.description(), "");
}

#[test]
fn schemas_come_from_the_types_in_their_serde_direction() {
    let contract = sync_plain::SKILL.contract().expect("valid");
    let inputs = contract.inputs();
    let keys: Vec<&String> = inputs.as_object().expect("object").keys().collect();
    assert_eq!(keys[0], "$schema", "$schema first");
    assert_eq!(inputs["$schema"], "https://json-schema.org/draft/2020-12/schema");
    assert_eq!(inputs["required"], json!(["text"]), "a defaulted field is optional in the input");
    assert_eq!(inputs["properties"]["times"]["description"], "How many times to repeat.");
    let outputs = contract.outputs();
    assert_eq!(outputs["required"], json!(["text"]), "an optional field is not required, as the reference has it");
}

/// The reference (pydantic) writes `note: str | None = None` as `anyOf: [T, null]` with
/// `default: null`, not required; the exported YAML says the same, and an output that leaves the
/// field out is valid.
#[test]
fn optional_fields_export_in_the_reference_form() {
    let contract = sync_plain::SKILL.contract().expect("valid");
    let document = sync_plain::SKILL.document(None).expect("document");
    let yaml = skill_sdk::contract::yaml::to_string(&document);
    let expected = "        note:
          anyOf:
          - type: string
          - type: 'null'
          default: null
";
    assert!(yaml.contains(expected), "{yaml}");
    assert!(
        yaml.contains(
            "      required:
      - text
"
        ),
        "{yaml}"
    );
    let validator = skill_sdk::contract::schema::SchemaValidator::new(contract.outputs()).expect("a schema");
    assert!(validator.errors(&json!({"text": "a"})).is_empty(), "the optional field may be left out");
    assert!(validator.errors(&json!({"text": "a", "note": null})).is_empty());
    assert!(!validator.errors(&json!({"text": "a", "note": 7})).is_empty(), "but it is still typed");
}

#[test]
fn an_untyped_map_runs_under_its_explicit_schema() {
    let outcome = testing::invoke(&untyped::SKILL, json!({"text": "a", "more": 1})).expect("runs");
    assert_eq!(outcome.outputs["text"], "2");
    let error = testing::invoke(&untyped::SKILL, json!({"more": 1})).expect_err("the schema still holds");
    assert_eq!(error.code(), "input_contract_violation");
}

#[test]
fn explicit_schemas_are_used_verbatim() {
    let contract = explicit::SKILL.contract().expect("valid");
    assert_eq!(contract.inputs()["required"], json!(["text"]));
    assert!(contract.inputs().get("$schema").is_none());
    let error = testing::invoke(&explicit::SKILL, json!({"text": "abcd"})).expect_err("too long");
    assert_eq!(error.code(), "output_contract_violation");
    assert_eq!(error.details().expect("details")["errors"][0]["path"], "/text");
}

#[test]
fn the_contract_holds_every_declared_argument() {
    let contract = async_ctx::SKILL.contract().expect("valid").to_export_json();
    assert_eq!(contract["idempotency"], "required");
    assert_eq!(contract["retryPolicy"], json!({"maxAttempts": 3, "backoffSeconds": 10}));
    assert_eq!(contract["requiredPermissions"], json!(["claims.read", "claims.write"]));
    assert_eq!(contract["costModel"], json!({"unit": "page", "estimate": 0.5}));
    assert_eq!(
        contract["implementation"],
        json!({"protocol": "http", "endpoint": "${ECHO_URL}/skills/test.async_ctx@1", "auth": {"audience": "echo-service"}})
    );
    assert_eq!(contract["timeoutSeconds"], 60);
    let mcp = explicit::SKILL.contract().expect("valid").to_export_json();
    assert_eq!(
        mcp["implementation"],
        json!({"protocol": "mcp", "endpoint": "stdio:echo", "entrypoint": "test.explicit"})
    );
}

#[test]
fn entrypoints_follow_the_module_path() {
    assert_eq!(sync_plain::SKILL.entrypoint(), "it.authoring:sync_plain");
    assert_eq!(nested::deep::SKILL.entrypoint(), "it.authoring.nested:deep");
    let declared = panics::SKILL.contract().expect("valid").to_export_json();
    assert_eq!(declared["implementation"]["entrypoint"], "legacy.echo:panics", "a custom entrypoint is kept");
    let local = panics::SKILL.document(Some(panics::SKILL.local_implementation().expect("valid"))).expect("document");
    assert_eq!(
        local["spec"]["contract"]["implementation"]["entrypoint"], "it.authoring:panics",
        "--protocol local uses the function"
    );
}

#[test]
fn all_four_forms_run() {
    for skill in [&sync_plain::SKILL, &sync_ctx::SKILL, &async_plain::SKILL, &async_ctx::SKILL, &nested::deep::SKILL] {
        let outcome = testing::invoke(skill, json!({"text": "ab", "times": 2})).expect("runs");
        assert_eq!(outcome.outputs["text"], "abab", "{skill:?}");
        assert!(outcome.outputs.contains_key("note"), "null fields are kept: {skill:?}");
    }
    let outcome = testing::call(&sync_ctx::SKILL).idempotency_key("k-1").invoke(json!({"text": "x"})).expect("runs");
    assert_eq!(outcome.outputs["note"], "k-1");
    assert_eq!(outcome.cost, Some(json!({"units": {"echo": 2.5}})));
    let outcome = testing::invoke(&async_ctx::SKILL, json!({"text": "x"})).expect("runs");
    assert_eq!(outcome.outputs["note"], "test");
}

#[test]
fn inputs_are_checked_before_the_function_runs() {
    let error = testing::invoke(&sync_plain::SKILL, json!(["text"])).expect_err("not an object");
    assert_eq!(
        error.details().expect("details")["errors"],
        json!([{"path": "/", "message": "inputs must be a JSON object"}])
    );
    let error = testing::invoke(&sync_plain::SKILL, json!({"text": "x", "times": -1})).expect_err("schema");
    assert_eq!((error.code(), error.skill_name()), ("input_contract_violation", "test.sync_plain"));
    assert_eq!(error.details().expect("details")["errors"][0]["path"], "/times");
}

#[test]
fn the_deadline_is_enforced() {
    let started = std::time::Instant::now();
    let error = testing::invoke(&slow::SKILL, json!({"text": "x"})).expect_err("times out");
    assert_eq!((error.code(), error.retryable()), ("timeout", true));
    assert!(started.elapsed() < std::time::Duration::from_secs(10), "cancelled at the deadline, not after the sleep");
}

#[test]
fn a_panic_is_a_skill_error_without_its_message() {
    let error = testing::invoke(&panics::SKILL, json!({"text": "x"})).expect_err("panics");
    assert_eq!(error.code(), "skill_error");
    assert!(!error.message().contains("secret"), "{}", error.message());
}

#[test]
fn export_choices_build_the_documented_implementations() {
    let folder = std::env::temp_dir().join(format!("skill-sdk-authoring-{}", std::process::id()));
    std::fs::create_dir_all(&folder).expect("folder");
    let skills = [&sync_plain::SKILL];
    let http = ProtocolChoice::Http { endpoint: "https://svc.example/".into(), audience: Some("svc".into()) };
    let written = skill_sdk::export::export(&skills, &folder, Some(&http)).expect("exports");
    let skill_sdk::export::Written::Written(path) = &written[0] else { panic!("a new file is written") };
    let text = std::fs::read_to_string(path).expect("written");
    let again = skill_sdk::export::export(&skills, &folder, Some(&http)).expect("exports");
    assert_eq!(again, [skill_sdk::export::Written::Unchanged(path.clone())], "the same text is not written again");
    assert!(text.contains("      endpoint: https://svc.example/skills/test.sync_plain@1\n"), "{text}");
    let mcp = ProtocolChoice::Mcp { endpoint: "stdio:echo".into(), audience: None };
    let differences = skill_sdk::export::check(&skills, &folder, Some(&mcp)).expect("checks");
    assert_eq!(differences.len(), 1);
    let wanted = sync_plain::SKILL.document(None).expect("document");
    let read = skill_sdk::contract::yaml::from_str(&text).expect("reads");
    assert_eq!(drift(&wanted, &read).to_string(), "contract");
    let _ = std::fs::remove_dir_all(&folder);
}
