//! `--metrics-listen`, as the core's and an executor's commands take it: where Prometheus
//! scrapes the process, and the recorder started there.

use anyhow::Result;
use skill_engine::Engine;

/// `--metrics-listen`: where Prometheus scrapes this process.
#[derive(Debug, Clone, clap::Args)]
pub struct MetricsArg {
    /// Serve Prometheus metrics at http://ADDR/metrics, an address of their own (keep it inside
    /// your network: the metrics name skills and routes, never ids or inputs). Off unless given.
    #[arg(long = "metrics-listen", env = "SKILL_METRICS_LISTEN", value_name = "ADDR")]
    pub address: Option<String>,
}

impl MetricsArg {
    /// The same host with a port the system picks (`0`), for a second process's metrics, when
    /// these are on.
    pub fn beside(&self) -> Option<String> {
        let address = self.address.as_deref().map(str::trim).filter(|address| !address.is_empty())?;
        let host = address.rsplit_once(':').map_or(address, |(host, _)| host);
        Some(format!("{host}:0"))
    }

    /// Installs the recorder and serves it, when an address was given (an empty one is none); a
    /// core's scrape reads what waits from `engine`'s database first, off the runtime's threads
    /// (SQLite reads on the calling thread: a slow database must not hold the API).
    #[allow(clippy::print_stderr, reason = "the person who started the command reads where its metrics are")]
    pub async fn start(&self, component: &'static str, engine: Option<&Engine>) -> Result<()> {
        let Some(address) = self.address.as_deref().map(str::trim).filter(|address| !address.is_empty()) else {
            return Ok(());
        };
        let refresh = engine.cloned().map(|engine| -> skill_http::metrics::Refresh {
            std::sync::Arc::new(move || {
                let engine = engine.clone();
                Box::pin(async move {
                    let runtime = tokio::runtime::Handle::current();
                    let read = tokio::task::spawn_blocking(move || runtime.block_on(engine.record_backlog()));
                    let failure = match read.await {
                        Ok(Ok(())) => return,
                        Ok(Err(error)) => error.to_string(),
                        Err(error) => error.to_string(),
                    };
                    tracing::warn!(error = %failure, "the metrics could not read what waits");
                    skill_http::metrics::count_scrape_error();
                })
            })
        });
        let listening = skill_http::metrics::start(component, address, refresh).await.map_err(anyhow::Error::msg)?;
        if engine.is_some() {
            // A core's counters, counted from the start, so a rate or an alert sees 0 rather
            // than nothing.
            for counter in [skill_api::telemetry::metric::SCRAPE_ERRORS, skill_api::telemetry::metric::LEASES_EXPIRED] {
                metrics::counter!(counter).increment(0);
            }
        }
        eprintln!("metrics at http://{listening}/metrics");
        Ok(())
    }
}
