//! The OpenAPI 3.1 document of `/api/v1`, built from [`super::ROUTES`] and the request and
//! response types' own schemas.

use schemars::generate::SchemaSettings;
use serde_json::{Map, Value, json};

use super::ROUTES;

/// The document served at `/api/v1/openapi.json`.
pub fn document() -> Value {
    let mut settings = SchemaSettings::draft2020_12();
    settings.definitions_path = "/components/schemas".into();
    settings.meta_schema = None;
    let mut generator = settings.into_generator();
    let mut paths: Map<String, Value> = Map::new();
    for route in ROUTES {
        let path = route.path.replace("{*", "{");
        let parameters: Vec<Value> = path
            .split('/')
            .filter_map(|segment| segment.strip_prefix('{').and_then(|rest| rest.strip_suffix('}')))
            .map(|name| json!({"name": name, "in": "path", "required": true, "schema": {"type": "string"}}))
            .collect();
        let mut responses = Map::new();
        let (status, body) = route.success;
        let mut success = json!({"description": "success"});
        if let Some(schema) = body {
            success["content"] = json!({"application/json": {"schema": schema(&mut generator)}});
        }
        responses.insert(status.to_string(), success);
        let mut errors: Vec<(u16, &str)> =
            vec![(401, "missing_authorization"), (401, "invalid_token"), (403, "permission_denied")];
        errors.extend(route.errors.iter().copied());
        for (status, code) in errors {
            let entry = responses.entry(status.to_string()).or_insert_with(|| {
                json!({"description": "", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/ErrorEnvelope"}}}})
            });
            let description = entry["description"].as_str().unwrap_or_default();
            let joined = if description.is_empty() { format!("`{code}`") } else { format!("{description}, `{code}`") };
            entry["description"] = json!(joined);
        }
        let mut operation = json!({
            "summary": route.summary,
            "description": format!("Permission: {}.", route.permission),
            "operationId": operation_id(route.method, &path),
            "parameters": parameters,
            "responses": responses,
            "security": [{"bearer": []}],
        });
        if let Some(schema) = route.request {
            operation["requestBody"] =
                json!({"required": true, "content": {"application/json": {"schema": schema(&mut generator)}}});
        }
        let item = paths.entry(path).or_insert_with(|| json!({}));
        item[route.method.to_ascii_lowercase()] = operation;
    }
    let mut schemas = generator.take_definitions(true);
    schemas.insert("ErrorEnvelope".into(), error_envelope());
    json!({
        "openapi": "3.1.0",
        "info": {"title": "skill-core", "version": env!("CARGO_PKG_VERSION"),
                 "description": "The catalog of skill versions: publish, read, change within what a version allows, assign, discover."},
        "servers": [{"url": "/api/v1"}],
        "paths": paths,
        "components": {
            "schemas": schemas,
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer", "description": "a personal access token (skp_…)"}},
        },
    })
}

fn operation_id(method: &str, path: &str) -> String {
    let words: Vec<String> = path
        .split(['/', ':', '{', '}', '*'])
        .filter(|word| !word.is_empty())
        .map(|word| word.replace('.', "_"))
        .collect();
    format!("{}_{}", method.to_ascii_lowercase(), words.join("_"))
}

fn error_envelope() -> Value {
    json!({
        "type": "object",
        "required": ["error"],
        "properties": {"error": {
            "type": "object",
            "required": ["code", "message", "retryable", "details", "requestId"],
            "properties": {
                "code": {"type": "string"},
                "message": {"type": "string"},
                "retryable": {"type": "boolean"},
                "details": {"type": ["object", "null"]},
                "requestId": {"type": ["string", "null"]},
            },
        }},
    })
}
