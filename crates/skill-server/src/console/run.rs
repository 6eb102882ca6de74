//! Running a skill from the console: the leaf versions the viewer may call (`skills.invoke`),
//! and a version's form made from its input schema, with the task it is for and the approval
//! that is its basis when it writes to the outside world. The call is the viewer's own, made by
//! the engine's invoke with every rule of the API (an external write still needs its basis); its
//! page then shows the result as it comes.

use axum::Form;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Redirect, Response};
use maud::{Markup, html};
use serde_json::{Map, Value};
use skill_api::{InvokeRequest, SkillOut, TaskQuery};
use skill_engine::{Engine, EngineError};

use super::forms;
use super::layout::{answer, badge, failure, page, rendered};
use super::session::Viewer;
use crate::Core;

/// `GET /console/run`.
pub(super) async fn list(State(core): State<Core>, viewer: Viewer) -> Response {
    rendered(viewer.frame(), list_page(&core.engine, &viewer).await)
}

async fn list_page(engine: &Engine, viewer: &Viewer) -> Result<Markup, EngineError> {
    let skills = engine.runnable_skills(&viewer.actor, 200).await?;
    let body = html! {
        h1 { "Run a skill" }
        p.meta { "Call a version yourself, through the core: its executor runs it and its page shows the result. \
                  An external write runs only on a basis — an approved gate asked for exactly that call." }
        @if skills.is_empty() { p.empty { "No version to run." } }
        ul.choices {
            @for skill in &skills {
                li {
                    a href={ "/console/run/" (skill.name) "@" (skill.version) } { (skill.name) "@" (skill.version) }
                    @if let Some(effects) = &skill.side_effects { " " (badge(effects)) }
                    br; span.meta { (skill.description) }
                }
            }
        }
    };
    Ok(page("Run a skill", Some(viewer.frame()), body))
}

/// What the run form held when it came back with an error.
#[derive(Debug, Default)]
struct Filled {
    inputs: Map<String, Value>,
    task: Option<String>,
    approval: Option<String>,
    key: Option<String>,
    error: Option<String>,
}

/// `GET /console/run/{reference}`.
pub(super) async fn form(State(core): State<Core>, viewer: Viewer, Path(reference): Path<String>) -> Response {
    rendered(viewer.frame(), form_page(&core.engine, &viewer, &reference, &Filled::default()).await)
}

/// The JSON Schema of the version's inputs (none for a catalog row or a composite).
fn inputs_schema(skill: &SkillOut) -> Value {
    skill.contract.as_ref().map_or(Value::Null, |contract| contract.inputs().clone())
}

