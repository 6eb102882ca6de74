//! What a skill can reach during one call: which call this is, the caller, the time left, the
//! package settings, hosting parameters and secrets, the cost it reports, and narrow access to
//! the core (artifacts and knowledge).

use std::fmt;
use std::path::PathBuf;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use serde_json::{Map, Value};
use skill_contract::SkillRef;

use crate::SkillError;
use crate::core::{Artifacts, CoreAccess, Knowledge, core_from_env};
pub use crate::env::Env;
use crate::llm::{Llm, LlmProvider, provider_from_env};
use crate::scope::CallScope;
use crate::secrets;

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

/// The package settings values of a call from the settings document the core sends
/// (`{package, version, schemaRevision, values}`): `values` when it is a non-empty object,
/// otherwise nothing.
pub fn package_settings(document: &Value) -> Map<String, Value> {
    match document.get("values") {
        Some(Value::Object(values)) if !values.is_empty() => values.clone(),
        _ => Map::new(),
    }
}

/// The call as the transport delivered it.
#[derive(Debug, Clone, Default)]
pub struct Invocation {
    transport: Transport,
    invocation_id: Option<String>,
    idempotency_key: Option<String>,
    request_id: Option<String>,
    timeout: Option<Duration>,
    caller: Option<Value>,
    settings: Map<String, Value>,
    env: Env,
    secrets_dir: Option<PathBuf>,
    core: Option<Arc<dyn CoreAccess>>,
    llm: Option<Arc<dyn LlmProvider>>,
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

    /// The id of the transport request that carries the call (a host's `X-Request-Id`), for logs.
    pub fn with_request_id(self, id: impl Into<String>) -> Self {
        Self { request_id: Some(id.into()), ..self }
    }

    /// A shorter deadline than the contract's (a local executor passes what is left of its lease).
    pub fn with_timeout(self, timeout: Duration) -> Self {
        Self { timeout: Some(timeout), ..self }
    }

    /// The verified claims of the caller.
    pub fn with_caller(self, caller: Value) -> Self {
        Self { caller: Some(caller), ..self }
    }

    /// The package settings values (as the testing kit takes them).
    pub fn with_settings(self, settings: Map<String, Value>) -> Self {
        Self { settings, ..self }
    }

    /// What a transport carries beside the inputs — the HTTP body's `invocationId`,
    /// `idempotencyKey` and `settings`, MCP's `_meta` `skill/invocationId`, `skill/idempotencyKey`
    /// and `skill/settings`, a claimed call's meta — read by one rule for every transport: an id
    /// or a key counts when it is a non-empty string and is ignored otherwise; the settings are a
    /// package settings document, and anything else (a number, a string, a list) reads as no
    /// settings, as [`package_settings`] says.
    pub fn with_transport_meta(
        mut self,
        invocation_id: Option<&Value>,
        idempotency_key: Option<&Value>,
        settings: Option<&Value>,
    ) -> Self {
        let text = |value: Option<&Value>| value.and_then(Value::as_str).filter(|s| !s.is_empty()).map(str::to_owned);
        if let Some(id) = text(invocation_id) {
            self.invocation_id = Some(id);
        }
        if let Some(key) = text(idempotency_key) {
            self.idempotency_key = Some(key);
        }
        if let Some(document) = settings {
            self.settings = package_settings(document);
        }
        self
    }

    /// The environment the skill sees instead of the process's.
    pub fn with_env(self, env: Env) -> Self {
        Self { env, ..self }
    }

    /// The secrets folder instead of `$SKILL_SDK_SECRETS_DIR` or `/run/secrets`.
    pub fn with_secrets_dir(self, folder: PathBuf) -> Self {
        Self { secrets_dir: Some(folder), ..self }
    }

    /// The core the skill's `artifacts()` and `knowledge()` reach (tests install a fake).
    pub fn with_core(self, core: Arc<dyn CoreAccess>) -> Self {
        Self { core: Some(core), ..self }
    }

    /// The model the skill's `llm()` reaches (tests install a fake).
    pub fn with_llm(self, llm: Arc<dyn LlmProvider>) -> Self {
        Self { llm: Some(llm), ..self }
    }

    pub fn transport(&self) -> Transport {
        self.transport
    }

    pub(crate) fn timeout(&self) -> Option<Duration> {
        self.timeout
    }
}

/// A caller-given id as a span shows it: its first 128 bytes (an id is far shorter; a caller
/// could send megabytes, and every log line and exported span of the call would carry them).
fn shown(id: &str) -> &str {
    let mut end = id.len().min(128);
    while !id.is_char_boundary(end) {
        end -= 1;
    }
    &id[..end]
}

