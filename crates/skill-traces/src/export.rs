//! The exporter: spans batched and sent as OTLP/HTTP protobuf by a background thread, on only
//! when an endpoint is set. The standard variables configure it: `OTEL_EXPORTER_OTLP_ENDPOINT`
//! (or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`), `OTEL_EXPORTER_OTLP_HEADERS`, `OTEL_SERVICE_NAME`,
//! `OTEL_RESOURCE_ATTRIBUTES`, `OTEL_TRACES_SAMPLER` (and `…_ARG`), `OTEL_BSP_*` (kept within
//! bounds); `OTEL_SDK_DISABLED=true` or `OTEL_TRACES_EXPORTER=none` keep it off. No redirect is
//! followed, and an endpoint's value is never printed.

use std::time::Duration;

use opentelemetry::trace::TracerProvider as _;
use opentelemetry_http::{Bytes, HttpClient, HttpError, Request, Response};
use opentelemetry_otlp::{WithExportConfig as _, WithHttpConfig as _};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::trace::{BatchConfig, BatchConfigBuilder, BatchSpanProcessor, SdkTracerProvider};
use tracing::Subscriber;
use tracing_subscriber::Layer;
use tracing_subscriber::registry::LookupSpan;

/// The largest answer an export reads from the receiver.
const MAX_ANSWER: u64 = 4 * 1024 * 1024;

/// Keeps the exporter running; dropping it sends what is still batched (within 5 s) and stops.
#[derive(Debug)]
#[must_use = "dropping it stops the export"]
pub struct Traces {
    provider: SdkTracerProvider,
}

impl Drop for Traces {
    fn drop(&mut self) {
        if let Err(error) = self.provider.shutdown_with_timeout(Duration::from_secs(5)) {
            tracing::warn!(%error, "the batched spans could not be sent at the stop");
        }
    }
}

fn set(name: &str) -> Option<String> {
    std::env::var(name).ok().map(|value| value.trim().to_owned()).filter(|value| !value.is_empty())
}

/// Whether the environment asks for traces to be exported.
fn wanted() -> bool {
    let endpoint = set("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT").or_else(|| set("OTEL_EXPORTER_OTLP_ENDPOINT"));
    let disabled = set("OTEL_SDK_DISABLED").is_some_and(|value| value.eq_ignore_ascii_case("true"));
    let none = set("OTEL_TRACES_EXPORTER").is_some_and(|value| value.eq_ignore_ascii_case("none"));
    endpoint.is_some() && !disabled && !none
}

/// The exporter's bound on one export, from `OTEL_EXPORTER_OTLP_TRACES_TIMEOUT` or
/// `OTEL_EXPORTER_OTLP_TIMEOUT` (milliseconds), else 10 s.
fn export_timeout() -> Duration {
    set("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT")
        .or_else(|| set("OTEL_EXPORTER_OTLP_TIMEOUT"))
        .and_then(|ms| ms.parse::<u64>().ok())
        .map_or(Duration::from_secs(10), Duration::from_millis)
}

/// The layer that exports the spans of a subscriber `S`.
pub type Exported<S> = Box<dyn Layer<S> + Send + Sync>;

/// What [`install`] installed: the layer that turns `tracing` spans into exported ones, the
/// guard that keeps the exporter running, and what it had to say about the settings (each a
/// setting it corrected or ignored).
#[allow(missing_debug_implementations)]
pub struct Installed<S> {
    pub layer: Exported<S>,
    pub traces: Traces,
    pub warnings: Vec<String>,
}

