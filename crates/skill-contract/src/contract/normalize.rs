//! Normalization of a contract document: every default filled, every rule of contract v1
//! checked, every violation reported with its field.

use serde_json::{Map, Value};

use super::{
    BACKOFF_SECONDS, Contract, CostModel, MAX_ATTEMPTS, MAX_CONTRACT_BYTES, NormalizeOptions, RetryPolicy,
    TIMEOUT_SECONDS, implementation,
};
use crate::fields::{self, present};
use crate::policy::{Idempotency, SideEffects};
use crate::schema::check_schema_document;
use crate::violation::{ContractError, Problem, Violation};

const KEYS: &[&str] = &[
    "inputs",
    "outputs",
    "idempotency",
    "timeoutSeconds",
    "retryPolicy",
    "requiredPermissions",
    "preconditions",
    "postconditions",
    "costModel",
    "implementation",
];
const RETRY_KEYS: &[&str] = &["maxAttempts", "backoffSeconds"];
const COST_KEYS: &[&str] = &["unit", "estimate"];
const PERMISSION_RULE: &str = "a permission of dotted lowercase words, e.g. claims.write (at most 100 characters)";
/// Most entries in `requiredPermissions`.
pub const MAX_PERMISSIONS: usize = 50;

/// Whether `text` is a permission: dotted lowercase words such as `claims.write`, at most 100
/// characters.
pub fn is_permission(text: &str) -> bool {
    let word = |w: &str| {
        let mut chars = w.chars();
        chars.next().is_some_and(|c| c.is_ascii_lowercase())
            && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '-')
    };
    text.len() <= 100 && text.contains('.') && text.split('.').all(word)
}

fn schema(map: &Map<String, Value>, key: &str, stored: bool, out: &mut Vec<Violation>) -> Value {
    match present(map, key) {
        None => {
            let expected =
                if key == "inputs" { "the JSON Schema of the inputs" } else { "the JSON Schema of the outputs" };
            out.push(Violation::new(key, Problem::Missing { expected }));
        }
        Some(Value::Object(_)) if stored => {}
        Some(value @ Value::Object(schema)) => {
            let object = |t: &Value| t == "object";
            let describes_object = match schema.get("type") {
                None => true,
                Some(Value::Array(types)) => types.iter().any(object),
                Some(other) => object(other),
            };
            if let Err(error) = check_schema_document(value) {
                out.push(Violation::new(key, Problem::InvalidSchema { reason: error.to_string() }));
            } else if !describes_object {
                let reason = format!(
                    "a skill's {key} are a JSON object: the schema's `type` must be \"object\", not {}",
                    schema["type"]
                );
                out.push(Violation::new(key, Problem::InvalidSchema { reason }));
            }
        }
        Some(other) => out.push(fields::wrong_type(key, "a JSON Schema object", other)),
    }
    map.get(key).cloned().unwrap_or(Value::Null)
}

fn retry_policy(map: &Map<String, Value>, out: &mut Vec<Violation>) -> RetryPolicy {
    let default = RetryPolicy { max_attempts: MAX_ATTEMPTS.2 as u32, backoff_seconds: BACKOFF_SECONDS.2 as u32 };
    let Some(value) = present(map, "retryPolicy") else {
        return default;
    };
    let Value::Object(policy) = value else {
        out.push(fields::wrong_type("retryPolicy", "an object with maxAttempts and backoffSeconds", value));
        return default;
    };
    fields::check_keys(policy, RETRY_KEYS, "retryPolicy", out);
    RetryPolicy {
        max_attempts: fields::integer_in(policy, "maxAttempts", "retryPolicy.maxAttempts", MAX_ATTEMPTS, out) as u32,
        backoff_seconds: fields::integer_in(
            policy,
            "backoffSeconds",
            "retryPolicy.backoffSeconds",
            BACKOFF_SECONDS,
            out,
        ) as u32,
    }
}

fn permissions(map: &Map<String, Value>, out: &mut Vec<Violation>) -> Vec<String> {
    const FIELD: &str = "requiredPermissions";
    let Some(value) = present(map, FIELD) else {
        return Vec::new();
    };
    let Value::Array(items) = value else {
        out.push(fields::wrong_type(FIELD, "a list of permissions", value));
        return Vec::new();
    };
    if items.len() > MAX_PERMISSIONS {
        out.push(Violation::new(FIELD, Problem::TooMany { count: items.len(), max: MAX_PERMISSIONS }));
    }
    let mut found: Vec<String> = Vec::new();
    for (index, item) in items.iter().enumerate() {
        match item.as_str() {
            Some(text) if is_permission(text) => found.push(text.to_owned()),
            Some(text) => out.push(
                Violation::new(FIELD, Problem::BadFormat { found: text.to_owned(), rule: PERMISSION_RULE }).at(index),
            ),
            None => out.push(fields::wrong_type(FIELD, "a string", item).at(index)),
        }
    }
    found.sort();
    found.dedup();
    found
}

fn conditions(map: &Map<String, Value>, key: &str, allow: bool, out: &mut Vec<Violation>) -> Vec<Value> {
    match present(map, key) {
        None => Vec::new(),
        Some(Value::Array(items)) => {
            if !items.is_empty() && !allow {
                out.push(Violation::new(key, Problem::NotEmpty));
            }
            items.clone()
        }
        Some(other) => {
            out.push(fields::wrong_type(key, "a list", other));
            Vec::new()
        }
    }
}

