//! Log lines to stderr, buffered: a line at `info` and below joins a buffer that a background
//! thread writes out every 50 ms (or at once when it passes 64 KiB), so a busy server makes one
//! write a few dozen times a second instead of one per request; a `warn` or `error` line is
//! written at once, with what was buffered before it, so it is never the one lost. The guard
//! [`init_logs`] returns writes out the rest when it is dropped — at a graceful stop, or when
//! `main` unwinds from a panic. A process killed outright (SIGKILL, abort) loses the `info` lines
//! of its last 50 ms at most.

use std::io::Write;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use tracing::{Level, Metadata};
use tracing_subscriber::filter::{FilterExt as _, filter_fn};
use tracing_subscriber::fmt::MakeWriter;
use tracing_subscriber::layer::SubscriberExt as _;
use tracing_subscriber::{EnvFilter, Layer, Registry};

use crate::line::PlainLine;

/// How often buffered lines are written out.
const INTERVAL: Duration = Duration::from_millis(50);
/// A buffer this large is written out by the line that fills it.
const HIGH_WATER: usize = 64 * 1024;

#[derive(Debug, Default)]
struct Buffer {
    bytes: Mutex<Vec<u8>>,
    /// Set when no writer thread runs: then every line is written at once.
    unbuffered: std::sync::atomic::AtomicBool,
}

impl Buffer {
    fn lock(&self) -> MutexGuard<'_, Vec<u8>> {
        self.bytes.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Writes out what is buffered, under the lock, so lines keep their order.
    fn flush(&self) {
        let mut bytes = self.lock();
        write_out(&mut bytes);
    }
}

fn write_out(bytes: &mut Vec<u8>) {
    if bytes.is_empty() {
        return;
    }
    let mut stderr = std::io::stderr().lock();
    // A log line that cannot be written has nowhere else to go.
    let _ = stderr.write_all(bytes);
    let _ = stderr.flush();
    bytes.clear();
}

/// The `MakeWriter` of the subscriber: every event's writer appends to the shared buffer.
#[derive(Debug, Clone)]
struct Buffered(Arc<Buffer>);

/// One event's writer; an urgent one (`warn`, `error`) writes everything out when the event ends.
#[derive(Debug)]
pub(crate) struct EventWriter<'a> {
    buffer: &'a Buffer,
    urgent: bool,
}

impl Write for EventWriter<'_> {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        let mut buffered = self.buffer.lock();
        buffered.extend_from_slice(bytes);
        if buffered.len() >= HIGH_WATER {
            write_out(&mut buffered);
        }
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Drop for EventWriter<'_> {
    fn drop(&mut self) {
        if self.urgent {
            self.buffer.flush();
        }
    }
}

impl<'a> MakeWriter<'a> for Buffered {
    type Writer = EventWriter<'a>;

    fn make_writer(&'a self) -> Self::Writer {
        EventWriter { buffer: &self.0, urgent: false }
    }

    fn make_writer_for(&'a self, meta: &Metadata<'_>) -> Self::Writer {
        let unbuffered = self.0.unbuffered.load(std::sync::atomic::Ordering::Relaxed);
        EventWriter { buffer: &self.0, urgent: unbuffered || *meta.level() <= Level::WARN }
    }
}

/// Writes out the buffered log lines when dropped, and stops the trace export (sending what it
/// still holds) if there is one; keep it alive for as long as `main` runs.
#[derive(Debug)]
#[must_use = "the log lines buffered when the guard is dropped are written out then"]
pub struct LogGuard {
    buffer: Option<Arc<Buffer>>,
    traces: Option<skill_traces::Traces>,
}

impl LogGuard {
    /// Writes out what is buffered now.
    pub fn flush(&self) {
        if let Some(buffer) = &self.buffer {
            buffer.flush();
        }
    }
}

impl Drop for LogGuard {
    fn drop(&mut self) {
        // The export's own last words (a receiver gone) are log lines too.
        drop(self.traces.take());
        self.flush();
    }
}

/// What the trace export keeps of the spans: ours, and nothing below `warn` from the libraries
/// whose own spans and events would only crowd a trace (nothing of the exporter's own: its
/// warnings go to the log lines).
const TRACED: &str = "info,rmcp=warn,sqlx=warn,hyper=warn,h2=warn,reqwest=warn,tower=warn,opentelemetry=off,\
                      opentelemetry_sdk=off,opentelemetry_otlp=off,opentelemetry_http=off";

