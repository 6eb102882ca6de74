//! The people's pages: the tasks of their workspaces (those with a pending approval first), and a
//! task — its fields, artifacts, calls, comments and approvals, with what deciding would do and
//! the form to decide.

use std::collections::BTreeMap;

use axum::extract::{Path, State};
use axum::response::{IntoResponse, Redirect, Response};
use maud::{Markup, html};
use serde_json::Value;
use skill_api::{
    ApprovalStatus, ArtifactOut, ArtifactQuery, CallStatus, InvocationOut, InvocationQuery, OfTaskQuery, TaskOut,
    TaskQuery, TaskStatus,
};
use skill_engine::work::Draft;
use skill_engine::{Engine, EngineError};

use super::decision::Decision;
use super::layout::{badge, capped_json, json, page, rendered, when};
use super::session::Viewer;
use crate::Core;

/// Text artifacts up to this size are shown in the page.
const SHOWN_BYTES: i64 = 64 * 1024;

/// `GET /console`.
pub(super) async fn home() -> Response {
    Redirect::to("/console/tasks").into_response()
}

/// Principal names by id, looked up once a page.
pub(super) struct Names<'a> {
    engine: &'a Engine,
    known: BTreeMap<String, String>,
}

impl<'a> Names<'a> {
    pub(super) fn new(engine: &'a Engine) -> Self {
        Self { engine, known: BTreeMap::new() }
    }

