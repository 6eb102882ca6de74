//! An invocation's page: what was asked (skill, inputs, who, on what basis), where it is
//! (status, attempt, lease, why it waits), what came of it (output, error, cost, its artifact)
//! and its events, in order — attempts, retries and errors among them.

use axum::extract::{Path, State};
use axum::response::Response;
use maud::{Markup, html};
use skill_api::RequesterKind;
use skill_engine::{Class, Engine, EngineError};

use super::layout::{badge, json, page, rendered, when};
use super::session::Viewer;
use super::tasks::Names;
use crate::Core;

/// `GET /console/calls/{id}`.
pub(super) async fn call(State(core): State<Core>, viewer: Viewer, Path(id): Path<String>) -> Response {
    rendered(viewer.frame(), call_page(&core.engine, &viewer, &id).await)
}

async fn call_page(engine: &Engine, viewer: &Viewer, id: &str) -> Result<Markup, EngineError> {
    let call = engine.invocation(&viewer.actor, id).await?;
    // The journal is the operators' (`org.read`); others see the call without it.
    let events = match engine.events(&viewer.actor, 0, Some(&format!("skill_invocation:{}", call.id)), Some(200)).await
    {
        Ok(events) => Some(events),
        Err(error) if error.class == Class::Forbidden => None,
        Err(error) => return Err(error),
    };
    // What allowed it, from the journal (the operators'), with its entry's proof.
    let provenance = match engine.provenance(&viewer.actor, &call.id).await {
        Ok(provenance) => Some(provenance),
        Err(error) if matches!(error.class, Class::Forbidden | Class::NotFound) => None,
        Err(error) => return Err(error),
    };
    let mut names = Names::new(engine);
    let decider = match provenance.as_ref().and_then(|p| p.decision.as_ref()) {
        Some(decision) => Some(names.of(&decision.decided_by).await?),
        None => None,
    };
    let authority = names.of(&call.authority_principal_id).await?;
    let requester = match call.requested_by.kind.as_str() {
        "principal" => names.of(&call.requested_by.reference).await?,
        _ => call.requested_by.reference.clone(),
    };
    let executor = match &call.executor_principal_id {
        Some(id) => Some(names.of(id).await?),
        None => None,
    };
    // Who set in motion the work its decision authorized (for whoever may read its task).
    let approval_id = match &call.authorization_basis {
        Some(skill_api::Basis::Approval { approval_id, .. } | skill_api::Basis::Process { approval_id, .. }) => {
            Some(approval_id.as_str())
        }
        _ => None,
    };
    let mut set_in_motion = Vec::new();
    if let Some(approval) = approval_id
        && let Ok(approval) = engine.approval(&viewer.actor, approval).await
    {
        for initiator in &approval.initiators {
            let person = names.of(&initiator.person).await?;
            let agent = match &initiator.agent {
                Some(agent) => Some(names.of(agent).await?),
                None => None,
            };
            set_in_motion.push(super::tasks::in_motion(initiator, &person, agent.as_deref()));
        }
    }
    let title = format!("{}@{}", call.skill.name, call.skill.version);
    let body = html! {
        p.crumbs {
            a href="/console/calls" { "Calls" }
            @if let Some(task) = &call.task_id { " · " a href={ "/console/tasks/" (task) } { "its task" } }
        }
        div data-live="call" id="call" {
            h1 { (title) " " (badge(call.status)) }
            @if let Some(waiting) = &call.waiting {
                p.waiting { span class={ "badge waiting-" (waiting.reason) } { (waiting.reason) } " " (waiting.message) }
            }
            dl.fields {
                dt { "Call" } dd { code { (call.id) } }
                dt { "Attempt" } dd { (call.attempt) " of " (call.max_attempts) }
                dt { "Requested by" } dd { (requester) @if call.requested_by.kind != RequesterKind::Principal { " (" (call.requested_by.kind) ")" } }
                dt { "Authority" } dd { (authority) }
                @if !set_in_motion.is_empty() {
                    dt { "Set in motion by" }
                    dd.initiators { @for line in &set_in_motion { span.initiator { (line) } br; } }
                }
                @if let Some(key) = &call.idempotency_key { dt { "Idempotency key" } dd { code { (key) } } }
                @if let Some(trace) = &call.trace_id {
                    dt { "Trace" } dd { code title="the OpenTelemetry trace id: find it in your tracing backend" { (trace) } }
                }
                dt { "Basis" } dd {
                    @match call.authorization_basis.as_ref().and_then(|basis| serde_json::to_value(basis).ok()) { Some(basis) => (json(&basis)), None => "none needed" }
                }
                dt { "Created" } dd { (when(&call.created_at)) }
                dt { "Available" } dd { (when(&call.available_at)) }
                @if let Some(at) = &call.started_at { dt { "Started" } dd { (when(at)) } }
                @if let Some(at) = &call.finished_at { dt { "Finished" } dd { (when(at)) } }
                @if let Some(executor) = &executor {
                    dt { "Executor" } dd {
                        (executor)
                        @if let Some(session) = &call.executor_session_id { " session " code { (session) } }
                        " · fencing token " (call.fencing_token)
                    }
                }
                @if let Some(lease) = &call.lease_expires_at { dt { "Lease until" } dd { (when(lease)) } }
                @if let Some(beat) = &call.heartbeat_at { dt { "Heartbeat" } dd { (when(beat)) } }
                @if let Some(artifact) = &call.artifact_id { dt { "Result artifact" } dd { code { (artifact) } } }
            }
            @if let Some(provenance) = &provenance {
                h2 { "Provenance" }
                dl.fields.provenance {
                    dt { "Journal entry" } dd {
                        @match provenance.index { Some(index) => { "index " (index) }, None => "none" }
                    }
                    @if let (Some(decision), Some(decider)) = (&provenance.decision, &decider) {
                        dt { "Decision" } dd {
                            (decision.outcome) " by " strong.decider { (decider) } " at " (when(&decision.decided_at))
                            " · approval " code { (decision.approval_id) }
                            @if let Some(index) = decision.index { " · entry " (index) }
                        }
                        dt { "With the token" } dd {
                            @match &decision.token_id { Some(token) => code { (token) }, None => "none recorded" }
                        }
                    }
                    dt { "Signed" } dd.inclusion {
                        @match (&provenance.checkpoint, provenance.included) {
                            (Some(checkpoint), true) => {
                                "in the checkpoint of " (checkpoint.size) " entries signed " (when(&checkpoint.signed_at))
                                " (its inclusion proof checked)"
                            }
                            (Some(checkpoint), false) => {
                                "not yet in the latest checkpoint (" (checkpoint.size) " entries, signed " (when(&checkpoint.signed_at)) ")"
                            }
                            (None, _) => "no checkpoint signed yet",
                        }
                        " · " a href="/console/journal" { "the journal" }
                    }
                }
            }
            h2 { "Inputs" } (json(&call.inputs))
            @if let Some(output) = &call.output { h2 { "Output" } (json(output)) }
            @if let Some(error) = &call.error { h2 { "Error" } (json(&serde_json::json!(error))) }
            h2 { "Cost" }
            @match &call.cost { Some(cost) => (json(cost)), None => p.empty { "Nothing reported." } }
            @if let Some(events) = &events {
                h2 { "Events" }
                ol.events {
                    @for event in events {
                        li { (when(&event.created_at)) " " strong { (event.kind) } (json(&event.data)) }
                    }
                }
            }
        }
    };
    Ok(page(&title, Some(viewer.frame()), body))
}
