//! What every route shares: the caller (a bearer token → [`Actor`]), JSON bodies (size limit,
//! no NUL characters, unknown fields refused, the failing field named), query strings, and the
//! one mapping from an engine error to a status and the envelope with the request id.

use axum::Extension;
use axum::extract::{FromRequest, FromRequestParts, Query, Request};
use axum::http::request::Parts;
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use http_body_util::BodyExt as _;
use serde::de::DeserializeOwned;
use skill_api::Code;
use skill_engine::{Actor, Class, EngineError};
use skill_http::requests::RequestId;

use super::strict::Strict;
use crate::Core;

/// The largest request body the API reads.
pub const MAX_BODY_BYTES: usize = 2 * 1024 * 1024;

/// A failed request: the engine's error, rendered by [`envelope`] with the request id.
#[derive(Debug)]
pub struct Failure(pub EngineError);

impl From<EngineError> for Failure {
    fn from(error: EngineError) -> Self {
        Self(error)
    }
}

/// The one mapping from an error class to an HTTP status.
pub fn status(class: Class) -> StatusCode {
    match class {
        Class::BadRequest => StatusCode::BAD_REQUEST,
        Class::TooLarge => StatusCode::PAYLOAD_TOO_LARGE,
        Class::UnsupportedMedia => StatusCode::UNSUPPORTED_MEDIA_TYPE,
        Class::MethodNotAllowed => StatusCode::METHOD_NOT_ALLOWED,
        Class::Timeout => StatusCode::REQUEST_TIMEOUT,
        Class::Unauthenticated => StatusCode::UNAUTHORIZED,
        Class::Forbidden => StatusCode::FORBIDDEN,
        Class::NotFound => StatusCode::NOT_FOUND,
        Class::Conflict => StatusCode::CONFLICT,
        Class::PreconditionRequired => StatusCode::PRECONDITION_REQUIRED,
        Class::Invalid => StatusCode::UNPROCESSABLE_ENTITY,
        Class::Unavailable => StatusCode::SERVICE_UNAVAILABLE,
        Class::Internal => StatusCode::INTERNAL_SERVER_ERROR,
    }
}

impl IntoResponse for Failure {
    fn into_response(self) -> Response {
        let mut response = status(self.0.class).into_response();
        if self.0.class == Class::Unauthenticated {
            let challenge =
                format!("Bearer realm=\"skill-core\", error=\"invalid_token\", error_description=\"{}\"", self.0.code);
            if let Ok(value) = HeaderValue::from_str(&challenge) {
                response.headers_mut().insert(header::WWW_AUTHENTICATE, value);
            }
        }
        response.extensions_mut().insert(self.0);
        response
    }
}

/// Renders a failure's envelope with the request's id (the middleware inside the request log).
pub async fn envelope(request: Request, next: Next) -> Response {
    let request_id = request.extensions().get::<RequestId>().map(|id| id.0.clone());
    let mut response = next.run(request).await;
    if let Some(error) = response.extensions_mut().remove::<EngineError>() {
        let status = response.status();
        let mut rendered = (status, axum::Json(error.to_envelope(request_id.as_deref()))).into_response();
        for (name, value) in response.headers() {
            if name != header::CONTENT_TYPE && name != header::CONTENT_LENGTH {
                rendered.headers_mut().insert(name.clone(), value.clone());
            }
        }
        return rendered;
    }
    response
}

/// The request id as handlers see it.
pub fn request_id(id: &Option<Extension<RequestId>>) -> Option<&str> {
    id.as_ref().map(|Extension(RequestId(id))| id.as_str())
}

impl FromRequestParts<Core> for Actor {
    type Rejection = Failure;

