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

#[skill("a.b", version = "1", side_effects = "none", risk = "sideways")]
pub fn f(inputs: In) -> Result<Out, SkillError> {
    Ok(Out { text: inputs.text })
}

// Only the attribute's error is reported: the function still exists for the rest of the crate.
pub fn caller() -> Result<Out, SkillError> {
    f(In { text: String::new() })
}

fn main() {}
