//! The journal's proofs, with no IO: the RFC 6962 Merkle tree over the journal's entries
//! (hashes, roots, inclusion and consistency proofs and their verification) and signed
//! checkpoints in the C2SP `tlog-checkpoint` and `signed-note` formats (Ed25519).
//!
//! | what | where |
//! |---|---|
//! | leaf and node hashes, roots, proofs, their verification | [`tree`] |
//! | checkpoints, signed notes, signing and verifier keys | [`note`] |

pub mod note;
pub mod tree;

pub use note::{Checkpoint, NoteError, Signer, Verifier};
pub use tree::{Hash, Levels, Nodes};
