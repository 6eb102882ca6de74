//! Benchmark: the personal-data guard's throughput on a mixed 10 MB corpus, with the same
//! patterns on Python's `re` as the peer in the same run (bar: ≥ 10× Python). Prints a table and
//! writes `target/bench/pii.json`.
//!
//! Run with `cargo bench -p skill-sdk --bench pii` (`SKILL_TEST_PYTHON` picks the Python).

#![allow(clippy::print_stdout)]

use std::process::Command;
use std::time::Instant;

use serde_json::{Value, json};

const SIZE: usize = 10 * 1024 * 1024;
const ROUNDS: usize = 3;

/// The test corpus's sentences, personal and business, with filler text between them.
fn corpus() -> String {
    let corpus: Value = serde_json::from_str(include_str!("../tests/it/pii_corpus.json")).expect("corpus");
    let mut sentences: Vec<String> =
        corpus["personal"].as_array().expect("list").iter().map(|p| p[0].as_str().expect("text").to_owned()).collect();
    sentences.extend(corpus["business"].as_array().expect("list").iter().map(|b| b.as_str().expect("text").to_owned()));
    let filler = "Прошу рассмотреть претензию в установленный срок и сообщить о принятом решении. ";
    let mut text = String::with_capacity(SIZE + 1024);
    let mut i = 0usize;
    while text.len() < SIZE {
        text.push_str(&sentences[i % sentences.len()]);
        text.push_str(if i.is_multiple_of(3) { "\n" } else { " " });
        if i.is_multiple_of(2) {
            text.push_str(filler);
        }
        i += 1;
    }
    text
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

fn main() {
    let text = corpus();
    let megabytes = text.len() as f64 / (1024.0 * 1024.0);
    let folder = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/bench");
    std::fs::create_dir_all(&folder).expect("bench folder");
    let file = folder.join("pii-corpus.txt");
    std::fs::write(&file, &text).expect("write the corpus");

    let mut found = 0;
    let rust = median(
        (0..ROUNDS)
            .map(|_| {
                let started = Instant::now();
                let (_, redaction) = skill_sdk::pii::redact(&text);
                found = redaction.as_log().values().filter_map(Value::as_u64).sum::<u64>();
                started.elapsed().as_secs_f64()
            })
            .collect(),
    );
    let python_binary = std::env::var("SKILL_TEST_PYTHON").unwrap_or_else(|_| "python3".to_owned());
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/support/pii_reference.py");
    let python = median(
        (0..ROUNDS)
            .map(|_| {
                let output =
                    Command::new(&python_binary).args([script, "bench"]).arg(&file).output().expect("python runs");
                String::from_utf8_lossy(&output.stdout).trim().parse::<f64>().expect("python prints seconds")
            })
            .collect(),
    );
    let ratio = python / rust;
    println!("\nPII guard on a mixed {megabytes:.1} MB corpus ({found} replacements), median of {ROUNDS}");
    println!("{:<34} {:>10} {:>10}", "implementation", "seconds", "MB/s");
    println!("{:<34} {:>10.3} {:>10.1}", "skill_sdk::pii (regex, Rust)", rust, megabytes / rust);
    println!("{:<34} {:>10.3} {:>10.1}", "the same patterns on Python re", python, megabytes / python);
    println!("ratio: {ratio:.1}× (bar ≥ 10×)");
    let result = json!({
        "benchmark": "pii-guard",
        "megabytes": megabytes,
        "replacements": found,
        "rust_seconds": rust,
        "python_seconds": python,
        "rust_mb_per_second": megabytes / rust,
        "python_mb_per_second": megabytes / python,
        "ratio": ratio,
    });
    std::fs::write(folder.join("pii.json"), format!("{result:#}\n")).expect("write result");
    println!("written {}", folder.join("pii.json").display());
}
