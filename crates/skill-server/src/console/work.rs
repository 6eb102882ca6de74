//! What people start from the console, each through the engine's own rules (the permission
//! checks are the API's): a task of a type, from a form made of its custom fields; on a task,
//! its draft, a gate approval, a comment, closing it; on a failed outcome, a retry. Every form
//! carries the session's CSRF token and comes from the console's own origin.

use axum::Form;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Redirect, Response};
use maud::{Markup, html};
use serde_json::{Map, Value, json};
use skill_api::{
    ApprovalRequest, CloseTaskRequest, CommentRequest, Lifecycle, RetryRequest, TaskApproval, TaskRequest,
    TaskTypeQuery,
};
use skill_engine::{Engine, EngineError};

use super::forms;
use super::layout::{answer, failure, page, rendered};
use super::session::Viewer;
use crate::Core;

/// A form's fields as sent, in order.
type Sent = Form<Vec<(String, String)>>;

/// The refusal of a form that is not the session's, else `None`.
fn refusal(viewer: &Viewer, headers: &HeaderMap, sent: &[(String, String)]) -> Option<Response> {
    viewer.form_refusal(headers, forms::plain(sent, "csrf").unwrap_or_default())
}

/// `text` unless it is blank.
fn given(text: Option<&str>) -> Option<String> {
    text.map(str::trim).filter(|text| !text.is_empty()).map(forms::lines)
}

#[derive(Debug, Default, serde::Deserialize)]
pub(super) struct NewQuery {
    #[serde(rename = "type")]
    task_type: Option<String>,
}

/// `GET /console/tasks/new[?type=key@version]`: the types to choose from, or the chosen type's form.
pub(super) async fn new_task(State(core): State<Core>, viewer: Viewer, Query(query): Query<NewQuery>) -> Response {
    let filled = Filled::default();
    rendered(viewer.frame(), new_task_page(&core.engine, &viewer, query.task_type.as_deref(), &filled).await)
}

/// What a form held when it was sent back with an error.
#[derive(Debug, Default)]
struct Filled {
    workspace: Option<String>,
    title: Option<String>,
    fields: Map<String, Value>,
    gate: bool,
    error: Option<String>,
}

async fn new_task_page(
    engine: &Engine,
    viewer: &Viewer,
    chosen: Option<&str>,
    filled: &Filled,
) -> Result<Markup, EngineError> {
    let actor = &viewer.actor;
    let workspaces = engine.workspaces_where(actor, "tasks.write").await?;
    let Some(chosen) = chosen else {
        let types = engine.task_types(actor, &TaskTypeQuery { limit: Some(200), ..TaskTypeQuery::default() }).await?;
        // The newest version of each key.
        let mut newest: Vec<&skill_api::TaskTypeOut> = Vec::new();
        for task_type in &types.items {
            match newest.iter_mut().find(|seen| seen.key == task_type.key) {
                Some(seen) if seen.created_at < task_type.created_at => *seen = task_type,
                Some(_) => {}
                None => newest.push(task_type),
            }
        }
        let body = html! {
            p.crumbs { a href="/console/tasks" { "Tasks" } }
            h1 { "New task" }
            @if workspaces.is_empty() { p.empty { "You may create tasks in no workspace (tasks.write)." } }
            @else if newest.is_empty() { p.empty { "No task type is published yet." } }
            @else {
                ul.choices {
                    @for task_type in &newest {
                        li {
                            a href={ "/console/tasks/new?type=" (task_type.key) "@" (task_type.version) } {
                                @if task_type.display_name.is_empty() { (task_type.key) } @else { (task_type.display_name) }
                            }
                            " " span.meta { (task_type.key) "@" (task_type.version) }
                            @if !task_type.description.is_empty() { br; span.meta { (task_type.description) } }
                        }
                    }
                }
            }
        };
        return Ok(page("New task", Some(viewer.frame()), body));
    };
    let form = engine.task_type_form(actor, chosen).await?;
    let task_type = &form.task_type;
    let reference = format!("{}@{}", task_type.key, task_type.version);
    let schema = json!({"type": "object", "properties": task_type.spec.custom_fields,
                        "required": form.required});
    let name = if task_type.display_name.is_empty() { task_type.key.clone() } else { task_type.display_name.clone() };
    let body = html! {
        p.crumbs { a href="/console/tasks" { "Tasks" } " / " a href="/console/tasks/new" { "New task" } }
        h1 { (name) " " span.meta { (reference) } }
        @if !task_type.description.is_empty() { p { (task_type.description) } }
        @if let Some(error) = &filled.error { p.error role="alert" { (error) } }
        form.work method="post" action="/console/tasks" {
            input type="hidden" name="csrf" value=(viewer.session.csrf);
            input type="hidden" name="type" value=(reference);
            div.field {
                label for="new-workspace" { "Workspace" }
                select #new-workspace name="workspace" required {
                    @for workspace in &workspaces {
                        option value=(workspace.key) selected[filled.workspace.as_deref() == Some(workspace.key.as_str())] {
                            @if workspace.name.is_empty() || workspace.name == workspace.key { (workspace.key) }
                            @else { (workspace.name) " (" (workspace.key) ")" }
                        }
                    }
                }
            }
            div.field {
                label for="new-title" { "Title " span.required title="required" { "*" } }
                input #new-title type="text" name="title" maxlength="500" required value=[filled.title.as_deref()];
            }
            (forms::fields(&schema, &filled.fields, "new-"))
            @if task_type.execution.is_some() {
                div.field.check {
                    input #new-gate type="checkbox" name="gate" value="true" checked[filled.gate];
                    label for="new-gate" { "Ask for a gate approval with it (the core carries it out only once a person approves)" }
                }
            }
            div.buttons { button.primary type="submit" { "Create the task" } }
        }
    };
    Ok(page(&format!("New {name}"), Some(viewer.frame()), body))
}

