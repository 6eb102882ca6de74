//! Testing skills: the same invocation path the hosts use, on a private runtime, with the call's
//! environment, secrets folder, settings and core under the test's control.
//!
//! ```
//! use schemars::JsonSchema;
//! use serde::{Deserialize, Serialize};
//! use serde_json::json;
//! use skill_sdk::{SkillContext, SkillError, skill};
//!
//! #[derive(Deserialize, JsonSchema)]
//! pub struct Message { text: String }
//!
//! #[derive(Serialize, JsonSchema)]
//! pub struct Sorted { category: String, crm: Option<String> }
//!
//! /// Sort a customer message.
//! #[skill("demo.classify", version = "1", side_effects = "none", risk = "low")]
//! pub fn classify(inputs: Message, ctx: SkillContext) -> Result<Sorted, SkillError> {
//!     let category = if inputs.text.contains("refund") { "refund" } else { "other" };
//!     Ok(Sorted { category: category.into(), crm: ctx.config("CRM_URL", None) })
//! }
//!
//! fn main() -> Result<(), SkillError> {
//!     let outcome = skill_sdk::testing::call(&classify::SKILL)
//!         .env("CRM_URL", "http://127.0.0.1:9000")
//!         .invoke(json!({"text": "a refund, please"}))?;
//!     assert_eq!(outcome.outputs["category"], "refund");
//!     assert_eq!(outcome.outputs["crm"], "http://127.0.0.1:9000");
//!     Ok(())
//! }
//! ```

mod fake_core;
mod fake_llm;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use serde_json::{Map, Value};
use skill_contract::{ContractError, NormalizeOptions};

pub use fake_core::{FakeCore, state_token};
pub use fake_llm::{FakeAnswer, FakeLlm, LlmCall};

use crate::context::{Env, Invocation, Transport};
use crate::runtime::{self, Outcome};
use crate::skill::PrepareError;
use crate::{Skill, SkillError};

/// A test call being set up; [`call`] starts one.
#[derive(Debug)]
pub struct Call {
    skill: &'static Skill,
    invocation: Invocation,
    env: Option<BTreeMap<String, String>>,
}

/// Starts setting up a test call of `skill` (transport `test`, invocation id `test`).
pub fn call(skill: &'static Skill) -> Call {
    Call { skill, invocation: Invocation::new(Transport::Test).with_invocation_id("test"), env: None }
}

/// Calls `skill` with `inputs` and nothing else set (the process environment is visible).
pub fn invoke(skill: &'static Skill, inputs: Value) -> Result<Outcome, SkillError> {
    call(skill).invoke(inputs)
}

impl Call {
    pub fn idempotency_key(self, key: &str) -> Self {
        Self { invocation: self.invocation.with_idempotency_key(key), ..self }
    }

    /// The package settings values the call sees.
    pub fn settings(self, values: Map<String, Value>) -> Self {
        Self { invocation: self.invocation.with_settings(values), ..self }
    }

    /// Sets a variable of the environment the skill sees. Once any is set, the skill sees only
    /// these, not the process environment.
    pub fn env(mut self, name: &str, value: &str) -> Self {
        self.env.get_or_insert_with(BTreeMap::new).insert(name.to_owned(), value.to_owned());
        self
    }

    /// The skill sees an empty environment.
    pub fn no_env(mut self) -> Self {
        self.env = Some(BTreeMap::new());
        self
    }

    /// The folder `ctx.secret` reads files from.
    pub fn secrets_dir(self, folder: impl Into<PathBuf>) -> Self {
        Self { invocation: self.invocation.with_secrets_dir(folder.into()), ..self }
    }

    /// The core the skill's `artifacts()` and `knowledge()` reach.
    pub fn core(self, core: &FakeCore) -> Self {
        Self { invocation: self.invocation.with_core(Arc::new(core.clone())), ..self }
    }

    /// The model the skill's `llm()` reaches.
    pub fn llm(self, llm: &FakeLlm) -> Self {
        Self { invocation: self.invocation.with_llm(Arc::new(llm.clone())), ..self }
    }

    /// Runs the call to its end on a runtime of its own.
    pub fn invoke(self, inputs: Value) -> Result<Outcome, SkillError> {
        let invocation = match self.env {
            Some(env) => self.invocation.with_env(Env::from_map(env)),
            None => self.invocation,
        };
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("invariant: a test can start a runtime");
        let outcome = runtime.block_on(runtime::execute(self.skill, inputs, invocation));
        // A sync skill that ran past its deadline keeps its thread; do not wait for it.
        runtime.shutdown_background();
        outcome
    }
}

/// Why [`check_contract`] refused a skill.
#[derive(Debug, thiserror::Error)]
pub enum CheckError {
    #[error("{0}")]
    Prepare(#[from] PrepareError),
    #[error("{0}")]
    Contract(#[from] ContractError),
}

/// Runs the publication checks of the core on the skill's exported document: contract
/// normalization, policy columns, the safe-retry rule, both schemas valid JSON Schema 2020-12.
/// Endpoint placeholders (`${VAR}`) are accepted, as the installation substitutes them.
pub fn check_contract(skill: &Skill) -> Result<skill_contract::Skill, CheckError> {
    let document = skill.document(None)?;
    let options = NormalizeOptions { allow_placeholders: true, allow_conditions: false, stored: false };
    Ok(skill_contract::Skill::from_document(&document, &options)?)
}
