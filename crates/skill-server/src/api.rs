//! The API under `/api/v1`: the router is built from `skill_api::operations::OPERATIONS`, each
//! operation matched exhaustively to its handler, so the OpenAPI document (built from the same
//! table) lists exactly what is served.

mod agents;
mod artifacts;
mod calls;
mod handlers;
pub(crate) mod idempotency;
mod journal;
mod knowledge;
mod package_tests;
pub mod plumbing;
mod processes;
mod rules;
mod strict;
mod work;

use axum::Router;
use axum::routing::{MethodFilter, MethodRouter, get, on};
use skill_api::Code;
use skill_api::operations::{Method, OPERATIONS, Op, Operation};

use crate::Core;

/// The axum route of an operation and its handler; `None` for an operation that another
/// operation's route serves (a `{reference}` with a `:verb` suffix shares the wildcard route).
#[allow(clippy::too_many_lines, reason = "a data table: one arm per operation of the API")]
fn route(operation: &Operation) -> Option<(&'static str, MethodRouter<Core>)> {
    let filter = match operation.method {
        Method::Get => MethodFilter::GET,
        Method::Post => MethodFilter::POST,
        Method::Patch => MethodFilter::PATCH,
    };
    let served = match operation.op {
        Op::PublishSkill => ("/skills", on(filter, handlers::publish)),
        Op::ListSkills => ("/skills", on(filter, handlers::list)),
        Op::ReadSkill => ("/skills/{*reference}", on(filter, handlers::read)),
        Op::SkillDefinition | Op::SkillMetadata => return None,
        Op::PatchSkill => ("/skills/{*reference}", on(filter, handlers::change)),
        Op::Catalogue => ("/catalogue", on(filter, handlers::catalogue)),
        Op::AssignSkill => ("/principals/{principal}/skills", on(filter, handlers::assign)),
        Op::AssignedSkills => ("/principals/{principal}/skills", on(filter, handlers::assigned)),
        Op::RevokeSkill => ("/principals/{principal}/skills/{*revoke}", on(filter, handlers::revoke)),
        Op::ApplyPackage => ("/packages:apply", on(filter, handlers::apply_package)),
        Op::TestPackage => ("/packages:test", on(filter, package_tests::test)),
        Op::RecordInstall => ("/packages:record", on(filter, handlers::record_install)),
        Op::ReadInstall => ("/packages/{key}", on(filter, handlers::package)),
        Op::Events => ("/events", on(filter, handlers::events)),
        Op::JournalCheckpoint => ("/journal/checkpoint", on(filter, journal::checkpoint)),
        Op::InclusionProof => ("/journal/proofs/inclusion", on(filter, journal::inclusion)),
        Op::ConsistencyProof => ("/journal/proofs/consistency", on(filter, journal::consistency)),
        Op::InvokeSkill => ("/skills/{*reference}", on(filter, calls::invoke)),
        Op::ListInvocations => ("/skill-invocations", on(filter, calls::list)),
        Op::ReadInvocation => ("/skill-invocations/{*rest}", on(filter, calls::read)),
        Op::ClaimInvocation => ("/skill-invocations:claim", on(filter, calls::claim)),
        Op::HeartbeatInvocation => ("/skill-invocations/{*rest}", on(filter, calls::act)),
        Op::CompleteInvocation | Op::FailInvocation | Op::CancelInvocation => return None,
        Op::OpenSession => ("/executor-sessions", on(filter, calls::open_session)),
        Op::KeepSession => ("/executor-sessions/{*rest}", on(filter, calls::session_action)),
        Op::CloseSession => return None,
        Op::ReadSettings => ("/packages/{key}/settings", on(filter, handlers::settings)),
        Op::SetSettings => ("/packages/{key}/settings", on(filter, handlers::set_settings)),
        Op::IssueAudienceToken => ("/audience-tokens", on(filter, calls::audience_token)),
        Op::DisablePrincipal => ("/principals:disable", on(filter, handlers::disable_principal)),
        Op::SetExecutorAllowance => {
            ("/principals/{principal}/executor-allowance", on(filter, handlers::allow_executor))
        }
        Op::ReadExecutorAllowance => {
            ("/principals/{principal}/executor-allowance", on(filter, handlers::executor_allowance))
        }
        Op::ListAgents => ("/agents", on(filter, agents::list)),
        Op::ReadAgent => ("/agents/{key}", on(filter, agents::read)),
        Op::IssueAgentToken => ("/agents/{key}/tokens", on(filter, agents::issue_token)),
        Op::PublishTaskType => ("/task-types", on(filter, work::publish_task_type)),
        Op::ListTaskTypes => ("/task-types", on(filter, work::task_types)),
        Op::ReadTaskType => ("/task-types/{reference}", on(filter, work::task_type)),
        Op::CreateTask => ("/tasks", on(filter, work::create_task)),
        Op::ListTasks => ("/tasks", on(filter, work::tasks)),
        Op::ReadTask => ("/tasks/{*rest}", on(filter, work::task)),
        Op::CloseTask => ("/tasks/{*rest}", on(filter, work::close_task)),
        Op::StartRun => ("/runs", on(filter, work::start_run)),
        Op::ReadRun => ("/runs/{*rest}", on(filter, work::run)),
        Op::EndRun => ("/runs/{*rest}", on(filter, work::end_run)),
        Op::RequestApproval => ("/approvals", on(filter, work::request_approval)),
        Op::ListApprovals => ("/approvals", on(filter, work::approvals)),
        Op::ReadApproval => ("/approvals/{*rest}", on(filter, work::approval)),
        Op::DecideApproval => ("/approvals/{*rest}", on(filter, work::approval_action)),
        Op::WithdrawApproval | Op::RetryOutcome => return None,
        Op::AddComment => ("/task-comments", on(filter, work::add_comment)),
        Op::ListComments => ("/task-comments", on(filter, work::comments)),
        Op::PublishArtifactType => ("/artifact-types", on(filter, artifacts::publish_type)),
        Op::ListArtifactTypes => ("/artifact-types", on(filter, artifacts::types)),
        Op::ReadArtifactType => ("/artifact-types/{reference}", on(filter, artifacts::read_type)),
        Op::CreateArtifact => ("/artifacts", on(filter, artifacts::create)),
        Op::ListArtifacts => ("/artifacts", on(filter, artifacts::list)),
        Op::ReadArtifact => ("/artifacts/{*rest}", on(filter, artifacts::read)),
        Op::ArtifactContent => return None,
        Op::PreviewSnapshot => ("/knowledge/snapshots:preview", on(filter, knowledge::preview)),
        Op::ApplySnapshot => ("/knowledge/snapshots", on(filter, knowledge::apply)),
        Op::QueryEntities => ("/knowledge/entities:query", on(filter, knowledge::query)),
        Op::StoreDocument => ("/knowledge/documents", on(filter, knowledge::document)),
        Op::Recall => ("/context/recall", on(filter, knowledge::recall)),
        Op::RecordFact => ("/facts", on(filter, rules::record_fact)),
        Op::ListFacts => ("/facts", on(filter, rules::facts)),
        Op::ReadFact => ("/facts/{id}", on(filter, rules::fact)),
        Op::PublishRule => ("/rules", on(filter, rules::publish_rule)),
        Op::ListRules => ("/rules", on(filter, rules::rules)),
        Op::ReadRule => ("/rules/{*rest}", on(filter, rules::rule)),
        Op::EvaluateRule => ("/rules/{*rest}", on(filter, rules::evaluate_rule)),
        Op::PublishProcess => ("/processes", on(filter, processes::publish)),
        Op::ListProcesses => ("/processes", on(filter, processes::list)),
        Op::ReadProcess => ("/processes/{*rest}", on(filter, processes::read)),
        Op::StartProcess => ("/processes/{*rest}", on(filter, processes::start)),
        Op::ListInstances => ("/process-instances", on(filter, processes::instances)),
        Op::ReadInstance => ("/process-instances/{*rest}", on(filter, processes::instance)),
        Op::CancelInstance => ("/process-instances/{*rest}", on(filter, processes::cancel)),
    };
    let (path, methods) = served;
    // A route without query parameters refuses any, as the ones with them refuse unknown ones.
    let methods = if operation.query.is_none() { methods.layer(axum::middleware::from_fn(no_query)) } else { methods };
    Some((path, methods))
}

