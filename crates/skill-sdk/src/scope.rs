//! What a handle the context gives out (the model, artifacts, knowledge) needs of its call —
//! the span, the deadline and the cost meter — so those handles do not hold the whole context.

use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use crate::cost::CostMeter;

/// The span, clock and meter of one call; clones share them.
#[derive(Debug, Clone)]
pub(crate) struct CallScope {
    span: tracing::Span,
    started: Instant,
    timeout: Duration,
    cost: Arc<Mutex<CostMeter>>,
}

impl CallScope {
    /// The clock starts now.
    pub(crate) fn new(span: tracing::Span, timeout: Duration) -> Self {
        Self { span, started: Instant::now(), timeout, cost: Arc::default() }
    }

    pub(crate) fn span(&self) -> &tracing::Span {
        &self.span
    }

    pub(crate) fn timeout(&self) -> Duration {
        self.timeout
    }

    /// Time left until the deadline (zero when it has passed).
    pub(crate) fn remaining(&self) -> Duration {
        self.timeout.saturating_sub(self.started.elapsed())
    }

    pub(crate) fn meter(&self) -> MutexGuard<'_, CostMeter> {
        self.cost.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}
