//! `FakeLlm`: one answer, a sequence, a function of the call; calls recorded after the guard and
//! before the answer is checked; a wrong answer failing like a real client's; per-call
//! installation; metering.

use crate::logs;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use skill_sdk::llm::{ChatOptions, user};
use skill_sdk::testing::{self, FakeAnswer, FakeLlm};
use skill_sdk::{SkillContext, SkillError, skill};

#[derive(Debug, Deserialize, JsonSchema)]
pub(crate) struct Ask {
    pub claim: String,
    #[serde(default = "one")]
    pub calls: u32,
    #[serde(default)]
    pub object: bool,
}

fn one() -> u32 {
    1
}

#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub(crate) struct Drafted {
    pub draft: String,
}

#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct Drafts {
    pub drafts: Vec<Value>,
}

#[skill("fake.ask", version = "1", side_effects = "none", risk = "low")]
pub(crate) async fn ask(inputs: Ask, ctx: SkillContext) -> Result<Drafts, SkillError> {
    let llm = ctx.llm()?;
    let mut drafts = Vec::new();
    for i in 0..inputs.calls {
        let messages = [user(&format!("{} #{i}", inputs.claim))];
        if inputs.object {
            let answer = llm
                .chat_json_object("Object please.", &messages, ChatOptions { temperature: 0.7, max_tokens: Some(50) })
                .await?;
            drafts.push(Value::Object(answer.data));
        } else {
            drafts.push(json!(llm.chat_json::<Drafted>("Draft.", &messages, "draft").await?.data.draft));
        }
    }
    Ok(Drafts { drafts })
}

fn run(llm: &FakeLlm, inputs: Value) -> Result<skill_sdk::Outcome, SkillError> {
    testing::call(&ask::SKILL).llm(llm).invoke(inputs)
}

#[test]
fn one_answer_serves_every_call_and_is_metered() {
    let llm = FakeLlm::answer(json!({"draft": "same"})).cost_usd(0.25);
    let outcome = run(&llm, json!({"claim": "c", "calls": 3})).expect("answered");
    assert_eq!(outcome.outputs["drafts"], json!(["same", "same", "same"]));
    assert_eq!(
        outcome.cost,
        Some(
            json!({"llm": {"calls": 3, "promptTokens": 30, "completionTokens": 15, "totalTokens": 45, "models": ["fake-model"], "costUsd": 0.75}})
        )
    );
    let prompts: Vec<String> = llm.calls().iter().map(|c| c.prompt().to_owned()).collect();
    assert_eq!(prompts, ["c #0", "c #1", "c #2"]);
}

#[test]
fn a_sequence_answers_in_order_and_its_end_is_a_clear_failure() {
    let llm =
        FakeLlm::sequence(vec![json!({"draft": "first"}), json!({"draft": "second"})]).model("m-x").usage(1, 2, 3);
    let outcome = run(&llm, json!({"claim": "c", "calls": 2})).expect("answered");
    assert_eq!(outcome.outputs["drafts"], json!(["first", "second"]));
    assert_eq!(outcome.cost.expect("cost")["llm"]["models"], json!(["m-x"]));
    let error = run(&llm, json!({"claim": "c"})).expect_err("a third call");
    assert_eq!(error.code(), "fake_llm_exhausted");
    assert_eq!(error.message(), "FakeLlm got call 3, but 2 answers were given");
}

#[test]
fn answers_can_be_functions_of_the_call() {
    let llm = FakeLlm::function(|call| json!({"draft": format!("re: {}", call.prompt())}));
    let outcome = run(&llm, json!({"claim": "refund", "calls": 2})).expect("answered");
    assert_eq!(outcome.outputs["drafts"], json!(["re: refund #0", "re: refund #1"]));
    let mixed = FakeLlm::sequence_of(vec![
        FakeAnswer::Value(json!({"draft": "fixed"})),
        FakeAnswer::function(|call| json!({"draft": call.system_prompt.to_uppercase()})),
    ]);
    assert_eq!(
        run(&mixed, json!({"claim": "c", "calls": 2})).expect("answered").outputs["drafts"],
        json!(["fixed", "DRAFT."])
    );
}

