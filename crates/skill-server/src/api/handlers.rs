//! The handlers of `/api/v1`: each reads its inputs, calls the engine once, and answers with
//! the operation's type from `skill_api`. Errors travel as [`Failure`] to the envelope
//! middleware.

use axum::Extension;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::Value;
use skill_api::{
    ApplyRequest, AssignRequest, Assigned, EventsQuery, Items, ListQuery, MAX_APPLY_BYTES, PageQuery, PatchRequest,
    PublishRequest, RecordRequest, Revoked, SettingsRequest, etag,
};
use skill_engine::{Actor, EngineError};
use skill_http::requests::RequestId;
use skill_store::records::AssignOutcome;

use super::plumbing::{Failure, JsonBody, QueryOf, json_with_etag, request_id};
use crate::Core;

type Answer = Result<Response, Failure>;

/// The document is built once: it depends on nothing but the code.
pub(super) async fn openapi() -> Response {
    static DOCUMENT: std::sync::OnceLock<Value> = std::sync::OnceLock::new();
    axum::Json(DOCUMENT.get_or_init(skill_api::openapi::document)).into_response()
}

pub(super) async fn publish(
    State(core): State<Core>,
    actor: Actor,
    id: Option<Extension<RequestId>>,
    body: JsonBody<PublishRequest>,
) -> Answer {
    let request = body.read(&actor, "org.manage")?;
    let out = core.engine.publish(&actor, &request, request_id(&id)).await?;
    let etag = etag(out.row_version);
    Ok(json_with_etag(StatusCode::CREATED, &out, Some(etag)))
}

pub(super) async fn list(State(core): State<Core>, actor: Actor, QueryOf(query): QueryOf<ListQuery>) -> Answer {
    Ok(axum::Json(core.engine.skills(&actor, &query).await?).into_response())
}

/// `GET /skills/{reference}`, `…:definition`, `…:metadata`.
pub(super) async fn read(State(core): State<Core>, actor: Actor, Path(reference): Path<String>) -> Answer {
    if let Some(reference) = reference.strip_suffix(":definition") {
        return Ok(axum::Json(core.engine.definition(&actor, reference).await?).into_response());
    }
    if let Some(reference) = reference.strip_suffix(":metadata") {
        return Ok(axum::Json(core.engine.metadata(&actor, reference).await?).into_response());
    }
    let out = core.engine.skill(&actor, &reference).await?;
    let etag = etag(out.row_version);
    Ok(json_with_etag(StatusCode::OK, &out, Some(etag)))
}

pub(super) async fn change(
    State(core): State<Core>,
    actor: Actor,
    id: Option<Extension<RequestId>>,
    Path(reference): Path<String>,
    headers: HeaderMap,
    body: JsonBody<PatchRequest>,
) -> Answer {
    let request = body.read(&actor, "org.manage")?;
    let if_match = match headers.get(header::IF_MATCH) {
        None => None,
        Some(value) => Some(
            value
                .to_str()
                .map_err(|_| EngineError::invalid_request("If-Match must be ASCII: \"skill-<rowVersion>\""))?,
        ),
    };
    let out = core.engine.patch(&actor, &reference, if_match, &request, request_id(&id)).await?;
    let etag = etag(out.row_version);
    Ok(json_with_etag(StatusCode::OK, &out, Some(etag)))
}

pub(super) async fn catalogue(State(core): State<Core>, actor: Actor, QueryOf(query): QueryOf<PageQuery>) -> Answer {
    Ok(axum::Json(core.engine.catalogue(&actor, query.limit, query.cursor).await?).into_response())
}

pub(super) async fn assign(
    State(core): State<Core>,
    actor: Actor,
    id: Option<Extension<RequestId>>,
    Path(principal): Path<String>,
    body: JsonBody<AssignRequest>,
) -> Answer {
    let request = body.read(&actor, "org.manage")?;
    let outcome = core
        .engine
        .assign(
            &actor,
            &principal,
            &request.skill_id,
            request.metadata,
            request.read_only.unwrap_or(false),
            request_id(&id),
        )
        .await?;
    let (created, updated) = (outcome == AssignOutcome::Created, outcome == AssignOutcome::Updated);
    let status = if created { StatusCode::CREATED } else { StatusCode::OK };
    let answer = Assigned { principal_id: principal, skill: request.skill_id, created, updated };
    Ok((status, axum::Json(answer)).into_response())
}