    pub(super) async fn of(&mut self, id: &str) -> Result<String, EngineError> {
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
    rendered(viewer.frame(), tasks_page(&core.engine, &viewer, query.cursor).await)
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
        div.heading {
            h1 { "Tasks" }
            @if actor.can_somewhere("tasks.write") { a.button.primary href="/console/tasks/new" { "New task" } }
        }
        @if !waiting.is_empty() {
            section #to-decide {
                h2 { "Waiting for your decision" }
                div.scroll {
                    table.tasks {
                        thead { tr { th { "Task" } th { "Type" } th { "Asked by" } th { "Asked" } } }
                        tbody {
                            @for (approval, task, asked_by) in &waiting {
                                tr {
                                    td data-label="Task" { a href={ "/console/tasks/" (task.id) "#approval-" (approval.id) } { (task.title) } }
                                    td data-label="Type" { (task.task_type.key) "@" (task.task_type.version) }
                                    td data-label="Asked by" { (asked_by) }
                                    td data-label="Asked" { (when(&approval.created_at)) }
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
                                    td data-label="Task" { a href={ "/console/tasks/" (task.id) } { (task.title) } }
                                    td data-label="Type" { (task.task_type.key) "@" (task.task_type.version) }
                                    td data-label="Status" { (badge(task.status)) }
                                    td data-label="Approvals" { @if pending.contains(task.id.as_str()) { span.badge.pending { "yours to decide" } } }
                                    td data-label="Updated" { (when(&task.updated_at)) }
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
    let origin = engine.task_origin(actor, &task.id).await?;
    let made_by = engine.task_process(actor, &task.id).await?;
    let decided_writes = made_by.as_ref().map(|made| made.writes.as_slice()).unwrap_or_default();
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
    // The type's draft: what makes it, and the newest one made (the text a decider starts from).
    let draft = engine.task_draft(actor, &task.id).await?.map(|(draft, _)| draft);
    let draft_text = draft.as_ref().and_then(|draft| {
        calls
            .iter()
            .filter(|call| {
                format!("{}@{}", call.skill.name, call.skill.version) == draft.skill
                    && call.status == CallStatus::Succeeded
            })
            .max_by(|a, b| a.created_at.cmp(&b.created_at))
            .and_then(|call| call.output.as_ref()?.get(&draft.output)?.as_str().map(str::to_owned))
    });
    let mut callers = Vec::new();
    for call in &calls {
        callers.push(names.of(&call.authority_principal_id).await?);
    }
    let mut decisions = Vec::new();
    for approval in approvals {
        let requested_by = names.of(&approval.requested_by).await?;
        let decided_by = match &approval.decided_by {
            Some(id) => Some(names.of(id).await?),
            None => None,
        };
        let previews = if approval.status == ApprovalStatus::Pending {
            let approve = engine.outcome_preview(actor, &approval.id, "approved", "").await?;
            let reject = engine.outcome_preview(actor, &approval.id, "rejected", "").await?;
            Some((approve, reject))
        } else {
            None
        };
        // The version an approval was asked for, shown with its side effects and risk.
        let called = match &approval.call {
            Some(call) => engine
                .store()
                .skill(&call.skill_id)
                .await
                .ok()
                .and_then(|entry| entry.skill.side_effects.zip(entry.skill.risk_level)),
            None => None,
        };
        let process_writes = !decided_writes.is_empty();
        // The one rule, as deciding applies it: no form for whom it refuses, and why.
        let work = skill_api::four_eyes::Work {
            workspace_id: &task.workspace_id,
            requested_by: &approval.requested_by,
            initiators: &approval.initiators,
        };
        let refusal = engine.may_decide(actor, &approval.id, &work).await.err().map(|error| error.message);
        decisions.push(Decision {
            refusal,
            approval,
            requested_by,
            decided_by,
            previews,
            draft: draft_text.clone(),
            called,
            process_writes,
        });
    }
    // Who set the task in motion, by name.
    let mut set_in_motion = Vec::new();
    for initiator in &task.initiators {
        let person = names.of(&initiator.person).await?;
        let agent = match &initiator.agent {
            Some(agent) => Some(names.of(agent).await?),
            None => None,
        };
        set_in_motion.push(in_motion(initiator, &person, agent.as_deref()));
    }
    let mut commented = Vec::new();
    for comment in comments {
        let author = names.of(&comment.author_principal_id).await?;
        commented.push((comment, author));
    }
    let body = html! {
        p.crumbs { a href="/console/tasks" { "Tasks" } " / " (task.task_type.key) }
        h1 { (task.title) " " (badge(task.status)) }
        @if let Some(reason) = &task.close_reason { p.meta { "closed by the core: " code { (reason) } } }
        (fields(&task, &set_in_motion))
        (super::facts::origin(origin.as_ref()))
        @if let Some(skill_engine::TaskProcess { instance_id: instance, process, step, .. }) = &made_by {
            section #process {
                h2 { "The process it belongs to" }
                p {
                    "Step " code { (step) } " of " a href={ "/console/processes/" (instance) } { "an instance of " code { (process) } }
                    " made it, and goes on when it closes."
                }
                @if !decided_writes.is_empty() {
                    p.note {
                        "A gate of this task approved by someone other than whoever started the instance, with the task closed "
                        strong { "done" } ", lets the process make these writes to the outside world, once:"
                    }
                    @for (step, skill, inputs) in decided_writes {
                        p { "Step " code { (step) } ": " strong { (skill) } ", with" }
                        pre.decided { (super::layout::visible(&serde_json::to_string_pretty(inputs).unwrap_or_default())) }
                    }
                }
            }
        }
        (actions(viewer, &task, draft.as_ref(), &decisions))
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
            @for (call, caller) in calls.iter().zip(&callers) { (call_card(call, caller)) }
        }
        section #comments data-live="comments" {
            h2 { "Comments" }
            @if commented.is_empty() { p.empty { "No comment yet." } }
            @for (comment, author) in &commented {
                article.comment { p.meta { (author) " · " (when(&comment.created_at)) } p { (comment.body) } }
            }
        }
        @if viewer.actor.can_in("tasks.write", &task.workspace_id) {
            form.work.comment method="post" action={ "/console/tasks/" (task.id) "/comments" } {
                input type="hidden" name="csrf" value=(viewer.session.csrf);
                label for="comment-body" { "Add a comment" }
                textarea #comment-body name="body" rows="3" maxlength="10000" required {}
                div.buttons { button type="submit" { "Comment" } }
            }
        }
    };
    Ok(page(&task.title, Some(viewer.frame()), body))
}

/// `GET /console/tasks/{id}`.
pub(super) async fn task(State(core): State<Core>, viewer: Viewer, Path(id): Path<String>) -> Response {
    rendered(viewer.frame(), task_page(&core.engine, &viewer, &id).await)
}

/// Whether content of `media_type` is text a person can read in the page.
fn readable(media_type: &str) -> bool {
    let essence = media_type.split(';').next().unwrap_or_default().trim();
    essence.starts_with("text/") || essence == "application/json" || essence.ends_with("+json")
}

/// How `initiator` (the person `person`, through the agent `agent`) set a task in motion:
/// "ana sent fact:F, operating the agent mailbot (then instance:I, task:T)".
pub(super) fn in_motion(initiator: &skill_api::Initiator, person: &str, agent: Option<&str>) -> String {
    let mut via = initiator.via.iter();
    let mut text = format!("{person} {} {}", initiator.role.verb(), via.next().map_or("it", String::as_str));
    if let Some(agent) = agent {
        text.push_str(&format!(", operating the agent {agent}"));
    }
    let rest: Vec<&str> = via.map(String::as_str).collect();
    if !rest.is_empty() {
        text.push_str(&format!(" (then {})", rest.join(", ")));
    }
    text
}

fn fields(task: &TaskOut, set_in_motion: &[String]) -> Markup {
    let fields = task.custom_fields.as_object().cloned().unwrap_or_default();
    html! {
        section #fields {
            h2 { "Fields" }
            dl.fields {
                dt { "Type" } dd { (task.task_type.key) "@" (task.task_type.version) }
                dt { "Created" } dd { (when(&task.created_at)) }
                dt { "Set in motion by" }
                dd.initiators {
                    @if set_in_motion.is_empty() { "nobody known (made before the core kept it)" }
                    @for line in set_in_motion { span.initiator { (line) } br; }
                }
                @for (name, value) in &fields { dt { (name) } dd { (capped_json(value, SHOWN_FIELD_CHARS)) } }
            }
        }
    }
}

fn artifact_card(artifact: &ArtifactOut, text: Option<&str>, author: &str) -> Markup {
    html! {
        article.artifact {
            h3 { (artifact.name) " " span.kind { (artifact.kind) } }
            p.meta { (artifact.media_type) " · " (artifact.size_bytes) " bytes · by " (author) " · " (when(&artifact.created_at)) }
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

fn call_card(call: &InvocationOut, caller: &str) -> Markup {
    html! {
        article.call id={ "call-" (call.id) } {
            h3 { a href={ "/console/calls/" (call.id) } { (call.skill.name) "@" (call.skill.version) } " " (badge(call.status)) }
            p.meta { "by " (caller) " · attempt " (call.attempt) " of " (call.max_attempts) " · " (when(&call.created_at)) }
            @if let Some(waiting) = &call.waiting { p.waiting { "Waiting: " (waiting.reason) } }
            @if let Some(output) = &call.output { h4 { "Output" } (json(output)) }
            @if let Some(error) = &call.error { h4 { "Error" } (json(&serde_json::json!(error))) }
        }
    }
}

/// What the viewer may start on the task: its draft, a gate approval, closing it.
fn actions(viewer: &Viewer, task: &TaskOut, draft: Option<&Draft>, decisions: &[Decision]) -> Markup {
    let writes = viewer.actor.can_in("tasks.write", &task.workspace_id);
    if !writes || task.status != TaskStatus::Open {
        return html! {};
    }
    let pending =
        decisions.iter().any(|decision| decision.approval.status == ApprovalStatus::Pending && decision.approval.gate);
    let csrf = &viewer.session.csrf;
    html! {
        section #actions {
            h2 { "Work on it" }
            div.work-actions {
                @if let Some(draft) = draft {
                    form.work method="post" action={ "/console/tasks/" (task.id) "/draft" } {
                        input type="hidden" name="csrf" value=(csrf);
                        p.help { "A draft of the reply, made by " strong { (draft.skill) } " from the task's fields: \
                                  the reviewer's text starts from the newest one." }
                        div.buttons { button.primary type="submit" { "Draft with " (draft.skill) } }
                    }
                }
                @if !pending {
                    form.work method="post" action={ "/console/tasks/" (task.id) "/approvals" } {
                        input type="hidden" name="csrf" value=(csrf);
                        label for="ask-comment" { "Ask for a gate approval — what should the reviewer know?" }
                        textarea #ask-comment name="comment" rows="2" maxlength="10000" {}
                        div.buttons { button type="submit" { "Ask for approval" } }
                    }
                }
                form.work method="post" action={ "/console/tasks/" (task.id) "/close" } {
                    input type="hidden" name="csrf" value=(csrf);
                    label for="close-status" { "Close the task, for good" }
                    select #close-status name="status" {
                        option value="done" { "done" }
                        option value="cancelled" { "cancelled" }
                        option value="failed" { "failed" }
                    }
                    input type="text" name="comment" placeholder="Why (kept as a comment)" maxlength="10000";
                    div.buttons { button.reject type="submit" { "Close" } }
                }
            }
        }
    }
}
