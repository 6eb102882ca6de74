//! What a leaf commits to: one event of the journal as an entry in canonical JSON (object keys
//! sorted by their bytes, no whitespace), its payload entering as a salted digest so the payload
//! can later be erased without breaking a proof. The leaf hash is over the entry's exact bytes;
//! an export carries those bytes, so a verifier never has to serialise JSON the same way.

use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use crate::tree::{Hash, leaf_hash};

/// How many random bytes salt a payload's digest.
pub const SALT_LEN: usize = 16;

/// One event as the journal keeps it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// The entry's canonical JSON: what the leaf hashes.
    pub bytes: String,
}

/// The fields of an event an entry holds in the clear (ids, who, when) besides its payload.
#[derive(Debug, Clone, Copy)]
pub struct Event<'a> {
    pub id: &'a str,
    pub kind: &'a str,
    pub subject: &'a str,
    pub actor: Option<&'a str>,
    pub request: Option<&'a str>,
    /// RFC 3339 with microseconds, UTC.
    pub at: &'a str,
    /// What the rules over the journal read without the payload (a call's basis, an approval's
    /// decider): kept in the clear, so erasing a payload never hides them.
    pub clear: &'a Value,
}

/// `sha256:<hex>` of the salt and the payload's canonical JSON.
pub fn payload_digest(salt: &[u8; SALT_LEN], data: &Value) -> String {
    text_digest(salt, &canonical(data))
}

/// `sha256:<hex>` of the salt and a payload already in canonical JSON (as an export carries it).
pub fn text_digest(salt: &[u8; SALT_LEN], payload: &str) -> String {
    let mut hasher = Sha256::new();
    hasher.update(salt);
    hasher.update(payload.as_bytes());
    let digest: Hash = hasher.finalize().into();
    format!("sha256:{}", digest.iter().map(|b| format!("{b:02x}")).collect::<String>())
}

/// A fresh random salt.
pub fn new_salt() -> [u8; SALT_LEN] {
    let mut salt = [0_u8; SALT_LEN];
    // The system's random source failing is not something to write a journal past.
    aws_lc_rs::rand::fill(&mut salt).expect("the system's random source answers");
    salt
}

/// Fields that hold what a person or a skill wrote (a reason, an error's message, a token's
/// label, a cost, typed outputs): they enter an entry only through the payload's digest.
const PRIVATE: &[&str] = &["reason", "message", "label", "cost", "outputs"];
/// Kinds whose `name` is a person's or a workspace's name.
const NAMED: &[&str] = &["principal.created", "principal.disabled", "workspace.created"];

/// What of an event's `data` its entry keeps in the clear: the data without its free text at
/// any depth (see `PRIVATE`), and without `name` on the kinds that name a person.
pub fn clear_of(kind: &str, data: &Value) -> Value {
    fn strip(value: &Value, named: bool) -> Value {
        match value {
            Value::Object(fields) => Value::Object(
                fields
                    .iter()
                    .filter(|(key, _)| !(PRIVATE.contains(&key.as_str()) || (named && key.as_str() == "name")))
                    .map(|(key, value)| (key.clone(), strip(value, false)))
                    .collect(),
            ),
            Value::Array(items) => Value::Array(items.iter().map(|item| strip(item, false)).collect()),
            scalar => scalar.clone(),
        }
    }
    strip(data, NAMED.contains(&kind))
}

impl Entry {
    /// The entry of `event` with its payload `data` salted by `salt`.
    pub fn new(event: &Event<'_>, data: &Value, salt: &[u8; SALT_LEN]) -> Self {
        let text = |value: Option<&str>| value.map_or(Value::Null, |value| Value::String(value.to_owned()));
        let mut fields = Map::new();
        fields.insert("actor".into(), text(event.actor));
        fields.insert("at".into(), Value::String(event.at.to_owned()));
        fields.insert("clear".into(), event.clear.clone());
        fields.insert("data".into(), Value::String(payload_digest(salt, data)));
        fields.insert("id".into(), Value::String(event.id.to_owned()));
        fields.insert("kind".into(), Value::String(event.kind.to_owned()));
        fields.insert("request".into(), text(event.request));
        fields.insert("subject".into(), Value::String(event.subject.to_owned()));
        Self { bytes: canonical(&Value::Object(fields)) }
    }

