//! Prometheus metrics, the same way in every binary: [`install`] makes the process's recorder
//! (the `metrics` facade records into it from any crate), [`serve`] answers `GET /metrics` on an
//! address of its own (`--metrics-listen`: a scrape port operators keep inside their network,
//! apart from the API), and [`count_requests`] with [`route_template`] counts a router's requests
//! by the template of the route that answered, never by the path a client sent. Nothing is
//! installed unless a binary asks: then every recording is a no-op.

use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use axum::extract::{MatchedPath, Request};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};
use skill_api::telemetry::{LATENCY_BUCKETS, label, metric};
use tokio::net::TcpListener;

static HANDLE: OnceLock<PrometheusHandle> = OnceLock::new();

/// Installs the process's recorder (once; later calls answer the first handle), with the
/// binary's `component` on every series and its build info.
///
/// # Errors
/// When another recorder was installed first.
pub fn install(component: &'static str) -> Result<PrometheusHandle, String> {
    if let Some(handle) = HANDLE.get() {
        return Ok(handle.clone());
    }
    let builder = PrometheusBuilder::new()
        .add_global_label(label::COMPONENT, component)
        .set_buckets_for_metric(Matcher::Suffix("_seconds".to_owned()), &LATENCY_BUCKETS)
        .map_err(|error| format!("the metrics' buckets: {error}"))?;
    let recorder = builder.build_recorder();
    let handle = recorder.handle();
    metrics::set_global_recorder(recorder).map_err(|error| format!("installing the metrics recorder: {error}"))?;
    let handle = HANDLE.get_or_init(|| handle).clone();
    metrics::gauge!(metric::BUILD_INFO, label::VERSION => env!("CARGO_PKG_VERSION")).set(1.0);
    Ok(handle)
}

/// Installs the recorder (as `component`), listens on `address` and serves the scrape endpoint
/// there in the background, reading `refresh` first at each scrape; answers the address it
/// listens on (`127.0.0.1:0` picks a port).
///
/// # Errors
/// When another recorder was installed first, or the address cannot be listened on.
pub async fn start(component: &'static str, address: &str, refresh: Option<Refresh>) -> Result<SocketAddr, String> {
    let handle = install(component)?;
    let listener = bind(address).await?;
    let listening = listener.local_addr().map_err(|error| format!("--metrics-listen {address}: {error}"))?;
    tokio::spawn(serve(listener, handle, refresh));
    Ok(listening)
}

/// `router` with its requests counted by route template (see [`count_requests`]).
pub fn counted<S: Clone + Send + Sync + 'static>(router: axum::Router<S>) -> axum::Router<S> {
    router.route_layer(axum::middleware::from_fn(route_template)).layer(axum::middleware::from_fn(count_requests))
}

/// Binds `address` for the scrape endpoint; the error names the address.
///
/// # Errors
/// When the address cannot be listened on.
pub async fn bind(address: &str) -> Result<TcpListener, String> {
    TcpListener::bind(address).await.map_err(|error| format!("--metrics-listen: cannot listen on {address}: {error}"))
}

/// What a scrape reads first (the core's gauges from its database): a future, bounded by
/// [`REFRESH_WITHIN`].
pub type Refresh = Arc<dyn Fn() -> Pin<Box<dyn Future<Output = ()> + Send>> + Send + Sync>;

/// The longest a scrape waits for its [`Refresh`]; then it answers what the gauges last held.
pub const REFRESH_WITHIN: Duration = Duration::from_secs(5);
/// Scrapes closer together than this share one [`Refresh`]: however often the endpoint is
/// asked, the database is read at most once a second.
const REFRESH_EVERY: Duration = Duration::from_secs(1);

/// Serves `GET /metrics` (the Prometheus text format) on `listener` until the process ends,
/// running `refresh` first (at most once a second); anything else is a 404.
pub async fn serve(listener: TcpListener, handle: PrometheusHandle, refresh: Option<Refresh>) {
    let last: Arc<tokio::sync::Mutex<Option<Instant>>> = Arc::default();
    let app = axum::Router::new().route(
        "/metrics",
        axum::routing::get(move || {
            let (handle, refresh, last) = (handle.clone(), refresh.clone(), Arc::clone(&last));
            async move {
                if let Some(refresh) = refresh {
                    let mut last = last.lock().await;
                    if last.is_none_or(|at| at.elapsed() >= REFRESH_EVERY) {
                        if tokio::time::timeout(REFRESH_WITHIN, refresh()).await.is_err() {
                            count_scrape_error();
                        }
                        *last = Some(Instant::now());
                    }
                }
                handle.run_upkeep();
                ([(axum::http::header::CONTENT_TYPE, "text/plain; version=0.0.4; charset=utf-8")], handle.render())
                    .into_response()
            }
        }),
    );
    let address = listener.local_addr().map_or_else(|_| "?".to_owned(), |a: SocketAddr| a.to_string());
    // The bounded server of the API's: header and body deadlines, connections bounded in all and
    // per client, so a slow or greedy client of this port holds nothing for long.
    let limits = crate::Limits { max_connections: 64, max_connections_per_client: 16, ..crate::Limits::default() };
    if let Err(error) = crate::serve(listener, app, limits, std::future::pending()).await {
        tracing::warn!(%address, %error, "the metrics endpoint stopped");
    }
}

/// Where [`route_template`] leaves the matched route's template for [`count_requests`]: on the
/// request, so a middleware in between that answers a new response loses nothing.
#[derive(Debug, Clone, Default)]
struct Template(Arc<OnceLock<MatchedPath>>);

/// A `route_layer` middleware: notes the matched route's template where [`count_requests`] (a
/// `layer`, so it also sees the answers no route gave) reads it.
pub async fn route_template(request: Request, next: Next) -> Response {
    if let (Some(slot), Some(template)) =
        (request.extensions().get::<Template>(), request.extensions().get::<MatchedPath>())
    {
        let _ = slot.0.set(template.clone());
    }
    next.run(request).await
}

/// A `layer` middleware: counts every request by method, route template and status.
pub async fn count_requests(mut request: Request, next: Next) -> Response {
    let method = method_label(request.method());
    let template = Template::default();
    request.extensions_mut().insert(template.clone());
    let response = next.run(request).await;
    let route = template.0.get().map_or("unmatched", MatchedPath::as_str).to_owned();
    let status = response.status().as_u16().to_string();
    metrics::counter!(metric::HTTP_REQUESTS, label::METHOD => method, label::ROUTE => route, label::STATUS => status)
        .increment(1);
    response
}

/// Counts a scrape whose [`Refresh`] could not read what it reads (or not within
/// [`REFRESH_WITHIN`]).
pub fn count_scrape_error() {
    metrics::counter!(metric::SCRAPE_ERRORS).increment(1);
}

/// A method's label: the standard ones by name, anything else `other` (a client picks methods).
fn method_label(method: &axum::http::Method) -> &'static str {
    use axum::http::Method;
    match *method {
        Method::GET => "GET",
        Method::POST => "POST",
        Method::PUT => "PUT",
        Method::PATCH => "PATCH",
        Method::DELETE => "DELETE",
        Method::HEAD => "HEAD",
        Method::OPTIONS => "OPTIONS",
        _ => skill_api::telemetry::OTHER,
    }
}
