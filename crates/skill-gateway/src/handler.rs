//! The MCP handler: what a principal may call, calls through the engine, an agent's requests as
//! MCP tasks (`tasks/get`, `tasks/cancel`) kept in the database.

use skill_api::Code;
use std::sync::Arc;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, CancelTaskParams, CreateTaskResult, DetailedTask,
    GetTaskParams, GetTaskResult, Implementation, ListToolsResult, PaginatedRequestParams, ProgressNotificationParam,
    ServerCapabilities, ServerConfig, Task, TaskPayload, TaskStatus, Tool,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde_json::{Map, Value, json};
use skill_api::{AgentRequestOut, ClientInfo, Lifecycle, RequestStatus};
use skill_engine::requests::{GatewayCall, GatewayTool};
use skill_engine::{Actor, Engine, EngineError};

use skill_traces::attr::{TRACEPARENT, TRACESTATE};

use crate::Config;
use crate::tools::{self, APPROVAL_STATUS};
use crate::waits::Waits;

/// The `Host` a request named, for links when no public address is set.
#[derive(Debug, Clone)]
pub(crate) struct RequestHost(pub(crate) String);

/// One gateway over an engine; cheap to clone (one per request).
#[derive(Clone)]
pub(crate) struct Gateway {
    engine: Engine,
    config: Arc<Config>,
    waits: Arc<Waits>,
}

impl Gateway {
    pub(crate) fn new(engine: Engine, config: Arc<Config>, waits: Arc<Waits>) -> Self {
        Self { engine, config, waits }
    }

    /// The actor the guard authenticated.
    fn actor(context: &RequestContext<RoleServer>) -> Result<Actor, ErrorData> {
        context
            .extensions
            .get::<axum::http::request::Parts>()
            .and_then(|parts| parts.extensions.get::<Actor>())
            .cloned()
            .ok_or_else(|| ErrorData::internal_error("the request reached the gateway without its principal", None))
    }

    /// Where the console is: the public address, else the address the client used.
    fn base(&self, context: &RequestContext<RoleServer>) -> String {
        let host = context
            .extensions
            .get::<axum::http::request::Parts>()
            .and_then(|parts| parts.extensions.get::<RequestHost>())
            .map(|host| host.0.as_str());
        base_of(&self.config, host)
    }

    async fn tools(&self, actor: &Actor) -> Result<Vec<GatewayTool>, ErrorData> {
        self.engine.gateway_tools(actor).await.map_err(|error| to_rpc(&error))
    }

    /// `approval_status {requestId}`.
    async fn approval_status(
        &self,
        actor: &Actor,
        arguments: Option<&Map<String, Value>>,
        base: &str,
    ) -> CallToolResult {
        let Some(id) = arguments.and_then(|arguments| arguments.get("requestId")).and_then(Value::as_str) else {
            return tools::failure(
                "invalid_skill_inputs",
                "approval_status needs {\"requestId\": \"<id>\"}",
                Value::Null,
            );
        };
        match self.engine.agent_request(actor, id).await {
            Ok(request) => tools::status(&request, &tools::console_url(base, &request)),
            Err(error) => envelope(&error),
        }
    }

