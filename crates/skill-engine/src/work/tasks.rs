//! Tasks: created in a workspace with a type's custom fields, read, listed, closed.
use skill_api::Lifecycle;
use skill_api::events::{TaskClosed, TaskCreated};
use skill_contract::codes::Code;

use serde_json::{Value, json};
use skill_api::{CloseTaskRequest, Page, State, TaskOut, TaskQuery, TaskRequest, TaskStatus};
use skill_contract::schema::SchemaValidator;
use skill_store::records::{TaskFilter, TaskRecord, TaskTypeRecord, WorkChange};

use super::comment_event;
use crate::actor::Actor;
use crate::basis::task_terminal;
use crate::catalog::{bounded_page, checked_limit};
use crate::error::{Class, EngineError, Result, requested_state};
use crate::paths::task_out;
use crate::{Engine, Origin};

impl Engine {
    /// Creates a task (`tasks.write` in the workspace), its custom fields checked against the
    /// type's.
    pub async fn create_task(&self, actor: &Actor, request: &TaskRequest, request_id: Option<&str>) -> Result<TaskOut> {
        let workspace = self.find_workspace(&request.workspace).await?;
        if !actor.can_in("tasks.write", &workspace) {
            return Err(EngineError::forbidden("tasks.write").with("workspaceId", workspace));
        }
        let task_type = self.find_task_type(&request.task_type).await?;
        if task_type.key == super::REQUEST_TYPE {
            return Err(EngineError::new(
                Class::Forbidden,
                Code::TaskTypeReserved,
                "agent-request tasks are made by the core for an agent's call through /mcp, never by hand",
            )
            .with("field", "taskType"));
        }
        if !(1..=500).contains(&request.title.chars().count()) {
            return Err(EngineError::invalid_request("a title is 1 to 500 characters").with("field", "title"));
        }
        let fields = Value::Object(request.custom_fields.clone().unwrap_or_default());
        check_fields(&task_type, &fields)?;
        self.check_required_fields(&task_type, &fields).await?;
        let now = self.now();
        let id = self.new_id();
        let initiators = actor.initiators_of(skill_api::InitiatorRole::Created, &format!("task:{id}"));
        let task = TaskRecord {
            id,
            workspace_id: workspace,
            task_type_id: task_type.id.clone(),
            title: request.title.clone(),
            custom_fields: fields,
            status: TaskStatus::Open,
            created_by: actor.id().to_owned(),
            row_version: 1,
            created_at: now,
            updated_at: now,
            closed_at: None,
            close_reason: None,
            initiators,
        };
        let created = TaskCreated {
            workspace_id: task.workspace_id.clone(),
            task_type_id: task.task_type_id.clone(),
            task_type: format!("{}@{}", task_type.key, task_type.version),
            initiators: task.initiators.clone(),
        };
        let event = self.event(format!("task:{}", task.id), &created, &Origin::of(actor, request_id));
        let mut changes = vec![WorkChange::InsertTask(task.clone())];
        let mut events = vec![event];
        let started = self
            .task_instance(&task, &task_type, actor.id())
            .await
            .map_err(|error| error.shown_to(actor.can("org.read")))?;
        let starts = started.is_some();
        if let Some((instance, event)) = started {
            changes.push(WorkChange::InsertInstance(instance));
            events.push(event);
        }
        if let Some(approval) = &request.approval {
            let (approval, event) =
                self.new_approval(actor, &task, true, approval.comment.as_deref(), None, request_id)?;
            changes.push(WorkChange::InsertApproval(approval));
            events.push(event);
        }
        self.store.write_work(&changes, &events).await?;
        if starts {
            self.moments.processes_due();
        }
        Ok(task_out(task, &task_type))
    }

    /// One task (`tasks.read` in its workspace).
    pub async fn task(&self, actor: &Actor, id: &str) -> Result<TaskOut> {
        let task = self.visible_task(actor, id, None).await?;
        let task_type = self.store.task_type(&task.task_type_id).await?;
        Ok(task_out(task, &task_type))
    }

    /// Tasks newest first, of the workspaces `actor` reads.
    pub async fn tasks(&self, actor: &Actor, query: &TaskQuery) -> Result<Page<TaskOut>> {
        let limit = checked_limit(query.limit, 50, 200)?;
        let readable = actor.workspaces_with("tasks.read");
        let workspaces = match &query.workspace {
            Some(workspace) => {
                let id = self.find_workspace(workspace).await?;
                if !actor.can_in("tasks.read", &id) {
                    return Err(EngineError::forbidden("tasks.read").with("workspaceId", id));
                }
                Some(vec![id])
            }
            None if readable.as_ref().is_some_and(Vec::is_empty) => return Err(EngineError::forbidden("tasks.read")),
            None => readable,
        };
        let status = query
            .status
            .as_deref()
            .map(|word| requested_state(word, TaskStatus::ALL, "a task's status"))
            .transpose()?;
        let before = match &query.cursor {
            Some(cursor) => {
                let task = self.store.task(cursor).await.map_err(|_| {
                    EngineError::invalid_request("the cursor is not one this listing gave").with("field", "cursor")
                })?;
                Some((task.created_at, task.id))
            }
            None => None,
        };
        let filter = TaskFilter { workspaces, status, task_type_id: None, before, limit: i64::from(limit) + 1 };
        let mut found = self.store.tasks(&filter).await?;
        let more = found.len() > limit as usize;
        found.truncate(limit as usize);
        let next = if more { found.last().map(|task| task.id.clone()) } else { None };
        let mut items = Vec::with_capacity(found.len());
        let mut types: Vec<TaskTypeRecord> = Vec::new();
        for task in found {
            if !types.iter().any(|t| t.id == task.task_type_id) {
                types.push(self.store.task_type(&task.task_type_id).await?);
            }
            let task_type = types.iter().find(|t| t.id == task.task_type_id).expect("invariant: read above");
            // An agent's request is the business of people, never of another agent.
            if task_type.key == super::REQUEST_TYPE && actor.principal().kind == skill_api::PrincipalKind::Agent {
                continue;
            }
            items.push(task_out(task, task_type));
        }
        Ok(bounded_page(items, next, |item| item.id.clone()))
    }

