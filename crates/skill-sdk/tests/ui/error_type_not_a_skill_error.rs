use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use skill_sdk::skill;

#[derive(Deserialize, JsonSchema)]
pub struct In {
    pub text: String,
}

#[derive(Serialize, JsonSchema)]
pub struct Out {
    pub text: String,
}

pub struct MyError;

#[skill("a.b", version = "1", side_effects = "none", risk = "low")]
pub fn f(inputs: In) -> Result<Out, MyError> {
    Ok(Out { text: inputs.text })
}

fn main() {}
