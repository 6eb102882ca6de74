//! SQLite's hot path: the writes of calls and sessions go to one writer thread that commits
//! every transaction waiting for it together (group commit), and the reads those paths need run
//! on the caller's thread on a connection of its own.
//!
//! Why not through sqlx: its SQLite driver hands every statement to a connection thread and
//! back, two context switches a statement, and its single writing connection is held across the
//! awaits between statements. Here a transaction is one hand-off, and one `fsync` serves many.
//! `cargo xtask bench drivers` measures the hot path's transaction (a call row, its event, the
//! journal's head; 20,000 by 32 writers, 2 cores): sqlx 1,387 a second at 537 µs of CPU each,
//! rusqlite one transaction a hand-off 4,099 at 168 µs, with group commit 37,269 at 20 µs. Why
//! sqlx stays for the rest: its one API runs the same statements on both backends, so the cold
//! paths (catalog, identity, work, packages) are written once; moving them to rusqlite would write
//! each twice for a path that is not hot.
//!
//! Each transaction of a batch runs inside its own savepoint: one that fails leaves nothing
//! behind and does not disturb the others; an answer is given only once the batch committed.
//! sqlx keeps its own writing connection for the rare writes (catalog, identity, packages); the
//! two take SQLite's write lock in turn (`BEGIN IMMEDIATE`, waiting up to the busy timeout).

pub(crate) mod rows;

use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::channel::oneshot;
use rusqlite::{Connection, OpenFlags};

pub(crate) use rows::{CALL_COLUMNS, bind_dollars, event_insert, invocation_row, session_row};

use crate::error::{ErrorKind, Result, StoreError};

/// The most transactions one commit carries.
const BATCH: usize = 256;
/// Reading connections kept for reuse; more are opened when more readers run at once.
const KEPT_READERS: usize = 16;

/// The writer thread's queue and the reading connections.
#[derive(Clone)]
pub(crate) struct Lite {
    inner: Arc<Inner>,
}

struct Inner {
    jobs: Sender<Box<dyn Job>>,
    readers: Mutex<Vec<Connection>>,
    /// Reading connections open, kept or in use.
    open: std::sync::atomic::AtomicUsize,
    path: PathBuf,
    busy: Duration,
}

impl std::fmt::Debug for Lite {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Lite").field("path", &self.inner.path).finish_non_exhaustive()
    }
}

/// One transaction waiting for the writer.
trait Job: Send {
    /// Runs inside the batch's transaction; `false` when it failed (its savepoint is undone).
    fn run(&mut self, connection: &Connection) -> bool;
    /// Answers the caller: the job's own outcome, or `failure` when the batch did not commit.
    fn finish(self: Box<Self>, failure: Option<&StoreError>);
}

struct Task<T, F> {
    work: Option<F>,
    outcome: Option<Result<T>>,
    reply: oneshot::Sender<Result<T>>,
}

impl<T: Send, F: FnOnce(&Connection) -> Result<T> + Send> Job for Task<T, F> {
    fn run(&mut self, connection: &Connection) -> bool {
        let Some(work) = self.work.take() else { return false };
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| work(connection)))
            .unwrap_or_else(|_| Err(StoreError::new(ErrorKind::Internal, "a write panicked; it was undone")));
        let ok = outcome.is_ok();
        self.outcome = Some(outcome);
        ok
    }

    fn finish(self: Box<Self>, failure: Option<&StoreError>) {
        let answer = match (failure, self.outcome) {
            (_, Some(Err(error))) => Err(error),
            (Some(failure), _) => Err(StoreError::new(failure.kind(), failure.message())),
            (None, Some(outcome)) => outcome,
            (None, None) => Err(StoreError::new(ErrorKind::Internal, "the write did not run")),
        };
        // The caller may have gone away (its request was dropped): nothing to tell.
        let _ = self.reply.send(answer);
    }
}

impl Lite {
    /// Opens the writer (a thread of its own) and the first reader on the database at `path`,
    /// which sqlx already created and migrated.
    pub(crate) fn open(path: &Path, full_sync: bool, busy: Duration) -> Result<Self> {
        let writer = connect(path, false, busy)?;
        writer
            .execute_batch(if full_sync { "PRAGMA synchronous = FULL" } else { "PRAGMA synchronous = NORMAL" })
            .map_err(StoreError::from)?;
        let (jobs, queue) = mpsc::channel::<Box<dyn Job>>();
        std::thread::Builder::new()
            .name("sqlite-writer".into())
            .spawn(move || write_loop(&writer, &queue))
            .map_err(|error| StoreError::new(ErrorKind::Unavailable, format!("cannot start the writer: {error}")))?;
        let first = connect(path, true, busy)?;
        let inner = Inner {
            jobs,
            readers: Mutex::new(vec![first]),
            open: std::sync::atomic::AtomicUsize::new(1),
            path: path.to_path_buf(),
            busy,
        };
        Ok(Self { inner: Arc::new(inner) })
    }

