//! The journal's proofs, with no IO: its entries in canonical JSON, the RFC 6962 Merkle tree over them
//! (hashes, roots, inclusion and consistency proofs and their verification) and signed
//! checkpoints in the C2SP `tlog-checkpoint` and `signed-note` formats (Ed25519).
//!
//! | what | where |
//! |---|---|
//! | an event as an entry: canonical JSON, its payload as a salted digest | [`entry`] |
//! | leaf and node hashes, roots, proofs, their verification | [`tree`] |
//! | checkpoints, signed notes, signing and verifier keys | [`note`] |
//! | one entry's offline proof, a `tlog-proof` file | [`proof`] |
//! | the folder `journal export` writes | [`export`] |
//! | `journal verify`: the tree, the checkpoints, the rules over the entries | [`audit`] |

pub mod audit;
pub mod entry;
pub mod export;
pub mod note;
pub mod proof;
pub mod tree;

pub use entry::Entry;
pub use note::{Checkpoint, NoteError, Signer, Verifier};
pub use proof::TlogProof;
pub use tree::{Hash, Levels, Nodes};