/// `POST /console/tasks`: creates the task, then shows it; a refusal shows the form again with
/// what was sent and why.
pub(super) async fn create_task(
    State(core): State<Core>,
    viewer: Viewer,
    headers: HeaderMap,
    Form(sent): Sent,
) -> Response {
    if let Some(refusal) = refusal(&viewer, &headers, &sent) {
        return refusal;
    }
    let engine = &core.engine;
    let task_type = forms::plain(&sent, "type").unwrap_or_default().to_owned();
    let form = match engine.task_type_form(&viewer.actor, &task_type).await {
        Ok(form) => form,
        Err(error) => return failure(Some(viewer.frame()), &error),
    };
    let schema = json!({"type": "object", "properties": form.task_type.spec.custom_fields});
    let mut filled = Filled {
        workspace: given(forms::plain(&sent, "workspace")),
        title: given(forms::plain(&sent, "title")),
        gate: forms::plain(&sent, "gate") == Some("true"),
        ..Filled::default()
    };
    let outcome = match forms::read(&schema, &sent) {
        Ok(fields) => {
            filled.fields.clone_from(&fields);
            let request = TaskRequest {
                workspace: filled.workspace.clone().unwrap_or_default(),
                task_type: task_type.clone(),
                title: filled.title.clone().unwrap_or_default(),
                custom_fields: Some(fields),
                approval: filled.gate.then(TaskApproval::default),
            };
            engine.create_task(&viewer.actor, &request, viewer.request_id.as_deref()).await.map_err(|e| e.message)
        }
        Err((_, why)) => Err(why),
    };
    match outcome {
        Ok(task) => Redirect::to(&format!("/console/tasks/{}", task.id)).into_response(),
        Err(why) => {
            if filled.fields.is_empty() {
                filled.fields = forms::as_typed(&sent);
            }
            filled.error = Some(why);
            match new_task_page(engine, &viewer, Some(&task_type), &filled).await {
                Ok(markup) => answer(StatusCode::UNPROCESSABLE_ENTITY, markup),
                Err(error) => failure(Some(viewer.frame()), &error),
            }
        }
    }
}

/// How long drafting waits for the draft before showing the task (a real model may take longer;
/// the page shows the call meanwhile).
const DRAFT_WAIT: std::time::Duration = std::time::Duration::from_secs(20);
/// How often it looks meanwhile (a few reads a second for one person's click).
const DRAFT_LOOK_EVERY: std::time::Duration = std::time::Duration::from_millis(250);

/// `POST /console/tasks/{id}/draft`: the task's draft call, then the task once it ended (or
/// after a while).
pub(super) async fn draft(State(core): State<Core>, posted: Posted) -> Response {
    let engine = &core.engine;
    let (viewer, id) = (&posted.viewer, &posted.id);
    let call = match engine.draft(&viewer.actor, id, viewer.request_id.as_deref()).await {
        Ok(call) => call,
        Err(error) => return failure(Some(viewer.frame()), &error),
    };
    let deadline = tokio::time::Instant::now() + DRAFT_WAIT;
    while tokio::time::Instant::now() < deadline {
        match engine.invocation(&viewer.actor, &call.id).await {
            Ok(now) if !now.status.is_terminal() => {}
            _ => break,
        }
        tokio::time::sleep(DRAFT_LOOK_EVERY).await;
    }
    Redirect::to(&format!("/console/tasks/{id}#approvals")).into_response()
}

