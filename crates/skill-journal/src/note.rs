//! Checkpoints in the C2SP formats: the body of a `tlog-checkpoint` (origin, tree size, root hash,
//! extension lines) signed as a `signed-note` with an Ed25519 key, and the keys as the note
//! format writes them (`PRIVATE+KEY+name+id+key` for the signer, `name+id+key` for verifiers).

use aws_lc_rs::encoding::AsBigEndian as _;
use aws_lc_rs::signature::{ED25519, Ed25519KeyPair, KeyPair as _, UnparsedPublicKey};
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use sha2::{Digest, Sha256};

use crate::tree::Hash;

/// The algorithm byte of an Ed25519 key in the note format.
const ED25519_ALGORITHM: u8 = 0x01;
/// What starts a signature line.
const SIGNATURE_PREFIX: &str = "\u{2014} ";

/// What a checkpoint says: the log (`origin`), how many entries it holds, the root of their tree,
/// and extension lines (none here).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Checkpoint {
    pub origin: String,
    pub size: u64,
    pub root: Hash,
}

impl Checkpoint {
    /// The checkpoint's body, each line ending in a newline.
    pub fn body(&self) -> String {
        format!("{}\n{}\n{}\n", self.origin, self.size, BASE64.encode(self.root))
    }

    /// Reads a body: three lines (extension lines after them are refused: this log writes none).
    pub fn parse(body: &str) -> Result<Self, NoteError> {
        let lines: Vec<&str> = body
            .strip_suffix('\n')
            .ok_or(NoteError::Malformed("the body ends without a newline"))?
            .split('\n')
            .collect();
        let [origin, size, root] = lines[..] else {
            return Err(NoteError::Malformed("a checkpoint is three lines: origin, size, root"));
        };
        if origin.is_empty() || origin.chars().any(char::is_control) {
            return Err(NoteError::Malformed("the origin line is empty or holds a control character"));
        }
        let size = size
            .parse::<u64>()
            .ok()
            .filter(|n| n.to_string() == size)
            .ok_or(NoteError::Malformed("the size is not a decimal number without leading zeros"))?;
        let root: Hash = BASE64
            .decode(root)
            .ok()
            .and_then(|bytes| bytes.try_into().ok())
            .ok_or(NoteError::Malformed("the root is not 32 bytes in base64"))?;
        Ok(Self { origin: origin.to_owned(), size, root })
    }
}

/// What is wrong with a note or a key.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NoteError {
    #[error("malformed: {0}")]
    Malformed(&'static str),
    #[error("no signature by the key {0}")]
    Unsigned(String),
    #[error("the signature by {0} does not verify")]
    BadSignature(String),
    #[error("the key cannot be used: {0}")]
    Key(&'static str),
    #[error("the entry at index {0} is not in the checkpoint's tree of {1}")]
    NotIncluded(u64, u64),
}

/// The 4-byte id of a key: the first bytes of `SHA-256(name || "\n" || algorithm || key)`.
fn key_id(name: &str, public: &[u8]) -> [u8; 4] {
    let mut hasher = Sha256::new();
    hasher.update(name.as_bytes());
    hasher.update(b"\n");
    hasher.update([ED25519_ALGORITHM]);
    hasher.update(public);
    let digest = hasher.finalize();
    [digest[0], digest[1], digest[2], digest[3]]
}

fn sane_name(name: &str) -> bool {
    !name.is_empty() && !name.contains('+') && name.chars().all(|c| !c.is_whitespace() && !c.is_control())
}

/// The log's signing key.
pub struct Signer {
    name: String,
    pair: Ed25519KeyPair,
    id: [u8; 4],
}

impl std::fmt::Debug for Signer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Signer").field("name", &self.name).finish_non_exhaustive()
    }
}

impl Signer {
    /// A new key named `name` (no spaces, no `+`).
    pub fn generate(name: &str) -> Result<Self, NoteError> {
        if !sane_name(name) {
            return Err(NoteError::Key("a key's name has no space, no control character and no +"));
        }
        let pair = Ed25519KeyPair::generate().map_err(|_| NoteError::Key("no key could be generated"))?;
        let id = key_id(name, pair.public_key().as_ref());
        Ok(Self { name: name.to_owned(), pair, id })
    }

