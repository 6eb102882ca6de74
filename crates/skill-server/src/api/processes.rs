//! Processes: `POST /processes`, `GET /processes`, `GET /processes/{reference}` and
//! `POST /processes/{reference}:start` on the same wildcard route; `GET /process-instances`,
//! `GET /process-instances/{id}` and `POST /process-instances/{id}:cancel`.

use axum::Extension;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use skill_api::{CancelInstanceRequest, InstanceQuery, InstanceStepsQuery, ProcessQuery, ProcessRequest, StartRequest};
use skill_engine::{Actor, EngineError};
use skill_http::requests::RequestId;

use super::plumbing::{Failure, JsonBody, QueryOf, request_id};
use crate::Core;

type Answer = Result<Response, Failure>;

/// `POST /processes`.
pub(super) async fn publish(
    State(core): State<Core>,
    actor: Actor,
    id: Option<Extension<RequestId>>,
    body: JsonBody<ProcessRequest>,
) -> Answer {
    let request = body.read(&actor, "org.manage")?;
    let process = core.engine.publish_process(&actor, &request, request_id(&id)).await?;
    Ok((StatusCode::CREATED, axum::Json(process)).into_response())
}

/// `GET /processes`.
pub(super) async fn list(State(core): State<Core>, actor: Actor, QueryOf(query): QueryOf<ProcessQuery>) -> Answer {
    Ok(axum::Json(core.engine.processes(&actor, &query).await?).into_response())
}

/// `GET /processes/{reference}`.
pub(super) async fn read(State(core): State<Core>, actor: Actor, Path(rest): Path<String>) -> Answer {
    if rest.is_empty() || rest.contains([':', '/']) {
        return Err(EngineError::not_found(&format!("route GET …/processes/{rest}")).into());
    }
    Ok(axum::Json(core.engine.process(&actor, &rest).await?).into_response())
}

/// `POST /processes/{reference}:start`: 201 with the instance it made, 200 with the one its key
/// made before.
pub(super) async fn start(
    State(core): State<Core>,
    actor: Actor,
    id: Option<Extension<RequestId>>,
    Path(rest): Path<String>,
    body: JsonBody<StartRequest>,
) -> Answer {
    let Some(reference) = rest.strip_suffix(":start").filter(|reference| !reference.is_empty()) else {
        return Err(EngineError::not_found(&format!(
            "route POST …/processes/{rest}; an instance starts at …/processes/<key or key@version>:start"
        ))
        .into());
    };
    let request = body.read_somewhere(&actor, "tasks.write")?;
    let instance = core.engine.start_process(&actor, reference, &request, request_id(&id)).await?;
    let status = if instance.created { StatusCode::CREATED } else { StatusCode::OK };
    Ok((status, axum::Json(instance)).into_response())
}

/// `GET /process-instances`.
pub(super) async fn instances(
    State(core): State<Core>,
    actor: Actor,
    QueryOf(query): QueryOf<InstanceQuery>,
) -> Answer {
    Ok(axum::Json(core.engine.instances(&actor, &query).await?).into_response())
}

/// `GET /process-instances/{id}`.
pub(super) async fn instance(
    State(core): State<Core>,
    actor: Actor,
    Path(rest): Path<String>,
    QueryOf(query): QueryOf<InstanceStepsQuery>,
) -> Answer {
    if rest.is_empty() || rest.contains([':', '/']) {
        return Err(EngineError::not_found(&format!("route GET …/process-instances/{rest}")).into());
    }
    Ok(axum::Json(core.engine.instance(&actor, &rest, &query).await?).into_response())
}

/// `POST /process-instances/{id}:cancel`.
pub(super) async fn cancel(
    State(core): State<Core>,
    actor: Actor,
    id: Option<Extension<RequestId>>,
    Path(rest): Path<String>,
    body: JsonBody<CancelInstanceRequest>,
) -> Answer {
    let Some(instance) =
        rest.strip_suffix(":cancel").filter(|instance| !instance.is_empty() && !instance.contains('/'))
    else {
        return Err(EngineError::not_found(&format!(
            "route POST …/process-instances/{rest}; an instance is cancelled at …/process-instances/<id>:cancel"
        ))
        .into());
    };
    let request = body.read_somewhere(&actor, "tasks.write")?;
    let out = core.engine.cancel_instance(&actor, instance, &request, request_id(&id)).await?;
    Ok(axum::Json(out).into_response())
}
