//! Task types: publication (every rule checked, the spec normalized), reading and listing. A
//! published version never changes (the database refuses any update).

use serde_json::{Map, Value, json};
use skill_api::events::TaskTypePublished;
use skill_api::{
    ApprovalSchema, ArtifactSchema, Criterion, InvokeSkill, Lifecycle, OutcomeReaction, Page, Reaction, SkillStatus,
    TaskExecution, TaskTypeOut, TaskTypeQuery, TaskTypeRequest, TaskTypeSpec,
};
use skill_contract::SkillVersion;
use skill_contract::codes::Code;
use skill_contract::schema::SchemaValidator;
use skill_contract::task_type::decided_before;
use skill_store::ErrorKind;
use skill_store::records::{ArtifactTypeRecord, SkillRecord, TaskTypeRecord};

use crate::actor::Actor;
use crate::catalog::{checked_limit, view_time};
use crate::documents::PackageDocument;
use crate::error::{Class, EngineError, Result};
use crate::paths;
use crate::{Engine, Origin};
use futures::future::BoxFuture;
use skill_store::records::{Event, WorkChange};

/// The most input mappings an execution has.
const MAX_MAPPINGS: usize = 100;

fn invalid(field: &str, message: impl Into<String>) -> EngineError {
    EngineError::new(Class::Invalid, Code::InvalidTaskType, message).with("field", field)
}

/// `value` read as a `T`; `invalid_task_type` at the path under `field` that does not read.
fn read<T: serde::de::DeserializeOwned>(value: &Value, field: &str) -> Result<T> {
    skill_contract::read_typed(value, field).map_err(|unread| invalid(&unread.path, unread.reason))
}

fn invalid_execution(field: &str, reason: &str, message: impl Into<String>) -> EngineError {
    EngineError::new(Class::Invalid, Code::InvalidTaskExecution, message).with("field", field).with("reason", reason)
}

impl Engine {
    /// Publishes a task type version (`org.manage`): its fields checked, every skill it names
    /// looked up, the acceptance rule applied.
    pub async fn publish_task_type(
        &self,
        actor: &Actor,
        request: &TaskTypeRequest,
        request_id: Option<&str>,
    ) -> Result<TaskTypeOut> {
        actor.require("org.manage")?;
        let record = self.prepare_task_type(actor, request, &[], &[], &[]).await?;
        let record = self.publish_document(record, &Origin::of(actor, request_id)).await?;
        Ok(task_type_out(record))
    }

    /// The `task_type.published` event of `record`.
    pub(crate) fn task_type_event(&self, record: &TaskTypeRecord, origin: &Origin) -> skill_store::records::Event {
        let published = TaskTypePublished {
            key: record.key.clone(),
            version: record.version.clone(),
            execution: record.spec.execution.as_ref().map(|execution| json!(execution)),
        };
        self.event(format!("task_type:{}", record.id), &published, origin)
    }

