//! Any OpenAI-compatible `/chat/completions` server: `SKILL_LLM_BASE_URL`, `SKILL_LLM_API_KEY`,
//! `SKILL_LLM_MODELS` (a comma list: the first model that answers wins, the next is tried after a
//! 5xx, a lost connection or a timeout), `SKILL_LLM_TIMEOUT_SECONDS` (per request, default 120).
//!
//! An answer that is not the JSON asked for gets one corrective retry on the same model (the bad
//! answer and the reason go back to the model); then the next model; then
//! `llm_invalid_response`. A 429 is `llm_rate_limited` at once (another model of the same account
//! would be limited too). Every failure is retryable. The API key never appears in logs, errors or
//! `Debug` output. The response types are lenient: servers differ in small ways.

use std::fmt;
use std::time::Duration;

use reqwest::StatusCode;
use serde::Deserialize;
use serde_json::{Value, json};

use super::{
    ChatFuture, ChatMode, ChatReply, ChatRequest, LlmProvider, Usage, check_answer, extract_json, invalid_response,
};
use crate::SkillError;
use crate::env::Env;

const DEFAULT_TIMEOUT: Duration = Duration::from_secs(120);

/// The provider.
pub struct OpenAi {
    endpoint: reqwest::Url,
    api_key: String,
    models: Vec<String>,
    timeout: Duration,
}

impl fmt::Debug for OpenAi {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OpenAi")
            .field("endpoint", &self.endpoint.as_str())
            .field("api_key", &"***")
            .field("models", &self.models)
            .field("timeout", &self.timeout)
            .finish()
    }
}

fn not_configured(message: String, variable: &str) -> SkillError {
    SkillError::new("llm_not_configured").with_message(message).with_detail("config", json!(variable))
}

/// `SKILL_LLM_TIMEOUT_SECONDS`: a positive number, else the default.
pub(crate) fn timeout_from_env(env: &Env, default: Duration) -> Result<Duration, SkillError> {
    match env.get("SKILL_LLM_TIMEOUT_SECONDS").map(|v| v.trim().to_owned()).filter(|v| !v.is_empty()) {
        None => Ok(default),
        Some(text) => match text.parse::<f64>() {
            Ok(seconds) if seconds.is_finite() && seconds > 0.0 => Ok(Duration::from_secs_f64(seconds)),
            _ => Err(not_configured(
                format!("SKILL_LLM_TIMEOUT_SECONDS is `{text}`: give a number of seconds"),
                "SKILL_LLM_TIMEOUT_SECONDS",
            )),
        },
    }
}

/// `SKILL_LLM_MODELS` as a list: items trimmed, empty ones dropped.
pub(crate) fn models_from_env(env: &Env) -> Vec<String> {
    env.get("SKILL_LLM_MODELS")
        .unwrap_or_default()
        .split(',')
        .map(str::trim)
        .filter(|m| !m.is_empty())
        .map(str::to_owned)
        .collect()
}

impl OpenAi {
    pub fn from_env(env: &Env) -> Result<Self, SkillError> {
        let base = env.get("SKILL_LLM_BASE_URL").filter(|v| !v.trim().is_empty());
        let api_key = env.get("SKILL_LLM_API_KEY").filter(|v| !v.trim().is_empty());
        let models = models_from_env(env);
        let missing: Vec<&str> = [
            ("SKILL_LLM_BASE_URL", base.is_none()),
            ("SKILL_LLM_API_KEY", api_key.is_none()),
            ("SKILL_LLM_MODELS", models.is_empty()),
        ]
        .iter()
        .filter(|(_, missing)| *missing)
        .map(|(name, _)| *name)
        .collect();
        if !missing.is_empty() {
            return Err(not_configured(
                format!("the openai provider needs {}: set {}", missing.join(", "), missing.join(" and ")),
                missing[0],
            ));
        }
        let base = base.unwrap_or_default();
        let endpoint = reqwest::Url::parse(&format!("{}/chat/completions", base.trim().trim_end_matches('/')))
            .ok()
            .filter(|u| matches!(u.scheme(), "http" | "https"))
            .ok_or_else(|| {
                not_configured(format!("SKILL_LLM_BASE_URL is not an http(s) URL: {base}"), "SKILL_LLM_BASE_URL")
            })?;
        Ok(Self {
            endpoint,
            api_key: api_key.unwrap_or_default(),
            models,
            timeout: timeout_from_env(env, DEFAULT_TIMEOUT)?,
        })
    }
}

