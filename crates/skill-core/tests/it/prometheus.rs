//! A real Prometheus server (Debian's, the test command installs it and names it in
//! `SKILL_TEST_PROMETHEUS`) scraping the given targets every second, queried over its HTTP API.

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;
use skill_fixtures::Scratch;

pub(crate) struct Prometheus {
    child: Child,
    pub(crate) url: String,
    http: reqwest::Client,
    _folder: Scratch,
}

impl Prometheus {
    /// Starts Prometheus scraping `targets` (`host:port`, their `/metrics`) every second, once
    /// it is ready.
    pub(crate) async fn start(targets: &[String]) -> Self {
        let binary = std::env::var("SKILL_TEST_PROMETHEUS")
            .expect("SKILL_TEST_PROMETHEUS names Prometheus's program; `cargo xtask test -p skill-core` installs it");
        let folder = Scratch::new("skill-core-prometheus");
        let listed: Vec<String> = targets.iter().map(|target| format!("'{target}'")).collect();
        let config = format!(
            "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n  evaluation_interval: 1s\nscrape_configs:\n  - job_name: skills\n    static_configs:\n      - targets: [{}]\n",
            listed.join(", ")
        );
        folder.write("prometheus.yml", &config);
        let port = std::net::TcpListener::bind("127.0.0.1:0").expect("a port").local_addr().expect("address").port();
        let child = Command::new(binary)
            .arg(format!("--config.file={}", folder.path().join("prometheus.yml").display()))
            .arg(format!("--storage.tsdb.path={}", folder.path().join("data").display()))
            .arg(format!("--web.listen-address=127.0.0.1:{port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("Prometheus starts");
        let prometheus =
            Self { child, url: format!("http://127.0.0.1:{port}"), http: reqwest::Client::new(), _folder: folder };
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let ready = prometheus.http.get(format!("{}/-/ready", prometheus.url)).send().await;
            if ready.is_ok_and(|answer| answer.status().is_success()) {
                return prometheus;
            }
            assert!(Instant::now() < deadline, "Prometheus was not ready within 30 s");
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    /// The samples of an instant query: each series's labels and value.
    pub(crate) async fn query(&self, promql: &str) -> Vec<(Value, f64)> {
        let answer = self
            .http
            .post(format!("{}/api/v1/query", self.url))
            .header("content-type", "application/x-www-form-urlencoded")
            .body(format!("query={}", encoded(promql)))
            .send()
            .await
            .expect("Prometheus answers");
        let body: Value = answer.json().await.expect("JSON");
        assert_eq!(body["status"], "success", "{promql}: {body}");
        body["data"]["result"]
            .as_array()
            .expect("a vector")
            .iter()
            .map(|sample| {
                let value = sample["value"][1].as_str().and_then(|v| v.parse().ok()).expect("a number");
                (sample["metric"].clone(), value)
            })
            .collect()
    }

    /// The one value of `promql` once `holds` of it (within `seconds`).
    pub(crate) async fn until(&self, promql: &str, seconds: u64, holds: impl Fn(f64) -> bool) -> f64 {
        let deadline = Instant::now() + Duration::from_secs(seconds);
        loop {
            let samples = self.query(promql).await;
            if let [(_, value)] = samples[..]
                && holds(value)
            {
                return value;
            }
            assert!(Instant::now() < deadline, "{promql} never held within {seconds} s: {samples:?}");
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
    }
}

/// `text` as a form value: everything but unreserved characters percent-encoded.
fn encoded(text: &str) -> String {
    text.bytes()
        .map(|byte| match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => (byte as char).to_string(),
            _ => format!("%{byte:02X}"),
        })
        .collect()
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
