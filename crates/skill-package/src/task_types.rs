//! A package's task types, artifact types, agents and work rules as the core publishes them: each document's `spec`
//! with its `key`, read into the API's request (an unknown field is named with its file).

use serde_json::Value;
use skill_api::{AgentRequest, ArtifactTypeRequest, ProcessRequest, RuleRequest, TaskTypeRequest};

use crate::load::Loaded;

/// The `POST /task-types` bodies of the package's task types, in file order.
pub fn task_type_requests(loaded: &Loaded) -> Result<Vec<TaskTypeRequest>, String> {
    let fields = "a task type's spec has version, displayName, description, customFields, approvalSchema, completionSchema, acceptance, execution, artifactSchema";
    spec_bodies(loaded, "TaskType")?
        .into_iter()
        .map(|(file, body)| serde_json::from_value(body).map_err(|error| format!("{file}: {error} ({fields})")))
        .collect()
}

/// The `POST /artifact-types` bodies of the package's artifact types, in file order.
pub fn artifact_type_requests(loaded: &Loaded) -> Result<Vec<ArtifactTypeRequest>, String> {
    let fields = "an artifact type's spec has version, displayName, description, mediaTypes, maxBytes, metadataSchema";
    spec_bodies(loaded, "ArtifactType")?
        .into_iter()
        .map(|(file, body)| serde_json::from_value(body).map_err(|error| format!("{file}: {error} ({fields})")))
        .collect()
}

/// The agents of the package, in file order: each document's key and spec (an unknown field or a
/// wrong type named with its file and path).
pub fn agent_requests(loaded: &Loaded) -> Result<Vec<AgentRequest>, String> {
    keyed_specs(
        loaded,
        "Agent",
        |spec| skill_contract::agent::read_spec(spec).err().map(|problem| (problem.path.to_string(), problem.message)),
        |key, spec| AgentRequest { key, spec },
    )
}

/// The work rules of the package, in file order: each document's key and spec (an unknown field
/// or a wrong type named with its file and path).
pub fn rule_requests(loaded: &Loaded) -> Result<Vec<RuleRequest>, String> {
    keyed_specs(
        loaded,
        "WorkRule",
        |spec| skill_contract::rule::read_spec(spec).err().map(|problem| (problem.path.to_string(), problem.message)),
        |key, spec| RuleRequest { key, spec },
    )
}

/// The processes of the package, in file order: each document's key and spec (an unknown field
/// or a wrong type named with its file and path).
pub fn process_requests(loaded: &Loaded) -> Result<Vec<ProcessRequest>, String> {
    keyed_specs(
        loaded,
        "Process",
        |spec| {
            skill_contract::process::read_spec(spec).err().map(|problem| (problem.path.to_string(), problem.message))
        },
        |key, spec| ProcessRequest { key, spec },
    )
}

/// Each `kind` document as `{key, spec}` (`request`), its spec read by the contract crate first
/// (`check`: the path and message of the first problem).
fn keyed_specs<R>(
    loaded: &Loaded,
    kind: &str,
    check: impl Fn(&Value) -> Option<(String, String)>,
    request: impl Fn(String, Value) -> R,
) -> Result<Vec<R>, String> {
    let mut requests = Vec::new();
    for object in loaded.package.objects.iter().filter(|object| object.kind == kind) {
        let spec = object.spec();
        if let Some((path, message)) = check(spec) {
            return Err(format!("{} at {path}: {message}", object.file));
        }
        requests.push(request(object.key.clone(), spec.clone()));
    }
    Ok(requests)
}

/// Each `kind` document's spec with its key, and its file.
fn spec_bodies(loaded: &Loaded, kind: &str) -> Result<Vec<(String, Value)>, String> {
    let mut bodies = Vec::new();
    for object in loaded.package.objects.iter().filter(|object| object.kind == kind) {
        let mut body = match object.document.get("spec") {
            Some(Value::Object(spec)) => spec.clone(),
            _ => return Err(format!("{}: a {kind} has a spec object", object.file)),
        };
        body.insert("key".to_owned(), Value::String(object.key.clone()));
        bodies.push((object.file.clone(), Value::Object(body)));
    }
    Ok(bodies)
}
