//! The handlers of work: task types, tasks, runs, approvals, comments. The `:verb`s of a task,
//! a run and an approval share one wildcard route each with its read (`/tasks/{id}`,
//! `/tasks/{id}:close`). Permissions held per workspace are checked by the engine against the
//! workspace the request concerns; the body is parsed only for a caller who holds the permission
//! somewhere.

use axum::Extension;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use skill_api::{
    ApprovalRequest, CloseTaskRequest, CommentRequest, DecideRequest, EndRunRequest, OfTaskQuery, RunRequest,
    TaskQuery, TaskRequest, TaskTypeQuery, TaskTypeRequest, WithdrawRequest,
};
use skill_engine::{Actor, EngineError};
use skill_http::requests::RequestId;

use super::plumbing::{Failure, JsonBody, QueryOf, request_id};
use crate::Core;

type Answer = Result<Response, Failure>;

fn created(value: impl serde::Serialize) -> Response {
    (StatusCode::CREATED, axum::Json(value)).into_response()
}

fn ok(value: impl serde::Serialize) -> Response {
    axum::Json(value).into_response()
}

/// `id` of `/{collection}/{id}:{verb}`, when the verb is `verb`.
fn verb<'a>(collection: &str, rest: &'a str, verb: &str) -> Result<&'a str, Failure> {
    match rest.rsplit_once(':') {
        Some((id, found)) if found == verb => Ok(id),
        _ => Err(EngineError::not_found(&format!(
            "route POST …/{collection}/{rest}; the action is named …/{collection}/<id>:{verb}"
        ))
        .into()),
    }
}

/// A read of `/{collection}/{id}`: a plain id, no `:verb` and no `/`.
fn plain<'a>(collection: &str, rest: &'a str) -> Result<&'a str, Failure> {
    if rest.is_empty() || rest.contains([':', '/']) {
        return Err(EngineError::not_found(&format!("route GET …/{collection}/{rest}")).into());
    }
    Ok(rest)
}

pub(super) async fn publish_task_type(
    State(core): State<Core>,
    actor: Actor,
    id: Option<Extension<RequestId>>,
    body: JsonBody<TaskTypeRequest>,
) -> Answer {
    let request = body.read(&actor, "org.manage")?;
    Ok(created(core.engine.publish_task_type(&actor, &request, request_id(&id)).await?))
}

pub(super) async fn task_types(
    State(core): State<Core>,
    actor: Actor,
    QueryOf(query): QueryOf<TaskTypeQuery>,
) -> Answer {
    Ok(ok(core.engine.task_types(&actor, &query).await?))
}

pub(super) async fn task_type(State(core): State<Core>, actor: Actor, Path(reference): Path<String>) -> Answer {
    Ok(ok(core.engine.task_type(&actor, &reference).await?))
}

pub(super) async fn create_task(
    State(core): State<Core>,
    actor: Actor,
    id: Option<Extension<RequestId>>,
    body: JsonBody<TaskRequest>,
) -> Answer {
    let request = body.read_somewhere(&actor, "tasks.write")?;
    Ok(created(core.engine.create_task(&actor, &request, request_id(&id)).await?))
}

pub(super) async fn tasks(State(core): State<Core>, actor: Actor, QueryOf(query): QueryOf<TaskQuery>) -> Answer {
    Ok(ok(core.engine.tasks(&actor, &query).await?))
}

/// `GET /tasks/{id}`.
pub(super) async fn task(State(core): State<Core>, actor: Actor, Path(rest): Path<String>) -> Answer {
    Ok(ok(core.engine.task(&actor, plain("tasks", &rest)?).await?))
}

/// `POST /tasks/{id}:close`.
pub(super) async fn close_task(
    State(core): State<Core>,
    actor: Actor,
    id: Option<Extension<RequestId>>,
    Path(rest): Path<String>,
    body: JsonBody<CloseTaskRequest>,
) -> Answer {
    let task = verb("tasks", &rest, "close")?;
    let request = body.read_somewhere(&actor, "tasks.write")?;
    Ok(ok(core.engine.close_task(&actor, task, &request, request_id(&id)).await?))
}