async fn form_page(engine: &Engine, viewer: &Viewer, reference: &str, filled: &Filled) -> Result<Markup, EngineError> {
    let actor = &viewer.actor;
    actor.require("skills.invoke")?;
    let skill = engine.skill(actor, reference).await?;
    let reference = format!("{}@{}", skill.name, skill.version);
    let schema = inputs_schema(&skill);
    let keyed =
        skill.contract.as_ref().is_some_and(|contract| contract.idempotency() == skill_api::Idempotency::Required);
    let writes = skill.side_effects.is_some_and(|effects| effects.writes());
    let tasks = if actor.can_somewhere("tasks.write") {
        let query = TaskQuery { status: Some("open".to_owned()), limit: Some(100), ..TaskQuery::default() };
        engine.tasks(actor, &query).await?.items
    } else {
        Vec::new()
    };
    let key =
        filled.key.clone().unwrap_or_else(|| if keyed { format!("console-{}", uuid_like()) } else { String::new() });
    let body = html! {
        p.crumbs { a href="/console/run" { "Run a skill" } }
        h1 { (reference) }
        p { (skill.description) }
        p {
            @if let Some(effects) = &skill.side_effects { (badge(effects)) " " }
            @if let Some(risk) = &skill.risk_level { span class={ "badge risk-" (risk) } { "risk " (risk) } }
        }
        @if writes {
            p.note { "This version writes to the outside world: it runs only on a basis — name the task and the approved \
                      gate that was asked for exactly this call, with exactly these inputs." }
        }
        @if let Some(error) = &filled.error { p.error role="alert" { (error) } }
        form.work method="post" action={ "/console/run/" (reference) } {
            input type="hidden" name="csrf" value=(viewer.session.csrf);
            @if skill_api::SchemaView(&schema).has_properties() {
                (forms::fields(&schema, &filled.inputs, "run-"))
            } @else {
                p.meta { "It takes no inputs." }
            }
            @if !tasks.is_empty() {
                div.field {
                    label for="run-task" { "For a task (optional: the result becomes its artifact)" }
                    select #run-task name="task" {
                        option value="" { "— none —" }
                        @for task in &tasks {
                            option value=(task.id) selected[filled.task.as_deref() == Some(task.id.as_str())] { (task.title) }
                        }
                    }
                }
            }
            @if writes {
                div.field {
                    label for="run-approval" { "Approval (its basis)" }
                    input #run-approval type="text" name="approval" value=[filled.approval.as_deref()];
                }
            }
            div.field {
                label for="run-key" { "Idempotency key" @if keyed { " " span.required title="required" { "*" } } }
                input #run-key type="text" name="key" maxlength="200" value=(key) required[keyed];
                p.help { "Sending the same key again answers with the first call instead of making another." }
            }
            div.buttons { button.primary type="submit" { "Run" } }
        }
    };
    Ok(page(&reference, Some(viewer.frame()), body))
}

/// Something unique enough for a key the console proposes.
fn uuid_like() -> String {
    let now = chrono::Utc::now();
    format!("{}-{:09}", now.format("%Y%m%d%H%M%S"), now.timestamp_subsec_nanos())
}

/// `POST /console/run/{reference}`: the call, then its page; a refusal shows the form again.
pub(super) async fn run(
    State(core): State<Core>,
    viewer: Viewer,
    headers: HeaderMap,
    Path(reference): Path<String>,
    Form(sent): Form<Vec<(String, String)>>,
) -> Response {
    if let Some(refusal) = viewer.form_refusal(&headers, forms::plain(&sent, "csrf").unwrap_or_default()) {
        return refusal;
    }
    let engine = &core.engine;
    let skill = match engine.skill(&viewer.actor, &reference).await {
        Ok(skill) => skill,
        Err(error) => return failure(Some(viewer.frame()), &error),
    };
    let schema = inputs_schema(&skill);
    let given =
        |name: &str| forms::plain(&sent, name).map(str::trim).filter(|text| !text.is_empty()).map(str::to_owned);
    let mut filled =
        Filled { task: given("task"), approval: given("approval"), key: given("key"), ..Filled::default() };
    let outcome = match forms::read(&schema, &sent) {
        Ok(inputs) => {
            filled.inputs.clone_from(&inputs);
            let request = InvokeRequest {
                inputs: Some(inputs),
                idempotency_key: filled.key.clone(),
                task_id: filled.task.clone(),
                run_id: None,
                approval_id: filled.approval.clone(),
            };
            engine
                .invoke(&viewer.actor, &reference, &request, viewer.request_id.as_deref())
                .await
                .map_err(|e| e.message)
        }
        Err((_, why)) => Err(why),
    };
    match outcome {
        Ok(invoked) => Redirect::to(&format!("/console/calls/{}", invoked.invocation.id)).into_response(),
        Err(why) => {
            filled.error = Some(why);
            if filled.inputs.is_empty() {
                filled.inputs = forms::as_typed(&sent);
            }
            match form_page(engine, &viewer, &reference, &filled).await {
                Ok(markup) => answer(StatusCode::UNPROCESSABLE_ENTITY, markup),
                Err(error) => failure(Some(viewer.frame()), &error),
            }
        }
    }
}
