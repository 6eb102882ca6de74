//! The tamper-evident journal's checkpoints and proofs (`docs/journal.md`). The core signs a
//! checkpoint of the tree (origin, size, root) with its Ed25519 key, kept apart from the database,
//! only when the tree grew and only when the new tree extends the last one it signed (a
//! consistency proof from the stored hashes, checked against the root it signed then). The proofs
//! are read from the stored hashes; anyone checks them offline against a signed checkpoint.

use skill_contract::codes::Code;
use std::sync::Arc;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use skill_api::events::{ApprovalDecided, InvocationRequested};
use skill_api::{Basis, CheckpointOut, ConsistencyProofOut, EventData, InclusionProofOut};
use skill_journal::tree::{self, Hash, Needed, Nodes as _};
use skill_journal::{Checkpoint, Signer, Verifier};
use skill_store::{CheckpointRow, ErrorKind};

use crate::catalog::view_time;
use crate::error::{Class, EngineError, Result};
use crate::{Actor, Engine};

/// The key the core signs checkpoints with, and the last checkpoint it signed.
pub struct JournalKey {
    signer: Signer,
    verifier: Verifier,
    /// `(size, root)` of the last checkpoint this process signed or trusted; held while signing,
    /// so one core signs one at a time.
    last: tokio::sync::Mutex<Option<(u64, Hash)>>,
}

impl std::fmt::Debug for JournalKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JournalKey").field("verifier", &self.verifier.text()).finish_non_exhaustive()
    }
}

impl JournalKey {
    pub fn new(signer: Signer) -> Self {
        let verifier = signer.verifier();
        Self { signer, verifier, last: tokio::sync::Mutex::new(None) }
    }
}

fn b64(hash: &Hash) -> String {
    BASE64.encode(hash)
}

fn unsigned() -> EngineError {
    EngineError::new(
        Class::NotFound,
        Code::JournalUnsigned,
        "the journal has no signed checkpoint yet: the core signs one within a second of an event when it has a \
         journal key (--journal-key)",
    )
}

fn inconsistent(message: String) -> EngineError {
    EngineError::new(Class::Internal, Code::JournalInconsistent, message)
}

/// A checkpoint as the API gives it.
fn view(row: &CheckpointRow, origin: &str) -> CheckpointOut {
    CheckpointOut {
        origin: origin.to_owned(),
        size: row.size,
        root_hash: b64(&row.root),
        note: row.note.clone(),
        key: row.key.clone(),
        signed_at: view_time(&row.signed_at),
    }
}

impl Engine {
    /// The engine that signs the journal's checkpoints with `signer`.
    #[must_use]
    pub fn with_journal_key(mut self, signer: Signer) -> Self {
        self.journal = Some(Arc::new(JournalKey::new(signer)));
        self
    }

    /// The key that verifies this core's checkpoints, when it signs them.
    pub fn journal_verifier(&self) -> Option<&Verifier> {
        self.journal.as_ref().map(|key| &key.verifier)
    }

    /// The nodes an algorithm over the stored tree reads, read in one pass.
    async fn nodes_for(&self, run: impl Fn(&Needed)) -> Result<std::collections::HashMap<(u32, u64), Hash>> {
        let needed = Needed::default();
        run(&needed);
        let at = needed.into_vec();
        let mut nodes = self.store.journal_nodes(&at).await?;
        let missing: Vec<(u32, u64)> = at.iter().filter(|node| !nodes.contains_key(node)).copied().collect();
        if !missing.is_empty() {
            // Hashes are made from the entries below them when they are missing (a leaf
            // appended by SQL comes without its hashes).
            self.store.journal_fill(&missing).await.map_err(|error| {
                inconsistent(format!("the journal's stored tree cannot be completed from its entries: {error}"))
            })?;
            nodes = self.store.journal_nodes(&at).await?;
            if let Some((level, index)) = at.iter().find(|node| !nodes.contains_key(node)) {
                return Err(inconsistent(format!("the journal's stored tree has no node ({level}, {index})")));
            }
        }
        Ok(nodes)
    }

