//! Claude by subscription through the `claude` CLI: `SKILL_LLM_CLAUDE_BINARY` (default `claude`,
//! looked up on `PATH`), `SKILL_LLM_MODELS` (a comma list; empty means the CLI's own default),
//! `SKILL_LLM_TIMEOUT_SECONDS` (default 300).
//!
//! The CLI runs in a fresh empty folder, with the skill's prompt on stdin (never in argv), in an
//! environment without `ANTHROPIC_API_KEY` and `ANTHROPIC_AUTH_TOKEN` (the subscription's
//! `CLAUDE_CODE_OAUTH_TOKEN` passes through; its value is masked in every message). Each model
//! gets two attempts (the second quotes what was wrong); a rate or usage limit stops at once; a
//! timeout kills the process. The price of a subscription call is not known: `cost_usd` is none.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::LazyLock;
use std::time::Duration;

use regex::Regex;
use serde_json::Value;
use tokio::io::AsyncWriteExt;

use super::openai::{models_from_env, timeout_from_env};
use super::{
    ChatFuture, ChatMode, ChatReply, ChatRequest, LlmProvider, Usage, check_answer, extract_json, invalid_response,
};
use crate::SkillError;
use crate::env::Env;

const DEFAULT_TIMEOUT: Duration = Duration::from_secs(300);
/// The CLI's own system prompt: the skill's prompt travels on stdin.
const SYSTEM_PROMPT: &str =
    "Return exactly one JSON object as the whole answer: no prose, no markdown, no code fences.";
const SCRUBBED: &[&str] = &["ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN"];
const TOKEN_VARIABLE: &str = "CLAUDE_CODE_OAUTH_TOKEN";

static RATE_LIMIT: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?i)\b429\b|rate.?limit|usage limit|limit reached|hour limit|weekly limit|overloaded|too many requests",
    )
    .expect("invariant: a valid pattern")
});

/// The provider.
#[derive(Debug)]
pub struct ClaudeCode {
    binary: PathBuf,
    models: Vec<Option<String>>,
    timeout: Duration,
    /// The child's environment (names and values; never printed).
    env: Vec<(String, String)>,
    token: Option<String>,
}

fn unavailable(message: String) -> SkillError {
    SkillError::new("llm_unavailable").with_message(message)
}

/// `name` as given when it holds a `/`, else found on `path`.
fn find_binary(name: &str, path: Option<&str>) -> Option<PathBuf> {
    if name.contains('/') {
        return Path::new(name).is_file().then(|| PathBuf::from(name));
    }
    std::env::split_paths(path.unwrap_or_default()).map(|folder| folder.join(name)).find(|candidate| {
        use std::os::unix::fs::PermissionsExt;
        candidate.metadata().is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    })
}

impl ClaudeCode {
    pub fn from_env(env: &Env) -> Result<Self, SkillError> {
        let name =
            env.get("SKILL_LLM_CLAUDE_BINARY").filter(|v| !v.trim().is_empty()).unwrap_or_else(|| "claude".to_owned());
        let binary = find_binary(&name, env.get("PATH").as_deref()).ok_or_else(|| {
            unavailable(format!("the Claude CLI `{name}` is not on PATH: install it or set SKILL_LLM_CLAUDE_BINARY"))
        })?;
        let models = models_from_env(env);
        let models = if models.is_empty() { vec![None] } else { models.into_iter().map(Some).collect() };
        let variables: Vec<(String, String)> = match env {
            Env::Process => std::env::vars().collect(),
            Env::Map(map) => map.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
        };
        let token = env.get(TOKEN_VARIABLE).filter(|t| !t.is_empty());
        let timeout = timeout_from_env(env, DEFAULT_TIMEOUT)?;
        let child_env = variables.into_iter().filter(|(name, _)| !SCRUBBED.contains(&name.as_str())).collect();
        Ok(Self { binary, models, timeout, env: child_env, token })
    }

