use schemars::JsonSchema;
use serde::Serialize;
use serde_json::{Map, Value};
use skill_sdk::{SkillError, skill};

#[derive(Serialize, JsonSchema)]
pub struct Out {
    pub text: String,
}

#[skill("a.b", version = "1", side_effects = "none", risk = "low")]
pub fn f(inputs: Map<String, Value>) -> Result<Out, SkillError> {
    Ok(Out { text: inputs.len().to_string() })
}

#[skill("a.c", version = "1", side_effects = "none", risk = "low")]
pub fn g(_inputs: Out2) -> Result<std::collections::HashMap<String, Value>, SkillError> {
    Ok(std::collections::HashMap::new())
}

#[derive(serde::Deserialize, JsonSchema)]
pub struct Out2 {}

fn main() {}
