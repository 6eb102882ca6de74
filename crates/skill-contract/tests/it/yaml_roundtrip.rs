//! The YAML writer and reader agree: any string, any JSON value and any skill document written
//! by us reads back equal, and drift finds nothing.

use crate::strategies;

use proptest::prelude::*;
use serde_json::json;
use skill_contract::export::{Drift, drift, render_skill_file};
use skill_contract::{NormalizeOptions, Skill, yaml};

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn any_string_round_trips_as_value_and_key(text in strategies::awkward_string()) {
        let value = json!({"value": text, text.clone(): [text.clone()]});
        let written = yaml::to_string(&value);
        prop_assert_eq!(yaml::from_str(&written).map_err(|e| TestCaseError::fail(format!("{e}\n{written}")))?, value, "{}", written);
    }

    #[test]
    fn any_json_value_round_trips(value in strategies::json_value()) {
        let written = yaml::to_string(&value);
        let read = yaml::from_str(&written).map_err(|e| TestCaseError::fail(format!("{e}\n{written}")))?;
        prop_assert_eq!(read, value, "{}", written);
    }

    #[test]
    fn any_skill_file_reads_back_without_drift(skill in strategies::leaf_skill()) {
        let document = skill.to_document();
        let file = render_skill_file(&document, Some("../schema/v1/object.schema.json"));
        let read = yaml::from_str(&file).map_err(|e| TestCaseError::fail(format!("{e}\n{file}")))?;
        prop_assert_eq!(drift(&document, &read), Drift::Same, "{}", file);
        let back = Skill::from_document(&read, &NormalizeOptions::default()).map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert_eq!(back, skill);
    }
}

#[test]
fn the_reader_refuses_what_is_not_yaml() {
    let error = yaml::from_str("a: [1, 2\nb: c").expect_err("unclosed flow sequence");
    assert!(!error.to_string().is_empty());
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn drift_names_exactly_the_changed_spec_key(skill in strategies::leaf_skill(), which in 0usize..5) {
        let wanted = skill.to_document();
        let key = ["version", "description", "sideEffects", "riskLevel", "contract"][which];
        let mut changed = wanted.clone();
        let spec = &mut changed["spec"];
        spec[key] = match key {
            "version" => json!(format!("{}.1", spec["version"].as_str().unwrap_or("1"))),
            "description" => json!(format!("{} (changed)", spec["description"].as_str().unwrap_or(""))),
            "sideEffects" => json!(if spec["sideEffects"] == "none" { "external_read" } else { "none" }),
            "riskLevel" => json!(if spec["riskLevel"] == "low" { "high" } else { "low" }),
            _ => {
                let mut contract = spec["contract"].clone();
                contract["timeoutSeconds"] = json!(contract["timeoutSeconds"].as_u64().unwrap_or(60) % 3600 + 1);
                contract
            }
        };
        let file = render_skill_file(&changed, None);
        let read = yaml::from_str(&file).map_err(|e| TestCaseError::fail(format!("{e}\n{file}")))?;
        prop_assert_eq!(drift(&wanted, &read), Drift::Spec(vec![key]));
    }
}
