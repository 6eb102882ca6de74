//! The OpenAPI 3.1 document of `/api/v1`, built from [`OPERATIONS`] and the types' own
//! schemas. `skill-core openapi` prints it, the core serves it at `/api/v1/openapi.json`, and
//! `docs/openapi.json` is kept equal to it by a test.

use schemars::generate::SchemaSettings;
use serde_json::{Map, Value, json};

use crate::operations::{OPERATIONS, Operation};

/// The errors every operation may answer with.
const COMMON_ERRORS: &[(u16, &str)] = &[
    (401, "missing_authorization"),
    (401, "invalid_token"),
    (403, "permission_denied"),
    (503, "unavailable"),
    (500, "internal_error"),
];

/// The errors of an operation with a body or a query string.
const INPUT_ERRORS: &[(u16, &str)] =
    &[(400, "invalid_request"), (413, "payload_too_large"), (415, "unsupported_media_type")];

/// The whole document.
pub fn document() -> Value {
    let mut settings = SchemaSettings::draft2020_12();
    settings.definitions_path = "/components/schemas".into();
    settings.meta_schema = None;
    let mut generator = settings.into_generator();
    let mut paths: Map<String, Value> = Map::new();
    for operation in OPERATIONS {
        let item = paths.entry(operation.path).or_insert_with(|| json!({}));
        item[operation.method.as_str().to_ascii_lowercase()] = describe(operation, &mut generator);
    }
    let mut schemas = generator.take_definitions(true);
    let envelope = schemas.remove("ErrorEnvelope");
    let body = schemas.remove("ErrorBody");
    schemas.insert("ErrorEnvelope".into(), envelope.unwrap_or_default());
    schemas.insert("ErrorBody".into(), body.unwrap_or_default());
    json!({
        "openapi": "3.1.0",
        "info": {
            "title": "skill-core",
            "version": env!("CARGO_PKG_VERSION"),
            "description": "The core of the skills platform: the catalog of skill versions (publish, read, change within \
                            what a version allows, assign, discover), package installs and the events journal. \
                            Every error answers with the envelope {\"error\": {code, message, retryable, details, requestId}}.",
        },
        "servers": [{"url": crate::BASE_PATH}],
        "paths": paths,
        "components": {
            "schemas": schemas,
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer", "description": "a personal access token (skp_…)"}},
        },
    })
}

fn describe(operation: &Operation, generator: &mut schemars::SchemaGenerator) -> Value {
    let mut parameters: Vec<Value> = operation
        .parameters()
        .map(|name| json!({"name": name, "in": "path", "required": true, "schema": {"type": "string"}}))
        .collect();
    if let Some(query) = operation.query {
        parameters.extend(query_parameters(&query(generator), generator));
    }
    if operation.idempotency_key {
        parameters.push(json!({
            "name": "Idempotency-Key", "in": "header", "required": false,
            "schema": {"type": "string", "minLength": 1, "maxLength": 200},
            "description": "a repeat of the same request (method, path, body) by the same principal with the same key \
                            answers the first answer (with Idempotency-Replayed: true) instead of acting again, for a \
                            day; the key with another request is 409 idempotency_key_reused; while the first is still \
                            running, 409 idempotency_in_flight after 10 s",
        }));
    }
    let mut responses = Map::new();
    let (status, body) = operation.success;
    let mut success = json!({"description": "success"});
    if let Some(schema) = body {
        success["content"] = json!({"application/json": {"schema": schema(generator)}});
    }
    responses.insert(status.to_string(), success);
    let mut errors: Vec<(u16, &str)> = COMMON_ERRORS.to_vec();
    if operation.request.is_some() || operation.query.is_some() {
        errors.extend(INPUT_ERRORS);
    }
    errors.extend(operation.errors.iter().copied());
    errors.sort_by_key(|(status, _)| *status);
    for (status, code) in errors {
        let entry = responses.entry(status.to_string()).or_insert_with(|| {
            json!({"description": "", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/ErrorEnvelope"}}}})
        });
        let description = entry["description"].as_str().unwrap_or_default();
        let joined = if description.is_empty() { format!("`{code}`") } else { format!("{description}, `{code}`") };
        entry["description"] = json!(joined);
    }
    let mut described = json!({
        "summary": operation.summary,
        "description": format!("Permission: {}.", operation.permission),
        "operationId": operation_id(operation),
        "parameters": parameters,
        "responses": responses,
        "security": [{"bearer": []}],
    });
    if let Some(schema) = operation.request {
        described["requestBody"] =
            json!({"required": true, "content": {"application/json": {"schema": schema(generator)}}});
    }
    described
}

/// The properties of a query type's schema as query parameters.
fn query_parameters(schema: &schemars::Schema, generator: &schemars::SchemaGenerator) -> Vec<Value> {
    let resolved = schema
        .get("$ref")
        .and_then(Value::as_str)
        .and_then(|reference| reference.rsplit('/').next())
        .and_then(|name| generator.definitions().get(name))
        .cloned()
        .unwrap_or_else(|| schema.as_value().clone());
    let required: Vec<&str> = resolved["required"].as_array().into_iter().flatten().filter_map(Value::as_str).collect();
    resolved["properties"]
        .as_object()
        .into_iter()
        .flatten()
        .map(|(name, property)| {
            let mut parameter =
                json!({"name": name, "in": "query", "required": required.contains(&name.as_str()), "schema": property});
            if let Some(description) = property.get("description") {
                parameter["description"] = description.clone();
            }
            parameter
        })
        .collect()
}

fn operation_id(operation: &Operation) -> String {
    let words: Vec<String> = operation
        .path
        .split(['/', ':', '{', '}'])
        .filter(|word| !word.is_empty())
        .map(|word| word.replace('.', "_"))
        .collect();
    format!("{}_{}", operation.method.as_str().to_ascii_lowercase(), words.join("_"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_reference_resolves_and_every_operation_has_an_id() {
        let document = document();
        let text = document.to_string();
        let schemas = document["components"]["schemas"].as_object().expect("schemas");
        for reference in text.split("\"$ref\":\"").skip(1) {
            let target = reference.split('"').next().expect("a reference");
            let name = target.strip_prefix("#/components/schemas/").expect("a local reference");
            assert!(schemas.contains_key(name), "{target} does not resolve");
        }
        let mut ids: Vec<&str> = document["paths"]
            .as_object()
            .expect("paths")
            .values()
            .flat_map(|item| item.as_object().expect("an item").values())
            .map(|operation| operation["operationId"].as_str().expect("an id"))
            .collect();
        let all = ids.len();
        ids.sort_unstable();
        ids.dedup();
        assert_eq!((ids.len(), all), (OPERATIONS.len(), OPERATIONS.len()), "ids are unique");
    }

    #[test]
    fn queries_are_documented_as_parameters() {
        let document = document();
        let parameters = document["paths"]["/skills"]["get"]["parameters"].as_array().expect("parameters");
        let names: Vec<&str> = parameters.iter().filter_map(|p| p["name"].as_str()).collect();
        assert_eq!(names, ["name", "status", "package", "limit", "cursor"]);
        assert!(parameters.iter().all(|p| p["in"] == "query"));
    }
}
