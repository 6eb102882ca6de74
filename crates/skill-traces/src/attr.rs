//! The attribute names of the OpenTelemetry semantic conventions the spans use (HTTP, MCP,
//! GenAI tool execution), as constants of our own: the Rust conventions crate marks the MCP and
//! GenAI ones experimental, and a rename there must not rename ours silently.

/// `GET`, `POST`, …
pub const HTTP_REQUEST_METHOD: &str = "http.request.method";
/// The matched route's template (`/api/v1/skills/{reference}`), never a path with ids.
pub const HTTP_ROUTE: &str = "http.route";
pub const HTTP_RESPONSE_STATUS_CODE: &str = "http.response.status_code";
/// The URL a client span called.
pub const URL_FULL: &str = "url.full";
pub const SERVER_ADDRESS: &str = "server.address";
/// What went wrong: an HTTP status class, an MCP error, or the skill's own error code.
pub const ERROR_TYPE: &str = "error.type";

/// The JSON-RPC method of an MCP request (`tools/call`).
pub const MCP_METHOD_NAME: &str = "mcp.method.name";
pub const MCP_SESSION_ID: &str = "mcp.session.id";
/// `tcp` (streamable HTTP) or `pipe` (stdio).
pub const NETWORK_TRANSPORT: &str = "network.transport";

/// `execute_tool` for a skill's run.
pub const GEN_AI_OPERATION_NAME: &str = "gen_ai.operation.name";
/// The skill's name (the MCP tool's name on the MCP path).
pub const GEN_AI_TOOL_NAME: &str = "gen_ai.tool.name";
/// The call's id.
pub const GEN_AI_TOOL_CALL_ID: &str = "gen_ai.tool.call.id";

/// The value of [`GEN_AI_OPERATION_NAME`] for a skill's run.
pub const EXECUTE_TOOL: &str = "execute_tool";
/// The value of [`MCP_METHOD_NAME`] for a call.
pub const TOOLS_CALL: &str = "tools/call";

/// Ours: the version called, `name@version`.
pub const SKILL_VERSION: &str = "skill.version";
/// Ours: the attempt of the call this run is.
pub const SKILL_ATTEMPT: &str = "skill.attempt";

/// Where a trace's context travels in an MCP request's `params._meta` (as the MCP conventions
/// say) and in an HTTP request's headers.
pub const TRACEPARENT: &str = "traceparent";
/// The vendor part of the context, passed on as it came.
pub const TRACESTATE: &str = "tracestate";