    async fn call(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let actor = Self::actor(&context)?;

        let base = self.base(&context);
        if request.name == APPROVAL_STATUS && asks(&self.engine, &actor).await {
            return Ok(self.approval_status(&actor, request.arguments.as_ref(), &base).await.into());
        }
        let found = self.engine.gateway_tool(&actor, &request.name).await.map_err(|error| to_rpc(&error))?;
        let Some(entry) = found.filter(|entry| entry.skill.name != APPROVAL_STATUS) else {
            return Ok(tools::failure(
                "tool_not_authorized",
                &format!(
                    "{} is not a tool of {}: tools/list lists what it may call",
                    request.name,
                    actor.principal().name
                ),
                json!({"tool": request.name, "reason": "not_assigned"}),
            )
            .into());
        };
        let meta = request.meta.as_ref().map_or(&context.meta.0.0, |meta| &meta.0.0);
        let key = match tools::idempotency_key(meta) {
            Ok(key) => key,
            Err(error) => return Ok(envelope(&error).into()),
        };
        // Every call may wait (for its end, or for a person): a principal holds only so many.
        let Some(_wait) = self.waits.enter(actor.id()) else {
            return Ok(too_many_waits().into());
        };
        let client = client_of(&context);
        let request_id = context
            .extensions
            .get::<axum::http::request::Parts>()
            .and_then(|parts| parts.headers.get("x-request-id"))
            .and_then(|value| value.to_str().ok())
            .map(str::to_owned);
        let arguments = request.arguments.clone().unwrap_or_default();
        let called =
            self.engine.gateway_call(&actor, &entry.skill, arguments, key, &client, request_id.as_deref()).await;
        match called {
            Err(error) => Ok(envelope(&error).into()),
            Ok(GatewayCall::Called(call)) => {
                let progress = context.meta.get_progress_token();
                let ticker = progress.map(|token| {
                    let peer = context.peer.clone();
                    tokio::spawn(async move {
                        let mut beat = 0.0;
                        loop {
                            tokio::time::sleep(std::time::Duration::from_secs(1)).await;
                            beat += 1.0;
                            let note = ProgressNotificationParam::new(token.clone(), beat)
                                .with_message("the call is queued or running".to_owned());
                            if peer.notify_progress(note).await.is_err() {
                                break;
                            }
                        }
                    })
                });
                // A client that goes away (or cancels) stops the wait, not the call.
                let waited = tokio::select! {
                    waited = self.engine.wait_for_end(&actor, &call.id, self.config.call_wait) => waited,
                    () = context.ct.cancelled() => Err(EngineError::new(
                        skill_engine::Class::Conflict,
                        Code::CallStillRunning,
                        "the client stopped waiting; the call goes on",
                    )),
                };
                if let Some(ticker) = ticker {
                    ticker.abort();
                }
                Ok(match waited {
                    Ok(call) => tools::call_result(&call),
                    Err(error) => envelope(&error),
                }
                .into())
            }
            Ok(GatewayCall::Requested(asked)) => {
                let console = tools::console_url(&base, &asked);
                let tasks = context.client_capabilities().is_some_and(|capabilities| capabilities.supports_tasks());
                if tasks {
                    return Ok(CallToolResponse::Task(CreateTaskResult::new(task_of(&asked, &console))));
                }
                let held = tokio::select! {
                    held = self.engine.wait_for_request(&actor, &asked.id, self.config.hold) => held,
                    () = context.ct.cancelled() => Ok(asked.as_ref().clone()),
                };
                Ok(match held {
                    Ok(request) if request.status.is_terminal() => tools::ended(&request),
                    Ok(request) => tools::pending(&request, &console),
                    Err(error) => envelope(&error),
                }
                .into())
            }
        }
    }
}

/// Where the console is: the public address, else the `Host` the client used.
pub(crate) fn base_of(config: &Config, host: Option<&str>) -> String {
    if !config.public_url.is_empty() {
        return config.public_url.clone();
    }
    format!("http://{}", host.unwrap_or("127.0.0.1"))
}

/// Whether `actor` is an agent whose document says where its requests go.
pub(crate) async fn asks(engine: &Engine, actor: &Actor) -> bool {
    actor.principal().kind == skill_api::PrincipalKind::Agent
        && engine.store().agent_of(actor.id()).await.ok().flatten().is_some_and(|agent| agent.spec.requests.is_some())
}

/// The client as it named itself: in the request's `_meta` (2026-07-28), else at its
/// `initialize` when the transport kept one, else its HTTP `User-Agent`. (A stateless service's
/// own stand-in for an initialize names rmcp, not the client: it is not taken.)
fn client_of(context: &RequestContext<RoleServer>) -> ClientInfo {
    if let Some(info) = context.meta.client_info() {
        return ClientInfo { name: info.name, version: info.version };
    }
    if let Some(info) = context.peer.peer_info().map(|info| info.client_info.clone())
        && info.name != "rmcp"
    {
        return ClientInfo { name: info.name, version: info.version };
    }
    match context.extensions.get::<axum::http::request::Parts>() {
        Some(parts) => client_from_user_agent(&parts.headers),
        None => ClientInfo { name: String::new(), version: String::new() },
    }
}

/// The client as its HTTP `User-Agent` names it (`name/version …`).
pub(crate) fn client_from_user_agent(headers: &axum::http::HeaderMap) -> ClientInfo {
    let agent = headers.get(axum::http::header::USER_AGENT).and_then(|value| value.to_str().ok()).unwrap_or_default();
    let (name, version) = agent.split_whitespace().next().unwrap_or_default().split_once('/').unwrap_or((agent, ""));
    ClientInfo { name: name.chars().take(200).collect(), version: version.chars().take(100).collect() }
}

/// What a call answers when its principal holds as many waits as it may: nothing was made.
pub(crate) fn too_many_waits() -> CallToolResult {
    tools::failure(
        "too_many_waits",
        &format!(
            "this principal already has {} calls waiting on this core: nothing was called; retry when some have ended",
            crate::waits::MAX_WAITS
        ),
        json!({"retryable": true}),
    )
}

/// An engine error as the `isError` result a skill's failure is.
fn envelope(error: &EngineError) -> CallToolResult {
    tools::failure(error.code.as_str(), &error.message, Value::Object(error.details.clone()))
}

/// An engine error as a JSON-RPC error (for the methods that answer no tool result).
fn to_rpc(error: &EngineError) -> ErrorData {
    let data = Some(json!({"code": error.code, "details": error.details}));
    ErrorData::new(rmcp::model::ErrorCode(rpc_code(error)), error.message.clone(), data)
}