    /// The root of the first `size` leaves with the leaves from `trusted` on, and every node over
    /// them, made from the entries; only the complete subtrees before `trusted` are read.
    async fn root_from_entries(&self, trusted: u64, size: u64) -> Result<Hash> {
        let mut tail = Vec::new();
        while (trusted + tail.len() as u64) < size {
            let from = trusted + tail.len() as u64;
            let page = self.store.journal_leaves(from, 5_000).await?;
            if page.is_empty() {
                break;
            }
            for leaf in page {
                if leaf.index != trusted + tail.len() as u64 || leaf.index >= size {
                    break;
                }
                tail.push(tree::leaf_hash(leaf.entry.as_bytes()));
            }
            if tail.len() as u64 == from - trusted {
                break;
            }
        }
        if trusted + tail.len() as u64 != size {
            return Err(inconsistent(format!("the journal has no entry at index {}", trusted + tail.len() as u64)));
        }
        let recorder =
            Tail { trusted, tail: &tail, stored: std::collections::HashMap::new(), read: Some(Needed::default()) };
        let _ = tree::root(&recorder, size);
        let read = recorder.read.map(Needed::into_vec).unwrap_or_default();
        let stored = self
            .nodes_for(|needed| {
                read.iter().for_each(|&(level, index)| {
                    let _ = needed.node(level, index);
                })
            })
            .await?;
        Ok(tree::root(&Tail { trusted, tail: &tail, stored, read: None }, size))
    }

    /// The root of the stored tree's first `size` leaves.
    async fn stored_root(&self, size: u64) -> Result<Hash> {
        let nodes = self
            .nodes_for(|needed| {
                let _ = tree::root(needed, size);
            })
            .await?;
        Ok(tree::root(&nodes, size))
    }

    /// Signs a checkpoint of the tree as it is now, when it grew since the last one signed; `None`
    /// when there is nothing new (or no key). The tree must extend every checkpoint known: the last
    /// this core signed, the newest kept in the database that its key verifies, and `outside` (the
    /// last one sent outside the database, read back from there: what whoever holds the database
    /// cannot rewrite). Refuses (`journal_inconsistent`) a tree that does not: its stored entries or
    /// hashes were changed.
    pub async fn sign_checkpoint(&self, outside: Option<(u64, Hash)>) -> Result<Option<CheckpointRow>> {
        let Some(key) = self.journal.clone() else { return Ok(None) };
        let mut last = key.last.lock().await;
        let size = self.store.journal_size().await?;
        // Idle: the tree is the one this core signed last; nothing is read or checked until it
        // grows (whatever was changed meanwhile is checked then, before anything is signed).
        if last.is_some_and(|(signed, _)| signed == size) {
            return Ok(None);
        }
        let mut known: Vec<(u64, Hash, &str)> = Vec::new();
        if let Some((signed, root)) = *last {
            known.push((signed, root, "the last checkpoint this core signed"));
        }
        if let Some((signed, root)) = self.last_kept(&key.verifier).await? {
            known.push((signed, root, "the newest checkpoint kept in the database"));
        }
        if let Some((signed, root)) = outside {
            known.push((signed, root, "the checkpoint sent outside the database"));
        }
        if let Some((signed, _, what)) = known.iter().find(|(signed, _, _)| *signed > size) {
            return Err(inconsistent(format!(
                "the journal holds {size} entries, fewer than the {signed} of {what}: it was cut; nothing more is \
                 signed until an operator looks (journal verify --trust)"
            )));
        }
        if size == 0 {
            return Ok(None);
        }
        let root = self.stored_root(size).await?;
        for &(signed, signed_root, what) in known.iter().filter(|(signed, _, _)| *signed > 0) {
            let holds = if signed == size {
                signed_root == root
            } else {
                let nodes = self
                    .nodes_for(|needed| {
                        let _ = tree::consistency_proof(needed, signed, size);
                    })
                    .await?;
                let proof = tree::consistency_proof(&nodes, signed, size);
                tree::verify_consistency(signed, size, &signed_root, &root, &proof)
            };
            if !holds {
                return Err(inconsistent(format!(
                    "the journal's tree of {size} entries does not extend {what} ({signed} entries): its stored \
                     entries or hashes were changed; nothing more is signed until an operator looks (journal verify \
                     --trust)"
                )));
            }
        }
        if known.iter().any(|(signed, _, _)| *signed == size) {
            *last = Some((size, root));
            return Ok(None);
        }
        // What is signed is what the entries say: the leaves after the last checkpoint known, and
        // every hash over them, are made again from the entries (a hash planted beside an entry
        // appended by SQL is not signed).
        let trusted = known.iter().map(|(signed, _, _)| *signed).max().unwrap_or(0);
        if self.root_from_entries(trusted, size).await? != root {
            return Err(inconsistent(format!(
                "a stored hash over the entries {trusted} to {} does not match them: it was written by SQL; nothing \
                 more is signed until an operator looks (journal verify)",
                size - 1
            )));
        }
        let checkpoint = Checkpoint { origin: key.verifier.name().to_owned(), size, root };
        let row = CheckpointRow {
            size,
            root,
            note: key.signer.sign(&checkpoint.body()),
            key: key.verifier.text(),
            signed_at: self.now(),
        };
        match self.store.add_journal_checkpoint(&row).await {
            Ok(()) => {}
            // Another core signed this tree, or a larger one, first: it is theirs to send.
            Err(error)
                if matches!(
                    error.kind(),
                    ErrorKind::Conflict | ErrorKind::Refused(Code::JournalCheckpoint | Code::JournalAppendOnly)
                ) =>
            {
                *last = Some((size, root));
                return Ok(None);
            }
            Err(error) => return Err(error.into()),
        }
        *last = Some((size, root));
        Ok(Some(row))
    }

