//! Trace context in and out: the W3C `traceparent` of a span, and a span made the child of one.

use std::sync::atomic::{AtomicBool, Ordering};

use opentelemetry::propagation::{Extractor, TextMapPropagator};
use opentelemetry::trace::{TraceContextExt, TraceFlags};
use opentelemetry_sdk::propagation::TraceContextPropagator;
use tracing_opentelemetry::OpenTelemetrySpanExt;

static ENABLED: AtomicBool = AtomicBool::new(false);

pub(crate) fn enable() {
    ENABLED.store(true, Ordering::Relaxed);
}

/// Whether traces are exported by this process.
pub fn enabled() -> bool {
    ENABLED.load(Ordering::Relaxed)
}

/// The W3C `traceparent` of `span` (`00-{trace id}-{span id}-{flags}`), when traces are on and
/// the span is part of a trace.
pub fn traceparent_of(span: &tracing::Span) -> Option<String> {
    if !enabled() || span.is_none() {
        return None;
    }
    let context = span.context();
    let otel = context.span();
    let ids = otel.span_context();
    if !ids.is_valid() {
        return None;
    }
    let flags = if ids.trace_flags().is_sampled() { TraceFlags::SAMPLED } else { TraceFlags::default() };
    Some(format!("00-{}-{}-{:02x}", ids.trace_id(), ids.span_id(), flags.to_u8()))
}

/// The `traceparent` of the current span.
pub fn current() -> Option<String> {
    traceparent_of(&tracing::Span::current())
}

/// A carrier of one `traceparent` (and its `tracestate`, if any).
struct Carrier<'a> {
    traceparent: &'a str,
    tracestate: Option<&'a str>,
}

impl Extractor for Carrier<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        match key {
            crate::attr::TRACEPARENT => Some(self.traceparent),
            crate::attr::TRACESTATE => self.tracestate,
            _ => None,
        }
    }

    fn keys(&self) -> Vec<&str> {
        vec![crate::attr::TRACEPARENT, crate::attr::TRACESTATE]
    }
}

/// Makes `span` the child of the caller's `traceparent`, when traces are on and it is well
/// formed; a malformed one is ignored (the span starts a trace of its own).
pub fn set_parent(span: &tracing::Span, traceparent: Option<&str>, tracestate: Option<&str>) {
    let Some(traceparent) = traceparent.filter(|_| enabled() && !span.is_none()) else { return };
    if skill_api::telemetry::trace_id(traceparent.trim()).is_none() {
        return;
    }
    // A vendor's state passes only when it is plain and short (as the W3C format is).
    let tracestate = tracestate.filter(|state| state.len() <= 512 && state.bytes().all(|b| (0x20..0x7f).contains(&b)));
    let carrier = Carrier { traceparent: traceparent.trim(), tracestate };
    let parent = TraceContextPropagator::new().extract(&carrier);
    if parent.span().span_context().is_valid() {
        // Fails only when the span was already started, which a new span is not.
        let _ = span.set_parent(parent);
    }
}
