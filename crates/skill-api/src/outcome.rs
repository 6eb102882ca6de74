//! What a task type has the core carry out: an approval's outcome — for each decision, the
//! actions, each a call of a skill, and what each call's end does to the task — and the type's
//! execution, the one skill version that does its work. The type's publication checks them; an
//! approval keeps each action as it was when decided.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::TaskStatus;

/// One action of an outcome.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct OutcomeAction {
    pub invoke_skill: InvokeSkill,
}

/// The call an outcome's action makes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct InvokeSkill {
    /// `name@version` (always pinned for an external write), or a name.
    pub skill: String,
    /// Each input: a path into the task and the decision (`$.task.customFields.reply`), or a value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inputs: Option<Map<String, Value>>,
    /// Output fields the call must return with these values to count as succeeded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expect: Option<Map<String, Value>>,
    /// What a succeeded call does to the task.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub on_success: Option<Vec<Reaction>>,
    /// What a failed call does to the task.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub on_failure: Option<Vec<Reaction>>,
}

impl InvokeSkill {
    /// The reactions of `branch`.
    pub fn reactions(&self, branch: crate::OutcomeReaction) -> &[Reaction] {
        let reactions = match branch {
            crate::OutcomeReaction::OnSuccess => &self.on_success,
            crate::OutcomeReaction::OnFailure => &self.on_failure,
        };
        reactions.as_deref().unwrap_or_default()
    }
}

/// The skill version that carries out a task type's work, and the task's fields it is called
/// with.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TaskExecution {
    /// A skill name (without `@version`).
    pub skill: String,
    /// The version it is pinned to.
    pub version: String,
    /// One path (`$.customFields`, the default) or `{input: path}` mappings into the task.
    #[serde(default = "TaskExecution::all_fields")]
    pub inputs: Value,
}

impl TaskExecution {
    /// The inputs when none are written: the task's custom fields, as they are.
    pub fn all_fields() -> Value {
        Value::String("$.customFields".to_owned())
    }

    /// `name@version`.
    pub fn reference(&self) -> String {
        format!("{}@{}", self.skill, self.version)
    }

    /// Whether it calls the version `name@version`.
    pub fn pins(&self, name: &str, version: &str) -> bool {
        self.skill == name && self.version == version
    }
}

/// What a call's end does to its task.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub enum Reaction {
    /// Closes the task with a terminal status.
    SetTaskStatus(TaskStatus),
    /// Comments on the task as the decider (1 to 10,000 characters).
    AddComment(String),
}

/// A task type's approval or completion schema, as far as the core reads it: its gates by name.
/// Other keys are kept as written.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
pub struct ApprovalSchema {
    #[serde(default)]
    pub gates: std::collections::BTreeMap<String, Gate>,
}

/// One gate of a task type's approval schema, read from the stored schema
/// ([`crate::TaskTypeSpec::gate`]): the draft prepared before it is decided, and what each
/// decision carries out. Publication checked the shape; other keys of a gate are left alone.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
pub struct Gate {
    #[serde(default)]
    pub draft: Option<DraftSpec>,
    #[serde(default)]
    pub outcomes: GateOutcomes,
}

/// What a gate's decision carries out, in order.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GateOutcomes {
    #[serde(default)]
    pub approved: Vec<OutcomeAction>,
    #[serde(default)]
    pub rejected: Vec<OutcomeAction>,
}

impl GateOutcomes {
    /// Each decision's actions, with the decision's name.
    pub fn by_decision(&self) -> [(&'static str, &[OutcomeAction]); 2] {
        [("approved", &self.approved), ("rejected", &self.rejected)]
    }
}

/// A gate's draft: `{skill: name@version, inputs, output}`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DraftSpec {
    /// `name@version` of the skill that drafts.
    pub skill: String,
    /// Input name → a path over the task or a literal.
    #[serde(default)]
    pub inputs: Map<String, Value>,
    /// The output field that holds the draft.
    pub output: String,
}

/// A task type's `artifactSchema`: the output fields of its execution's result kept as artifacts.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ArtifactSchema {
    #[serde(default)]
    pub outputs: Vec<OutputSlot>,
}

