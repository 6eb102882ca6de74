//! The `Idempotency-Key` header on the API's creating and action `POST`s: the first request with
//! a key acts and its answer is kept for a day; a repeat of the same request (method, path,
//! body) by the same principal gets that answer again with `Idempotency-Replayed: true`; a repeat
//! while the first is still running waits for it (up to 10 s); the key with another request or
//! another principal is `409 idempotency_key_reused`. Answers that say nothing final (a 5xx, a
//! 408, a 429) are not kept, so a retry acts again.

use skill_api::Code;
use std::time::Duration;

use axum::body::Body;
use axum::extract::{FromRequestParts, Request, State};
use axum::http::{HeaderMap, HeaderName, HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use serde_json::{Map, Value};
use skill_api::operations::{Method as OpMethod, OPERATIONS};
use skill_api::{IDEMPOTENCY_KEY_HEADER, IDEMPOTENCY_REPLAYED_HEADER, MAX_APPLY_BYTES};
use skill_engine::keyed::{check_request_key, fingerprint, key_in_flight, key_reused};
use skill_engine::{Actor, EngineError};
use skill_http::requests::RequestId;
use skill_store::{Begun, StoredAnswer};

use crate::Core;

/// How long a repeat waits for the first request's answer.
const WAIT_FOR_FIRST: Duration = Duration::from_secs(10);
/// The headers kept with an answer.
const KEPT_HEADERS: &[HeaderName] = &[header::CONTENT_TYPE, header::ETAG, header::LOCATION];

/// Whether `POST path` is an operation that takes the header. The routes are worked out once.
fn keyed(path: &str) -> bool {
    static ROUTES: std::sync::OnceLock<Vec<&'static str>> = std::sync::OnceLock::new();
    let routes = ROUTES.get_or_init(|| {
        OPERATIONS
            .iter()
            .filter(|operation| operation.method == OpMethod::Post && operation.idempotency_key)
            .filter_map(|operation| super::route(operation).map(|(route, _)| route))
            .collect()
    });
    routes.iter().any(|route| super::matches(route, path))
}

pub(crate) async fn layer(State(core): State<Core>, request: Request, next: Next) -> Response {
    if request.method() != Method::POST || !request.headers().contains_key(IDEMPOTENCY_KEY_HEADER) {
        return next.run(request).await;
    }
    let path = request.uri().path().to_owned();
    if !keyed(&path) {
        return next.run(request).await;
    }
    let request_id = request.extensions().get::<RequestId>().map(|id| id.0.clone());
    let fail = |error: EngineError| render(&error, request_id.as_deref());
    let key = match request.headers().get(IDEMPOTENCY_KEY_HEADER).map(HeaderValue::to_str) {
        Some(Ok(key)) => key.to_owned(),
        _ => return fail(EngineError::invalid_request("the Idempotency-Key header must be ASCII")),
    };
    if let Err(error) = check_request_key(&key) {
        return fail(error);
    }
    let (mut parts, body) = request.into_parts();
    // Without a valid credential the handler answers (401); nothing is kept.
    let Ok(actor) = Actor::from_request_parts(&mut parts, &core).await else {
        return next.run(Request::from_parts(parts, body)).await;
    };
    // The handler takes the caller from here instead of looking the token up again.
    parts.extensions.insert(actor.clone());
    // Read whole to fingerprint it; the handler still applies its route's own limit.
    let Ok(bytes) = axum::body::to_bytes(body, MAX_APPLY_BYTES + 1).await else {
        return fail(
            EngineError::new(skill_engine::Class::TooLarge, Code::PayloadTooLarge, "the body is too large")
                .with("limitBytes", MAX_APPLY_BYTES),
        );
    };
    // A body that came slowly is acted on with the credential as it stands once it is in.
    if let Err(error) = core.engine.still_holds(&actor).await {
        return fail(error);
    }
    let path_and_query = parts.uri.path_and_query().map_or(path.clone(), |p| p.as_str().to_owned());
    let print = fingerprint(parts.method.as_str(), &path_and_query, &bytes);
    let deadline = tokio::time::Instant::now() + WAIT_FOR_FIRST;
    loop {
        match core.engine.begin_keyed(&actor, &key, &print).await {
            Err(error) => return fail(error),
            Ok(Begun::Mismatch) => return fail(key_reused()),
            Ok(Begun::Replay(answer)) => return replay(answer),
            Ok(Begun::InFlight) if tokio::time::Instant::now() < deadline => {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            Ok(Begun::InFlight) => return fail(key_in_flight()),
            Ok(Begun::Fresh) => break,
        }
    }
    let response = next.run(Request::from_parts(parts, Body::from(bytes))).await;
    let (head, body) = response.into_parts();
    let bytes = match axum::body::to_bytes(body, usize::MAX).await {
        Ok(bytes) => bytes,
        Err(error) => {
            let _ = core.engine.abandon_keyed(&key).await;
            return fail(EngineError::new(
                skill_engine::Class::Internal,
                Code::InternalError,
                format!("the answer could not be read: {error}"),
            ));
        }
    };
    let status = head.status;
    let lasting =
        !(status.is_server_error() || status == StatusCode::REQUEST_TIMEOUT || status == StatusCode::TOO_MANY_REQUESTS);
    let kept = if lasting {
        let answer =
            StoredAnswer { status: status.as_u16(), headers: kept_headers(&head.headers), body: bytes.to_vec() };
        core.engine.finish_keyed(&key, &answer).await
    } else {
        core.engine.abandon_keyed(&key).await
    };
    if let Err(error) = kept {
        tracing::warn!(key = %key, error = %error, "the answer of a keyed request could not be kept; a repeat acts again after a minute");
    }
    Response::from_parts(head, Body::from(bytes))
}

fn kept_headers(headers: &HeaderMap) -> Value {
    let mut kept = Map::new();
    for name in KEPT_HEADERS {
        if let Some(value) = headers.get(name).and_then(|value| value.to_str().ok()) {
            kept.insert(name.as_str().to_owned(), Value::String(value.to_owned()));
        }
    }
    Value::Object(kept)
}

fn replay(answer: StoredAnswer) -> Response {
    let status = StatusCode::from_u16(answer.status).unwrap_or(StatusCode::OK);
    let mut response = (status, answer.body).into_response();
    if let Value::Object(headers) = &answer.headers {
        for (name, value) in headers {
            if let (Ok(name), Some(Ok(value))) =
                (HeaderName::try_from(name.as_str()), value.as_str().map(HeaderValue::from_str))
            {
                response.headers_mut().insert(name, value);
            }
        }
    }
    response
        .headers_mut()
        .insert(HeaderName::from_static(IDEMPOTENCY_REPLAYED_HEADER), HeaderValue::from_static("true"));
    response
}

/// The envelope of a refusal made here, outside the handlers' own rendering.
fn render(error: &EngineError, request_id: Option<&str>) -> Response {
    (super::plumbing::status(error.class), axum::Json(error.to_envelope(request_id))).into_response()
}
