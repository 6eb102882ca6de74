//! The exported file of an `add`-style skill, exactly as written to `skills/math.add.yaml`.

use serde_json::json;
use skill_contract::{NormalizeOptions, Skill, export, yaml};

fn add_skill() -> Skill {
    let document = json!({
        "apiVersion": "taimen.ai/v1",
        "kind": "Skill",
        "key": "math.add",
        "spec": {
            "version": "1",
            "description": "Add two numbers.\nThe second one may not be negative.",
            "sideEffects": "none",
            "riskLevel": "low",
            "contract": {
                "inputs": {
                    "$schema": "https://json-schema.org/draft/2020-12/schema",
                    "title": "AddIn",
                    "type": "object",
                    "properties": {
                        "a": {"title": "A", "type": "integer"},
                        "b": {"title": "B", "type": "integer", "minimum": 0}
                    },
                    "required": ["a", "b"]
                },
                "outputs": {
                    "$schema": "https://json-schema.org/draft/2020-12/schema",
                    "title": "AddOut",
                    "type": "object",
                    "properties": {
                        "sum": {"title": "Sum", "type": "integer"},
                        "note": {"anyOf": [{"type": "string"}, {"type": "null"}], "default": null, "title": "Note"}
                    },
                    "required": ["sum"]
                },
                "implementation": {"protocol": "local", "entrypoint": "math_skills.skills:add"}
            }
        }
    });
    Skill::from_document(&document, &NormalizeOptions::default()).expect("valid")
}

#[test]
fn the_exported_file_of_an_add_skill() {
    let skill = add_skill();
    let file = export::render_skill_file(&skill.to_document(), None);
    insta::assert_snapshot!(file);
    let read = yaml::from_str(&file).expect("reads");
    assert_eq!(export::drift(&skill.to_document(), &read), export::Drift::Same);
}
