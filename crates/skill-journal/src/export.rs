//! The journal as `journal export` writes it, a folder read by `journal verify` and by any other
//! verifier:
//!
//! | file | what |
//! |---|---|
//! | `key.txt` | the verifier key of the checkpoints (`name+id+key`), one line |
//! | `entries.jsonl` | one line per leaf, in index order: `index`, `entry` (the exact bytes the leaf hashes, as a JSON string), `leafHash` (the hash the database stored, base64), `payload` (the event's data as the canonical JSON its digest is over, as a JSON string) and `salt` (base64); both `null` once erased |
//! | `checkpoints.jsonl` | one line per signed checkpoint, oldest first: `size`, `signedAt`, `note` (the signed note) |

use std::borrow::Cow;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use serde::Deserialize;
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
        let line: Line<'_> = serde_json::from_str(line).map_err(|error| format!("not an entry's line: {error}"))?;
        let bytes = |field: &str, text: Option<Cow<'_, str>>| -> Result<Option<Vec<u8>>, String> {
            text.map(|text| BASE64.decode(text.as_bytes()).map_err(|_| format!("`{field}` is not base64"))).transpose()
        };
        let leaf_hash = match bytes("leafHash", line.leaf_hash)? {
            None => None,
            Some(hash) => Some(Hash::try_from(hash).map_err(|_| "`leafHash` is not 32 bytes")?),
        };
        Ok(Self {
            index: line.index,
            entry: line.entry.into_owned(),
            leaf_hash,
            payload: line.payload.map(Cow::into_owned),
            salt: bytes("salt", line.salt)?,
        })
    }
}

/// A line of `entries.jsonl` as it is read: its strings borrowed where they hold no escape.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Line<'a> {
    index: u64,
    #[serde(borrow)]
    entry: Cow<'a, str>,
    #[serde(borrow, default)]
    leaf_hash: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    payload: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    salt: Option<Cow<'a, str>>,
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