/// A form posted to an action on one thing (`…/{id}/…`): who sent it, the id, and its fields —
/// only once the form is the session's own (its CSRF token, the console's origin).
pub(super) struct Posted {
    pub(super) viewer: Viewer,
    pub(super) id: String,
    sent: Vec<(String, String)>,
}

impl axum::extract::FromRequest<Core> for Posted {
    type Rejection = Response;

    async fn from_request(request: axum::extract::Request, core: &Core) -> Result<Self, Self::Rejection> {
        let (mut parts, body) = request.into_parts();
        let viewer = <Viewer as axum::extract::FromRequestParts<Core>>::from_request_parts(&mut parts, core).await?;
        let Path(id) = <Path<String> as axum::extract::FromRequestParts<Core>>::from_request_parts(&mut parts, core)
            .await
            .map_err(IntoResponse::into_response)?;
        let headers = parts.headers.clone();
        let request = axum::extract::Request::from_parts(parts, body);
        let Form(sent) = Sent::from_request(request, core).await.map_err(IntoResponse::into_response)?;
        // A form that came slowly is acted on with the session's credential as it stands then.
        core.engine
            .still_holds(&viewer.actor)
            .await
            .map_err(|error| super::layout::failure(Some(viewer.frame()), &error))?;
        if let Some(refusal) = refusal(&viewer, &headers, &sent) {
            return Err(refusal);
        }
        Ok(Self { viewer, id, sent })
    }
}

impl Posted {
    pub(super) fn field(&self, name: &str) -> Option<String> {
        given(forms::plain(&self.sent, name))
    }

    /// The page at `to(made)` once done, else the page of the refusal.
    pub(super) fn then<T>(&self, done: Result<T, EngineError>, to: impl FnOnce(T) -> String) -> Response {
        match done {
            Ok(made) => Redirect::to(&to(made)).into_response(),
            Err(error) => failure(Some(self.viewer.frame()), &error),
        }
    }
}

/// `POST /console/tasks/{id}/approvals`: asks for a gate approval.
pub(super) async fn ask(State(core): State<Core>, posted: Posted) -> Response {
    let request =
        ApprovalRequest { task_id: posted.id.clone(), gate: Some(true), comment: posted.field("comment"), call: None };
    let asked = core.engine.request_approval(&posted.viewer.actor, &request, posted.viewer.request_id.as_deref()).await;
    posted.then(asked, |approval| format!("/console/tasks/{}#approval-{}", approval.task_id, approval.id))
}

/// `POST /console/tasks/{id}/comments`.
pub(super) async fn comment(State(core): State<Core>, posted: Posted) -> Response {
    let body = forms::lines(forms::plain(&posted.sent, "body").unwrap_or_default());
    let request = CommentRequest { task_id: posted.id.clone(), body };
    let added = core.engine.add_comment(&posted.viewer.actor, &request, posted.viewer.request_id.as_deref()).await;
    posted.then(added, |comment| format!("/console/tasks/{}#comments", comment.task_id))
}

/// `POST /console/tasks/{id}/close`.
pub(super) async fn close(State(core): State<Core>, posted: Posted) -> Response {
    let status = forms::plain(&posted.sent, "status").unwrap_or_default().to_owned();
    let request = CloseTaskRequest { status, comment: posted.field("comment") };
    let actor = &posted.viewer.actor;
    let closed = core.engine.close_task(actor, &posted.id, &request, posted.viewer.request_id.as_deref()).await;
    posted.then(closed, |task| format!("/console/tasks/{}", task.id))
}

/// `POST /console/approvals/{id}/retry`: retries a failed outcome's retryable actions.
pub(super) async fn retry(State(core): State<Core>, posted: Posted) -> Response {
    let request = RetryRequest { reason: posted.field("reason") };
    let actor = &posted.viewer.actor;
    let retried = core.engine.retry_outcome(actor, &posted.id, &request, posted.viewer.request_id.as_deref()).await;
    posted.then(retried, |approval| format!("/console/tasks/{}#approval-{}", approval.task_id, approval.id))
}
