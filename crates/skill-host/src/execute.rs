//! `execute`: the host binary as a local executor of a core. It claims the calls of its own
//! `local` skills (by entrypoint), runs each through the SDK's one invocation path — the same as
//! `invoke`, HTTP and MCP: inputs checked, the deadline enforced, outputs checked, cost metered —
//! and reports the outcome through the shared executor loop (`skill-executor`).
//!
//! A skill it runs reaches the core's artifacts and knowledge (`ctx.artifacts()`,
//! `ctx.knowledge()`) with the executor's own account: the core it executes for, with its token,
//! unless the host's environment names another core (`CONTROL_PLANE_URL`).

use std::collections::BTreeMap;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use serde_json::Value;
use skill_api::{ClaimOut, ReportedError};
use skill_executor::{Declared, Options, Outcome, Runner};
use skill_sdk::core::CoreAccess;
use skill_sdk::core::http::HttpCore;
use skill_sdk::host::ExecuteArgs;
use skill_sdk::registry::Registry;
use skill_sdk::{Invocation, Skill, Transport, runtime};

/// Runs the local skills of one host binary.
#[derive(Debug, Clone)]
pub struct LocalRunner {
    /// The skills by their local entrypoint.
    skills: BTreeMap<String, &'static Skill>,
    /// The core the skills read artifacts and knowledge from; `None`: the one the call's
    /// environment names.
    core: Option<Arc<dyn CoreAccess>>,
}

impl LocalRunner {
    pub fn new(registry: &Registry) -> Self {
        Self { skills: registry.skills().iter().map(|skill| (skill.entrypoint(), *skill)).collect(), core: None }
    }

    /// Only the skills of `modules` (`module(.sub)*` or `module:function`); an error naming the
    /// binary's modules when one of them holds none.
    pub fn only(self, modules: &[String]) -> Result<Self, String> {
        if modules.is_empty() {
            return Ok(self);
        }
        let covers = |module: &str, entrypoint: &str| {
            let of = entrypoint.split_once(':').map_or(entrypoint, |(path, _)| path);
            module == entrypoint
                || (!module.contains(':')
                    && (of == module || of.strip_prefix(module).is_some_and(|rest| rest.starts_with('.'))))
        };
        if let Some(module) =
            modules.iter().find(|module| !self.skills.keys().any(|entrypoint| covers(module, entrypoint)))
        {
            let mut known: Vec<&str> = self
                .skills
                .keys()
                .map(|entrypoint| entrypoint.split_once(':').map_or(entrypoint.as_str(), |(m, _)| m))
                .collect();
            known.dedup();
            return Err(format!(
                "--modules: {module} holds none of this host's skills (its modules: {})",
                known.join(", ")
            ));
        }
        let skills = self
            .skills
            .into_iter()
            .filter(|(entrypoint, _)| modules.iter().any(|module| covers(module, entrypoint)))
            .collect();
        Ok(Self { skills, ..self })
    }

    /// The skills reach artifacts and knowledge through `core`.
    pub fn with_core(self, core: Arc<dyn CoreAccess>) -> Self {
        Self { core: Some(core), ..self }
    }
}

impl Runner for LocalRunner {
    fn declared(&self) -> Declared {
        Declared {
            protocols: vec!["local".to_owned()],
            local_entrypoints: self.skills.keys().cloned().collect(),
            capabilities: vec!["skills.protocol.local".to_owned()],
            ..Declared::default()
        }
    }

