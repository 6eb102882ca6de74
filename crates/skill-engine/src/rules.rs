//! Work rules: publication (every rule of the document checked, the condition compiled, every
//! reference resolved — the interpretation's version, the agent it acts as, the task types it
//! ensures), reading, listing, and the dry run. A published version never changes.
//!
//! | what | where |
//! |---|---|
//! | publication, reading, the dry run | here |
//! | evaluating facts, durable and idempotent | `rules/evaluation.rs` |

mod evaluation;

use skill_contract::codes::Code;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use serde_json::Value;
use skill_api::events::RulePublished;
use skill_api::{
    ConditionOut, EvaluateOut, EvaluateRequest, Page, PlannedCall, PlannedProcess, PlannedWork, RuleOut, RuleQuery,
    RuleRequest, SkillStatus,
};
use skill_conditions::Condition;
use skill_contract::rule::{EnsureWork, RuleSpec};
use skill_contract::{SideEffects, SkillRef};
use skill_store::ErrorKind;
use skill_store::records::{AgentRecord, Event, RuleRecord, SkillRecord};

pub use evaluation::RULE_WAIT_HOURS;

use crate::actor::Actor;
use crate::catalog::{checked_limit, view_time};
use crate::documents::PackageDocument;
use crate::error::{Class, EngineError, Result, document_problem};
use crate::paths::{filled, render};
use crate::planned::Planned;
use crate::scopes::{FactView, RuleScope};
use crate::{Engine, Origin};
use futures::future::BoxFuture;

/// The variables a rule's condition reads.
const CONDITION_READS: &[&str] = &["fact"];

/// Compiled conditions by rule version (a published version never changes).
#[derive(Debug, Default)]
pub(crate) struct Conditions(Mutex<HashMap<String, Arc<Condition>>>);

fn invalid(path: &str, message: impl Into<String>) -> EngineError {
    EngineError::new(Class::Invalid, Code::InvalidRule, message).with("path", path)
}

impl Engine {
    /// Publishes a rule version (`org.manage`).
    pub async fn publish_rule(
        &self,
        actor: &Actor,
        request: &RuleRequest,
        request_id: Option<&str>,
    ) -> Result<RuleOut> {
        actor.require("org.manage")?;
        let record = self.prepare_rule(actor, request, &Planned::default()).await?;
        let record = self.publish_document(record, &Origin::of(actor, request_id)).await?;
        Ok(rule_out(record))
    }

    /// The `rule.published` event of `record`.
    pub(crate) fn rule_event(&self, record: &RuleRecord, origin: &Origin) -> Event {
        let published = RulePublished {
            key: record.key.clone(),
            version: record.version.clone(),
            kind: record.kind.clone(),
            agent_principal_id: record.agent_principal_id.clone(),
            interpretation: record.spec.interpretation.as_ref().map(|i| i.skill.clone()),
            package: record.package_key.clone(),
        };
        self.event(format!("rule:{}", record.id), &published, origin)
    }

    /// The record a publication of `request` writes, every rule checked; what it names is looked
    /// up among `planned` first, then the catalog.
    pub(crate) async fn prepare_rule(
        &self,
        actor: &Actor,
        request: &RuleRequest,
        planned: &Planned<'_>,
    ) -> Result<RuleRecord> {
        if !skill_contract::rule::is_rule_key(&request.key) {
            return Err(invalid(
                "key",
                format!(
                    "{:?} is not a rule key: 1 to 200 of a-z 0-9 . _ - starting with a letter or digit",
                    request.key
                ),
            ));
        }
        let spec = skill_contract::rule::read_spec(&request.spec).map_err(document_problem)?;
        if let Some(found) = spec.problems().into_iter().next() {
            return Err(document_problem(found));
        }
        if let Some(when) = &spec.on.when {
            compile(when)?;
        }
        let interpretation = match spec.interpretation_ref() {
            Some(reference) => Some(self.interpretation(&reference, planned).await?),
            None => None,
        };
        let agent = self.rule_agent(&spec, interpretation.as_ref(), planned).await?;
        for (path, task_type) in spec.task_types() {
            self.ensured_type(&path, task_type, planned.task_types).await?;
        }
        for (path, process) in spec.processes() {
            self.ensured_process(&path, process, planned.processes).await?;
        }
        Ok(RuleRecord {
            id: self.new_id(),
            key: request.key.clone(),
            version: spec.version.clone(),
            kind: spec.on.kind.clone(),
            agent_principal_id: agent.principal_id,
            interpretation_skill_id: interpretation.map(|skill| skill.id),
            package_key: planned.package.map(str::to_owned),
            published_by: actor.id().to_owned(),
            created_at: self.now(),
            spec,
        })
    }

