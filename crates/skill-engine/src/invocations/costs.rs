//! What calls cost over a period, per skill version and per task: the numbers of each call's
//! reported cost (its `units`, the model's tokens) added up, with how many calls there were.

use std::collections::{BTreeMap, HashMap};

use serde_json::Value;
use skill_api::CallStatus;
use skill_store::records::{InvocationFilter, Time};

use crate::Engine;
use crate::actor::Actor;
use crate::error::{EngineError, Result};

/// The most calls one report reads; a longer period is reported as truncated.
pub const MAX_COST_CALLS: usize = 50_000;

/// The calls of one skill version or one task, and their costs added up.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CostLine {
    /// `name@version`, or a task's id.
    pub key: String,
    pub calls: u64,
    pub succeeded: u64,
    /// Every number of the calls' cost documents, by its dotted path (`units.message`,
    /// `llm.input_tokens`), added up.
    pub totals: BTreeMap<String, f64>,
}

/// [`Engine::costs`]' answer.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CostReport {
    pub calls: u64,
    pub by_skill: Vec<CostLine>,
    pub by_task: Vec<CostLine>,
    /// More calls were made in the period than a report reads ([`MAX_COST_CALLS`]).
    pub truncated: bool,
}

/// Adds the numbers of `cost` under `prefix` to `totals`.
fn add(totals: &mut BTreeMap<String, f64>, prefix: &str, cost: &Value) {
    match cost {
        Value::Number(number) => *totals.entry(prefix.to_owned()).or_default() += number.as_f64().unwrap_or(0.0),
        Value::Object(fields) => {
            for (name, value) in fields {
                let path = if prefix.is_empty() { name.clone() } else { format!("{prefix}.{name}") };
                add(totals, &path, value);
            }
        }
        _ => {}
    }
}

impl Engine {
    /// The costs of the calls made from `since` to `until` (`org.read`), per version and per task,
    /// the largest first.
    pub async fn costs(&self, actor: &Actor, since: Time, until: Time) -> Result<CostReport> {
        actor.require("org.read")?;
        if since >= until {
            return Err(EngineError::invalid_request("the period ends after it starts").with("field", "since"));
        }
        let mut report = CostReport::default();
        let mut by_skill: HashMap<String, CostLine> = HashMap::new();
        let mut by_task: HashMap<String, CostLine> = HashMap::new();
        let mut names: HashMap<String, String> = HashMap::new();
        let mut before = None;
        let mut read = 0;
        loop {
            let filter = InvocationFilter {
                created_after: Some(since),
                created_before: Some(until),
                before: before.clone(),
                limit: 1000,
                ..InvocationFilter::default()
            };
            let calls = self.store.invocations(&filter).await?;
            let last = calls.len() < 1000;
            for call in &calls {
                if read == MAX_COST_CALLS {
                    report.truncated = true;
                    break;
                }
                read += 1;
                if !names.contains_key(&call.skill_id) {
                    let skill = self.store.skill(&call.skill_id).await?.skill;
                    names.insert(call.skill_id.clone(), format!("{}@{}", skill.name, skill.version));
                }
                let mut lines = vec![by_skill.entry(names[&call.skill_id].clone()).or_default()];
                if let Some(task) = &call.task_id {
                    lines.push(by_task.entry(task.clone()).or_default());
                }
                for line in lines {
                    line.calls += 1;
                    line.succeeded += u64::from(call.status == CallStatus::Succeeded);
                    if let Some(cost) = &call.cost {
                        add(&mut line.totals, "", cost);
                    }
                }
            }
            if last || report.truncated {
                break;
            }
            before = calls.last().map(|call| (call.created_at, call.id.clone()));
        }
        report.calls = read as u64;
        let sorted = |lines: HashMap<String, CostLine>| {
            let mut lines: Vec<CostLine> = lines.into_iter().map(|(key, line)| CostLine { key, ..line }).collect();
            lines.sort_by(|a, b| b.calls.cmp(&a.calls).then(a.key.cmp(&b.key)));
            lines
        };
        report.by_skill = sorted(by_skill);
        report.by_task = sorted(by_task);
        Ok(report)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    #[test]
    fn every_number_of_a_cost_adds_up_by_its_path() {
        let mut totals = std::collections::BTreeMap::new();
        super::add(
            &mut totals,
            "",
            &json!({"units": {"message": 1.0, "page": 2}, "llm": {"input_tokens": 10, "model": "x"}}),
        );
        super::add(&mut totals, "", &json!({"units": {"message": 2.5}}));
        assert_eq!(totals.get("units.message"), Some(&3.5));
        assert_eq!(totals.get("units.page"), Some(&2.0));
        assert_eq!(totals.get("llm.input_tokens"), Some(&10.0));
        assert!(!totals.contains_key("llm.model"), "text is not a cost");
    }
}
