//! The operators' queue: the calls that wait, run or failed, newest first, each with why a
//! waiting one waits (no executor covers its implementation, a backoff until a time, held for an
//! approval, or simply queued). An operator (`org.read` or `skills.execute`) sees every call; a
//! caller with only `skills.invoke` sees its own — what the API's listing answers.

use axum::extract::State;
use axum::response::Response;
use maud::{Markup, html};
use skill_api::{InvocationOut, InvocationQuery};
use skill_engine::{Engine, EngineError};

use super::layout::{badge, page, rendered, when};
use super::session::Viewer;
use crate::Core;

/// The statuses the queue shows, with how many of each.
const SHOWN: [(&str, &str, u32); 3] =
    [("pending", "Waiting", 100), ("running", "Running", 100), ("failed", "Failed", 50)];

/// `GET /console/queue`.
pub(super) async fn queue(State(core): State<Core>, viewer: Viewer) -> Response {
    rendered(viewer.frame(), queue_page(&core.engine, &viewer).await)
}

async fn queue_page(engine: &Engine, viewer: &Viewer) -> Result<Markup, EngineError> {
    let mut sections = Vec::new();
    for (status, title, limit) in SHOWN {
        let query = InvocationQuery { status: Some(status.to_owned()), limit: Some(limit), ..Default::default() };
        let page = engine.invocations(&viewer.actor, &query).await?;
        sections.push((status, title, page.items, page.next_cursor.is_some()));
    }
    let everyone = viewer.actor.can("org.read") || viewer.actor.can("skills.execute");
    let body = html! {
        h1 { "Queue" }
        p.meta {
            @if everyone { "Every call of the core." } @else { "Your calls (operators with org.read see every call)." }
        }
        @for (status, title, calls, more) in &sections {
            section id={ "queue-" (status) } data-live={ "queue-" (status) } {
                h2 { (title) " " span.count { (calls.len()) @if *more { "+" } } }
                @if calls.is_empty() { p.empty { "None." } }
                @else {
                    div.scroll {
                        table.calls {
                            thead { tr { th { "Call" } th { "Attempt" } th { "Created" } th { "Why / what" } } }
                            tbody { @for call in calls { (row(call)) } }
                        }
                    }
                }
            }
        }
    };
    Ok(page("Queue", Some(viewer.frame()), body))
}

fn row(call: &InvocationOut) -> Markup {
    html! {
        tr {
            td data-label="Call" {
                a href={ "/console/calls/" (call.id) } { (call.skill.name) "@" (call.skill.version) }
                " " (badge(call.status))
                @if let Some(task) = &call.task_id { br; a.meta href={ "/console/tasks/" (task) } { "its task" } }
            }
            td data-label="Attempt" { (call.attempt) " of " (call.max_attempts) }
            td data-label="Created" { (when(&call.created_at)) }
            td data-label="Why / what" {
                @if let Some(waiting) = &call.waiting {
                    span class={ "badge waiting-" (waiting.reason) } { (waiting.reason) } " " span.why { (waiting.message) }
                } @else if let Some(error) = &call.error {
                    code { (error.code) } " "
                    (error.message)
                } @else if let Some(lease) = &call.lease_expires_at {
                    "leased until " (when(lease))
                }
            }
        }
    }
}
