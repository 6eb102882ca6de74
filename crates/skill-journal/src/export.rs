//! The journal as `journal export` writes it, a folder read by `journal verify` and by any other
//! verifier:
//!
//! | file | what |
//! |---|---|
//! | `key.txt` | the verifier key of the checkpoints (`name+id+key`), one line |
//! | `entries.jsonl` | one line per leaf, in index order: `index`, `entry` (the exact bytes the leaf hashes, as a JSON string), `leafHash` (the hash the database stored, base64), `payload` (the event's data as the canonical JSON its digest is over, as a JSON string) and `salt` (base64); both `null` once erased |
//! | `checkpoints.jsonl` | one line per signed checkpoint, oldest first: `size`, `signedAt`, `note` (the signed note) |

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use serde_json::{Value, json};

use crate::tree::Hash;

pub const KEY_FILE: &str = "key.txt";
pub const ENTRIES_FILE: &str = "entries.jsonl";
pub const CHECKPOINTS_FILE: &str = "checkpoints.jsonl";

/// One line of `entries.jsonl`.
#[derive(Debug, Clone, PartialEq)]
pub struct ExportedEntry {
    pub index: u64,
    pub entry: String,
    /// The leaf hash as the database stored it (none when it had none).
    pub leaf_hash: Option<Hash>,
    /// The event's data as canonical JSON: the exact bytes its digest is over.
    pub payload: Option<String>,
    pub salt: Option<Vec<u8>>,
}

/// One line of `checkpoints.jsonl`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExportedCheckpoint {
    pub size: u64,
    pub signed_at: String,
    pub note: String,
}

impl ExportedEntry {
    pub fn line(&self) -> String {
        json!({
            "index": self.index,
            "entry": self.entry,
            "leafHash": self.leaf_hash.map(|hash| BASE64.encode(hash)),
            "payload": self.payload,
            "salt": self.salt.as_ref().map(|salt| BASE64.encode(salt)),
        })
        .to_string()
    }

    /// Reads one line; what is wrong with it when it is not one.
    pub fn parse(line: &str) -> Result<Self, String> {
        let value: Value = serde_json::from_str(line).map_err(|error| format!("not JSON: {error}"))?;
        let index = value["index"].as_u64().ok_or("no `index` number")?;
        let entry = value["entry"].as_str().ok_or("no `entry` string")?.to_owned();
        let bytes = |field: &str| -> Result<Option<Vec<u8>>, String> {
            match &value[field] {
                Value::Null => Ok(None),
                Value::String(text) => BASE64.decode(text).map(Some).map_err(|_| format!("`{field}` is not base64")),
                _ => Err(format!("`{field}` is not a string")),
            }
        };
        let leaf_hash = match bytes("leafHash")? {
            None => None,
            Some(hash) => Some(Hash::try_from(hash).map_err(|_| "`leafHash` is not 32 bytes")?),
        };
        let payload = match &value["payload"] {
            Value::Null => None,
            Value::String(text) => Some(text.clone()),
            _ => return Err("`payload` is not a string".to_owned()),
        };
        Ok(Self { index, entry, leaf_hash, payload, salt: bytes("salt")? })
    }
}

impl ExportedCheckpoint {
    pub fn line(&self) -> String {
        json!({"size": self.size, "signedAt": self.signed_at, "note": self.note}).to_string()
    }

    pub fn parse(line: &str) -> Result<Self, String> {
        let value: Value = serde_json::from_str(line).map_err(|error| format!("not JSON: {error}"))?;
        Ok(Self {
            size: value["size"].as_u64().ok_or("no `size` number")?,
            signed_at: value["signedAt"].as_str().unwrap_or_default().to_owned(),
            note: value["note"].as_str().ok_or("no `note` string")?.to_owned(),
        })
    }
}
