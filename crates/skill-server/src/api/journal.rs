//! `GET /journal/checkpoint`, `GET /journal/proofs/inclusion`, `GET /journal/proofs/consistency`.

use axum::extract::State;
use axum::response::IntoResponse;
use skill_api::{ConsistencyQuery, InclusionQuery};
use skill_engine::Actor;

use super::plumbing::{Failure, QueryOf};
use crate::Core;

type Answer = Result<axum::response::Response, Failure>;

pub(super) async fn checkpoint(State(core): State<Core>, actor: Actor) -> Answer {
    Ok(axum::Json(core.engine.journal_checkpoint(&actor).await?).into_response())
}

pub(super) async fn inclusion(
    State(core): State<Core>,
    actor: Actor,
    QueryOf(query): QueryOf<InclusionQuery>,
) -> Answer {
    Ok(axum::Json(core.engine.inclusion_proof(&actor, query.index, query.size).await?).into_response())
}

pub(super) async fn consistency(
    State(core): State<Core>,
    actor: Actor,
    QueryOf(query): QueryOf<ConsistencyQuery>,
) -> Answer {
    Ok(axum::Json(core.engine.consistency_proof(&actor, query.from, query.to).await?).into_response())
}