pub(super) async fn start_run(
    State(core): State<Core>,
    actor: Actor,
    id: Option<Extension<RequestId>>,
    body: JsonBody<RunRequest>,
) -> Answer {
    let request = body.read_somewhere(&actor, "tasks.write")?;
    Ok(created(core.engine.start_run(&actor, &request, request_id(&id)).await?))
}

/// `GET /runs/{id}`.
pub(super) async fn run(State(core): State<Core>, actor: Actor, Path(rest): Path<String>) -> Answer {
    Ok(ok(core.engine.run(&actor, plain("runs", &rest)?).await?))
}

/// `POST /runs/{id}:end`.
pub(super) async fn end_run(
    State(core): State<Core>,
    actor: Actor,
    id: Option<Extension<RequestId>>,
    Path(rest): Path<String>,
    body: JsonBody<EndRunRequest>,
) -> Answer {
    let run = verb("runs", &rest, "end")?;
    let request = body.read_somewhere(&actor, "tasks.read")?;
    Ok(ok(core.engine.end_run(&actor, run, &request, request_id(&id)).await?))
}

pub(super) async fn request_approval(
    State(core): State<Core>,
    actor: Actor,
    id: Option<Extension<RequestId>>,
    body: JsonBody<ApprovalRequest>,
) -> Answer {
    let request = body.read_somewhere(&actor, "tasks.write")?;
    Ok(created(core.engine.request_approval(&actor, &request, request_id(&id)).await?))
}

pub(super) async fn approvals(State(core): State<Core>, actor: Actor, QueryOf(query): QueryOf<OfTaskQuery>) -> Answer {
    Ok(ok(core.engine.approvals(&actor, &query).await?))
}

/// `GET /approvals/{id}`.
pub(super) async fn approval(State(core): State<Core>, actor: Actor, Path(rest): Path<String>) -> Answer {
    Ok(ok(core.engine.approval(&actor, plain("approvals", &rest)?).await?))
}

/// `POST /approvals/{id}:decide|withdraw|retry`.
pub(super) async fn approval_action(
    State(core): State<Core>,
    actor: Actor,
    id: Option<Extension<RequestId>>,
    Path(rest): Path<String>,
    body: JsonBody<()>,
) -> Answer {
    let engine = &core.engine;
    let request = request_id(&id);
    let out = match rest.rsplit_once(':') {
        Some((approval, "decide")) => {
            let body: DecideRequest = body.read_as_somewhere(&actor, "approvals.decide")?;
            engine.decide(&actor, approval, &body, request).await?
        }
        Some((approval, "withdraw")) => {
            let body: WithdrawRequest = body.read_as_somewhere(&actor, "tasks.read")?;
            engine.withdraw(&actor, approval, &body, request).await?
        }
        Some((approval, "retry")) => {
            let body: skill_api::RetryRequest = body.read_as_somewhere(&actor, "approvals.decide")?;
            engine.retry_outcome(&actor, approval, &body, request).await?
        }
        _ => {
            return Err(EngineError::not_found(&format!(
                "route POST …/approvals/{rest}; the actions are …/approvals/<id>:decide, :withdraw and :retry"
            ))
            .into());
        }
    };
    Ok(ok(out))
}

pub(super) async fn add_comment(
    State(core): State<Core>,
    actor: Actor,
    id: Option<Extension<RequestId>>,
    body: JsonBody<CommentRequest>,
) -> Answer {
    let request = body.read_somewhere(&actor, "tasks.write")?;
    Ok(created(core.engine.add_comment(&actor, &request, request_id(&id)).await?))
}

pub(super) async fn comments(State(core): State<Core>, actor: Actor, QueryOf(query): QueryOf<OfTaskQuery>) -> Answer {
    Ok(ok(core.engine.comments(&actor, &query).await?))
}
