//! The claude-code provider against a fake `claude` executable that the test puts on `PATH`: it
//! records its argv, stdin, environment and working folder, and answers as the scenario says.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use skill_sdk::llm::user;
use skill_sdk::{SkillContext, SkillError, skill, testing};

/// The fake CLI: each run gets a number; the scenario picks the answer for it.
const FAKE_CLAUDE: &str = r#"#!/bin/bash
record="$FAKE_CLAUDE_RECORD"
n=$(( $(cat "$record/count" 2>/dev/null || echo 0) + 1 ))
echo "$n" > "$record/count"
printf '%s\0' "$@" > "$record/argv-$n"
cat > "$record/stdin-$n"
env > "$record/env-$n"
pwd > "$record/cwd-$n"
ls -A > "$record/ls-$n"
model=""
while [ $# -gt 0 ]; do if [ "$1" = "--model" ]; then model="$2"; fi; shift; done
ok() { printf '{"type":"result","is_error":false,"result":%s,"usage":{"input_tokens":100,"cache_creation_input_tokens":10,"cache_read_input_tokens":5,"output_tokens":20},"modelUsage":{"%s":{}}}' "$1" "${model:-claude-default}"; }
case "$FAKE_CLAUDE_SCENARIO:$n" in
  good:*) ok '"{\"draft\": \"Здравствуйте!\"}"' ;;
  prose-then-json:1) ok '"I would write: Dear customer"' ;;
  prose-then-json:*) ok '"```json\n{\"draft\": \"fixed\"}\n```"' ;;
  always-prose:*) ok '"no json at all"' ;;
  usage-limit:*) printf '{"type":"result","is_error":true,"result":"You have reached your usage limit, resets at 5pm"}' ;;
  api-429:*) printf '{"type":"result","is_error":true,"api_error_status":429,"result":"error"}' ;;
  crash-then-good:1) echo "boom: token $CLAUDE_CODE_OAUTH_TOKEN rejected" >&2; exit 3 ;;
  crash-then-good:*) ok '"{\"draft\": \"from the second model\"}"' ;;
  always-crash:*) echo "boom: token $CLAUDE_CODE_OAUTH_TOKEN rejected" >&2; exit 3 ;;
  slow:*) sleep 3; touch "$record/finished"; ok '"{\"draft\": \"late\"}"' ;;
esac
"#;

/// A folder with the fake CLI and a folder for its records; removed on drop.
struct Fake {
    root: PathBuf,
}

