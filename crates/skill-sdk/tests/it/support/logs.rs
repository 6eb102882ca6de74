//! Capturing the formatted log lines of a closure, for tests of what is (and is not) logged.

use std::sync::{Arc, Mutex};

/// Collects formatted log lines.
#[derive(Clone, Default)]
struct Lines(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for Lines {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.lock().expect("lock").extend_from_slice(bytes);
        Ok(bytes.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for Lines {
    type Writer = Lines;
    fn make_writer(&'a self) -> Lines {
        self.clone()
    }
}

/// Runs `run` with a subscriber of this thread that formats events (debug and up) into a string.
pub(crate) fn with_logs(run: impl FnOnce()) -> String {
    // A callsite's interest is cached process-wide, from the thread that first hits it: a test
    // without a subscriber on another thread would cache "never" for the spans this one
    // captures. A global subscriber that wants everything keeps every callsite "sometimes", so
    // each event asks the thread's own subscriber.
    static GLOBAL: std::sync::Once = std::sync::Once::new();
    GLOBAL.call_once(|| {
        let _ = tracing::subscriber::set_global_default(tracing_subscriber::registry());
    });
    let lines = Lines::default();
    let subscriber = tracing_subscriber::fmt()
        .with_writer(lines.clone())
        .with_ansi(false)
        .with_max_level(tracing::Level::DEBUG)
        .finish();
    tracing::subscriber::with_default(subscriber, || {
        tracing::callsite::rebuild_interest_cache();
        run();
    });
    String::from_utf8(lines.0.lock().expect("lock").clone()).expect("utf-8")
}