pub(super) async fn assigned(State(core): State<Core>, actor: Actor, Path(principal): Path<String>) -> Answer {
    Ok(axum::Json(Items { items: core.engine.assigned(&actor, &principal).await? }).into_response())
}

pub(super) async fn revoke(
    State(core): State<Core>,
    actor: Actor,
    id: Option<Extension<RequestId>>,
    Path((principal, rest)): Path<(String, String)>,
) -> Answer {
    let Some(skill) = rest.strip_suffix(":revoke") else {
        return Err(
            EngineError::not_found(&format!("route …/skills/{rest}; revoke with …/skills/<skill>:revoke")).into()
        );
    };
    let revoked = core.engine.unassign(&actor, &principal, skill, request_id(&id)).await?;
    Ok(axum::Json(Revoked { principal_id: principal, skill: skill.to_owned(), revoked }).into_response())
}

pub(super) async fn record_install(
    State(core): State<Core>,
    actor: Actor,
    id: Option<Extension<RequestId>>,
    body: JsonBody<RecordRequest>,
) -> Answer {
    let request = body.read(&actor, "org.manage")?;
    Ok(axum::Json(core.engine.record_install(&actor, &request, request_id(&id)).await?).into_response())
}

/// The permission comes before the body (up to 32 MiB) is read: a caller who may not apply costs
/// no memory.
pub(super) async fn apply_package(
    State(core): State<Core>,
    actor: Actor,
    id: Option<Extension<RequestId>>,
    request: axum::extract::Request,
) -> Answer {
    if let Err(error) = actor.require("org.manage") {
        super::plumbing::drain(request.into_body(), MAX_APPLY_BYTES).await;
        return Err(Failure(error));
    }
    let body =
        <JsonBody<ApplyRequest, MAX_APPLY_BYTES> as axum::extract::FromRequest<Core>>::from_request(request, &core)
            .await?;
    let request = body.read(&actor, "org.manage")?;
    Ok(axum::Json(core.engine.apply_package(&actor, &request, request_id(&id)).await?).into_response())
}

pub(super) async fn settings(State(core): State<Core>, actor: Actor, Path(key): Path<String>) -> Answer {
    Ok(axum::Json(core.engine.package_settings(&actor, &key).await?).into_response())
}

pub(super) async fn set_settings(
    State(core): State<Core>,
    actor: Actor,
    id: Option<Extension<RequestId>>,
    Path(key): Path<String>,
    body: JsonBody<SettingsRequest>,
) -> Answer {
    let request = body.read(&actor, "org.manage")?;
    Ok(axum::Json(core.engine.set_package_settings(&actor, &key, &request, request_id(&id)).await?).into_response())
}

pub(super) async fn package(State(core): State<Core>, actor: Actor, Path(key): Path<String>) -> Answer {
    Ok(axum::Json(core.engine.package(&actor, &key).await?).into_response())
}

pub(super) async fn events(State(core): State<Core>, actor: Actor, QueryOf(query): QueryOf<EventsQuery>) -> Answer {
    let items = core.engine.events(&actor, query.after.unwrap_or(0), query.subject.as_deref(), query.limit).await?;
    Ok(axum::Json(Items { items }).into_response())
}

/// `POST /principals:disable`.
pub(super) async fn disable_principal(
    State(core): State<Core>,
    actor: Actor,
    id: Option<Extension<RequestId>>,
    body: JsonBody<skill_api::DisableRequest>,
) -> Answer {
    let request = body.read(&actor, "org.manage")?;
    let disabled = core.engine.disable_principal(&actor, &request, request_id(&id)).await?;
    Ok(axum::Json(disabled).into_response())
}

/// `POST /principals/{principal}/executor-allowance`.
pub(super) async fn allow_executor(
    State(core): State<Core>,
    actor: Actor,
    id: Option<Extension<RequestId>>,
    Path(principal): Path<String>,
    body: JsonBody<skill_api::ExecutorAllowance>,
) -> Answer {
    let request = body.read(&actor, "org.manage")?;
    let allowed = core.engine.allow_executor(Some(&actor), &principal, &request, request_id(&id)).await?;
    Ok(axum::Json(allowed).into_response())
}

/// `GET /principals/{principal}/executor-allowance`.
pub(super) async fn executor_allowance(
    State(core): State<Core>,
    actor: Actor,
    Path(principal): Path<String>,
) -> Answer {
    Ok(axum::Json(core.engine.executor_allowance(&actor, &principal).await?).into_response())
}
