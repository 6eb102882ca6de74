//! Prometheus for the metrics tests: Debian's `prometheus` package, installed when missing. The
//! tests start it themselves (its configuration names the ports their cores and executors serve
//! metrics on, known only once they run), on a free port, with a scratch folder for its data.

use anyhow::{Context, Result};
use std::path::PathBuf;

const BINARY: &str = "/usr/bin/prometheus";

/// The Prometheus server's program, installed if needed.
pub(crate) fn binary() -> Result<PathBuf> {
    let binary = PathBuf::from(BINARY);
    if !binary.exists() {
        crate::apt_install("Prometheus", &["prometheus"])?;
    }
    binary.exists().then_some(binary).context("Prometheus was installed but /usr/bin/prometheus is not there")
}
