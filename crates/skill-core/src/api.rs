//! The API under `/api/v1`: the router is built from `skill_api::operations::OPERATIONS`, each
//! operation matched exhaustively to its handler, so the OpenAPI document (built from the same
//! table) lists exactly what is served.

mod handlers;
pub mod plumbing;
mod strict;

use axum::Router;
use axum::routing::{MethodFilter, MethodRouter, get, on};
use skill_api::operations::{Method, OPERATIONS, Op, Operation};

use crate::Core;

/// The axum route of an operation and its handler; `None` for an operation that another
/// operation's route serves (a `{reference}` with a `:verb` suffix shares the wildcard route).
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
        Op::RecordInstall => ("/packages:record", on(filter, handlers::record_install)),
        Op::ReadInstall => ("/packages/{key}", on(filter, handlers::package)),
        Op::Events => ("/events", on(filter, handlers::events)),
    };
    Some(served)
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
        router.route(path, methods)
    })
}