    /// The newest kept checkpoint that this key signed and that still verifies: where signing
    /// goes on after a restart. One that does not verify is not trusted (and says so).
    async fn last_kept(&self, verifier: &Verifier) -> Result<Option<(u64, Hash)>> {
        for row in self.store.journal_checkpoints(16).await? {
            let opened = verifier.open(&row.note).ok().and_then(|body| Checkpoint::parse(body).ok());
            match opened {
                Some(checkpoint) if checkpoint.size == row.size && checkpoint.origin == verifier.name() => {
                    return Ok(Some((checkpoint.size, checkpoint.root)));
                }
                _ if row.key == verifier.text() => {
                    return Err(inconsistent(format!(
                        "the kept checkpoint of {} entries names this core's key but its signature does not \
                         verify: the checkpoints were changed; nothing more is signed until an operator looks",
                        row.size
                    )));
                }
                // Signed by an earlier key: the new key starts its own line of checkpoints.
                _ => {}
            }
        }
        Ok(None)
    }

    /// The latest signed checkpoint.
    pub async fn journal_checkpoint(&self, actor: &Actor) -> Result<CheckpointOut> {
        actor.require("org.read")?;
        self.latest_checkpoint().await?.ok_or_else(unsigned)
    }

    /// The newest kept checkpoint. One that names this core's key is given only once that key
    /// verifies it (a note changed in the database is an error, never served as signed).
    async fn latest_checkpoint(&self) -> Result<Option<CheckpointOut>> {
        let rows = self.store.journal_checkpoints(16).await?;
        // A core that signs serves its own checkpoints only: a row of another key is not its.
        let ours = self.journal_verifier().map(Verifier::text);
        let Some(row) = rows.into_iter().find(|row| ours.as_ref().is_none_or(|ours| *ours == row.key)) else {
            return Ok(None);
        };
        if let Some(ours) = self.journal_verifier() {
            let signed = ours.open(&row.note).ok().and_then(|body| Checkpoint::parse(body).ok());
            if signed.is_none_or(|signed| signed.size != row.size || signed.root != row.root) {
                return Err(inconsistent(format!(
                    "the newest kept checkpoint ({} entries) does not verify with this core's key: the checkpoints \
                     were changed in the database",
                    row.size
                )));
            }
        }
        let origin = Verifier::parse(&row.key).map(|key| key.name().to_owned()).unwrap_or_default();
        Ok(Some(view(&row, &origin)))
    }