/// The first of `names` that is set, with its value.
fn first_set(names: &[&'static str]) -> Option<(&'static str, String)> {
    names.iter().find_map(|name| set(name).map(|value| (*name, value)))
}

/// The batch settings from the `OTEL_BSP_*` variables, kept within bounds a process survives:
/// a queue of at most 65,536 spans (each held until sent), a delay of at least 50 ms.
fn batch(warnings: &mut Vec<String>) -> BatchConfig {
    let mut config = BatchConfigBuilder::default();
    let number = |name: &str| set(name).and_then(|value| value.parse::<u64>().ok());
    if let Some(queue) = number("OTEL_BSP_MAX_QUEUE_SIZE").filter(|queue| !(1..=MAX_QUEUE).contains(queue)) {
        let kept = if queue == 0 { 2_048 } else { MAX_QUEUE };
        warnings.push(format!("OTEL_BSP_MAX_QUEUE_SIZE is {queue}: {kept} spans are queued at most"));
        config = config.with_max_queue_size(kept as usize);
    }
    if number("OTEL_BSP_MAX_EXPORT_BATCH_SIZE") == Some(0) {
        warnings.push("OTEL_BSP_MAX_EXPORT_BATCH_SIZE is 0: batches of 512 spans are sent".to_owned());
        config = config.with_max_export_batch_size(512);
    }
    if let Some(delay) = number("OTEL_BSP_SCHEDULE_DELAY").filter(|delay| *delay < MIN_DELAY_MS) {
        warnings
            .push(format!("OTEL_BSP_SCHEDULE_DELAY is {delay} ms: batches are sent every {MIN_DELAY_MS} ms at most"));
        config = config.with_scheduled_delay(Duration::from_millis(MIN_DELAY_MS));
    }
    config.build()
}

/// The most spans a process queues for export.
const MAX_QUEUE: u64 = 65_536;
/// The shortest wait between two batches.
const MIN_DELAY_MS: u64 = 50;

/// The entries of `OTEL_EXPORTER_OTLP_HEADERS` the exporter would drop, by position (never
/// their values: they hold keys).
fn unusable_headers() -> Vec<String> {
    let Some((name, headers)) = first_set(&["OTEL_EXPORTER_OTLP_TRACES_HEADERS", "OTEL_EXPORTER_OTLP_HEADERS"]) else {
        return Vec::new();
    };
    headers
        .split(',')
        .enumerate()
        .filter(|(_, entry)| {
            let key = entry.split_once('=').map(|(key, _)| key.trim());
            !key.is_some_and(|key| {
                !key.is_empty() && key.bytes().all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b))
            })
        })
        .map(|(n, _)| format!("entry {} of {name} is not `name=value` with a header's name: it is not sent", n + 1))
        .collect()
}

/// `text` with the endpoints' values blanked out (an endpoint may carry a password).
fn redacted(text: &str) -> String {
    let names = ["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT"];
    let values: Vec<(&str, String)> =
        names.iter().filter_map(|name| std::env::var(name).ok().map(|value| (*name, value))).collect();
    redact(text, &values)
}

/// `text` with each of `values` (a variable's name and value) replaced by `<NAME>`.
fn redact(text: &str, values: &[(&str, String)]) -> String {
    let mut text = text.to_owned();
    for (name, value) in values {
        for shown in [value.as_str(), value.trim()].into_iter().filter(|shown| !shown.is_empty()) {
            text = text.replace(shown, &format!("<{name}>"));
        }
    }
    text
}

/// When traces are asked for, what [`Installed`] holds. `service` names the process unless
/// `OTEL_SERVICE_NAME` (or `service.name` in `OTEL_RESOURCE_ATTRIBUTES`) does. A setting the
/// exporter cannot use is an error that says which (never an endpoint's value).
pub fn install<S>(service: &str) -> Result<Option<Installed<S>>, String>
where
    S: Subscriber + for<'span> LookupSpan<'span> + Send + Sync,
{
    if !wanted() {
        return Ok(None);
    }
    let mut warnings = Vec::new();
    if let Some((name, protocol)) = first_set(&["OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL"])
        && protocol != "http/protobuf"
    {
        return Err(format!(
            "{name} is {protocol:?}: only \"http/protobuf\" is supported (point it at the collector's OTLP/HTTP \
             port, usually 4318)"
        ));
    }
    if let Some(exporter) = set("OTEL_TRACES_EXPORTER").filter(|exporter| !exporter.eq_ignore_ascii_case("otlp")) {
        warnings.push(format!("OTEL_TRACES_EXPORTER is {exporter:?}: spans are sent over OTLP (or set it to none)"));
    }
    warnings.extend(unusable_headers());
    let timeout = export_timeout();
    let exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_timeout(timeout)
        .with_http_client(Blocking::new(timeout)?)
        .build()
        .map_err(|error| redacted(&format!("the trace exporter cannot start: {error}")))?;
    let named = set("OTEL_SERVICE_NAME").is_some()
        || set("OTEL_RESOURCE_ATTRIBUTES").is_some_and(|attributes| attributes.contains("service.name="));
    let resource = if named {
        Resource::builder().build()
    } else {
        Resource::builder().with_service_name(service.to_owned()).build()
    };
    let processor = BatchSpanProcessor::builder(exporter).with_batch_config(batch(&mut warnings)).build();
    let provider = SdkTracerProvider::builder().with_resource(resource).with_span_processor(processor).build();
    let tracer = provider.tracer(service.to_owned());
    let layer = tracing_opentelemetry::layer()
        .with_tracer(tracer)
        .with_location(false)
        .with_threads(false)
        .with_target(false)
        .with_level(false)
        .with_tracked_inactivity(false);
    crate::context::enable();
    Ok(Some(Installed { layer: Box::new(layer), traces: Traces { provider }, warnings }))
}

