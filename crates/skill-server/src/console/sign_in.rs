//! Signing in with a personal access token (exchanged for a session), and signing out.

use axum::Form;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};
use maud::{Markup, html};
use serde::Deserialize;
use skill_engine::{Class, Origin};

use super::layout::{answer, failure, page, refused};
use super::session::{Viewer, clear_cookie, same_origin, session_cookie};
use crate::Core;

fn sign_in_page(message: Option<&str>) -> Markup {
    let body = html! {
        section.sign-in {
            h1 { "Sign in" }
            p { "Paste a personal access token (" code { "skp_…" } "). The console keeps a session for up to 12 hours, \
                 never longer than the token lives; signing out ends it." }
            @if let Some(message) = message {
                p.error role="alert" { (message) }
            }
            form method="post" action="/console/sign-in" {
                label for="token" { "Token" }
                input #token type="password" name="token" autocomplete="off" required;
                button type="submit" { "Sign in" }
            }
        }
    };
    page("Sign in", None, body)
}

/// `GET /console/sign-in`.
pub(super) async fn form() -> Response {
    answer(StatusCode::OK, sign_in_page(None))
}

#[derive(Debug, Deserialize)]
pub(super) struct SignIn {
    token: String,
}

/// `POST /console/sign-in`: the token for a session, then the tasks.
pub(super) async fn sign_in(State(core): State<Core>, headers: HeaderMap, Form(form): Form<SignIn>) -> Response {
    if !same_origin(&headers) {
        return refused(None, "This form does not come from this console", "Nothing was changed.");
    }
    match core.engine.sign_in(&form.token, &Origin::default()).await {
        Ok(signed) => {
            let mut response = Redirect::to("/console/tasks").into_response();
            let cookie = session_cookie(&signed.secret, &signed.session, core.console.secure_cookies);
            response.headers_mut().insert(header::SET_COOKIE, cookie);
            response
        }
        Err(error) if error.class == Class::Unauthenticated => answer(
            StatusCode::UNAUTHORIZED,
            sign_in_page(Some(&format!("That token does not sign you in: {}.", error.message))),
        ),
        Err(error) if error.class == Class::Forbidden => {
            answer(StatusCode::FORBIDDEN, sign_in_page(Some(&error.message)))
        }
        Err(error) => failure(None, &error),
    }
}

#[derive(Debug, Deserialize)]
pub(super) struct SignOut {
    /// Missing, it is refused as a wrong one.
    #[serde(default)]
    csrf: String,
}

/// `POST /console/sign-out`: the session ends; its cookie no longer signs anyone in.
pub(super) async fn sign_out(
    State(core): State<Core>,
    viewer: Viewer,
    headers: HeaderMap,
    Form(form): Form<SignOut>,
) -> Response {
    if let Some(refusal) = viewer.form_refusal(&headers, &form.csrf) {
        return refusal;
    }
    if let Err(error) = core.engine.sign_out(&viewer.session, &viewer.origin()).await {
        return failure(Some(viewer.frame()), &error);
    }
    let mut response = Redirect::to("/console/sign-in").into_response();
    response.headers_mut().insert(header::SET_COOKIE, clear_cookie(core.console.secure_cookies));
    response
}
