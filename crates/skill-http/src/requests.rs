//! Request logs: every HTTP request gets an id (the caller's `X-Request-Id` when it is a sane
//! token, else a new UUID), is logged once with the id, its status and duration, and answers with
//! the id in `X-Request-Id`. The id reaches the skill's span through [`RequestId`] in the
//! request's extensions, so a skill's log lines carry it too.
//!
//! There is no span per request unless traces are exported: with the usual log subscriber a span
//! costs more than the request it describes (measured: 13% of the throughput of a small call).
//! With traces on, each request is a server span, the child of the caller's `traceparent`, and
//! its log line is written inside it.
//!
//! Requests that come by the minute without anyone asking — executors' long-polling claims and
//! heartbeats, health checks, key fetches, a console page refreshing its live parts — are logged at
//! `debug`, so an idle server prints nothing; every other request at `info`, a failed one (5xx) at
//! `warn`.

use std::time::Instant;

use axum::extract::{MatchedPath, Request};
use axum::http::HeaderValue;
use axum::middleware::Next;
use axum::response::Response;
use skill_traces::attr::{TRACEPARENT, TRACESTATE};
use tracing::Instrument as _;

/// The header that carries the request id both ways.
pub const REQUEST_ID: &str = "x-request-id";

fn sane(id: &str) -> bool {
    !id.is_empty() && id.len() <= 128 && id.bytes().all(|b| b.is_ascii_alphanumeric() || b"-_.:".contains(&b))
}

/// The header a page's own script sends when it refreshes the page's live parts.
pub const LIVE: &str = "x-live-refresh";

/// Whether a request to `path` is one that repeats on its own: a long-polling claim, a heartbeat,
/// a health check, a key fetch.
fn routine(path: &str) -> bool {
    path.ends_with(":claim")
        || path.ends_with(":heartbeat")
        || matches!(path, "/healthz" | "/readyz" | "/.well-known/jwks.json")
}

/// The id of a request, in its extensions.
#[derive(Debug, Clone)]
pub struct RequestId(pub String);

fn header<'a>(request: &'a Request, name: &str) -> Option<&'a str> {
    request.headers().get(name).and_then(|value| value.to_str().ok())
}

/// A `route_layer` middleware: names the request's span (when traces are on) by its method and
/// the route that matched, `POST /api/v1/skills/{reference}`.
pub async fn route(request: Request, next: Next) -> Response {
    if skill_traces::enabled()
        && let Some(template) = request.extensions().get::<MatchedPath>()
    {
        skill_traces::spans::route(&tracing::Span::current(), request.method().as_str(), template.as_str());
    }
    next.run(request).await
}

/// The middleware: the request's id, its log line and, when traces are on, its span (the child
/// of the caller's `traceparent`).
pub async fn log(mut request: Request, next: Next) -> Response {
    let started = Instant::now();
    let id = request
        .headers()
        .get(REQUEST_ID)
        .and_then(|value| value.to_str().ok())
        .filter(|id| sane(id))
        .map_or_else(|| uuid::Uuid::now_v7().to_string(), str::to_owned);
    let method = request.method().clone();
    let path = request.uri().path().to_owned();
    let quiet = routine(&path) || request.headers().contains_key(LIVE);
    request.extensions_mut().insert(RequestId(id.clone()));
    let span =
        skill_traces::spans::http_server(method.as_str(), header(&request, TRACEPARENT), header(&request, TRACESTATE));
    let mut response =
        if span.is_none() { next.run(request).await } else { next.run(request).instrument(span.clone()).await };
    let status = response.status().as_u16();
    skill_traces::spans::status(&span, status, false);
    let _inside = span.enter();
    // Milliseconds with three decimals, by integer arithmetic (float formatting costs more).
    let micros = started.elapsed().as_micros();
    let elapsed_ms = format_args!("{}.{:03}", micros / 1000, micros % 1000);
    if status >= 500 {
        tracing::warn!(request_id = %id, %method, %path, status, %elapsed_ms, "request");
    } else if quiet {
        tracing::debug!(request_id = %id, %method, %path, status, %elapsed_ms, "request");
    } else {
        tracing::info!(request_id = %id, %method, %path, status, %elapsed_ms, "request");
    }
    if let Ok(value) = HeaderValue::from_str(&id) {
        response.headers_mut().insert(REQUEST_ID, value);
    }
    response
}

#[cfg(test)]
mod tests {
    #[test]
    fn only_what_repeats_on_its_own_is_routine() {
        for path in [
            "/api/v1/skill-invocations:claim",
            "/api/v1/skill-invocations/x:heartbeat",
            "/healthz",
            "/api/v1/executor-sessions/s:heartbeat",
            "/.well-known/jwks.json",
            "/readyz",
        ] {
            assert!(super::routine(path), "{path}");
        }
        for path in ["/api/v1/skills/a@1:invoke", "/api/v1/tasks", "/console/tasks", "/api/v1/claim"] {
            assert!(!super::routine(path), "{path}");
        }
    }

    #[test]
    fn only_plain_ids_are_taken_from_callers() {
        assert!(super::sane("4f1c-22:ab_c.d"));
        assert!(!super::sane(""));
        assert!(!super::sane("a b"));
        assert!(!super::sane("x\u{7f}"));
        assert!(!super::sane(&"a".repeat(129)));
    }
}