    fn run(&self, claimed: ClaimOut) -> BoxFuture<'static, Outcome> {
        let entrypoint = claimed.skill.contract.implementation().entrypoint().unwrap_or_default().to_owned();
        let wanted = format!("{}@{}", claimed.skill.name, claimed.skill.version);
        let skill = self.skills.get(&entrypoint).copied();
        let core = self.core.clone();
        Box::pin(async move {
            let Some(skill) = skill.filter(|skill| skill.reference() == wanted) else {
                let runs = skill.map_or_else(|| "nothing".to_owned(), |skill| skill.reference());
                return Outcome::Fail(ReportedError {
                    code: "entrypoint_not_installed".to_owned(),
                    message: format!("this host runs {runs} at {entrypoint}, not {wanted}"),
                    retryable: true,
                    details: None,
                });
            };
            let call = &claimed.invocation;
            let mut invocation = Invocation::new(Transport::Local).with_invocation_id(call.id.clone());
            if let Some(core) = core {
                invocation = invocation.with_core(core);
            }
            if let Some(key) = &call.idempotency_key {
                invocation = invocation.with_idempotency_key(key.clone());
            }
            if let Some(Value::Object(values)) = claimed.settings.as_ref().map(|settings| settings.values.clone()) {
                invocation = invocation.with_settings(values);
            }
            invocation =
                invocation.with_timeout(Duration::from_secs(u64::from(claimed.skill.contract.timeout_seconds())));
            match crate::metered::timed(skill, runtime::execute(skill, call.inputs.clone(), invocation)).await {
                Ok(outcome) => Outcome::Complete {
                    output: outcome.outputs,
                    cost: match outcome.cost {
                        Some(Value::Object(cost)) => Some(cost),
                        _ => None,
                    },
                },
                Err(error) => Outcome::Fail(ReportedError {
                    code: error.code().to_owned(),
                    message: error.message().to_owned(),
                    retryable: error.retryable(),
                    details: error.details().cloned().map(Value::Object),
                }),
            }
        })
    }
}

/// The `execute` command.
#[allow(clippy::print_stderr)]
pub fn execute(registry: &Registry, args: &ExecuteArgs) -> ExitCode {
    let Some(token) = std::env::var("SKILL_CORE_TOKEN").ok().filter(|token| !token.is_empty()) else {
        eprintln!(
            "error: set SKILL_CORE_TOKEN to a token of the core with skills.execute (skill-core token create --grant skills.execute)"
        );
        return ExitCode::from(2);
    };
    // The skills' artifacts and knowledge: this core with this account, unless the environment
    // names another core.
    let named = ["CONTROL_PLANE_URL", "CONTROL_PLANE_SERVER"]
        .iter()
        .any(|name| std::env::var(name).is_ok_and(|value| !value.trim().is_empty()));
    let core = if named {
        None
    } else {
        match HttpCore::new(&args.core, Some(token.clone())) {
            Ok(core) => Some(Arc::new(core) as Arc<dyn CoreAccess>),
            Err(error) => {
                eprintln!("error: --core: {}", error.message());
                return ExitCode::from(2);
            }
        }
    };
    let client = match skill_client::Client::new(&args.core, token) {
        Ok(client) => client,
        Err(error) => {
            eprintln!("error: --core: {error}");
            return ExitCode::from(2);
        }
    };
    let logs = skill_http::init_logs(&crate::serve::server_name(), "info");
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("error: cannot start the async runtime: {error}");
            return ExitCode::FAILURE;
        }
    };
    let mut runner = match LocalRunner::new(registry).only(&args.modules) {
        Ok(runner) => runner,
        Err(error) => {
            eprintln!("error: {error}");
            return ExitCode::from(2);
        }
    };
    if let Some(core) = core {
        runner = runner.with_core(core);
    }
    let options = Options {
        concurrency: args.concurrency as usize,
        grace: Duration::from_secs(args.grace),
        ..Options::default()
    };
    let metrics = args.metrics_listen.clone().filter(|address| !address.trim().is_empty());
    let (skills, concurrency) = (runner.skills.len(), args.concurrency);
    let result = runtime.block_on(async {
        let stop = skill_http::stop_signal();
        // Where the metrics are is said before the line that says it runs.
        if let Some(address) = metrics {
            match skill_http::metrics::start("host", &address, None).await {
                Ok(listening) => eprintln!("metrics at http://{listening}/metrics"),
                Err(error) => return Err(error),
            }
        }
        tracing::info!(core = %args.core, skills, concurrency, "executing the local skills of this host");
        skill_executor::run(client, Arc::new(runner), options, stop).await.map_err(|error| error.to_string())
    });
    runtime.shutdown_background();
    let code = match result {
        // The loop logged its figures.
        Ok(_) => ExitCode::SUCCESS,
        Err(error) => {
            tracing::error!(error = %error, "the executor stopped");
            ExitCode::FAILURE
        }
    };
    logs.flush();
    code
}
