//! What a decision would do, before it is made: each action of a gate's outcome as it would be
//! carried out — for an `invokeSkill`, the version it calls with that version's side effects and
//! risk, and the inputs it would receive with the expressions filled in from the task and the
//! decision. The person deciding sees this; nothing is written.

use chrono::Utc;
use serde_json::{Map, Value, json};

use super::approvals::{check_outcome, outcome_actions};
use super::outcomes::decision_root;
use super::{paths, task_view};
use crate::Engine;
use crate::actor::Actor;
use crate::error::{Class, Result};

/// One action of an outcome, as deciding would carry it out.
#[derive(Debug, Clone, PartialEq)]
pub struct ActionPreview {
    /// The action as the task type writes it.
    pub action: Value,
    /// For an `invokeSkill`, the call it would make.
    pub call: Option<CallPreview>,
}

/// The call an `invokeSkill` action would make.
#[derive(Debug, Clone, PartialEq)]
pub struct CallPreview {
    /// `name@version` as the action names it.
    pub skill: String,
    /// The version it resolves to now, with its side effects and risk; `None` when there is none
    /// (the call would fail).
    pub version: Option<CalledVersion>,
    /// The inputs the call would receive.
    pub inputs: Map<String, Value>,
    /// For each input, the expression it is read from.
    pub from: Map<String, Value>,
}

/// The version an `invokeSkill` action resolves to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CalledVersion {
    pub name: String,
    pub version: String,
    pub side_effects: String,
    pub risk_level: String,
    pub status: String,
}

impl Engine {
    /// The actions deciding approval `id` as `outcome` with `comment` would carry out, for a
    /// decider (`approvals.decide` in the task's workspace; anyone who may read the task sees it
    /// too, so that a reviewer without the right can still see what is asked).
    pub async fn outcome_preview(
        &self,
        actor: &Actor,
        id: &str,
        outcome: &str,
        comment: &str,
    ) -> Result<Vec<ActionPreview>> {
        check_outcome(outcome)?;
        let approval = self.visible_approval(actor, id).await?;
        if !approval.gate {
            return Ok(Vec::new());
        }
        let task = self.store.task(&approval.task_id).await?;
        let task_type = self.store.task_type(&task.task_type_id).await?;
        let actions = outcome_actions(&task_type, outcome);
        let root = decision_root(
            task_view(&task, &task_type),
            json!({"id": approval.id, "comment": comment, "decidedBy": actor.id(),
                   "decidedAt": crate::catalog::view_time(&Utc::now()), "outcome": outcome}),
        );
        let mut previews = Vec::new();
        for action in actions {
            let Some(spec) = action.get("invokeSkill").cloned() else {
                previews.push(ActionPreview { action, call: None });
                continue;
            };
            let skill = spec.get("skill").and_then(Value::as_str).unwrap_or_default().to_owned();
            let written = spec.get("inputs").cloned().unwrap_or_else(|| json!({}));
            let version = match self.find(&skill).await {
                Ok(entry) => Some(CalledVersion {
                    name: entry.skill.name,
                    version: entry.skill.version,
                    side_effects: entry.skill.side_effects.unwrap_or_else(|| "none".to_owned()),
                    risk_level: entry.skill.risk_level.unwrap_or_else(|| "low".to_owned()),
                    status: entry.skill.status,
                }),
                Err(error) if error.class == Class::NotFound => None,
                Err(error) => return Err(error),
            };
            let call = CallPreview {
                skill,
                version,
                inputs: paths::fill(&written, &root),
                from: written.as_object().cloned().unwrap_or_default(),
            };
            previews.push(ActionPreview { action, call: Some(call) });
        }
        Ok(previews)
    }
}