/// The context of one call, given to skills that take `ctx: SkillContext`. Cheap to clone.
#[derive(Clone)]
pub struct SkillContext {
    inner: Arc<Inner>,
}

struct Inner {
    skill: SkillRef,
    invocation: Invocation,
    scope: CallScope,
    core: OnceLock<Result<Arc<dyn CoreAccess>, SkillError>>,
    llm: OnceLock<Result<Arc<dyn LlmProvider>, SkillError>>,
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
        let span = tracing::info_span!(
            "skill",
            skill = %skill,
            invocation_id = %shown(invocation.invocation_id.as_deref().unwrap_or("")),
            transport = %invocation.transport.as_str(),
            request_id = %invocation.request_id.as_deref().unwrap_or(""),
        );
        Self {
            inner: Arc::new(Inner {
                skill,
                invocation,
                scope: CallScope::new(span, timeout),
                core: OnceLock::new(),
                llm: OnceLock::new(),
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

    /// A fresh copy of the package settings values of this call: changing it changes nothing
    /// for the caller or for other calls.
    pub fn settings(&self) -> Map<String, Value> {
        self.inner.invocation.settings.clone()
    }

    /// The id of the transport request that carried the call, when a host gave one.
    pub fn request_id(&self) -> Option<&str> {
        self.inner.invocation.request_id.as_deref()
    }

    /// The span of this call (fields `skill`, `invocation_id`, `transport`, `request_id`); the runtime runs
    /// the skill inside it, so the skill's `tracing` events carry them.
    pub fn span(&self) -> &tracing::Span {
        self.inner.scope.span()
    }

    /// The call's whole time budget.
    pub fn timeout(&self) -> Duration {
        self.inner.scope.timeout()
    }

    /// Time left until the deadline (zero when it has passed).
    pub fn remaining(&self) -> Duration {
        self.inner.scope.remaining()
    }

    /// `timeout` (retryable) once the deadline has passed.
    pub fn check_deadline(&self) -> Result<(), SkillError> {
        if self.inner.scope.remaining().is_zero() {
            return Err(SkillError::new("timeout").with_message(format!("{}: time is up", self.inner.skill)));
        }
        Ok(())
    }

    /// A hosting parameter: the environment variable `name` of the process that runs the skill
    /// (an empty value is returned as it is), else `default`.
    pub fn config(&self, name: &str, default: Option<&str>) -> Option<String> {
        self.inner.invocation.env.get(name).or_else(|| default.map(str::to_owned))
    }

    /// A hosting secret: the environment variable `name` (when not empty), then the node's file
    /// `/run/secrets/<name>`. Neither is `config_missing` (retryable). See [`crate::secrets`].
    pub fn secret(&self, name: &str) -> Result<String, SkillError> {
        let invocation = &self.inner.invocation;
        secrets::read_secret(name, &invocation.env, invocation.secrets_dir.as_deref())
    }

    /// Reports consumption of your own: API requests, pages.
    pub fn add_cost(&self, unit: &str, amount: f64) {
        self.inner.scope.meter().add_units(unit, amount);
    }

    /// The cost document `{"llm": {...}, "units": {...}}`, or `None` when nothing was reported.
    pub fn cost(&self) -> Option<Value> {
        self.inner.scope.meter().document()
    }

    fn core(&self) -> Result<Arc<dyn CoreAccess>, SkillError> {
        self.inner
            .core
            .get_or_init(|| match &self.inner.invocation.core {
                Some(core) => Ok(Arc::clone(core)),
                None => core_from_env(&self.inner.invocation.env),
            })
            .clone()
    }

    /// Artifact content through the core. Without a core address, `config_missing`.
    pub fn artifacts(&self) -> Result<Artifacts, SkillError> {
        Ok(Artifacts::new(self.core()?, self.inner.scope.clone()))
    }

    /// The model, as the installation configures it (`SKILL_LLM_PROVIDER`, …) or as the test
    /// installed it. An incomplete configuration is `llm_not_configured` (naming what is
    /// missing); a provider that cannot start is `llm_unavailable`; both retryable.
    pub fn llm(&self) -> Result<Llm, SkillError> {
        let provider = self
            .inner
            .llm
            .get_or_init(|| match &self.inner.invocation.llm {
                Some(llm) => Ok(Arc::clone(llm)),
                None => provider_from_env(&self.inner.invocation.env),
            })
            .clone()?;
        Ok(Llm::new(provider, self.inner.scope.clone()))
    }

    /// The knowledge base through the core. Without a core address, `config_missing`.
    pub fn knowledge(&self) -> Result<Knowledge, SkillError> {
        Ok(Knowledge::new(self.core()?, self.inner.scope.clone()))
    }
}