    /// Reads `PRIVATE+KEY+<name>+<id hex>+<base64(0x01 || seed)>`.
    pub fn parse(text: &str) -> Result<Self, NoteError> {
        let rest =
            text.trim().strip_prefix("PRIVATE+KEY+").ok_or(NoteError::Key("a signing key starts PRIVATE+KEY+"))?;
        // The key's base64 may hold a `+` itself: the name and the id are the first two parts.
        let mut parts = rest.splitn(3, '+');
        let (Some(name), Some(id), Some(key)) = (parts.next(), parts.next(), parts.next()) else {
            return Err(NoteError::Key("a signing key is PRIVATE+KEY+name+id+key"));
        };
        let bytes = BASE64.decode(key).map_err(|_| NoteError::Key("the key is not base64"))?;
        let [algorithm, seed @ ..] = &bytes[..] else { return Err(NoteError::Key("the key is empty")) };
        if *algorithm != ED25519_ALGORITHM || seed.len() != 32 {
            return Err(NoteError::Key("only Ed25519 keys (32-byte seeds) are read"));
        }
        let pair = Ed25519KeyPair::from_seed_unchecked(seed).map_err(|_| NoteError::Key("the seed is refused"))?;
        let signer = Self { name: name.to_owned(), id: key_id(name, pair.public_key().as_ref()), pair };
        if hex(&signer.id) != id || !sane_name(name) {
            return Err(NoteError::Key("the key's id does not match its name and key"));
        }
        Ok(signer)
    }

    /// The key as its file holds it (a secret).
    pub fn private_text(&self) -> Result<String, NoteError> {
        let seed = self
            .pair
            .seed()
            .and_then(|seed| seed.as_be_bytes())
            .map_err(|_| NoteError::Key("the seed cannot be read"))?;
        let mut bytes = vec![ED25519_ALGORITHM];
        bytes.extend_from_slice(seed.as_ref());
        Ok(format!("PRIVATE+KEY+{}+{}+{}", self.name, hex(&self.id), BASE64.encode(bytes)))
    }

    /// The key verifiers are given.
    pub fn verifier(&self) -> Verifier {
        let mut public = [0_u8; 32];
        public.copy_from_slice(self.pair.public_key().as_ref());
        Verifier { name: self.name.clone(), id: self.id, public }
    }

