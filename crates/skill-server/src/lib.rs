//! The core's server: the HTTP API of the skill catalog over a store (SQLite or PostgreSQL), the
//! console, the health routes and the journal's checkpoints — what `skill-core serve` and
//! `skill-core dev` run.
//!
//! | what | where |
//! |---|---|
//! | the router, built from `skill_api::operations::OPERATIONS` | [`api::router`] |
//! | the whole application | [`app`] |
//! | serving with a graceful stop, and the lease sweep | [`serve`] |

pub mod api;
pub mod checkpoints;
pub mod console;
mod metrics_arg;
mod passes;

pub use metrics_arg::MetricsArg;

use axum::Router;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use skill_api::Code;
use skill_api::Health;
use skill_engine::Engine;
use tokio_util::sync::CancellationToken;

/// What every handler shares.
#[derive(Debug, Clone)]
pub struct Core {
    pub engine: Engine,
    pub console: console::Options,
    /// One package test at a time on a core (`POST /packages:test`): a run takes the CPU.
    pub package_tests: std::sync::Arc<tokio::sync::Semaphore>,
}

/// The application: `/api/v1/…`, `/healthz` (the process answers), `/readyz` (the database
/// answers too) and `/.well-known/jwks.json` (the audience tokens' keys), with request ids and the
/// error envelope.
pub fn app(engine: Engine) -> Router {
    app_with(engine, console::Options::default())
}

/// [`app`] with the console's `/console` reached as `console` says.
pub fn app_with(engine: Engine, console: console::Options) -> Router {
    let gateway = skill_gateway::router(engine.clone(), console.gateway.clone(), CancellationToken::new());
    let core = Core { engine, console, package_tests: std::sync::Arc::new(tokio::sync::Semaphore::new(1)) };
    let app = Router::new()
        .merge(gateway)
        .nest("/api/v1", api::router())
        .nest("/console", console::router())
        .route("/", get(root))
        .route("/healthz", get(|| async { axum::Json(Health { status: "ok".to_owned() }) }))
        .route("/readyz", get(ready))
        .route("/.well-known/jwks.json", get(jwks))
        .fallback(|uri: axum::http::Uri| async move {
            api::plumbing::Failure(
                skill_engine::EngineError::new(
                    skill_engine::Class::NotFound,
                    Code::NotFound,
                    "no such route: the API is under /api/v1 and /api/v1/openapi.json lists it",
                )
                .with("route", uri.path()),
            )
        })
        .route_layer(axum::middleware::from_fn(skill_http::requests::route))
        .layer(axum::middleware::from_fn(api::plumbing::envelope))
        .layer(axum::middleware::from_fn_with_state(core.clone(), api::idempotency::layer))
        .layer(axum::middleware::from_fn(skill_http::requests::log));
    skill_http::metrics::counted(app).with_state(core)
}

/// `GET /`: a browser goes to the console; anything else learns where the API is.
async fn root(headers: axum::http::HeaderMap) -> Response {
    let browser = headers
        .get(axum::http::header::ACCEPT)
        .and_then(|accept| accept.to_str().ok())
        .is_some_and(|accept| accept.contains("text/html"));
    if browser {
        return axum::response::Redirect::to("/console").into_response();
    }
    api::plumbing::Failure(
        skill_engine::EngineError::new(
            skill_engine::Class::NotFound,
            Code::NotFound,
            "this is a skills core: the API is under /api/v1 (/api/v1/openapi.json lists it), the console at /console",
        )
        .with("route", "/"),
    )
    .into_response()
}

/// The public keys of the audience tokens (no token needed: hosts fetch it to verify them).
async fn jwks(State(core): State<Core>) -> Response {
    match core.engine.jwks().await {
        Ok(keys) => {
            let mut response = axum::Json(keys).into_response();
            response
                .headers_mut()
                .insert(axum::http::header::CACHE_CONTROL, axum::http::HeaderValue::from_static("max-age=300"));
            response
        }
        Err(error) => api::plumbing::Failure(error).into_response(),
    }
}

async fn ready(State(core): State<Core>) -> Response {
    match core.engine.store().ping().await {
        Ok(()) => axum::Json(Health { status: "ready".to_owned() }).into_response(),
        Err(error) => {
            tracing::warn!(%error, "the database does not answer");
            (StatusCode::SERVICE_UNAVAILABLE, axum::Json(Health { status: "unavailable".to_owned() })).into_response()
        }
    }
}

/// Serves `engine` on `listener` within `limits` until SIGTERM or SIGINT, then finishes the
/// requests in flight (see [`skill_http::serve`]). The lease sweep runs beside it.
pub async fn serve(
    engine: Engine,
    listener: tokio::net::TcpListener,
    limits: skill_http::Limits,
) -> std::io::Result<()> {
    serve_until(engine, listener, limits, skill_http::stop_signal()).await
}

/// [`serve`] until `stop` resolves.
pub async fn serve_until(
    engine: Engine,
    listener: tokio::net::TcpListener,
    limits: skill_http::Limits,
    stop: impl std::future::Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    serve_with(engine, listener, limits, console::Options::default(), stop).await
}

