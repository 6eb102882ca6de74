//! The reference of the P4 benchmark: single-row durable commits per second on raw SQLite, in the
//! same mode the store runs (WAL, `synchronous=FULL`), one writer, for a few seconds.
//!
//! ```text
//! commit_rate <folder> [seconds]
//! ```

#![allow(clippy::print_stdout)]

use std::str::FromStr;
use std::time::{Duration, Instant};

use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqliteSynchronous};
use sqlx::{ConnectOptions, Connection};

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let folder = std::env::args().nth(1).expect("a folder");
    let seconds: u64 = std::env::args().nth(2).map_or(3, |s| s.parse().expect("seconds"));
    std::fs::create_dir_all(&folder).expect("the folder");
    let path = std::path::Path::new(&folder).join("commit_rate.db");
    let _ = std::fs::remove_file(&path);
    let options = SqliteConnectOptions::from_str(&format!("sqlite://{}", path.display()))
        .expect("options")
        .create_if_missing(true)
        .journal_mode(SqliteJournalMode::Wal)
        .synchronous(SqliteSynchronous::Full);
    let mut connection = options.connect().await.expect("a connection");
    sqlx::query("CREATE TABLE rows (id INTEGER PRIMARY KEY, body TEXT NOT NULL)")
        .execute(&mut connection)
        .await
        .expect("table");
    let start = Instant::now();
    let mut commits = 0u64;
    while start.elapsed() < Duration::from_secs(seconds) {
        let mut tx = connection.begin().await.expect("begin");
        sqlx::query("INSERT INTO rows (body) VALUES ($1)")
            .bind("{\"text\": \"call\"}")
            .execute(&mut *tx)
            .await
            .expect("insert");
        tx.commit().await.expect("commit");
        commits += 1;
    }
    let rate = commits as f64 / start.elapsed().as_secs_f64();
    println!("{}", serde_json::json!({"commits": commits, "perSecond": rate}));
}
