//! The tasks of the 2025-11-25 revision, for clients that speak it (the TypeScript SDK 1.x among
//! them; the 2026-07-28 revision's Tasks extension goes through the handler). A request whose
//! `MCP-Protocol-Version` is 2025-11-25:
//!
//! - `tools/call` with `params.task`, of a tool whose call becomes an agent's request, answers
//!   `{task}` at once; any other `tools/call` is made as usual (the task asked for is ignored, as
//!   that revision says of a request a receiver does not run as a task);
//! - `tasks/get` answers the task; `tasks/result` waits until the request ended and answers the
//!   call's result (a rejection is `isError`; expiry and withdrawal are errors); `tasks/cancel`
//!   withdraws a request no one decided.
//!
//! Its `initialize` answer declares `capabilities.tasks` and its `tools/list` marks those tools
//! `execution.taskSupport: optional`. Every answer is read from the database, as the handler's.

use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use serde_json::{Map, Value, json};
use skill_api::Code;
use skill_api::{AgentRequestOut, Lifecycle, RequestStatus};
use skill_engine::requests::GatewayCall;
use skill_engine::{Actor, Engine, EngineError};

use crate::handler::{client_from_user_agent, rpc_code, task_of};
use crate::tools;

/// The revision whose tasks this module speaks.
pub(crate) const REVISION: &str = "2025-11-25";

/// What a request of this revision is answered with.
pub(crate) struct At<'a> {
    pub(crate) engine: &'a Engine,
    pub(crate) config: &'a crate::Config,
    pub(crate) waits: &'a std::sync::Arc<crate::waits::Waits>,
    /// Where the console is.
    pub(crate) base: &'a str,
}

/// What the guard does with one message of this revision.
pub(crate) enum Route {
    /// Answered here.
    Answer(Response),
    /// Passed on to the MCP service, possibly rewritten (a `task` it will not run as one).
    Pass(Value),
}

/// Whether a request speaks this revision.
pub(crate) fn speaks(headers: &HeaderMap) -> bool {
    headers.get("mcp-protocol-version").and_then(|value| value.to_str().ok()) == Some(REVISION)
}

/// The methods this module answers itself.
pub(crate) fn takes(message: &Value) -> bool {
    match message["method"].as_str() {
        Some("tools/call") => message["params"]["task"].is_object(),
        Some("tasks/get" | "tasks/result" | "tasks/cancel") => true,
        _ => false,
    }
}

/// The answer to `message`, a request of this revision that [`takes`] names.
pub(crate) async fn route(at: &At<'_>, actor: &Actor, headers: &HeaderMap, message: Value) -> Route {
    let (engine, base) = (at.engine, at.base);
    let id = message["id"].clone();
    let params = message["params"].as_object().cloned().unwrap_or_default();
    let method = message["method"].as_str().unwrap_or_default();
    let task_id = match params.get("taskId") {
        Some(Value::String(task_id)) if !task_id.is_empty() => task_id.clone(),
        _ if method == "tools/call" => String::new(),
        _ => {
            let refusal = json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32602,
                "message": "`params.taskId` is the id of a task this principal made, a string"}});
            return Route::Answer(axum::Json(refusal).into_response());
        }
    };
    let answered = match method {
        "tools/call" => match call(engine, actor, base, headers, &params).await {
            Some(answered) => answered,
            None => {
                let mut passed = message;
                if let Some(params) = passed["params"].as_object_mut() {
                    params.remove("task");
                }
                return Route::Pass(passed);
            }
        },
        "tasks/get" => engine.agent_request(actor, &task_id).await.map(|request| task(&request, base)),
        "tasks/cancel" => cancel(engine, actor, base, &task_id).await,
        _ => match at.waits.enter(actor.id()) {
            Some(_wait) => result(engine, actor, &task_id, at.config.call_wait).await,
            None => Err(EngineError::new(
                skill_engine::Class::Unavailable,
                Code::TooManyWaits,
                format!(
                    "this principal already has {} waits open on this core: ask tasks/get, or tasks/result when some have ended",
                    crate::waits::MAX_WAITS
                ),
            )),
        },
    };
    Route::Answer(reply(id, answered))
}

