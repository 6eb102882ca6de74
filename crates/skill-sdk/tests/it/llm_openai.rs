//! The openai provider against a real HTTP server on 127.0.0.1 that speaks `/chat/completions`:
//! success, invalid JSON then valid, 429, a 500 then the next model, an answer slower than the
//! timeout, a wrong schema, a refused key — and the API key never in an error.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Json;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use skill_sdk::llm::{ChatOptions, user};
use skill_sdk::{SkillContext, SkillError, skill, testing};

#[derive(Default)]
struct Server {
    requests: Mutex<Vec<(Option<String>, Value)>>,
}

fn completion(model: &str, content: &str) -> Response {
    Json(json!({
        "id": "c1", "object": "chat.completion", "model": model,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 20, "completion_tokens": 7, "total_tokens": 27, "cost": 0.0005}
    }))
    .into_response()
}

/// The model's behaviour is chosen by the model name.
async fn answer(server: Arc<Server>, headers: HeaderMap, body: Value) -> Response {
    let authorization = headers.get("authorization").and_then(|v| v.to_str().ok()).map(str::to_owned);
    let seen = {
        let mut requests = server.requests.lock().expect("lock");
        requests.push((authorization, body.clone()));
        requests.iter().filter(|(_, b)| b["model"] == body["model"]).count()
    };
    let model = body["model"].as_str().unwrap_or("").to_owned();
    match model.as_str() {
        "good" => completion("good-2024", r#"{"draft": "Здравствуйте!"}"#),
        "fenced" => completion("fenced", "Вот ответ:\n```json\n{\"draft\": \"из блока\"}\n```"),
        "sloppy" if seen == 1 => completion("sloppy", "Sure! Here is a polite reply."),
        "sloppy" => completion("sloppy", r#"{"draft": "second try"}"#),
        "wrong" => completion("wrong", r#"{"text": "no draft field"}"#),
        "busy" => (StatusCode::TOO_MANY_REQUESTS, Json(json!({"error": {"message": "slow down"}}))).into_response(),
        "broken" => (StatusCode::INTERNAL_SERVER_ERROR, "upstream exploded").into_response(),
        "slow" => {
            tokio::time::sleep(Duration::from_secs(3)).await;
            completion("slow", r#"{"draft": "late"}"#)
        }
        "refused" => (StatusCode::UNAUTHORIZED, Json(json!({"error": {"message": "bad key"}}))).into_response(),
        "parts" => Json(json!({"choices": [{"message": {"content": [{"type": "text", "text": "{\"draft\":"}, {"type": "text", "text": " \"parts\"}"}]}}]})).into_response(),
        _ => (StatusCode::NOT_FOUND, "no such model").into_response(),
    }
}

fn start() -> (String, Arc<Server>) {
    let server = Arc::new(Server::default());
    let shared = Arc::clone(&server);
    let route = axum::routing::post(move |headers, Json(body): Json<Value>| answer(Arc::clone(&shared), headers, body));
    let base = skill_fixtures::serve(axum::Router::new().route("/v1/chat/completions", route));
    (format!("{base}/v1"), server)
}

#[derive(Debug, Deserialize, JsonSchema)]
pub(crate) struct Ask {
    pub claim: String,
    #[serde(default)]
    pub object: bool,
}

#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub(crate) struct Drafted {
    pub draft: String,
}

#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct Report {
    pub data: Value,
    pub model: String,
    pub total_tokens: u64,
}

#[skill("llm.ask", version = "1", side_effects = "none", risk = "low", timeout = 30)]
pub(crate) async fn ask(inputs: Ask, ctx: SkillContext) -> Result<Report, SkillError> {
    let llm = ctx.llm()?;
    let messages = [user(&inputs.claim)];
    if inputs.object {
        let answer = llm
            .chat_json_object("Reply as JSON.", &messages, ChatOptions { temperature: 0.3, max_tokens: Some(200) })
            .await?;
        return Ok(Report {
            data: Value::Object(answer.data),
            model: answer.model,
            total_tokens: answer.usage.total_tokens,
        });
    }
    let answer = llm.chat_json::<Drafted>("You draft polite replies.", &messages, "draft").await?;
    Ok(Report { data: json!(answer.data), model: answer.model, total_tokens: answer.usage.total_tokens })
}

const KEY: &str = "sk-test-0123456789abcdefghijklmnop";

fn run(base: &str, models: &str, extra: &[(&str, &str)], inputs: Value) -> Result<skill_sdk::Outcome, SkillError> {
    let mut call = testing::call(&ask::SKILL)
        .env("SKILL_LLM_BASE_URL", base)
        .env("SKILL_LLM_API_KEY", KEY)
        .env("SKILL_LLM_MODELS", models);
    for (name, value) in extra {
        call = call.env(name, value);
    }
    call.invoke(inputs)
}

fn bodies(server: &Server) -> Vec<Value> {
    server.requests.lock().expect("lock").iter().map(|(_, b)| b.clone()).collect()
}

#[test]
fn a_good_answer_is_typed_metered_and_asked_for_with_the_schema() {
    let (base, server) = start();
    let outcome = run(&base, "good", &[], json!({"claim": "Верните деньги"})).expect("answered");
    assert_eq!(outcome.outputs["data"], json!({"draft": "Здравствуйте!"}));
    assert_eq!(outcome.outputs["model"], "good-2024", "the model the server says answered");
    assert_eq!(
        outcome.cost,
        Some(
            json!({"llm": {"calls": 1, "promptTokens": 20, "completionTokens": 7, "totalTokens": 27, "models": ["good-2024"], "costUsd": 0.0005}})
        )
    );
    let requests = server.requests.lock().expect("lock").clone();
    let (authorization, body) = &requests[0];
    assert_eq!(authorization.as_deref(), Some(format!("Bearer {KEY}").as_str()));
    assert_eq!(body["model"], "good");
    assert_eq!(
        body["messages"],
        json!([{"role": "system", "content": "You draft polite replies."}, {"role": "user", "content": "Верните деньги"}])
    );
    assert_eq!(body["temperature"], 0.0);
    assert!(body.get("max_tokens").is_none());
    assert_eq!(body["response_format"]["type"], "json_schema");
    assert_eq!(body["response_format"]["json_schema"]["name"], "draft");
    assert_eq!(body["response_format"]["json_schema"]["schema"]["required"], json!(["draft"]));
    assert!(body["response_format"]["json_schema"]["schema"].get("$schema").is_none());
}

#[test]
fn json_in_fences_and_in_content_parts_is_found() {
    let (base, _server) = start();
    assert_eq!(
        run(&base, "fenced", &[], json!({"claim": "x"})).expect("answered").outputs["data"],
        json!({"draft": "из блока"})
    );
    assert_eq!(
        run(&base, "parts", &[], json!({"claim": "x"})).expect("answered").outputs["data"],
        json!({"draft": "parts"})
    );
}

#[test]
fn an_answer_that_is_not_json_gets_one_corrective_retry() {
    let (base, server) = start();
    let outcome = run(&base, "sloppy", &[], json!({"claim": "x"})).expect("answered on the retry");
    assert_eq!(outcome.outputs["data"], json!({"draft": "second try"}));
    assert_eq!(outcome.outputs["total_tokens"], 54, "usage of both attempts");
    let second = &bodies(&server)[1];
    let messages = second["messages"].as_array().expect("list");
    assert_eq!(messages[2], json!({"role": "assistant", "content": "Sure! Here is a polite reply."}));
    assert!(messages[3]["content"].as_str().is_some_and(|c| c.contains("not JSON")), "{}", messages[3]);
}

#[test]
fn a_wrong_schema_twice_is_llm_invalid_response() {
    let (base, server) = start();
    let error = run(&base, "wrong", &[], json!({"claim": "x"})).expect_err("never right");
    assert_eq!((error.code(), error.retryable()), ("llm_invalid_response", true));
    assert_eq!(bodies(&server).len(), 2, "one corrective retry");
    assert!(error.details().expect("details")["errors"][0]["message"].as_str().is_some_and(|m| m.contains("draft")));
}

#[test]
fn a_rate_limit_stops_without_trying_other_models() {
    let (base, server) = start();
    let error = run(&base, "busy,good", &[], json!({"claim": "x"})).expect_err("limited");
    assert_eq!((error.code(), error.retryable()), ("llm_rate_limited", true));
    assert_eq!(bodies(&server).len(), 1);
}

#[test]
fn a_server_error_moves_to_the_next_model() {
    let (base, server) = start();
    let outcome = run(&base, "broken, good", &[], json!({"claim": "x"})).expect("the second model answers");
    assert_eq!(outcome.outputs["model"], "good-2024");
    let models: Vec<Value> = bodies(&server).iter().map(|b| b["model"].clone()).collect();
    assert_eq!(models, [json!("broken"), json!("good")]);
    let error = run(&base, "broken", &[], json!({"claim": "x"})).expect_err("no model left");
    assert_eq!((error.code(), error.retryable()), ("llm_unavailable", true));
}

#[test]
fn a_slow_model_times_out_and_the_next_is_tried() {
    let (base, _server) = start();
    let started = std::time::Instant::now();
    let error =
        run(&base, "slow", &[("SKILL_LLM_TIMEOUT_SECONDS", "0.5")], json!({"claim": "x"})).expect_err("too slow");
    assert_eq!((error.code(), error.retryable()), ("llm_timeout", true));
    assert!(started.elapsed() < Duration::from_secs(2), "the timeout cut the request: {:?}", started.elapsed());
    let outcome =
        run(&base, "slow,good", &[("SKILL_LLM_TIMEOUT_SECONDS", "0.5")], json!({"claim": "x"})).expect("next model");
    assert_eq!(outcome.outputs["model"], "good-2024");
}

#[test]
fn object_mode_and_options_reach_the_server() {
    let (base, server) = start();
    let outcome = run(&base, "good", &[], json!({"claim": "x", "object": true})).expect("answered");
    assert_eq!(outcome.outputs["data"], json!({"draft": "Здравствуйте!"}));
    let body = &bodies(&server)[0];
    assert_eq!(body["response_format"], json!({"type": "json_object"}));
    assert_eq!((body["temperature"].as_f64(), body["max_tokens"].as_u64()), (Some(0.3), Some(200)));
}

#[test]
fn a_refused_key_is_not_configured_and_the_key_never_shows() {
    let (base, _server) = start();
    let error = run(&base, "refused", &[], json!({"claim": "x"})).expect_err("refused");
    assert_eq!(error.code(), "llm_not_configured");
    let everything = format!("{} {error:?}", serde_json::to_string(&error).expect("json"));
    assert!(!everything.contains(KEY), "{everything}");
}

#[test]
fn missing_settings_are_named() {
    let error =
        testing::call(&ask::SKILL).env("SKILL_LLM_API_KEY", KEY).invoke(json!({"claim": "x"})).expect_err("incomplete");
    assert_eq!((error.code(), error.retryable()), ("llm_not_configured", true));
    assert!(error.message().contains("SKILL_LLM_BASE_URL, SKILL_LLM_MODELS"), "{}", error.message());
    let error =
        testing::call(&ask::SKILL).env("SKILL_LLM_PROVIDER", "gpt").invoke(json!({"claim": "x"})).expect_err("unknown");
    assert!(error.message().contains("use openai or claude-code"), "{}", error.message());
    let (base, _server) = start();
    let error =
        run(&base, "good", &[("SKILL_LLM_TIMEOUT_SECONDS", "soon")], json!({"claim": "x"})).expect_err("bad timeout");
    assert_eq!(error.code(), "llm_not_configured");
}
