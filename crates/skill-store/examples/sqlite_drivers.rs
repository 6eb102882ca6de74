//! Why SQLite has two drivers in the store, measured: the transaction a call's hot path makes (a
//! call row, its event, the journal's head moved: `BEGIN IMMEDIATE`, three statements, `COMMIT`,
//! WAL with `synchronous=FULL` as the store runs), by many writers at once, through
//!
//! - `sqlx`: its SQLite driver, one writing connection (as the store's cold paths use it);
//! - `rusqlite`, a transaction per hand-off: a writer thread takes one transaction at a time;
//! - `rusqlite`, group commit: the writer thread commits every transaction waiting for it
//!   together, each in a savepoint (what `lite.rs` does).
//!
//! Prints one JSON line per driver: transactions per second and the process's CPU per
//! transaction. `cargo xtask bench drivers` runs it and prints the table.
//!
//! ```text
//! sqlite_drivers <folder> [transactions] [writers]
//! ```

#![allow(clippy::print_stdout)]

use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use futures::channel::oneshot;
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous};

const SCHEMA: &[&str] = &[
    "CREATE TABLE calls (id TEXT PRIMARY KEY, skill TEXT NOT NULL, inputs TEXT NOT NULL, status TEXT NOT NULL)",
    "CREATE TABLE events (seq INTEGER PRIMARY KEY, subject TEXT NOT NULL, data TEXT NOT NULL)",
    "CREATE TABLE head (id INTEGER PRIMARY KEY, size INTEGER NOT NULL)",
    "INSERT INTO head (id, size) VALUES (1, 0)",
];
const INSERT_CALL: &str = "INSERT INTO calls (id, skill, inputs, status) VALUES (?1, 'claims.lookup@1', ?2, 'pending')";
const INSERT_EVENT: &str = "INSERT INTO events (subject, data) VALUES (?1, ?2)";
const MOVE_HEAD: &str = "UPDATE head SET size = size + 1 WHERE id = 1";
const INPUTS: &str = r#"{"claim":"C-1042","message":"My parcel arrived damaged; I would like a refund."}"#;

/// What one driver did: transactions, seconds, CPU seconds of the whole process.
struct Run {
    driver: &'static str,
    transactions: usize,
    seconds: f64,
    cpu: f64,
}

fn main() {
    let mut arguments = std::env::args().skip(1);
    let folder = PathBuf::from(arguments.next().expect("usage: sqlite_drivers <folder> [transactions] [writers]"));
    let transactions: usize = arguments.next().map_or(4_000, |n| n.parse().expect("a number of transactions"));
    let writers: usize = arguments.next().map_or(32, |n| n.parse().expect("a number of writers"));
    std::fs::create_dir_all(&folder).expect("the folder");
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().expect("runtime");
    let runs = [
        runtime.block_on(through_sqlx(&database(&folder, "sqlx"), transactions, writers)),
        runtime.block_on(through_thread(&database(&folder, "per-transaction"), transactions, writers, 1)),
        runtime.block_on(through_thread(&database(&folder, "group"), transactions, writers, 256)),
    ];
    for run in runs {
        let n = run.transactions as f64;
        println!(
            "{}",
            serde_json::json!({
                "driver": run.driver,
                "transactions": run.transactions,
                "writers": writers,
                "perSecond": (n / run.seconds).round(),
                "cpuMicrosPerTransaction": (run.cpu / n * 1e6).round(),
            })
        );
    }
}

/// A fresh database file with the schema, in the store's mode.
fn database(folder: &Path, name: &str) -> PathBuf {
    let path = folder.join(format!("{name}.db"));
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
    }
    let connection = open(&path);
    for statement in SCHEMA {
        connection.execute(statement, []).expect("the schema");
    }
    path
}

fn open(path: &Path) -> rusqlite::Connection {
    let connection = rusqlite::Connection::open(path).expect("the database");
    connection.pragma_update(None, "journal_mode", "WAL").expect("WAL");
    connection.pragma_update(None, "synchronous", "FULL").expect("FULL");
    connection.busy_timeout(Duration::from_secs(5)).expect("busy timeout");
    connection
}

/// The CPU seconds this process has used (user and system), from `/proc/self/stat`.
fn cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // The fields after the command's closing parenthesis; utime and stime are the 12th and 13th.
    let rest = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| fields.get(i).and_then(|field| field.parse::<f64>().ok()).unwrap_or(0.0);
    (ticks(11) + ticks(12)) / 100.0
}

