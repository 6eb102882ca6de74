//! The skill contract: what a versioned skill promises, how it is referenced and exported, how
//! skills compose, and the protocol types for discovery, execution and errors.
//!
//! This crate does no IO and pulls in no async runtime, HTTP server, MCP or database: the SDK,
//! the hosts and the core all build on it.
//!
//! | what | where |
//! |---|---|
//! | `name@version` references | [`SkillRef`], [`SkillName`], [`SkillVersion`] |
//! | policy words | [`SideEffects`], [`RiskLevel`], [`Idempotency`] |
//! | contract v1, normalized | [`normalize`] → [`Contract`]; violations in [`ContractError`] |
//! | skill versions (leaf or composite) and their documents | [`Skill`], [`Skill::from_document`], [`Skill::to_document`] |
//! | the exported YAML file and drift | [`export`], [`yaml`] |
//! | composition | [`composite::resolve`] |
//! | protocol types | [`SkillErrorType`], [`SkillMetadata`], [`SkillDefinition`], [`SkillResult`], [`map_tool_error`] |
//! | the wire error and the code registry | [`SkillError`], [`codes`] |
//! | JSON Schema checks and validation | [`schema`] |
//! | reading a JSON Schema (properties, required, type, labels) | [`SchemaView`] |
//! | agents as packages declare them | [`agent`] |
//! | a task type's acceptance criteria | [`task_type`] |
//! | packages: reading, the offline check, plans against a core | [`package`] |
//! | the knowledge base's plans, state tokens and query conditions | [`knowledge`] |
//!
//! ```
//! use serde_json::json;
//! use skill_contract::{NormalizeOptions, Skill, export};
//!
//! let document = json!({
//!     "apiVersion": "taimen.ai/v1", "kind": "Skill", "key": "math.add",
//!     "spec": {
//!         "version": "1", "description": "Add two numbers.", "sideEffects": "none", "riskLevel": "low",
//!         "contract": {
//!             "inputs": {"type": "object"}, "outputs": {"type": "object"},
//!             "implementation": {"protocol": "local", "entrypoint": "math.skills:add"}
//!         }
//!     }
//! });
//! let skill = Skill::from_document(&document, &NormalizeOptions::default()).unwrap();
//! let file = export::render_skill_file(&skill.to_document(), None);
//! assert!(file.contains("  version: '1'\n"));
//! assert!(file.contains("    timeoutSeconds: 60\n"));
//! ```

pub mod agent;
pub mod codes;
pub mod composite;
mod contract;
mod error;
mod error_type;
pub mod export;
mod fields;
pub mod knowledge;
mod names;
pub mod package;
pub mod paths;
mod policy;
pub mod process;
mod protocol;
mod reading;
mod resolve_error;
pub mod rule;
pub mod schema;
mod schema_bounds;
mod schema_view;
pub use schema_view::{JsonType, SchemaView};
mod secret_scan;
mod text;
pub use secret_scan::find_secret_material;
pub use text::is_invisible_or_bidi;
mod skill;
pub mod task_type;
mod violation;
pub mod yaml;

use serde_json::Value;

pub use contract::{
    Auth, BACKOFF_SECONDS, Contract, CostModel, Implementation, MAX_ADDRESS, MAX_ATTEMPTS, MAX_CONTRACT_BYTES,
    MAX_PERMISSIONS, MAX_SCOPES, NormalizeOptions, Protocol, RetryPolicy, TIMEOUT_SECONDS, is_permission, normalize,
    unsafe_retry,
};
pub use error::{InvalidErrorCode, MAX_CODE, SkillError, is_valid_code};
pub use names::{MAX_NAME_SEGMENT, MAX_VERSION, RefError, SkillName, SkillRef, SkillVersion};
pub use policy::{Idempotency, PolicyWord, RiskLevel, SideEffects, UnknownWord};
pub use protocol::{
    ErrorClass, ProtocolError, ResolvedToolEntry, SkillCapabilitySummary, SkillDefinition, SkillErrorType,
    SkillMetadata, SkillResult, map_tool_error,
};
pub use reading::{DocumentProblem, Unread, read_typed};
pub use skill::{
    API_VERSION, CompositeSkill, KIND, LeafSkill, MAX_DESCRIPTION, SKILL_SOURCE, Skill, SkillBody, ToolDeclaration,
};
pub use violation::{ContractError, Problem, Violation, ViolationCode};

/// The examples of `docs/contract.md` run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../../../docs/contract.md")]
pub struct ContractDocs;

/// The JSON type of a value, as messages name it.
pub(crate) fn json_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(n) if n.is_f64() => "a float",
        Value::Number(_) => "an integer",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}
