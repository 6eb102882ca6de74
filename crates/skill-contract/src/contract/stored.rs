//! A contract as the core stores it and hands it to executors (its normalized JSON), as a type:
//! [`Contract`] serializes to [`Contract::to_normalized_json`] and deserializes from it.
//!
//! Reading back trusts the publication, which checked every rule: nothing is compiled or checked
//! again, and a field an older document lacks takes the contract's default (the one place those
//! defaults live, [`TIMEOUT_SECONDS`], [`MAX_ATTEMPTS`], [`BACKOFF_SECONDS`]). What cannot be a
//! contract at all (not an object, no implementation, a protocol without its address) is an
//! error naming the field.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Number, Value};

use super::{
    Auth, BACKOFF_SECONDS, Contract, CostModel, Implementation, MAX_ATTEMPTS, Protocol, RetryPolicy, TIMEOUT_SECONDS,
};
use crate::policy::Idempotency;

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Stored {
    #[serde(default)]
    inputs: Value,
    #[serde(default)]
    outputs: Value,
    #[serde(default)]
    idempotency: Idempotency,
    #[serde(default)]
    timeout_seconds: Option<u64>,
    #[serde(default)]
    retry_policy: Option<StoredRetry>,
    #[serde(default)]
    required_permissions: Vec<String>,
    #[serde(default)]
    preconditions: Vec<Value>,
    #[serde(default)]
    postconditions: Vec<Value>,
    #[serde(default)]
    cost_model: Option<StoredCost>,
    implementation: StoredImplementation,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct StoredRetry {
    #[serde(default)]
    max_attempts: Option<u64>,
    #[serde(default)]
    backoff_seconds: Option<u64>,
}

#[derive(Deserialize)]
struct StoredCost {
    unit: String,
    #[serde(default)]
    estimate: Option<Number>,
}

#[derive(Deserialize)]
struct StoredImplementation {
    protocol: String,
    #[serde(default)]
    endpoint: Option<String>,
    #[serde(default)]
    entrypoint: Option<String>,
    #[serde(default)]
    auth: Option<StoredAuth>,
}

#[derive(Deserialize)]
struct StoredAuth {
    audience: String,
    #[serde(default)]
    scopes: Vec<String>,
}

/// `value` within `(least, most, default)`, the default when absent.
fn within(value: Option<u64>, (least, most, default): (u64, u64, u64)) -> u32 {
    u32::try_from(value.map_or(default, |value| value.clamp(least, most))).unwrap_or(u32::MAX)
}

impl StoredImplementation {
    fn into_implementation(self) -> Result<Implementation, String> {
        let auth = self.auth.map(|auth| Auth { audience: auth.audience, scopes: auth.scopes });
        let missing = |field: &str| format!("implementation.{field} is missing for protocol {}", self.protocol);
        match Protocol::parse(&self.protocol) {
            Some(Protocol::Local) => {
                let entrypoint = self.entrypoint.clone().ok_or_else(|| missing("entrypoint"))?;
                Ok(Implementation::Local { entrypoint })
            }
            Some(Protocol::Http) => {
                let endpoint = self.endpoint.clone().ok_or_else(|| missing("endpoint"))?;
                Ok(Implementation::Http { endpoint, auth })
            }
            Some(Protocol::Mcp) => {
                let endpoint = self.endpoint.clone().ok_or_else(|| missing("endpoint"))?;
                let tool = self.entrypoint.clone().ok_or_else(|| missing("entrypoint"))?;
                Ok(Implementation::Mcp { endpoint, tool, auth })
            }
            None => Err(format!(
                "implementation.protocol is {:?}; expected one of {}",
                self.protocol,
                Protocol::ALLOWED.join(", ")
            )),
        }
    }
}

impl Contract {
    /// A contract read back from its normalized JSON (see the module's header).
    pub fn from_stored(value: &Value) -> Result<Self, serde_json::Error> {
        Self::deserialize(value)
    }
}

impl Serialize for Contract {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.to_normalized_json().serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for Contract {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let stored = Stored::deserialize(deserializer)?;
        let implementation = stored.implementation.into_implementation().map_err(serde::de::Error::custom)?;
        let retry = stored.retry_policy.unwrap_or(StoredRetry { max_attempts: None, backoff_seconds: None });
        Ok(Self {
            inputs: stored.inputs,
            outputs: stored.outputs,
            idempotency: stored.idempotency,
            timeout_seconds: within(stored.timeout_seconds, TIMEOUT_SECONDS),
            retry_policy: RetryPolicy {
                max_attempts: within(retry.max_attempts, MAX_ATTEMPTS),
                backoff_seconds: within(retry.backoff_seconds, BACKOFF_SECONDS),
            },
            required_permissions: stored.required_permissions,
            preconditions: stored.preconditions,
            postconditions: stored.postconditions,
            cost_model: stored.cost_model.map(|cost| CostModel { unit: cost.unit, estimate: cost.estimate }),
            implementation,
        })
    }
}

impl schemars::JsonSchema for Contract {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Contract".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "description": "A normalized contract v1: every field present, `implementation` with all four keys.",
            "type": "object",
            "required": ["inputs", "outputs", "idempotency", "timeoutSeconds", "retryPolicy", "implementation"],
            "properties": {
                "inputs": {"description": "The JSON Schema of the inputs."},
                "outputs": {"description": "The JSON Schema of the outputs."},
                "idempotency": {"type": "string", "enum": Idempotency::ALLOWED},
                "timeoutSeconds": {"type": "integer", "minimum": TIMEOUT_SECONDS.0, "maximum": TIMEOUT_SECONDS.1},
                "retryPolicy": {
                    "type": "object",
                    "properties": {
                        "maxAttempts": {"type": "integer", "minimum": MAX_ATTEMPTS.0, "maximum": MAX_ATTEMPTS.1},
                        "backoffSeconds": {"type": "integer", "minimum": BACKOFF_SECONDS.0, "maximum": BACKOFF_SECONDS.1}
                    }
                },
                "requiredPermissions": {"type": "array", "items": {"type": "string"}},
                "preconditions": {"type": "array"},
                "postconditions": {"type": "array"},
                "costModel": {"type": ["object", "null"]},
                "implementation": {
                    "type": "object",
                    "required": ["protocol"],
                    "properties": {
                        "protocol": {"type": "string", "enum": Protocol::ALLOWED},
                        "endpoint": {"type": ["string", "null"]},
                        "entrypoint": {"type": ["string", "null"]},
                        "auth": {"type": ["object", "null"]}
                    }
                }
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::contract::{NormalizeOptions, normalize};
    use crate::policy::SideEffects;

    fn published() -> Contract {
        let raw = json!({
            "inputs": {"type": "object", "properties": {"text": {"type": "string"}}},
            "outputs": {"type": "object"},
            "idempotency": "required",
            "timeoutSeconds": 30,
            "retryPolicy": {"maxAttempts": 3, "backoffSeconds": 2},
            "requiredPermissions": ["claims.read"],
            "costModel": {"unit": "tokens", "estimate": 1.5},
            "implementation": {"protocol": "mcp", "endpoint": "https://tools.example.com/mcp", "entrypoint": "send",
                               "auth": {"audience": "claims", "scopes": ["send"]}}
        });
        normalize(&raw, SideEffects::ExternalWrite, &NormalizeOptions::default()).expect("a valid contract")
    }

    #[test]
    fn a_stored_contract_reads_back_equal() {
        let contract = published();
        let stored = serde_json::to_value(&contract).expect("serializes");
        assert_eq!(stored, contract.to_normalized_json());
        assert_eq!(Contract::from_stored(&stored).expect("reads back"), contract);
    }

    #[test]
    fn an_older_document_takes_the_contracts_defaults() {
        let read = Contract::from_stored(&json!({"implementation": {"protocol": "local", "entrypoint": "a:b"}}))
            .expect("reads");
        assert_eq!(read.timeout_seconds(), TIMEOUT_SECONDS.2 as u32);
        assert_eq!(read.retry_policy().max_attempts(), MAX_ATTEMPTS.2 as u32);
        assert_eq!(read.retry_policy().backoff_seconds(), BACKOFF_SECONDS.2 as u32);
        assert_eq!(read.idempotency(), Idempotency::default());
        let read = Contract::from_stored(
            &json!({"timeoutSeconds": 99_999, "implementation": {"protocol": "local", "entrypoint": "a:b"}}),
        )
        .expect("reads");
        assert_eq!(u64::from(read.timeout_seconds()), TIMEOUT_SECONDS.1, "within its bounds");
    }

    #[test]
    fn what_cannot_be_a_contract_is_named() {
        let error = Contract::from_stored(&json!({"implementation": {"protocol": "http"}})).expect_err("no endpoint");
        assert!(error.to_string().contains("implementation.endpoint is missing for protocol http"), "{error}");
        let error = Contract::from_stored(&json!({"implementation": {"protocol": "ftp"}})).expect_err("no protocol");
        assert!(error.to_string().contains("implementation.protocol is \"ftp\""), "{error}");
        let error = Contract::from_stored(&json!({"inputs": {}})).expect_err("no implementation");
        assert!(error.to_string().contains("implementation"), "{error}");
        assert!(Contract::from_stored(&json!("a contract")).is_err());
    }
}
