//! The tamper-evident journal as readers see it (`docs/journal.md`): its signed checkpoints and
//! the proofs that an entry is in a checkpoint's tree and that one checkpoint's tree extends
//! another's. Hashes are base64 (RFC 4648 §4), as the C2SP formats write them.

use serde::{Deserialize, Serialize};

/// A signed checkpoint of the journal (`GET /journal/checkpoint`: the latest).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CheckpointOut {
    /// The log's name: the checkpoint's first line and its key's name.
    pub origin: String,
    /// How many entries its tree holds.
    pub size: u64,
    /// The root hash of that tree.
    pub root_hash: String,
    /// The checkpoint as a C2SP signed note (what `journal verify --trust` reads).
    pub note: String,
    /// The key that verifies it: `name+id+key`.
    pub key: String,
    pub signed_at: String,
}

/// The query of `GET /journal/proofs/inclusion`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct InclusionQuery {
    /// The entry's index (0 for the first).
    pub index: u64,
    /// The size of the tree to prove it in (default: the latest checkpoint's); above `index`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
}

/// An entry's inclusion proof: its audit path in the tree of `size` entries.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct InclusionProofOut {
    pub index: u64,
    pub size: u64,
    /// The entry's exact bytes (canonical JSON), which the leaf hashes.
    pub entry: String,
    pub leaf_hash: String,
    /// The audit path, from the leaf up.
    pub hashes: Vec<String>,
    /// The root the path leads to.
    pub root_hash: String,
}

/// The query of `GET /journal/proofs/consistency`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ConsistencyQuery {
    /// The older tree's size (1 or more).
    pub from: u64,
    /// The newer tree's size (default: the latest checkpoint's); at least `from`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub to: Option<u64>,
}

/// The proof that the tree of `to` entries extends the tree of `from`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ConsistencyProofOut {
    pub from: u64,
    pub to: u64,
    pub hashes: Vec<String>,
    pub from_root_hash: String,
    pub to_root_hash: String,
}
