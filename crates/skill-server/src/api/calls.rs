//! The handlers of calls and executor sessions. A call's actions and a session's share one
//! wildcard route each (`/skill-invocations/{id}:verb`, `/executor-sessions/{id}:verb`): the
//! verb picks the engine call and the body's type.

use axum::Extension;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use skill_api::{
    AudienceTokenRequest, CancelRequest, ClaimRequest, CloseRequest, CompleteRequest, FailRequest, HeartbeatRequest,
    InvocationQuery, InvokeRequest, MAX_DOCUMENT_BYTES, SessionRequest,
};
use skill_engine::{Actor, EngineError};
use skill_http::requests::RequestId;

use super::plumbing::{Failure, JsonBody, QueryOf, request_id};
use crate::Core;

type Answer = Result<Response, Failure>;

/// A call's inputs or output are at most 256 KiB; the body around them a little more.
const CALL_BODY_BYTES: usize = MAX_DOCUMENT_BYTES + 64 * 1024;

/// `POST /skills/{reference}:invoke`.
pub(super) async fn invoke(
    State(core): State<Core>,
    actor: Actor,
    id: Option<Extension<RequestId>>,
    Path(reference): Path<String>,
    body: JsonBody<(), CALL_BODY_BYTES>,
) -> Answer {
    let Some(reference) = reference.strip_suffix(":invoke") else {
        return Err(EngineError::not_found(&format!(
            "route POST …/skills/{reference}; call with …/skills/<ref>:invoke"
        ))
        .into());
    };
    let request: InvokeRequest = body.read_as(&actor, &["skills.invoke"])?;
    let invoked = core.engine.invoke(&actor, reference, &request, request_id(&id)).await?;
    let status = if invoked.created { StatusCode::CREATED } else { StatusCode::OK };
    Ok((status, axum::Json(invoked.invocation)).into_response())
}

pub(super) async fn list(State(core): State<Core>, actor: Actor, QueryOf(query): QueryOf<InvocationQuery>) -> Answer {
    Ok(axum::Json(core.engine.invocations(&actor, &query).await?).into_response())
}

/// `GET /skill-invocations/{id}`.
pub(super) async fn read(State(core): State<Core>, actor: Actor, Path(id): Path<String>) -> Answer {
    Ok(axum::Json(core.engine.invocation(&actor, &id).await?).into_response())
}

/// `POST /skill-invocations:claim`: 200 with the call, or 204.
pub(super) async fn claim(
    State(core): State<Core>,
    actor: Actor,
    id: Option<Extension<RequestId>>,
    body: JsonBody<ClaimRequest>,
) -> Answer {
    let request = body.read(&actor, "skills.execute")?;
    match core.engine.claim(&actor, &request, request_id(&id)).await? {
        Some(claimed) => Ok(axum::Json(claimed).into_response()),
        None => Ok(StatusCode::NO_CONTENT.into_response()),
    }
}

/// `POST /skill-invocations/{id}:heartbeat|complete|fail|cancel`.
pub(super) async fn act(
    State(core): State<Core>,
    actor: Actor,
    request: Option<Extension<RequestId>>,
    Path(rest): Path<String>,
    body: JsonBody<(), CALL_BODY_BYTES>,
) -> Answer {
    let request = request_id(&request);
    let engine = &core.engine;
    let Some((id, verb)) = rest.rsplit_once(':') else {
        return Err(unknown_verb("skill-invocations", &rest));
    };
    let out = match verb {
        "heartbeat" => {
            let body: HeartbeatRequest = body.read_as(&actor, &["skills.execute"])?;
            engine.heartbeat(&actor, id, &body, request).await?
        }
        "complete" => {
            let body: CompleteRequest = body.read_as(&actor, &["skills.execute"])?;
            engine.complete(&actor, id, &body, request).await?
        }
        "fail" => {
            let body: FailRequest = body.read_as(&actor, &["skills.execute"])?;
            engine.fail(&actor, id, &body, request).await?
        }
        "cancel" => {
            let body: CancelRequest = body.read_as(&actor, &["skills.invoke", "org.manage"])?;
            engine.cancel(&actor, id, &body, request).await?
        }
        _ => return Err(unknown_verb("skill-invocations", &rest)),
    };
    Ok(axum::Json(out).into_response())
}

pub(super) async fn open_session(
    State(core): State<Core>,
    actor: Actor,
    id: Option<Extension<RequestId>>,
    body: JsonBody<SessionRequest>,
) -> Answer {
    let request = body.read(&actor, "skills.execute")?;
    let session = core.engine.open_session(&actor, &request, request_id(&id)).await?;
    Ok((StatusCode::CREATED, axum::Json(session)).into_response())
}

/// `POST /executor-sessions/{id}:heartbeat|close`.
pub(super) async fn session_action(
    State(core): State<Core>,
    actor: Actor,
    request: Option<Extension<RequestId>>,
    Path(rest): Path<String>,
    body: JsonBody<()>,
) -> Answer {
    let Some((id, verb)) = rest.rsplit_once(':') else {
        return Err(unknown_verb("executor-sessions", &rest));
    };
    let out = match verb {
        "heartbeat" => {
            let body: SessionRequest = body.read_as(&actor, &["skills.execute"])?;
            core.engine.keep_session(&actor, id, &body).await?
        }
        "close" => {
            let _: CloseRequest = body.read_as(&actor, &["skills.execute"])?;
            core.engine.close_session(&actor, id, request_id(&request)).await?
        }
        _ => return Err(unknown_verb("executor-sessions", &rest)),
    };
    Ok(axum::Json(out).into_response())
}

fn unknown_verb(collection: &str, rest: &str) -> Failure {
    EngineError::not_found(&format!(
        "route POST …/{collection}/{rest}; the actions are named …/{collection}/<id>:<action>"
    ))
    .into()
}

/// `POST /audience-tokens`: a token for one audience, never stored (so no `Idempotency-Key`).
pub(super) async fn audience_token(
    State(core): State<Core>,
    actor: Actor,
    body: JsonBody<AudienceTokenRequest>,
) -> Answer {
    let request = body.read(&actor, "skills.execute")?;
    let token = core.engine.audience_token(&actor, &request).await?;
    let mut response = axum::Json(token).into_response();
    // A bearer token: no cache keeps it.
    response.headers_mut().insert(axum::http::header::CACHE_CONTROL, axum::http::HeaderValue::from_static("no-store"));
    Ok(response)
}
