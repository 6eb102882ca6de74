//! The people's pages: the tasks of their workspaces (those with a pending approval first), and a
//! task — its fields, artifacts, calls, comments and approvals, with what deciding would do and
//! the form to decide.

use std::collections::BTreeMap;

use axum::extract::{Path, State};
use axum::response::{IntoResponse, Redirect, Response};
use maud::{Markup, html};
use serde_json::Value;
use skill_api::{
    ApprovalOut, ArtifactOut, ArtifactQuery, InvocationOut, InvocationQuery, OfTaskQuery, TaskOut, TaskQuery,
};
use skill_engine::work::{ActionPreview, CallPreview};
use skill_engine::{Engine, EngineError};

use super::layout::{badge, capped_json, json, page, rendered};
use super::session::Viewer;
use crate::Core;

/// Text artifacts up to this size are shown in the page.
const SHOWN_BYTES: i64 = 64 * 1024;

/// `GET /console`.
pub(super) async fn home() -> Response {
    Redirect::to("/console/tasks").into_response()
}

/// Principal names by id, looked up once a page.
struct Names<'a> {
    engine: &'a Engine,
    known: BTreeMap<String, String>,
}

impl<'a> Names<'a> {
    fn new(engine: &'a Engine) -> Self {
        Self { engine, known: BTreeMap::new() }
    }

    async fn of(&mut self, id: &str) -> Result<String, EngineError> {
        if let Some(name) = self.known.get(id) {
            return Ok(name.clone());
        }
        let name = self.engine.principal_name(id).await?;
        self.known.insert(id.to_owned(), name.clone());
        Ok(name)
    }
}

/// The query of `GET /console/tasks`: the page after `cursor`.
#[derive(Debug, Default, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct ListQuery {
    cursor: Option<String>,
}

/// Tasks on one page of the list.
const TASKS_PER_PAGE: u32 = 50;
/// The most approvals waiting for the viewer's decision the page lists.
const TO_DECIDE: u32 = 500;
/// The most characters of one custom field a task's page shows.
const SHOWN_FIELD_CHARS: usize = 2_000;

/// `GET /console/tasks`.
pub(super) async fn list(
    State(core): State<Core>,
    viewer: Viewer,
    axum::extract::Query(query): axum::extract::Query<ListQuery>,
) -> Response {
    rendered(tasks_page(&core.engine, &viewer, query.cursor).await)
}

async fn tasks_page(engine: &Engine, viewer: &Viewer, cursor: Option<String>) -> Result<Markup, EngineError> {
    let actor = &viewer.actor;
    // Every pending approval the viewer may decide, in whichever task: the work waiting for them.
    let to_decide = engine.approvals_to_decide(actor, TO_DECIDE).await?;
    let mut names = Names::new(engine);
    let mut waiting = Vec::new();
    for (approval, task) in &to_decide {
        waiting.push((approval, task, names.of(&approval.requested_by).await?));
    }
    let pending: std::collections::BTreeSet<&str> = to_decide.iter().map(|(_, task)| task.id.as_str()).collect();
    // Someone who reads tasks nowhere (an operator) has no tasks, not a refusal.
    let listed = if actor.can_somewhere("tasks.read") {
        engine.tasks(actor, &TaskQuery { limit: Some(TASKS_PER_PAGE), cursor, ..TaskQuery::default() }).await?
    } else {
        skill_api::Page { items: Vec::new(), next_cursor: None }
    };
    let body = html! {
        h1 { "Tasks" }
        @if !waiting.is_empty() {
            section #to-decide {
                h2 { "Waiting for your decision" }
                div.scroll {
                    table.tasks {
                        thead { tr { th { "Task" } th { "Type" } th { "Asked by" } th { "Asked" } } }
                        tbody {
                            @for (approval, task, asked_by) in &waiting {
                                tr {
                                    td { a href={ "/console/tasks/" (task.id) "#approval-" (approval.id) } { (task.title) } }
                                    td { (task.task_type.key) "@" (task.task_type.version) }
                                    td { (asked_by) }
                                    td.time { (approval.created_at) }
                                }
                            }
                        }
                    }
                }
                @if waiting.len() as u32 >= TO_DECIDE { p.note { "The oldest " (TO_DECIDE) " are listed." } }
            }
        }
        @if listed.items.is_empty() {
            p.empty {
                @if actor.can_somewhere("tasks.read") { "No task in your workspaces yet." }
                @else { "You read the tasks of no workspace (tasks.read)." }
            }
        } @else {
            section #tasks {
                h2 { "All tasks" }
                div.scroll {
                    table.tasks {
                        thead { tr { th { "Task" } th { "Type" } th { "Status" } th { "Approvals" } th { "Updated" } } }
                        tbody {
                            @for task in &listed.items {
                                tr {
                                    td { a href={ "/console/tasks/" (task.id) } { (task.title) } }
                                    td { (task.task_type.key) "@" (task.task_type.version) }
                                    td { (badge(&task.status)) }
                                    td { @if pending.contains(task.id.as_str()) { span.badge.pending { "yours to decide" } } }
                                    td.time { (task.updated_at) }
                                }
                            }
                        }
                    }
                }
                @if let Some(next) = &listed.next_cursor {
                    p.pages { a href={ "/console/tasks?cursor=" (next) } { "Older tasks →" } }
                }
            }
        }
    };
    Ok(page("Tasks", Some(viewer.frame()), body))
}

