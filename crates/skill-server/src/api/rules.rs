//! Facts and work rules: `POST /facts` (201 the first time, 200 with the same fact again),
//! `GET /facts`, `GET /facts/{id}`; `POST /rules`, `GET /rules`, `GET /rules/{reference}` and the
//! dry run `POST /rules/{reference}:evaluate` on the same wildcard route.

use axum::Extension;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use skill_api::{EvaluateRequest, FactQuery, FactRequest, RuleQuery, RuleRequest};
use skill_engine::{Actor, EngineError};
use skill_http::requests::RequestId;

use super::plumbing::{Failure, JsonBody, QueryOf, request_id};
use crate::Core;

type Answer = Result<Response, Failure>;

/// `POST /facts`.
pub(super) async fn record_fact(
    State(core): State<Core>,
    actor: Actor,
    id: Option<Extension<RequestId>>,
    body: JsonBody<FactRequest>,
) -> Answer {
    let request = body.read_somewhere(&actor, "facts.write")?;
    let (fact, created) = core.engine.record_fact(&actor, &request, request_id(&id)).await?;
    let status = if created { StatusCode::CREATED } else { StatusCode::OK };
    Ok((status, axum::Json(fact)).into_response())
}

/// `GET /facts`.
pub(super) async fn facts(State(core): State<Core>, actor: Actor, QueryOf(query): QueryOf<FactQuery>) -> Answer {
    Ok(axum::Json(core.engine.facts(&actor, &query).await?).into_response())
}

/// `GET /facts/{id}`.
pub(super) async fn fact(State(core): State<Core>, actor: Actor, Path(id): Path<String>) -> Answer {
    Ok(axum::Json(core.engine.fact(&actor, &id).await?).into_response())
}

/// `POST /rules`.
pub(super) async fn publish_rule(
    State(core): State<Core>,
    actor: Actor,
    id: Option<Extension<RequestId>>,
    body: JsonBody<RuleRequest>,
) -> Answer {
    let request = body.read(&actor, "org.manage")?;
    let rule = core.engine.publish_rule(&actor, &request, request_id(&id)).await?;
    Ok((StatusCode::CREATED, axum::Json(rule)).into_response())
}

/// `GET /rules`.
pub(super) async fn rules(State(core): State<Core>, actor: Actor, QueryOf(query): QueryOf<RuleQuery>) -> Answer {
    Ok(axum::Json(core.engine.rules(&actor, &query).await?).into_response())
}

/// `GET /rules/{reference}`.
pub(super) async fn rule(State(core): State<Core>, actor: Actor, Path(rest): Path<String>) -> Answer {
    if rest.is_empty() || rest.contains([':', '/']) {
        return Err(EngineError::not_found(&format!("route GET …/rules/{rest}")).into());
    }
    Ok(axum::Json(core.engine.rule(&actor, &rest).await?).into_response())
}

/// `POST /rules/{reference}:evaluate`.
pub(super) async fn evaluate_rule(
    State(core): State<Core>,
    actor: Actor,
    Path(rest): Path<String>,
    body: JsonBody<EvaluateRequest>,
) -> Answer {
    let Some(reference) = rest.strip_suffix(":evaluate").filter(|reference| !reference.is_empty()) else {
        return Err(EngineError::not_found(&format!(
            "route POST …/rules/{rest}; the dry run is …/rules/<key or key@version>:evaluate"
        ))
        .into());
    };
    let request = body.read(&actor, "org.read")?;
    Ok(axum::Json(core.engine.evaluate_rule(&actor, reference, &request).await?).into_response())
}