/// [`serve_until`] with the console reached as `console` says.
pub async fn serve_with(
    engine: Engine,
    listener: tokio::net::TcpListener,
    limits: skill_http::Limits,
    console: console::Options,
    stop: impl std::future::Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    // A loopback page is the gateway's caller only when served from the core's own port.
    let mut console = console;
    if console.gateway.listen_port.is_none() {
        console.gateway.listen_port = Some(listener.local_addr()?.port());
    }
    let sweep = tokio::spawn(sweep_leases(engine.clone()));
    let work = tokio::spawn(carry_out_work(engine.clone()));
    let rules = tokio::spawn(evaluate_rules(engine.clone()));
    let processes = tokio::spawn(advance_processes(engine.clone()));
    let checkpoints = tokio::spawn(checkpoints::sign_checkpoints(engine.clone(), console.checkpoints.clone()));
    // On PostgreSQL, a call queued through another core wakes this one's waiting claims.
    let listening = engine.listen_to_other_cores().await.unwrap_or_else(|error| {
        tracing::warn!(error = %error, "cannot listen for other cores' calls; waiting claims look on their own");
        None
    });
    let served = skill_http::serve(listener, app_with(engine, console), limits, stop).await;
    sweep.abort();
    work.abort();
    rules.abort();
    processes.abort();
    checkpoints.abort();
    if let Some(listening) = listening {
        listening.abort();
    }
    served
}

/// Carries out the work the core does itself, beside the server: the outcomes of decided
/// approvals and the executions of tasks, every [`SWEEP_EVERY`] or as soon as a decision queues
/// actions. Like the sweep, it holds nothing authoritative: any number of cores run it, and a
/// killed one loses nothing.
async fn carry_out_work(engine: Engine) {
    loop {
        engine.outcomes_due(SWEEP_EVERY).await;
        let now = engine.now();
        let started = std::time::Instant::now();
        let ran = engine.run_outcomes(now).await;
        passes::ended("outcomes", started, ran.is_ok());
        if let Err(error) = ran {
            tracing::warn!(error = %error, "carrying out approval outcomes failed; it runs again shortly");
        }
        let started = std::time::Instant::now();
        let ran = engine.run_executions(now).await;
        passes::ended("executions", started, ran.is_ok());
        if let Err(error) = ran {
            tracing::warn!(error = %error, "carrying out task executions failed; it runs again shortly");
        }
        let started = std::time::Instant::now();
        let ran = engine.run_agent_requests(now).await;
        passes::ended("agent_requests", started, ran.is_ok());
        if let Err(error) = ran {
            tracing::warn!(error = %error, "advancing agents' requests failed; it runs again shortly");
        }
    }
}

/// Evaluates facts with the work rules, woken when a fact is recorded or a rule's call ends
/// through this core, and at least every [`SWEEP_EVERY`] (facts and calls of other cores).
/// Nothing here is authoritative: any number of cores evaluate, none a fact twice.
async fn evaluate_rules(engine: Engine) {
    loop {
        engine.rules_due(SWEEP_EVERY).await;
        loop {
            let started = std::time::Instant::now();
            let ran = engine.run_rule_evaluations(engine.now()).await;
            passes::ended("rules", started, ran.is_ok());
            match ran {
                // Work moved: there may be more right behind it.
                Ok(moved) if moved > 0 => {}
                Ok(_) => break,
                Err(error) => {
                    tracing::warn!(error = %error, "evaluating facts failed; it runs again shortly");
                    break;
                }
            }
        }
    }
}

/// Advances process instances, woken when an instance starts, a process's call ends or a fact
/// is recorded through this core, and at least every [`SWEEP_EVERY`] (timers, tasks closed,
/// calls and facts of other cores). Nothing here is authoritative: any number of cores advance
/// instances, none a step twice.
async fn advance_processes(engine: Engine) {
    loop {
        engine.processes_due(SWEEP_EVERY).await;
        loop {
            let started = std::time::Instant::now();
            let ran = engine.run_processes(engine.now()).await;
            passes::ended("processes", started, ran.is_ok());
            match ran {
                // Work moved: there may be more right behind it.
                Ok(moved) if moved > 0 => {}
                Ok(_) => break,
                Err(error) => {
                    tracing::warn!(error = %error, "advancing process instances failed; it runs again shortly");
                    break;
                }
            }
        }
    }
}

/// How often the sweep looks for calls whose lease (or session) ended.
pub const SWEEP_EVERY: std::time::Duration = std::time::Duration::from_secs(1);

/// Ends expired leases every [`SWEEP_EVERY`] (claims also do it as they come), so a call whose
/// executor died goes back to the queue, or fails when no attempt remains, even when nobody
/// claims; and once a minute deletes expired `Idempotency-Key` records. Nothing here is authoritative: any number of cores sweep the same database, and a
/// killed sweep loses nothing.
async fn sweep_leases(engine: Engine) {
    let mut tick = tokio::time::interval(SWEEP_EVERY);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    for round in 0u64.. {
        tick.tick().await;
        let started = std::time::Instant::now();
        let ran = engine.expire_leases(engine.now()).await;
        passes::ended("leases", started, ran.is_ok());
        match ran {
            Ok(0) => {}
            Ok(handled) => tracing::info!(handled, "leases expired"),
            Err(error) => tracing::warn!(error = %error, "the lease sweep failed; it runs again shortly"),
        }
        // Once a minute: the Idempotency-Key answers past their day.
        if round % 60 == 0
            && let Err(error) = engine.purge_keyed().await
        {
            tracing::warn!(error = %error, "purging expired Idempotency-Keys failed; it runs again in a minute");
        }
    }
}
