//! The handlers of artifacts: create and list on `/artifacts`, read and content on one wildcard
//! route (`/artifacts/{id}`, `/artifacts/{id}/content`). Content is answered as stored, with its
//! media type and `X-Content-SHA256`.

use axum::Extension;
use axum::extract::{Path, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use skill_api::Code;
use skill_api::sdk_routes::CONTENT_SHA256_HEADER;
use skill_api::{ArtifactQuery, ArtifactRequest, ArtifactTypeQuery, ArtifactTypeRequest, MAX_ARTIFACT_BYTES};
use skill_engine::{Actor, EngineError};
use skill_http::requests::RequestId;

use super::plumbing::{Failure, JsonBody, QueryOf, request_id};
use crate::Core;

type Answer = Result<Response, Failure>;

/// The content in base64 (4/3 of it) and the fields around it.
const ARTIFACT_BODY_BYTES: usize = MAX_ARTIFACT_BYTES / 3 * 4 + 4 + 128 * 1024;

/// `POST /artifact-types`.
pub(super) async fn publish_type(
    State(core): State<Core>,
    actor: Actor,
    id: Option<Extension<RequestId>>,
    body: JsonBody<ArtifactTypeRequest>,
) -> Answer {
    let request = body.read(&actor, "org.manage")?;
    let out = core.engine.publish_artifact_type(&actor, &request, request_id(&id)).await?;
    Ok((StatusCode::CREATED, axum::Json(out)).into_response())
}

/// `GET /artifact-types`.
pub(super) async fn types(
    State(core): State<Core>,
    actor: Actor,
    QueryOf(query): QueryOf<ArtifactTypeQuery>,
) -> Answer {
    Ok(axum::Json(core.engine.artifact_types(&actor, &query).await?).into_response())
}

/// `GET /artifact-types/{reference}`.
pub(super) async fn read_type(State(core): State<Core>, actor: Actor, Path(reference): Path<String>) -> Answer {
    Ok(axum::Json(core.engine.artifact_type(&actor, &reference).await?).into_response())
}

/// `POST /artifacts`.
pub(super) async fn create(
    State(core): State<Core>,
    actor: Actor,
    id: Option<Extension<RequestId>>,
    body: JsonBody<ArtifactRequest, ARTIFACT_BODY_BYTES>,
) -> Answer {
    let request = body.read_somewhere(&actor, "tasks.write")?;
    let out = core.engine.create_artifact(&actor, &request, request_id(&id)).await?;
    Ok((StatusCode::CREATED, axum::Json(out)).into_response())
}

/// `GET /artifacts?task=`.
pub(super) async fn list(State(core): State<Core>, actor: Actor, QueryOf(query): QueryOf<ArtifactQuery>) -> Answer {
    Ok(axum::Json(core.engine.artifacts(&actor, &query).await?).into_response())
}

/// `GET /artifacts/{id}` and `GET /artifacts/{id}/content`.
pub(super) async fn read(
    State(core): State<Core>,
    actor: Actor,
    Path(rest): Path<String>,
    QueryOf(query): QueryOf<ArtifactQuery>,
) -> Answer {
    if let Some(id) = rest.strip_suffix("/content").filter(|id| !id.is_empty() && !id.contains('/')) {
        let content = core.engine.artifact_content(&actor, id, &query).await?;
        let mut response = content.bytes.into_response();
        let headers = response.headers_mut();
        let media = HeaderValue::from_str(&content.media_type)
            .unwrap_or_else(|_| HeaderValue::from_static("application/octet-stream"));
        headers.insert(header::CONTENT_TYPE, media);
        headers.insert(
            CONTENT_SHA256_HEADER,
            HeaderValue::from_str(&content.sha256).map_err(|_| {
                Failure(EngineError::new(
                    skill_engine::Class::Internal,
                    Code::InternalError,
                    "a stored hash is not a header",
                ))
            })?,
        );
        headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("private, no-store"));
        // Content is data, never a page: no sniffing, no script, and what a browser would run
        // (HTML, SVG, XML, scripts) only as a download.
        headers.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
        headers.insert(
            header::CONTENT_SECURITY_POLICY,
            HeaderValue::from_static("sandbox; default-src 'none'; frame-ancestors 'none'"),
        );
        if runnable(&content.media_type) {
            headers.insert(header::CONTENT_DISPOSITION, HeaderValue::from_static("attachment"));
        }
        return Ok(response);
    }
    if rest.is_empty() || rest.contains('/') {
        return Err(EngineError::not_found(&format!("route GET …/artifacts/{rest}")).into());
    }
    Ok(axum::Json(core.engine.artifact(&actor, &rest, &query).await?).into_response())
}

/// Whether a browser would run content of `media_type` (a page, an image with scripts, a
/// script), rather than show it as data.
fn runnable(media_type: &str) -> bool {
    let essence = media_type.split(';').next().unwrap_or_default().trim().to_ascii_lowercase();
    matches!(
        essence.as_str(),
        "text/html"
            | "application/xhtml+xml"
            | "image/svg+xml"
            | "text/xml"
            | "application/xml"
            | "text/javascript"
            | "application/javascript"
            | "application/ecmascript"
            | "text/ecmascript"
            | "application/x-javascript"
            | "text/xsl"
            | "application/xslt+xml"
            | "multipart/x-mixed-replace"
            | "application/pdf"
    ) || essence.ends_with("+xml")
        || essence.is_empty()
}

#[cfg(test)]
mod tests {
    #[test]
    fn what_a_browser_would_run_is_a_download() {
        for media in
            ["text/html", "TEXT/HTML; charset=utf-8", "image/svg+xml", "application/javascript", "application/atom+xml"]
        {
            assert!(super::runnable(media), "{media}");
        }
        for media in ["text/plain", "application/json", "text/csv", "image/png"] {
            assert!(!super::runnable(media), "{media}");
        }
    }
}