/// A task-augmented call: `None` when it does not become a request (then it is made as usual).
async fn call(
    engine: &Engine,
    actor: &Actor,
    base: &str,
    headers: &HeaderMap,
    params: &Map<String, Value>,
) -> Option<Result<Value, EngineError>> {
    let name = params.get("name").and_then(Value::as_str)?;
    let entry = engine.gateway_tool(actor, name).await.ok().flatten()?;
    if !crate::handler::asks(engine, actor).await || !entry.skill.side_effects.is_some_and(|effects| effects.writes()) {
        return None;
    }
    let empty = Map::new();
    let meta = params.get("_meta").and_then(Value::as_object).unwrap_or(&empty);
    let key = match tools::idempotency_key(meta) {
        Ok(key) => key,
        Err(error) => return Some(Err(error)),
    };
    let client = client_from_user_agent(headers);
    let arguments = params.get("arguments").and_then(Value::as_object).cloned().unwrap_or_default();
    let request_id = headers.get("x-request-id").and_then(|value| value.to_str().ok());
    Some(match engine.gateway_call(actor, &entry.skill, arguments, key, &client, request_id).await {
        Ok(GatewayCall::Requested(request)) => Ok(json!({"task": task(&request, base)})),
        // Never for an agent's write without a basis; made as it was, its result is the answer.
        Ok(GatewayCall::Called(call)) => Ok(serde_json::to_value(tools::call_result(&call)).unwrap_or_default()),
        Err(error) => Err(error),
    })
}

/// `tasks/cancel`: the request withdrawn, and the task as it is now.
async fn cancel(engine: &Engine, actor: &Actor, base: &str, id: &str) -> Result<Value, EngineError> {
    engine.withdraw_agent_request(actor, id, None).await?;
    engine.agent_request(actor, id).await.map(|request| task(&request, base))
}

/// `tasks/result`: waits until the request ended, at most `within`; the call's result, or why
/// there is none. A request still waiting for a person after that answers `task_still_working`,
/// so no connection is held for the day a decision may take.
async fn result(engine: &Engine, actor: &Actor, id: &str, within: std::time::Duration) -> Result<Value, EngineError> {
    let request = engine.wait_for_request(actor, id, within).await?;
    match request.status {
        status if !status.is_terminal() => Err(EngineError::new(
            skill_engine::Class::Conflict,
            Code::TaskStillWorking,
            format!("the request is {status}: ask tasks/get until it is not working, then tasks/result"),
        )
        .with("taskId", id)),
        RequestStatus::Expired | RequestStatus::Withdrawn => Err(EngineError::new(
            skill_engine::Class::Conflict,
            if request.status == RequestStatus::Expired { Code::RequestExpired } else { Code::RequestWithdrawn },
            format!("the request is {}: nothing was written", request.status),
        )
        .with("requestId", request.id.as_str())),
        _ => Ok(serde_json::to_value(tools::ended(&request)).unwrap_or_default()),
    }
}

/// A request as this revision's task: `ttl` and `pollInterval` in milliseconds.
fn task(request: &AgentRequestOut, base: &str) -> Value {
    let console = tools::console_url(base, request);
    let mut value = serde_json::to_value(task_of(request, &console)).unwrap_or_default();
    if let Some(fields) = value.as_object_mut() {
        let ttl = fields.remove("ttlMs").unwrap_or(Value::Null);
        fields.insert("ttl".into(), ttl);
        if let Some(interval) = fields.remove("pollIntervalMs") {
            fields.insert("pollInterval".into(), interval);
        }
    }
    value
}

fn reply(id: Value, answered: Result<Value, EngineError>) -> Response {
    let message = match answered {
        Ok(result) => json!({"jsonrpc": "2.0", "id": id, "result": result}),
        Err(error) => json!({"jsonrpc": "2.0", "id": id, "error": {
            "code": rpc_code(&error), "message": error.message,
            "data": {"code": error.code, "details": error.details},
        }}),
    };
    axum::Json(message).into_response()
}

/// The `initialize` answer of this revision declares the tasks it runs: `tools/call`, and
/// cancelling.
pub(crate) fn declare(result: &mut Value) {
    if result["protocolVersion"] == REVISION
        && let Some(capabilities) = result["capabilities"].as_object_mut()
    {
        capabilities.insert("tasks".into(), json!({"cancel": {}, "requests": {"tools": {"call": {}}}}));
    }
}

