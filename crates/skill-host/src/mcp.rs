//! The MCP host: one tool per skill, over stdio or streamable HTTP.
//!
//! A tool is named after its skill (no version; `ns/name` becomes `ns.name`), so one server
//! cannot host two versions of a skill: [`McpHost::new`] refuses them, naming both. `tools/call`
//! reads `skill/invocationId`, `skill/idempotencyKey` and `skill/settings` from the request's
//! `_meta`; success is `structuredContent` plus the same JSON as one text block, with the cost in
//! `_meta["skill/cost"]`; failure (an unknown tool included) is `isError` with one text block
//! holding the error envelope.

/// What rmcp answers wrongly for malformed messages, screened before it sees them (shared with
/// the core's gateway).
pub use skill_http::mcp_screen as screen;
mod tools;

use std::collections::BTreeMap;
use std::sync::Arc;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation, ListToolsResult, MetaObject,
    PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde_json::{Map, Value};
use skill_sdk::registry::Registry;
use skill_sdk::{Invocation, Skill, SkillError, Transport};
use skill_traces::attr::{TRACEPARENT, TRACESTATE};
use tracing::Instrument as _;

pub use tools::{annotations, tool, tool_name};

use crate::http::{Calls, VerifiedCaller};
use skill_http::requests::RequestId;

/// What streamable HTTP adds to a `tools/call`: the verified claims and the request's id.
#[derive(Debug, Clone, Default)]
pub struct HttpRequest {
    pub caller: Option<Value>,
    pub request_id: Option<String>,
}

/// Two skills that would be one tool.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "two versions of one skill on one MCP server: {first} and {second} would both be the tool `{tool}`; \
     serve them from separate hosts"
)]
pub struct ToolClash {
    pub tool: String,
    pub first: String,
    pub second: String,
}

struct Hosted {
    name: String,
    tools: Vec<Tool>,
    skills: BTreeMap<String, &'static Skill>,
    calls: Calls,
}

/// The MCP server of a registry's skills; cheap to clone (one per streamable HTTP request).
#[derive(Clone)]
pub struct McpHost(Arc<Hosted>);

impl std::fmt::Debug for McpHost {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpHost").field("name", &self.0.name).field("tools", &self.0.skills.keys()).finish()
    }
}

impl McpHost {
    /// A server named `name` with a tool for every skill of `registry`.
    pub fn new(registry: &Registry, name: &str) -> Result<Self, ToolClash> {
        let mut skills: BTreeMap<String, &'static Skill> = BTreeMap::new();
        for skill in registry.skills() {
            let tool = tool_name(skill.name());
            if let Some(existing) = skills.get(&tool) {
                return Err(ToolClash { tool, first: existing.reference(), second: skill.reference() });
            }
            skills.insert(tool, skill);
        }
        let tools = skills.values().map(|skill| tools::tool(skill)).collect();
        Ok(Self(Arc::new(Hosted { name: name.to_owned(), tools, skills, calls: Calls::default() })))
    }

    /// The calls this server runs, for draining at shutdown.
    pub fn calls(&self) -> Calls {
        self.0.calls.clone()
    }

    /// Runs one `tools/call` of the tool `name` with the request's `_meta`; over streamable HTTP,
    /// `via` has the verified token's claims and the HTTP request's id.
    ///
    /// With traces on, the call is a server span, the child of the `traceparent` in `_meta`.
    pub async fn call(
        &self,
        name: &str,
        arguments: Option<Map<String, Value>>,
        meta: &Map<String, Value>,
        via: HttpRequest,
    ) -> CallToolResult {
        let text = |key: &str| meta.get(key).and_then(Value::as_str);
        // A tool this server does not have is not named in the span (the name is the caller's).
        let hosted = if self.0.skills.contains_key(name) { name } else { "" };
        let span = skill_traces::spans::mcp_server(hosted, text(TRACEPARENT), text(TRACESTATE));
        if span.is_none() {
            return self.run_tool(name, arguments, meta, via).await;
        }
        let result = self.run_tool(name, arguments, meta, via).instrument(span.clone()).await;
        if result.is_error == Some(true) {
            skill_traces::spans::failed(&span, "tool_error");
        }
        result
    }

    async fn run_tool(
        &self,
        name: &str,
        arguments: Option<Map<String, Value>>,
        meta: &Map<String, Value>,
        via: HttpRequest,
    ) -> CallToolResult {
        let Some(skill) = self.0.skills.get(name).copied() else {
            let error = SkillError::new("skill_not_hosted")
                .with_message(format!("no tool {name} on this server; tools/list lists them"));
            return failure(&error);
        };
        let mut invocation = Invocation::new(Transport::Mcp).with_transport_meta(
            meta.get("skill/invocationId"),
            meta.get("skill/idempotencyKey"),
            meta.get("skill/settings"),
        );
        if let Some(caller) = via.caller {
            // A token the core issued for one call is good for that call only.
            if let Some(claims) = caller.as_object()
                && let Err(error) =
                    crate::auth::token_covers(claims, crate::auth::Called::Tool(name), meta.get("skill/invocationId"))
            {
                return failure(&error);
            }
            invocation = invocation.with_caller(caller);
        }
        if let Some(id) = via.request_id {
            invocation = invocation.with_request_id(id);
        }
        let inputs = Value::Object(arguments.unwrap_or_default());
        match self.0.calls.run(skill, inputs, invocation).await {
            Ok(outcome) => {
                let outputs = Value::Object(outcome.outputs);
                let mut result = CallToolResult::success(vec![ContentBlock::text(outputs.to_string())]);
                result.structured_content = Some(outputs);
                if let Some(cost) = outcome.cost {
                    let mut meta = Map::new();
                    meta.insert("skill/cost".into(), cost);
                    result.meta = Some(MetaObject(meta));
                }
                result
            }
            Err(error) => failure(&error),
        }
    }
}

fn failure(error: &SkillError) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(error.to_envelope().to_string())])
}

impl ServerHandler for McpHost {
    fn get_info(&self) -> ServerConfig {
        let mut config = ServerConfig::new(ServerCapabilities::builder().enable_tools().build());
        config.server_info = Implementation::new(self.0.name.clone(), env!("CARGO_PKG_VERSION"));
        config
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(self.0.tools.clone()))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.0.tools.iter().find(|tool| tool.name == name).cloned()
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let parts = context.extensions.get::<axum::http::request::Parts>();
        let via = HttpRequest {
            caller: parts
                .and_then(|parts| parts.extensions.get::<VerifiedCaller>())
                .map(|verified| Value::Object(verified.0.clone())),
            request_id: parts.and_then(|parts| parts.extensions.get::<RequestId>()).map(|id| id.0.clone()),
        };
        // rmcp moves the request's `_meta` into the context.
        let meta = request.meta.as_ref().map_or(&context.meta.0.0, |meta| &meta.0.0);
        Ok(self.call(&request.name, request.arguments, meta, via).await.into())
    }
}