    /// `text` with the subscription token masked, cut to 500 characters.
    fn mask(&self, text: &str) -> String {
        let masked = match &self.token {
            Some(token) => text.replace(token.as_str(), "***"),
            None => text.to_owned(),
        };
        masked.chars().take(500).collect()
    }
}

/// The prompt on stdin: the system prompt, the messages under headings, the response format,
/// and on a retry the correction.
fn prompt(request: &ChatRequest, correction: Option<&str>) -> String {
    let mut sections = vec![request.system_prompt.trim().to_owned()];
    for message in &request.messages {
        let role = message.get("role").and_then(Value::as_str).unwrap_or("user");
        let heading = match role {
            "user" => "Message",
            "assistant" => "Assistant answer",
            other => other,
        };
        let content = match message.get("content") {
            Some(Value::String(text)) => text.trim().to_owned(),
            Some(other) => other.to_string(),
            None => String::new(),
        };
        sections.push(format!("## {heading}\n\n{content}"));
    }
    sections.push(match &request.mode {
        ChatMode::Json { schema_name, schema } => format!(
            "## Response format\n\nAnswer with exactly one JSON object named {schema_name}, valid against this JSON Schema:\n\n{}",
            serde_json::to_string_pretty(schema).unwrap_or_default()
        ),
        ChatMode::Object => "## Response format\n\nAnswer with exactly one JSON object.".to_owned(),
    });
    if let Some(correction) = correction {
        sections.push(format!("## Correction\n\nThe previous answer could not be used: {correction}. Answer again with exactly one JSON object."));
    }
    sections.retain(|s| !s.is_empty());
    sections.join("\n\n")
}

/// Tokens of one CLI answer: prompt = input + cache creation + cache read; completion = output.
fn usage_of(answer: &Value) -> Usage {
    let count = |key: &str| answer.get("usage").and_then(|u| u.get(key)).and_then(Value::as_u64).unwrap_or(0);
    let prompt = count("input_tokens") + count("cache_creation_input_tokens") + count("cache_read_input_tokens");
    let completion = count("output_tokens");
    Usage::new(prompt, completion, prompt + completion)
}

/// How one run of the CLI ended.
enum Run {
    /// The answer's text.
    Text { text: String, usage: Usage, model: Option<String> },
    /// A failure for this model (`llm_failed`), with usage already spent.
    Failed(SkillError),
    /// A failure that ends the whole call (rate limit, timeout, spawn failure).
    Stop(SkillError),
}

impl ClaudeCode {
    async fn run(&self, model: Option<&str>, input: String, timeout: Duration) -> Run {
        let folder = std::env::temp_dir().join(format!("skill-claude-{}", uuid::Uuid::new_v4()));
        if let Err(error) = std::fs::create_dir(&folder) {
            return Run::Stop(unavailable(format!(
                "cannot make a working folder for the Claude CLI: {}",
                error.kind()
            )));
        }
        let result = self.run_in(&folder, model, input, timeout).await;
        let _ = std::fs::remove_dir_all(&folder);
        result
    }