/// The exporter's HTTP client: reqwest's blocking one, since the batch runs on a thread of its
/// own outside any runtime.
#[derive(Debug)]
struct Blocking(reqwest::blocking::Client);

impl Blocking {
    /// Built on a thread of its own: the blocking client must not be made inside a runtime.
    fn new(timeout: Duration) -> Result<Self, String> {
        // No redirect is followed: a collector's answer must not send the spans, and the
        // headers' keys, to another address.
        let build = move || {
            reqwest::blocking::Client::builder().timeout(timeout).redirect(reqwest::redirect::Policy::none()).build()
        };
        std::thread::spawn(build)
            .join()
            .map_err(|_| "the trace exporter's HTTP client could not be built".to_owned())?
            .map(Self)
            .map_err(|error| format!("the trace exporter's HTTP client could not be built: {error}"))
    }
}

#[async_trait::async_trait]
impl HttpClient for Blocking {
    async fn send_bytes(&self, request: Request<Bytes>) -> Result<Response<Bytes>, HttpError> {
        let (parts, body) = request.into_parts();
        let answer =
            self.0.request(parts.method, parts.uri.to_string()).headers(parts.headers).body(body.to_vec()).send()?;
        let status = answer.status();
        let headers = answer.headers().clone();
        let mut bytes = Vec::new();
        std::io::Read::read_to_end(&mut std::io::Read::take(answer, MAX_ANSWER), &mut bytes)?;
        let mut response = Response::builder().status(status).body(Bytes::from(bytes))?;
        *response.headers_mut() = headers;
        Ok(response)
    }
}

#[cfg(test)]
mod tests {
    use std::io::{Read as _, Write as _};

    use super::*;

    /// A server that answers every request with a redirect to `to`, counting what it got.
    fn redirecting(to: &str) -> (String, std::sync::Arc<std::sync::atomic::AtomicUsize>) {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a port");
        let address = listener.local_addr().expect("an address");
        let seen = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let (counted, to) = (std::sync::Arc::clone(&seen), to.to_owned());
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { continue };
                let mut buffer = [0_u8; 4096];
                let _ = stream.read(&mut buffer);
                counted.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                let answer = format!("HTTP/1.1 307 Temporary Redirect\r\nlocation: {to}\r\ncontent-length: 0\r\n\r\n");
                let _ = stream.write_all(answer.as_bytes());
            }
        });
        (format!("http://{address}/v1/traces"), seen)
    }

    #[test]
    fn an_export_never_follows_a_redirect_with_its_keys() {
        let (elsewhere, reached) = redirecting("http://127.0.0.1:9/");
        let (collector, asked) = redirecting(&elsewhere);
        let client = Blocking::new(Duration::from_secs(5)).expect("a client");
        let request = Request::post(collector.as_str())
            .header("x-api-key", "a secret")
            .body(Bytes::from_static(b"spans"))
            .expect("a request");
        let answer = futures::executor::block_on(client.send_bytes(request)).expect("an answer");
        assert_eq!(answer.status().as_u16(), 307);
        assert_eq!(asked.load(std::sync::atomic::Ordering::SeqCst), 1);
        assert_eq!(reached.load(std::sync::atomic::Ordering::SeqCst), 0, "the redirect was followed");
    }

    #[test]
    fn an_endpoint_is_never_shown() {
        let endpoint = ("OTEL_EXPORTER_OTLP_ENDPOINT", " http://user:pw@x/ y".to_owned());
        let shown = redact("invalid endpoint 'http://user:pw@x/ y': invalid uri character", &[endpoint]);
        assert_eq!(shown, "invalid endpoint '<OTEL_EXPORTER_OTLP_ENDPOINT>': invalid uri character");
    }
}
