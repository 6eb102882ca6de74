//! The cost of one call: the units a skill reports and the LLM usage the client meters.

use serde_json::{Map, Value, json};

/// LLM usage summed over the successful calls of one invocation.
#[derive(Debug, Default)]
struct LlmUsage {
    calls: u64,
    prompt_tokens: u64,
    completion_tokens: u64,
    total_tokens: u64,
    /// Distinct, in first-seen order.
    models: Vec<String>,
    cost_usd: Option<f64>,
}

/// What one invocation consumed.
#[derive(Debug, Default)]
pub(crate) struct CostMeter {
    /// In first-reported order.
    units: Vec<(String, f64)>,
    llm: LlmUsage,
}

impl CostMeter {
    pub(crate) fn add_units(&mut self, unit: &str, amount: f64) {
        match self.units.iter_mut().find(|(u, _)| u == unit) {
            Some((_, total)) => *total += amount,
            None => self.units.push((unit.to_owned(), amount)),
        }
    }

    /// One successful LLM call.
    pub(crate) fn record_llm(&mut self, model: &str, prompt: u64, completion: u64, total: u64, cost_usd: Option<f64>) {
        let llm = &mut self.llm;
        llm.calls += 1;
        llm.prompt_tokens += prompt;
        llm.completion_tokens += completion;
        llm.total_tokens += total;
        if !llm.models.iter().any(|m| m == model) {
            llm.models.push(model.to_owned());
        }
        if let Some(cost) = cost_usd {
            llm.cost_usd = Some(llm.cost_usd.unwrap_or(0.0) + cost);
        }
    }

    /// `{"llm": {calls, promptTokens, completionTokens, totalTokens, models, costUsd?}, "units":
    /// {unit: amount}}`: `llm` only after a successful LLM call, `costUsd` only when a call
    /// reported one (rounded to 6 decimals), `units` only when a skill reported some; `None` when
    /// there is nothing to report.
    pub(crate) fn document(&self) -> Option<Value> {
        let mut document = Map::new();
        if self.llm.calls > 0 {
            let llm = &self.llm;
            let mut usage = Map::new();
            usage.insert("calls".into(), json!(llm.calls));
            usage.insert("promptTokens".into(), json!(llm.prompt_tokens));
            usage.insert("completionTokens".into(), json!(llm.completion_tokens));
            usage.insert("totalTokens".into(), json!(llm.total_tokens));
            usage.insert("models".into(), json!(llm.models));
            if let Some(cost) = llm.cost_usd {
                usage.insert("costUsd".into(), json!((cost * 1e6).round() / 1e6));
            }
            document.insert("llm".into(), Value::Object(usage));
        }
        if !self.units.is_empty() {
            let units: Map<String, Value> = self.units.iter().map(|(u, n)| (u.clone(), json!(n))).collect();
            document.insert("units".into(), Value::Object(units));
        }
        (!document.is_empty()).then_some(Value::Object(document))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nothing_reported_is_no_document() {
        assert_eq!(CostMeter::default().document(), None);
    }

    #[test]
    fn units_are_summed_as_floats_in_first_seen_order() {
        let mut meter = CostMeter::default();
        meter.add_units("page", 1.0);
        meter.add_units("request", 2.0);
        meter.add_units("page", 0.5);
        assert_eq!(meter.document(), Some(json!({"units": {"page": 1.5, "request": 2.0}})));
        let text = serde_json::to_string(&meter.document()).expect("serializes");
        assert!(text.starts_with(r#"{"units":{"page":1.5,"request":2.0}"#), "{text}");
    }

    #[test]
    fn llm_usage_is_summed_with_distinct_models_and_rounded_cost() {
        let mut meter = CostMeter::default();
        meter.record_llm("m1", 10, 5, 15, None);
        assert_eq!(
            meter.document(),
            Some(
                json!({"llm": {"calls": 1, "promptTokens": 10, "completionTokens": 5, "totalTokens": 15, "models": ["m1"]}})
            )
        );
        meter.record_llm("m2", 1, 1, 2, Some(0.000_000_4));
        meter.record_llm("m1", 1, 1, 2, Some(0.000_001_2));
        let document = meter.document().expect("document");
        assert_eq!(document["llm"]["models"], json!(["m1", "m2"]));
        assert_eq!(document["llm"]["calls"], 3);
        assert_eq!(document["llm"]["costUsd"], json!(0.000002));
    }
}
