//! The claims skills: their behaviour through the SDK's invocation path, and their committed
//! package files.

use std::path::{Path, PathBuf};

use claims_integration::skills::{classify, draft_reply, import_rows, lookup, send_reply};
use serde_json::json;
use skill_contract::{NormalizeOptions, Skill as Document, yaml};
use skill_sdk::registry::Registry;
use skill_sdk::testing::{self, FakeCore, FakeLlm};

fn package() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

#[test]
fn the_registry_holds_the_package_skills() {
    let registry = Registry::linked().expect("the skills are valid");
    let refs: Vec<String> = registry.skills().iter().map(|s| s.reference()).collect();
    assert_eq!(
        refs,
        ["claim.classify@1", "claim.draft_reply@1", "claim.import_rows@1", "claim.lookup@1", "claim.send_reply@1"]
    );
    assert_eq!(send_reply::SKILL.entrypoint(), "claims_integration.skills:send_reply");
}

#[test]
fn the_committed_files_match_the_code() {
    let registry = Registry::linked().expect("the skills are valid");
    let differences = skill_sdk::export::check(registry.skills(), &package(), None).expect("checks");
    assert!(
        differences.is_empty(),
        "run `cargo run -p claims-integration -- export --package examples/claims`: {differences:?}"
    );
}

#[test]
fn the_committed_files_pass_publication_validation() {
    for skill in [&classify::SKILL, &draft_reply::SKILL, &send_reply::SKILL, &import_rows::SKILL] {
        let path = skill_sdk::export::skill_file(&package(), skill);
        let document = yaml::from_str(&std::fs::read_to_string(&path).expect("committed")).expect("valid YAML");
        let read = Document::from_document(&document, &NormalizeOptions::default())
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        assert_eq!(read.skill_ref().to_string(), skill.reference());
    }
}

#[test]
fn classify_finds_the_category_by_its_words() {
    let cases = [
        ("Верните деньги за заказ 1045", "refund", vec!["верните", "деньги"]),
        ("Курьер так и не пришёл, доставка сорвана", "delivery", vec!["доставк", "курьер"]),
        ("The kettle arrived broken", "quality", vec!["broken"]),
        ("Спасибо за быстрый ответ", "other", vec![]),
    ];
    for (text, category, matched) in cases {
        let outcome = testing::invoke(&classify::SKILL, json!({"text": text})).expect("classified");
        assert_eq!(outcome.outputs["category"], category, "{text}");
        assert_eq!(outcome.outputs["matched"], json!(matched), "{text}");
        assert_eq!(outcome.cost, None);
    }
}

#[test]
fn lookup_finds_a_claim_or_names_the_one_it_does_not_know() {
    let outcome = testing::invoke(&lookup::SKILL, json!({"claim": "c-1003"})).expect("found");
    assert_eq!(
        serde_json::Value::Object(outcome.outputs),
        json!({"claim": "C-1003", "customer": "Mei Lin", "order": "O-5540", "status": "closed"})
    );
    let error = testing::invoke(&lookup::SKILL, json!({"claim": "C-9"})).expect_err("unknown");
    assert_eq!((error.code(), error.retryable()), ("claim_not_found", false));
    assert_eq!(error.details().and_then(|d| d.get("claim")), Some(&json!("C-9")));
    // The contract sends it over https to the claims service with a token for claims-api.
    let contract = lookup::SKILL.contract().expect("a contract").to_export_json();
    assert_eq!(contract["implementation"]["protocol"], "http");
    assert_eq!(contract["implementation"]["auth"]["audience"], "claims-api");
}

#[test]
fn classify_refuses_inputs_that_break_the_schema() {
    let error = testing::invoke(&classify::SKILL, json!({"text": 5})).expect_err("refused");
    assert_eq!(error.code(), "input_contract_violation");
    assert_eq!(error.details().expect("details")["errors"][0]["path"], "/text");
}

#[test]
fn draft_reply_asks_the_model_with_the_claim() {
    let llm = FakeLlm::answer(json!({"draft": "Здравствуйте! Деньги вернём в течение трёх дней."}));
    let outcome = testing::call(&draft_reply::SKILL).llm(&llm).invoke(json!({"claim": "C-1"})).expect("drafted");
    assert!(outcome.outputs["draft"].as_str().is_some_and(|d| d.starts_with("Здравствуйте")));
    let calls = llm.calls();
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0].prompt(), "C-1");
    assert_eq!(calls[0].system_prompt, "You draft polite replies to customer claims.");
    assert_eq!(calls[0].schema_name.as_deref(), Some("draft"));
    assert_eq!(
        outcome.cost,
        Some(
            json!({"llm": {"calls": 1, "promptTokens": 10, "completionTokens": 5, "totalTokens": 15, "models": ["fake-model"]}})
        )
    );
}

