//! Processes (`tasks.read`): a workspace's instances, newest first; an instance's page — its
//! steps as a timeline (each call with its status and output, the task it waits for, the timer and
//! when it fires), its variables, and, for who may (`tasks.write`), cancelling it with a reason.

use axum::extract::{Path, Query, State};
use axum::response::Response;
use maud::{Markup, html};
use serde::Deserialize;
use skill_api::{CancelInstanceRequest, InstanceOut, InstanceQuery, InstanceStatus, InstanceStepsQuery, StepOut};
use skill_engine::{Engine, EngineError};

use super::layout::{badge, capped_json, page, rendered, when};
use super::session::Viewer;
use super::work::Posted;
use crate::Core;

/// How much of a step's output or the variables a page shows.
const SHOWN_CHARS: usize = 4_000;

#[derive(Debug, Deserialize)]
pub(super) struct Listing {
    workspace: Option<String>,
    cursor: Option<String>,
}

/// `GET /console/processes`.
pub(super) async fn instances(State(core): State<Core>, viewer: Viewer, Query(listing): Query<Listing>) -> Response {
    rendered(viewer.frame(), instances_page(&core.engine, &viewer, &listing).await)
}

async fn instances_page(engine: &Engine, viewer: &Viewer, listing: &Listing) -> Result<Markup, EngineError> {
    let readable = engine.workspaces_where(&viewer.actor, "tasks.read").await?;
    let Some(workspace) = listing.workspace.clone().or_else(|| readable.first().map(|w| w.key.clone())) else {
        let body = html! {
            h1 { "Processes" }
            p.empty { "You read the work of no workspace (tasks.read)." }
        };
        return Ok(page("Processes", Some(viewer.frame()), body));
    };
    let query = InstanceQuery {
        workspace: workspace.clone(),
        limit: Some(50),
        cursor: listing.cursor.clone(),
        ..Default::default()
    };
    let found = engine.instances(&viewer.actor, &query).await?;
    let body = html! {
        h1 { "Processes" }
        @if readable.len() > 1 {
            p.crumbs {
                @for w in &readable {
                    @if w.key == workspace { strong { (w.key) } } @else { a href={ "/console/processes?workspace=" (w.key) } { (w.key) } }
                    " "
                }
            }
        }
        p.meta { "The process instances of the workspace " code { (workspace) } ", newest first (docs/processes.md)." }
        @if found.items.is_empty() { p.empty { "No instance yet." } }
        @if !found.items.is_empty() {
            table.list {
                thead { tr { th { "Process" } th { "Key" } th { "Status" } th { "At" } th { "Started" } } }
                tbody {
                    @for instance in &found.items {
                        tr {
                            td data-label="Process" { code { (instance.process) } }
                            td data-label="Key" { a href={ "/console/processes/" (instance.id) } { (instance.key) } }
                            td data-label="Status" { (badge(instance.status)) }
                            td data-label="At" { (instance.step.as_deref().unwrap_or("")) }
                            td data-label="Started" { (when(&instance.created_at)) }
                        }
                    }
                }
            }
        }
        @if let Some(next) = &found.next_cursor {
            p { a href={ "/console/processes?workspace=" (workspace) "&cursor=" (next) } { "Older instances" } }
        }
    };
    Ok(page("Processes", Some(viewer.frame()), body))
}

/// Which page of an instance's steps.
#[derive(Debug, Deserialize)]
pub(super) struct StepsPage {
    #[serde(rename = "stepsAfter")]
    steps_after: Option<i32>,
}

/// `GET /console/processes/{id}`.
pub(super) async fn instance(
    State(core): State<Core>,
    viewer: Viewer,
    Path(id): Path<String>,
    Query(steps): Query<StepsPage>,
) -> Response {
    rendered(viewer.frame(), instance_page(&core.engine, &viewer, &id, steps.steps_after).await)
}

