//! dev's stand-in model: a small OpenAI-compatible `/v1/chat/completions` on loopback, started by
//! `skill-core dev` when the installation names no model (`SKILL_LLM_*` unset), so a package's
//! `ctx.llm()` answers in dev. It answers every request with JSON of the schema asked for, each
//! text a template around the customer's words that says it comes from the stand-in. Only `dev`
//! starts it; nothing else of the core knows it.

use axum::Json;
use axum::routing::post;
use serde_json::{Map, Value, json};

/// What every answer and dev's start line say.
pub(crate) const NOTICE: &str = "dev's stand-in model — set SKILL_LLM_BASE_URL for a real one";

/// The model name the stand-in answers as.
pub(crate) const MODEL: &str = "dev-stand-in";

/// The most characters of the prompt a draft quotes.
const QUOTED: usize = 200;

/// Serves the stand-in on a free loopback port until the process ends; answers its base URL.
pub(crate) async fn start() -> anyhow::Result<String> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let base = format!("http://{}/v1", listener.local_addr()?);
    let app = axum::Router::new()
        .route("/v1/chat/completions", post(completions))
        .route("/chat/completions", post(completions));
    tokio::spawn(async move {
        if let Err(error) = axum::serve(listener, app).await {
            tracing::warn!(%error, "dev's stand-in model stopped");
        }
    });
    Ok(base)
}

async fn completions(Json(body): Json<Value>) -> Json<Value> {
    Json(answer(&body))
}

/// The completion for a request: the schema's shape, filled from the last user message.
fn answer(body: &Value) -> Value {
    let prompt = last_user_message(body);
    let schema = body.pointer("/response_format/json_schema/schema");
    let content = match schema {
        Some(schema) => fill(schema, &prompt),
        None => json!({"text": draft(&prompt)}),
    };
    let text = content.to_string();
    let prompt_tokens = prompt.split_whitespace().count();
    let completion_tokens = text.split_whitespace().count();
    json!({
        "id": format!("stand-in-{}", chrono::Utc::now().timestamp_micros()),
        "object": "chat.completion",
        "model": MODEL,
        "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": text}}],
        "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                  "total_tokens": prompt_tokens + completion_tokens},
    })
}

/// The text of the last `user` message (a string, or the text parts of a list).
fn last_user_message(body: &Value) -> String {
    let messages = body.get("messages").and_then(Value::as_array);
    let last = messages.into_iter().flatten().rev().find(|message| message["role"] == "user");
    match last.map(|message| &message["content"]) {
        Some(Value::String(text)) => text.clone(),
        Some(Value::Array(parts)) => {
            parts.iter().filter_map(|part| part["text"].as_str()).collect::<Vec<_>>().join(" ")
        }
        _ => String::new(),
    }
}

/// A value of `schema`'s shape: every property of an object, the first of an enum, a draft for a
/// string.
fn fill(schema: &Value, prompt: &str) -> Value {
    if let Some(first) = schema.get("enum").and_then(Value::as_array).and_then(|values| values.first()) {
        return first.clone();
    }
    if let Some(constant) = schema.get("const") {
        return constant.clone();
    }
    let kind = match schema.get("type") {
        Some(Value::Array(kinds)) => kinds.iter().filter_map(Value::as_str).find(|kind| *kind != "null"),
        Some(kind) => kind.as_str(),
        None if schema.get("properties").is_some() => Some("object"),
        None => None,
    };
    match kind {
        Some("object") => {
            let properties = schema.get("properties").and_then(Value::as_object);
            let filled: Map<String, Value> = properties
                .into_iter()
                .flatten()
                .map(|(name, property)| (name.clone(), fill(property, prompt)))
                .collect();
            Value::Object(filled)
        }
        Some("array") => json!([]),
        Some("integer" | "number") => json!(0),
        Some("boolean") => json!(false),
        _ => json!(draft(prompt)),
    }
}

/// The template's text around the customer's words, saying where it comes from.
fn draft(prompt: &str) -> String {
    let words = prompt.split_whitespace().collect::<Vec<_>>().join(" ");
    let mut quoted: String = words.chars().take(QUOTED).collect();
    if words.chars().count() > QUOTED {
        quoted.push('…');
    }
    format!(
        "Dear customer,\n\nthank you for your message (\"{quoted}\"). We are sorry for the trouble: we are looking into it now and will come back to you within two working days.\n\nKind regards,\nCustomer care\n\n[{NOTICE}]"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_answer_has_the_shape_asked_for_and_says_where_it_comes_from() {
        let body = json!({"model": MODEL, "messages": [
            {"role": "system", "content": "You draft polite replies."},
            {"role": "assistant", "content": "earlier"},
            {"role": "user", "content": "My parcel   has not arrived."}],
            "response_format": {"type": "json_schema", "json_schema": {"name": "draft", "schema":
                {"type": "object", "properties": {"draft": {"type": "string"}, "tone": {"enum": ["warm", "plain"]},
                 "score": {"type": ["integer", "null"]}}, "required": ["draft"]}}}});
        let answer = answer(&body);
        assert_eq!(answer["model"], MODEL);
        let content: Value =
            serde_json::from_str(answer["choices"][0]["message"]["content"].as_str().expect("text")).expect("JSON");
        let draft = content["draft"].as_str().expect("a draft");
        assert!(draft.contains("\"My parcel has not arrived.\""), "{draft}");
        assert!(draft.contains(NOTICE), "{draft}");
        assert_eq!((content["tone"].clone(), content["score"].clone()), (json!("warm"), json!(0)));
        assert!(answer["usage"]["total_tokens"].as_u64().is_some_and(|n| n > 0));
    }

    #[test]
    fn a_long_message_is_quoted_in_part() {
        let long = "word ".repeat(100);
        let text = draft(&long);
        assert!(text.contains('…'));
        assert!(text.chars().count() < 500, "{text}");
    }
}
