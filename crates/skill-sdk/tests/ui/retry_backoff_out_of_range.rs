use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use skill_sdk::{SkillError, skill};

#[derive(Deserialize, JsonSchema)]
pub struct In {
    pub text: String,
}

#[derive(Serialize, JsonSchema)]
pub struct Out {
    pub text: String,
}

#[skill("a.b", version = "1", side_effects = "none", risk = "low", retry = (2, 3601))]
pub fn f(inputs: In) -> Result<Out, SkillError> {
    Ok(Out { text: inputs.text })
}

fn main() {}
