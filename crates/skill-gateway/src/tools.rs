//! A published leaf version as an MCP tool — named, described and annotated as the skill hosts
//! name theirs, from its stored contract — the built-in `approval_status` tool, and the results a
//! call or a request answers with.

use skill_api::Code;
use std::sync::Arc;

use rmcp::model::{CallToolResult, ContentBlock, JsonObject, MetaObject, Tool, ToolAnnotations};
use serde_json::{Value, json};
use skill_api::{AgentRequestOut, CallStatus, InvocationOut, RequestStatus};
use skill_engine::EngineError;
use skill_engine::requests::GatewayTool;

/// The read-only tool an agent asks about a request with (`{requestId}`).
pub const APPROVAL_STATUS: &str = "approval_status";

/// MCP tool names allow `[A-Za-z0-9_.-]`: a namespaced `ns/name` is exposed as `ns.name`.
pub fn tool_name(skill_name: &str) -> String {
    skill_name.replace('/', ".")
}

fn object(value: &Value) -> Arc<JsonObject> {
    Arc::new(value.as_object().cloned().unwrap_or_default())
}

/// The tool of a version: its contract's schemas, hints from what the contract promises (as the
/// hosts give them), and the version, side effects and policy in `_meta`.
pub(crate) fn tool(entry: &GatewayTool) -> Tool {
    let skill = &entry.skill;
    let contract = skill.contract.as_ref();
    let writes = skill.side_effects.is_some_and(|side_effects| side_effects.writes());
    let idempotency = contract.map_or(skill_api::Idempotency::default(), |contract| contract.idempotency());
    let mut annotations = ToolAnnotations::default();
    annotations.read_only_hint = Some(!writes);
    annotations.destructive_hint = Some(writes);
    annotations.idempotent_hint = Some(!writes || idempotency == skill_api::Idempotency::Natural);
    annotations.open_world_hint = Some(true);
    let mut tool = Tool::default();
    tool.name = tool_name(&skill.name).into();
    let mut description = skill.description.clone();
    if writes {
        description.push_str(
            " (Writes to the outside world: through this gateway a call becomes a request a person approves before anything is written.)",
        );
    }
    tool.description = Some(description.into());
    tool.input_schema = object(contract.map_or(&Value::Null, |contract| contract.inputs()));
    tool.output_schema = Some(object(contract.map_or(&Value::Null, |contract| contract.outputs())));
    tool.annotations = Some(annotations);
    let meta = json!({
        "skill/ref": format!("{}@{}", skill.name, skill.version),
        "skill/name": skill.name,
        "skill/version": skill.version,
        "skill/sideEffects": skill.side_effects.map(|s| s.as_str()),
        "skill/policy": {
            "sideEffects": skill.side_effects.map(|s| s.as_str()),
            "riskLevel": skill.risk_level.map(|r| r.as_str()),
            "idempotency": idempotency,
            "timeoutSeconds": contract.map(|contract| contract.timeout_seconds()),
            "retryPolicy": contract.map(|contract| contract.retry_policy().to_json()),
            "requiredPermissions": contract.map(|contract| contract.required_permissions()),
        },
    });
    tool.meta = meta.as_object().cloned().map(MetaObject);
    tool
}

/// The `approval_status` tool.
pub(crate) fn approval_status_tool() -> Tool {
    let mut annotations = ToolAnnotations::default();
    annotations.read_only_hint = Some(true);
    annotations.destructive_hint = Some(false);
    annotations.idempotent_hint = Some(true);
    annotations.open_world_hint = Some(false);
    let mut tool = Tool::default();
    tool.name = APPROVAL_STATUS.into();
    tool.description = Some(
        "Where a request for a write you asked for stands (requestId from a pending_approval result): pending, approved, succeeded with the call's output, failed, rejected, expired or withdrawn. Asking never makes the call; a person's approval does."
            .into(),
    );
    tool.input_schema = object(&json!({
        "type": "object",
        "properties": {"requestId": {"type": "string", "description": "The request's id."}},
        "required": ["requestId"],
        "additionalProperties": false
    }));
    tool.annotations = Some(annotations);
    tool
}

/// A result with `value` as its structured content and as one text block.
pub(crate) fn structured(value: Value, is_error: bool) -> CallToolResult {
    let text = vec![ContentBlock::text(value.to_string())];
    let mut result = if is_error { CallToolResult::error(text) } else { CallToolResult::success(text) };
    if !is_error {
        result.structured_content = Some(value);
    }
    result
}