    /// The interpretation's version: known, enabled, with a contract, not writing.
    async fn interpretation(&self, reference: &SkillRef, planned: &Planned<'_>) -> Result<SkillRecord> {
        let path = "spec.interpretation.skill";
        let (name, version) = (reference.name().as_str(), reference.version().as_str());
        let found = match planned.skills.iter().find(|s| s.name == name && s.version == version) {
            Some(skill) => Some(skill.clone()),
            None => match self.store.skill_version(name, version).await {
                Ok(entry) => Some(entry.skill),
                Err(error) if error.kind() == ErrorKind::NotFound => None,
                Err(error) => return Err(error.into()),
            },
        };
        let Some(skill) = found else {
            return Err(EngineError::new(
                Class::Invalid,
                Code::UnknownSkill,
                format!("{reference} is not in the catalog: publish it, or name a version it has"),
            )
            .with("path", path)
            .with("value", reference.to_string()));
        };
        if skill.status == SkillStatus::Disabled {
            return Err(EngineError::new(Class::Invalid, Code::SkillDisabled, format!("{reference} is disabled"))
                .with("path", path)
                .with("value", reference.to_string()));
        }
        if skill.contract.is_none() {
            return Err(EngineError::new(
                Class::Invalid,
                Code::InvalidRuleInterpretation,
                format!("{reference} has no contract: a rule interprets with a version the core can call"),
            )
            .with("path", path));
        }
        if skill.side_effects == Some(SideEffects::ExternalWrite) {
            return Err(EngineError::new(
                Class::Invalid,
                Code::RuleSkillSideEffects,
                format!(
                    "{reference} writes to the outside world, and a rule has no human decision to refer to: interpret with a none or external_read version, and write through an approval's outcome"
                ),
            )
            .with("path", path)
            .with("value", reference.to_string()));
        }
        Ok(skill)
    }

    /// The agent the rule acts as: known, an agent (not an executor), assigned the interpretation.
    async fn rule_agent(
        &self,
        spec: &RuleSpec,
        interpretation: Option<&SkillRecord>,
        planned: &Planned<'_>,
    ) -> Result<AgentRecord> {
        let path = "spec.identity.agent";
        let key = spec.identity.agent.as_str();
        let agent = match planned.agents.iter().find(|agent| agent.key == key) {
            Some(agent) => agent.clone(),
            None => self.store.agent(key).await.map_err(|error| match error.kind() {
                ErrorKind::NotFound => EngineError::new(
                    Class::Invalid,
                    Code::UnknownReference,
                    format!("no agent {key}: declare it (agents/{key}.yaml) in the package, or in one it requires"),
                )
                .with("path", path)
                .with("value", key),
                _ => error.into(),
            })?,
        };
        if agent.spec.identity.kind != skill_contract::agent::AgentKind::Agent {
            return Err(invalid(path, format!("{key} is an executor: a rule acts as an agent (identity.kind agent)")));
        }
        if let Some(skill) = interpretation {
            let reference = format!("{}@{}", skill.name, skill.version);
            if !agent.spec.invoked().any(|(assigned, _)| assigned == reference) {
                return Err(EngineError::new(
                    Class::Invalid,
                    Code::SkillsInvokeNotPermitted,
                    format!("the agent {key} is not assigned {reference}, so it cannot interpret with it"),
                )
                .with("path", path)
                .with("missing", reference));
            }
        }
        Ok(agent)
    }