fn cost_model(map: &Map<String, Value>, out: &mut Vec<Violation>) -> Option<CostModel> {
    let value = present(map, "costModel")?;
    let Value::Object(model) = value else {
        out.push(fields::wrong_type("costModel", "an object {unit, estimate?}", value));
        return None;
    };
    let before = out.len();
    fields::check_keys(model, COST_KEYS, "costModel", out);
    let unit = match present(model, "unit") {
        None => {
            out.push(Violation::new(
                "costModel.unit",
                Problem::Missing { expected: "the unit a call is measured in, e.g. request" },
            ));
            None
        }
        Some(value) => fields::bounded_string(value, "costModel.unit", 100, out).map(str::to_owned),
    };
    let estimate = match present(model, "estimate") {
        None => None,
        Some(Value::Number(n)) if n.as_f64().is_some_and(|f| f >= 0.0) => Some(n.clone()),
        Some(Value::Number(n)) => {
            out.push(Violation::new(
                "costModel.estimate",
                Problem::Conflict { reason: format!("{n} is negative: an estimate is a number ≥ 0") },
            ));
            None
        }
        Some(other) => {
            out.push(fields::wrong_type("costModel.estimate", "a number ≥ 0", other));
            None
        }
    };
    (out.len() == before).then(|| CostModel { unit: unit.unwrap_or_default(), estimate })
}

/// The safe-retry rule: an external write without idempotency is tried once. The violation
/// names `retryPolicy.maxAttempts`; `#[skill]` reports the same problem on its `retry` argument.
pub fn unsafe_retry(side_effects: SideEffects, idempotency: Idempotency, max_attempts: u32) -> Option<Violation> {
    (side_effects == SideEffects::ExternalWrite && idempotency == Idempotency::None && max_attempts > 1).then(|| {
        Violation::new(
            "retryPolicy.maxAttempts",
            Problem::UnsafeRetry { max_attempts: max_attempts.into(), idempotency },
        )
    })
}

/// The safe-retry rule applied to a normalized contract, for a given side effect.
pub(crate) fn unsafe_retry_of(side_effects: SideEffects, contract: &Contract) -> Option<Violation> {
    unsafe_retry(side_effects, contract.idempotency, contract.retry_policy.max_attempts)
}

/// Normalizes a contract document of a skill with the given side effects.
///
/// Checks, in one pass, every rule of contract v1: the keys, both schemas (self-contained JSON
/// Schema 2020-12), idempotency, timeout (1–3600, default 60), retry policy (maxAttempts 1–10,
/// backoffSeconds 0–3600), permissions (sorted, de-duplicated), empty conditions, the cost model,
/// the implementation, the size and NUL guards, and the safe-retry rule: an `external_write`
/// skill without idempotency is not retried.
///
/// ```
/// use serde_json::json;
/// use skill_contract::{NormalizeOptions, SideEffects, normalize};
///
/// let raw = json!({
///     "inputs": {"type": "object"},
///     "outputs": {"type": "object"},
///     "retryPolicy": {"maxAttempts": 3},
///     "implementation": {"protocol": "local", "entrypoint": "claims.skills:send"},
/// });
/// let error = normalize(&raw, SideEffects::ExternalWrite, &NormalizeOptions::default()).unwrap_err();
/// assert_eq!(error.code(), "invalid_skill_contract");
/// assert_eq!(error.field(), "retryPolicy.maxAttempts");
///
/// let contract = normalize(&raw, SideEffects::ExternalRead, &NormalizeOptions::default()).unwrap();
/// assert_eq!(contract.timeout_seconds(), 60);
/// assert_eq!(contract.retry_policy().max_attempts(), 3);
/// ```
pub fn normalize(
    raw: &Value,
    side_effects: SideEffects,
    options: &NormalizeOptions,
) -> Result<Contract, ContractError> {
    let Value::Object(map) = raw else {
        return Err(ContractError::single(fields::wrong_type("contract", "an object", raw)));
    };
    if let Some(place) = fields::find_nul(raw, "") {
        let field = if place.is_empty() { "contract".to_owned() } else { place };
        return Err(ContractError::single(Violation::new(field, Problem::NulCharacter)));
    }
    // The size first: nothing larger than the limit is compiled.
    let bytes = serde_json::to_vec(raw).map_or(0, |b| b.len());
    if bytes > MAX_CONTRACT_BYTES {
        return Err(ContractError::single(Violation::new(
            "contract",
            Problem::TooLarge { bytes, max: MAX_CONTRACT_BYTES },
        )));
    }
    let mut out = Vec::new();
    fields::check_keys(map, KEYS, "contract", &mut out);
    let inputs = schema(map, "inputs", options.stored, &mut out);
    let outputs = schema(map, "outputs", options.stored, &mut out);
    let idempotency: Idempotency = fields::word(map, "idempotency", "idempotency", &mut out);
    let timeout_seconds = fields::integer_in(map, "timeoutSeconds", "timeoutSeconds", TIMEOUT_SECONDS, &mut out) as u32;
    let retry_policy = retry_policy(map, &mut out);
    let required_permissions = permissions(map, &mut out);
    let preconditions = conditions(map, "preconditions", options.allow_conditions, &mut out);
    let postconditions = conditions(map, "postconditions", options.allow_conditions, &mut out);
    let cost_model = cost_model(map, &mut out);
    let implementation = implementation::parse(map.get("implementation"), options, &mut out);

    out.extend(unsafe_retry(side_effects, idempotency, retry_policy.max_attempts));
    if let Some(error) = ContractError::from_violations(out) {
        return Err(error);
    }
    let implementation = implementation.expect("invariant: an implementation without violations parsed");
    Ok(Contract {
        inputs,
        outputs,
        idempotency,
        timeout_seconds,
        retry_policy,
        required_permissions,
        preconditions,
        postconditions,
        cost_model,
        implementation,
    })
}
