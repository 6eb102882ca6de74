//! A `skill-core` child process whose output lines the test reads as they come, stopped with a
//! signal.

use std::io::{BufRead, BufReader, Read};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{Receiver, channel};
use std::time::Duration;

pub(crate) const CORE: &str = env!("CARGO_BIN_EXE_skill-core");

pub(crate) struct Running {
    child: Child,
    lines: Receiver<String>,
}

impl Running {
    /// Starts `skill-core ARGS`, reading its stdout (`stdout: true`) or its stderr.
    pub(crate) fn start(args: &[&str], stdout: bool) -> Self {
        let mut command = Command::new(CORE);
        command.args(args).stdin(Stdio::null());
        if stdout {
            command.stdout(Stdio::piped()).stderr(Stdio::null());
        } else {
            command.stderr(Stdio::piped());
        }
        let mut child = command.spawn().expect("skill-core starts");
        let stream: Box<dyn Read + Send> = if stdout {
            Box::new(child.stdout.take().expect("stdout"))
        } else {
            Box::new(child.stderr.take().expect("stderr"))
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
    pub(crate) fn until(&mut self, seconds: u64, last: impl Fn(&str) -> bool) -> Vec<String> {
        let mut seen = Vec::new();
        loop {
            let Ok(line) = self.lines.recv_timeout(Duration::from_secs(seconds)) else {
                let _ = self.child.kill();
                let _ = self.child.wait();
                panic!("skill-core did not get there: {seen:?}");
            };
            let done = last(&line);
            seen.push(line);
            if done {
                return seen;
            }
        }
    }

    /// Sends `signal`, waits, checks a clean exit, and returns the lines that followed.
    pub(crate) fn stop(mut self, signal: rustix::process::Signal) -> Vec<String> {
        let pid = rustix::process::Pid::from_raw(i32::try_from(self.child.id()).expect("a pid")).expect("non-zero");
        rustix::process::kill_process(pid, signal).expect("signalled");
        let status = self.child.wait().expect("exits");
        assert_eq!(status.code(), Some(0), "{signal:?} is a clean stop");
        self.lines.iter().collect()
    }
}
