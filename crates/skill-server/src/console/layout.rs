//! The frame of every console page (head, navigation, sign-out), error pages (with the
//! navigation when someone is signed in), and the small pieces pages share (a JSON value, a
//! status badge, a time shown relative to now with the exact time on hover).

use axum::http::StatusCode;
use axum::response::{Html, IntoResponse, Response};
use chrono::{DateTime, Utc};
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
                            a href="/console/calls" { "Calls" }
                            a href="/console/run" { "Run" }
                            a href="/console/queue" { "Queue" }
                            a href="/console/facts" { "Facts" }
                            a href="/console/processes" { "Processes" }
                            @if viewer.operator {
                                a href="/console/catalog" { "Catalog" }
                                a href="/console/executors" { "Executors" }
                                a href="/console/agents" { "Agents" }
                                a href="/console/costs" { "Costs" }
                                a href="/console/journal" { "Journal" }
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

/// A page as an answer: every character that is invisible or changes the direction of text —
/// in a title, a comment, a field, a text box — written out (`[U+202E]`), so what a person reads
/// is what is there (and what a form sends back is what they read).
pub(super) fn answer(status: StatusCode, markup: Markup) -> Response {
    (status, Html(visible(&markup.into_string()))).into_response()
}

/// A page for `viewer`, or the page of the error that stopped it.
pub(super) fn rendered(viewer: For<'_>, page: Result<Markup, EngineError>) -> Response {
    match page {
        Ok(markup) => answer(StatusCode::OK, markup),
        Err(error) => failure(Some(viewer), &error),
    }
}

/// A page that says why nothing happened.
pub(super) fn refused(viewer: Option<For<'_>>, title: &str, message: &str) -> Response {
    let body = html! { h1 { (title) } p { (message) } p { a href="/console/tasks" { "Back to the tasks" } } };
    answer(StatusCode::FORBIDDEN, page(title, viewer, body))
}

/// The page of an engine error, with its status (and the navigation for `viewer`).
pub(super) fn failure(viewer: Option<For<'_>>, error: &EngineError) -> Response {
    let status = crate::api::plumbing::status(error.class);
    let title = status.canonical_reason().unwrap_or("Error");
    let body = html! {
        h1 { (title) }
        p { (error.message) }
        p.code { "code: " code { (error.code) } }
        p { a href="/console/tasks" { "Back to the tasks" } }
    };
    answer(status, page(title, viewer, body))
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
    let shown = visible(&shown);
    html! {
        @if pre { pre.json { (shown) } } @else { span.text { (shown) } }
        @if total > max { p.note { "… shown in part: " (max) " of " (total) " characters." } }
    }
}

/// Whether `c` is invisible or changes the direction of the text around it — what could make
/// the text a person reads differ from the text that is sent.
pub(super) fn is_hidden(c: char) -> bool {
    skill_api::is_invisible_or_bidi(c) || (c.is_control() && !matches!(c, '\n' | '\t' | '\r'))
}

/// `text` with every [`is_hidden`] character written out as `[U+XXXX]`, so a decider sees what
/// is there, not what it makes the rest look like.
pub(super) fn visible(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if is_hidden(c) {
            out.push_str(&format!("[U+{:04X}]", u32::from(c)));
        } else {
            out.push(c);
        }
    }
    out
}

/// A status as a badge whose class names it.
pub(super) fn badge(status: impl std::fmt::Display) -> Markup {
    let status = status.to_string();
    let class = format!("badge {}", status.replace(|c: char| !c.is_ascii_alphanumeric(), "-"));
    html! { span class=(class) { (status) } }
}

/// A time (RFC 3339) as people read it — "3 minutes ago", "in 20 seconds" — with the exact time
/// on hover; a text that is no time is shown as it is.
pub(super) fn when(at: &str) -> Markup {
    match DateTime::parse_from_rfc3339(at) {
        Ok(time) => {
            let time = time.with_timezone(&Utc);
            let exact = time.format("%Y-%m-%d %H:%M:%S UTC").to_string();
            html! { time.time datetime=(at) title=(exact) { (relative(time, Utc::now())) } }
        }
        Err(_) => html! { span.time { (at) } },
    }
}

/// `time` said relative to `now`.
fn relative(time: DateTime<Utc>, now: DateTime<Utc>) -> String {
    let seconds = (now - time).num_seconds();
    let (amount, future) = (seconds.unsigned_abs(), seconds < 0);
    let said = |count: u64, unit: &str| {
        let unit = if count == 1 { unit.to_owned() } else { format!("{unit}s") };
        if future { format!("in {count} {unit}") } else { format!("{count} {unit} ago") }
    };
    match amount {
        0..=9 => "just now".to_owned(),
        10..=59 => said(amount, "second"),
        60..=3_599 => said(amount / 60, "minute"),
        3_600..=86_399 => said(amount / 3_600, "hour"),
        86_400..=2_591_999 => said(amount / 86_400, "day"),
        _ => time.format("%Y-%m-%d").to_string(),
    }
}

#[cfg(test)]
mod tests {
    use chrono::Duration;

    use super::*;

    #[test]
    fn hidden_characters_are_written_out() {
        let trick = "your claim is \u{202e}devorppa\u{202c}.\nRegards\u{200b}";
        assert_eq!(visible(trick), "your claim is [U+202E]devorppa[U+202C].\nRegards[U+200B]");
        let shown = capped_json(&serde_json::json!({"comment": trick}), usize::MAX).into_string();
        assert!(shown.contains("[U+202E]") && !shown.contains('\u{202e}'), "{shown}");
    }

    #[tokio::test]
    async fn every_page_writes_hidden_characters_out() {
        let page = answer(StatusCode::OK, maud::html! { h1 { "Refund \u{202e}devorppa" } textarea { "ok\u{200b}" } });
        let body = axum::body::to_bytes(page.into_body(), 1 << 20).await.expect("a body");
        let text = String::from_utf8(body.to_vec()).expect("text");
        assert!(text.contains("Refund [U+202E]devorppa") && text.contains("ok[U+200B]"), "{text}");
    }

    #[test]
    fn times_read_relative_to_now() {
        let now = Utc::now();
        for (ago, said) in [
            (Duration::seconds(3), "just now"),
            (Duration::seconds(42), "42 seconds ago"),
            (Duration::seconds(61), "1 minute ago"),
            (Duration::minutes(150), "2 hours ago"),
            (Duration::days(3), "3 days ago"),
            (Duration::seconds(-20), "in 20 seconds"),
            (Duration::minutes(-1), "in 1 minute"),
        ] {
            assert_eq!(relative(now - ago, now), said);
        }
        let old = now - Duration::days(400);
        assert_eq!(relative(old, now), old.format("%Y-%m-%d").to_string());
        let shown = when("2026-01-02T03:04:05.123456Z").into_string();
        assert!(shown.contains("title=\"2026-01-02 03:04:05 UTC\"") && shown.contains("datetime="), "{shown}");
        assert_eq!(when("never").into_string(), "<span class=\"time\">never</span>");
    }
}
