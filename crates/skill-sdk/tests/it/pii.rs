//! The personal-data guard on a corpus of claims and contracts, and against the platform's
//! patterns run on Python's backtracking `re` (same text, same counts) for the corpus and for
//! thousands of generated strings built from the fragments that make the patterns hard.

use std::io::Write;
use std::process::{Command, Stdio};

use serde_json::Value;
use skill_sdk::pii::redact;

fn corpus() -> Value {
    serde_json::from_str(include_str!("pii_corpus.json")).expect("the corpus is JSON")
}

#[test]
fn personal_data_is_replaced_by_its_marker() {
    let corpus = corpus();
    let personal = corpus["personal"].as_array().expect("list");
    assert!(personal.len() >= 50, "at least 50 personal strings");
    for pair in personal {
        let (input, expected) = (pair[0].as_str().expect("text"), pair[1].as_str().expect("text"));
        let (text, found) = redact(input);
        assert_eq!(text, expected, "{input}");
        assert!(!found.is_empty(), "{input}");
    }
}

#[test]
fn business_text_comes_back_untouched() {
    let corpus = corpus();
    let business = corpus["business"].as_array().expect("list");
    assert!(business.len() >= 50, "at least 50 business strings");
    for input in business {
        let input = input.as_str().expect("text");
        let (text, found) = redact(input);
        assert_eq!(text, input);
        assert!(found.is_empty(), "{input}: {:?}", found.as_log());
    }
}

/// A small deterministic generator (xorshift), so a failure can be replayed.
struct Random(u64);

impl Random {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[(self.next() % items.len() as u64) as usize]
    }
}

const FRAGMENTS: &[&str] = &[
    "Иванов",
    "Иван",
    "Иванович",
    "Ивановна",
    "Петрова",
    "Анна",
    "Сергеевич",
    "Ильич",
    "Гасан",
    "оглы",
    "кызы",
    "Орлова-Ким",
    "И.",
    "А.",
    "Е.",
    "В Москве",
    "директор",
    "Директор",
    "паспорт",
    "Паспорт",
    "паспорта",
    "серия",
    "СЕРИЯ",
    "№",
    "номер",
    "45",
    "10",
    "4510",
    "123456",
    "1234567",
    "123-456-789",
    "01",
    "112-233-445",
    "95",
    "+7",
    "8",
    "(912)",
    "912",
    "345",
    "67",
    "89",
    "-",
    " ",
    "  ",
    ".",
    ",",
    "\n",
    "\t",
    "(",
    ")",
    "a@b.ru",
    "ivan.petrov@mail.ru",
    "x@y",
    "@",
    "ИНН",
    "7701234567",
    "62.01",
    "2024-01-01",
    "01.02.2015",
    "ё",
    "Ё",
    "Пётр",
    "\u{1c}",
    "٣",
    "١٢٣",
    "89123456789",
    "+79123456789",
    "8 912 345 67 89",
    "123-456-789 01",
    "4510 123456",
    "1",
    "v1.",
    "x.",
    "Иванов И.И.",
    "А.Б.Иванов",
];

fn generated(count: usize) -> Vec<String> {
    let mut random = Random(0x5eed_cafe_f00d_1234);
    (0..count)
        .map(|_| {
            let parts = 1 + (random.next() % 12) as usize;
            (0..parts).map(|_| random.pick(FRAGMENTS)).collect::<Vec<_>>().join(if random.next().is_multiple_of(3) {
                ""
            } else {
                " "
            })
        })
        .collect()
}

#[test]
fn the_guard_agrees_with_the_platform_patterns_on_pythons_re() {
    let corpus = corpus();
    let mut inputs: Vec<String> =
        corpus["personal"].as_array().expect("list").iter().map(|p| p[0].as_str().expect("text").to_owned()).collect();
    inputs.extend(corpus["business"].as_array().expect("list").iter().map(|b| b.as_str().expect("text").to_owned()));
    inputs.extend(generated(3000));

    let python = std::env::var("SKILL_TEST_PYTHON").unwrap_or_else(|_| "python3".to_owned());
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/it/support/pii_reference.py");
    let mut child = Command::new(&python)
        .args([script, "redact"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("this test needs `{python}`: {e}"));
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(serde_json::to_string(&inputs).expect("json").as_bytes())
        .expect("write");
    let output = child.wait_with_output().expect("python runs");
    let theirs: Vec<(String, serde_json::Map<String, Value>)> =
        serde_json::from_slice(&output.stdout).expect("python answers JSON");
    let mut differences = Vec::new();
    for (input, (their_text, their_found)) in inputs.iter().zip(&theirs) {
        let (text, found) = redact(input);
        if &text != their_text || &found.as_log() != their_found {
            differences.push(format!(
                "{input:?}\n  ours:   {text:?} {:?}\n  python: {their_text:?} {their_found:?}",
                found.as_log()
            ));
        }
    }
    assert_eq!(theirs.len(), inputs.len());
    assert!(
        differences.is_empty(),
        "{} of {} differ:\n{}",
        differences.len(),
        inputs.len(),
        differences.iter().take(10).cloned().collect::<Vec<_>>().join("\n")
    );
}