/// An error envelope as the hosts answer one: `isError` with `{error: {code, message, ...}}`.
pub(crate) fn failure(code: &str, message: &str, details: Value) -> CallToolResult {
    structured(json!({"error": {"code": code, "message": message, "details": details}}), true)
}

/// What a call answers once it ended (or when it still runs after the wait).
pub(crate) fn call_result(call: &InvocationOut) -> CallToolResult {
    match call.status {
        CallStatus::Succeeded => {
            let mut result = structured(call.output.clone().unwrap_or_else(|| json!({})), false);
            let mut meta = serde_json::Map::new();
            meta.insert("skill/invocationId".into(), json!(call.id));
            if let Some(cost) = &call.cost {
                meta.insert("skill/cost".into(), cost.clone());
            }
            result.meta = Some(MetaObject(meta));
            result
        }
        CallStatus::Failed | CallStatus::Cancelled => {
            let error = call.error.as_ref().map_or_else(
                || json!({"code": "call_failed", "message": "the call ended without an output"}),
                |error| json!(error),
            );
            structured(json!({"error": error, "invocationId": call.id, "status": call.status}), true)
        }
        _ => failure(
            "call_still_running",
            "the call has not ended yet: read it later with GET /api/v1/skill-invocations/{id}",
            json!({"invocationId": call.id, "status": call.status}),
        ),
    }
}

/// The idempotency key a call names in `_meta["skill/idempotencyKey"]`, if any.
pub(crate) fn idempotency_key(meta: &serde_json::Map<String, Value>) -> Result<Option<String>, EngineError> {
    match meta.get("skill/idempotencyKey") {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(key)) => Ok(Some(key.clone())),
        Some(_) => Err(EngineError::new(
            skill_engine::Class::BadRequest,
            Code::InvalidIdempotencyKey,
            "_meta[\"skill/idempotencyKey\"] is a string of 1 to 200 characters",
        )),
    }
}

/// The console page of a request's task.
pub(crate) fn console_url(base: &str, request: &AgentRequestOut) -> String {
    format!("{}/console/tasks/{}", base.trim_end_matches('/'), request.task_id)
}

/// What a request answers while a person has not decided it: not the tool's output (nothing was
/// written), so an `isError` result holding one JSON text block that says what to do — no
/// structured content, which clients would check against the tool's output schema.
pub(crate) fn pending(request: &AgentRequestOut, console: &str) -> CallToolResult {
    let value = json!({
        "status": "pending_approval",
        "requestId": request.id,
        "consoleUrl": console,
        "expiresAt": request.expires_at,
        "skill": request.skill,
        "message": format!(
            "Nothing was written yet: {} writes to the outside world, so a person decides this request (in the console at {console}). Ask {APPROVAL_STATUS} with this requestId later; asking never makes the call.",
            request.skill
        ),
    });
    CallToolResult::error(vec![ContentBlock::text(value.to_string())])
}

/// What a request that ended answers: the call's result, or why nothing was called.
pub(crate) fn ended(request: &AgentRequestOut) -> CallToolResult {
    match (request.status, &request.call) {
        (RequestStatus::Succeeded | RequestStatus::Failed, Some(call)) => call_result(call),
        (status, _) => failure(
            &format!("request_{status}"),
            &match status {
                RequestStatus::Rejected => "a person rejected the request: nothing was written".to_owned(),
                RequestStatus::Expired => "no one decided the request in time: nothing was written".to_owned(),
                RequestStatus::Withdrawn => "the request was withdrawn: nothing was written".to_owned(),
                _ => "the approved call could not be made: nothing was written".to_owned(),
            },
            json!({"requestId": request.id, "status": status}),
        ),
    }
}

/// What `approval_status` answers: where the request stands, and its result once it ended.
pub(crate) fn status(request: &AgentRequestOut, console: &str) -> CallToolResult {
    let mut value = json!({
        "requestId": request.id,
        "status": request.status,
        "skill": request.skill,
        "consoleUrl": console,
        "expiresAt": request.expires_at,
    });
    if let Some(call) = &request.call {
        value["invocationId"] = json!(call.id);
        value["callStatus"] = json!(call.status);
        if let Some(output) = &call.output {
            value["output"] = output.clone();
        }
        if let Some(error) = &call.error {
            value["error"] = json!(error);
        }
    }
    structured(value, false)
}