    /// Runs `work` in a write transaction (batched with the others waiting) and answers once it
    /// committed; an error of `work` undoes what it wrote.
    pub(crate) async fn write<T, F>(&self, work: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(&Connection) -> Result<T> + Send + 'static,
    {
        let (reply, answer) = oneshot::channel();
        let task: Box<dyn Job> = Box::new(Task { work: Some(work), outcome: None, reply });
        self.inner.jobs.send(task).map_err(|_| gone())?;
        answer.await.map_err(|_| gone())?
    }

    /// Runs `work` on a reading connection, on this thread: reads of single rows by key take
    /// microseconds, less than handing them to another thread would.
    pub(crate) fn read<T>(&self, work: impl FnOnce(&Connection) -> Result<T>) -> Result<T> {
        let connection = self.inner.readers.lock().map_err(|_| gone())?.pop();
        let connection = match connection {
            Some(connection) => connection,
            None => {
                let connection = connect(&self.inner.path, true, self.inner.busy)?;
                self.inner.open.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                connection
            }
        };
        let outcome = work(&connection);
        match self.inner.readers.lock() {
            Ok(mut readers) if readers.len() < KEPT_READERS => readers.push(connection),
            _ => {
                drop(connection);
                self.inner.open.fetch_sub(1, std::sync::atomic::Ordering::Relaxed);
            }
        }
        outcome
    }

    /// The reading connections open and the ones idle, and the writer's one.
    pub(crate) fn connections(&self) -> (u32, u32) {
        let idle = self.inner.readers.lock().map_or(0, |readers| readers.len());
        let open = self.inner.open.load(std::sync::atomic::Ordering::Relaxed);
        (u32::try_from(open + 1).unwrap_or(u32::MAX), u32::try_from(idle).unwrap_or(u32::MAX))
    }
}

fn gone() -> StoreError {
    StoreError::new(ErrorKind::Unavailable, "the SQLite writer stopped")
}

fn connect(path: &Path, read_only: bool, busy: Duration) -> Result<Connection> {
    let flags = if read_only {
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX
    } else {
        OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX
    };
    let connection = Connection::open_with_flags(path, flags).map_err(|error| {
        StoreError::new(ErrorKind::Unavailable, format!("cannot open the database {}: {error}", path.display()))
    })?;
    connection.busy_timeout(busy).map_err(StoreError::from)?;
    connection.execute_batch("PRAGMA foreign_keys = ON").map_err(StoreError::from)?;
    connection.set_prepared_statement_cache_capacity(64);
    Ok(connection)
}

/// The writer: takes what waits (up to [`BATCH`]), runs each in a savepoint of one transaction,
/// commits once, answers every caller. Ends when the store is dropped.
fn write_loop(connection: &Connection, queue: &Receiver<Box<dyn Job>>) {
    while let Ok(first) = queue.recv() {
        let mut batch = vec![first];
        while batch.len() < BATCH {
            match queue.try_recv() {
                Ok(job) => batch.push(job),
                Err(_) => break,
            }
        }
        let failure = run_batch(connection, &mut batch).err();
        for job in batch {
            job.finish(failure.as_ref());
        }
    }
}

fn run_batch(connection: &Connection, batch: &mut [Box<dyn Job>]) -> Result<()> {
    connection.execute_batch("BEGIN IMMEDIATE")?;
    let ran = (|| -> Result<()> {
        for job in batch.iter_mut() {
            connection.execute_batch("SAVEPOINT job")?;
            if job.run(connection) {
                connection.execute_batch("RELEASE job")?;
            } else {
                connection.execute_batch("ROLLBACK TO job; RELEASE job")?;
            }
        }
        connection.execute_batch("COMMIT")?;
        Ok(())
    })();
    if ran.is_err() && !connection.is_autocommit() {
        let _ = connection.execute_batch("ROLLBACK");
    }
    ran
}
