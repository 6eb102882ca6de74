//! The custom fields a task type's work reads: the inputs its gate's outcomes and its execution
//! fill from `customFields` that the called version requires. A task without one of them could
//! never have its outcome or execution succeed — and would spend a person's approval finding
//! out — so it is refused when it is created (`400 custom_field_required`).

use serde_json::{Value, json};
use skill_api::ApprovalStatus;
use skill_contract::codes::Code;
use skill_store::records::TaskTypeRecord;

use super::preview::{outcome_actions, required_inputs, requires};
use crate::Engine;
use crate::error::{Class, EngineError, Result};
use crate::paths;

/// One input of the type's work that a custom field fills.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldUse {
    /// The custom field.
    pub field: String,
    /// The skill as the type names it (`name@version`, or a bare name).
    pub skill: String,
    /// The input of that skill the field fills.
    pub input: String,
    /// Which work reads it: `approved` or `rejected` (a gate's outcome) or `execution`.
    pub by: &'static str,
}

/// Every input of `task_type`'s work that reads a custom field, without looking anything up.
pub(crate) fn field_uses(task_type: &TaskTypeRecord) -> Vec<FieldUse> {
    let mut uses = Vec::new();
    for outcome in [ApprovalStatus::Approved, ApprovalStatus::Rejected] {
        // What a misread outcome needs is not shown; deciding on it fails (plan_outcome).
        for action in outcome_actions(task_type, outcome).unwrap_or_default() {
            let skill = action.invoke_skill.skill.as_str();
            for (input, source) in action.invoke_skill.inputs.iter().flatten() {
                let field = source.as_str().and_then(|path| paths::field_under(path, &["task", "customFields"]));
                if let Some(field) = field {
                    uses.push(FieldUse { field, skill: skill.to_owned(), input: input.clone(), by: outcome.as_str() });
                }
            }
        }
    }
    if let (Some(execution), Some(skill)) = (&task_type.spec.execution, super::execution_reference(task_type)) {
        for (input, source) in execution.inputs.as_object().into_iter().flatten() {
            if let Some(field) = source.as_str().and_then(|path| paths::field_under(path, &["customFields"])) {
                uses.push(FieldUse { field, skill: skill.clone(), input: input.clone(), by: "execution" });
            }
        }
    }
    uses
}

/// Whether `task_type`'s execution takes the whole of `customFields` as its inputs.
fn whole_object(task_type: &TaskTypeRecord) -> bool {
    task_type.spec.execution.as_ref().is_some_and(|execution| execution.inputs.as_str() == Some("$.customFields"))
}

impl Engine {
    /// The custom fields `task_type`'s work cannot do without: each use whose skill resolves and
    /// requires the input (a whole-object execution mapping needs every required input).
    pub async fn required_fields(&self, task_type: &TaskTypeRecord) -> Result<Vec<FieldUse>> {
        let mut needed = Vec::new();
        for found in field_uses(task_type) {
            if let Some(skill) = self.resolved(&found.skill).await?
                && requires(&skill, &found.input)
            {
                needed.push(found);
            }
        }
        if whole_object(task_type)
            && let Some(skill) = super::execution_reference(task_type)
            && let Some(called) = self.resolved(&skill).await?
        {
            for input in required_inputs(&called) {
                needed.push(FieldUse { field: input.clone(), skill: skill.clone(), input, by: "execution" });
            }
        }
        Ok(needed)
    }

    /// `400 custom_field_required` when `fields` lacks one that `task_type`'s work requires. The
    /// store is read only when a field some work reads is missing.
    pub(crate) async fn check_required_fields(&self, task_type: &TaskTypeRecord, fields: &Value) -> Result<()> {
        let present = |field: &str| fields.get(field).is_some_and(|value| !value.is_null());
        if !whole_object(task_type) && field_uses(task_type).iter().all(|found| present(&found.field)) {
            return Ok(());
        }
        let missing: Vec<FieldUse> =
            self.required_fields(task_type).await?.into_iter().filter(|need| !present(&need.field)).collect();
        let Some(first) = missing.first() else { return Ok(()) };
        let work = match first.by {
            "execution" => "execution calls".to_owned(),
            outcome => format!("{outcome} gate outcome calls"),
        };
        Err(EngineError::new(
            Class::BadRequest,
            Code::CustomFieldRequired,
            format!(
                "the customFields need {field}: {key}@{version}'s {work} {skill}, whose input {input} is read from customFields.{field} and is required — add \"{field}\" to customFields",
                field = first.field,
                key = task_type.key,
                version = task_type.version,
                skill = first.skill,
                input = first.input,
            ),
        )
        .with("field", format!("customFields.{}", first.field))
        .with(
            "missing",
            json!(
                missing
                    .iter()
                    .map(|need| json!({"field": need.field, "skill": need.skill, "input": need.input, "by": need.by}))
                    .collect::<Vec<_>>()
            ),
        ))
    }
}
