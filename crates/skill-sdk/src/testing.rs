//! Calling skills from tests: the same invocation path the hosts use, on a private runtime.
//!
//! ```ignore
//! let outcome = skill_sdk::testing::invoke(&classify::SKILL, json!({"text": "…"}))?;
//! assert_eq!(outcome.outputs["category"], "refund");
//! ```

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use crate::context::{Invocation, Transport};
use crate::runtime::{self, Outcome};
use crate::{Skill, SkillError};

/// A test call being set up; [`call`] starts one.
#[derive(Debug)]
pub struct Call {
    skill: &'static Skill,
    invocation: Invocation,
    env: Option<BTreeMap<String, String>>,
}

/// Starts setting up a test call of `skill`.
pub fn call(skill: &'static Skill) -> Call {
    Call { skill, invocation: Invocation::new(Transport::Test).with_invocation_id("test"), env: None }
}

/// Calls `skill` with `inputs` and nothing else set.
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

    /// Runs the call to its end on a runtime of its own.
    pub fn invoke(self, inputs: Value) -> Result<Outcome, SkillError> {
        let invocation = match self.env {
            Some(env) => self.invocation.with_env(env),
            None => self.invocation,
        };
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("invariant: a test can start a runtime");
        let outcome = runtime.block_on(runtime::execute(self.skill, inputs, invocation));
        runtime.shutdown_background();
        outcome
    }
}
