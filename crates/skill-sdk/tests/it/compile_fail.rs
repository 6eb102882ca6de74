//! What the core would refuse is a compile error on the offending token: one case per rule,
//! with the expected messages in `tests/ui/*.stderr`.

#[test]
fn contract_rules_are_compile_errors() {
    trybuild::TestCases::new().compile_fail("tests/ui/*.rs");
}