    /// The record a publication of `request` writes, every rule checked; the skills it names
    /// are looked up among `planned` (versions published together with it) and then the catalog.
    pub(crate) async fn prepare_task_type(
        &self,
        actor: &Actor,
        request: &TaskTypeRequest,
        planned: &[SkillRecord],
        planned_types: &[ArtifactTypeRecord],
        planned_processes: &[String],
    ) -> Result<TaskTypeRecord> {
        let key = request.key.as_str();
        let key_ok = key.len() <= 200
            && key.chars().next().is_some_and(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
            && key.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '.' | '_' | '-'));
        if !key_ok {
            return Err(invalid(
                "key",
                format!("a task type key is 1 to 200 of a-z 0-9 . _ - starting with a letter or digit, not {key:?}"),
            ));
        }
        if key == super::REQUEST_TYPE {
            return Err(EngineError::new(
                Class::Forbidden,
                Code::TaskTypeReserved,
                format!("{key} is the core's own task type for agents' requests: publish yours under another key"),
            )
            .with("field", "key"));
        }
        SkillVersion::new(&request.version).map_err(|error| invalid("version", error.to_string()))?;
        let mut spec = TaskTypeSpec::new(&request.version);
        for (field, value) in [("displayName", &request.display_name), ("description", &request.description)] {
            if value.as_ref().is_some_and(|text| text.chars().count() > 10_000) {
                return Err(invalid(field, format!("{field} is at most 10,000 characters")));
            }
        }
        spec.display_name.clone_from(&request.display_name);
        spec.description.clone_from(&request.description);
        let fields = request.custom_fields.clone().unwrap_or_default();
        check_custom_fields(&fields)?;
        spec.custom_fields = fields;
        if let Some(schema) = &request.approval_schema {
            self.check_approval_schema(schema, "approvalSchema", planned).await?;
            spec.approval_schema = Some(schema.clone());
        }
        if let Some(schema) = &request.completion_schema {
            self.check_approval_schema(schema, "completionSchema", planned).await?;
            spec.completion_schema = Some(schema.clone());
        }
        if let Some(criteria) = &request.acceptance {
            let criteria: Vec<Criterion> = read(&Value::Array(criteria.clone()), "acceptance")?;
            self.check_acceptance(&criteria, planned).await?;
            spec.acceptance = Some(criteria);
        }
        if let Some(schema) = &request.artifact_schema {
            spec.artifact_schema = Some(self.checked_artifact_schema(schema, planned_types).await?);
        }
        if let Some(execution) = &request.execution {
            spec.execution = Some(self.checked_execution(execution, planned).await?);
        }
        if let Some(process) = &request.process {
            self.checked_task_process(process, planned_processes).await?;
            spec.process = Some(process.clone());
        }
        Ok(TaskTypeRecord {
            id: self.new_id(),
            key: key.to_owned(),
            version: request.version.clone(),
            display_name: request.display_name.clone().unwrap_or_default(),
            description: request.description.clone().unwrap_or_default(),
            spec,
            created_by: Some(actor.id().to_owned()),
            created_at: self.now(),
        })
    }

    /// One task type version: an id, `key@version` or a key (its newest version). Readable with
    /// `org.read` or `tasks.read` in some workspace.
    pub async fn task_type(&self, actor: &Actor, reference: &str) -> Result<TaskTypeOut> {
        require_type_reader(actor)?;
        Ok(task_type_out(self.find_task_type(reference).await?))
    }

    /// Task type versions in publication order.
    pub async fn task_types(&self, actor: &Actor, query: &TaskTypeQuery) -> Result<Page<TaskTypeOut>> {
        require_type_reader(actor)?;
        let limit = checked_limit(query.limit, 50, 200)?;
        let mut found =
            self.store.task_types(query.key.as_deref(), query.cursor.as_deref(), i64::from(limit) + 1).await?;
        let more = found.len() > limit as usize;
        found.truncate(limit as usize);
        let next_cursor = if more { found.last().map(|t| t.id.clone()) } else { None };
        Ok(Page { items: found.into_iter().map(task_type_out).collect(), next_cursor })
    }

    pub(crate) async fn find_task_type(&self, reference: &str) -> Result<TaskTypeRecord> {
        let missing = || EngineError::not_found(&format!("task type {reference}")).with("taskType", reference);
        let found = if let Some((key, version)) = reference.split_once('@') {
            self.store.task_type_version(key, version).await
        } else if uuid::Uuid::try_parse(reference).is_ok() {
            self.store.task_type(reference).await
        } else {
            self.store.newest_task_type(reference).await
        };
        found.map_err(|error| match error.kind() {
            ErrorKind::NotFound => missing(),
            _ => error.into(),
        })
    }

    /// A task type's process: a pinned version, published or published with it (`planned`,
    /// `key@version`), whose input reads the task.
    async fn checked_task_process(&self, process: &skill_api::TaskTypeProcess, planned: &[String]) -> Result<()> {
        let pinned = process
            .process
            .split_once('@')
            .is_some_and(|(key, version)| skill_contract::rule::is_rule_key(key) && SkillVersion::new(version).is_ok());
        if !pinned {
            return Err(invalid(
                "process.process",
                format!("{:?} is not a pinned process: key@version", process.process),
            ));
        }
        if !planned.contains(&process.process) {
            self.find_process(&process.process).await.map_err(|_| {
                EngineError::new(
                    Class::Invalid,
                    Code::UnknownReference,
                    format!("no process {}: publish it first, or with the task type in its package", process.process),
                )
                .with("path", "process.process")
                .with("value", process.process.clone())
            })?;
        }
        if process.input.len() > skill_contract::rule::MAX_MAPPINGS {
            return Err(invalid("process.input", format!("at most {} inputs", skill_contract::rule::MAX_MAPPINGS)));
        }
        for (name, value) in &process.input {
            if let Some(path) = value.as_str().filter(|text| text.starts_with('$'))
                && skill_contract::paths::parse(path).is_none()
            {
                return Err(invalid(&format!("process.input.{name}"), format!("{path:?} is not a path over the task")));
            }
        }
        Ok(())
    }

    /// An approval or completion schema: `{gates: {<name>: {draft?, outcomes: {approved|rejected:
    /// [action]}}}}`, every action an `invokeSkill` of a skill that exists, pinned when it writes.
    async fn check_approval_schema(&self, schema: &Value, field: &str, planned: &[SkillRecord]) -> Result<()> {
        let schema: ApprovalSchema = read(schema, field)?;
        for (name, gate) in &schema.gates {
            let here = format!("{field}.gates.{name}");
            if let Some(draft) = &gate.draft {
                let skill = draft.skill.as_str();
                let found = if skill.contains('@') { self.skill_for_type(skill, planned).await? } else { None };
                super::draft::check_draft(draft, &format!("{here}.draft"), found.as_ref())?;
            }
            for (decision, actions) in gate.outcomes.by_decision() {
                for (index, action) in actions.iter().enumerate() {
                    let at = format!("{here}.outcomes.{decision}[{index}].invokeSkill");
                    self.check_action(&action.invoke_skill, &at, planned).await?;
                }
            }
        }
        Ok(())
    }

    /// An action's call (at `here`): its inputs paths or literals, its reactions closing the task
    /// or commenting, its skill in the catalog and pinned when it writes.
    async fn check_action(&self, invoke: &InvokeSkill, here: &str, planned: &[SkillRecord]) -> Result<()> {
        if let Some(inputs) = &invoke.inputs
            && let Some((name, text)) = paths::first_non_path(inputs)
        {
            return Err(invalid(&format!("{here}.inputs.{name}"), paths::not_a_path(text)));
        }
        for branch in [OutcomeReaction::OnSuccess, OutcomeReaction::OnFailure] {
            for (index, reaction) in invoke.reactions(branch).iter().enumerate() {
                let fits = match reaction {
                    Reaction::SetTaskStatus(status) => status.is_terminal(),
                    Reaction::AddComment(text) => (1..=10_000).contains(&text.chars().count()),
                };
                if !fits {
                    return Err(invalid(
                        &format!("{here}.{}[{index}]", branch.as_str()),
                        "a reaction is {setTaskStatus: done|failed|cancelled} or {addComment: <1 to 10,000 characters>}",
                    ));
                }
            }
        }
        let skill = invoke.skill.as_str();
        let path = format!("{here}.skill");
        let Some(found) = self.skill_for_type(skill, planned).await? else {
            return Err(EngineError::new(
                Class::Invalid,
                Code::UnknownReference,
                format!("{skill} is not in the catalog: publish it first"),
            )
            .with("field", path)
            .with("value", skill));
        };
        if !skill.contains('@') && crate::basis::writes(found.side_effects) {
            return Err(EngineError::new(
                Class::Invalid,
                Code::UnpinnedExternalWrite,
                format!("{skill} writes to the outside world, so an outcome names the version it is approved for"),
            )
            .with("field", path)
            .with("hint", format!("{}@{}", found.name, found.version)));
        }
        Ok(())
    }

    /// The acceptance rule: an `external_write` check only after a `human` or `llm_judge` one
    /// with the same (or no) `when`.
    async fn check_acceptance(&self, criteria: &[Criterion], planned: &[SkillRecord]) -> Result<()> {
        for (index, criterion) in criteria.iter().enumerate() {
            let Some(skill) = criterion.skill() else { continue };
            let path = format!("acceptance[{index}].spec.skill");
            let Some(skill) = skill.as_str().filter(|s| s.contains('@')) else {
                return Err(EngineError::new(
                    Class::Invalid,
                    Code::InvalidAcceptanceSpec,
                    "a check's skill is pinned: name@version",
                )
                .with("field", path));
            };
            let Some(found) = self.skill_for_type(skill, planned).await? else {
                return Err(EngineError::new(
                    Class::Invalid,
                    Code::UnknownReference,
                    format!("{skill} is not in the catalog"),
                )
                .with("field", path)
                .with("value", skill));
            };
            if crate::basis::writes(found.side_effects) && !decided_before(criteria, index) {
                return Err(EngineError::new(
                    Class::Invalid,
                    Code::InvalidAcceptanceSpec,
                    format!("{skill} writes to the outside world, and no human or llm_judge check with the same when comes before it"),
                )
                .with("field", path)
                .with("cause", "external_write_without_decision"));
            }
        }
        Ok(())
    }

    /// `{outputs: [{key, type, required?, description?}]}`: each key a distinct input-like name,
    /// each type an artifact type published (or among `planned`).
    async fn checked_artifact_schema(&self, schema: &Value, planned: &[ArtifactTypeRecord]) -> Result<ArtifactSchema> {
        let schema: ArtifactSchema = read(schema, "artifactSchema")?;
        if schema.outputs.len() > MAX_MAPPINGS {
            return Err(invalid("artifactSchema.outputs", "outputs is a list of at most 100 slots"));
        }
        let mut seen = std::collections::HashSet::new();
        for (index, slot) in schema.outputs.iter().enumerate() {
            let here = format!("artifactSchema.outputs[{index}]");
            let key = slot.key.as_str();
            if !is_input_name(key) {
                return Err(invalid(
                    &format!("{here}.key"),
                    "a slot's key is the output's name: [A-Za-z_][A-Za-z0-9_-]{0,99}",
                ));
            }
            if !seen.insert(key) {
                return Err(invalid(&format!("{here}.key"), format!("two slots have the key {key:?}")));
            }
            let kind = slot.kind.as_str();
            let known = planned.iter().any(|t| t.key == kind) || self.newest_artifact_type(kind).await?.is_some();
            if !known {
                return Err(EngineError::new(
                    Class::Invalid,
                    Code::UnknownReference,
                    format!("no artifact type {kind:?} is published: publish it first"),
                )
                .with("field", format!("{here}.type"))
                .with("value", kind));
            }
            if slot.description.as_ref().is_some_and(|text| text.chars().count() > 10_000) {
                return Err(invalid(
                    &format!("{here}.description"),
                    "a description is text of at most 10,000 characters",
                ));
            }
        }
        Ok(schema)
    }

    /// `{skill, version, inputs}` checked (§10.1) and normalized (`inputs` defaults to
    /// `$.customFields`); the version must exist, have a contract and not be disabled.
    async fn checked_execution(&self, execution: &Value, planned: &[SkillRecord]) -> Result<TaskExecution> {
        let execution: TaskExecution = skill_contract::read_typed(execution, "execution")
            .map_err(|unread| invalid_execution(&unread.path, "malformed", unread.reason))?;
        let (skill, version) = (execution.skill.as_str(), execution.version.as_str());
        if skill.is_empty() || skill.contains('@') || skill.chars().count() > 200 {
            return Err(invalid_execution(
                "execution.skill",
                "malformed",
                "execution.skill is a skill name without @version",
            ));
        }
        if version.is_empty() || version.chars().count() > 50 {
            return Err(invalid_execution(
                "execution.version",
                "malformed",
                "execution.version pins a version (1 to 50 characters)",
            ));
        }
        match &execution.inputs {
            Value::String(path) if paths::is_path(path) => {}
            Value::Object(mapping) if mapping.len() <= MAX_MAPPINGS => {
                for (name, path) in mapping {
                    if !is_input_name(name) {
                        return Err(invalid_execution(
                            &format!("execution.inputs.{name}"),
                            "malformed",
                            "an input name is [A-Za-z_][A-Za-z0-9_-]{0,99}",
                        ));
                    }
                    if !path.as_str().is_some_and(paths::is_path) {
                        return Err(invalid_execution(
                            &format!("execution.inputs.{name}"),
                            "malformed",
                            "each input maps to a path: `$` then .name and [n] segments",
                        ));
                    }
                }
            }
            _ => {
                return Err(invalid_execution(
                    "execution.inputs",
                    "malformed",
                    "execution.inputs is one path or at most 100 {input: path} mappings",
                ));
            }
        }
        let reference = format!("{skill}@{version}");
        let Some(found) = self.skill_for_type(&reference, planned).await? else {
            return Err(invalid_execution("execution", "not_found", format!("{reference} is not in the catalog")));
        };
        if found.contract.is_none() {
            return Err(invalid_execution(
                "execution",
                "no_contract",
                format!("{reference} has no contract: nothing to call"),
            ));
        }
        if found.status == SkillStatus::Disabled {
            return Err(invalid_execution("execution", "disabled", format!("{reference} is disabled")));
        }
        Ok(execution)
    }
}