#[test]
fn draft_reply_never_shows_the_model_personal_data() {
    let llm = FakeLlm::answer(json!({"draft": "Здравствуйте!"}));
    let claim = "Верните деньги. Иванов Иван Иванович, тел. +7 912 345-67-89";
    let history = ["Ответ отправлен на ivan@mail.ru"];
    testing::call(&draft_reply::SKILL).llm(&llm).invoke(json!({"claim": claim, "history": history})).expect("drafted");
    let call = &llm.calls()[0];
    assert_eq!(call.prompt(), "Верните деньги. [ПДн:фио], тел. [ПДн:телефон]");
    assert_eq!(call.messages[0], json!({"role": "assistant", "content": "Ответ отправлен на [ПДн:email]"}));
}

#[test]
fn draft_reply_without_a_configured_model_says_what_is_missing() {
    let error = testing::call(&draft_reply::SKILL).no_env().invoke(json!({"claim": "C-1"})).expect_err("no model");
    assert_eq!((error.code(), error.retryable()), ("llm_not_configured", true));
    assert!(error.message().contains("SKILL_LLM_BASE_URL, SKILL_LLM_API_KEY, SKILL_LLM_MODELS"), "{}", error.message());
}

fn outbox() -> tempdir::Folder {
    tempdir::Folder::new("outbox")
}

#[test]
fn send_reply_writes_once_per_key() {
    let outbox = outbox();
    let send = |comment: &str| {
        testing::call(&send_reply::SKILL)
            .idempotency_key("approval-outcome:A-7:0")
            .env("CLAIMS_OUTBOX_DIR", outbox.path().to_str().expect("utf-8 path"))
            .invoke(json!({"claim": "C-1045", "comment": comment}))
            .expect("sent")
    };
    let first = send("Здравствуйте! Деньги вернём в течение трёх дней.");
    assert_eq!(first.outputs["status"], "sent");
    assert_eq!(first.cost, Some(json!({"units": {"message": 1.0}})));
    // A repeat with the same key and reply answers what the first call did (a retry of a
    // delivered reply is no failure), and sends nothing more.
    let again = send("Здравствуйте! Деньги вернём в течение трёх дней.");
    assert_eq!(again.outputs, first.outputs, "the first call's result");
    assert_eq!(again.cost, None, "nothing was sent the second time");
    let files: Vec<_> = std::fs::read_dir(outbox.path()).expect("outbox").collect();
    assert_eq!(files.len(), 1, "one message for one key");
}

/// Another reply under a key sent before is a failure, never the outcome "sent": the approved
/// reply did not go out, and nothing else was written.
#[test]
fn send_reply_under_a_key_sent_with_another_reply_fails() {
    let outbox = outbox();
    let send = |comment: &str| {
        testing::call(&send_reply::SKILL)
            .idempotency_key("approval-outcome:A-7:0")
            .env("CLAIMS_OUTBOX_DIR", outbox.path().to_str().expect("utf-8 path"))
            .invoke(json!({"claim": "C-1045", "comment": comment}))
    };
    let first = send("Здравствуйте! Деньги вернём в течение трёх дней.").expect("sent");
    let other = send("Another reply").expect_err("another reply under the same key");
    assert_eq!((other.code(), other.retryable()), ("reply_conflict", false), "{}", other.message());
    assert!(other.message().contains("not sent"), "{}", other.message());
    assert_eq!(other.details().and_then(|details| details.get("messageId")), Some(&first.outputs["message_id"]));
    let files: Vec<_> = std::fs::read_dir(outbox.path()).expect("outbox").collect();
    assert_eq!(files.len(), 1, "nothing more was written");
    let kept = std::fs::read_to_string(files[0].as_ref().expect("a file").path()).expect("the message");
    assert!(kept.contains("трёх дней"), "the first reply stays: {kept}");
}

#[test]
fn send_reply_needs_a_key_and_an_outbox() {
    let error = testing::call(&send_reply::SKILL).no_env().invoke(json!({"claim": "C-1", "comment": "x"}));
    assert_eq!(error.expect_err("no key").code(), "idempotency_key_required");
    let error =
        testing::call(&send_reply::SKILL).idempotency_key("k").no_env().invoke(json!({"claim": "C-1", "comment": "x"}));
    let error = error.expect_err("no outbox");
    assert_eq!((error.code(), error.retryable()), ("config_missing", true));
}

/// Runs `claim.import_rows@1` on the register `text`, kept as the artifact `A-1` of `core`.
fn import(core: &FakeCore, text: &str) -> Result<serde_json::Map<String, serde_json::Value>, skill_sdk::SkillError> {
    core.put_artifact("A-1", text, Some("text/csv"));
    let inputs = json!({"task": "T-1", "workspace": "W-1", "artifact": "A-1", "scope": "north"});
    testing::call(&import_rows::SKILL).core(core).invoke(inputs).map(|outcome| outcome.outputs)
}