    /// `Ok` unless `latest` (the latest checkpoint) signs a tree of `size` whose root is not `root`.
    fn signed_root_holds(latest: Option<&CheckpointOut>, size: u64, root: &Hash) -> Result<()> {
        match latest {
            Some(checkpoint) if checkpoint.size == size && checkpoint.root_hash != b64(root) => Err(inconsistent(
                format!("the stored tree of {size} entries is not the one signed: a hash or an entry was changed"),
            )),
            _ => Ok(()),
        }
    }

    /// The size a proof is made for: `asked`, or `latest`'s (the latest checkpoint); never past the
    /// tree.
    async fn proof_size(&self, asked: Option<u64>, latest: Option<&CheckpointOut>, field: &str) -> Result<u64> {
        let size = match asked {
            Some(size) => size,
            None => latest.ok_or_else(unsigned)?.size,
        };
        let held = self.store.journal_size().await?;
        if size > held {
            return Err(EngineError::invalid_request(format!(
                "the journal holds {held} entries: `{field}` is at most {held}"
            ))
            .with("field", field.to_owned()));
        }
        Ok(size)
    }

    /// The proof that the entry at `index` is in the tree of `size` entries (default: the latest
    /// checkpoint's).
    pub async fn inclusion_proof(&self, actor: &Actor, index: u64, size: Option<u64>) -> Result<InclusionProofOut> {
        actor.require("org.read")?;
        // Read once: the default size and the root a proof must reach come from it.
        let latest = self.latest_checkpoint().await?;
        let size = self.proof_size(size, latest.as_ref(), "size").await?;
        if size == 0 {
            return Err(EngineError::invalid_request("a tree of 0 entries holds none: `size` is 1 or more")
                .with("field", "size"));
        }
        if index >= size {
            return Err(EngineError::invalid_request(format!(
                "`index` is below the tree's size: 0 to {} for a tree of {size}",
                size - 1
            ))
            .with("field", "index"));
        }
        let nodes = self
            .nodes_for(|needed| {
                let _ = tree::inclusion_proof(needed, index, size);
                let _ = tree::root(needed, size);
            })
            .await?;
        let entry = self.store.journal_leaves(index, 1).await?.into_iter().next().filter(|leaf| leaf.index == index);
        let entry = entry.map(|leaf| leaf.entry);
        let entry = entry.ok_or_else(|| inconsistent(format!("the journal has no entry at {index}")))?;
        let (leaf, path, top) =
            (tree::leaf_hash(entry.as_bytes()), tree::inclusion_proof(&nodes, index, size), tree::root(&nodes, size));
        // A proof is given only once it holds: over the entry, and to the root signed at that size.
        if !tree::verify_inclusion(index, size, &leaf, &path, &top) {
            return Err(inconsistent(format!(
                "the stored tree does not lead the entry at {index} to its root: a hash was changed"
            )));
        }
        Self::signed_root_holds(latest.as_ref(), size, &top)?;
        Ok(InclusionProofOut {
            index,
            size,
            leaf_hash: b64(&leaf),
            entry,
            hashes: path.iter().map(b64).collect(),
            root_hash: b64(&top),
        })
    }

