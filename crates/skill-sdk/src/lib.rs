//! Write skills in Rust.
//!
//! A skill is a function with `#[skill(...)]`: its contract (inputs and outputs as JSON Schema,
//! side effects, risk, idempotency, timeout, retries, permissions, cost model, implementation)
//! comes from the code; the package's `skills/<name>.yaml` is exported from it and checked
//! against it; the host binary lists, exports and invokes the skills.
//!
//! ```
//! use schemars::JsonSchema;
//! use serde::{Deserialize, Serialize};
//! use skill_sdk::{SkillError, skill};
//!
//! #[derive(Deserialize, JsonSchema)]
//! pub struct AddIn { a: i64, b: i64 }
//!
//! #[derive(Serialize, JsonSchema)]
//! pub struct AddOut { sum: i64 }
//!
//! /// Add two numbers.
//! #[skill("math.add", version = "1", side_effects = "none", risk = "low")]
//! pub fn add(inputs: AddIn) -> Result<AddOut, SkillError> {
//!     Ok(AddOut { sum: inputs.a + inputs.b })
//! }
//!
//! fn main() {
//!     let outcome = skill_sdk::testing::invoke(&add::SKILL, serde_json::json!({"a": 2, "b": 3})).unwrap();
//!     assert_eq!(outcome.outputs["sum"], 5);
//!     assert_eq!(add::SKILL.reference(), "math.add@1");
//! }
//! ```
//!
//! Declare skills at module level (not inside a function body): the attribute adds a module
//! named after the function, whose `SKILL` static is the skill.
//!
//! | what | where |
//! |---|---|
//! | declaring a skill | [`skill`] (the attribute), [`Skill`] (`<function>::SKILL`) |
//! | the call context | [`SkillContext`], [`Invocation`], [`package_settings`] |
//! | secrets | [`secrets`] (`ctx.secret(name)`) |
//! | artifacts and knowledge through the core | [`core`] (`ctx.artifacts()`, `ctx.knowledge()`) |
//! | calling a skill | [`runtime::execute`], [`testing`] |
//! | the skills of a binary | [`registry::Registry`] |
//! | export and `--check` | [`export`] |
//! | the host binary | [`host_main!`], [`host`] |

mod context;
pub mod core;
mod cost;
mod declaration;
mod env;
pub mod export;
mod failure;
pub mod host;
pub mod llm;
pub mod pii;
pub mod registry;
pub mod runtime;
mod schema_form;
mod scope;
pub mod secrets;
mod skill;
pub mod testing;

pub use context::{Env, Invocation, SkillContext, Transport, package_settings};
pub use runtime::Outcome;
pub use skill::{PrepareError, Skill};
pub use skill_contract as contract;
pub use skill_contract::SkillError;
pub use skill_sdk_macros::skill;

/// What the `#[skill]` attribute expands to; not for hand-written code.
#[doc(hidden)]
pub mod __private {
    pub use crate::declaration::*;
    pub use crate::skill::Registration;
}

/// The `main` of a package's skill host: links the crates that declare skills and runs the host
/// CLI (`list`, `contract`, `export`, `invoke`).
///
/// ```text
/// // src/main.rs of the integration crate `claims-integration`
/// skill_sdk::host_main!(claims_integration);
/// ```
#[macro_export]
macro_rules! host_main {
    ($($krate:ident),+ $(,)?) => {
        $(use $krate as _;)+

        fn main() -> ::std::process::ExitCode {
            $crate::host::main()
        }
    };
}