#[test]
fn import_rows_applies_the_register_at_the_state_its_preview_saw() {
    let core = FakeCore::new();
    let first =
        import(&core, "claim,customer,status\nC-1,Ada Lind,open\nC-2,\"Berg, Jonas\",closed\n\n").expect("imported");
    assert_eq!(first["report"], json!({"rows": 2, "opened": 2, "closed": 0, "changed": 0, "unchanged": 0}));
    assert_eq!(first["state_token"], core.slot_token("W-1", "claims", "claims-register.csv", "north"));
    let applied = core.applied();
    assert_eq!(applied[0]["expectedState"], "st:44136fa355b3678a", "at the empty slot its preview saw");
    assert_eq!(
        applied[0]["entities"][1],
        json!({"kind": "claim", "key": "C-2", "attributes": {"customer": "Berg, Jonas", "status": "closed"}}),
        "a quoted field keeps its comma"
    );
    // CRLF lines; C-1 gone, C-2 changed, C-3 new; a doubled quote is one quote.
    let second =
        import(&core, "claim,customer,status\r\nC-2,\"Berg, Jonas\",reopened\r\nC-3,\"Eva \"\"Evi\"\" Holm\",open\r\n")
            .expect("imported");
    assert_eq!(second["report"], json!({"rows": 2, "opened": 1, "closed": 1, "changed": 1, "unchanged": 0}));
    assert_eq!(core.applied()[1]["expectedState"], first["state_token"]);
    assert_eq!(core.applied()[1]["entities"][1]["attributes"]["customer"], "Eva \"Evi\" Holm");
    assert_eq!(core.artifact_reads(), ["A-1", "A-1"]);
}

#[test]
fn import_rows_names_the_line_of_a_malformed_register() {
    let core = FakeCore::new();
    for (text, line) in [
        ("claim,customer\nC-1,Ada\n", 1),
        ("", 1),
        ("claim,customer,status\nC-1,Ada,open\nC-2,Berg\n", 3),
        ("claim,customer,status\nC-1,\"Ada,open\n", 2),
        ("claim,customer,status\n ,Ada,open\n", 2),
    ] {
        let error = import(&core, text).expect_err("malformed");
        assert_eq!(
            (error.code(), error.details().map(|d| d["line"].clone())),
            ("invalid_csv", Some(json!(line))),
            "{text:?}"
        );
    }
    let error = {
        core.put_artifact("A-1", vec![0xff, 0xfe], Some("text/csv"));
        let inputs = json!({"task": "T-1", "workspace": "W-1", "artifact": "A-1", "scope": "north"});
        testing::call(&import_rows::SKILL).core(&core).invoke(inputs).expect_err("not text")
    };
    assert_eq!(error.code(), "invalid_csv");
    assert!(core.applied().is_empty(), "nothing applied");
}

/// A temporary folder removed on drop.
mod tempdir {
    use std::path::{Path, PathBuf};

    pub(crate) struct Folder(PathBuf);

    impl Folder {
        pub(crate) fn new(label: &str) -> Self {
            let unique = format!("claims-{label}-{}-{:?}", std::process::id(), std::thread::current().id());
            let path = std::env::temp_dir().join(unique.replace(['(', ')'], ""));
            std::fs::create_dir_all(&path).expect("temp folder");
            Self(path)
        }

        pub(crate) fn path(&self) -> &Path {
            &self.0
        }
    }

    impl Drop for Folder {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

/// PyYAML (a YAML 1.1 reader) reads the committed files to the same values and types as we do.
#[test]
fn pyyaml_reads_the_committed_files_as_we_do() {
    let python = std::env::var("SKILL_TEST_PYTHON").unwrap_or_else(|_| "python3".to_owned());
    let script = package().join("../../crates/skill-contract/tests/it/support/pyyaml_compare.py");
    let folder = tempdir::Folder::new("pyyaml");
    let mut count = 0;
    for entry in std::fs::read_dir(package().join("skills")).expect("skills") {
        let path = entry.expect("entry").path();
        let text = std::fs::read_to_string(&path).expect("read");
        let ours = yaml::from_str(&text).expect("valid YAML");
        let stem = path.file_stem().expect("name").to_string_lossy().into_owned();
        std::fs::write(folder.path().join(format!("{stem}.yaml")), &text).expect("write");
        std::fs::write(folder.path().join(format!("{stem}.json")), serde_json::to_string(&ours).expect("json"))
            .expect("write");
        count += 1;
    }
    let output = std::process::Command::new(&python).arg(&script).arg(folder.path()).output().unwrap_or_else(|error| {
        panic!("this test needs `{python}` with PyYAML (the test command sets SKILL_TEST_PYTHON): {error}")
    });
    let report = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{report}{}", String::from_utf8_lossy(&output.stderr));
    assert_eq!(report.trim(), format!("checked {count}, 0 differ"));
}