#[test]
fn calls_are_recorded_after_the_guard_and_before_the_check() {
    let llm = FakeLlm::answer(json!({"text": "not a draft"}));
    let error = run(&llm, json!({"claim": "пишите на anna@mail.ru"})).expect_err("a wrong answer");
    assert_eq!((error.code(), error.retryable()), ("llm_invalid_response", true));
    let call = &llm.calls()[0];
    assert_eq!(call.prompt(), "пишите на [ПДн:email] #0");
    assert_eq!(
        (call.mode, call.schema_name.as_deref(), call.temperature, call.max_tokens),
        ("json", Some("draft"), 0.0, None)
    );
    assert_eq!(run(&llm, json!({"claim": "x"})).expect_err("again").code(), "llm_invalid_response");
    let wrong_type = FakeLlm::answer(json!({"draft": 5}));
    assert_eq!(
        run(&wrong_type, json!({"claim": "x"})).expect_err("a number").details().expect("details")["errors"][0]["path"],
        "/draft"
    );
}

#[test]
fn a_failed_call_is_not_metered() {
    let llm = FakeLlm::sequence(vec![json!({"draft": "ok"}), json!({"nope": true})]);
    let error = run(&llm, json!({"claim": "c", "calls": 2})).expect_err("the second answer is wrong");
    assert_eq!(error.code(), "llm_invalid_response");
    assert_eq!(llm.calls().len(), 2);
}

#[test]
fn object_mode_and_options_are_recorded() {
    let llm = FakeLlm::answer(json!({"anything": [1, 2]}));
    let outcome = run(&llm, json!({"claim": "c", "object": true})).expect("answered");
    assert_eq!(outcome.outputs["drafts"], json!([{"anything": [1, 2]}]));
    let call = &llm.calls()[0];
    assert_eq!(
        (call.mode, call.schema_name.clone(), call.temperature, call.max_tokens),
        ("object", None, 0.7, Some(50))
    );
    let not_object = FakeLlm::answer(json!([1, 2]));
    assert_eq!(
        run(&not_object, json!({"claim": "c", "object": true})).expect_err("a list").code(),
        "llm_invalid_response"
    );
}

#[test]
fn concurrent_calls_each_see_their_own_fake() {
    let handles: Vec<_> = (0..8)
        .map(|i| {
            std::thread::spawn(move || {
                let llm = FakeLlm::answer(json!({"draft": format!("answer {i}")}));
                let outcome = run(&llm, json!({"claim": format!("claim {i}"), "calls": 5})).expect("answered");
                (i, outcome.outputs["drafts"].clone(), llm.calls().len())
            })
        })
        .collect();
    for handle in handles {
        let (i, drafts, calls) = handle.join().expect("thread");
        assert_eq!(drafts, json!(vec![format!("answer {i}"); 5]));
        assert_eq!(calls, 5);
    }
}

#[test]
fn the_guard_logs_kinds_and_counts_never_values() {
    let llm = FakeLlm::answer(json!({"draft": "ok"}));
    let logs = logs::with_logs(|| {
        run(&llm, json!({"claim": "Иванов Иван Иванович, тел. +7 912 345-67-89, почта a.ivanov@mail.ru"}))
            .expect("answered");
    });
    let line =
        logs.lines().find(|l| l.contains("personal data was replaced")).unwrap_or_else(|| panic!("no warning: {logs}"));
    assert!(line.contains("WARN") && line.contains(r#"found={"email":1,"телефон":1,"фио":1}"#), "{line}");
    assert!(line.contains("skill=fake.ask@1"), "inside the call's span: {line}");
    // Whole values (a bare "912" may be part of a time stamp).
    for value in ["Иванов", "912 345-67-89", "a.ivanov"] {
        assert!(!logs.contains(value), "{value} in the logs: {logs}");
    }
}