/// The tools whose call becomes a request may run as a task (`execution.taskSupport`).
pub(crate) fn mark(result: &mut Value) {
    for tool in result["tools"].as_array_mut().into_iter().flatten() {
        if tool["_meta"]["skill/sideEffects"] == "external_write" {
            tool["execution"] = json!({"taskSupport": "optional"});
        }
    }
}

/// `response` with `change` made to the result of its message — a JSON body, or the `data:`
/// lines of an event stream (the service ends it after the one answer); what is not a result
/// passes as it was.
pub(crate) async fn rewritten(response: Response, change: fn(&mut Value)) -> Response {
    let (mut parts, body) = response.into_parts();
    let Ok(bytes) = axum::body::to_bytes(body, 64 * 1024 * 1024).await else {
        return (axum::http::StatusCode::BAD_GATEWAY, "the answer could not be read").into_response();
    };
    let changed = |text: &str| -> Option<String> {
        let mut message: Value = serde_json::from_str(text).ok()?;
        change(message.get_mut("result")?);
        Some(message.to_string())
    };
    let text = String::from_utf8_lossy(&bytes);
    let body = if text.trim_start().starts_with('{') {
        changed(&text).unwrap_or_else(|| text.into_owned())
    } else {
        let lines = text.split('\n').map(|line| match line.strip_prefix("data:") {
            Some(data) => changed(data.trim_start()).map_or_else(|| line.to_owned(), |data| format!("data: {data}")),
            None => line.to_owned(),
        });
        lines.collect::<Vec<_>>().join("\n")
    };
    parts.headers.remove(axum::http::header::CONTENT_LENGTH);
    Response::from_parts(parts, axum::body::Body::from(body))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_this_revisions_task_methods_are_taken() {
        assert!(takes(&json!({"method": "tools/call", "params": {"name": "x", "task": {"ttl": 1000}}})));
        assert!(!takes(&json!({"method": "tools/call", "params": {"name": "x"}})));
        assert!(takes(&json!({"method": "tasks/result", "params": {"taskId": "t"}})));
        assert!(!takes(&json!({"method": "tools/list"})));
        let mut headers = HeaderMap::new();
        assert!(!speaks(&headers));
        headers.insert("mcp-protocol-version", REVISION.parse().expect("a header"));
        assert!(speaks(&headers));
    }

    #[test]
    fn the_answers_of_this_revision_declare_its_tasks() {
        let mut initialized = json!({"protocolVersion": REVISION, "capabilities": {"tools": {}}});
        declare(&mut initialized);
        assert_eq!(initialized["capabilities"]["tasks"]["requests"]["tools"]["call"], json!({}));
        let mut newer = json!({"protocolVersion": "2026-07-28", "capabilities": {"tools": {}}});
        declare(&mut newer);
        assert!(newer["capabilities"].get("tasks").is_none(), "the newer revision uses the extension");
        let mut listed = json!({"tools": [{"name": "w", "_meta": {"skill/sideEffects": "external_write"}},
                                          {"name": "r", "_meta": {"skill/sideEffects": "none"}}]});
        mark(&mut listed);
        assert_eq!(listed["tools"][0]["execution"]["taskSupport"], "optional");
        assert!(listed["tools"][1].get("execution").is_none());
    }

    #[tokio::test]
    async fn a_rewritten_stream_keeps_its_other_lines() {
        let stream = "id: 1\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"tools\":[{\"name\":\"w\",\"_meta\":{\"skill/sideEffects\":\"external_write\"}}]}}\n\n";
        let response = Response::new(axum::body::Body::from(stream));
        let body = axum::body::to_bytes(rewritten(response, mark).await.into_body(), 1 << 20).await.expect("a body");
        let text = String::from_utf8(body.to_vec()).expect("text");
        assert!(text.starts_with("id: 1\ndata: {"), "{text}");
        assert!(text.contains("\"taskSupport\":\"optional\""), "{text}");
        assert!(text.ends_with("\n\n"), "{text}");
        let json = Response::new(axum::body::Body::from(
            "{\"id\":1,\"result\":{\"protocolVersion\":\"2025-11-25\",\"capabilities\":{}}}",
        ));
        let body = axum::body::to_bytes(rewritten(json, declare).await.into_body(), 1 << 20).await.expect("a body");
        let value: Value = serde_json::from_slice(&body).expect("JSON");
        assert!(value["result"]["capabilities"]["tasks"].is_object());
    }
}
