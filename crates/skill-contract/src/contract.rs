//! Contract v1: the promise a skill version makes — its schemas, idempotency, timeout, retry
//! policy, permissions, conditions, cost model and implementation.
//!
//! A [`Contract`] only exists normalized: every default filled, every rule checked (see
//! [`normalize`]). It renders two ways: [`Contract::to_export_json`] is the document the SDK
//! writes into `skills/<name>.yaml` (empty optional fields left out, the reference's key order),
//! and [`Contract::to_normalized_json`] is what the core stores (every field present).

mod implementation;
mod normalize;
mod stored;

use serde_json::{Map, Number, Value, json};

pub use implementation::{Auth, Implementation, Protocol};
pub use implementation::{MAX_ADDRESS, MAX_SCOPES};
pub(crate) use implementation::{check_mcp_address, is_tool_name};
pub(crate) use normalize::unsafe_retry_of;
pub use normalize::{MAX_PERMISSIONS, is_permission, normalize, unsafe_retry};

use crate::policy::{Idempotency, SideEffects};
use crate::violation::ContractError;

/// Timeout bounds and default, in seconds.
pub const TIMEOUT_SECONDS: (u64, u64, u64) = (1, 3600, 60);
/// `retryPolicy.maxAttempts` bounds and default.
pub const MAX_ATTEMPTS: (u64, u64, u64) = (1, 10, 1);
/// `retryPolicy.backoffSeconds` bounds and default.
pub const BACKOFF_SECONDS: (u64, u64, u64) = (0, 3600, 0);
/// The largest contract document accepted, as compact JSON.
pub const MAX_CONTRACT_BYTES: usize = 512 * 1024;

/// Choices that differ between the places a contract is checked.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NormalizeOptions {
    /// Accept an endpoint that starts with an installation variable (`${CLAIMS_URL}/skills/x@1`),
    /// as package files and SDK exports hold them before the installation substitutes values.
    pub allow_placeholders: bool,
    /// Keep non-empty pre/postconditions instead of refusing them (`unsupported_skill_condition`)
    /// — for reading documents, never for publication.
    pub allow_conditions: bool,
    /// The contract is read back from where it was stored after passing every rule at
    /// publication: its schemas are not compiled again (the costly part), only read.
    pub stored: bool,
}

/// How often and how far apart a failed call is tried again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    max_attempts: u32,
    backoff_seconds: u32,
}

impl RetryPolicy {
    pub fn max_attempts(&self) -> u32 {
        self.max_attempts
    }

    pub fn backoff_seconds(&self) -> u32 {
        self.backoff_seconds
    }

    pub fn to_json(self) -> Value {
        json!({"maxAttempts": self.max_attempts, "backoffSeconds": self.backoff_seconds})
    }
}

/// The declared cost of one call: a unit and an optional estimate (declarative; not enforced).
#[derive(Debug, Clone, PartialEq)]
pub struct CostModel {
    unit: String,
    /// Kept as written (`1` stays an integer, `1.5` a float) so the export round-trips exactly.
    estimate: Option<Number>,
}

impl CostModel {
    pub fn unit(&self) -> &str {
        &self.unit
    }

    pub fn estimate(&self) -> Option<f64> {
        self.estimate.as_ref().and_then(Number::as_f64)
    }

    pub fn to_json(&self) -> Value {
        let mut map = Map::new();
        map.insert("unit".into(), json!(self.unit));
        if let Some(estimate) = &self.estimate {
            map.insert("estimate".into(), Value::Number(estimate.clone()));
        }
        Value::Object(map)
    }
}

/// A normalized contract v1.
#[derive(Debug, Clone, PartialEq)]
pub struct Contract {
    inputs: Value,
    outputs: Value,
    idempotency: Idempotency,
    timeout_seconds: u32,
    retry_policy: RetryPolicy,
    required_permissions: Vec<String>,
    preconditions: Vec<Value>,
    postconditions: Vec<Value>,
    cost_model: Option<CostModel>,
    implementation: Implementation,
}

impl Contract {
    /// The JSON Schema of the inputs.
    pub fn inputs(&self) -> &Value {
        &self.inputs
    }

    /// The JSON Schema of the outputs.
    pub fn outputs(&self) -> &Value {
        &self.outputs
    }

