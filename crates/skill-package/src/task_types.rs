//! A package's task types as the core publishes them: each `TaskType` document's `spec` with its
//! `key`, read into the API's request (an unknown field is named with its file).

use serde_json::Value;
use skill_api::TaskTypeRequest;

use crate::load::Loaded;

/// The `POST /task-types` bodies of the package's task types, in file order.
pub fn task_type_requests(loaded: &Loaded) -> Result<Vec<TaskTypeRequest>, String> {
    let mut requests = Vec::new();
    for object in loaded.package.objects.iter().filter(|object| object.kind == "TaskType") {
        let mut body = match object.document.get("spec") {
            Some(Value::Object(spec)) => spec.clone(),
            _ => return Err(format!("{}: a task type has a spec object", object.file)),
        };
        body.insert("key".to_owned(), Value::String(object.key.clone()));
        let request: TaskTypeRequest = serde_json::from_value(Value::Object(body))
            .map_err(|error| format!("{}: {error} (a task type's spec has version, displayName, description, customFields, approvalSchema, completionSchema, acceptance, execution, artifactSchema)", object.file))?;
        requests.push(request);
    }
    Ok(requests)
}
