//! Prometheus metrics, the same way in every binary: [`install`] makes the process's recorder
//! (the `metrics` facade records into it from any crate), [`serve`] answers `GET /metrics` on an
//! address of its own (`--metrics-listen`: a scrape port operators keep inside their network,
//! apart from the API), and [`count_requests`] with [`route_template`] counts a router's requests
//! by the template of the route that answered, never by the path a client sent. Nothing is
//! installed unless a binary asks: then every recording is a no-op.

use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

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

/// What a scrape answers: the gauges read by its [`Refresh`] first — at most once every
/// [`REFRESH_EVERY`], one read at a time, and waited for at most [`REFRESH_WITHIN`] — then the
/// recorder's text.
struct Scraper {
    handle: PrometheusHandle,
    refresh: Option<Refresh>,
    last: tokio::sync::Mutex<Option<tokio::time::Instant>>,
    /// A read runs (on a task of its own, so a scrape that stops waiting does not cut it short).
    reading: Arc<AtomicBool>,
}

impl Scraper {
    fn new(handle: PrometheusHandle, refresh: Option<Refresh>) -> Self {
        Self { handle, refresh, last: tokio::sync::Mutex::default(), reading: Arc::default() }
    }

    async fn render(&self) -> String {
        if let Some(refresh) = &self.refresh {
            // `last`: when the last read started.
            let mut last = self.last.lock().await;
            if last.is_none_or(|at| at.elapsed() >= REFRESH_EVERY) {
                if self.reading.swap(true, Ordering::AcqRel) {
                    // The last read still runs: the gauges keep their values, and a read past its
                    // bound (a slow database) counts at each scrape it holds back.
                    if last.is_some_and(|at| at.elapsed() >= REFRESH_WITHIN) {
                        tracing::warn!(
                            "the metrics' last read of the database still runs, past its 5 s: a scrape error"
                        );
                        count_scrape_error();
                    }
                } else {
                    *last = Some(tokio::time::Instant::now());
                    let (refresh, done) = (Arc::clone(refresh), Done(Arc::clone(&self.reading)));
                    let read = tokio::spawn(async move {
                        refresh().await;
                        drop(done);
                    });
                    if tokio::time::timeout(REFRESH_WITHIN, read).await.is_err() {
                        tracing::warn!("the metrics' read of the database took more than 5 s: a scrape error");
                        count_scrape_error();
                    }
                }
            }
        }
        self.handle.run_upkeep();
        self.handle.render()
    }
}

/// Clears a [`Scraper`]'s `reading` when its read ends, whether it returned or panicked.
struct Done(Arc<AtomicBool>);

impl Drop for Done {
    fn drop(&mut self) {
        self.0.store(false, Ordering::Release);
    }
}

/// Serves `GET /metrics` (the Prometheus text format) on `listener` until the process ends,
/// reading `refresh` first (see [`Scraper`]); another path is a 404.
pub async fn serve(listener: TcpListener, handle: PrometheusHandle, refresh: Option<Refresh>) {
    let scraper = Arc::new(Scraper::new(handle, refresh));
    let app = axum::Router::new().route(
        "/metrics",
        axum::routing::get(move || {
            let scraper = Arc::clone(&scraper);
            async move {
                let text = scraper.render().await;
                ([(axum::http::header::CONTENT_TYPE, "text/plain; version=0.0.4; charset=utf-8")], text).into_response()
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

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicUsize;

    use super::*;

    /// A scraper whose reads count themselves and then take `each`.
    fn slow(each: Duration) -> (Scraper, Arc<AtomicUsize>) {
        let reads = Arc::new(AtomicUsize::new(0));
        let counted = Arc::clone(&reads);
        let refresh: Refresh = Arc::new(move || {
            counted.fetch_add(1, Ordering::SeqCst);
            Box::pin(tokio::time::sleep(each))
        });
        let handle = PrometheusBuilder::new().build_recorder().handle();
        (Scraper::new(handle, Some(refresh)), reads)
    }

    #[tokio::test(start_paused = true)]
    async fn a_slow_read_neither_holds_a_scrape_past_its_bound_nor_runs_twice() {
        let (scraper, reads) = slow(Duration::from_secs(60));
        let started = tokio::time::Instant::now();
        scraper.render().await;
        assert_eq!(started.elapsed(), REFRESH_WITHIN, "the scrape answers at its bound");
        // Past the once-a-second spacing, the first read still runs: no second one starts.
        tokio::time::sleep(Duration::from_secs(2)).await;
        let again = tokio::time::Instant::now();
        scraper.render().await;
        assert!(again.elapsed() < Duration::from_millis(1), "no wait for a read that runs already");
        assert_eq!(reads.load(Ordering::SeqCst), 1);
        // Once it ended, the next scrape reads again.
        tokio::time::sleep(Duration::from_secs(60)).await;
        scraper.render().await;
        assert_eq!(reads.load(Ordering::SeqCst), 2);
    }

    #[tokio::test(start_paused = true)]
    async fn scrapes_within_a_second_share_one_read() {
        let (scraper, reads) = slow(Duration::from_millis(10));
        for _ in 0..5 {
            scraper.render().await;
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        assert_eq!(reads.load(Ordering::SeqCst), 1);
        tokio::time::sleep(Duration::from_secs(1)).await;
        scraper.render().await;
        assert_eq!(reads.load(Ordering::SeqCst), 2);
    }
}