    /// Closes a task (`tasks.write`): `done`, `failed` or `cancelled`, for good. Its pending
    /// approvals are withdrawn with it; calls waiting on its approvals or runs are cancelled when
    /// claimed (`basis_revoked`, `task_terminal`).
    pub async fn close_task(
        &self,
        actor: &Actor,
        id: &str,
        request: &CloseTaskRequest,
        request_id: Option<&str>,
    ) -> Result<TaskOut> {
        let status = requested_state(
            &request.status,
            &[TaskStatus::Done, TaskStatus::Failed, TaskStatus::Cancelled],
            "a task's closing status",
        )?;
        for _ in 0..5 {
            let task = self.visible_task(actor, id, Some("tasks.write")).await?;
            if task.status.is_terminal() {
                return Err(task_terminal(&task));
            }
            let origin = Origin::of(actor, request_id);
            let mut changes = Vec::new();
            let mut events = Vec::new();
            self.withdraw_gates(&task, &origin, &mut changes, &mut events).await?;
            let closed = self.closed(&task, status, &origin, &mut events);
            changes.push(WorkChange::UpdateTask(closed.clone()));
            if let Some(text) = &request.comment {
                let comment = self.comment(&task, actor.id(), text)?;
                events.push(comment_event(&comment, &origin));
                changes.push(WorkChange::InsertComment(comment));
            }
            if crate::error::written(self.store.write_work(&changes, &events).await)? {
                let task_type = self.store.task_type(&closed.task_type_id).await?;
                return Ok(task_out(closed, &task_type));
            }
        }
        Err(crate::error::busy())
    }

    /// `task` closed as `status` now, with its `task.closed` event pushed to `events`.
    pub(crate) fn closed(
        &self,
        task: &TaskRecord,
        status: TaskStatus,
        origin: &Origin,
        events: &mut Vec<skill_store::records::Event>,
    ) -> TaskRecord {
        self.closed_for(task, status, None, origin, events)
    }

    /// [`Engine::closed`] by the core, for `reason` (`gate_rejected`, …).
    pub(crate) fn closed_for(
        &self,
        task: &TaskRecord,
        status: TaskStatus,
        reason: Option<&str>,
        origin: &Origin,
        events: &mut Vec<skill_store::records::Event>,
    ) -> TaskRecord {
        let now = self.now();
        let closed = TaskClosed { status, workspace_id: task.workspace_id.clone(), reason: reason.map(str::to_owned) };
        events.push(self.event(format!("task:{}", task.id), &closed, origin));
        TaskRecord {
            status,
            closed_at: Some(now),
            close_reason: reason.map(str::to_owned),
            updated_at: now,
            row_version: task.row_version + 1,
            ..task.clone()
        }
    }
}

/// The most bytes of JSON a task's custom fields hold, and the most keys of objects in them.
pub(crate) const MAX_FIELDS_BYTES: usize = 64 * 1024;
pub(crate) const MAX_FIELDS_KEYS: usize = 1_000;

/// The keys of every object in `value`.
fn keys_in(value: &Value) -> usize {
    match value {
        Value::Object(map) => map.len() + map.values().map(keys_in).sum::<usize>(),
        Value::Array(items) => items.iter().map(keys_in).sum(),
        _ => 0,
    }
}

/// The custom fields fit the bounds and match the type's: each a declared field, each value
/// valid against its schema.
pub(crate) fn check_fields(task_type: &TaskTypeRecord, fields: &Value) -> Result<()> {
    let bytes = serde_json::to_vec(fields).map_or(0, |bytes| bytes.len());
    let keys = keys_in(fields);
    for (limit, max, actual) in [("bytes", MAX_FIELDS_BYTES, bytes), ("keys", MAX_FIELDS_KEYS, keys)] {
        if actual > max {
            return Err(EngineError::new(
                Class::Invalid,
                Code::CustomFieldsTooLarge,
                format!(
                    "the customFields are {actual} {limit}; at most {max}: keep large content in an artifact of the task and name it in a field"
                ),
            )
            .with("field", "customFields")
            .with("limit", limit)
            .with("max", max)
            .with("actual", actual));
        }
    }
    let declared = Value::Object(task_type.spec.custom_fields.clone());
    let schema = json!({"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object",
                        "properties": declared, "additionalProperties": false});
    let validator = SchemaValidator::new(&schema).map_err(|error| {
        EngineError::new(
            Class::Internal,
            Code::InternalError,
            format!("a published type's fields do not compile: {error}"),
        )
    })?;
    let errors = validator.errors(fields);
    if errors.is_empty() {
        return Ok(());
    }
    let first = errors.first().map(ToString::to_string).unwrap_or_default();
    Err(EngineError::new(
        Class::Invalid,
        Code::InvalidCustomFields,
        format!("the customFields do not match {}@{}: {first}", task_type.key, task_type.version),
    )
    .with("errors", json!(errors)))
}
