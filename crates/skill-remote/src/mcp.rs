//! The `mcp` wire contract: `tools/call` of the contract's `entrypoint` on its `endpoint` — a
//! streamable-HTTP server (`http(s)://`, behind the same guard and token rules as `http`) or a
//! configured `stdio:<name>` server started by the executor. The request's `_meta` carries
//! `skill/invocationId`, `skill/idempotencyKey` and `skill/settings` (absent when null); the
//! output is `structuredContent`, else one text block holding a JSON object; `_meta["skill/cost"]`
//! is the cost; an `isError` result with one text block `{"error": {code, retryable, …}}` is that
//! failure, any other `isError` is `tool_error`. A stdio server keeps running between calls.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use reqwest::Url;
use rmcp::ServiceExt as _;
use rmcp::model::{CallToolRequestParams, CallToolResult, ContentBlock, MetaObject, RequestMetaObject};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use serde_json::{Map, Value, json};
use skill_api::ClaimOut;
use skill_executor::Outcome;
use tracing::Instrument as _;

use crate::failure::failed;
use crate::guard::{Guard, refusal_in};
use crate::http::refused;
use crate::tokens::{Tokens, bearer};

/// What a stdio server gets of the executor's environment; everything else (the executor's core
/// token among it) stays out, and the server's configured `env` is added.
const INHERITED: &[&str] = &["PATH", "HOME", "LANG", "LC_ALL", "TMPDIR", "TZ"];

/// A configured stdio MCP server: what to run for `stdio:<name>`.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StdioServer {
    pub command: String,
    #[serde(default)]
    pub args: Vec<String>,
    #[serde(default)]
    pub env: BTreeMap<String, String>,
}

/// A running stdio server's MCP session.
type Session = Arc<rmcp::service::RunningService<rmcp::RoleClient, ()>>;

/// Makes `mcp` calls.
#[derive(Debug, Clone)]
pub(crate) struct McpCalls {
    client: reqwest::Client,
    guard: Option<Arc<Guard>>,
    audiences: BTreeSet<String>,
    tokens: Option<Arc<dyn Tokens>>,
    servers: BTreeMap<String, StdioServer>,
    /// One slot per configured stdio server: its session once started, shared by the calls (MCP
    /// carries concurrent requests). A server that failed or hung is dropped (its process killed)
    /// and the next call starts it again; starting one server holds only its own slot.
    running: Arc<BTreeMap<String, tokio::sync::Mutex<Option<Session>>>>,
}

impl McpCalls {
    pub(crate) fn new(
        client: reqwest::Client,
        guard: Option<Arc<Guard>>,
        audiences: &[String],
        tokens: Option<Arc<dyn Tokens>>,
        servers: BTreeMap<String, StdioServer>,
    ) -> Self {
        let running = Arc::new(servers.keys().map(|name| (name.clone(), tokio::sync::Mutex::new(None))).collect());
        Self { client, guard, audiences: audiences.iter().cloned().collect(), tokens, servers, running }
    }

    /// Runs one claimed `mcp` call to its outcome.
    pub(crate) async fn run(&self, claimed: ClaimOut) -> Outcome {
        let contract = &claimed.skill.contract;
        let implementation = contract.implementation();
        let endpoint = implementation.endpoint().unwrap_or_default().to_owned();
        let tool = implementation.entrypoint().unwrap_or_default().to_owned();
        let timeout = Duration::from_secs(u64::from(contract.timeout_seconds()));
        let transport = if endpoint.starts_with("stdio:") { "pipe" } else { "tcp" };
        let span = skill_traces::spans::mcp_client(&tool, transport);
        let params = request(&claimed, &tool, skill_traces::traceparent_of(&span));
        let outcome = self.call(&claimed, &endpoint, params, timeout).instrument(span.clone()).await;
        if let Outcome::Fail(error) = &outcome {
            skill_traces::spans::failed(&span, &error.code);
        }
        outcome
    }