    /// `body` as a signed note: the body, a blank line, and this key's signature line.
    pub fn sign(&self, body: &str) -> String {
        let signature = self.pair.sign(body.as_bytes());
        let mut bytes = self.id.to_vec();
        bytes.extend_from_slice(signature.as_ref());
        format!("{body}\n{SIGNATURE_PREFIX}{} {}\n", self.name, BASE64.encode(bytes))
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// A key that checks notes: `<name>+<id hex>+<base64(0x01 || public key)>`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verifier {
    name: String,
    id: [u8; 4],
    public: [u8; 32],
}

impl Verifier {
    pub fn parse(text: &str) -> Result<Self, NoteError> {
        let mut parts = text.trim().splitn(3, '+');
        let (Some(name), Some(id), Some(key)) = (parts.next(), parts.next(), parts.next()) else {
            return Err(NoteError::Key("a verifier key is name+id+key"));
        };
        let bytes = BASE64.decode(key).map_err(|_| NoteError::Key("the key is not base64"))?;
        let [ED25519_ALGORITHM, public @ ..] = &bytes[..] else {
            return Err(NoteError::Key("only Ed25519 keys are read"));
        };
        let public: [u8; 32] = public.try_into().map_err(|_| NoteError::Key("an Ed25519 key is 32 bytes"))?;
        let verifier = Self { name: name.to_owned(), id: key_id(name, &public), public };
        if hex(&verifier.id) != id || !sane_name(name) {
            return Err(NoteError::Key("the key's id does not match its name and key"));
        }
        Ok(verifier)
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// The key as verifiers write it.
    pub fn text(&self) -> String {
        let mut bytes = vec![ED25519_ALGORITHM];
        bytes.extend_from_slice(&self.public);
        format!("{}+{}+{}", self.name, hex(&self.id), BASE64.encode(bytes))
    }

    /// The body of `note` once a signature line of this key verifies over it.
    pub fn open<'a>(&self, note: &'a str) -> Result<&'a str, NoteError> {
        let split = note.rfind("\n\n").ok_or(NoteError::Malformed("a note is a body, a blank line and signatures"))?;
        let (body, signatures) = (&note[..=split], &note[split + 2..]);
        if !signatures.ends_with('\n') {
            return Err(NoteError::Malformed("the signatures end without a newline"));
        }
        for line in signatures.lines() {
            let rest = line
                .strip_prefix(SIGNATURE_PREFIX)
                .ok_or(NoteError::Malformed("a signature line starts with an em dash"))?;
            let (name, signature) =
                rest.split_once(' ').ok_or(NoteError::Malformed("a signature line is a name and a signature"))?;
            if name != self.name {
                continue;
            }
            let bytes = BASE64.decode(signature).map_err(|_| NoteError::Malformed("a signature is base64"))?;
            let Some((id, signature)) = bytes.split_first_chunk::<4>() else { continue };
            if *id != self.id {
                continue;
            }
            return UnparsedPublicKey::new(&ED25519, &self.public)
                .verify(body.as_bytes(), signature)
                .map(|()| body)
                .map_err(|_| NoteError::BadSignature(self.name.clone()));
        }
        Err(NoteError::Unsigned(self.name.clone()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn checkpoint() -> Checkpoint {
        Checkpoint { origin: "skills.example/journal".into(), size: 8, root: [7; 32] }
    }

    #[test]
    fn a_signed_checkpoint_opens_with_its_key_and_with_no_other() {
        let signer = Signer::generate("skills.example").expect("a key");
        let note = signer.sign(&checkpoint().body());
        assert!(note.starts_with(
            "skills.example/journal\n8\nBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwc=\n\n\u{2014} skills.example "
        ));
        let verifier = Verifier::parse(&signer.verifier().text()).expect("the verifier key");
        let body = verifier.open(&note).expect("it verifies");
        assert_eq!(Checkpoint::parse(body).expect("a checkpoint"), checkpoint());
        // Another key of the same name: not its signature.
        let other = Signer::generate("skills.example").expect("a key").verifier();
        assert_eq!(other.open(&note), Err(NoteError::Unsigned("skills.example".into())));
        // A changed byte anywhere in the body.
        let forged = note.replacen("\n8\n", "\n9\n", 1);
        assert_eq!(verifier.open(&forged), Err(NoteError::BadSignature("skills.example".into())));
        // The key survives its file.
        let again = Signer::parse(&signer.private_text().expect("its text")).expect("read back");
        assert_eq!(again.verifier(), signer.verifier());
        assert!(verifier.open(&again.sign(&checkpoint().body())).is_ok());
    }

    #[test]
    fn malformed_checkpoints_and_keys_are_refused_by_what_is_wrong() {
        for body in [
            "a\n8\n",
            "a\n08\nBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwc=\n",
            "a\n8\nAAAA\n",
            "\n8\nBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwc=\n",
            "a\n8\nBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwc=",
        ] {
            assert!(matches!(Checkpoint::parse(body), Err(NoteError::Malformed(_))), "{body:?}");
        }
        assert!(Signer::generate("has space").is_err());
        assert!(Signer::generate("a+b").is_err());
        let signer = Signer::generate("log").expect("a key");
        let text = signer.verifier().text();
        let wrong_id = format!("log+00000000+{}", text.rsplit('+').next().expect("the key"));
        assert!(Verifier::parse(&wrong_id).is_err());
        assert!(Signer::parse("PRIVATE+KEY+log+00000000+AQ==").is_err());
    }
}
