//! The handlers of knowledge: preview and apply a snapshot, query entities. Permissions are held
//! per workspace: the body is read for a caller holding the permission somewhere, the engine
//! checks the workspace it names.

use axum::Extension;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use skill_api::{EntityQuery, SnapshotRequest};
use skill_engine::Actor;
use skill_http::requests::RequestId;

use super::plumbing::{Failure, JsonBody, request_id};
use crate::Core;

type Answer = Result<Response, Failure>;

/// A snapshot of up to 10,000 entities.
const SNAPSHOT_BYTES: usize = 16 * 1024 * 1024;

/// `POST /knowledge/snapshots:preview`.
pub(super) async fn preview(
    State(core): State<Core>,
    actor: Actor,
    body: JsonBody<SnapshotRequest, SNAPSHOT_BYTES>,
) -> Answer {
    let request = body.read_somewhere(&actor, "knowledge.write")?;
    Ok(axum::Json(core.engine.preview_snapshot(&actor, &request).await?).into_response())
}

/// `POST /knowledge/snapshots`.
pub(super) async fn apply(
    State(core): State<Core>,
    actor: Actor,
    id: Option<Extension<RequestId>>,
    body: JsonBody<SnapshotRequest, SNAPSHOT_BYTES>,
) -> Answer {
    let request = body.read_somewhere(&actor, "knowledge.write")?;
    Ok(axum::Json(core.engine.apply_snapshot(&actor, &request, request_id(&id)).await?).into_response())
}

/// `POST /knowledge/entities:query`.
pub(super) async fn query(State(core): State<Core>, actor: Actor, body: JsonBody<EntityQuery>) -> Answer {
    let request = body.read_somewhere(&actor, "knowledge.read")?;
    Ok(axum::Json(core.engine.query_entities(&actor, &request).await?).into_response())
}

/// `POST /knowledge/documents`.
pub(super) async fn document(
    State(core): State<Core>,
    actor: Actor,
    id: Option<Extension<RequestId>>,
    body: JsonBody<skill_api::DocumentRequest, SNAPSHOT_BYTES>,
) -> Answer {
    let request = body.read_somewhere(&actor, "knowledge.write")?;
    Ok(axum::Json(core.engine.store_document(&actor, &request, request_id(&id)).await?).into_response())
}

/// `POST /context/recall`.
pub(super) async fn recall(State(core): State<Core>, actor: Actor, body: JsonBody<skill_api::RecallRequest>) -> Answer {
    let request = body.read_somewhere(&actor, "knowledge.read")?;
    Ok(axum::Json(core.engine.recall(&actor, &request).await?).into_response())
}
