//! Writes that arrive together on PostgreSQL, written together: one writer task per kind of write
//! takes every write of that kind that is waiting (up to [`MOST`]) and hands them to its batch
//! function, which writes them in one statement and answers each. A lone write is written as
//! soon as it comes; while a statement runs the next ones gather, so a hundred executors
//! completing at once cost the server one statement and one commit, not a hundred. The writer
//! runs on its own task, so a caller that goes away (a request dropped) never cuts a batch short.

use std::sync::Mutex;

use futures::future::BoxFuture;
use sqlx::PgPool;
use tokio::sync::{mpsc, oneshot};

use crate::error::{ErrorKind, Result, StoreError};
use crate::records::{Event, Inserted, InvocationRecord};

/// The most writes one statement takes.
pub(crate) const MOST: usize = 256;

/// What writes one batch: every write answered through the channel it carries.
pub(crate) type WriteAll<J> = fn(PgPool, Vec<J>) -> BoxFuture<'static, ()>;

/// The writer of one kind of write, started at the first one (and again when the runtime it ran
/// on has ended).
pub(crate) struct Gather<J> {
    writer: Mutex<Option<mpsc::UnboundedSender<J>>>,
}

impl<J> Default for Gather<J> {
    fn default() -> Self {
        Self { writer: Mutex::new(None) }
    }
}

/// A new call with its event, and where its answer goes.
pub(crate) struct Insertion {
    pub(crate) call: InvocationRecord,
    pub(crate) event: Event,
    pub(crate) done: oneshot::Sender<Result<Inserted>>,
}

/// A call update with its one event, and where its answer goes.
pub(crate) struct Update {
    pub(crate) call: InvocationRecord,
    pub(crate) event: Event,
    pub(crate) done: oneshot::Sender<Result<()>>,
}

impl<J> std::fmt::Debug for Gather<J> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Gather").finish_non_exhaustive()
    }
}

impl<J: Send + 'static> Gather<J> {
    /// Hands `job` to the writer, which `write_all` is when it has to be started.
    pub(crate) fn send(&self, pool: &PgPool, job: J, write_all: WriteAll<J>) -> Result<()> {
        let mut writer = self.writer.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let running = match writer.as_ref().filter(|writer| !writer.is_closed()) {
            Some(running) => running,
            None => {
                let (send, receive) = mpsc::unbounded_channel();
                tokio::spawn(write_on(pool.clone(), receive, write_all));
                writer.insert(send)
            }
        };
        running.send(job).map_err(|_| stopped())
    }
}

/// What a write is answered when its writer ended before it (the runtime is stopping).
pub(crate) fn stopped() -> StoreError {
    StoreError::new(ErrorKind::Unavailable, "the store's writer has stopped")
}

async fn write_on<J>(pool: PgPool, mut receive: mpsc::UnboundedReceiver<J>, write_all: WriteAll<J>) {
    let mut batch = Vec::with_capacity(MOST);
    while receive.recv_many(&mut batch, MOST).await > 0 {
        write_all(pool.clone(), std::mem::take(&mut batch)).await;
    }
}
