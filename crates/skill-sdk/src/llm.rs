//! `ctx.llm()`: a model according to the installation's configuration. Every call goes through
//! the personal-data guard and is metered into the call's cost.
//!
//! The installation chooses the provider with `SKILL_LLM_PROVIDER`: `openai` (the default; any
//! OpenAI-compatible `/chat/completions` server) or `claude-code` (the Claude CLI). Tests install
//! a [`crate::testing::FakeLlm`] per call.

pub mod claude_code;
pub mod openai;

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value, json};
use skill_contract::schema::{PathError, SchemaValidator};

use crate::env::Env;
use crate::scope::CallScope;
use crate::{SkillError, pii};

/// Tokens of one or more calls.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Usage {
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    pub total_tokens: u64,
}

impl Usage {
    pub fn new(prompt_tokens: u64, completion_tokens: u64, total_tokens: u64) -> Self {
        Self { prompt_tokens, completion_tokens, total_tokens }
    }

    pub(crate) fn add(&mut self, other: Usage) {
        self.prompt_tokens += other.prompt_tokens;
        self.completion_tokens += other.completion_tokens;
        self.total_tokens += other.total_tokens;
    }
}

/// The answer of a chat call.
#[derive(Debug, Clone, PartialEq)]
pub struct ChatResult<T> {
    pub data: T,
    /// The model that answered.
    pub model: String,
    pub usage: Usage,
    /// The price when the provider reports one.
    pub cost_usd: Option<f64>,
}

/// Options of a chat call.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ChatOptions {
    pub temperature: f64,
    pub max_tokens: Option<u32>,
}

impl Default for ChatOptions {
    fn default() -> Self {
        Self { temperature: 0.0, max_tokens: None }
    }
}

/// What the answer must be.
#[derive(Debug, Clone, PartialEq)]
pub enum ChatMode {
    /// A JSON object valid against `schema`.
    Json { schema_name: String, schema: Value },
    /// Any JSON object.
    Object,
}

/// A chat call as a provider receives it: already through the guard.
#[derive(Debug, Clone, PartialEq)]
pub struct ChatRequest {
    pub system_prompt: String,
    /// `{role, content, …}` objects.
    pub messages: Vec<Value>,
    pub mode: ChatMode,
    pub options: ChatOptions,
}

/// A provider's answer: parsed, and checked against the mode.
#[derive(Debug, Clone, PartialEq)]
pub struct ChatReply {
    pub data: Value,
    pub model: String,
    pub usage: Usage,
    pub cost_usd: Option<f64>,
}

/// A boxed future of a provider call.
pub type ChatFuture<'a> = Pin<Box<dyn Future<Output = Result<ChatReply, SkillError>> + Send + 'a>>;

/// A model provider.
pub trait LlmProvider: Send + Sync + fmt::Debug {
    /// Answers `request` within `budget`.
    fn chat<'a>(&'a self, request: &'a ChatRequest, budget: Duration) -> ChatFuture<'a>;
}

/// A user message.
pub fn user(content: &str) -> Value {
    json!({"role": "user", "content": content})
}

/// An assistant message (an earlier answer in the conversation).
pub fn assistant(content: &str) -> Value {
    json!({"role": "assistant", "content": content})
}

/// The first JSON value in a model's text: the whole text, else each fenced block, else the
/// text from the first `{` to the last `}`.
pub fn extract_json(text: &str) -> Option<Value> {
    let trimmed = text.trim();
    if let Ok(value) = serde_json::from_str(trimmed) {
        return Some(value);
    }
    let mut rest = trimmed;
    while let Some(open) = rest.find("```") {
        let after = &rest[open + 3..];
        let body_start = after.find('\n').map_or(0, |n| n + 1);
        let Some(close) = after[body_start..].find("```") else { break };
        if let Ok(value) = serde_json::from_str(after[body_start..body_start + close].trim()) {
            return Some(value);
        }
        rest = &after[body_start + close + 3..];
    }
    let (first, last) = (trimmed.find('{')?, trimmed.rfind('}')?);
    (first < last).then(|| serde_json::from_str(&trimmed[first..=last]).ok()).flatten()
}

/// Checks an answer against the mode: `Ok` or the reasons (paths and messages).
pub fn check_answer(data: &Value, mode: &ChatMode) -> Result<(), Vec<PathError>> {
    if !data.is_object() {
        return Err(vec![PathError::new("/", "the answer is not a JSON object")]);
    }
    match mode {
        ChatMode::Object => Ok(()),
        ChatMode::Json { schema, .. } => {
            let validator = SchemaValidator::new(schema)
                .map_err(|e| vec![PathError::new("/", format!("the response schema is not valid: {e}"))])?;
            let errors = validator.errors(data);
            if errors.is_empty() { Ok(()) } else { Err(errors) }
        }
    }
}

/// `llm_invalid_response` with the reasons.
pub(crate) fn invalid_response(message: String, errors: Vec<PathError>) -> SkillError {
    SkillError::new("llm_invalid_response").with_message(message).with_detail("errors", json!(errors))
}

