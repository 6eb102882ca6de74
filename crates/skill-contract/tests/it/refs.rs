//! `name@version` references: every valid reference formats back to itself, and any string
//! either parses and formats back unchanged or is refused.

use proptest::prelude::*;
use skill_contract::SkillRef;

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn valid_references_round_trip(
        name in "[a-z0-9][a-z0-9_.-]{0,99}(/[a-z0-9][a-z0-9_.-]{0,99})?",
        version in "[A-Za-z0-9][A-Za-z0-9._+-]{0,49}",
    ) {
        let text = format!("{name}@{version}");
        let parsed: SkillRef = text.parse().map_err(|e| TestCaseError::fail(format!("{e}")))?;
        prop_assert_eq!(parsed.name().as_str(), name.as_str());
        prop_assert_eq!(parsed.version().as_str(), version.as_str());
        prop_assert_eq!(parsed.to_string(), text);
    }

    #[test]
    fn any_string_parses_back_to_itself_or_is_refused(text in any::<String>()) {
        if let Ok(parsed) = text.parse::<SkillRef>() {
            prop_assert_eq!(parsed.to_string(), text);
        }
    }

    #[test]
    fn uppercase_names_are_refused_with_the_position(prefix in "[a-z]{0,10}", upper in "[A-Z]", rest in "[a-z]{0,10}") {
        let text = format!("{prefix}{upper}{rest}@1");
        let error = text.parse::<SkillRef>().expect_err("uppercase").to_string();
        prop_assert!(error.contains(&format!("position {}", prefix.len() + 1)), "{}", error);
    }
}