/// The page of task `id`.
async fn task_page(engine: &Engine, viewer: &Viewer, id: &str) -> Result<Markup, EngineError> {
    let actor = &viewer.actor;
    let task = engine.task(actor, id).await?;
    let of_task = OfTaskQuery { task: task.id.clone() };
    let approvals = engine.approvals(actor, &of_task).await?.items;
    let artifacts = engine.artifacts(actor, &ArtifactQuery { task: Some(task.id.clone()), for_task: None }).await?;
    let calls = engine
        .invocations(actor, &InvocationQuery { task: Some(task.id.clone()), limit: Some(100), ..Default::default() })
        .await?
        .items;
    let comments = engine.comments(actor, &of_task).await?.items;
    let mut names = Names::new(engine);
    let mut shown = Vec::new();
    for artifact in artifacts.items {
        let text = if artifact.size_bytes <= SHOWN_BYTES && readable(&artifact.media_type) {
            let content = engine.artifact_content(actor, &artifact.id, &ArtifactQuery::default()).await?;
            String::from_utf8(content.bytes).ok()
        } else {
            None
        };
        let author = names.of(&artifact.author_principal_id).await?;
        shown.push((artifact, text, author));
    }
    let mut decisions = Vec::new();
    for approval in approvals {
        let requested_by = names.of(&approval.requested_by).await?;
        let decided_by = match &approval.decided_by {
            Some(id) => Some(names.of(id).await?),
            None => None,
        };
        let previews = if approval.status == "pending" {
            let approve = engine.outcome_preview(actor, &approval.id, "approved", "").await?;
            let reject = engine.outcome_preview(actor, &approval.id, "rejected", "").await?;
            Some((approve, reject))
        } else {
            None
        };
        decisions.push(Decision { approval, requested_by, decided_by, previews });
    }
    let mut commented = Vec::new();
    for comment in comments {
        let author = names.of(&comment.author_principal_id).await?;
        commented.push((comment, author));
    }
    let body = html! {
        p.crumbs { a href="/console/tasks" { "Tasks" } " / " (task.task_type.key) }
        h1 { (task.title) " " (badge(&task.status)) }
        (fields(&task))
        section #approvals {
            h2 { "Approvals" }
            @if decisions.is_empty() { p.empty { "Nobody asked for an approval on this task." } }
            @for decision in &decisions { (decision.render(viewer, &task)) }
        }
        section #artifacts data-live="artifacts" {
            h2 { "Artifacts" }
            @if shown.is_empty() { p.empty { "No artifact yet." } }
            @for (artifact, text, author) in &shown { (artifact_card(artifact, text.as_deref(), author)) }
        }
        section #calls data-live="calls" {
            h2 { "Calls" }
            @if calls.is_empty() { p.empty { "No call on this task yet." } }
            @for call in &calls { (call_card(call)) }
        }
        section #comments data-live="comments" {
            h2 { "Comments" }
            @if commented.is_empty() { p.empty { "No comment yet." } }
            @for (comment, author) in &commented {
                article.comment { p.meta { (author) " · " span.time { (comment.created_at) } } p { (comment.body) } }
            }
        }
    };
    Ok(page(&task.title, Some(viewer.frame()), body))
}

