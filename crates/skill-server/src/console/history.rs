//! The history of calls, succeeded ones included, newest first, filtered by skill version,
//! status, task and period — what the API's listing answers the viewer (an operator sees every
//! call; anyone else their own and those of the tasks they read), with people by name.

use axum::extract::{Query, State};
use axum::response::Response;
use chrono::{Duration, Utc};
use maud::{Markup, html};
use skill_api::{InvocationOut, InvocationQuery};
use skill_engine::{Engine, EngineError};

use super::layout::{badge, page, rendered, when};
use super::session::Viewer;
use super::tasks::Names;
use crate::Core;

/// Calls on one page.
const PER_PAGE: u32 = 50;

/// The periods to choose from: `(value, label, hours)`.
const PERIODS: [(&str, &str, i64); 5] = [
    ("1h", "the last hour", 1),
    ("24h", "the last day", 24),
    ("7d", "the last week", 168),
    ("30d", "the last 30 days", 720),
    ("all", "all time", 0),
];

const STATUSES: [&str; 5] = ["pending", "running", "succeeded", "failed", "cancelled"];

#[derive(Debug, Default, serde::Deserialize)]
pub(super) struct Filters {
    #[serde(default)]
    skill: String,
    #[serde(default)]
    status: String,
    #[serde(default)]
    task: String,
    #[serde(default)]
    period: String,
    cursor: Option<String>,
}

impl Filters {
    fn query(&self) -> InvocationQuery {
        let given = |text: &str| Some(text.trim().to_owned()).filter(|text| !text.is_empty());
        let hours = PERIODS.iter().find(|(value, ..)| *value == self.period).map_or(24, |(.., hours)| *hours);
        InvocationQuery {
            skill: given(&self.skill),
            status: given(&self.status),
            task: given(&self.task),
            since: (hours > 0).then(|| (Utc::now() - Duration::hours(hours)).to_rfc3339()),
            limit: Some(PER_PAGE),
            cursor: self.cursor.clone(),
            ..InvocationQuery::default()
        }
    }

    /// The query string of these filters on the page after `cursor`.
    fn next(&self, cursor: &str) -> String {
        let pairs = [("skill", &self.skill), ("status", &self.status), ("task", &self.task), ("period", &self.period)];
        let mut query: Vec<String> = pairs
            .iter()
            .filter(|(_, value)| !value.is_empty())
            .map(|(name, value)| format!("{name}={}", encode(value)))
            .collect();
        query.push(format!("cursor={}", encode(cursor)));
        query.join("&")
    }
}

/// `text` as a query value.
fn encode(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' | b'@' => (b as char).to_string(),
            other => format!("%{other:02X}"),
        })
        .collect()
}

/// `GET /console/calls`.
pub(super) async fn calls(State(core): State<Core>, viewer: Viewer, Query(filters): Query<Filters>) -> Response {
    rendered(viewer.frame(), history_page(&core.engine, &viewer, &filters).await)
}

async fn history_page(engine: &Engine, viewer: &Viewer, filters: &Filters) -> Result<Markup, EngineError> {
    let period = if filters.period.is_empty() { "24h" } else { filters.period.as_str() };
    // A filter the listing refuses (an unknown version, a task one may not read) is said here,
    // with the form to mend it.
    let (listed, problem) = match engine.invocations(&viewer.actor, &filters.query()).await {
        Ok(page) => (Some(page), None),
        Err(error)
            if error.class == skill_engine::Class::Internal || error.class == skill_engine::Class::Unavailable =>
        {
            return Err(error);
        }
        Err(error) => (None, Some(error.message)),
    };
    let mut names = Names::new(engine);
    let mut rows = Vec::new();
    for call in listed.iter().flat_map(|page| &page.items) {
        rows.push((call, names.of(&call.authority_principal_id).await?));
    }
    let everyone = viewer.actor.can("org.read") || viewer.actor.can("skills.execute");
    let body = html! {
        h1 { "Calls" }
        p.meta {
            @if everyone { "Every call of the core." }
            @else { "Your own calls, and with a task, that task's (operators with org.read see every call)." }
        }
        form.filters method="get" action="/console/calls" {
            div.field { label for="f-skill" { "Skill" } input #f-skill type="text" name="skill" placeholder="name@version" value=(filters.skill); }
            div.field {
                label for="f-status" { "Status" }
                select #f-status name="status" {
                    option value="" { "any" }
                    @for status in STATUSES { option value=(status) selected[filters.status == status] { (status) } }
                }
            }
            div.field { label for="f-task" { "Task" } input #f-task type="text" name="task" placeholder="task id" value=(filters.task); }
            div.field {
                label for="f-period" { "Period" }
                select #f-period name="period" {
                    @for (value, label, _) in PERIODS { option value=(value) selected[period == value] { (label) } }
                }
            }
            div.buttons { button type="submit" { "Show" } }
        }
        @if let Some(problem) = &problem { p.error role="alert" { (problem) } }
        @if rows.is_empty() && problem.is_none() { p.empty { "No call matches." } }
        @if !rows.is_empty() {
            table.calls.list {
                thead { tr { th { "Call" } th { "By" } th { "Task" } th { "Created" } th { "Result" } } }
                tbody { @for (call, by) in &rows { (row(call, by)) } }
            }
        }
        @if let Some(next) = listed.as_ref().and_then(|page| page.next_cursor.as_deref()) {
            p.pages { a href={ "/console/calls?" (filters.next(next)) } { "Older calls →" } }
        }
    };
    Ok(page("Calls", Some(viewer.frame()), body))
}

fn row(call: &InvocationOut, by: &str) -> Markup {
    html! {
        tr {
            td data-label="Call" { a href={ "/console/calls/" (call.id) } { (call.skill.name) "@" (call.skill.version) } " " (badge(call.status)) }
            td data-label="By" { (by) }
            td data-label="Task" { @if let Some(task) = &call.task_id { a href={ "/console/tasks/" (task) } { "its task" } } @else { "—" } }
            td data-label="Created" { (when(&call.created_at)) }
            td data-label="Result" {
                @if let Some(error) = &call.error {
                    code { (error.code) } " "
                    span.why { (error.message) }
                } @else if let Some(waiting) = &call.waiting {
                    span class={ "badge waiting-" (waiting.reason) } { (waiting.reason) }
                } @else if let Some(finished) = &call.finished_at {
                    "ended " (when(finished))
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filters_carry_over_to_the_next_page() {
        let filters = Filters {
            skill: "claim.send_reply@1".into(),
            status: "failed".into(),
            period: "7d".into(),
            ..Filters::default()
        };
        assert_eq!(filters.next("c 1"), "skill=claim.send_reply@1&status=failed&period=7d&cursor=c%201");
        let query = filters.query();
        assert_eq!(
            (query.skill.as_deref(), query.status.as_deref(), query.task),
            (Some("claim.send_reply@1"), Some("failed"), None)
        );
        assert!(query.since.is_some());
        let all = Filters { period: "all".into(), ..Filters::default() };
        assert_eq!(all.query().since, None, "all time has no lower bound");
    }
}
