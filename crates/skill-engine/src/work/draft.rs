//! A task type's draft: what prepares the text a person reviews before deciding its gate. The
//! type declares it beside the gate's outcomes —
//! `approvalSchema.gates.default.draft: {skill: name@version, inputs, output}` — a pinned skill
//! that does not write to the outside world, its inputs read from the task like an execution's,
//! and the output field that holds the draft. Drafting is a task-bound call of that version by
//! whoever drafts (its result is the task's `skill_result` artifact); the console offers it on
//! the task's page and fills the decision's comment with the newest draft.
use skill_api::Lifecycle;
use skill_contract::codes::Code;

use serde_json::{Map, Value};
use skill_api::{InvocationOut, InvokeRequest};
use skill_store::records::{SkillRecord, TaskRecord, TaskTypeRecord};

use super::preview::GATE;
use crate::Engine;
use crate::actor::Actor;
use crate::basis::task_terminal;
use crate::error::{Class, EngineError, Result};
use crate::paths::{self, task_view};

/// A type's declared draft: `name@version` of the skill that drafts, its inputs (an input name →
/// a path over the task or a literal) and the output field that holds the draft.
pub use skill_api::DraftSpec as Draft;

/// The draft `task_type` declares, if any (none when its gate does not read: publication
/// checked it, so that is a corrupted row, logged).
pub fn draft_of(task_type: &TaskTypeRecord) -> Option<Draft> {
    let gate = task_type.spec.gate(GATE).unwrap_or_else(|error| {
        tracing::error!(task_type = %task_type.id, %error, "a published gate does not read");
        None
    });
    gate?.draft
}

fn invalid(field: &str, message: impl Into<String>) -> EngineError {
    EngineError::new(Class::Invalid, Code::InvalidTaskType, message).with("field", field)
}

/// Checks a declared draft against the version it names (`found`, `None` when there is none).
pub(crate) fn check_draft(draft: &Draft, field: &str, found: Option<&SkillRecord>) -> Result<()> {
    let skill = draft.skill.as_str();
    if !skill.contains('@') {
        return Err(invalid(&format!("{field}.skill"), "a draft names the version that drafts: name@version"));
    }
    let Some(found) = found else {
        return Err(EngineError::new(
            Class::Invalid,
            Code::UnknownReference,
            format!("{skill} is not in the catalog: publish it first"),
        )
        .with("field", format!("{field}.skill"))
        .with("value", skill));
    };
    if crate::basis::writes(found.side_effects) {
        return Err(invalid(
            &format!("{field}.skill"),
            format!(
                "{skill} writes to the outside world: a draft is prepared by a skill that does not, and the write is the gate's outcome"
            ),
        ));
    }
    if let Some((name, text)) = paths::first_non_path(&draft.inputs) {
        return Err(invalid(&format!("{field}.inputs.{name}"), paths::not_a_path(text)));
    }
    let output = draft.output.as_str();
    let declared = found
        .contract
        .as_ref()
        .is_some_and(|contract| skill_contract::SchemaView(contract.outputs()).property(output).is_some());
    if !declared {
        return Err(invalid(
            &format!("{field}.output"),
            format!("output names the field of {skill}'s output that holds the draft; {output:?} is not one"),
        ));
    }
    Ok(())
}

impl Engine {
    /// The draft task `id`'s type declares, with its inputs filled from the task (`tasks.read`).
    pub async fn task_draft(&self, actor: &Actor, id: &str) -> Result<Option<(Draft, Map<String, Value>)>> {
        let task = self.visible_task(actor, id, None).await?;
        self.draft_for(&task).await
    }

    /// `task`'s type's draft, with its inputs filled from `task`.
    pub(crate) async fn draft_for(&self, task: &TaskRecord) -> Result<Option<(Draft, Map<String, Value>)>> {
        let task_type = self.store.task_type(&task.task_type_id).await?;
        Ok(draft_of(&task_type).map(|draft| {
            let inputs = paths::filled(&draft.inputs, &task_view(task, &task_type));
            (draft, inputs)
        }))
    }

    /// Drafts on task `id` (`tasks.write` in its workspace, and `skills.invoke`): the task-bound
    /// call of its type's draft version, with the inputs read from the task. `404 no_draft` when
    /// the type declares none.
    pub async fn draft(&self, actor: &Actor, id: &str, request_id: Option<&str>) -> Result<InvocationOut> {
        let task = self.visible_task(actor, id, Some("tasks.write")).await?;
        if task.status.is_terminal() {
            return Err(task_terminal(&task));
        }
        let Some((draft, inputs)) = self.draft_for(&task).await? else {
            return Err(EngineError::new(Class::NotFound, Code::NoDraft, "the task's type declares no draft")
                .with("taskId", id));
        };
        let request = InvokeRequest {
            inputs: Some(inputs),
            idempotency_key: None,
            task_id: Some(task.id.clone()),
            run_id: None,
            approval_id: None,
        };
        Ok(self.invoke(actor, &draft.skill, &request, request_id).await?.invocation)
    }
}
