//! JSON log lines that lead to their trace: `trace_id` and `span_id` first in every line
//! written within a span of an exported trace.

use std::fmt;
use std::sync::OnceLock;

use opentelemetry::trace::TraceContextExt;
use tracing::dispatcher::{Dispatch, WeakDispatch};
use tracing::{Event, Subscriber};
use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields};
use tracing_subscriber::registry::LookupSpan;

/// The subscriber the log lines are written by: inside an event the current dispatcher is not
/// reachable (it is busy with that event), so the formatter keeps a weak handle of its own.
static DISPATCH: OnceLock<WeakDispatch> = OnceLock::new();

/// Notes the process's subscriber for [`WithIds`]; call once, before it is set as the default.
pub fn remember(dispatch: &Dispatch) {
    let _ = DISPATCH.set(dispatch.downgrade());
}

/// Wraps a JSON event format: a line written inside a span of an exported trace starts with
/// `"trace_id"` and `"span_id"` (the innermost span's).
#[derive(Debug, Clone)]
pub struct WithIds<F>(pub F);

impl<S, N, F> FormatEvent<S, N> for WithIds<F>
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
    F: FormatEvent<S, N>,
{
    fn format_event(&self, ctx: &FmtContext<'_, S, N>, mut writer: Writer<'_>, event: &Event<'_>) -> fmt::Result {
        let ids = ids_of_current();
        let Some((trace, span)) = ids else {
            return self.0.format_event(ctx, writer, event);
        };
        let mut line = String::new();
        self.0.format_event(ctx, Writer::new(&mut line), event)?;
        match line.strip_prefix('{') {
            Some(rest) => {
                let comma = if rest.starts_with('}') { "" } else { "," };
                write!(writer, "{{\"trace_id\":\"{trace}\",\"span_id\":\"{span}\"{comma}{rest}")
            }
            None => writer.write_str(&line),
        }
    }
}

/// The trace and span ids of the current span, when it is part of an exported trace. The
/// subscriber's own view, not the log layer's: the spans opened only for the export are
/// filtered out of the lines, and they are the ones that carry a trace.
fn ids_of_current() -> Option<(String, String)> {
    if !crate::enabled() {
        return None;
    }
    let dispatch = DISPATCH.get()?.upgrade()?;
    let current = dispatch.current_span();
    let context = tracing_opentelemetry::get_otel_context(current.id()?, &dispatch)?;
    let span = context.span();
    let ids = span.span_context();
    ids.is_valid().then(|| (ids.trace_id().to_string(), ids.span_id().to_string()))
}
