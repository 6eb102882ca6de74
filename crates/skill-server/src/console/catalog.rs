//! The operators' catalog (`org.read`): every skill version with its kind, policy, status and
//! package; a version's page with its contract, who is assigned it, and what discovery says of
//! it (`SkillMetadata`: resolved tools, the capability summary, read-only).

use axum::extract::{Path, State};
use axum::response::Response;
use maud::{Markup, html};
use skill_api::{ListQuery, SkillOut};
use skill_engine::{Engine, EngineError};

use super::layout::{badge, json, page, rendered, when};
use super::session::Viewer;
use crate::Core;

/// `GET /console/catalog`.
pub(super) async fn catalog(State(core): State<Core>, viewer: Viewer) -> Response {
    rendered(viewer.frame(), catalog_page(&core.engine, &viewer).await)
}

fn kind(skill: &SkillOut) -> String {
    serde_json::to_value(skill.kind).ok().and_then(|v| v.as_str().map(str::to_owned)).unwrap_or_default()
}

async fn catalog_page(engine: &Engine, viewer: &Viewer) -> Result<Markup, EngineError> {
    let listed = engine.skills(&viewer.actor, &ListQuery { limit: Some(200), ..ListQuery::default() }).await?;
    let body = html! {
        h1 { "Catalog" }
        div.scroll {
            table.catalog {
                thead { tr { th { "Skill" } th { "Kind" } th { "Side effects" } th { "Risk" } th { "Status" } th { "Package" } } }
                tbody {
                    @for skill in &listed.items {
                        tr {
                            td data-label="Skill" { a href={ "/console/skills/" (skill.name) "@" (skill.version) } { (skill.name) "@" (skill.version) }
                                 br; span.meta { (skill.description) } }
                            td data-label="Kind" { (kind(skill)) }
                            td data-label="Side effects" { @if let Some(effects) = &skill.side_effects { (badge(effects)) } }
                            td data-label="Risk" { @if let Some(risk) = &skill.risk_level { span class={ "badge risk-" (risk) } { (risk) } } }
                            td data-label="Status" { (badge(skill.status.as_str())) }
                            td data-label="Package" { @if let Some(package) = &skill.package { (package.key) } }
                        }
                    }
                }
            }
        }
        @if listed.next_cursor.is_some() { p.meta { "The first 200 versions; the API pages through all." } }
    };
    Ok(page("Catalog", Some(viewer.frame()), body))
}

/// `GET /console/skills/{reference}`.
pub(super) async fn skill(State(core): State<Core>, viewer: Viewer, Path(reference): Path<String>) -> Response {
    rendered(viewer.frame(), skill_page(&core.engine, &viewer, &reference).await)
}

async fn skill_page(engine: &Engine, viewer: &Viewer, reference: &str) -> Result<Markup, EngineError> {
    let actor = &viewer.actor;
    actor.require("org.read")?;
    let skill = engine.skill(actor, reference).await?;
    let reference = format!("{}@{}", skill.name, skill.version);
    let metadata = engine.metadata(actor, &reference).await.ok();
    let definition = engine.definition(actor, &reference).await.ok();
    let assignees = engine.assignees(actor, &reference).await?;
    let body = html! {
        p.crumbs { a href="/console/catalog" { "Catalog" } }
        h1 { (reference) " " (badge(skill.status.as_str())) }
        p { (skill.description) }
        dl.fields {
            dt { "Kind" } dd { (kind(&skill)) }
            @if let Some(effects) = &skill.side_effects { dt { "Side effects" } dd { (badge(effects)) } }
            @if let Some(risk) = &skill.risk_level { dt { "Risk" } dd { span class={ "badge risk-" (risk) } { "risk " (risk) } } }
            @if let Some(protocol) = &skill.protocol { dt { "Protocol" } dd { (protocol) } }
            dt { "Package" } dd { @match &skill.package { Some(package) => (package.key), None => "none" } }
            dt { "Published" } dd { (when(&skill.created_at)) }
            dt { "Assigned to" } dd {
                @if assignees.is_empty() { "nobody" }
                @for (name, read_only) in &assignees { span.assignee { (name) @if *read_only { " (read-only)" } } " " }
            }
        }
        @if let Some(metadata) = &metadata {
            h2 { "Discovery" }
            dl.fields {
                dt { "Tools" } dd { (metadata.metadata.tool_count()) }
                dt { "Writes" } dd { (metadata.metadata.writes()) }
                dt { "Read-only" } dd { (metadata.metadata.read_only()) }
                dt { "Source types" } dd { (metadata.metadata.source_types().join(", ")) }
                dt { "Capabilities" } dd {
                    (metadata.metadata.capability_summary().read_tools()) " reading, "
                    (metadata.metadata.capability_summary().write_tools()) " writing"
                }
            }
        }
        @if let Some(definition) = &definition {
            h2 { "Resolved tools" }
            ul.tools {
                @for tool in definition.resolved_tools() {
                    li { (tool.name()) " " span.meta { "from " (tool.skill().to_string()) } @if tool.writes() { " " span.badge.external-write { "writes" } } }
                }
            }
        }
        @if let Some(contract) = &skill.contract { h2 { "Contract" } (json(&contract.to_normalized_json())) }
        @if let Some(includes) = &skill.includes { h2 { "Includes" } ul { @for included in includes { li { (included) } } } }
    };
    Ok(page(&reference, Some(viewer.frame()), body))
}
