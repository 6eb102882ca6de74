//! A task type's acceptance criteria as types: what a criterion checks (`kind`), when it runs
//! (`when`) and its spec, and the rule both the offline check and the core apply to them — a
//! check that writes to the outside world stands after a person's or a judge's decision.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// What a criterion is decided by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum CriterionKind {
    /// A person decides.
    Human,
    /// A judge decides (a person, with the rubric shown).
    LlmJudge,
    /// A skill's call decides.
    Deterministic,
}

impl CriterionKind {
    /// Whether it is a decision someone takes (human or llm_judge), which a write may follow.
    pub fn decides(self) -> bool {
        matches!(self, Self::Human | Self::LlmJudge)
    }
}

/// One acceptance criterion; keys the core does not read are kept as written.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Criterion {
    pub kind: CriterionKind,
    /// When it runs (compared as written; absent: always).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub when: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spec: Option<CriterionSpec>,
    #[serde(flatten)]
    pub other: Map<String, Value>,
}

/// A criterion's spec: the skill a deterministic check calls (`name@version`), and the rest as
/// written.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CriterionSpec {
    /// Kept as written, so a skill that is not a pinned reference is refused with its path.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skill: Option<Value>,
    #[serde(flatten)]
    pub other: Map<String, Value>,
}

impl Criterion {
    /// The skill its spec names, as written.
    pub fn skill(&self) -> Option<&Value> {
        self.spec.as_ref().and_then(|spec| spec.skill.as_ref())
    }
}

/// Whether criterion `index` stands after a decision: a human or llm_judge criterion before it
/// with the same `when`, or with none. A criterion whose check writes to the outside world must.
pub fn decided_before(criteria: &[Criterion], index: usize) -> bool {
    let when = criteria.get(index).and_then(|criterion| criterion.when.as_ref());
    criteria[..index.min(criteria.len())]
        .iter()
        .any(|earlier| earlier.kind.decides() && (earlier.when.is_none() || earlier.when.as_ref() == when))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn criteria(written: Value) -> Vec<Criterion> {
        serde_json::from_value(written).expect("criteria")
    }

    #[test]
    fn a_write_stands_after_a_decision_with_the_same_or_no_when() {
        let list = criteria(json!([{"kind": "human", "when": "sent"}, {"kind": "deterministic", "when": "sent"}]));
        assert!(decided_before(&list, 1));
        let list = criteria(json!([{"kind": "human", "when": "done"}, {"kind": "deterministic", "when": "sent"}]));
        assert!(!decided_before(&list, 1), "another when decides nothing here");
        let list = criteria(json!([{"kind": "llm_judge"}, {"kind": "deterministic", "when": "sent"}]));
        assert!(decided_before(&list, 1), "a decision without when covers every when");
        let list = criteria(json!([{"kind": "deterministic"}, {"kind": "deterministic"}]));
        assert!(!decided_before(&list, 1), "a check is no decision");
        assert!(!decided_before(&list, 0), "nothing comes before the first");
    }

    #[test]
    fn keys_the_core_does_not_read_are_kept_and_a_kind_is_one_of_three() {
        let written =
            json!({"kind": "deterministic", "key": "sent", "spec": {"skill": "claim.send@1", "expect": {"ok": true}}});
        let criterion: Criterion = serde_json::from_value(written.clone()).expect("a criterion");
        assert_eq!(criterion.skill(), Some(&json!("claim.send@1")));
        assert_eq!(serde_json::to_value(&criterion).expect("json"), written);
        let unknown = serde_json::from_value::<Criterion>(json!({"kind": "oracle"})).expect_err("no such kind");
        assert!(unknown.to_string().contains("unknown variant `oracle`"), "{unknown}");
    }
}