    async fn call(
        &self,
        claimed: &ClaimOut,
        endpoint: &str,
        params: CallToolRequestParams,
        timeout: Duration,
    ) -> Outcome {
        let implementation = claimed.skill.contract.implementation();
        let called = if let Some(name) = endpoint.strip_prefix("stdio:") {
            let Some(server) = self.servers.get(name) else {
                return failed(
                    "mcp_server_unknown",
                    true,
                    format!("this executor has no MCP server named {name:?} (configured: {:?})", self.servers.keys()),
                    None,
                );
            };
            self.call_stdio(name, server, params, timeout).await
        } else {
            let url = match Url::parse(endpoint) {
                Ok(url) if matches!(url.scheme(), "http" | "https") => url,
                _ => {
                    return failed(
                        "mcp_endpoint_invalid",
                        false,
                        format!("an MCP endpoint is an http(s) URL or stdio:<name>, not {endpoint:?}"),
                        None,
                    );
                }
            };
            let Some(guard) = &self.guard else {
                return failed(
                    "endpoint_not_allowed",
                    true,
                    "this executor calls no MCP server over HTTP".into(),
                    None,
                );
            };
            if let Err(refusal) = guard.admit(&url) {
                return refused(&refusal);
            }
            let token = match bearer(&self.audiences, self.tokens.as_deref(), &url, implementation, claimed).await {
                Ok(token) => token,
                Err(refused) => return refused,
            };
            let mut config = StreamableHttpClientTransportConfig::with_uri(endpoint.to_owned());
            if let Some(token) = token {
                config = config.auth_header(token);
            }
            let transport = StreamableHttpClientTransport::with_client(self.client.clone(), config);
            tokio::time::timeout(timeout, call_on(transport, params)).await
        };
        match called {
            Err(_) => failed("timeout", true, format!("{endpoint} did not answer within {}s", timeout.as_secs()), None),
            Ok(Err(failure)) => failure.outcome(endpoint),
            Ok(Ok(result)) => outcome_of(result, endpoint),
        }
    }
}

/// `tools/call` of `tool` with the call's inputs and its ids in `_meta`, and the trace's
/// context (`traceparent`) there too when traces are on, as the MCP conventions say.
fn request(claimed: &ClaimOut, tool: &str, traceparent: Option<String>) -> CallToolRequestParams {
    let mut params = CallToolRequestParams::new(tool.to_owned());
    if let Value::Object(inputs) = &claimed.invocation.inputs {
        params = params.with_arguments(inputs.clone());
    }
    let mut meta = Map::new();
    meta.insert("skill/invocationId".into(), json!(claimed.invocation.id));
    if let Some(key) = &claimed.invocation.idempotency_key {
        meta.insert("skill/idempotencyKey".into(), json!(key));
    }
    if let Some(settings) = &claimed.settings {
        meta.insert("skill/settings".into(), settings.values.clone());
    }
    if let Some(traceparent) = traceparent {
        meta.insert(skill_traces::attr::TRACEPARENT.into(), json!(traceparent));
    }
    params.meta = Some(RequestMetaObject(MetaObject(meta)));
    params
}

/// Why a call did not get a result.
#[derive(Debug)]
enum Failure {
    /// The session could not start or carry the call (retryable).
    Transport(String, Option<crate::guard::Refusal>),
    /// The server answered with a JSON-RPC error (not retried).
    Protocol(String),
}

impl Failure {
    fn outcome(self, endpoint: &str) -> Outcome {
        match self {
            Failure::Transport(_, Some(refusal)) => refused(&refusal),
            Failure::Transport(reason, None) => {
                failed("transport_error", true, format!("calling {endpoint}: {reason}"), None)
            }
            Failure::Protocol(reason) => {
                failed("mcp_error", false, format!("{endpoint} answered with an MCP error: {reason}"), None)
            }
        }
    }
}

