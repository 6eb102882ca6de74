//! The web console under `/console`, served by the core itself: people decide the approvals of
//! their tasks; operators see the catalog and the queue. Pages are HTML rendered on the server
//! (maud: every interpolation escaped) from the engine's own reads, so a page shows exactly what
//! the API would answer the same principal — the permission checks are the engine's, not copied
//! here. A small script of our own (`assets/console.js`) refreshes live parts of a page; every
//! decision works without it.
//!
//! Sign-in exchanges a personal access token for a session the database keeps
//! (`skill_engine::console`); the cookie holds only its secret and is `HttpOnly`,
//! `SameSite=Strict`, `Secure` when the console is reached over https, and expires with the
//! session. Every form carries the session's CSRF token; a POST without it, or from another
//! origin, changes nothing. Every answer carries a strict Content-Security-Policy (scripts,
//! styles and connections only to the console itself, no framing).

mod agents;
mod assets;
mod call;
mod catalog;
mod costs;
mod decide;
mod decision;
mod executors;
mod facts;
mod forms;
mod history;
mod journal;
mod layout;
mod processes;
mod queue;
mod run;
mod session;
mod sign_in;
mod tasks;
mod work;

use axum::Router;
use axum::extract::Request;
use axum::http::{HeaderValue, header};
use axum::middleware::Next;
use axum::response::Response;
use axum::routing::{get, post};

use crate::Core;

/// How the console is reached.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// The console is reached over https (directly or through a proxy): cookies are `Secure`.
    pub secure_cookies: bool,
    /// The MCP gateway at `/mcp` (its links to the console use the public address).
    pub gateway: skill_gateway::Config,
    /// Where the journal's checkpoints are sent as they are signed.
    pub checkpoints: crate::checkpoints::Sends,
}

/// The console's routes, to nest under `/console`.
pub fn router() -> Router<Core> {
    Router::new()
        .route("/", get(tasks::home))
        .route("/sign-in", get(sign_in::form).post(sign_in::sign_in))
        .route("/sign-out", post(sign_in::sign_out))
        .route("/tasks", get(tasks::list).post(work::create_task))
        .route("/tasks/new", get(work::new_task))
        .route("/tasks/{id}", get(tasks::task))
        .route("/tasks/{id}/draft", post(work::draft))
        .route("/tasks/{id}/approvals", post(work::ask))
        .route("/tasks/{id}/comments", post(work::comment))
        .route("/tasks/{id}/close", post(work::close))
        .route("/approvals/{id}/decide", post(decide::decide))
        .route("/approvals/{id}/retry", post(work::retry))
        .route("/queue", get(queue::queue))
        .route("/calls", get(history::calls))
        .route("/calls/{id}", get(call::call))
        .route("/run", get(run::list))
        .route("/run/{*reference}", get(run::form).post(run::run))
        .route("/catalog", get(catalog::catalog))
        .route("/executors", get(executors::executors))
        .route("/journal", get(journal::journal))
        .route("/agents", get(agents::agents))
        .route("/facts", get(facts::facts))
        .route("/facts/{id}", get(facts::fact))
        .route("/processes", get(processes::instances))
        .route("/processes/{id}", get(processes::instance))
        .route("/processes/{id}/cancel", post(processes::cancel))
        .route("/costs", get(costs::costs))
        .route("/skills/{*reference}", get(catalog::skill))
        .route("/assets/{name}", get(assets::asset))
        .fallback(not_found)
        .layer(axum::middleware::from_fn(headers))
}

/// The Content-Security-Policy of every console answer.
const POLICY: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; \
     connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

/// The security headers of every console answer; pages are never cached.
async fn headers(request: Request, next: Next) -> Response {
    let is_asset = request.uri().path().starts_with("/console/assets/");
    let mut response = next.run(request).await;
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_SECURITY_POLICY, HeaderValue::from_static(POLICY));
    headers.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    headers.insert(header::REFERRER_POLICY, HeaderValue::from_static("same-origin"));
    if !is_asset {
        headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    }
    response
}

/// Any console path that is not a page (with the navigation when someone is signed in).
async fn not_found(axum::extract::State(core): axum::extract::State<Core>, request: Request) -> Response {
    let (mut parts, _) = request.into_parts();
    let viewer =
        <session::Viewer as axum::extract::FromRequestParts<Core>>::from_request_parts(&mut parts, &core).await.ok();
    let body =
        maud::html! { h1 { "Not found" } p { "There is no such page." } p { a href="/console/tasks" { "Tasks" } } };
    layout::answer(
        axum::http::StatusCode::NOT_FOUND,
        layout::page("Not found", viewer.as_ref().map(session::Viewer::frame), body),
    )
}