/// The provider configured in `env` (`SKILL_LLM_PROVIDER`, default `openai`).
pub(crate) fn provider_from_env(env: &Env) -> Result<Arc<dyn LlmProvider>, SkillError> {
    let choice = env.get("SKILL_LLM_PROVIDER").unwrap_or_default().trim().to_lowercase();
    match choice.as_str() {
        "" | "openai" => Ok(Arc::new(openai::OpenAi::from_env(env)?)),
        "claude-code" => Ok(Arc::new(claude_code::ClaudeCode::from_env(env)?)),
        other => Err(SkillError::new("llm_not_configured")
            .with_message(format!("SKILL_LLM_PROVIDER is `{other}`: use openai or claude-code"))
            .with_detail("config", json!("SKILL_LLM_PROVIDER"))),
    }
}

/// The model of one skill call: `ctx.llm()?`.
#[derive(Debug, Clone)]
pub struct Llm {
    provider: Arc<dyn LlmProvider>,
    scope: CallScope,
}

/// The JSON Schema of the answer type, without `$schema` (some servers refuse unknown keys).
fn answer_schema<T: JsonSchema>() -> Value {
    let mut schema = schemars::generate::SchemaSettings::draft2020_12()
        .for_deserialize()
        .into_generator()
        .into_root_schema_for::<T>()
        .to_value();
    if let Some(map) = schema.as_object_mut() {
        map.remove("$schema");
    }
    schema
}

impl Llm {
    pub(crate) fn new(provider: Arc<dyn LlmProvider>, scope: CallScope) -> Self {
        Self { provider, scope }
    }

    /// Calls the model through the guard; meters a successful answer.
    async fn call(
        &self,
        system_prompt: &str,
        messages: &[Value],
        mode: ChatMode,
        options: ChatOptions,
    ) -> Result<ChatReply, SkillError> {
        let (system, messages, found) = pii::redact_messages(Some(system_prompt), messages);
        if !found.is_empty() {
            let kinds = Value::Object(found.as_log());
            tracing::warn!(parent: self.scope.span(), found = %kinds, "personal data was replaced before the model call");
        }
        let request = ChatRequest { system_prompt: system.unwrap_or_default(), messages, mode, options };
        let reply = self.provider.chat(&request, self.scope.remaining()).await?;
        if let Err(errors) = check_answer(&reply.data, &request.mode) {
            return Err(invalid_response(
                format!("the answer of {} does not match the expected JSON", reply.model),
                errors,
            ));
        }
        let usage = reply.usage;
        self.scope.meter().record_llm(
            &reply.model,
            usage.prompt_tokens,
            usage.completion_tokens,
            usage.total_tokens,
            reply.cost_usd,
        );
        Ok(reply)
    }

    /// Asks for a JSON answer of type `T` (its JSON Schema goes to the model as the response
    /// format) and returns it typed.
    pub async fn chat_json<T: DeserializeOwned + JsonSchema>(
        &self,
        system_prompt: &str,
        messages: &[Value],
        schema_name: &str,
    ) -> Result<ChatResult<T>, SkillError> {
        self.chat_json_with(system_prompt, messages, schema_name, ChatOptions::default()).await
    }

    /// [`Llm::chat_json`] with a temperature and a token limit.
    pub async fn chat_json_with<T: DeserializeOwned + JsonSchema>(
        &self,
        system_prompt: &str,
        messages: &[Value],
        schema_name: &str,
        options: ChatOptions,
    ) -> Result<ChatResult<T>, SkillError> {
        let mode = ChatMode::Json { schema_name: schema_name.to_owned(), schema: answer_schema::<T>() };
        let reply = self.call(system_prompt, messages, mode, options).await?;
        let data = serde_path_to_error::deserialize::<_, T>(reply.data).map_err(|error| {
            let reason = PathError::new(crate::failure::json_path(error.path()), error.inner().to_string());
            invalid_response("the answer does not decode into the expected type".into(), vec![reason])
        })?;
        Ok(ChatResult { data, model: reply.model, usage: reply.usage, cost_usd: reply.cost_usd })
    }

    /// Asks for any JSON object.
    pub async fn chat_json_object(
        &self,
        system_prompt: &str,
        messages: &[Value],
        options: ChatOptions,
    ) -> Result<ChatResult<Map<String, Value>>, SkillError> {
        let reply = self.call(system_prompt, messages, ChatMode::Object, options).await?;
        let Value::Object(data) = reply.data else { unreachable!("invariant: the answer was checked to be an object") };
        Ok(ChatResult { data, model: reply.model, usage: reply.usage, cost_usd: reply.cost_usd })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_is_found_in_prose_and_fences() {
        assert_eq!(extract_json(" {\"a\": 1} "), Some(json!({"a": 1})));
        assert_eq!(extract_json("Here:\n```json\n{\"a\": 2}\n```\nthanks"), Some(json!({"a": 2})));
        assert_eq!(extract_json("```\nnot json\n```\n```\n{\"a\": 3}\n```"), Some(json!({"a": 3})));
        assert_eq!(extract_json("The answer is {\"a\": {\"b\": 4}} as asked."), Some(json!({"a": {"b": 4}})));
        assert_eq!(extract_json("no json here"), None);
        assert_eq!(extract_json("} backwards {"), None);
    }

    #[test]
    fn answers_are_checked_against_the_mode() {
        let mode = ChatMode::Json { schema_name: "x".into(), schema: json!({"type": "object", "required": ["draft"]}) };
        assert!(check_answer(&json!({"draft": "d"}), &mode).is_ok());
        assert_eq!(check_answer(&json!({}), &mode).expect_err("missing")[0].path, "/");
        assert!(check_answer(&json!([1]), &ChatMode::Object).is_err());
    }
}
