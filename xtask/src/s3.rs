//! An S3-compatible server for the tests: `moto_server` from the test virtualenv, on a free port
//! of 127.0.0.1, stopped when dropped.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};

/// A running S3-compatible server.
pub(crate) struct S3 {
    pub(crate) url: String,
    child: Child,
}

impl S3 {
    /// Starts the server next to the virtualenv's `python` and waits until it answers.
    pub(crate) fn start(python: &Path) -> Result<Self> {
        let server = python.with_file_name("moto_server");
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|listener| listener.local_addr())
            .context("finding a free port")?
            .port();
        let child = Command::new(&server)
            .args(["-H", "127.0.0.1", "-p", &port.to_string()])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .with_context(|| format!("starting {}", server.display()))?;
        let s3 = Self { url: format!("http://127.0.0.1:{port}"), child };
        let deadline = Instant::now() + Duration::from_secs(30);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            if Instant::now() > deadline {
                bail!("the S3-compatible server did not listen on {} within 30 s", s3.url);
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        println!("==> S3-compatible server (moto) at {}", s3.url);
        Ok(s3)
    }
}

impl Drop for S3 {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
