//! The spans the core, the executors and the hosts open the same way, named and attributed as
//! the OpenTelemetry conventions say. Each is [`Span::none`] when traces are off.

use opentelemetry::trace::TraceContextExt as _;
use tracing::Span;
use tracing::field::Empty;
use tracing_opentelemetry::OpenTelemetrySpanExt as _;

use crate::attr;

/// The longest caller-given text a span keeps (a tool's name): past it, cut.
const MAX_TEXT: usize = 128;

/// `text` cut to [`MAX_TEXT`] bytes, at a character's boundary.
fn bounded(text: &str) -> &str {
    if text.len() <= MAX_TEXT {
        return text;
    }
    let mut end = MAX_TEXT;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// A method as the HTTP conventions record it: the standard ones by name, any other `_OTHER`
/// (a caller picks methods, and a span must not carry what a caller sent at any length).
fn method_of(method: &str) -> &'static str {
    const KNOWN: [&str; 9] = ["GET", "HEAD", "POST", "PUT", "DELETE", "CONNECT", "OPTIONS", "TRACE", "PATCH"];
    KNOWN.into_iter().find(|known| *known == method).unwrap_or("_OTHER")
}

/// A server span for an HTTP request, the child of the caller's `traceparent` if it sent one.
/// Named by its method (`HTTP` for one not standard) until [`route`] names its route.
pub fn http_server(method: &str, traceparent: Option<&str>, tracestate: Option<&str>) -> Span {
    if !crate::enabled() {
        return Span::none();
    }
    let method = method_of(method);
    let name = if method == "_OTHER" { "HTTP" } else { method };
    let span = tracing::info_span!(
        "request",
        otel.name = name,
        otel.kind = "server",
        otel.status_code = Empty,
        { attr::HTTP_REQUEST_METHOD } = method,
        { attr::HTTP_ROUTE } = Empty,
        { attr::HTTP_RESPONSE_STATUS_CODE } = Empty,
        { attr::ERROR_TYPE } = Empty,
    );
    crate::set_parent(&span, traceparent, tracestate);
    span
}

/// Names a server span by the route that matched: `POST /api/v1/skills/{reference}`.
pub fn route(span: &Span, method: &str, route: &str) {
    if span.is_none() {
        return;
    }
    let method = match method_of(method) {
        "_OTHER" => "HTTP",
        known => known,
    };
    // Through the span itself: the span may have started already (a call made in it asked for
    // its context), and a started span takes a new name only so.
    span.context().span().update_name(format!("{method} {route}"));
    span.record(attr::HTTP_ROUTE, route);
}

/// Records an HTTP answer's status on a server or client span; a 5xx (a server's) or any
/// 4xx/5xx (a client's) marks it failed.
pub fn status(span: &Span, status: u16, client: bool) {
    if span.is_none() {
        return;
    }
    span.record(attr::HTTP_RESPONSE_STATUS_CODE, status);
    if status >= 500 || (client && status >= 400) {
        failed(span, &status.to_string());
    }
}

/// Marks a span failed, with the error's type: a status code, an error code, a class of failure.
pub fn failed(span: &Span, error_type: &str) {
    if span.is_none() {
        return;
    }
    span.record(attr::ERROR_TYPE, error_type);
    span.record("otel.status_code", "error");
}

/// The span of one attempt of a call, opened by the executor that claimed it: the child of the
/// span that created the call (its stored `traceparent`), named `execute_tool {skill}`.
pub fn execution(name: &str, version: &str, call: &str, attempt: i32, traceparent: Option<&str>) -> Span {
    if !crate::enabled() {
        return Span::none();
    }
    let span = tracing::info_span!(
        "execution",
        otel.name = format!("{} {name}", attr::EXECUTE_TOOL),
        otel.kind = "internal",
        otel.status_code = Empty,
        { attr::GEN_AI_OPERATION_NAME } = attr::EXECUTE_TOOL,
        { attr::GEN_AI_TOOL_NAME } = name,
        { attr::GEN_AI_TOOL_CALL_ID } = call,
        { attr::SKILL_VERSION } = format!("{name}@{version}"),
        { attr::SKILL_ATTEMPT } = attempt,
        { attr::ERROR_TYPE } = Empty,
    );
    crate::set_parent(&span, traceparent, None);
    span
}

