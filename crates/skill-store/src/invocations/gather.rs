//! Writes that arrive together on PostgreSQL, written together: one writer task per kind of write
//! takes every write of that kind that is waiting (up to [`MOST`]) and hands them to its batch
//! function, which writes them in one statement and answers each. A lone write is written as
//! soon as it comes; while a statement runs the next ones gather, so a hundred executors
//! completing at once cost the server one statement and one commit, not a hundred. The writer
//! runs on its own task, so a caller that goes away (a request dropped) never cuts a batch short.

use std::sync::Mutex;

use futures::future::BoxFuture;
use sqlx::PgPool;
use tokio::sync::mpsc;

use crate::error::{ErrorKind, Result, StoreError};

/// The most writes one statement takes.
pub(super) const MOST: usize = 256;

/// What writes one batch: every write answered through the channel it carries.
pub(super) type WriteAll<J> = fn(PgPool, Vec<J>) -> BoxFuture<'static, ()>;

/// The writer of one kind of write, started at the first one (and again when the runtime it ran
/// on has ended).
pub(crate) struct Gather<J> {
    writer: Mutex<Option<mpsc::UnboundedSender<J>>>,
    write_all: WriteAll<J>,
}

impl<J> std::fmt::Debug for Gather<J> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Gather").finish_non_exhaustive()
    }
}

impl<J: Send + 'static> Gather<J> {
    pub(super) fn new(write_all: WriteAll<J>) -> Self {
        Self { writer: Mutex::new(None), write_all }
    }

    /// Hands `job` to the writer.
    pub(super) fn send(&self, pool: &PgPool, job: J) -> Result<()> {
        let mut writer = self.writer.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let running = match writer.as_ref().filter(|writer| !writer.is_closed()) {
            Some(running) => running,
            None => {
                let (send, receive) = mpsc::unbounded_channel();
                tokio::spawn(write_on(pool.clone(), receive, self.write_all));
                writer.insert(send)
            }
        };
        running.send(job).map_err(|_| stopped())
    }
}

/// What a write is answered when its writer ended before it (the runtime is stopping).
pub(super) fn stopped() -> StoreError {
    StoreError::new(ErrorKind::Unavailable, "the store's writer has stopped")
}

async fn write_on<J>(pool: PgPool, mut receive: mpsc::UnboundedReceiver<J>, write_all: WriteAll<J>) {
    let mut batch = Vec::with_capacity(MOST);
    while receive.recv_many(&mut batch, MOST).await > 0 {
        write_all(pool.clone(), std::mem::take(&mut batch)).await;
    }
}