    async fn from_request_parts(parts: &mut Parts, core: &Core) -> Result<Self, Self::Rejection> {
        // Authenticated already by a layer in front of the handler (the Idempotency-Key layer).
        if let Some(actor) = parts.extensions.get::<Actor>() {
            return Ok(actor.clone());
        }
        let Some(value) = parts.headers.get(header::AUTHORIZATION) else {
            return Err(Failure(EngineError::new(
                Class::Unauthenticated,
                Code::MissingAuthorization,
                "send a personal access token: Authorization: Bearer skp_…",
            )));
        };
        // The scheme is case-insensitive (RFC 9110 §11.1): `Bearer`, `bearer`, `BEARER`.
        let token = value
            .to_str()
            .ok()
            .and_then(|text| text.split_once(' '))
            .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
            .map(|(_, token)| token.trim());
        let Some(token) = token.filter(|token| !token.is_empty()) else {
            return Err(Failure(
                EngineError::new(
                    Class::Unauthenticated,
                    Code::InvalidToken,
                    "the Authorization header is not a bearer token: send Authorization: Bearer skp_…",
                )
                .with("reason", "malformed"),
            ));
        };
        let actor = core.engine.authenticate(token).await?;
        // Kept for the body's extractor, which checks the credential again once a slow body is in.
        parts.extensions.insert(actor.clone());
        Ok(actor)
    }
}

/// A JSON body for a `T`: at most `LIMIT` bytes ([`MAX_BODY_BYTES`] unless a route says
/// otherwise), sent as `application/json`. It is read here and parsed by [`JsonBody::read`]
/// only after the handler has checked the caller's permission, so a caller without it learns
/// nothing from a body's shape.
#[derive(Debug)]
pub struct JsonBody<T, const LIMIT: usize = MAX_BODY_BYTES> {
    bytes: axum::body::Bytes,
    wanted: std::marker::PhantomData<fn() -> T>,
}

impl<T: DeserializeOwned, const LIMIT: usize> JsonBody<T, LIMIT> {
    /// The body as a `T` once `actor` holds `permission`: a JSON object (no member twice, no
    /// NUL character, no unknown field), the failing field named.
    pub fn read(self, actor: &Actor, permission: &str) -> Result<T, Failure> {
        actor.require(permission).map_err(Failure)?;
        parse(&self.bytes)
    }
}

impl<T: DeserializeOwned, const LIMIT: usize> JsonBody<T, LIMIT> {
    /// [`JsonBody::read`] for a permission held per workspace: the caller holds it in some
    /// workspace (the engine checks the one the body names).
    pub fn read_somewhere(self, actor: &Actor, permission: &str) -> Result<T, Failure> {
        if !actor.can_somewhere(permission) {
            return Err(Failure(EngineError::forbidden(permission)));
        }
        parse(&self.bytes)
    }
}

impl<const LIMIT: usize> JsonBody<(), LIMIT> {
    /// [`JsonBody::read_as`] for a permission held per workspace (somewhere).
    pub fn read_as_somewhere<U: DeserializeOwned>(self, actor: &Actor, permission: &str) -> Result<U, Failure> {
        if !actor.can_somewhere(permission) {
            return Err(Failure(EngineError::forbidden(permission)));
        }
        parse(&self.bytes)
    }

    /// [`JsonBody::read`] for a route that learns the body's type from its path (a `:verb`),
    /// after the handler checked the permission.
    pub fn read_as<U: DeserializeOwned>(self, actor: &Actor, permissions: &[&str]) -> Result<U, Failure> {
        actor.require_any(permissions).map_err(Failure)?;
        parse(&self.bytes)
    }
}

impl<T, const LIMIT: usize> FromRequest<Core> for JsonBody<T, LIMIT> {
    type Rejection = Failure;

    async fn from_request(request: Request, core: &Core) -> Result<Self, Self::Rejection> {
        let actor = request.extensions().get::<Actor>().cloned();
        let media = request.headers().get(header::CONTENT_TYPE).and_then(|value| value.to_str().ok());
        let json = media.and_then(|media| media.split(';').next()).is_some_and(|media| {
            let media = media.trim();
            media.eq_ignore_ascii_case("application/json")
                || (media.len() > 5
                    && media[..media.len() - 5].contains('/')
                    && media.to_ascii_lowercase().ends_with("+json"))
        });
        if !json {
            return Err(Failure(
                EngineError::new(
                    Class::UnsupportedMedia,
                    Code::UnsupportedMediaType,
                    format!(
                        "send the body as JSON with Content-Type: application/json, not {}",
                        media.unwrap_or("none")
                    ),
                )
                .with("contentType", media.unwrap_or_default().to_owned()),
            ));
        }
        let mut body = request.into_body();
        let mut bytes = Vec::new();
        while let Some(frame) = body.frame().await {
            let frame = frame.map_err(|error| unread(error, LIMIT))?;
            let Some(data) = frame.data_ref() else { continue };
            if bytes.len() + data.len() > LIMIT {
                drain(body, LIMIT).await;
                return Err(too_large(LIMIT));
            }
            bytes.extend_from_slice(data);
        }
        // A body that came slowly is acted on with the credential as it stands once it is in.
        if let Some(actor) = &actor {
            core.engine.still_holds(actor).await?;
        }
        Ok(Self { bytes: bytes.into(), wanted: std::marker::PhantomData })
    }
}