    /// A process the rule starts instances of: published (or published with it).
    pub(crate) async fn ensured_process(
        &self,
        path: &str,
        reference: &str,
        planned: &[skill_store::records::ProcessRecord],
    ) -> Result<skill_store::records::ProcessRecord> {
        let (key, version) = reference.split_once('@').unwrap_or((reference, ""));
        if let Some(found) = planned.iter().find(|p| p.key == key && p.version == version) {
            return Ok(found.clone());
        }
        match self.store.process_version(key, version).await {
            Ok(found) => Ok(found),
            Err(error) if error.kind() == ErrorKind::NotFound => Err(EngineError::new(
                Class::Invalid,
                Code::UnknownReference,
                format!("no process {reference}: publish it first, or with the rule in one package"),
            )
            .with("path", path)
            .with("value", reference)),
            Err(error) => Err(error.into()),
        }
    }

    /// One rule version: an id, `key@version`, or a key (its newest version) (`org.read`).
    pub async fn rule(&self, actor: &Actor, reference: &str) -> Result<RuleOut> {
        actor.require("org.read")?;
        self.find_rule(reference).await.map(rule_out)
    }

    pub(crate) async fn find_rule(&self, reference: &str) -> Result<RuleRecord> {
        let found = if let Some((key, version)) = reference.split_once('@') {
            self.store.rule_version(key, version).await
        } else if uuid::Uuid::try_parse(reference).is_ok() {
            self.store.rule(reference).await
        } else {
            self.store.newest_rule(reference).await
        };
        found.map_err(|error| match error.kind() {
            ErrorKind::NotFound => EngineError::not_found(&format!("rule {reference}")).with("rule", reference),
            _ => error.into(),
        })
    }

    /// Rule versions in publication order (`org.read`).
    pub async fn rules(&self, actor: &Actor, query: &RuleQuery) -> Result<Page<RuleOut>> {
        actor.require("org.read")?;
        let limit = checked_limit(query.limit, 50, 200)?;
        let mut found = self
            .store
            .rules(query.key.as_deref(), query.kind.as_deref(), query.cursor.as_deref(), i64::from(limit) + 1)
            .await?;
        let more = found.len() > limit as usize;
        found.truncate(limit as usize);
        let next_cursor = if more { found.last().map(|rule| rule.id.clone()) } else { None };
        Ok(Page { items: found.into_iter().map(rule_out).collect(), next_cursor })
    }

    /// What the rule would make of a fact, writing nothing (`org.read`).
    pub async fn evaluate_rule(
        &self,
        actor: &Actor,
        reference: &str,
        request: &EvaluateRequest,
    ) -> Result<EvaluateOut> {
        actor.require("org.read")?;
        let rule = self.find_rule(reference).await?;
        let draft = &request.fact;
        let workspace = match self.store.workspace_by_reference(&draft.workspace).await {
            Ok(found) => found,
            Err(error) if error.kind() == ErrorKind::NotFound => {
                return Err(EngineError::new(
                    Class::Invalid,
                    Code::InvalidFact,
                    format!("no workspace {}", draft.workspace),
                )
                .with("field", "fact.workspace"));
            }
            Err(error) => return Err(error.into()),
        };
        let fact = FactView {
            id: None,
            workspace: workspace.key.clone(),
            workspace_id: workspace.id.clone(),
            kind: draft.kind.clone(),
            key: draft.key.clone(),
            data: draft.data.clone(),
            source: draft.source.clone(),
            occurred_at: draft.occurred_at.clone().unwrap_or_else(|| view_time(&self.now())),
            depth: 0,
        };
        let document = RuleScope::of(fact).document();
        let kind_matches = draft.kind == rule.kind;
        let agent_may_work = self
            .agent_actor(&rule.agent_principal_id)
            .await
            .is_ok_and(|agent| agent.can_in("tasks.write", &workspace.id));
        let condition = match &rule.spec.on.when {
            None => ConditionOut { source: None, value: Some(true), error: None },
            Some(when) => {
                let outcome = self.condition(&rule).and_then(|compiled| {
                    compiled
                        .eval(&document)
                        .map_err(|error| EngineError::new(Class::Invalid, Code::ConditionError, error.message))
                });
                match outcome {
                    Ok(value) => ConditionOut { source: Some(when.clone()), value: Some(value), error: None },
                    Err(error) => ConditionOut { source: Some(when.clone()), value: None, error: Some(error.message) },
                }
            }
        };
        let matched = kind_matches && agent_may_work && condition.value == Some(true);
        let call = rule.spec.interpretation.as_ref().filter(|_| matched).map(|interpretation| PlannedCall {
            skill: interpretation.skill.clone(),
            inputs: filled(&interpretation.inputs, &document),
            idempotency_key: format!("rule:{}:<fact id>", rule.id),
        });
        let work = if matched {
            rule.spec
                .ensure_work
                .iter()
                .filter_map(|work| match work {
                    EnsureWork::Task(task) => Some(PlannedWork {
                        task_type: task.task_type.clone(),
                        work_key: Value::String(render(&task.work_key, &document)),
                        title: Value::String(render(&task.title, &document)),
                        custom_fields: filled(&task.custom_fields, &document),
                    }),
                    EnsureWork::Process(_) => None,
                })
                .collect()
        } else {
            Vec::new()
        };
        let processes = if matched {
            rule.spec
                .ensure_work
                .iter()
                .filter_map(|work| match work {
                    EnsureWork::Process(process) => Some(PlannedProcess {
                        process: process.process.clone(),
                        work_key: Value::String(render(&process.work_key, &document)),
                        input: filled(&process.input, &document),
                    }),
                    EnsureWork::Task(_) => None,
                })
                .collect()
        } else {
            Vec::new()
        };
        Ok(EvaluateOut {
            processes,
            rule: format!("{}@{}", rule.key, rule.version),
            matched,
            kind_matches,
            agent_may_work,
            condition,
            call,
            work,
        })
    }

