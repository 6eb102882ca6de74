//! `/agents`: the agents packages installed, and tokens for them.

use axum::Extension;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::IntoResponse;
use skill_api::{AgentTokenRequest, Items};
use skill_engine::{Actor, Origin};
use skill_http::requests::RequestId;

use super::plumbing::{Failure, JsonBody, request_id};
use crate::Core;

type Answer = Result<axum::response::Response, Failure>;

/// `GET /agents`.
pub(super) async fn list(State(core): State<Core>, actor: Actor) -> Answer {
    Ok(axum::Json(Items { items: core.engine.agents(&actor).await? }).into_response())
}

/// `GET /agents/{key}`.
pub(super) async fn read(State(core): State<Core>, actor: Actor, Path(key): Path<String>) -> Answer {
    Ok(axum::Json(core.engine.agent(&actor, &key).await?).into_response())
}

/// `POST /agents/{key}/tokens`.
pub(super) async fn issue_token(
    State(core): State<Core>,
    actor: Actor,
    id: Option<Extension<RequestId>>,
    Path(key): Path<String>,
    body: JsonBody<AgentTokenRequest>,
) -> Answer {
    let request = body.read(&actor, "org.manage")?;
    let origin = Origin::of(&actor, request_id(&id));
    let issued = core.engine.issue_agent_token(Some(&actor), &key, &request, &origin).await?;
    Ok((StatusCode::CREATED, axum::Json(issued)).into_response())
}