async fn instance_page(
    engine: &Engine,
    viewer: &Viewer,
    id: &str,
    steps_after: Option<i32>,
) -> Result<Markup, EngineError> {
    let query = InstanceStepsQuery { steps_after, steps_limit: None };
    let instance = engine.instance(&viewer.actor, id, &query).await?;
    let title = format!("{} {}", instance.process, instance.key);
    let body = html! {
        p.crumbs { a href="/console/processes" { "Processes" } " / " (instance.process) }
        h1 { code { (instance.process) } " " (instance.key) " " (badge(instance.status)) }
        p.meta {
            "started " (when(&instance.created_at))
            @if let Some(ended) = &instance.ended_at { " · ended " (when(ended)) }
            @if let Some(step) = &instance.step { " · at " code { (step) } }
            @if let Some(wake) = &instance.wake_at { " · looks again " (when(wake)) }
        }
        @if let Some(error) = &instance.error {
            p.error { code { (error.code) } " " (error.message) }
        }
        section #steps {
            h2 { "Steps" }
            @if steps_after.is_some_and(|after| after > 0) {
                p { a href={ "/console/processes/" (instance.id) } { "The first steps" } }
            }
            ol.timeline start=[instance.steps.first().map(|step| step.seq)] { @for step in &instance.steps { (step_item(step)) } }
            @if let Some(next) = instance.steps_next {
                p { a href={ "/console/processes/" (instance.id) "?stepsAfter=" (next) } { "Later steps" } }
            }
        }
        section #vars { h2 { "Variables" } (capped_json(&instance.vars, SHOWN_CHARS)) }
        section #input { h2 { "Input" } (capped_json(&instance.input, SHOWN_CHARS)) }
        (cancel_form(viewer, &instance))
    };
    Ok(page(&title, Some(viewer.frame()), body))
}

/// One run of a step: what it did, and what it waits for while open.
fn step_item(step: &StepOut) -> Markup {
    html! {
        li.step id={ "step-" (step.id) } {
            strong { code { (step.step) } } " " (step.action) " " (badge(step.status))
            @if step.attempt > 1 { " · attempt " (step.attempt) }
            " · " (when(&step.started_at))
            @if let Some(call) = &step.invocation_id { " · " a href={ "/console/calls/" (call) } { "the call" } }
            @if let Some(task) = &step.task_id { " · " a href={ "/console/tasks/" (task) } { "the task" } }
            @if let Some(fact) = &step.fact_id { " · " a href={ "/console/facts/" (fact) } { "the fact" } }
            @if let Some(wake) = &step.wake_at { @if step.status == skill_api::StepStatus::Open { " · fires " (when(wake)) } }
            @if let Some(error) = &step.error {
                p.error { code { (error.code) } " " (error.message) }
            }
            @if let Some(output) = &step.output { (capped_json(output, SHOWN_CHARS)) }
        }
    }
}

/// Cancelling a running instance, for who may work in its workspace.
fn cancel_form(viewer: &Viewer, instance: &InstanceOut) -> Markup {
    if instance.status != InstanceStatus::Running || !viewer.actor.can_in("tasks.write", &instance.workspace_id) {
        return html! {};
    }
    html! {
        section #actions {
            h2 { "Cancel it" }
            form.work method="post" action={ "/console/processes/" (instance.id) "/cancel" } {
                input type="hidden" name="csrf" value=(viewer.session.csrf);
                label for="cancel-reason" { "Why (shown on the instance; a call of its open step not yet taken is cancelled)" }
                input #cancel-reason type="text" name="reason" maxlength="500" required;
                div.buttons { button.reject type="submit" { "Cancel the instance" } }
            }
        }
    }
}

/// `POST /console/processes/{id}/cancel`.
pub(super) async fn cancel(State(core): State<Core>, posted: Posted) -> Response {
    let request = CancelInstanceRequest { reason: posted.field("reason").unwrap_or_default() };
    let actor = &posted.viewer.actor;
    let cancelled = core.engine.cancel_instance(actor, &posted.id, &request, posted.viewer.request_id.as_deref()).await;
    posted.then(cancelled, |instance| format!("/console/processes/{}", instance.id))
}
