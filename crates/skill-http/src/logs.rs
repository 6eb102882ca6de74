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
use tracing_subscriber::fmt::MakeWriter;

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

/// Writes out the buffered log lines when dropped; keep it alive for as long as `main` runs.
#[derive(Debug)]
#[must_use = "the log lines buffered when the guard is dropped are written out then"]
pub struct LogGuard(Option<Arc<Buffer>>);

impl LogGuard {
    /// Writes out what is buffered now.
    pub fn flush(&self) {
        if let Some(buffer) = &self.0 {
            buffer.flush();
        }
    }
}

impl Drop for LogGuard {
    fn drop(&mut self) {
        self.flush();
    }
}

/// Log lines go to stderr (stdout is the MCP channel of `mcp-stdio`): `SKILL_LOG` filters them
/// (default `default_filter`, e.g. `info`), `SKILL_LOG_FORMAT=json` makes them JSON lines. When
/// a subscriber is already set (a test's), nothing changes and the guard does nothing. Lines to
/// a terminal are coloured; elsewhere they are plain and formatted with little machinery (the usual layout).
pub fn init_logs(default_filter: &str) -> LogGuard {
    let filter = tracing_subscriber::EnvFilter::try_from_env("SKILL_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default_filter));
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr());
    let buffer = Arc::new(Buffer::default());
    let writer = Buffered(Arc::clone(&buffer));
    let builder = tracing_subscriber::fmt().with_env_filter(filter).with_writer(writer).with_ansi(ansi);
    let installed = if std::env::var("SKILL_LOG_FORMAT").is_ok_and(|f| f == "json") {
        builder.json().try_init()
    } else if ansi {
        builder.try_init()
    } else {
        builder.event_format(PlainLine).fmt_fields(PlainLine).try_init()
    };
    if installed.is_err() {
        return LogGuard(None);
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
    LogGuard(Some(buffer))
}