    /// The proof that the tree of `to` entries (default: the latest checkpoint's) extends the
    /// tree of `from`.
    pub async fn consistency_proof(&self, actor: &Actor, from: u64, to: Option<u64>) -> Result<ConsistencyProofOut> {
        actor.require("org.read")?;
        let latest = self.latest_checkpoint().await?;
        let to = self.proof_size(to, latest.as_ref(), "to").await?;
        if from == 0 || from > to {
            return Err(EngineError::invalid_request(format!("`from` is 1 to {to} (the newer tree's size)"))
                .with("field", "from"));
        }
        let nodes = self
            .nodes_for(|needed| {
                let _ = tree::consistency_proof(needed, from, to);
                let _ = tree::root(needed, from);
                let _ = tree::root(needed, to);
            })
            .await?;
        let (path, first, second) =
            (tree::consistency_proof(&nodes, from, to), tree::root(&nodes, from), tree::root(&nodes, to));
        if !tree::verify_consistency(from, to, &first, &second, &path) {
            return Err(inconsistent(format!("the stored tree does not lead from {from} to {to}: a hash was changed")));
        }
        Self::signed_root_holds(latest.as_ref(), from, &first)?;
        Self::signed_root_holds(latest.as_ref(), to, &second)?;
        Ok(ConsistencyProofOut {
            from,
            to,
            hashes: path.iter().map(b64).collect(),
            from_root_hash: b64(&first),
            to_root_hash: b64(&second),
        })
    }
}

/// What the console's journal page shows.
#[derive(Debug, Clone)]
pub struct JournalStatus {
    /// How many entries the tree holds.
    pub size: u64,
    /// The key that signs (none: this core signs no checkpoints).
    pub key: Option<String>,
    pub checkpoint: Option<CheckpointOut>,
    /// The latest sends, newest first.
    pub sends: Vec<skill_store::SendRow>,
}

impl Engine {
    /// Records that the checkpoint of `size` was sent to `target`, or why not.
    pub async fn record_checkpoint_send(&self, size: u64, target: &str, ok: bool, detail: &str) -> Result<()> {
        let send = skill_store::SendRow {
            size,
            target: target.to_owned(),
            ok,
            detail: detail.chars().take(500).collect(),
            sent_at: self.now(),
        };
        Ok(self.store.add_journal_send(&send).await?)
    }

    /// The journal's size, key, latest checkpoint and sends.
    pub async fn journal_status(&self, actor: &Actor) -> Result<JournalStatus> {
        actor.require("org.read")?;
        Ok(JournalStatus {
            size: self.store.journal_size().await?,
            key: self.journal_verifier().map(Verifier::text),
            checkpoint: self.latest_checkpoint().await?,
            sends: self.store.journal_sends(20).await?,
        })
    }
}

/// What allowed a call, as the journal records it, and whether its entry is in the latest signed
/// checkpoint (its inclusion proof checked against the checkpoint's signed root).
#[derive(Debug, Clone)]
pub struct Provenance {
    /// The index of the call's entry.
    pub index: Option<u64>,
    /// The decision its basis stands on, when it stands on one.
    pub decision: Option<Decision>,
    /// The latest checkpoint, and whether the call's entry is proven in it.
    pub checkpoint: Option<CheckpointOut>,
    pub included: bool,
}

/// A decision as the journal records it.
#[derive(Debug, Clone)]
pub struct Decision {
    pub approval_id: String,
    pub index: Option<u64>,
    pub outcome: String,
    /// The person's principal id.
    pub decided_by: String,
    pub token_id: Option<String>,
    pub decided_at: String,
}

/// A journal event that does not read as its kind: a corrupted row.
fn misread(kind: &str, error: &serde_json::Error) -> EngineError {
    tracing::error!(kind, %error, "a journal event does not read as its kind");
    EngineError::new(Class::Internal, Code::InternalError, "an internal error occurred; the log has its details")
}

