//! Deciding an approval from its task's page: the engine's own decision (the decider holds
//! `approvals.decide` in the task's workspace and is not the requester), after the form's checks.

use axum::Form;
use axum::extract::{Path, State};
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Redirect, Response};
use serde::Deserialize;
use skill_api::DecideRequest;

use super::layout::failure;
use super::session::Viewer;
use crate::Core;

#[derive(Debug, Deserialize)]
pub(super) struct DecideForm {
    /// Missing, it is refused as a wrong one.
    #[serde(default)]
    csrf: String,
    outcome: String,
    #[serde(default)]
    comment: String,
}

/// `POST /console/approvals/{id}/decide`: decides, then shows the task again.
pub(super) async fn decide(
    State(core): State<Core>,
    viewer: Viewer,
    headers: HeaderMap,
    Path(id): Path<String>,
    Form(form): Form<DecideForm>,
) -> Response {
    if let Some(refusal) = viewer.form_refusal(&headers, &form.csrf) {
        return refusal;
    }
    // A browser sends a text box's lines with CRLF; the text is what the person saw.
    let comment = (!form.comment.trim().is_empty()).then(|| super::forms::lines(&form.comment));
    let request = DecideRequest { outcome: form.outcome, comment };
    match core.engine.decide(&viewer.actor, &id, &request, viewer.request_id.as_deref()).await {
        Ok(decided) => {
            Redirect::to(&format!("/console/tasks/{}#approval-{}", decided.task_id, decided.id)).into_response()
        }
        Err(error) => failure(Some(viewer.frame()), &error),
    }
}