/// Log lines go to stderr (stdout is the MCP channel of `mcp-stdio`): `SKILL_LOG` filters them
/// (default `default_filter`, e.g. `info`), `SKILL_LOG_FORMAT=json` makes them JSON lines. When
/// a subscriber is already set (a test's), nothing changes and the guard does nothing. Lines to
/// a terminal are coloured; elsewhere they are plain and formatted with little machinery (the usual layout).
///
/// When `OTEL_EXPORTER_OTLP_ENDPOINT` is set, spans are exported too (see [`skill_traces`]),
/// named `service` unless `OTEL_SERVICE_NAME` says otherwise, and JSON lines written inside a
/// traced span carry its `trace_id` and `span_id`. A trace setting the exporter cannot use is
/// said on stderr, and the process runs without traces.
pub fn init_logs(service: &str, default_filter: &str) -> LogGuard {
    let filter = tracing_subscriber::EnvFilter::try_from_env("SKILL_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default_filter));
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr());
    let json = std::env::var("SKILL_LOG_FORMAT").is_ok_and(|f| f == "json");
    let buffer = Arc::new(Buffer::default());
    let writer = Buffered(Arc::clone(&buffer));
    let (installed, traces) = match skill_traces::install::<Registry>(service) {
        Ok(Some(skill_traces::Installed { layer, traces, warnings })) => {
            for warning in warnings {
                let _ = writeln!(std::io::stderr(), "warning: traces: {warning}");
            }
            (with_traces(filter, writer, ansi, json, layer), Some(traces))
        }
        Ok(None) => (without_traces(filter, writer, ansi, json), None),
        Err(problem) => {
            let _ = writeln!(std::io::stderr(), "warning: traces are off: {problem}");
            (without_traces(filter, writer, ansi, json), None)
        }
    };
    if !installed {
        return LogGuard { buffer: None, traces: None };
    }
    // The subscriber lives as long as the process, and so does its writer thread.
    let background = Arc::clone(&buffer);
    let started = std::thread::Builder::new().name("log-writer".into()).spawn(move || {
        loop {
            std::thread::sleep(INTERVAL);
            background.flush();
        }
    });
    if started.is_err() {
        buffer.unbuffered.store(true, std::sync::atomic::Ordering::Relaxed);
    }
    LogGuard { buffer: Some(buffer), traces }
}

/// The usual subscriber: one global filter, one format. Whether it was installed.
fn without_traces(filter: EnvFilter, writer: Buffered, ansi: bool, json: bool) -> bool {
    let builder = tracing_subscriber::fmt().with_env_filter(filter).with_writer(writer).with_ansi(ansi);
    let installed = if json {
        builder.json().try_init()
    } else if ansi {
        builder.try_init()
    } else {
        builder.event_format(PlainLine).fmt_fields(PlainLine).try_init()
    };
    installed.is_ok()
}

/// The spans [`skill_traces::spans`] opens, kept out of the log lines.
const UNLOGGED: &str = "skill_traces::spans=off";

/// Log lines and exported spans, each with a filter of its own (so `SKILL_LOG=warn` still
/// exports the spans). Whether it was installed.
fn with_traces(
    filter: EnvFilter,
    writer: Buffered,
    ansi: bool,
    json: bool,
    exported: Box<dyn Layer<Registry> + Send + Sync>,
) -> bool {
    // The spans made for the export only stay out of the lines (their fields would crowd every
    // line written inside them).
    let filter = filter.add_directive(UNLOGGED.parse().expect("a directive"));
    let lines = tracing_subscriber::fmt::layer().with_writer(writer).with_ansi(ansi);
    let lines: Box<dyn Layer<Registry> + Send + Sync> = if json {
        lines.json().map_event_format(skill_traces::logs::WithIds).with_filter(filter).boxed()
    } else if ansi {
        lines.with_filter(filter).boxed()
    } else {
        lines.event_format(PlainLine).fmt_fields(PlainLine).with_filter(filter).boxed()
    };
    // Spans, and only the events that are warnings or errors: an access line holds what a
    // caller sent (a path), and a span keeps its events until it is sent.
    let kept = EnvFilter::new(TRACED).and(filter_fn(|meta| meta.is_span() || *meta.level() <= tracing::Level::WARN));
    let exported = exported.with_filter(kept).boxed();
    let dispatch = tracing::Dispatch::new(Registry::default().with(vec![lines, exported]));
    skill_traces::logs::remember(&dispatch);
    tracing::dispatcher::set_global_default(dispatch).is_ok()
}
