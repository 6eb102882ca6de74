//! Facts (`facts.read`): a workspace's facts, newest first; a fact's page — what it holds and
//! what each rule made of it (its evaluation, the interpretation's call, the tasks it ensured,
//! the evidence, why it failed); and, on a task's page, why the task exists.

use axum::extract::{Path, Query, State};
use axum::response::Response;
use maud::{Markup, html};
use serde::Deserialize;
use skill_api::{FactOut, FactQuery, RuleEvaluationOut};
use skill_engine::{Engine, EngineError};

use super::layout::{badge, capped_json, page, rendered, when};
use super::session::Viewer;
use crate::Core;

/// How much of a fact's data its page shows.
const SHOWN_DATA_CHARS: usize = 20_000;

#[derive(Debug, Deserialize)]
pub(super) struct Listing {
    workspace: Option<String>,
    kind: Option<String>,
    cursor: Option<String>,
}

/// `GET /console/facts`.
pub(super) async fn facts(State(core): State<Core>, viewer: Viewer, Query(listing): Query<Listing>) -> Response {
    rendered(viewer.frame(), facts_page(&core.engine, &viewer, &listing).await)
}

async fn facts_page(engine: &Engine, viewer: &Viewer, listing: &Listing) -> Result<Markup, EngineError> {
    let readable = engine.fact_workspaces(&viewer.actor).await?;
    let Some(workspace) = listing.workspace.clone().or_else(|| readable.first().map(|(key, _)| key.clone())) else {
        let body = html! {
            h1 { "Facts" }
            p.empty { "You read the facts of no workspace (facts.read)." }
        };
        return Ok(page("Facts", Some(viewer.frame()), body));
    };
    let query = FactQuery {
        workspace: workspace.clone(),
        kind: listing.kind.clone().filter(|kind| !kind.is_empty()),
        limit: Some(50),
        cursor: listing.cursor.clone(),
    };
    let found = engine.facts(&viewer.actor, &query).await?;
    let body = html! {
        h1 { "Facts" }
        @if readable.len() > 1 {
            p.crumbs {
                @for (key, _) in &readable {
                    @if *key == workspace { strong { (key) } } @else { a href={ "/console/facts?workspace=" (key) } { (key) } }
                    " "
                }
            }
        }
        p.meta { "What happened in the workspace " code { (workspace) } ", newest first; the work rules evaluate each once (docs/rules.md)." }
        @if found.items.is_empty() { p.empty { "No fact yet." } }
        @if !found.items.is_empty() {
            table.list {
                thead { tr { th { "Kind" } th { "Key" } th { "Occurred" } th { "Source" } th { "Evaluated" } } }
                tbody {
                    @for fact in &found.items {
                        tr {
                            td data-label="Kind" { code { (fact.kind) } }
                            td data-label="Key" { a href={ "/console/facts/" (fact.id) } { (fact.key) } }
                            td data-label="Occurred" { (when(&fact.occurred_at)) }
                            td data-label="Source" { (fact.source.as_deref().unwrap_or("")) }
                            td data-label="Evaluated" {
                                @match &fact.evaluated_at { Some(at) => (when(at)), None => span.badge.pending { "waiting" } }
                            }
                        }
                    }
                }
            }
        }
        @if let Some(next) = &found.next_cursor {
            p { a href={ "/console/facts?workspace=" (workspace) "&cursor=" (next) } { "Older facts" } }
        }
    };
    Ok(page("Facts", Some(viewer.frame()), body))
}

/// `GET /console/facts/{id}`.
pub(super) async fn fact(State(core): State<Core>, viewer: Viewer, Path(id): Path<String>) -> Response {
    rendered(viewer.frame(), fact_page(&core.engine, &viewer, &id).await)
}

async fn fact_page(engine: &Engine, viewer: &Viewer, id: &str) -> Result<Markup, EngineError> {
    let fact = engine.fact(&viewer.actor, id).await?;
    let title = format!("{} {}", fact.kind, fact.key);
    let body = html! {
        p.crumbs { a href="/console/facts" { "Facts" } " / " (fact.kind) }
        h1 { code { (fact.kind) } " " (fact.key) }
        p.meta {
            "occurred " (when(&fact.occurred_at)) " · recorded " (when(&fact.created_at))
            @if let Some(source) = &fact.source { " · from " (source) }
            @if fact.depth > 0 { " · depth " (fact.depth) }
            @if let Some(task) = &fact.caused_by_task { " · produced by the work of " a href={ "/console/tasks/" (task) } { "a task" } }
        }
        section #data { h2 { "Data" } (capped_json(&fact.data, SHOWN_DATA_CHARS)) }
        section #evaluations {
            h2 { "What the rules made of it" }
            @if fact.evaluated_at.is_none() { p.empty { "Not evaluated yet: the rules take it up shortly." } }
            @else if fact.evaluations.is_empty() { p.empty { "No rule was for facts of this kind when it was evaluated." } }
            @for evaluation in &fact.evaluations { (evaluation_card(evaluation)) }
        }
    };
    Ok(page(&title, Some(viewer.frame()), body))
}

/// One rule's evaluation: its status, call, work, evidence and error.
fn evaluation_card(evaluation: &RuleEvaluationOut) -> Markup {
    html! {
        article.evaluation id={ "evaluation-" (evaluation.id) } {
            h3 { code { (evaluation.rule) } " " (badge(evaluation.status)) }
            dl.fields {
                @if let Some(call) = &evaluation.invocation_id {
                    dt { "Interpretation" } dd { a href={ "/console/calls/" (call) } { "the call" } }
                }
                @if !evaluation.task_ids.is_empty() {
                    dt { "Work" }
                    dd { @for task in &evaluation.task_ids { a href={ "/console/tasks/" (task) } { "a task" } " " } }
                }
                @if let Some(error) = &evaluation.error {
                    dt { "Why" }
                    dd { code { (error.code) } " " (error.message) }
                }
                dt { "When" } dd { (when(&evaluation.created_at)) @if let Some(ended) = &evaluation.ended_at { " · ended " (when(ended)) } }
            }
        }
    }
}

/// On a task's page: the fact and the rule it comes from, when a rule made it.
pub(super) fn origin(origin: Option<&(FactOut, RuleEvaluationOut)>) -> Markup {
    let Some((fact, evaluation)) = origin else { return html! {} };
    html! {
        section #origin {
            h2 { "Why it exists" }
            p {
                "The rule " code { (evaluation.rule) } " made it from the fact "
                @if fact.data.is_null() { code { (fact.kind) } " " (fact.key) }
                @else { a href={ "/console/facts/" (fact.id) } { code { (fact.kind) } " " (fact.key) } }
                " (" (when(&fact.occurred_at)) ")"
                @if let Some(call) = &evaluation.invocation_id { ", interpreted by " a href={ "/console/calls/" (call) } { "this call" } }
                "."
            }
            @if !fact.data.is_null() { (capped_json(&fact.data, 2_000)) }
        }
    }
}