fn transport_failure(error: &(dyn std::error::Error + 'static)) -> Failure {
    let mut reason = error.to_string();
    let mut cause = error.source();
    while let Some(inner) = cause {
        reason = format!("{reason}: {inner}");
        cause = inner.source();
    }
    Failure::Transport(reason, refusal_in(error))
}

async fn call_on<T, E, A>(transport: T, params: CallToolRequestParams) -> Result<CallToolResult, Failure>
where
    T: rmcp::transport::IntoTransport<rmcp::RoleClient, E, A>,
    E: std::error::Error + Send + Sync + 'static,
{
    let session = ().serve(transport).await.map_err(|error| transport_failure(&error))?;
    let result = session.call_tool(params).await;
    let _ = session.cancel().await;
    result.map_err(|error| match error {
        rmcp::ServiceError::McpError(error) => Failure::Protocol(error.message.to_string()),
        other => transport_failure(&other),
    })
}

impl McpCalls {
    /// Ends the stdio servers' sessions (each server sees its input close) and waits for them.
    pub(crate) async fn close(&self) {
        for (name, slot) in self.running.iter() {
            let Some(session) = slot.lock().await.take() else { continue };
            match Arc::try_unwrap(session) {
                Ok(session) => {
                    if let Err(error) = session.cancel().await {
                        tracing::warn!(server = %name, %error, "the MCP server did not stop cleanly");
                    }
                }
                // A call still holds it: dropping the last hold kills the process.
                Err(session) => drop(session),
            }
        }
    }

    /// Calls `params` on the session of the stdio server `name` within `timeout`, starting the
    /// server first when it is not running. A server that failed or did not answer in time is
    /// dropped, so the next call starts it afresh.
    async fn call_stdio(
        &self,
        name: &str,
        server: &StdioServer,
        params: CallToolRequestParams,
        timeout: Duration,
    ) -> Result<Result<CallToolResult, Failure>, tokio::time::error::Elapsed> {
        let Some(slot) = self.running.get(name) else {
            return Ok(Err(Failure::Transport(format!("no slot for the server {name}"), None)));
        };
        let deadline = tokio::time::Instant::now() + timeout;
        let session = {
            let mut held = slot.lock().await;
            match &*held {
                Some(session) => Arc::clone(session),
                None => match tokio::time::timeout_at(deadline, start(server)).await? {
                    Ok(session) => Arc::clone(held.insert(Arc::new(session))),
                    Err(failure) => return Ok(Err(failure)),
                },
            }
        };
        let called = tokio::time::timeout_at(deadline, session.call_tool(params)).await.map(|result| {
            result.map_err(|error| match error {
                rmcp::ServiceError::McpError(error) => Failure::Protocol(error.message.to_string()),
                other => transport_failure(&other),
            })
        });
        if !matches!(called, Ok(Ok(_) | Err(Failure::Protocol(_)))) {
            // Dead or stuck: dropped, unless another call started it afresh meanwhile.
            let mut held = slot.lock().await;
            if held.as_ref().is_some_and(|current| Arc::ptr_eq(current, &session)) {
                *held = None;
            }
        }
        called
    }
}

/// Starts a stdio server with a cleared environment (the executor's core token among what stays
/// out): a few basics, then the server's own variables; and opens its MCP session.
async fn start(server: &StdioServer) -> Result<rmcp::service::RunningService<rmcp::RoleClient, ()>, Failure> {
    let mut command = tokio::process::Command::new(&server.command);
    command.env_clear();
    for name in INHERITED {
        if let Some(value) = std::env::var_os(name) {
            command.env(name, value);
        }
    }
    command.args(&server.args).envs(&server.env).kill_on_drop(true);
    let transport = TokioChildProcess::new(command)
        .map_err(|error| Failure::Transport(format!("the MCP server did not start: {error}"), None))?;
    ().serve(transport).await.map_err(|error| transport_failure(&error))
}

/// The outcome of a `tools/call` result.
fn outcome_of(result: CallToolResult, endpoint: &str) -> Outcome {
    let texts: Vec<&str> = result
        .content
        .iter()
        .filter_map(|block| match block {
            ContentBlock::Text(text) => Some(text.text.as_str()),
            _ => None,
        })
        .collect();
    if result.is_error == Some(true) {
        if let ([text], 1) = (texts.as_slice(), result.content.len())
            && let Ok(envelope) = serde_json::from_str::<Value>(text)
            && let Some(code) = envelope["error"]["code"].as_str().filter(|code| skill_contract::is_valid_code(code))
        {
            let error = &envelope["error"];
            let message = error["message"].as_str().map_or_else(|| format!("{endpoint}: {code}"), str::to_owned);
            let details = error.get("details").filter(|details| !details.is_null()).cloned();
            return failed(code, error["retryable"] == true, message, details);
        }
        let excerpt: String = texts.join(" ").chars().take(256).collect();
        return failed("tool_error", false, format!("the tool failed: {excerpt}"), Some(json!({"content": excerpt})));
    }
    let cost = result.meta.as_ref().and_then(|meta| meta.0.get("skill/cost")).and_then(Value::as_object).cloned();
    let output = match result.structured_content {
        Some(Value::Object(output)) => Some(output),
        Some(_) => None,
        None => match texts.as_slice() {
            [text] if result.content.len() == 1 => match serde_json::from_str::<Value>(text) {
                Ok(Value::Object(output)) => Some(output),
                _ => None,
            },
            _ => None,
        },
    };
    match output {
        Some(output) => Outcome::Complete { output, cost },
        None => failed(
            "output_contract_violation",
            false,
            format!("{endpoint} answered neither structuredContent nor one text block holding a JSON object"),
            None,
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn result(
        content: Vec<ContentBlock>,
        structured: Option<Value>,
        is_error: bool,
        meta: Option<Value>,
    ) -> CallToolResult {
        let mut result = if is_error { CallToolResult::error(content) } else { CallToolResult::success(content) };
        result.structured_content = structured;
        result.meta = meta.and_then(|m| m.as_object().cloned()).map(MetaObject);
        result
    }

    fn code(outcome: Outcome) -> (String, bool) {
        match outcome {
            Outcome::Fail(error) => (error.code, error.retryable),
            Outcome::Complete { output, .. } => (format!("complete {}", Value::Object(output)), false),
        }
    }

    #[test]
    fn results_become_outputs_costs_and_failures() {
        let e = "stdio:tools";
        match outcome_of(
            result(
                vec![ContentBlock::text("ignored")],
                Some(json!({"label": "refund"})),
                false,
                Some(json!({"skill/cost": {"usd": 0.1}})),
            ),
            e,
        ) {
            Outcome::Complete { output, cost } => {
                assert_eq!(Value::Object(output), json!({"label": "refund"}));
                assert_eq!(cost.map(Value::Object), Some(json!({"usd": 0.1})));
            }
            Outcome::Fail(error) => panic!("{error:?}"),
        }
        assert_eq!(
            code(outcome_of(result(vec![ContentBlock::text(r#"{"a": 1}"#)], None, false, None), e)).0,
            r#"complete {"a":1}"#
        );
        assert_eq!(
            code(outcome_of(result(vec![ContentBlock::text("[1]")], None, false, None), e)),
            ("output_contract_violation".into(), false)
        );
        assert_eq!(
            code(outcome_of(result(vec![ContentBlock::text("a"), ContentBlock::text("b")], None, false, None), e)),
            ("output_contract_violation".into(), false)
        );
        let envelope = r#"{"error": {"code": "upstream_busy", "message": "busy", "retryable": true}}"#;
        assert_eq!(
            code(outcome_of(result(vec![ContentBlock::text(envelope)], None, true, None), e)),
            ("upstream_busy".into(), true)
        );
        assert_eq!(
            code(outcome_of(result(vec![ContentBlock::text("it broke")], None, true, None), e)),
            ("tool_error".into(), false)
        );
        let bad = r#"{"error": {"code": "Bad Code", "retryable": true}}"#;
        assert_eq!(
            code(outcome_of(result(vec![ContentBlock::text(bad)], None, true, None), e)),
            ("tool_error".into(), false)
        );
    }
}
