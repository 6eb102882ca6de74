//! What a skill can reach during one call: which call this is, the time left, its settings,
//! hosting parameters, and the cost it reports.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Map, Value, json};
use skill_contract::SkillRef;

use crate::SkillError;

/// How a call reached the skill.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Transport {
    /// Called in-process, e.g. by the host's `invoke` command.
    #[default]
    Direct,
    /// Claimed from the core by a local executor.
    Local,
    Http,
    Mcp,
    /// Called by the testing kit.
    Test,
}

impl Transport {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Direct => "direct",
            Self::Local => "local",
            Self::Http => "http",
            Self::Mcp => "mcp",
            Self::Test => "test",
        }
    }
}

/// The call as the transport delivered it.
#[derive(Debug, Clone, Default)]
pub struct Invocation {
    transport: Transport,
    invocation_id: Option<String>,
    idempotency_key: Option<String>,
    timeout: Option<Duration>,
    caller: Option<Value>,
    settings: Map<String, Value>,
    env: Option<Arc<BTreeMap<String, String>>>,
}

impl Invocation {
    pub fn new(transport: Transport) -> Self {
        Self { transport, ..Self::default() }
    }

    pub fn with_invocation_id(self, id: impl Into<String>) -> Self {
        Self { invocation_id: Some(id.into()), ..self }
    }

    pub fn with_idempotency_key(self, key: impl Into<String>) -> Self {
        Self { idempotency_key: Some(key.into()), ..self }
    }

    /// A shorter deadline than the contract's (a local executor passes what is left of its lease).
    pub fn with_timeout(self, timeout: Duration) -> Self {
        Self { timeout: Some(timeout), ..self }
    }

    /// The verified claims of the caller.
    pub fn with_caller(self, caller: Value) -> Self {
        Self { caller: Some(caller), ..self }
    }

    /// The package settings values.
    pub fn with_settings(self, settings: Map<String, Value>) -> Self {
        Self { settings, ..self }
    }

    /// The environment the skill sees instead of the process's (tests use it; an empty map means
    /// no variables at all).
    pub fn with_env(self, env: BTreeMap<String, String>) -> Self {
        Self { env: Some(Arc::new(env)), ..self }
    }

    pub fn transport(&self) -> Transport {
        self.transport
    }

    pub(crate) fn timeout(&self) -> Option<Duration> {
        self.timeout
    }
}

/// The context of one call, given to skills that take `ctx: SkillContext`. Cheap to clone.
#[derive(Clone)]
pub struct SkillContext {
    inner: Arc<Inner>,
}

struct Inner {
    skill: SkillRef,
    invocation: Invocation,
    started: Instant,
    timeout: Duration,
    units: Mutex<Vec<(String, f64)>>,
}

impl fmt::Debug for SkillContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SkillContext")
            .field("skill", &self.inner.skill.to_string())
            .field("transport", &self.inner.invocation.transport)
            .field("invocation_id", &self.inner.invocation.invocation_id)
            .finish_non_exhaustive()
    }
}

impl SkillContext {
    /// The clock starts here, before the inputs are checked, as `remaining()` counts.
    pub(crate) fn new(skill: SkillRef, invocation: Invocation, timeout: Duration) -> Self {
        Self {
            inner: Arc::new(Inner {
                skill,
                invocation,
                started: Instant::now(),
                timeout,
                units: Mutex::new(Vec::new()),
            }),
        }
    }

    /// The skill being called, `name@version`.
    pub fn skill(&self) -> &SkillRef {
        &self.inner.skill
    }

    pub fn transport(&self) -> Transport {
        self.inner.invocation.transport
    }

    /// Which call this is, when the transport names it.
    pub fn invocation_id(&self) -> Option<&str> {
        self.inner.invocation.invocation_id.as_deref()
    }

    /// A retry with the same key must not make a second external effect.
    pub fn idempotency_key(&self) -> Option<&str> {
        self.inner.invocation.idempotency_key.as_deref()
    }

    /// The verified caller, when the host checks tokens.
    pub fn caller(&self) -> Option<&Value> {
        self.inner.invocation.caller.as_ref()
    }

    /// A copy of the package settings values of this call.
    pub fn settings(&self) -> Map<String, Value> {
        self.inner.invocation.settings.clone()
    }

    /// The call's whole time budget.
    pub fn timeout(&self) -> Duration {
        self.inner.timeout
    }

    /// Time left until the deadline (zero when it has passed).
    pub fn remaining(&self) -> Duration {
        self.inner.timeout.saturating_sub(self.inner.started.elapsed())
    }

    /// `timeout` (retryable) once the deadline has passed.
    pub fn check_deadline(&self) -> Result<(), SkillError> {
        if self.inner.started.elapsed() >= self.inner.timeout {
            return Err(SkillError::new("timeout").with_message(format!("{}: time is up", self.inner.skill)));
        }
        Ok(())
    }

    /// A hosting parameter: the environment variable `name` of the process that runs the skill
    /// (or of the environment a test gave the call).
    pub fn config(&self, name: &str) -> Option<String> {
        match &self.inner.invocation.env {
            Some(env) => env.get(name).cloned(),
            None => std::env::var(name).ok(),
        }
    }

    /// Reports consumption of your own: API requests, pages.
    pub fn add_cost(&self, unit: &str, amount: f64) {
        let mut units = self.inner.units.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        match units.iter_mut().find(|(u, _)| u == unit) {
            Some((_, total)) => *total += amount,
            None => units.push((unit.to_owned(), amount)),
        }
    }

    /// The cost document `{"units": {unit: amount}}`, or `None` when nothing was reported.
    pub fn cost(&self) -> Option<Value> {
        let units = self.inner.units.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if units.is_empty() {
            return None;
        }
        let units: Map<String, Value> = units.iter().map(|(u, n)| (u.clone(), json!(n))).collect();
        Some(json!({ "units": units }))
    }
}
