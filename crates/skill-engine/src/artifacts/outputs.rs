//! Typed outputs: when an execution call succeeds (its task's type pins the version it ran),
//! each slot of the type's `artifactSchema.outputs` becomes an artifact of the slot's type — the
//! output's value under the slot's key, checked against the type's newest version — which
//! supersedes the previous head of that type in the task. A value that does not fit is
//! `rejected` with its reason; the call stays `succeeded` either way.

use skill_contract::codes::Code;
use std::collections::HashMap;

use serde_json::{Map, Value, json};
use skill_api::{OutputStatus, SlotOutcome};
use skill_store::records::{ArtifactRecord, InvocationRecord, SkillRecord, TaskRecord};

use super::NewArtifact;
use crate::Engine;
use crate::error::Result;

/// The typed outputs of a call: the artifacts to write (before its `skill_result`) and the
/// status of each slot by key.
#[derive(Debug, Default)]
pub(crate) struct TypedOutputs {
    pub(crate) artifacts: Vec<ArtifactRecord>,
    pub(crate) statuses: Map<String, Value>,
}

/// One slot of `artifactSchema.outputs`.
struct Slot<'a> {
    key: &'a str,
    kind: &'a str,
    required: bool,
}

impl<'a> Slot<'a> {
    fn of(slot: &'a skill_api::OutputSlot) -> Self {
        Self { key: &slot.key, kind: &slot.kind, required: slot.required }
    }
}

fn rejected(code: Code, message: &str) -> Value {
    slot_outcome(SlotOutcome {
        status: OutputStatus::Rejected,
        kind: None,
        artifact_id: None,
        code: Some(code.into()),
        message: Some(message.to_owned()),
    })
}

/// A slot's outcome as the call's `outputs` keep it.
fn slot_outcome(outcome: SlotOutcome) -> Value {
    crate::document(&outcome)
}

/// The outcome `status` of a slot of type `kind`.
fn of_type(status: OutputStatus, kind: &str, artifact_id: Option<String>) -> Value {
    slot_outcome(SlotOutcome { status, kind: Some(kind.to_owned()), artifact_id, code: None, message: None })
}

impl Engine {
    /// The typed outputs of `call` of `skill` with `output`, if it is the execution of `task`'s
    /// type; none otherwise.
    pub(crate) async fn typed_outputs(
        &self,
        call: &InvocationRecord,
        skill: &SkillRecord,
        output: &Value,
        task: &TaskRecord,
    ) -> Result<TypedOutputs> {
        let mut typed = TypedOutputs::default();
        let Some(run_id) = &call.run_id else { return Ok(typed) };
        let task_type = self.store.task_type(&task.task_type_id).await?;
        let pinned =
            task_type.spec.execution.as_ref().is_some_and(|execution| execution.pins(&skill.name, &skill.version));
        if !pinned {
            return Ok(typed);
        }
        // The head each type has once the artifacts before it are written.
        let declared = task_type.spec.output_slots();
        let mut heads: HashMap<&str, Option<String>> = HashMap::new();
        for slot in declared.iter().map(Slot::of) {
            let value = output.get(slot.key).filter(|value| !value.is_null());
            let Some(value) = value else {
                let status = if slot.required { OutputStatus::Missing } else { OutputStatus::Absent };
                typed.statuses.insert(slot.key.to_owned(), of_type(status, slot.kind, None));
                continue;
            };
            let status = match self.typed_output(call, skill, task, run_id, &slot, value, &heads).await? {
                Ok(artifact) => {
                    let status = of_type(OutputStatus::Created, slot.kind, Some(artifact.id.clone()));
                    heads.insert(slot.kind, Some(artifact.id.clone()));
                    typed.artifacts.push(artifact);
                    status
                }
                Err(status) => status,
            };
            typed.statuses.insert(slot.key.to_owned(), status);
        }
        Ok(typed)
    }

    /// The artifact of one slot's `value`, or its `rejected` status.
    #[allow(clippy::too_many_arguments)]
    async fn typed_output<'a>(
        &self,
        call: &InvocationRecord,
        skill: &SkillRecord,
        task: &TaskRecord,
        run_id: &str,
        slot: &Slot<'a>,
        value: &Value,
        heads: &HashMap<&'a str, Option<String>>,
    ) -> Result<std::result::Result<ArtifactRecord, Value>> {
        let Some(kind) = self.newest_artifact_type(slot.kind).await? else {
            let message = format!("no artifact type {} is published", slot.kind);
            return Ok(Err(rejected(Code::InvalidOutputValue, &message)));
        };
        let bytes = serde_json::to_vec(value).unwrap_or_default();
        if let Some(misfit) = self.misfit(&kind, "application/json", bytes.len(), value).await? {
            // An output's value that misfits its type's schema is the output's fault.
            let code = match misfit.code {
                Code::InvalidArtifactMetadata => Code::InvalidOutputValue,
                other => other,
            };
            return Ok(Err(rejected(code, &misfit.message)));
        }
        let name = format!("{}.json", slot.key);
        let new = NewArtifact {
            author: &call.authority_principal_id,
            workspace: &task.workspace_id,
            task_id: Some(task.id.clone()),
            run_id: Some(run_id.to_owned()),
            kind: slot.kind,
            name: &name,
            media_type: "application/json",
            metadata: json!({"output": slot.key, "skill": skill.name, "version": skill.version,
                             "invocationId": call.id, "authorityPrincipalId": call.authority_principal_id}),
            skill_invocation_id: Some(call.id.clone()),
        };
        let mut artifact = match self.stored_artifact(new, &bytes).await {
            Ok(artifact) => artifact,
            Err(error) if error.is(Code::ArtifactTooLarge) || error.is(Code::ContentStoreUnavailable) => {
                return Ok(Err(rejected(error.code, &error.message)));
            }
            Err(error) => return Err(error),
        };
        let head = match heads.get(slot.kind) {
            Some(head) => head.clone(),
            None => self.store.task_head(&task.id, slot.kind).await?.map(|head| head.id),
        };
        artifact.supersedes_id = head;
        Ok(Ok(artifact))
    }
}