impl Engine {
    /// The provenance of the call `id` (`org.read`: it reads the journal).
    pub async fn provenance(&self, actor: &Actor, id: &str) -> Result<Provenance> {
        actor.require("org.read")?;
        let subject = format!("skill_invocation:{id}");
        let events = self.store.events(0, Some(&subject), 50).await?;
        let Some(requested) = events.iter().find(|event| event.kind == InvocationRequested::KIND) else {
            return Err(EngineError::not_found("the call's journal entry"));
        };
        let index = self.store.journal_leaf_of(&requested.id).await?;
        let requested = serde_json::from_value::<InvocationRequested>(requested.data.clone())
            .map_err(|error| misread(InvocationRequested::KIND, &error))?;
        let approval = match &requested.authorization_basis {
            Some(Basis::Approval { approval_id, .. }) => Some(approval_id.as_str()).filter(|id| !id.is_empty()),
            _ => None,
        };
        let decision = match approval {
            None => None,
            Some(approval) => {
                let decisions = self.store.events(0, Some(&format!("approval:{approval}")), 50).await?;
                match decisions.into_iter().find(|event| event.kind == ApprovalDecided::KIND) {
                    None => None,
                    Some(event) => {
                        let decided = serde_json::from_value::<ApprovalDecided>(event.data.clone())
                            .map_err(|error| misread(ApprovalDecided::KIND, &error))?;
                        Some(Decision {
                            approval_id: approval.to_owned(),
                            index: self.store.journal_leaf_of(&event.id).await?,
                            outcome: decided.outcome.as_str().to_owned(),
                            decided_by: decided.decided_by,
                            token_id: decided.token_id,
                            decided_at: view_time(&event.created_at),
                        })
                    }
                }
            }
        };
        let checkpoint = self.latest_checkpoint().await?;
        let included = match (&checkpoint, index) {
            (Some(checkpoint), Some(index)) if index < checkpoint.size => {
                self.proven(index, checkpoint).await.unwrap_or(false)
            }
            _ => false,
        };
        Ok(Provenance { index, decision, checkpoint, included })
    }

    /// Whether the entry at `index` is proven in `checkpoint`: its signature checked by the key
    /// it names, and the inclusion proof against its root.
    async fn proven(&self, index: u64, checkpoint: &CheckpointOut) -> Result<bool> {
        let Ok(key) = Verifier::parse(&checkpoint.key) else { return Ok(false) };
        if self.journal_verifier().is_some_and(|ours| ours.text() != key.text()) {
            return Ok(false);
        }
        let Some(signed) = key.open(&checkpoint.note).ok().and_then(|body| Checkpoint::parse(body).ok()) else {
            return Ok(false);
        };
        let size = signed.size;
        let nodes = self
            .nodes_for(|needed| {
                let _ = tree::inclusion_proof(needed, index, size);
            })
            .await?;
        let Some(leaf) =
            self.store.journal_leaves(index, 1).await?.into_iter().next().filter(|leaf| leaf.index == index)
        else {
            return Ok(false);
        };
        let proof = tree::inclusion_proof(&nodes, index, size);
        Ok(tree::verify_inclusion(index, size, &tree::leaf_hash(leaf.entry.as_bytes()), &proof, &signed.root))
    }
}

/// The tree as it is checked before signing: the complete subtrees before `trusted` as stored,
/// everything over the leaves from `trusted` on made from `tail` (their hashes from the entries).
/// With `read`, it records the stored nodes it needs instead (their hashes then zero).
struct Tail<'a> {
    trusted: u64,
    tail: &'a [Hash],
    stored: std::collections::HashMap<(u32, u64), Hash>,
    read: Option<Needed>,
}

impl tree::Nodes for Tail<'_> {
    fn node(&self, level: u32, index: u64) -> Hash {
        let (start, end) = (index << level, (index + 1) << level);
        if end <= self.trusted {
            return match &self.read {
                Some(read) => read.node(level, index),
                None => self.stored.node(level, index),
            };
        }
        if level == 0 {
            return self.tail[usize::try_from(start - self.trusted).unwrap_or(usize::MAX)];
        }
        tree::node_hash(&self.node(level - 1, 2 * index), &self.node(level - 1, 2 * index + 1))
    }
}
