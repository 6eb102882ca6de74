//! Fixtures the workspace's test suites share, written once instead of copied into each crate's
//! `tests/`. A dev-dependency only: no library or binary links it (`cargo xtask tidy` checks).
//!
//! | what | where |
//! |---|---|
//! | an axum router on 127.0.0.1, served from a thread of its own | [`serve`] |
//! | a child process whose output lines are read as they come, stopped with a signal | [`Running`] |
//! | a scratch folder under the temporary folder, removed on drop, with file edits | [`Scratch`] |
//! | raw HTTP/1.1 clients that stall, and a plain request beside them | [`slow`] |
//! | the value of one series in a Prometheus scrape | [`sample`] |

pub mod slow;

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{Receiver, channel};
use std::time::Duration;

/// The value of the series written exactly `series` (its name and labels, as the scrape writes
/// them) in the Prometheus text `scrape`; `None` when it is not there.
pub fn sample(scrape: &str, series: &str) -> Option<f64> {
    scrape.lines().find_map(|line| line.strip_prefix(series)).and_then(|value| value.trim().parse().ok())
}

/// Starts `app` on a free port of 127.0.0.1 on a thread with its own runtime (so the code under
/// test may run on another); returns `http://127.0.0.1:<port>`.
pub fn serve(app: axum::Router) -> String {
    let (sender, receiver) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
        runtime.block_on(async move {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
            sender.send(listener.local_addr().expect("address")).expect("send");
            axum::serve(listener, app).await.expect("serve");
        });
    });
    format!("http://{}", receiver.recv().expect("the server starts"))
}

/// Which output of a child the test reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Output {
    Stdout,
    Stderr,
}

/// A child process whose output lines arrive on a channel as it writes them.
#[derive(Debug)]
pub struct Running {
    child: Child,
    lines: Receiver<String>,
}

impl Running {
    /// Spawns `command` with `output` piped (the other one discarded when it is stdout that is
    /// read) and no standard input.
    pub fn start(mut command: Command, output: Output) -> Self {
        command.stdin(Stdio::null());
        match output {
            Output::Stdout => command.stdout(Stdio::piped()).stderr(Stdio::null()),
            Output::Stderr => command.stderr(Stdio::piped()),
        };
        let mut child = command.spawn().unwrap_or_else(|error| panic!("{command:?} starts: {error}"));
        let stream: Box<dyn Read + Send> = match output {
            Output::Stdout => Box::new(child.stdout.take().expect("stdout")),
            Output::Stderr => Box::new(child.stderr.take().expect("stderr")),
        };
        let (sender, lines) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stream).lines().map_while(Result::ok) {
                if sender.send(line).is_err() {
                    break;
                }
            }
        });
        Self { child, lines }
    }

    /// The lines up to and including the first that `last` accepts; the process is killed and
    /// the test fails when none comes within `seconds`.
    pub fn until(&mut self, seconds: u64, last: impl Fn(&str) -> bool) -> Vec<String> {
        let mut seen = Vec::new();
        loop {
            let Ok(line) = self.lines.recv_timeout(Duration::from_secs(seconds)) else {
                let _ = self.child.kill();
                let _ = self.child.wait();
                panic!("the process did not get there: {seen:?}");
            };
            let done = last(&line);
            seen.push(line);
            if done {
                return seen;
            }
        }
    }

    /// The `host:port` a server prints after ` on http://` in its start line.
    pub fn address(&mut self, seconds: u64) -> String {
        let line = self.until(seconds, |line| line.contains(" on http://")).pop().expect("a line");
        let rest = line.split(" on http://").nth(1).expect("an address");
        rest.split(['/', ' ']).next().expect("an address").to_owned()
    }

    /// Sends `signal` and returns at once.
    pub fn signal(&self, signal: rustix::process::Signal) {
        let pid = rustix::process::Pid::from_raw(i32::try_from(self.child.id()).expect("a pid")).expect("non-zero");
        rustix::process::kill_process(pid, signal).expect("signalled");
    }

    /// Waits for the exit; returns its code (`-1` for a signal) and the lines not read yet.
    pub fn wait(mut self) -> (i32, Vec<String>) {
        let status = self.child.wait().expect("exits");
        (status.code().unwrap_or(-1), self.lines.iter().collect())
    }

    /// [`Running::wait`], failing the test (and killing the process) when it has not exited
    /// within `seconds`.
    pub fn wait_within(mut self, seconds: u64) -> (i32, Vec<String>) {
        let deadline = std::time::Instant::now() + Duration::from_secs(seconds);
        while std::time::Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return self.wait();
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
        panic!("the process did not exit within {seconds} s: {:?}", self.lines.try_iter().collect::<Vec<_>>());
    }

    /// Sends `signal`, waits, checks a clean exit (0), and returns the lines that followed.
    pub fn stop(self, signal: rustix::process::Signal) -> Vec<String> {
        self.signal(signal);
        let (code, lines) = self.wait();
        assert_eq!(code, 0, "{signal:?} is a clean stop: {lines:?}");
        lines
    }

    /// Kills the process (when a test is done with it without a clean stop to check).
    pub fn kill(mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// A folder of its own under the temporary folder (`<label>-<pid>-<n>`), emptied first and
/// removed when dropped.
#[derive(Debug)]
pub struct Scratch {
    root: PathBuf,
}

impl Scratch {
    pub fn new(label: &str) -> Self {
        static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let root = std::env::temp_dir().join(format!("{label}-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(&root).expect("a scratch folder");
        Self { root }
    }

    pub fn path(&self) -> &Path {
        &self.root
    }

    /// Replaces the first `from` in the file `relative` by `to`; the test fails when the file does
    /// not hold `from`.
    pub fn edit(&self, relative: &str, from: &str, to: &str) {
        let path = self.root.join(relative);
        let text = std::fs::read_to_string(&path).unwrap_or_else(|error| panic!("{relative}: {error}"));
        assert!(text.contains(from), "{relative} holds {from}");
        std::fs::write(&path, text.replacen(from, to, 1)).expect("write");
    }

    /// Writes `text` to the file `relative`, creating its folders.
    pub fn write(&self, relative: &str, text: &str) {
        let path = self.root.join(relative);
        std::fs::create_dir_all(path.parent().expect("a folder")).expect("folders");
        std::fs::write(path, text).expect("write");
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.root);
    }
}