    pub fn idempotency(&self) -> Idempotency {
        self.idempotency
    }

    pub fn timeout_seconds(&self) -> u32 {
        self.timeout_seconds
    }

    pub fn retry_policy(&self) -> RetryPolicy {
        self.retry_policy
    }

    /// Sorted, without duplicates.
    pub fn required_permissions(&self) -> &[String] {
        &self.required_permissions
    }

    pub fn preconditions(&self) -> &[Value] {
        &self.preconditions
    }

    pub fn postconditions(&self) -> &[Value] {
        &self.postconditions
    }

    pub fn cost_model(&self) -> Option<&CostModel> {
        self.cost_model.as_ref()
    }

    pub fn implementation(&self) -> &Implementation {
        &self.implementation
    }

    /// The same contract at `endpoint`, checked by every rule of a contract again (an operator
    /// moves a published version's endpoint, nothing else).
    pub fn with_endpoint(&self, endpoint: &str, side_effects: SideEffects) -> Result<Self, ContractError> {
        let mut moved = self.to_normalized_json();
        moved["implementation"]["endpoint"] = json!(endpoint);
        normalize(&moved, side_effects, &NormalizeOptions::default())
    }

    /// The same contract with another implementation (the export's `--protocol` choice).
    pub fn with_implementation(&self, implementation: Implementation) -> Self {
        Self { implementation, ..self.clone() }
    }

    /// The contract as the SDK exports it: the reference's key order, empty optional fields
    /// (`requiredPermissions`, conditions, `costModel`) left out.
    pub fn to_export_json(&self) -> Value {
        let mut map = Map::new();
        map.insert("inputs".into(), self.inputs.clone());
        map.insert("outputs".into(), self.outputs.clone());
        map.insert("idempotency".into(), json!(self.idempotency.as_str()));
        map.insert("timeoutSeconds".into(), json!(self.timeout_seconds));
        map.insert("retryPolicy".into(), self.retry_policy.to_json());
        if !self.required_permissions.is_empty() {
            map.insert("requiredPermissions".into(), json!(self.required_permissions));
        }
        if !self.preconditions.is_empty() {
            map.insert("preconditions".into(), Value::Array(self.preconditions.clone()));
        }
        if !self.postconditions.is_empty() {
            map.insert("postconditions".into(), Value::Array(self.postconditions.clone()));
        }
        if let Some(cost_model) = &self.cost_model {
            map.insert("costModel".into(), cost_model.to_json());
        }
        map.insert("implementation".into(), self.implementation.to_export_json());
        Value::Object(map)
    }

    /// The contract as the core stores it: every field present, `implementation` with all four
    /// keys (`null` where absent).
    pub fn to_normalized_json(&self) -> Value {
        json!({
            "inputs": self.inputs,
            "outputs": self.outputs,
            "idempotency": self.idempotency.as_str(),
            "timeoutSeconds": self.timeout_seconds,
            "retryPolicy": self.retry_policy.to_json(),
            "requiredPermissions": self.required_permissions,
            "preconditions": self.preconditions,
            "postconditions": self.postconditions,
            "costModel": self.cost_model.as_ref().map(CostModel::to_json),
            "implementation": self.implementation.to_normalized_json(),
        })
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_contract_moves_to_another_endpoint_checked_as_at_publication() {
        let written = json!({"inputs": {"type": "object"}, "outputs": {"type": "object"},
            "implementation": {"protocol": "http", "endpoint": "https://a.example/x", "auth": {"audience": "billing"}}});
        let contract =
            normalize(&written, SideEffects::ExternalWrite, &NormalizeOptions::default()).expect("a contract");
        let moved = contract.with_endpoint("https://b.example/x", SideEffects::ExternalWrite).expect("moved");
        assert_eq!(moved.implementation().endpoint(), Some("https://b.example/x"));
        assert_eq!(moved.implementation().auth(), contract.implementation().auth(), "only the endpoint moves");
        assert_eq!(moved.with_implementation(contract.implementation().clone()), contract);
        let refused = contract.with_endpoint("ftp://b.example", SideEffects::ExternalWrite).expect_err("not http");
        assert_eq!(refused.violations()[0].field, "implementation.endpoint");
    }
}