    async fn run_in(&self, folder: &Path, model: Option<&str>, input: String, timeout: Duration) -> Run {
        let mut command = tokio::process::Command::new(&self.binary);
        command
            .args(["--print", "--output-format", "json", "--no-session-persistence", "--system-prompt", SYSTEM_PROMPT])
            .args(["--strict-mcp-config", "--mcp-config", r#"{"mcpServers":{}}"#, "--tools", ""]);
        if let Some(model) = model {
            command.args(["--model", model]);
        }
        command
            .env_clear()
            .envs(self.env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
            .current_dir(folder)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        let mut child = match command.spawn() {
            Ok(child) => child,
            Err(error) => return Run::Stop(unavailable(format!("the Claude CLI could not start: {}", error.kind()))),
        };
        let mut stdin = child.stdin.take().expect("invariant: stdin is piped");
        let writer = tokio::spawn(async move {
            let _ = stdin.write_all(input.as_bytes()).await;
            let _ = stdin.shutdown().await;
        });
        let output = match tokio::time::timeout(timeout, child.wait_with_output()).await {
            Err(_) => {
                return Run::Stop(
                    SkillError::new("llm_timeout")
                        .with_message(format!("the Claude CLI did not answer within {} s", timeout.as_secs_f64())),
                );
            }
            Ok(Err(error)) => return Run::Stop(unavailable(format!("the Claude CLI failed to run: {}", error.kind()))),
            Ok(Ok(output)) => output,
        };
        let _ = writer.await;
        let answer: Option<Value> = serde_json::from_slice(&output.stdout).ok().filter(Value::is_object);
        let usage = answer.as_ref().map(usage_of).unwrap_or_default();
        let failed =
            !output.status.success() || answer.as_ref().is_none_or(|a| a.get("is_error") == Some(&Value::Bool(true)));
        if failed {
            let result_text = answer.as_ref().and_then(|a| a.get("result")).and_then(Value::as_str).map(str::to_owned);
            let detail =
                self.mask(&result_text.unwrap_or_else(|| String::from_utf8_lossy(&output.stderr).into_owned()));
            let limited = answer.as_ref().and_then(|a| a.get("api_error_status")).and_then(Value::as_u64) == Some(429)
                || RATE_LIMIT.is_match(&detail);
            if limited {
                return Run::Stop(
                    SkillError::new("llm_rate_limited")
                        .with_message(format!("the Claude subscription is limited: {detail}")),
                );
            }
            return Run::Failed(SkillError::new("llm_failed").with_message(format!("the Claude CLI failed: {detail}")));
        }
        let answer = answer.unwrap_or_default();
        let model = answer.get("modelUsage").and_then(Value::as_object).and_then(|m| m.keys().next().cloned());
        Run::Text { text: answer.get("result").and_then(Value::as_str).unwrap_or("").to_owned(), usage, model }
    }
}

impl LlmProvider for ClaudeCode {
    fn chat<'a>(&'a self, request: &'a ChatRequest, budget: Duration) -> ChatFuture<'a> {
        Box::pin(async move {
            let started = std::time::Instant::now();
            let mut usage = Usage::default();
            let mut last: Option<SkillError> = None;
            for model in &self.models {
                let mut correction: Option<String> = None;
                for _attempt in 0..2 {
                    let left = budget.saturating_sub(started.elapsed());
                    if left.is_zero() {
                        return Err(last.unwrap_or_else(|| {
                            SkillError::new("llm_timeout").with_message("no time was left for the model call")
                        }));
                    }
                    match self
                        .run(model.as_deref(), prompt(request, correction.as_deref()), self.timeout.min(left))
                        .await
                    {
                        Run::Stop(error) => return Err(error),
                        Run::Failed(error) => {
                            last = Some(error);
                            break;
                        }
                        Run::Text { text, usage: spent, model: answered } => {
                            usage.add(spent);
                            let problem = match extract_json(&text) {
                                None => "the answer holds no JSON".to_owned(),
                                Some(data) => match check_answer(&data, &request.mode) {
                                    Ok(()) => {
                                        let model = answered
                                            .or_else(|| model.clone())
                                            .unwrap_or_else(|| "claude-code".to_owned());
                                        return Ok(ChatReply { data, model, usage, cost_usd: None });
                                    }
                                    Err(reasons) => {
                                        reasons.iter().map(ToString::to_string).collect::<Vec<_>>().join("; ")
                                    }
                                },
                            };
                            last = Some(invalid_response(
                                format!("the Claude CLI gave no valid JSON: {problem}"),
                                Vec::new(),
                            ));
                            correction = Some(problem);
                        }
                    }
                }
            }
            Err(last.unwrap_or_else(|| invalid_response("the Claude CLI gave no valid JSON".into(), Vec::new())))
        })
    }
}
