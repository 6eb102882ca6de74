//! What calls cost over a period (`org.read`): per skill version and per task, the calls and
//! every number of their reported costs added up.

use axum::extract::{Query, State};
use axum::response::Response;
use chrono::{Duration, Utc};
use maud::{Markup, html};
use serde::Deserialize;
use skill_engine::invocations::{CostLine, MAX_COST_CALLS};
use skill_engine::{Engine, EngineError};

use super::layout::{failure, page, rendered};
use super::session::Viewer;
use crate::Core;

/// The periods offered, in days.
const PERIODS: [u32; 4] = [1, 7, 30, 90];

#[derive(Debug, Deserialize)]
pub(super) struct Period {
    days: Option<String>,
}

/// `GET /console/costs?days=N`.
pub(super) async fn costs(State(core): State<Core>, viewer: Viewer, Query(period): Query<Period>) -> Response {
    let days = match period.days.as_deref().map(str::parse::<u32>) {
        None => 7,
        Some(Ok(days)) if PERIODS.contains(&days) => days,
        Some(_) => {
            let error = EngineError::invalid_request("the period is 1, 7, 30 or 90 days").with("field", "days");
            return failure(Some(viewer.frame()), &error);
        }
    };
    rendered(viewer.frame(), costs_page(&core.engine, &viewer, days).await)
}

fn table(title: &str, lines: &[CostLine], link: Option<&str>) -> Markup {
    html! {
        h2 { (title) }
        @if lines.is_empty() { p.empty { "No call in the period." } }
        @else {
            div.scroll {
                table.costs {
                    thead { tr { th { "" } th { "Calls" } th { "Succeeded" } th { "Cost" } } }
                    tbody {
                        @for line in lines {
                            tr {
                                td { @match link { Some(link) => a href={ (link) (line.key) } { (line.key) }, None => (line.key) } }
                                td { (line.calls) }
                                td { (line.succeeded) }
                                td {
                                    @if line.totals.is_empty() { span.empty { "none reported" } }
                                    @for (name, total) in &line.totals { span.total { code { (name) } " " (total) } br; }
                                }
                            }
                        }
                    }
                }
            }
        }
    }
}

async fn costs_page(engine: &Engine, viewer: &Viewer, days: u32) -> Result<Markup, EngineError> {
    let until = Utc::now();
    let since = until - Duration::days(i64::from(days));
    let report = engine.costs(&viewer.actor, since, until).await?;
    let body = html! {
        h1 { "Costs" }
        p.periods {
            "The last "
            @for period in PERIODS {
                @if period == days { strong { (period) " d" } } @else { a href={ "/console/costs?days=" (period) } { (period) " d" } }
                " "
            }
            "· " (report.calls) " calls"
            @if report.truncated { " (the newest " (MAX_COST_CALLS) " only)" }
        }
        (table("Per skill", &report.by_skill, Some("/console/skills/")))
        (table("Per task", &report.by_task, Some("/console/tasks/")))
    };
    Ok(page("Costs", Some(viewer.frame()), body))
}
