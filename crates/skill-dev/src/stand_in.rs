//! dev's stand-in model: a small OpenAI-compatible `/v1/chat/completions` on loopback, started by
//! `skill-core dev` when the installation names no model (`SKILL_LLM_*` unset), so a package's
//! `ctx.llm()` answers in dev. It answers every request with JSON of the schema asked for, each
//! text a template around the customer's words that says it comes from the stand-in. Only `dev`
//! starts it; nothing else of the core knows it.

use axum::Json;
use axum::routing::post;
use serde::Deserialize;
use serde_json::{Map, Value, json};
use skill_api::{JsonType, SchemaView};

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

/// What the stand-in reads of a chat completion request.
#[derive(Debug, Default, Deserialize)]
struct ChatRequest {
    #[serde(default)]
    messages: Vec<ChatMessage>,
    #[serde(default)]
    response_format: Option<ResponseFormat>,
}

#[derive(Debug, Deserialize)]
struct ChatMessage {
    role: Role,
    /// A text, or a list of parts (the text ones count).
    #[serde(default)]
    content: Option<Content>,
}

#[derive(Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
enum Role {
    User,
    #[serde(other)]
    Other,
}

#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum Content {
    Text(String),
    Parts(Vec<Part>),
}

#[derive(Debug, Deserialize)]
struct Part {
    #[serde(default)]
    text: Option<String>,
}

#[derive(Debug, Deserialize)]
struct ResponseFormat {
    #[serde(default)]
    json_schema: Option<JsonSchemaFormat>,
}

#[derive(Debug, Deserialize)]
struct JsonSchemaFormat {
    schema: Value,
}

async fn completions(Json(body): Json<Value>) -> Json<Value> {
    Json(answer(&serde_json::from_value(body).unwrap_or_default()))
}

/// The completion for a request: the schema's shape, filled from the last user message.
fn answer(request: &ChatRequest) -> Value {
    let prompt = last_user_message(request);
    let schema = request.response_format.as_ref().and_then(|format| format.json_schema.as_ref());
    let content = match schema.map(|format| &format.schema) {
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
fn last_user_message(request: &ChatRequest) -> String {
    match request
        .messages
        .iter()
        .rev()
        .find(|message| message.role == Role::User)
        .and_then(|message| message.content.as_ref())
    {
        Some(Content::Text(text)) => text.clone(),
        Some(Content::Parts(parts)) => {
            parts.iter().filter_map(|part| part.text.as_deref()).collect::<Vec<_>>().join(" ")
        }
        None => String::new(),
    }
}

/// A value of `schema`'s shape: every property of an object, the first of an enum, a draft for a
/// string.
fn fill(schema: &Value, prompt: &str) -> Value {
    let view = SchemaView(schema);
    if let Some(first) = view.choices().and_then(<[Value]>::first) {
        return first.clone();
    }
    if let Some(constant) = view.constant() {
        return constant.clone();
    }
    let kind = view.kind().or_else(|| view.property_map().map(|_| JsonType::Object));
    match kind {
        Some(JsonType::Object) => {
            let filled: Map<String, Value> =
                view.properties().map(|(name, property)| (name.clone(), fill(property.0, prompt))).collect();
            Value::Object(filled)
        }
        Some(JsonType::Array) => json!([]),
        Some(JsonType::Integer | JsonType::Number) => json!(0),
        Some(JsonType::Boolean) => json!(false),
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
        let answer = answer(&serde_json::from_value(body).expect("a request"));
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
    fn the_text_parts_of_the_last_user_message_are_the_prompt() {
        let body = json!({"messages": [{"role": "user", "content": "first"}, {"role": "tool", "content": null},
            {"role": "user", "content": [{"type": "text", "text": "the parcel"}, {"type": "image_url"}, {"text": "is late"}]}]});
        assert_eq!(last_user_message(&serde_json::from_value(body).expect("a request")), "the parcel is late");
        assert_eq!(last_user_message(&ChatRequest::default()), "");
    }

    #[test]
    fn a_long_message_is_quoted_in_part() {
        let long = "word ".repeat(100);
        let text = draft(&long);
        assert!(text.contains('…'));
        assert!(text.chars().count() < 500, "{text}");
    }
}
