//! The documents `$.` paths and conditions read, as types: a fact as rules and process waits see
//! it (`$.fact`), a rule's scope (the fact, then its interpretation's output), and a process
//! instance's (`$.input`, `$.vars`, each step's last run under `$.steps.<id>`, `$.instance`, and
//! the fact a wait looks at). A new root is a field here, found by the compiler.

use serde::Serialize;
use serde_json::{Map, Value};
use skill_api::{Failure, StepStatus};
use skill_store::records::{FactRecord, InstanceRecord, InvocationRecord, StepRecord};

/// A fact as paths read it.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct FactView {
    /// `null` for a fact a rule is tried on before it is recorded.
    pub(crate) id: Option<String>,
    /// The workspace's key.
    pub(crate) workspace: String,
    pub(crate) workspace_id: String,
    pub(crate) kind: String,
    pub(crate) key: String,
    pub(crate) data: Value,
    pub(crate) source: Option<String>,
    pub(crate) occurred_at: String,
    pub(crate) depth: i32,
}

impl FactView {
    /// `fact`, in the workspace whose key is `workspace_key`.
    pub(crate) fn of(fact: &FactRecord, workspace_key: &str) -> Self {
        Self {
            id: Some(fact.id.clone()),
            workspace: workspace_key.to_owned(),
            workspace_id: fact.workspace_id.clone(),
            kind: fact.kind.clone(),
            key: fact.key.clone(),
            data: fact.data.clone(),
            source: fact.source.clone(),
            occurred_at: crate::catalog::view_time(&fact.occurred_at),
            depth: fact.depth,
        }
    }
}

/// What a rule's condition and mappings read: `$.fact`, and once its interpretation answered,
/// `$.interpretation`.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct RuleScope {
    pub(crate) fact: FactView,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) interpretation: Option<Interpretation>,
}

/// An interpretation's call as a rule reads it.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Interpretation {
    pub(crate) output: Option<Value>,
    pub(crate) invocation_id: String,
}

impl RuleScope {
    /// The scope of `fact` alone.
    pub(crate) fn of(fact: FactView) -> Self {
        Self { fact, interpretation: None }
    }

    /// The scope with the interpretation's call `call` answered, if there is one.
    pub(crate) fn interpreted(mut self, call: Option<&InvocationRecord>) -> Self {
        self.interpretation =
            call.map(|call| Interpretation { output: call.output.clone(), invocation_id: call.id.clone() });
        self
    }

    /// As the path language reads it.
    pub(crate) fn document(&self) -> Value {
        crate::document(self)
    }
}

/// What a process's paths and conditions read.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct InstanceScope {
    pub(crate) input: Value,
    pub(crate) vars: Value,
    /// Each step's last run, by step id.
    pub(crate) steps: Map<String, Value>,
    pub(crate) instance: InstanceRef,
    /// The fact a wait's condition looks at.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) fact: Option<FactView>,
}

/// The instance as its paths name it.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct InstanceRef {
    pub(crate) id: String,
    pub(crate) key: String,
    pub(crate) workspace: String,
}

/// A step's run as `$.steps.<id>` reads it.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
struct StepView<'a> {
    status: StepStatus,
    output: &'a Option<Value>,
    error: &'a Option<Failure>,
    attempt: i32,
    invocation_id: &'a Option<String>,
    task_id: &'a Option<String>,
    fact_id: &'a Option<String>,
}

impl InstanceScope {
    /// `instance` with `steps` (in order: a later run of a step is the one read).
    pub(crate) fn of(instance: &InstanceRecord, steps: &[StepRecord]) -> Self {
        let mut runs = Map::new();
        for step in steps {
            let view = StepView {
                status: step.status,
                output: &step.output,
                error: &step.error,
                attempt: step.attempt,
                invocation_id: &step.invocation_id,
                task_id: &step.task_id,
                fact_id: &step.fact_id,
            };
            runs.insert(step.step_id.clone(), crate::document(&view));
        }
        Self {
            input: instance.input.clone(),
            vars: instance.vars.clone(),
            steps: runs,
            instance: InstanceRef {
                id: instance.id.clone(),
                key: instance.key.clone(),
                workspace: instance.workspace_id.clone(),
            },
            fact: None,
        }
    }

    /// As the path language reads it.
    pub(crate) fn document(&self) -> Value {
        crate::document(self)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_rule_reads_the_fact_by_the_names_paths_use_and_its_interpretation_once_answered() {
        let fact = FactView {
            id: None,
            workspace: "claims".into(),
            workspace_id: "w-1".into(),
            kind: "claim.received".into(),
            key: "C-1".into(),
            data: json!({"amount": 3}),
            source: None,
            occurred_at: "2026-12-07T00:00:00.000000Z".into(),
            depth: 0,
        };
        let alone = RuleScope::of(fact.clone()).interpreted(None).document();
        assert_eq!(
            alone,
            json!({"fact": {"id": null, "workspace": "claims", "workspaceId": "w-1", "kind": "claim.received",
                            "key": "C-1", "data": {"amount": 3}, "source": null,
                            "occurredAt": "2026-12-07T00:00:00.000000Z", "depth": 0}})
        );
        let mut scope = RuleScope::of(fact);
        scope.interpretation =
            Some(Interpretation { output: Some(json!({"route": "fast"})), invocation_id: "c-1".into() });
        assert_eq!(scope.document()["interpretation"], json!({"output": {"route": "fast"}, "invocationId": "c-1"}));
    }
}
