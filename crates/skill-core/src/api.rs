//! The API under `/api/v1`: one table of routes from which both the router and the OpenAPI
//! document are built, so the document lists exactly what is served.

mod handlers;
mod openapi;
pub mod plumbing;

use axum::Router;
use axum::routing::{MethodRouter, get, patch, post};
use skill_engine::catalog::{PatchRequest, PublishRequest, SkillOut};
use skill_engine::packages::RecordRequest;

use crate::Core;

/// Makes the schema of a body type.
pub type SchemaOf = fn(&mut schemars::SchemaGenerator) -> schemars::Schema;

/// One operation of the API.
pub struct Route {
    pub method: &'static str,
    /// The axum path (`/skills/{*reference}`).
    pub path: &'static str,
    pub summary: &'static str,
    /// Who may call it.
    pub permission: &'static str,
    /// The request body's schema.
    pub request: Option<SchemaOf>,
    /// The success status and its body's schema.
    pub success: (u16, Option<SchemaOf>),
    /// The error codes it answers with, beyond authentication.
    pub errors: &'static [(u16, &'static str)],
    pub handler: fn() -> MethodRouter<Core>,
}

impl std::fmt::Debug for Route {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}", self.method, self.path)
    }
}

fn schema<T: schemars::JsonSchema>(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
    generator.subschema_for::<T>()
}

/// Every route of `/api/v1`.
pub const ROUTES: &[Route] = &[
    Route {
        method: "POST",
        path: "/skills",
        summary: "Publish a skill version: a leaf (contract), a composite (includes, tools) or a catalog row",
        permission: "org.manage",
        request: Some(schema::<PublishRequest>),
        success: (201, Some(schema::<SkillOut>)),
        errors: &[
            (400, "invalid_request"),
            (409, "skill_exists"),
            (422, "invalid_skill_contract"),
            (422, "unsupported_skill_condition"),
            (422, "secret_material_rejected"),
            (422, "invalid_json_schema"),
            (422, "invalid_skill_document"),
            (422, "invalid_protocol"),
            (422, "resolution_failure"),
        ],
        handler: || post(handlers::publish),
    },
    Route {
        method: "GET",
        path: "/skills",
        summary: "List skill versions in publication order (?name, ?status, ?package, ?limit ≤ 200, ?cursor)",
        permission: "org.read",
        request: None,
        success: (200, None),
        errors: &[(400, "invalid_request"), (422, "invalid_status")],
        handler: || get(handlers::list),
    },
    Route {
        method: "GET",
        path: "/skills/{*reference}",
        summary: "Read a version by id, name@version or name (newest active, else newest deprecated); \
                  `…:definition` and `…:metadata` describe what it resolves to",
        permission: "org.read | skills.invoke | skills.execute",
        request: None,
        success: (200, Some(schema::<SkillOut>)),
        errors: &[(404, "not_found"), (409, "skill_not_invocable"), (422, "resolution_failure")],
        handler: || get(handlers::read),
    },
    Route {
        method: "PATCH",
        path: "/skills/{*reference}",
        summary: "Change a version's description, config, schemas (without a contract), status (forward) or endpoint; \
                  needs If-Match: \"skill-<rowVersion>\"",
        permission: "org.manage",
        request: Some(schema::<PatchRequest>),
        success: (200, Some(schema::<SkillOut>)),
        errors: &[
            (400, "invalid_if_match"),
            (404, "not_found"),
            (409, "version_conflict"),
            (409, "skill_version_immutable"),
            (409, "invalid_status_transition"),
            (409, "skill_not_invocable"),
            (422, "invalid_status"),
            (422, "invalid_skill_contract"),
            (422, "empty_update"),
            (428, "if_match_required"),
        ],
        handler: || patch(handlers::change),
    },
    Route {
        method: "GET",
        path: "/catalogue",
        summary: "The metadata of every active leaf and composite version (?limit, ?cursor)",
        permission: "org.read",
        request: None,
        success: (200, None),
        errors: &[(400, "invalid_request")],
        handler: || get(handlers::catalogue),
    },
    Route {
        method: "POST",
        path: "/principals/{principal}/skills",
        summary: "Assign a skill version to a principal (idempotent): {skillId, metadata?}",
        permission: "org.manage",
        request: None,
        success: (200, None),
        errors: &[(404, "not_found"), (422, "skill_disabled")],
        handler: || post(handlers::assign),
    },
    Route {
        method: "GET",
        path: "/principals/{principal}/skills",
        summary: "The versions assigned to a principal",
        permission: "org.read, or the principal itself",
        request: None,
        success: (200, None),
        errors: &[(404, "not_found")],
        handler: || get(handlers::assigned),
    },
    Route {
        method: "POST",
        path: "/principals/{principal}/skills/{*revoke}",
        summary: "Take an assignment back: POST …/skills/{skill}:revoke (idempotent)",
        permission: "org.manage",
        request: None,
        success: (200, None),
        errors: &[(404, "not_found")],
        handler: || post(handlers::unassign),
    },
    Route {
        method: "POST",
        path: "/packages:record",
        summary: "Record a package install and link its objects (skills by name)",
        permission: "org.manage",
        request: Some(schema::<RecordRequest>),
        success: (200, None),
        errors: &[(400, "invalid_request")],
        handler: || post(handlers::record_install),
    },
    Route {
        method: "GET",
        path: "/packages/{key}",
        summary: "The last install of a package and its objects",
        permission: "org.read",
        request: None,
        success: (200, None),
        errors: &[(404, "not_found")],
        handler: || get(handlers::package),
    },
    Route {
        method: "GET",
        path: "/events",
        summary: "The events journal after a sequence number (?after, ?subject, ?limit ≤ 1000)",
        permission: "org.read",
        request: None,
        success: (200, None),
        errors: &[(400, "invalid_request")],
        handler: || get(handlers::events),
    },
];

/// The `/api/v1` router, with `openapi.json`.
pub fn router() -> Router<Core> {
    let mut paths: Vec<(&str, MethodRouter<Core>)> = Vec::new();
    for route in ROUTES {
        match paths.iter_mut().find(|(path, _)| *path == route.path) {
            Some((_, methods)) => *methods = std::mem::take(methods).merge((route.handler)()),
            None => paths.push((route.path, (route.handler)())),
        }
    }
    paths.into_iter().fold(Router::new().route("/openapi.json", get(handlers::openapi)), |router, (path, methods)| {
        router.route(path, methods)
    })
}

pub use openapi::document as openapi_document;
