//! Offline proofs in the C2SP `tlog-proof` format: a checkpoint (a signed note), the index of an
//! entry and the inclusion proof of its leaf in the checkpoint's tree. The entry's own bytes
//! travel in the `extra` line, so one file proves one entry with nothing else beside it but the
//! log's verifier key.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;

use crate::note::{Checkpoint, NoteError, Verifier};
use crate::tree::{Hash, leaf_hash, verify_inclusion};

/// The first line of the format.
const HEADER: &str = "c2sp.org/tlog-proof@v1";

/// One entry's proof.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlogProof {
    /// The entry's bytes (what the leaf hashes).
    pub entry: Vec<u8>,
    pub index: u64,
    pub hashes: Vec<Hash>,
    /// The signed checkpoint the proof leads to.
    pub note: String,
}

impl TlogProof {
    /// The proof as a `.tlog-proof` file.
    pub fn text(&self) -> String {
        let mut out = format!("{HEADER}\nextra {}\nindex {}\n", BASE64.encode(&self.entry), self.index);
        for hash in &self.hashes {
            out.push_str(&BASE64.encode(hash));
            out.push('\n');
        }
        out.push('\n');
        out.push_str(&self.note);
        out
    }

    /// Reads a `.tlog-proof` file (this log's: one `extra` line, the entry's bytes).
    pub fn parse(text: &str) -> Result<Self, NoteError> {
        let (head, note) = text
            .split_once("\n\n")
            .ok_or(NoteError::Malformed("a proof is its lines, a blank line and a checkpoint"))?;
        let mut lines = head.split('\n');
        if lines.next() != Some(HEADER) {
            return Err(NoteError::Malformed("a proof starts with c2sp.org/tlog-proof@v1"));
        }
        let entry = lines
            .next()
            .and_then(|line| line.strip_prefix("extra "))
            .and_then(|extra| BASE64.decode(extra).ok())
            .ok_or(NoteError::Malformed("the second line is `extra` and the entry in base64"))?;
        let index = lines
            .next()
            .and_then(|line| line.strip_prefix("index "))
            .and_then(|index| index.parse::<u64>().ok().filter(|n| n.to_string() == index))
            .ok_or(NoteError::Malformed("the third line is `index` and a decimal number"))?;
        let hashes = lines
            .map(|line| BASE64.decode(line).ok().and_then(|bytes| Hash::try_from(bytes).ok()))
            .collect::<Option<Vec<Hash>>>()
            .ok_or(NoteError::Malformed("each line of the inclusion proof is a hash in base64"))?;
        Ok(Self { entry, index, hashes, note: note.to_owned() })
    }

    /// The checkpoint this proof leads to, once its signature by `key` verifies and the entry's
    /// leaf is in its tree at the proof's index.
    pub fn verify(&self, key: &Verifier) -> Result<Checkpoint, NoteError> {
        let checkpoint = Checkpoint::parse(key.open(&self.note)?)?;
        if checkpoint.origin != key.name() {
            return Err(NoteError::Malformed("the checkpoint's origin is not the key's name"));
        }
        let leaf = leaf_hash(&self.entry);
        if self.index >= checkpoint.size
            || !verify_inclusion(self.index, checkpoint.size, &leaf, &self.hashes, &checkpoint.root)
        {
            return Err(NoteError::NotIncluded(self.index, checkpoint.size));
        }
        Ok(checkpoint)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::note::Signer;
    use crate::tree::{Levels, inclusion_proof, root};

    #[test]
    fn a_proof_file_verifies_offline_and_nothing_changed_in_it_does() {
        let entries: Vec<Vec<u8>> = (0..11).map(|n| format!("{{\"n\":{n}}}").into_bytes()).collect();
        let levels = Levels::new(entries.iter().map(|entry| leaf_hash(entry)).collect());
        let signer = Signer::generate("skills.example/journal").expect("a key");
        let checkpoint = Checkpoint { origin: "skills.example/journal".into(), size: 11, root: root(&levels, 11) };
        let proof = TlogProof {
            entry: entries[6].clone(),
            index: 6,
            hashes: inclusion_proof(&levels, 6, 11),
            note: signer.sign(&checkpoint.body()),
        };
        let text = proof.text();
        assert!(text.starts_with("c2sp.org/tlog-proof@v1\nextra eyJuIjo2fQ==\nindex 6\n"), "{text}");
        let read = TlogProof::parse(&text).expect("reads");
        assert_eq!(read, proof);
        assert_eq!(read.verify(&signer.verifier()).expect("verifies"), checkpoint);

        // Another entry, another index, a changed hash, another key: each refused.
        let mut other = proof.clone();
        other.entry = entries[5].clone();
        assert!(matches!(other.verify(&signer.verifier()), Err(NoteError::NotIncluded(6, 11))));
        let mut other = proof.clone();
        other.index = 7;
        assert!(other.verify(&signer.verifier()).is_err());
        let mut other = proof.clone();
        other.hashes[1][0] ^= 1;
        assert!(other.verify(&signer.verifier()).is_err());
        let stranger = Signer::generate("skills.example/journal").expect("a key");
        assert!(proof.verify(&stranger.verifier()).is_err());
        for broken in [&text.replacen("index 6", "index 06", 1), &text.replacen("extra ", "extras ", 1), "nothing"] {
            assert!(TlogProof::parse(broken).is_err(), "{broken}");
        }
    }
}
