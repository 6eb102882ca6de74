//! A model for tests: one answer for every call, a sequence of answers, or a function of the call.
//! Install it per call with `testing::call(..).llm(&fake)`; concurrent calls each see their own.
//!
//! Every call is recorded after the personal-data guard (so recorded prompts are redacted) and
//! before the answer is checked; a wrong answer fails as a real client's would
//! (`llm_invalid_response`); each answer is copied, and metered like a real one (10/5/15 tokens
//! by default).

use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use serde_json::{Value, json};

use crate::SkillError;
use crate::llm::{ChatFuture, ChatMode, ChatReply, ChatRequest, LlmProvider, Usage};

/// What one call asked.
#[derive(Debug, Clone, PartialEq)]
pub struct LlmCall {
    /// `json` for `chat_json`, `object` for `chat_json_object`.
    pub mode: &'static str,
    pub system_prompt: String,
    pub messages: Vec<Value>,
    pub schema_name: Option<String>,
    pub temperature: f64,
    pub max_tokens: Option<u32>,
}

impl LlmCall {
    /// The content of the last message, or `""`.
    pub fn prompt(&self) -> &str {
        self.messages.last().and_then(|m| m.get("content")).and_then(Value::as_str).unwrap_or("")
    }
}

type AnswerFn = Arc<dyn Fn(&LlmCall) -> Value + Send + Sync>;

/// One answer: a value, or a function of the call.
#[derive(Clone)]
pub enum FakeAnswer {
    Value(Value),
    Function(AnswerFn),
}

impl FakeAnswer {
    pub fn function(f: impl Fn(&LlmCall) -> Value + Send + Sync + 'static) -> Self {
        Self::Function(Arc::new(f))
    }

    fn give(&self, call: &LlmCall) -> Value {
        match self {
            Self::Value(value) => value.clone(),
            Self::Function(f) => f(call),
        }
    }
}

impl fmt::Debug for FakeAnswer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Value(value) => f.debug_tuple("Value").field(value).finish(),
            Self::Function(_) => f.write_str("Function(..)"),
        }
    }
}

#[derive(Debug, Clone)]
enum Answers {
    Same(FakeAnswer),
    Sequence(Vec<FakeAnswer>),
}

#[derive(Debug)]
struct State {
    answers: Answers,
    model: String,
    usage: Usage,
    cost_usd: Option<f64>,
    calls: Mutex<Vec<LlmCall>>,
}

/// The fake model. Clones share their answers and recorded calls.
#[derive(Debug, Clone)]
pub struct FakeLlm {
    state: Arc<State>,
}

impl FakeLlm {
    fn with(answers: Answers) -> Self {
        Self {
            state: Arc::new(State {
                answers,
                model: "fake-model".to_owned(),
                usage: Usage::new(10, 5, 15),
                cost_usd: None,
                calls: Mutex::new(Vec::new()),
            }),
        }
    }

    /// The same answer for every call.
    pub fn answer(answer: Value) -> Self {
        Self::with(Answers::Same(FakeAnswer::Value(answer)))
    }

    /// Answer *i* for call *i*; a call beyond the end fails the test.
    pub fn sequence(answers: Vec<Value>) -> Self {
        Self::with(Answers::Sequence(answers.into_iter().map(FakeAnswer::Value).collect()))
    }

    /// A sequence whose items may be functions of the call.
    pub fn sequence_of(answers: Vec<FakeAnswer>) -> Self {
        Self::with(Answers::Sequence(answers))
    }

    /// The answer computed from each call.
    pub fn function(f: impl Fn(&LlmCall) -> Value + Send + Sync + 'static) -> Self {
        Self::with(Answers::Same(FakeAnswer::function(f)))
    }

    fn configured(self, change: impl FnOnce(&mut State)) -> Self {
        let mut state = Arc::try_unwrap(self.state).unwrap_or_else(|shared| State {
            answers: shared.answers.clone(),
            model: shared.model.clone(),
            usage: shared.usage,
            cost_usd: shared.cost_usd,
            calls: Mutex::new(Vec::new()),
        });
        change(&mut state);
        Self { state: Arc::new(state) }
    }

    /// The model name the answers carry (`fake-model`).
    pub fn model(self, model: &str) -> Self {
        self.configured(|s| s.model = model.to_owned())
    }

    /// The usage of each answer (10/5/15).
    pub fn usage(self, prompt: u64, completion: u64, total: u64) -> Self {
        self.configured(|s| s.usage = Usage::new(prompt, completion, total))
    }

    /// A price per answer, for the cost document's `costUsd`.
    pub fn cost_usd(self, cost: f64) -> Self {
        self.configured(|s| s.cost_usd = Some(cost))
    }

    fn calls_mut(&self) -> MutexGuard<'_, Vec<LlmCall>> {
        self.state.calls.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Every call so far, in order.
    pub fn calls(&self) -> Vec<LlmCall> {
        self.calls_mut().clone()
    }
}

impl LlmProvider for FakeLlm {
    fn chat<'a>(&'a self, request: &'a ChatRequest, _budget: Duration) -> ChatFuture<'a> {
        Box::pin(async move {
            let call = LlmCall {
                mode: match request.mode {
                    ChatMode::Json { .. } => "json",
                    ChatMode::Object => "object",
                },
                system_prompt: request.system_prompt.clone(),
                messages: request.messages.clone(),
                schema_name: match &request.mode {
                    ChatMode::Json { schema_name, .. } => Some(schema_name.clone()),
                    ChatMode::Object => None,
                },
                temperature: request.options.temperature,
                max_tokens: request.options.max_tokens,
            };
            let index = {
                let mut calls = self.calls_mut();
                calls.push(call.clone());
                calls.len()
            };
            let answer = match &self.state.answers {
                Answers::Same(answer) => answer.give(&call),
                Answers::Sequence(answers) => match answers.get(index - 1) {
                    Some(answer) => answer.give(&call),
                    None => {
                        return Err(SkillError::new("fake_llm_exhausted")
                            .with_message(format!("FakeLlm got call {index}, but {} answers were given", answers.len()))
                            .with_detail("answers", json!(answers.len())));
                    }
                },
            };
            Ok(ChatReply {
                data: answer,
                model: self.state.model.clone(),
                usage: self.state.usage,
                cost_usd: self.state.cost_usd,
            })
        })
    }
}