/// A client span for an HTTP request to a remote skill.
pub fn http_client(method: &str, url: &str) -> Span {
    if !crate::enabled() {
        return Span::none();
    }
    let host = url.split("://").nth(1).and_then(|rest| rest.split(['/', '?']).next()).unwrap_or_default();
    let address = host.rsplit_once(':').map_or(host, |(address, _)| address);
    tracing::info_span!(
        "http client",
        otel.name = method,
        otel.kind = "client",
        otel.status_code = Empty,
        { attr::HTTP_REQUEST_METHOD } = method,
        { attr::URL_FULL } = url,
        { attr::SERVER_ADDRESS } = address,
        { attr::HTTP_RESPONSE_STATUS_CODE } = Empty,
        { attr::ERROR_TYPE } = Empty,
    )
}

/// A client span for an MCP `tools/call` of `tool`, over `tcp` (streamable HTTP) or `pipe` (stdio).
pub fn mcp_client(tool: &str, transport: &str) -> Span {
    if !crate::enabled() {
        return Span::none();
    }
    let tool = bounded(tool);
    tracing::info_span!(
        "mcp client",
        otel.name = format!("{} {tool}", attr::TOOLS_CALL),
        otel.kind = "client",
        otel.status_code = Empty,
        { attr::MCP_METHOD_NAME } = attr::TOOLS_CALL,
        { attr::GEN_AI_OPERATION_NAME } = attr::EXECUTE_TOOL,
        { attr::GEN_AI_TOOL_NAME } = tool,
        { attr::NETWORK_TRANSPORT } = transport,
        { attr::ERROR_TYPE } = Empty,
    )
}

/// A server span for an MCP `tools/call` of `tool` (empty: one the server does not have, named
/// `tools/call` alone), the child of the `traceparent` in the request's `params._meta`, if any.
/// The name is the caller's: cut to 128 bytes.
pub fn mcp_server(tool: &str, traceparent: Option<&str>, tracestate: Option<&str>) -> Span {
    if !crate::enabled() {
        return Span::none();
    }
    let tool = bounded(tool);
    let name = if tool.is_empty() { attr::TOOLS_CALL.to_owned() } else { format!("{} {tool}", attr::TOOLS_CALL) };
    let span = tracing::info_span!(
        "mcp server",
        otel.name = name,
        otel.kind = "server",
        otel.status_code = Empty,
        { attr::MCP_METHOD_NAME } = attr::TOOLS_CALL,
        { attr::GEN_AI_OPERATION_NAME } = attr::EXECUTE_TOOL,
        { attr::GEN_AI_TOOL_NAME } = tool,
        { attr::ERROR_TYPE } = Empty,
    );
    crate::set_parent(&span, traceparent, tracestate);
    span
}

/// The trace a new call of `name@version` belongs to: the current span's, or, for a call made
/// outside any traced span (by one of the core's workers), a new trace whose root is a short
/// `create_call {name}` span.
pub fn of_call(name: &str, version: &str) -> Option<String> {
    if !crate::enabled() {
        return None;
    }
    crate::current().or_else(|| {
        let span = tracing::info_span!(
            "call created",
            otel.name = format!("create_call {name}"),
            otel.kind = "internal",
            { attr::GEN_AI_TOOL_NAME } = name,
            { attr::SKILL_VERSION } = format!("{name}@{version}"),
        );
        crate::traceparent_of(&span)
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn what_a_caller_sends_is_bounded_before_a_span_keeps_it() {
        assert_eq!(super::method_of("POST"), "POST");
        assert_eq!(super::method_of("post"), "_OTHER");
        assert_eq!(super::method_of(&"M".repeat(300_000)), "_OTHER");
        assert_eq!(super::bounded("claim.classify"), "claim.classify");
        assert_eq!(super::bounded(&"x".repeat(4_000_000)).len(), 128);
        // Never inside a character: 127 bytes of 'a' then a two-byte letter.
        let text = format!("{}é", "a".repeat(127));
        assert_eq!(super::bounded(&text), "a".repeat(127));
    }
}