/// `GET /console/tasks/{id}`.
pub(super) async fn task(State(core): State<Core>, viewer: Viewer, Path(id): Path<String>) -> Response {
    rendered(task_page(&core.engine, &viewer, &id).await)
}

/// Whether content of `media_type` is text a person can read in the page.
fn readable(media_type: &str) -> bool {
    let essence = media_type.split(';').next().unwrap_or_default().trim();
    essence.starts_with("text/") || essence == "application/json" || essence.ends_with("+json")
}

fn fields(task: &TaskOut) -> Markup {
    let fields = task.custom_fields.as_object().cloned().unwrap_or_default();
    html! {
        section #fields {
            h2 { "Fields" }
            dl.fields {
                dt { "Type" } dd { (task.task_type.key) "@" (task.task_type.version) }
                dt { "Created" } dd.time { (task.created_at) }
                @for (name, value) in &fields { dt { (name) } dd { (capped_json(value, SHOWN_FIELD_CHARS)) } }
            }
        }
    }
}

fn artifact_card(artifact: &ArtifactOut, text: Option<&str>, author: &str) -> Markup {
    html! {
        article.artifact {
            h3 { (artifact.name) " " span.kind { (artifact.kind) } }
            p.meta { (artifact.media_type) " · " (artifact.size_bytes) " bytes · by " (author) " · " span.time { (artifact.created_at) } }
            @match text {
                Some(text) => {
                    @match serde_json::from_str::<Value>(text).ok().filter(|_| artifact.media_type.contains("json")) {
                        Some(value) => (json(&value)),
                        None => pre.content { (text) },
                    }
                }
                None => p.empty { "Not shown here (" (artifact.media_type) ")." },
            }
        }
    }
}

fn call_card(call: &InvocationOut) -> Markup {
    html! {
        article.call id={ "call-" (call.id) } {
            h3 { a href={ "/console/calls/" (call.id) } { (call.skill.name) "@" (call.skill.version) } " " (badge(&call.status)) }
            p.meta { "attempt " (call.attempt) " of " (call.max_attempts) " · " span.time { (call.created_at) } }
            @if let Some(waiting) = &call.waiting { p.waiting { "Waiting: " (waiting.reason) } }
            @if let Some(output) = &call.output { h4 { "Output" } (json(output)) }
            @if let Some(error) = &call.error { h4 { "Error" } (json(error)) }
        }
    }
}

/// An approval with what the viewer may see and do about it.
struct Decision {
    approval: ApprovalOut,
    requested_by: String,
    decided_by: Option<String>,
    previews: Option<(Vec<ActionPreview>, Vec<ActionPreview>)>,
}

