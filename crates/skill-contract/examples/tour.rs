//! A tour of the contract tooling: read a skill document, export it, detect drift, see the
//! errors a bad contract gets, and resolve a composite skill into its tool set.
//!
//! Run it with `cargo run -p skill-contract --example tour`.

#![allow(clippy::print_stdout)]

use serde_json::json;
use skill_contract::composite::resolve;
use skill_contract::export::{drift, render_skill_file};
use skill_contract::{NormalizeOptions, Skill, SkillDefinition, SkillRef, yaml};

fn document(name: &str, side_effects: &str, retry: u32, entrypoint: &str) -> serde_json::Value {
    json!({
        "apiVersion": "taimen.ai/v1",
        "kind": "Skill",
        "key": name,
        "spec": {
            "version": "1",
            "description": "Draft a reply to a customer claim for a person to review.",
            "sideEffects": side_effects,
            "riskLevel": if side_effects == "external_write" { "high" } else { "low" },
            "contract": {
                "inputs": {"type": "object", "properties": {"claim": {"type": "string"}}, "required": ["claim"]},
                "outputs": {"type": "object", "properties": {"draft": {"type": "string"}}, "required": ["draft"]},
                "timeoutSeconds": 120,
                "retryPolicy": {"maxAttempts": retry},
                "implementation": {"protocol": "local", "entrypoint": entrypoint}
            }
        }
    })
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let options = NormalizeOptions::default();

    println!("1. A skill document, normalized and exported as skills/claim.draft_reply.yaml:\n");
    let draft = Skill::from_document(
        &document("claim.draft_reply", "none", 1, "claims_integration.skills:draft_reply"),
        &options,
    )?;
    let file = render_skill_file(&draft.to_document(), None);
    println!("{file}");

    println!("2. Drift: the code now says timeoutSeconds 90, the file still says 120:");
    let mut changed = draft.to_document();
    changed["spec"]["contract"]["timeoutSeconds"] = json!(90);
    println!("   differs in: {}\n", drift(&changed, &yaml::from_str(&file)?));

    println!("3. An external write retried without idempotency, and a malformed entrypoint:");
    let bad = document("claim.send_reply", "external_write", 3, "claims skills");
    if let Err(error) = Skill::from_document(&bad, &options) {
        for violation in error.violations() {
            println!("   {} {violation}", violation.code.as_str());
        }
    }
    println!();

    println!("4. A composite skill resolved into its tool set:");
    let send = Skill::from_document(
        &document("claim.send_reply", "external_write", 1, "claims_integration.skills:send_reply"),
        &options,
    )?;
    let toolkit = Skill::from_document(
        &json!({
            "apiVersion": "taimen.ai/v1", "kind": "Skill", "key": "claims.toolkit",
            "spec": {
                "version": "1",
                "description": "What an agent needs to answer claims.",
                "includes": ["claim.draft_reply@1", "claim.send_reply@1"],
                "tools": [{"name": "crm.lookup", "source": "mcp", "server": "stdio:crm", "writes": false}]
            }
        }),
        &options,
    )?;
    let catalog = vec![draft, send, toolkit.clone()];
    let root: SkillRef = "claims.toolkit@1".parse()?;
    let definition = SkillDefinition::build(toolkit, resolve(&root, &catalog)?.into_tools())?;
    println!("{}", serde_json::to_string_pretty(definition.metadata())?);
    Ok(())
}
