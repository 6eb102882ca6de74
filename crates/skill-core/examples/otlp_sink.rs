//! The other end of the P14 benchmark (`cargo xtask bench core`): an OTLP/HTTP receiver that
//! decodes every export it gets (`POST /v1/traces`, protobuf) and counts its spans, and a
//! Prometheus-like scraper that reads each `--scrape` URL once a second. Its figures are
//! written to `--figures` as JSON after every change:
//!
//! ```text
//! otlp_sink --figures sink.json --scrape http://127.0.0.1:9464/metrics
//! ```
//!
//! It prints `receiving on http://ADDR` on stderr once it listens.

#![allow(clippy::print_stderr)]

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use prost::Message as _;
use serde_json::json;

#[derive(Debug, Default)]
struct Figures {
    exports: u64,
    spans: u64,
    bytes: u64,
    refused: u64,
    scrapes: u64,
    scrape_failures: u64,
}

#[derive(Debug)]
struct Sink {
    figures: Mutex<Figures>,
    path: PathBuf,
}

impl Sink {
    fn change(&self, change: impl FnOnce(&mut Figures)) {
        let mut figures = self.figures.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        change(&mut figures);
        let text = json!({"exports": figures.exports, "spans": figures.spans, "bytes": figures.bytes,
                          "refused": figures.refused, "scrapes": figures.scrapes,
                          "scrapeFailures": figures.scrape_failures});
        if let Err(error) = std::fs::write(&self.path, text.to_string()) {
            eprintln!("cannot write {}: {error}", self.path.display());
        }
    }
}

fn main() {
    let mut path = PathBuf::from("otlp-sink.json");
    let mut scrapes = Vec::new();
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match (arg.as_str(), args.next()) {
            ("--figures", Some(value)) => path = PathBuf::from(value),
            ("--scrape", Some(value)) => scrapes.push(value),
            _ => {
                eprintln!("usage: otlp_sink --figures FILE [--scrape URL]...");
                std::process::exit(2);
            }
        }
    }
    let sink = Arc::new(Sink { figures: Mutex::default(), path });
    sink.change(|_| {});
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build();
    let Ok(runtime) = runtime else {
        eprintln!("cannot start a runtime");
        std::process::exit(1);
    };
    runtime.block_on(async move {
        let receiving = Arc::clone(&sink);
        let export = move |body: axum::body::Bytes| {
            let sink = Arc::clone(&receiving);
            async move {
                let size = body.len() as u64;
                match ExportTraceServiceRequest::decode(body) {
                    Ok(request) => {
                        let spans: usize = request
                            .resource_spans
                            .iter()
                            .flat_map(|resource| &resource.scope_spans)
                            .map(|scope| scope.spans.len())
                            .sum();
                        sink.change(|f| {
                            f.exports += 1;
                            f.spans += spans as u64;
                            f.bytes += size;
                        });
                        (axum::http::StatusCode::OK, [("content-type", "application/x-protobuf")])
                    }
                    Err(_) => {
                        sink.change(|f| f.refused += 1);
                        (axum::http::StatusCode::BAD_REQUEST, [("content-type", "application/x-protobuf")])
                    }
                }
            }
        };
        let app = axum::Router::new().route("/v1/traces", axum::routing::post(export));
        let listener = match tokio::net::TcpListener::bind("127.0.0.1:0").await {
            Ok(listener) => listener,
            Err(error) => {
                eprintln!("cannot listen: {error}");
                std::process::exit(1);
            }
        };
        let address = listener.local_addr().map(|a| a.to_string()).unwrap_or_default();
        eprintln!("receiving on http://{address}");
        let client = reqwest::Client::new();
        let scraping = Arc::clone(&sink);
        tokio::spawn(async move {
            let mut every = tokio::time::interval(Duration::from_secs(1));
            loop {
                every.tick().await;
                for url in &scrapes {
                    let read = client.get(url).timeout(Duration::from_secs(5)).send().await;
                    let ok = match read {
                        Ok(answer) if answer.status().is_success() => answer.bytes().await.is_ok(),
                        _ => false,
                    };
                    scraping.change(|f| if ok { f.scrapes += 1 } else { f.scrape_failures += 1 });
                }
            }
        });
        if let Err(error) = axum::serve(listener, app).await {
            eprintln!("the receiver stopped: {error}");
        }
    });
}