    /// Its leaf hash.
    pub fn leaf(&self) -> Hash {
        leaf_hash(self.bytes.as_bytes())
    }
}

/// `value` as canonical JSON: object keys sorted by their UTF-8 bytes, no whitespace, strings
/// escaped as JSON requires (and nothing more), numbers as they are written.
pub fn canonical(value: &Value) -> String {
    let mut out = String::new();
    write(value, &mut out);
    out
}

fn write(value: &Value, out: &mut String) {
    match value {
        Value::Object(fields) => {
            let mut keys: Vec<&String> = fields.keys().collect();
            keys.sort_unstable_by(|a, b| a.as_bytes().cmp(b.as_bytes()));
            out.push('{');
            for (n, key) in keys.into_iter().enumerate() {
                if n > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(key.clone()).to_string());
                out.push(':');
                write(&fields[key], out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (n, item) in items.iter().enumerate() {
                if n > 0 {
                    out.push(',');
                }
                write(item, out);
            }
            out.push(']');
        }
        scalar => out.push_str(&scalar.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn the_clear_part_leaves_out_free_text_and_names_of_people() {
        let data = json!({"taskId": "t-1", "reason": "the customer asked", "error": {"code": "x", "message": "boom"},
            "name": "kept", "items": [{"label": "secret", "id": 1}]});
        assert_eq!(
            clear_of("task.closed", &data),
            json!({"taskId": "t-1", "error": {"code": "x"}, "name": "kept", "items": [{"id": 1}]})
        );
        let person = json!({"name": "Ada Lovelace", "kind": "person"});
        assert_eq!(clear_of("principal.created", &person), json!({"kind": "person"}));
        assert_ne!(new_salt(), new_salt());
    }

    #[test]
    fn canonical_json_sorts_keys_at_every_depth_and_keeps_no_space() {
        let value =
            json!({"b": [{"z": 1, "a": "x"}, 2.5, null], "a": {"é": true, "e": "tab\there \"quoted\" \u{1}"}, "A": 1});
        assert_eq!(
            canonical(&value),
            r#"{"A":1,"a":{"e":"tab\there \"quoted\" \u0001","é":true},"b":[{"a":"x","z":1},2.5,null]}"#
        );
        // The same value written in another order is the same text.
        let reordered =
            json!({"A": 1, "b": [{"a": "x", "z": 1}, 2.5, null], "a": {"e": "tab\there \"quoted\" \u{1}", "é": true}});
        assert_eq!(canonical(&reordered), canonical(&value));
    }

    #[test]
    fn an_entry_commits_to_its_payload_only_through_the_salted_digest() {
        let clear = json!({"basis": {"kind": "approval", "approvalId": "a-1"}});
        let event = Event {
            id: "e-1",
            kind: "skill_invocation.requested",
            subject: "skill_invocation:c-1",
            actor: Some("p-1"),
            request: None,
            at: "2026-12-05T01:52:46.000001Z",
            clear: &clear,
        };
        let data = json!({"inputs": {"customer": "Ada Lovelace", "reply": "Your refund is on its way."}});
        let salt = [7_u8; SALT_LEN];
        let entry = Entry::new(&event, &data, &salt);
        assert!(
            entry.bytes.starts_with(r#"{"actor":"p-1","at":"2026-12-05T01:52:46.000001Z","clear":{"basis":"#),
            "{}",
            entry.bytes
        );
        assert!(!entry.bytes.contains("Ada"), "the payload is never in the clear: {}", entry.bytes);
        assert!(entry.bytes.contains(&payload_digest(&salt, &data)));
        // Another salt, another payload: another leaf; the same ones: the same leaf.
        assert_ne!(Entry::new(&event, &data, &[8; SALT_LEN]).leaf(), entry.leaf());
        assert_ne!(Entry::new(&event, &json!({"inputs": {}}), &salt).leaf(), entry.leaf());
        assert_eq!(Entry::new(&event, &data, &salt).leaf(), entry.leaf());
        // Erased (payload and salt gone), the entry's bytes still prove the leaf.
        assert_eq!(leaf_hash(entry.bytes.as_bytes()), entry.leaf());
    }
}