impl Engine {
    /// The version `reference` (`name@version`, or a name: its newest) among `planned`, else in
    /// the catalog; `None` when neither has it.
    async fn skill_for_type(&self, reference: &str, planned: &[SkillRecord]) -> Result<Option<SkillRecord>> {
        let (name, version) = match reference.split_once('@') {
            Some((name, version)) => (name, Some(version)),
            None => (reference, None),
        };
        let mine = planned
            .iter()
            .rev()
            .find(|skill| skill.name == name && version.is_none_or(|version| skill.version == version));
        if let Some(skill) = mine {
            return Ok(Some(skill.clone()));
        }
        self.resolved(reference).await
    }
}

/// Whether `name` is `[A-Za-z_][A-Za-z0-9_-]{0,99}`: an input's or an output's name.
fn is_input_name(name: &str) -> bool {
    name.len() <= 100
        && name.chars().next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

/// `409 task_type_exists`.
pub(crate) fn type_exists(key: &str, version: &str) -> EngineError {
    EngineError::new(
        Class::Conflict,
        Code::TaskTypeExists,
        format!("{key}@{version} is published already, and a published version never changes: publish a new version"),
    )
    .with("taskType", format!("{key}@{version}"))
}

/// `customFields`: name → a JSON Schema of the field's value, together a valid schema.
fn check_custom_fields(fields: &Map<String, Value>) -> Result<()> {
    let schema =
        json!({"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object", "properties": fields});
    SchemaValidator::new(&schema).map(|_| ()).map_err(|error| invalid("customFields", format!("customFields: {error}")))
}

fn require_type_reader(actor: &Actor) -> Result<()> {
    if actor.can("org.read") || actor.can_somewhere("tasks.read") {
        Ok(())
    } else {
        Err(EngineError::forbidden("tasks.read"))
    }
}

pub(crate) fn task_type_out(record: TaskTypeRecord) -> TaskTypeOut {
    TaskTypeOut {
        id: record.id,
        key: record.key,
        version: record.version,
        display_name: record.display_name,
        description: record.description,
        execution: record.spec.execution.clone(),
        spec: record.spec,
        created_at: view_time(&record.created_at),
    }
}

impl Engine {
    /// The task type `reference` (`key@version`) names: published with the document being
    /// published (`planned`), else in the catalog; `unknown_reference` at `path` otherwise.
    pub(crate) async fn ensured_type(
        &self,
        path: &str,
        reference: &str,
        planned: &[TaskTypeRecord],
    ) -> Result<TaskTypeRecord> {
        let (key, version) = reference.split_once('@').unwrap_or((reference, ""));
        if let Some(found) = planned.iter().find(|t| t.key == key && t.version == version) {
            return Ok(found.clone());
        }
        match self.store.task_type_version(key, version).await {
            Ok(found) => Ok(found),
            Err(error) if error.kind() == ErrorKind::NotFound => Err(EngineError::new(
                Class::Invalid,
                Code::UnknownReference,
                format!("no task type {reference}: publish it first, or with the rule in one package"),
            )
            .with("path", path)
            .with("value", reference)),
            Err(error) => Err(error.into()),
        }
    }
}

impl PackageDocument for TaskTypeRecord {
    fn reference(&self) -> (&str, &str) {
        (&self.key, &self.version)
    }

    fn stored<'a>(engine: &'a Engine, key: &'a str, version: &'a str) -> BoxFuture<'a, skill_store::Result<Self>> {
        engine.store.task_type_version(key, version)
    }

    fn same_as(&self, stored: &Self) -> bool {
        (&stored.spec, &stored.display_name, &stored.description) == (&self.spec, &self.display_name, &self.description)
    }

    fn exists(&self) -> EngineError {
        type_exists(&self.key, &self.version)
    }

    fn event(&self, engine: &Engine, origin: &Origin) -> Event {
        engine.task_type_event(self, origin)
    }

    fn insert<'a>(&'a self, engine: &'a Engine, event: &'a Event) -> BoxFuture<'a, skill_store::Result<()>> {
        Box::pin(async move {
            engine.store.write_work(&[WorkChange::InsertTaskType(self.clone())], std::slice::from_ref(event)).await
        })
    }
}
