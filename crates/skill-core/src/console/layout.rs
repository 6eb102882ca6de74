//! The frame of every console page (head, navigation, sign-out), error pages, and the small
//! pieces pages share (a JSON value, a status badge).

use axum::http::StatusCode;
use axum::response::{Html, IntoResponse, Response};
use maud::{DOCTYPE, Markup, html};
use serde_json::Value;
use skill_engine::EngineError;

/// Who a page is for: the signed-in person's name and the session's CSRF token (for the
/// sign-out form).
#[derive(Debug, Clone, Copy)]
pub(super) struct For<'a> {
    pub(super) name: &'a str,
    pub(super) csrf: &'a str,
    /// An operator (`org.read`): the catalog is shown in the navigation.
    pub(super) operator: bool,
}

/// A whole page: `title`, the navigation for `viewer` (none before sign-in), and `body`.
pub(super) fn page(title: &str, viewer: Option<For<'_>>, body: Markup) -> Markup {
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                title { (title) " · skill-core" }
                link rel="stylesheet" href="/console/assets/console.css";
                script src="/console/assets/console.js" defer {}
            }
            body {
                header.top {
                    a.brand href="/console/tasks" { "skill-core" }
                    @if let Some(viewer) = viewer {
                        nav {
                            a href="/console/tasks" { "Tasks" }
                            a href="/console/queue" { "Queue" }
                            @if viewer.operator {
                                a href="/console/catalog" { "Catalog" }
                                a href="/console/executors" { "Executors" }
                                a href="/console/costs" { "Costs" }
                            }
                        }
                        form.sign-out method="post" action="/console/sign-out" {
                            input type="hidden" name="csrf" value=(viewer.csrf);
                            span.who { (viewer.name) }
                            button type="submit" { "Sign out" }
                        }
                    }
                }
                main { (body) }
            }
        }
    }
}

/// A page as an answer.
pub(super) fn answer(status: StatusCode, markup: Markup) -> Response {
    (status, Html(markup.into_string())).into_response()
}

/// A page, or the page of the error that stopped it.
pub(super) fn rendered(page: Result<Markup, EngineError>) -> Response {
    match page {
        Ok(markup) => answer(StatusCode::OK, markup),
        Err(error) => failure(&error),
    }
}

/// A page that says why nothing happened.
pub(super) fn refused(title: &str, message: &str) -> Response {
    let body = html! { h1 { (title) } p { (message) } p { a href="/console/tasks" { "Back to the tasks" } } };
    answer(StatusCode::FORBIDDEN, page(title, None, body))
}

/// The page of an engine error, with its status.
pub(super) fn failure(error: &EngineError) -> Response {
    let status = crate::api::plumbing::status(error.class);
    let body = html! {
        h1 { (status.canonical_reason().unwrap_or("Error")) }
        p { (error.message) }
        p.code { "code: " code { (error.code) } }
        p { a href="/console/tasks" { "Back to the tasks" } }
    };
    answer(status, page("Error", None, body))
}

/// Any console path that is not a page.
pub(super) async fn not_found() -> Response {
    let body = html! { h1 { "Not found" } p { "There is no such page." } p { a href="/console/tasks" { "Tasks" } } };
    answer(StatusCode::NOT_FOUND, page("Not found", None, body))
}

/// A JSON value as readable text.
pub(super) fn json(value: &Value) -> Markup {
    capped_json(value, usize::MAX)
}

/// [`json`], showing at most `max` characters of it and saying how much there is.
pub(super) fn capped_json(value: &Value, max: usize) -> Markup {
    let (text, pre) = match value {
        Value::String(text) => (text.clone(), false),
        other => (serde_json::to_string_pretty(other).unwrap_or_default(), true),
    };
    let total = text.chars().count();
    let shown: String = if total > max { text.chars().take(max).collect() } else { text };
    html! {
        @if pre { pre.json { (shown) } } @else { span.text { (shown) } }
        @if total > max { p.note { "… shown in part: " (max) " of " (total) " characters." } }
    }
}

/// A status as a badge whose class names it.
pub(super) fn badge(status: &str) -> Markup {
    let class = format!("badge {}", status.replace(|c: char| !c.is_ascii_alphanumeric(), "-"));
    html! { span class=(class) { (status) } }
}