/// One connection pool for every model call of the process.
fn client() -> &'static reqwest::Client {
    static CLIENT: std::sync::OnceLock<reqwest::Client> = std::sync::OnceLock::new();
    CLIENT.get_or_init(|| reqwest::Client::builder().build().expect("invariant: a default TLS client builds"))
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct Completion {
    model: Option<String>,
    choices: Vec<Choice>,
    usage: Option<CompletionUsage>,
    cost: Option<f64>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct Choice {
    message: Option<CompletionMessage>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct CompletionMessage {
    content: Option<Value>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct CompletionUsage {
    prompt_tokens: Option<u64>,
    completion_tokens: Option<u64>,
    total_tokens: Option<u64>,
    cost: Option<f64>,
}

impl Completion {
    /// The text of the first choice: a string, or the text parts of a list.
    fn text(&self) -> String {
        match self.choices.first().and_then(|c| c.message.as_ref()).and_then(|m| m.content.as_ref()) {
            Some(Value::String(text)) => text.clone(),
            Some(Value::Array(parts)) => parts.iter().filter_map(|p| p.get("text").and_then(Value::as_str)).collect(),
            _ => String::new(),
        }
    }

    fn usage(&self) -> Usage {
        let usage = self.usage.as_ref();
        let prompt = usage.and_then(|u| u.prompt_tokens).unwrap_or(0);
        let completion = usage.and_then(|u| u.completion_tokens).unwrap_or(0);
        Usage::new(prompt, completion, usage.and_then(|u| u.total_tokens).unwrap_or(prompt + completion))
    }

    fn cost(&self) -> Option<f64> {
        self.usage.as_ref().and_then(|u| u.cost).or(self.cost)
    }
}

/// How one model's attempt ended.
enum Outcome {
    Answer(ChatReply),
    /// Try the next model: a 5xx, a lost connection, a timeout, or answers that stayed unusable.
    NextModel(SkillError),
    /// Stop: the answer is final for every model.
    Stop(SkillError),
}

fn body(request: &ChatRequest, model: &str, messages: &[Value]) -> Value {
    let mut all = vec![json!({"role": "system", "content": request.system_prompt})];
    all.extend(messages.iter().cloned());
    let mut body = json!({"model": model, "messages": all, "temperature": request.options.temperature});
    if let Some(max_tokens) = request.options.max_tokens {
        body["max_tokens"] = json!(max_tokens);
    }
    body["response_format"] = match &request.mode {
        ChatMode::Json { schema_name, schema } => {
            json!({"type": "json_schema", "json_schema": {"name": schema_name, "schema": schema}})
        }
        ChatMode::Object => json!({"type": "json_object"}),
    };
    body
}

impl OpenAi {
    async fn post(&self, body: &Value, timeout: Duration) -> Result<Completion, Outcome> {
        let sent =
            client().post(self.endpoint.clone()).bearer_auth(&self.api_key).timeout(timeout).json(body).send().await;
        let response = match sent {
            Ok(response) => response,
            Err(error) if error.is_timeout() => {
                return Err(Outcome::NextModel(
                    SkillError::new("llm_timeout")
                        .with_message(format!("the model did not answer within {} s", timeout.as_secs_f64())),
                ));
            }
            Err(_) => {
                return Err(Outcome::NextModel(
                    SkillError::new("llm_unavailable").with_message(format!("{} cannot be reached", self.endpoint)),
                ));
            }
        };
        let status = response.status();
        let failure = |code: &str, message: String| {
            SkillError::new(code).with_message(message).with_detail("status", json!(status.as_u16()))
        };
        if status == StatusCode::TOO_MANY_REQUESTS {
            return Err(Outcome::Stop(failure("llm_rate_limited", "the model provider limits the rate (429)".into())));
        }
        if status.is_server_error() {
            return Err(Outcome::NextModel(failure(
                "llm_unavailable",
                format!("the model provider answered {status}"),
            )));
        }
        if status == StatusCode::UNAUTHORIZED || status == StatusCode::FORBIDDEN {
            return Err(Outcome::Stop(failure(
                "llm_not_configured",
                format!("the model provider refused the API key ({status})"),
            )));
        }
        if !status.is_success() {
            return Err(Outcome::Stop(failure("llm_failed", format!("the model provider answered {status}"))));
        }
        match response.json::<Completion>().await {
            Ok(completion) => Ok(completion),
            Err(_) => Err(Outcome::NextModel(
                SkillError::new("llm_failed").with_message("the model provider's answer is not a completion"),
            )),
        }
    }

    /// One model: an attempt, and one corrective retry when the answer is not usable.
    async fn try_model(&self, request: &ChatRequest, model: &str, timeout: Duration) -> Outcome {
        let mut messages = request.messages.clone();
        let mut usage = Usage::default();
        let mut cost: Option<f64> = None;
        let mut last_errors = Vec::new();
        for attempt in 0..2 {
            let completion = match self.post(&body(request, model, &messages), timeout).await {
                Ok(completion) => completion,
                Err(outcome) => return outcome,
            };
            usage.add(completion.usage());
            if let Some(c) = completion.cost() {
                cost = Some(cost.unwrap_or(0.0) + c);
            }
            let text = completion.text();
            let parsed = extract_json(&text);
            let reasons = match &parsed {
                None => vec![skill_contract::schema::PathError::new("/", "the answer is not JSON")],
                Some(data) => match check_answer(data, &request.mode) {
                    Ok(()) => {
                        let model = completion.model.clone().unwrap_or_else(|| model.to_owned());
                        return Outcome::Answer(ChatReply {
                            data: parsed.unwrap_or_default(),
                            model,
                            usage,
                            cost_usd: cost,
                        });
                    }
                    Err(reasons) => reasons,
                },
            };
            if attempt == 0 {
                let explained: Vec<String> = reasons.iter().map(ToString::to_string).collect();
                messages.push(json!({"role": "assistant", "content": text}));
                messages.push(json!({"role": "user", "content": format!(
                    "That answer cannot be used: {}. Answer again with exactly one JSON object that matches the requested schema, nothing else.",
                    explained.join("; ")
                )}));
            }
            last_errors = reasons;
        }
        Outcome::NextModel(invalid_response(
            format!("{model} gave no valid JSON after a corrective retry"),
            last_errors,
        ))
    }
}

impl LlmProvider for OpenAi {
    fn chat<'a>(&'a self, request: &'a ChatRequest, budget: Duration) -> ChatFuture<'a> {
        Box::pin(async move {
            let started = std::time::Instant::now();
            let mut last = None;
            for model in &self.models {
                let left = budget.saturating_sub(started.elapsed());
                if left.is_zero() {
                    break;
                }
                match self.try_model(request, model, self.timeout.min(left)).await {
                    Outcome::Answer(reply) => return Ok(reply),
                    Outcome::Stop(error) => return Err(error),
                    Outcome::NextModel(error) => {
                        tracing::warn!(model = %model, code = error.code(), "the model failed; trying the next one");
                        last = Some(error);
                    }
                }
            }
            Err(last
                .unwrap_or_else(|| SkillError::new("llm_timeout").with_message("no time was left for the model call")))
        })
    }
}
