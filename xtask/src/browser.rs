//! A real browser for the console's tests: Debian's Chromium and its ChromeDriver (installed from
//! Debian's packages when missing, with curl and jq, which the test of dev's printed commands uses), the driver listening on a free port of 127.0.0.1, stopped
//! when dropped.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};

/// Debian's Chromium.
pub(crate) const CHROMIUM: &str = "/usr/bin/chromium";
const CHROMEDRIVER: &str = "/usr/bin/chromedriver";

/// A running ChromeDriver.
pub(crate) struct Browser {
    pub(crate) webdriver: String,
    child: Child,
}

impl Browser {
    /// Installs Chromium and ChromeDriver if needed, starts the driver and waits until it answers.
    pub(crate) fn start() -> Result<Self> {
        // The browser, and the shell tools `skill-core dev`'s printed commands use (a test runs them).
        let missing = |program: &str| !Path::new("/usr/bin").join(program).exists();
        if missing("chromium") || missing("chromedriver") || missing("curl") || missing("jq") {
            crate::apt_install("Chromium, ChromeDriver, curl and jq", &["chromium", "chromium-driver", "curl", "jq"])?;
        }
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|listener| listener.local_addr())
            .context("finding a free port")?
            .port();
        let child = Command::new(CHROMEDRIVER)
            .args([format!("--port={port}"), "--allowed-ips=127.0.0.1".to_owned()])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .with_context(|| format!("starting {CHROMEDRIVER}"))?;
        let browser = Self { webdriver: format!("http://127.0.0.1:{port}"), child };
        let deadline = Instant::now() + Duration::from_secs(30);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            if Instant::now() > deadline {
                bail!("ChromeDriver did not listen on {} within 30 s", browser.webdriver);
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        println!("==> Chromium through ChromeDriver at {}", browser.webdriver);
        Ok(browser)
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
