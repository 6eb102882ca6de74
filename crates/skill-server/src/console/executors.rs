//! The executors' sessions (`org.read` or `skills.execute`): who runs calls, what each covers
//! (the entrypoints, origins, MCP endpoints and audiences it last claimed with), when it was last
//! heard of, and how many calls it runs now.

use axum::extract::State;
use axum::response::Response;
use maud::{Markup, html};
use skill_engine::{Engine, EngineError};

use super::layout::{badge, page, rendered, when};
use super::session::Viewer;
use crate::Core;

/// `GET /console/executors`.
pub(super) async fn executors(State(core): State<Core>, viewer: Viewer) -> Response {
    rendered(viewer.frame(), executors_page(&core.engine, &viewer).await)
}

async fn executors_page(engine: &Engine, viewer: &Viewer) -> Result<Markup, EngineError> {
    let sessions = engine.sessions(&viewer.actor, 100).await?;
    let mut names = std::collections::BTreeMap::new();
    for view in &sessions {
        let id = &view.session.principal_id;
        if !names.contains_key(id) {
            let name = engine.principal_name(id).await?;
            names.insert(id.clone(), name);
        }
    }
    let body = html! {
        h1 { "Executors" }
        @if sessions.is_empty() { p.empty { "No executor has opened a session: nothing runs the calls." } }
        @for view in &sessions {
            article.session data-live={ "session-" (view.session.id) } id={ "session-" (view.session.id) } {
                h3 {
                    (names[&view.session.principal_id]) " " (badge(view.session.status))
                    @if view.session.draining { " " span.badge.pending { "stopping" } }
                }
                p.meta {
                    "session " code { (view.session.id) } " · opened " (when(&view.session.created_at))
                    " · heard of " (when(&view.session.heartbeat_at)) " · until " (when(&view.session.expires_at))
                }
                p { "runs " strong { (view.running) } " call" @if view.running != 1 { "s" } " now" }
                dl.fields {
                    dt { "Protocols" } dd { (view.session.capabilities.join(", ")) }
                    @for (names, title) in [(&view.covers.local_entrypoints, "Local entrypoints"), (&view.covers.http_origins, "HTTP origins"), (&view.covers.mcp_endpoints, "MCP endpoints"), (&view.covers.audiences, "Audiences")] {
                        @if !names.is_empty() { dt { (title) } dd { @for name in names { code { (name) } " " } } }
                    }
                }
            }
        }
    };
    Ok(page("Executors", Some(viewer.frame()), body))
}