/// Reads what is left of a body a route answers without: a client still sending reads the answer
/// instead of a reset connection. Up to four times `limit` is read and thrown away, for at most
/// two seconds; nothing is kept.
pub async fn drain(mut body: axum::body::Body, limit: usize) {
    let discard = async {
        let mut seen = 0usize;
        while seen <= limit.saturating_mul(4) {
            match body.frame().await {
                Some(Ok(frame)) => seen += frame.data_ref().map_or(0, |data| data.len()),
                _ => break,
            }
        }
    };
    let _ = tokio::time::timeout(std::time::Duration::from_secs(2), discard).await;
}

/// 413 for a body over `limit` bytes.
fn too_large(limit: usize) -> Failure {
    Failure(
        EngineError::new(Class::TooLarge, Code::PayloadTooLarge, format!("the body is larger than {limit} bytes"))
            .with("limitBytes", limit),
    )
}

/// Why a body could not be read, by its cause: over the limit (413), too slow (408), cut by the
/// server's stop (503, retryable), or broken off by the client (400).
fn unread(error: axum::Error, limit: usize) -> Failure {
    let chain: &(dyn std::error::Error + 'static) = &error;
    let mut cause = Some(chain);
    while let Some(current) = cause {
        if current.is::<http_body_util::LengthLimitError>() {
            return too_large(limit);
        }
        cause = current.source();
    }
    Failure(match skill_http::BodyCut::in_chain(&error) {
        Some(cut @ skill_http::BodyCut::TooSlow(_)) => {
            EngineError::new(Class::Timeout, Code::RequestTimeout, cut.to_string())
        }
        Some(cut @ skill_http::BodyCut::Stopping) => {
            EngineError::new(Class::Unavailable, Code::Unavailable, cut.to_string())
        }
        None => EngineError::invalid_request(format!("the body could not be read: {error}")),
    })
}

/// Parses a body, naming the field that failed.
pub fn parse<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, Failure> {
    let Strict(value) = serde_json::from_slice(bytes)
        .map_err(|error| Failure(EngineError::invalid_request(format!("the body is not JSON: {error}"))))?;
    if !value.is_object() {
        let found = match value {
            serde_json::Value::Array(_) => "an array",
            serde_json::Value::String(_) => "a string",
            serde_json::Value::Number(_) => "a number",
            serde_json::Value::Bool(_) => "a boolean",
            _ => "null",
        };
        return Err(Failure(EngineError::invalid_request(format!("the body must be a JSON object, not {found}"))));
    }
    if let Some(place) = nul_at(&value, String::new()) {
        return Err(Failure(
            EngineError::invalid_request("the body holds a NUL character, which no field accepts").with("field", place),
        ));
    }
    serde_path_to_error::deserialize(value).map_err(|error| {
        let mut failure = EngineError::invalid_request(format!("the body does not fit: {}", error.inner()));
        if let Some(field) = named_field(&error.path().to_string(), &error.inner().to_string()) {
            failure = failure.with("field", field);
        }
        Failure(failure)
    })
}

/// Where a NUL character sits in a key or a string of `value`, if anywhere.
fn nul_at(value: &serde_json::Value, at: String) -> Option<String> {
    match value {
        serde_json::Value::String(text) => text.contains('\0').then_some(at),
        serde_json::Value::Array(items) => {
            items.iter().enumerate().find_map(|(index, item)| nul_at(item, format!("{at}[{index}]")))
        }
        serde_json::Value::Object(map) => map.iter().find_map(|(key, item)| {
            let here = if at.is_empty() { key.clone() } else { format!("{at}.{key}") };
            if key.contains('\0') { Some(here) } else { nul_at(item, here) }
        }),
        _ => None,
    }
}

/// A query string of type `T`; unknown parameters are refused.
#[derive(Debug)]
pub struct QueryOf<T>(pub T);

impl<T: DeserializeOwned + Send, S: Send + Sync> FromRequestParts<S> for QueryOf<T> {
    type Rejection = Failure;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        match Query::<T>::from_request_parts(parts, state).await {
            Ok(Query(query)) => Ok(Self(query)),
            Err(rejection) => Err(Failure(query_refused(&rejection))),
        }
    }
}

