//! The agents packages installed (`org.read`): each one's kind, package and revision, the
//! permissions and versions its document grants (read-only ones marked), an executor's
//! allow-list, and the requests it has open — each a link to the task a person decides.

use axum::extract::State;
use axum::response::Response;
use maud::{Markup, html};
use skill_api::agent::AgentKind;
use skill_engine::{Engine, EngineError};

use super::layout::{badge, page, rendered, when};
use super::session::Viewer;
use crate::Core;

/// `GET /console/agents`.
pub(super) async fn agents(State(core): State<Core>, viewer: Viewer) -> Response {
    rendered(viewer.frame(), agents_page(&core.engine, &viewer).await)
}

async fn agents_page(engine: &Engine, viewer: &Viewer) -> Result<Markup, EngineError> {
    let agents = engine.agents(&viewer.actor).await?;
    let mut open = Vec::new();
    for agent in &agents {
        open.push(engine.requests_of_agent(&viewer.actor, &agent.key, true, 50).await?);
    }
    let body = html! {
        h1 { "Agents" }
        @if agents.is_empty() {
            p.empty { "No package declared an agent (agents/*.yaml)." }
        }
        @for (agent, requests) in agents.iter().zip(&open) {
            article.agent id={ "agent-" (agent.key) } {
                h3 {
                    (agent.key) " "
                    span.badge { (if agent.kind == AgentKind::Executor { "executor" } else { "agent" }) }
                    @if agent.disabled { " " span.badge.failed { "disabled" } }
                }
                p.meta {
                    @if let Some(package) = &agent.package { "package " code { (package) } " · " }
                    "revision " (agent.revision) " · changed " (when(&agent.updated_at))
                }
                @if let Some(about) = &agent.spec.description { p { (about) } }
                dl.fields {
                    dt { "Permissions" }
                    dd { @for permission in &agent.spec.identity.permissions { code { (permission) } " " } }
                    @if !agent.spec.skills.invoke.is_empty() {
                        dt { "May call" }
                        dd {
                            @for (skill, read_only) in agent.spec.invoked() {
                                a href={ "/console/skills/" (skill) } { code { (skill) } }
                                @if read_only { " (read-only)" }
                                " "
                            }
                        }
                    }
                    @if agent.kind == AgentKind::Executor {
                        dt { "Runs" }
                        dd {
                            (agent.spec.skills.protocols.join(", "))
                            @for entry in agent.spec.skills.local.iter().chain(&agent.spec.skills.http_origins).chain(&agent.spec.skills.mcp_origins) {
                                " " code { (entry) }
                            }
                        }
                    }
                    @if let Some(requests) = &agent.spec.requests {
                        dt { "Its writes" }
                        dd { "become requests in the workspace " code { (requests.workspace) } }
                    }
                }
                @if !requests.is_empty() {
                    h4 { "Open requests" }
                    ul.requests {
                        @for request in requests {
                            li {
                                a href={ "/console/tasks/" (request.task_id) } { code { (request.skill) } }
                                " " (badge(request.status)) " · asked " (when(&request.created_at))
                                " · expires " (when(&request.expires_at))
                                @if !request.client.name.is_empty() { " · through " (request.client.name) }
                            }
                        }
                    }
                }
            }
        }
    };
    Ok(page("Agents", Some(viewer.frame()), body))
}