impl Fake {
    fn new(label: &str) -> Self {
        let root = std::env::temp_dir().join(format!("skill-claude-test-{label}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(root.join("bin")).expect("bin");
        std::fs::create_dir_all(root.join("record")).expect("record");
        let binary = root.join("bin/claude");
        std::fs::write(&binary, FAKE_CLAUDE).expect("write the fake");
        std::fs::set_permissions(&binary, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        Self { root }
    }

    fn record(&self, name: &str) -> String {
        std::fs::read_to_string(self.root.join("record").join(name)).unwrap_or_default()
    }

    fn runs(&self) -> usize {
        self.record("count").trim().parse().unwrap_or(0)
    }

    fn call(&self, scenario: &str, models: &str, extra: &[(&str, &str)]) -> Result<skill_sdk::Outcome, SkillError> {
        let path = format!("{}:/usr/bin:/bin", self.root.join("bin").display());
        let mut call = testing::call(&ask::SKILL)
            .env("SKILL_LLM_PROVIDER", "claude-code")
            .env("PATH", &path)
            .env("SKILL_LLM_MODELS", models)
            .env("FAKE_CLAUDE_SCENARIO", scenario)
            .env("FAKE_CLAUDE_RECORD", self.root.join("record").to_str().expect("utf-8"))
            .env("ANTHROPIC_API_KEY", "must-not-pass")
            .env("ANTHROPIC_AUTH_TOKEN", "must-not-pass-either")
            .env("CLAUDE_CODE_OAUTH_TOKEN", "oauth-secret-42");
        for (name, value) in extra {
            call = call.env(name, value);
        }
        call.invoke(json!({"claim": "Верните деньги, звоните +7 912 345-67-89"}))
    }
}

impl Drop for Fake {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
pub(crate) struct Ask {
    pub claim: String,
}

#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub(crate) struct Drafted {
    pub draft: String,
}

#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct Report {
    pub draft: String,
    pub model: String,
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    pub cost_usd: Option<f64>,
}

#[skill("llm.claude", version = "1", side_effects = "none", risk = "low", timeout = 60)]
pub(crate) async fn ask(inputs: Ask, ctx: SkillContext) -> Result<Report, SkillError> {
    let answer = ctx.llm()?.chat_json::<Drafted>("You draft polite replies.", &[user(&inputs.claim)], "draft").await?;
    Ok(Report {
        draft: answer.data.draft,
        model: answer.model,
        prompt_tokens: answer.usage.prompt_tokens,
        completion_tokens: answer.usage.completion_tokens,
        cost_usd: answer.cost_usd,
    })
}

#[test]
fn the_cli_gets_a_fixed_argv_the_prompt_on_stdin_a_scrubbed_env_and_an_empty_folder() {
    let fake = Fake::new("good");
    let outcome = fake.call("good", "claude-sonnet-4", &[]).expect("answered");
    assert_eq!(outcome.outputs["draft"], "Здравствуйте!");
    assert_eq!(outcome.outputs["model"], "claude-sonnet-4", "the first key of modelUsage");
    assert_eq!(outcome.outputs["prompt_tokens"], 115, "input + cache creation + cache read");
    assert_eq!(outcome.outputs["completion_tokens"], 20);
    assert_eq!(outcome.outputs["cost_usd"], Value::Null);

    let recorded = fake.record("argv-1");
    let argv: Vec<&str> = recorded.strip_suffix('\0').unwrap_or(&recorded).split('\0').collect();
    assert_eq!(argv[..4], ["--print", "--output-format", "json", "--no-session-persistence"]);
    assert_eq!(argv[4], "--system-prompt");
    assert!(argv[5].contains("exactly one JSON object"), "{}", argv[5]);
    assert_eq!(argv[6..11], ["--strict-mcp-config", "--mcp-config", r#"{"mcpServers":{}}"#, "--tools", ""]);
    assert_eq!(argv[11..], ["--model", "claude-sonnet-4"]);
    assert!(!argv.iter().any(|a| a.contains("Верните")), "the prompt is never in argv");

    let stdin = fake.record("stdin-1");
    assert!(
        stdin.starts_with("You draft polite replies.\n\n## Message\n\nВерните деньги, звоните [ПДн:телефон]"),
        "{stdin}"
    );
    assert!(stdin.contains("## Response format") && stdin.contains("\"required\""), "{stdin}");
    assert!(!stdin.contains("912 345"), "the guard ran first");

    let env = fake.record("env-1");
    assert!(!env.contains("ANTHROPIC_API_KEY") && !env.contains("ANTHROPIC_AUTH_TOKEN"), "{env}");
    assert!(env.contains("CLAUDE_CODE_OAUTH_TOKEN=oauth-secret-42"));
    let cwd = fake.record("cwd-1");
    assert!(cwd.contains("skill-claude-") && fake.record("ls-1").trim().is_empty(), "a fresh empty folder: {cwd}");
    assert!(!Path::new(cwd.trim()).exists(), "removed afterwards");
}

#[test]
fn without_models_the_cli_default_is_used() {
    let fake = Fake::new("default");
    let outcome = fake.call("good", "", &[]).expect("answered");
    assert_eq!(outcome.outputs["model"], "claude-default");
    assert!(!fake.record("argv-1").contains("--model"));
}

#[test]
fn an_answer_without_json_gets_a_second_attempt_quoting_the_problem() {
    let fake = Fake::new("retry");
    let outcome = fake.call("prose-then-json", "m1", &[]).expect("answered on the second attempt");
    assert_eq!(outcome.outputs["draft"], "fixed");
    assert_eq!(outcome.outputs["prompt_tokens"], 230, "tokens of both attempts");
    assert!(
        fake.record("stdin-2")
            .contains("## Correction\n\nThe previous answer could not be used: the answer holds no JSON")
    );
}

#[test]
fn two_attempts_per_model_then_llm_invalid_response() {
    let fake = Fake::new("invalid");
    let error = fake.call("always-prose", "m1,m2", &[]).expect_err("never JSON");
    assert_eq!((error.code(), error.retryable()), ("llm_invalid_response", true));
    assert_eq!(fake.runs(), 4);
}

#[test]
fn a_usage_limit_stops_at_once() {
    for scenario in ["usage-limit", "api-429"] {
        let fake = Fake::new(scenario);
        let error = fake.call(scenario, "m1,m2", &[]).expect_err("limited");
        assert_eq!((error.code(), error.retryable()), ("llm_rate_limited", true), "{scenario}");
        assert_eq!(fake.runs(), 1, "{scenario}: no other model tried");
    }
}

#[test]
fn a_crash_moves_to_the_next_model_and_masks_the_token() {
    let fake = Fake::new("crash");
    let outcome = fake.call("crash-then-good", "m1,m2", &[]).expect("second model");
    assert_eq!(outcome.outputs["draft"], "from the second model");
    assert!(fake.record("argv-2").contains("m2"));
    let fake = Fake::new("crash-all");
    let error = fake.call("always-crash", "m1", &[]).expect_err("crashed");
    assert_eq!((error.code(), error.retryable()), ("llm_failed", true));
    assert!(error.message().contains("token *** rejected"), "{}", error.message());
    assert!(!format!("{error:?}").contains("oauth-secret-42"));
}

#[test]
fn a_timeout_kills_the_process() {
    let fake = Fake::new("slow");
    let started = Instant::now();
    let error = fake.call("slow", "m1", &[("SKILL_LLM_TIMEOUT_SECONDS", "0.5")]).expect_err("too slow");
    assert_eq!((error.code(), error.retryable()), ("llm_timeout", true));
    assert!(started.elapsed() < Duration::from_secs(2), "{:?}", started.elapsed());
    std::thread::sleep(Duration::from_millis(3500));
    assert!(!fake.root.join("record/finished").exists(), "the process was killed before it finished");
}

#[test]
fn configuration_errors() {
    let fake = Fake::new("config");
    let error = fake.call("good", "m1", &[("SKILL_LLM_CLAUDE_BINARY", "no-such-claude")]).expect_err("missing");
    assert_eq!((error.code(), error.retryable()), ("llm_unavailable", true));
    assert!(error.message().contains("not on PATH"), "{}", error.message());
    let error = fake.call("good", "m1", &[("SKILL_LLM_TIMEOUT_SECONDS", "later")]).expect_err("bad timeout");
    assert_eq!(error.code(), "llm_not_configured");
    let explicit = fake.root.join("bin/claude");
    let outcome = fake
        .call("good", "m1", &[("SKILL_LLM_CLAUDE_BINARY", explicit.to_str().expect("utf-8"))])
        .expect("a path works");
    assert_eq!(outcome.outputs["draft"], "Здравствуйте!");
}