/// The field a deserialization error is about: its path, or for an unknown or missing field
/// (refused at the top, path `.`) the name serde's message gives.
fn named_field(path: &str, message: &str) -> Option<String> {
    if path != "." {
        return Some(path.to_owned());
    }
    ["unknown field `", "missing field `"]
        .iter()
        .find_map(|lead| message.strip_prefix(lead))
        .and_then(|rest| rest.split_once('`'))
        .map(|(name, _)| name.to_owned())
}

/// A query string that does not fit: `400 invalid_request`, with the parameter in
/// `details.field` as a body's field is named.
fn query_refused(rejection: &axum::extract::rejection::QueryRejection) -> EngineError {
    let failure = EngineError::invalid_request(rejection.body_text());
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(rejection);
    while let Some(error) = source {
        if let Some(found) = error.downcast_ref::<serde_path_to_error::Error<serde::de::value::Error>>() {
            return match named_field(&found.path().to_string(), &found.inner().to_string()) {
                Some(field) => failure.with("field", field),
                None => failure,
            };
        }
        source = error.source();
    }
    failure
}

/// A JSON response with a status and, for one skill version, its ETag.
pub fn json_with_etag(status: StatusCode, body: &impl serde::Serialize, etag: Option<String>) -> Response {
    let mut response = (status, axum::Json(body)).into_response();
    if let Some(value) = etag.and_then(|etag| HeaderValue::from_str(&etag).ok()) {
        response.headers_mut().insert(header::ETAG, value);
    }
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_query_that_does_not_fit_names_its_parameter() {
        #[derive(Debug, serde::Deserialize)]
        #[serde(deny_unknown_fields, rename_all = "camelCase")]
        #[allow(dead_code)]
        struct Paged {
            steps_limit: Option<u32>,
        }
        let field = |query: &str| {
            let uri: axum::http::Uri = format!("/x?{query}").parse().expect("a URI");
            let Err(rejection) = Query::<Paged>::try_from_uri(&uri) else { panic!("{query} fits") };
            query_refused(&rejection).details.get("field").and_then(|f| f.as_str()).map(str::to_owned)
        };
        assert_eq!(field("stepsLimit=abc").as_deref(), Some("stepsLimit"));
        assert_eq!(field("stepsLimit=-1").as_deref(), Some("stepsLimit"));
        assert_eq!(field("foo=1").as_deref(), Some("foo"));
    }

    #[test]
    fn nul_characters_are_refused_raw_or_escaped() {
        #[derive(Debug, serde::Deserialize)]
        #[allow(dead_code)]
        struct Body {
            name: String,
        }
        assert!(parse::<Body>(br#"{"name": "a"}"#).is_ok());
        assert!(parse::<Body>(br#"{"name": "a\u0000"}"#).is_err());
        assert!(parse::<Body>(br#"{"name": "a\\u0000"}"#).is_ok(), "an escaped backslash is not a NUL");
        let Err(Failure(error)) = parse::<Body>(br#"{"name": 7}"#) else { panic!("a number is not a name") };
        assert_eq!((error.code.as_str(), error.details["field"].as_str()), ("invalid_request", Some("name")));
        let Err(Failure(missing)) = parse::<Body>(br"{}") else { panic!("a name is required") };
        assert_eq!(missing.details["field"].as_str(), Some("name"));
    }
}