    /// The rule's condition, compiled once per version.
    pub(crate) fn condition(&self, rule: &RuleRecord) -> Result<Arc<Condition>> {
        let Some(source) = &rule.spec.on.when else {
            return Err(EngineError::new(Class::Internal, Code::InternalError, "the rule has no condition"));
        };
        let mut cache = self.conditions.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(found) = cache.get(&rule.id) {
            return Ok(Arc::clone(found));
        }
        let compiled = Arc::new(compile(source)?);
        cache.insert(rule.id.clone(), Arc::clone(&compiled));
        Ok(compiled)
    }
}

/// A rule's condition compiled: `422 invalid_condition` with where, when it is not one.
fn compile(source: &str) -> Result<Condition> {
    Condition::compile_reading(source, CONDITION_READS).map_err(|error| {
        EngineError::new(Class::Invalid, Code::InvalidCondition, format!("spec.on.when does not compile: {error}"))
            .with("path", "spec.on.when")
            .with("line", error.line)
            .with("column", error.column)
    })
}

pub(crate) fn rule_exists(key: &str, version: &str) -> EngineError {
    EngineError::new(
        Class::Conflict,
        Code::RuleExists,
        format!("{key}@{version} is published already: a published rule never changes; publish another version"),
    )
    .with("rule", format!("{key}@{version}"))
}

pub(crate) fn rule_out(record: RuleRecord) -> RuleOut {
    RuleOut {
        id: record.id,
        key: record.key,
        version: record.version,
        spec: record.spec,
        agent_principal_id: record.agent_principal_id,
        interpretation_skill_id: record.interpretation_skill_id,
        package: record.package_key,
        published_by: record.published_by,
        created_at: view_time(&record.created_at),
    }
}

impl PackageDocument for RuleRecord {
    fn reference(&self) -> (&str, &str) {
        (&self.key, &self.version)
    }

    fn stored<'a>(engine: &'a Engine, key: &'a str, version: &'a str) -> BoxFuture<'a, skill_store::Result<Self>> {
        engine.store.rule_version(key, version)
    }

    fn same_as(&self, stored: &Self) -> bool {
        stored.spec == self.spec
    }

    fn exists(&self) -> EngineError {
        crate::documents::published_otherwise(Code::RuleExists, "rule", &self.key, &self.version)
    }

    fn event(&self, engine: &Engine, origin: &Origin) -> Event {
        engine.rule_event(self, origin)
    }

    fn insert<'a>(&'a self, engine: &'a Engine, event: &'a Event) -> BoxFuture<'a, skill_store::Result<()>> {
        engine.store.insert_rule(self, event)
    }

    fn published_already(&self) -> EngineError {
        rule_exists(&self.key, &self.version)
    }
}