async fn through_sqlx(path: &Path, transactions: usize, writers: usize) -> Run {
    let options = SqliteConnectOptions::from_str(&format!("sqlite://{}", path.display()))
        .expect("options")
        .journal_mode(SqliteJournalMode::Wal)
        .synchronous(SqliteSynchronous::Full)
        .busy_timeout(Duration::from_secs(5));
    let pool = SqlitePoolOptions::new().max_connections(1).connect_with(options).await.expect("a pool");
    let (started, cpu) = (Instant::now(), cpu_seconds());
    let mut tasks = Vec::new();
    for writer in 0..writers {
        let pool = pool.clone();
        tasks.push(tokio::spawn(async move {
            for n in (writer..transactions).step_by(writers) {
                let mut connection = pool.acquire().await.expect("the writing connection");
                let id = format!("call-{n}");
                sqlx::query("BEGIN IMMEDIATE").execute(&mut *connection).await.expect("begin");
                sqlx::query(INSERT_CALL).bind(&id).bind(INPUTS).execute(&mut *connection).await.expect("call");
                sqlx::query(INSERT_EVENT).bind(&id).bind(INPUTS).execute(&mut *connection).await.expect("event");
                sqlx::query(MOVE_HEAD).execute(&mut *connection).await.expect("head");
                sqlx::query("COMMIT").execute(&mut *connection).await.expect("commit");
            }
        }));
    }
    for task in tasks {
        task.await.expect("a writer");
    }
    let run = Run { driver: "sqlx", transactions, seconds: started.elapsed().as_secs_f64(), cpu: cpu_seconds() - cpu };
    pool.close().await;
    run
}

/// One transaction handed to the writer thread, answered once it is committed.
struct Job {
    id: String,
    done: oneshot::Sender<()>,
}

/// Writers hand their transactions to one thread, which commits up to `batch` waiting ones
/// together (1: each on its own), each inside a savepoint.
async fn through_thread(path: &Path, transactions: usize, writers: usize, batch: usize) -> Run {
    let (jobs, queue) = mpsc::channel::<Job>();
    let connection = open(path);
    let thread = std::thread::spawn(move || write_loop(&connection, &queue, batch));
    let (started, cpu) = (Instant::now(), cpu_seconds());
    let mut tasks = Vec::new();
    for writer in 0..writers {
        let jobs = jobs.clone();
        tasks.push(tokio::spawn(async move {
            for n in (writer..transactions).step_by(writers) {
                let (done, answer) = oneshot::channel();
                jobs.send(Job { id: format!("call-{n}"), done }).expect("the writer runs");
                answer.await.expect("committed");
            }
        }));
    }
    for task in tasks {
        task.await.expect("a writer");
    }
    let seconds = started.elapsed().as_secs_f64();
    let cpu = cpu_seconds() - cpu;
    drop(jobs);
    thread.join().expect("the writer thread");
    let driver = if batch == 1 { "rusqlite, a transaction per hand-off" } else { "rusqlite, group commit" };
    Run { driver, transactions, seconds, cpu }
}

fn write_loop(connection: &rusqlite::Connection, queue: &mpsc::Receiver<Job>, batch: usize) {
    while let Ok(first) = queue.recv() {
        let mut taken = vec![first];
        while taken.len() < batch {
            match queue.try_recv() {
                Ok(job) => taken.push(job),
                Err(_) => break,
            }
        }
        connection.execute_batch("BEGIN IMMEDIATE").expect("begin");
        for job in &taken {
            connection.execute_batch("SAVEPOINT job").expect("savepoint");
            let mut call = connection.prepare_cached(INSERT_CALL).expect("prepared");
            call.execute((&job.id, INPUTS)).expect("call");
            let mut event = connection.prepare_cached(INSERT_EVENT).expect("prepared");
            event.execute((&job.id, INPUTS)).expect("event");
            connection.prepare_cached(MOVE_HEAD).expect("prepared").execute([]).expect("head");
            connection.execute_batch("RELEASE job").expect("release");
        }
        connection.execute_batch("COMMIT").expect("commit");
        for job in taken {
            let _ = job.done.send(());
        }
    }
}