/// The JSON-RPC code of an engine error: the caller's request is wrong (-32600, -32602) or the
/// core failed (-32603).
pub(crate) fn rpc_code(error: &EngineError) -> i32 {
    match error.class {
        skill_engine::Class::Forbidden | skill_engine::Class::Unauthenticated => -32600,
        skill_engine::Class::NotFound
        | skill_engine::Class::Conflict
        | skill_engine::Class::Invalid
        | skill_engine::Class::BadRequest => -32602,
        _ => -32603,
    }
}

/// A request as an MCP task.
pub(crate) fn task_of(request: &AgentRequestOut, console: &str) -> Task {
    let status = match request.status {
        RequestStatus::Pending | RequestStatus::Approved => TaskStatus::Working,
        RequestStatus::Succeeded | RequestStatus::Failed | RequestStatus::Rejected => TaskStatus::Completed,
        RequestStatus::Expired => TaskStatus::Failed,
        RequestStatus::Withdrawn => TaskStatus::Cancelled,
    };
    let message = match request.status {
        RequestStatus::Pending if request.decision == skill_api::ApprovalStatus::Approved => {
            "approved: the call is being made".to_owned()
        }
        RequestStatus::Pending if request.decision != skill_api::ApprovalStatus::Pending => {
            format!("decided ({}): nothing will be called", request.decision)
        }
        RequestStatus::Pending => format!("waiting for a person's decision: {console}"),
        RequestStatus::Approved => "approved: the call is being made".to_owned(),
        other => format!("the request is {other}"),
    };
    let updated = request.ended_at.clone().unwrap_or_else(|| request.created_at.clone());
    let ttl = chrono::DateTime::parse_from_rfc3339(&request.expires_at)
        .ok()
        .zip(chrono::DateTime::parse_from_rfc3339(&request.created_at).ok())
        .map_or(0, |(expires, created)| u64::try_from((expires - created).num_milliseconds()).unwrap_or(0));
    Task::new(request.id.clone(), status, request.created_at.clone(), updated)
        .with_status_message(message)
        .with_ttl_ms(ttl)
        .with_poll_interval_ms(2000)
}

impl ServerHandler for Gateway {
    fn get_info(&self) -> ServerConfig {
        let capabilities = ServerCapabilities::builder().enable_tools().enable_tasks().build();
        let mut config = ServerConfig::new(capabilities);
        config.server_info = Implementation::new("skill-core", env!("CARGO_PKG_VERSION"));
        config.instructions = Some(
            "The skills this principal may call. A tool that writes to the outside world is never called on a model's say-so: the call becomes a request a person approves in the console; its result comes back through tasks/get, or approval_status."
                .to_owned(),
        );
        config
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let actor = Self::actor(&context)?;
        let mut listed: Vec<Tool> = self
            .tools(&actor)
            .await?
            .iter()
            .filter(|entry| tools::tool_name(&entry.skill.name) != APPROVAL_STATUS)
            .map(tools::tool)
            .collect();
        if asks(&self.engine, &actor).await {
            listed.push(tools::approval_status_tool());
        }
        Ok(ListToolsResult::with_all_items(listed))
    }

    /// With traces on, the call is a server span, the child of the `traceparent` in `_meta`; the
    /// call it makes belongs to that trace.
    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let meta = request.meta.as_ref().map_or(&context.meta.0.0, |meta| &meta.0.0);
        let text = |key: &str| meta.get(key).and_then(Value::as_str);
        let span = skill_traces::spans::mcp_server(&request.name, text(TRACEPARENT), text(TRACESTATE));
        if span.is_none() {
            return self.call(request, context).await;
        }
        tracing::Instrument::instrument(self.call(request, context), span).await
    }

    async fn get_task(
        &self,
        request: GetTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, ErrorData> {
        let actor = Self::actor(&context)?;
        let asked = self.engine.agent_request(&actor, &request.task_id).await.map_err(|error| to_rpc(&error))?;
        let console = tools::console_url(&self.base(&context), &asked);
        let task = task_of(&asked, &console);
        let payload = match task.status {
            TaskStatus::Completed => {
                let result = serde_json::to_value(tools::ended(&asked)).unwrap_or_default();
                TaskPayload::Completed { result: result.as_object().cloned().unwrap_or_default() }
            }
            TaskStatus::Failed => TaskPayload::Failed {
                error: json!({"code": -32000, "message": "the request expired: no one decided it in time, nothing was written"})
                    .as_object()
                    .cloned()
                    .unwrap_or_default(),
            },
            TaskStatus::Cancelled => TaskPayload::Cancelled,
            _ => TaskPayload::Working,
        };
        Ok(GetTaskResult::new(DetailedTask::new(task, payload)))
    }

    async fn cancel_task(
        &self,
        request: CancelTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let actor = Self::actor(&context)?;
        self.engine.withdraw_agent_request(&actor, &request.task_id, None).await.map_err(|error| to_rpc(&error))?;
        Ok(())
    }
}