/// One output slot of a task type's `artifactSchema.outputs`: an output field of the pinned
/// execution's result kept as an artifact of `type` ([`crate::TaskTypeSpec::output_slots`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct OutputSlot {
    /// The output field.
    pub key: String,
    /// The artifact type its value is kept as.
    #[serde(rename = "type")]
    pub kind: String,
    /// Whether a result without it is missing one (else absent).
    #[serde(default)]
    pub required: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn an_action_reads_back_as_the_type_wrote_it() {
        let written = json!({"invokeSkill": {"skill": "claim.send_reply@1", "inputs": {"to": "$.task.customFields.to"},
                                             "expect": {"sent": true},
                                             "onSuccess": [{"setTaskStatus": "done"}, {"addComment": "sent"}],
                                             "onFailure": [{"addComment": "not sent"}]}});
        let action: OutcomeAction = serde_json::from_value(written.clone()).expect("an action");
        assert_eq!(action.invoke_skill.reactions(crate::OutcomeReaction::OnSuccess).len(), 2);
        assert_eq!(
            action.invoke_skill.reactions(crate::OutcomeReaction::OnSuccess)[0],
            Reaction::SetTaskStatus(TaskStatus::Done)
        );
        assert_eq!(serde_json::to_value(&action).expect("json"), written);
        let bare = json!({"invokeSkill": {"skill": "a"}});
        let action: OutcomeAction = serde_json::from_value(bare.clone()).expect("an action");
        assert!(action.invoke_skill.reactions(crate::OutcomeReaction::OnFailure).is_empty());
        assert_eq!(serde_json::to_value(&action).expect("json"), bare);
    }

    #[test]
    fn what_is_not_an_action_is_refused() {
        assert!(serde_json::from_value::<OutcomeAction>(json!({"setTaskStatus": "done"})).is_err());
        assert!(serde_json::from_value::<OutcomeAction>(json!({"invokeSkill": {"skill": "a", "retry": 2}})).is_err());
        assert!(serde_json::from_value::<Reaction>(json!({"setTaskStatus": "maybe"})).is_err());
    }

    #[test]
    fn an_execution_names_the_version_it_pins() {
        let execution: TaskExecution =
            serde_json::from_value(json!({"skill": "claim.send", "version": "2", "inputs": "$.customFields"}))
                .expect("an execution");
        assert_eq!(execution.reference(), "claim.send@2");
        assert!(execution.pins("claim.send", "2") && !execution.pins("claim.send", "1"));
        let bare: TaskExecution = serde_json::from_value(json!({"skill": "claim.send", "version": "2"})).expect("bare");
        assert_eq!(bare.inputs, json!("$.customFields"), "the task's fields by default");
    }

    #[test]
    fn a_gate_reads_from_the_stored_schema_and_a_misshapen_one_is_an_error() {
        let mut spec = crate::TaskTypeSpec::new("1");
        assert_eq!(spec.gate("default").expect("reads"), None, "no schema, no gate");
        spec.approval_schema = Some(json!({"gates": {"default": {
            "draft": {"skill": "claim.draft@1", "output": "text"},
            "outcomes": {"approved": [{"invokeSkill": {"skill": "claim.send_reply@1"}}]},
            "label": "kept aside"}}}));
        let gate = spec.gate("default").expect("reads").expect("a gate");
        assert_eq!(gate.outcomes.approved.len(), 1);
        assert!(gate.outcomes.rejected.is_empty());
        let draft = gate.draft.expect("a draft");
        assert_eq!((draft.skill.as_str(), draft.output.as_str(), draft.inputs.len()), ("claim.draft@1", "text", 0));
        assert_eq!(spec.gate("other").expect("reads"), None);
        spec.approval_schema = Some(json!({"gates": {"default": {"outcomes": {"approved": "send it"}}}}));
        assert!(spec.gate("default").is_err(), "an outcome that is not a list of actions");
        spec.approval_schema = Some(json!({"gates": {"default": {"outcomes": {"maybe": []}}}}));
        assert!(spec.gate("default").is_err(), "a decision is approved or rejected");
    }

    #[test]
    fn an_artifact_schema_reads_its_slots_in_order_and_refuses_a_misshapen_one() {
        let mut spec = crate::TaskTypeSpec::new("1");
        assert!(spec.output_slots().is_empty());
        let written = json!({"outputs": [{"key": "register", "type": "csv-register", "required": true},
                                         {"key": "summary", "type": "note", "required": false}]});
        spec.artifact_schema = Some(serde_json::from_value(written.clone()).expect("a schema"));
        assert_eq!(
            spec.output_slots()
                .iter()
                .map(|slot| (slot.key.as_str(), slot.kind.as_str(), slot.required))
                .collect::<Vec<_>>(),
            [("register", "csv-register", true), ("summary", "note", false)]
        );
        assert_eq!(serde_json::to_value(&spec.artifact_schema).expect("json"), written, "kept as read");
        assert!(
            serde_json::from_value::<ArtifactSchema>(json!({"outputs": [{"key": "register"}]})).is_err(),
            "a slot names its type"
        );
        assert!(serde_json::from_value::<ArtifactSchema>(json!({"outputs": [], "extra": 1})).is_err());
    }
}