/// Refuses a query string on a route that takes none.
async fn no_query(request: axum::extract::Request, next: axum::middleware::Next) -> axum::response::Response {
    match request.uri().query().filter(|query| !query.is_empty()) {
        Some(query) => {
            let name = query.split(['=', '&']).next().unwrap_or_default().to_owned();
            axum::response::IntoResponse::into_response(plumbing::Failure(
                skill_engine::EngineError::invalid_request(format!(
                    "this route takes no query parameters; drop `{name}` (docs/openapi.json lists each route's)"
                ))
                .with("field", name),
            ))
        }
        None => next.run(request).await,
    }
}

/// The `/api/v1` router, with `openapi.json`.
pub fn router() -> Router<Core> {
    let mut paths: Vec<(&str, MethodRouter<Core>)> = Vec::new();
    for (path, methods) in OPERATIONS.iter().filter_map(route) {
        match paths.iter_mut().find(|(known, _)| *known == path) {
            Some((_, merged)) => *merged = std::mem::take(merged).merge(methods),
            None => paths.push((path, methods)),
        }
    }
    paths.into_iter().fold(Router::new().route("/openapi.json", get(handlers::openapi)), |router, (path, methods)| {
        router.route(path, methods.fallback(method_not_allowed))
    })
}

/// A method a route does not serve: 405 with the envelope, naming the methods it does.
async fn method_not_allowed(method: axum::http::Method, uri: axum::http::Uri) -> plumbing::Failure {
    let allowed: Vec<&str> = OPERATIONS
        .iter()
        .filter(|operation| route(operation).is_some_and(|(path, _)| matches(path, uri.path())))
        .map(|operation| operation.method.as_str())
        .collect();
    plumbing::Failure(
        skill_engine::EngineError::new(
            skill_engine::Class::MethodNotAllowed,
            Code::MethodNotAllowed,
            format!("{method} is not served here; this route answers {}", allowed.join(", ")),
        )
        .with("allowed", allowed),
    )
}

/// Whether the axum route `path` (with `{parameter}`s and a `{*rest}`) matches `uri` (as the
/// nested router sees it, without `/api/v1`).
fn matches(path: &str, uri: &str) -> bool {
    let uri = uri.strip_prefix("/api/v1").unwrap_or(uri);
    let mut parts = uri.split('/');
    for pattern in path.split('/') {
        if pattern.starts_with("{*") {
            return parts.next().is_some_and(|part| !part.is_empty());
        }
        match parts.next() {
            Some(part) if pattern.starts_with('{') || pattern == part => {}
            _ => return false,
        }
    }
    parts.next().is_none()
}
