//! The contract crate's integration tests, one binary: documents, the contract's rules,
//! composition, references, the YAML writer and reader, and the exported file.

mod composition;
mod contract_rules;
mod documents;
mod export_snapshot;
mod pyyaml_crosscheck;
mod refs;
#[path = "support/strategies.rs"]
mod strategies;
mod yaml_roundtrip;
