//! The exporter: spans batched and sent as OTLP/HTTP protobuf by a background thread, on only
//! when an endpoint is set. The standard variables configure it: `OTEL_EXPORTER_OTLP_ENDPOINT`
//! (or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`), `OTEL_EXPORTER_OTLP_HEADERS`, `OTEL_SERVICE_NAME`,
//! `OTEL_RESOURCE_ATTRIBUTES`, `OTEL_TRACES_SAMPLER` (and `…_ARG`), `OTEL_BSP_*`;
//! `OTEL_SDK_DISABLED=true` or `OTEL_TRACES_EXPORTER=none` keep it off.

use std::time::Duration;

use opentelemetry::trace::TracerProvider as _;
use opentelemetry_http::{Bytes, HttpClient, HttpError, Request, Response};
use opentelemetry_otlp::{WithExportConfig as _, WithHttpConfig as _};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::trace::SdkTracerProvider;
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

impl Traces {
    /// Sends what is batched now.
    pub fn flush(&self) {
        if let Err(error) = self.provider.force_flush() {
            tracing::warn!(%error, "the batched spans could not be sent");
        }
    }
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

/// When traces are asked for, the layer that turns `tracing` spans into exported ones, and the
/// guard that keeps the exporter running. `service` names the process unless
/// `OTEL_SERVICE_NAME` (or `service.name` in `OTEL_RESOURCE_ATTRIBUTES`) does. A setting the
/// exporter cannot use is an error that says which.
pub fn install<S>(service: &str) -> Result<Option<(Exported<S>, Traces)>, String>
where
    S: Subscriber + for<'span> LookupSpan<'span> + Send + Sync,
{
    if !wanted() {
        return Ok(None);
    }
    if let Some(protocol) = set("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL").or_else(|| set("OTEL_EXPORTER_OTLP_PROTOCOL"))
        && protocol != "http/protobuf"
    {
        return Err(format!(
            "OTEL_EXPORTER_OTLP_PROTOCOL is {protocol:?}: only \"http/protobuf\" is supported (point it at the \
             collector's OTLP/HTTP port, usually 4318)"
        ));
    }
    let timeout = export_timeout();
    let exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_timeout(timeout)
        .with_http_client(Blocking::new(timeout)?)
        .build()
        .map_err(|error| format!("the trace exporter cannot start: {error}"))?;
    let named = set("OTEL_SERVICE_NAME").is_some()
        || set("OTEL_RESOURCE_ATTRIBUTES").is_some_and(|attributes| attributes.contains("service.name="));
    let resource = if named {
        Resource::builder().build()
    } else {
        Resource::builder().with_service_name(service.to_owned()).build()
    };
    let provider = SdkTracerProvider::builder().with_resource(resource).with_batch_exporter(exporter).build();
    let tracer = provider.tracer(service.to_owned());
    let layer = tracing_opentelemetry::layer()
        .with_tracer(tracer)
        .with_location(false)
        .with_threads(false)
        .with_target(false)
        .with_level(false)
        .with_tracked_inactivity(false);
    crate::context::enable();
    Ok(Some((Box::new(layer), Traces { provider })))
}

/// The exporter's HTTP client: reqwest's blocking one, since the batch runs on a thread of its
/// own outside any runtime.
#[derive(Debug)]
struct Blocking(reqwest::blocking::Client);

impl Blocking {
    /// Built on a thread of its own: the blocking client must not be made inside a runtime.
    fn new(timeout: Duration) -> Result<Self, String> {
        std::thread::spawn(move || reqwest::blocking::Client::builder().timeout(timeout).build())
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