impl Decision {
    fn render(&self, viewer: &Viewer, task: &TaskOut) -> Markup {
        let approval = &self.approval;
        let may_decide = viewer.actor.can_in("approvals.decide", &task.workspace_id);
        let own = approval.requested_by == viewer.actor.id();
        html! {
            article.approval id={ "approval-" (approval.id) } {
                h3 { @if approval.gate { "Gate approval" } @else { "Approval" } " " (badge(&approval.status)) }
                p.meta { "asked by " (self.requested_by) " · " span.time { (approval.created_at) } }
                @if !approval.request_comment.is_empty() { blockquote { (approval.request_comment) } }
                @if let Some((approve, reject)) = &self.previews {
                    div.preview {
                        h4 { "Approving will" }
                        (preview(approve))
                        @if let Some(call) = &approval.call {
                            p { "and let " strong { (self.requested_by) } " make exactly this call, once: "
                                strong.skill { (call.skill) } }
                            (capped_json(&call.inputs, SHOWN_FIELD_CHARS))
                        }
                        h4 { "Rejecting will" }
                        (preview(reject))
                    }
                    @if may_decide && !own && task.status == "open" {
                        form.decide method="post" action={ "/console/approvals/" (approval.id) "/decide" } {
                            input type="hidden" name="csrf" value=(viewer.session.csrf);
                            label for={ "comment-" (approval.id) } { "Comment (the outcome receives it)" }
                            textarea id={ "comment-" (approval.id) } name="comment" rows="4" maxlength="10000" {}
                            div.buttons {
                                button.approve type="submit" name="outcome" value="approved" { "Approve" }
                                button.reject type="submit" name="outcome" value="rejected" { "Reject" }
                            }
                        }
                    } @else if own {
                        p.note { "You asked for this approval: someone else decides it." }
                    } @else if !may_decide {
                        p.note { "You may read this task but not decide its approvals (approvals.decide)." }
                    }
                } @else {
                    p.meta.decided {
                        @if let Some(by) = &self.decided_by { "decided by " (by) }
                        @if let Some(at) = &approval.decided_at { " · " span.time { (at) } }
                    }
                    @if !approval.comment.is_empty() { blockquote { (approval.comment) } }
                    @if let Some(outcome) = &approval.outcome {
                        div.outcome data-live={ "outcome-" (approval.id) } id={ "outcome-" (approval.id) } {
                            h4 { "Outcome " (badge(&outcome.status)) }
                            @if let Some(reaction) = &outcome.reaction { p.meta { "reaction: " (reaction) } }
                            ol.actions {
                                @for action in &outcome.actions {
                                    li {
                                        (action_name(&action.action)) " " (badge(&action.status))
                                        @if let Some(call) = &action.invocation_id {
                                            " · " a href={ "/console/calls/" (call) } { "its call" }
                                        }
                                        @if let Some(error) = &action.error { (json(error)) }
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
    }
}

/// What an action is, in a few words.
fn action_name(action: &Value) -> String {
    if let Some(skill) = action.pointer("/invokeSkill/skill").and_then(Value::as_str) {
        return format!("call {skill}");
    }
    action.as_object().and_then(|o| o.keys().next().cloned()).unwrap_or_else(|| "action".to_owned())
}

fn preview(actions: &[ActionPreview]) -> Markup {
    html! {
        @if actions.is_empty() { p.empty { "do nothing more than record the decision." } }
        ul.actions {
            @for action in actions {
                @match &action.call {
                    Some(CallPreview { skill, version, inputs, from }) => {
                        li.invoke {
                            "call " strong.skill { (skill) }
                            @match version {
                                Some(called) => {
                                    " — " (badge(&called.side_effects)) " " span class={ "badge risk-" (called.risk_level) } { "risk " (called.risk_level) }
                                    @if called.status != "active" { " " (badge(&called.status)) }
                                }
                                None => { " — " span.badge.failed { "no such version: the call would fail" } }
                            }
                            dl.inputs {
                                @for (name, expression) in from {
                                    dt { (name) }
                                    dd {
                                        @if expression.as_str().is_some_and(|e| e.starts_with("$.approval.comment")) {
                                            em { "the comment you write" }
                                        } @else {
                                            @match inputs.get(name) {
                                                Some(value) => (capped_json(value, SHOWN_FIELD_CHARS)),
                                                None if version.as_ref().is_some_and(|v| v.required.contains(name)) => {
                                                    span.badge.failed.missing { "missing — the call would fail: " (skill) " requires " (name) }
                                                }
                                                None => em { "nothing (the task has no such value)" },
                                            }
                                        }
                                        " " code.from { (expression.as_str().unwrap_or_default()) }
                                    }
                                }
                            }
                        }
                    }
                    None => li { (action_name(&action.action)) " " (json(&action.action)) },
                }
            }
        }
    }
}
