//! Cross-check with a real YAML 1.1 reader: PyYAML's `yaml.safe_load` reads our exported files
//! and documents to the same values, with the same types, as the JSON we wrote them from.
//!
//! Needs a Python with PyYAML: `SKILL_TEST_PYTHON` (the test command sets it to its virtualenv),
//! else `python3` on PATH.

use crate::strategies;

use std::path::PathBuf;
use std::process::Command;

use proptest::strategy::{Strategy, ValueTree};
use proptest::test_runner::TestRunner;
use serde_json::{Value, json};
use skill_contract::{export, yaml};

const COMPARE: &str = include_str!("support/pyyaml_compare.py");

fn python() -> String {
    std::env::var("SKILL_TEST_PYTHON").unwrap_or_else(|_| "python3".to_owned())
}

fn cases() -> Vec<(Value, String)> {
    let mut runner = TestRunner::deterministic();
    let mut cases = Vec::new();
    for _ in 0..300 {
        let text = strategies::awkward_string().new_tree(&mut runner).expect("tree").current();
        let value = json!({"value": text, text.clone(): [text]});
        cases.push((value.clone(), yaml::to_string(&value)));
    }
    for _ in 0..300 {
        let value = strategies::json_value().new_tree(&mut runner).expect("tree").current();
        cases.push((value.clone(), yaml::to_string(&value)));
    }
    for _ in 0..200 {
        let skill = strategies::leaf_skill().new_tree(&mut runner).expect("tree").current();
        let document = skill.to_document();
        cases.push((document.clone(), export::render_skill_file(&document, None)));
    }
    cases
}

#[test]
fn pyyaml_reads_our_yaml_as_we_meant_it() {
    let python = python();
    let probe = Command::new(&python).args(["-c", "import yaml; print(yaml.__version__)"]).output();
    match probe {
        Ok(output) if output.status.success() => {}
        _ => panic!(
            "this test needs `{python}` with PyYAML: run the project's test command (`cargo xtask ci`), \
             or set SKILL_TEST_PYTHON to a Python that has it (pip install pyyaml)"
        ),
    }
    let folder: PathBuf = std::env::temp_dir().join(format!("skill-contract-pyyaml-{}", std::process::id()));
    std::fs::create_dir_all(&folder).expect("temp folder");
    for (i, (value, text)) in cases().iter().enumerate() {
        std::fs::write(folder.join(format!("case-{i:04}.json")), serde_json::to_string(value).expect("json"))
            .expect("write");
        std::fs::write(folder.join(format!("case-{i:04}.yaml")), text).expect("write");
    }
    let output = Command::new(&python).arg("-c").arg(COMPARE).arg(&folder).output().expect("python runs");
    let report = String::from_utf8_lossy(&output.stdout);
    let _ = std::fs::remove_dir_all(&folder);
    assert!(output.status.success(), "{report}{}", String::from_utf8_lossy(&output.stderr));
    assert!(report.contains("checked 800, 0 differ"), "{report}");
}
