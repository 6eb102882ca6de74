//! `skill-core journal explain <invocation>`: the chain of an external write read from the
//! journal — the call, its basis, who set it in motion, the decision, the person with their token
//! and grants, and what the four-eyes rule says of it — each
//! with its entry's index, and a `.tlog-proof` file per entry that verifies offline.
//!
//! Everything it says comes from the journal's entries and the payloads their digests commit to,
//! names included (from the entries that created each principal); where the database says
//! otherwise, or an entry does not hold together, it says so and exits 2.

use std::collections::HashMap;
use std::path::Path;

use anyhow::{Context, Result, bail};
use serde::Deserialize;
use serde_json::Value;
use skill_api::events::{
    AgentApplied, ApprovalDecided, ApprovalRequested, EventData, InvocationCancelled, InvocationFailed,
    InvocationRequested, InvocationSucceeded, PrincipalCreated, RunStarted,
};
use skill_api::four_eyes;
use skill_api::{Basis, HeldGrant, PrincipalKind, SideEffects};
use skill_journal::audit::{Audit, Class};
use skill_journal::entry::text_digest;
use skill_journal::export::{ExportedCheckpoint, ExportedEntry};
use skill_journal::{TlogProof, tree};
use skill_store::LeafRow;
use skill_store::Store;

/// One entry of the journal as explain reads it: its head, and its payload where the entry's
/// digest commits to it — else (erased, or changed) what the entry keeps in the clear, which
/// holds everything explain reads but a person's name and free text.
#[derive(Debug, Clone)]
struct Entry {
    index: u64,
    kind: String,
    at: String,
    data: Value,
}

/// What an entry's bytes say of it (the rest is hashed, not read).
#[derive(Deserialize)]
struct Head {
    kind: String,
    #[serde(default)]
    subject: String,
    #[serde(default)]
    at: String,
    #[serde(default)]
    data: String,
    #[serde(default)]
    clear: Value,
}

/// One link of the chain: what it is, and its entry.
struct Link {
    name: &'static str,
    entry: Entry,
}

/// The journal read once: its entries by subject, the names its entries give principals, what
/// does not hold together, and `journal verify`'s audit of the same entries.
#[derive(Default)]
struct Journal {
    by_subject: HashMap<String, Vec<Entry>>,
    names: HashMap<String, String>,
    findings: Vec<String>,
    audit: Audit,
}

/// What explain found of the record as a whole.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Record {
    /// It holds together and every write in it stood on a valid basis.
    Holds,
    /// An entry, a payload, the tree or a name in the database does not hold together.
    Tampered,
    /// It holds together, but a write in it broke a rule (as `journal verify` says).
    RuleBroken,
}

impl Journal {
    async fn read(store: &dyn Store) -> Result<Self> {
        let mut journal = Self::default();
        let mut from = 0;
        loop {
            let page = store.journal_leaves(from, 1_000).await?;
            let Some(last) = page.last() else { break };
            from = last.index + 1;
            for row in page {
                journal.take(row);
            }
        }
        Ok(journal)
    }

    fn take(&mut self, row: LeafRow) {
        let index = row.index;
        let exported = ExportedEntry {
            index,
            entry: row.entry.clone(),
            leaf_hash: row.hash,
            payload: row.payload.clone(),
            salt: row.salt.clone(),
        };
        // What does not hold together (a changed entry or payload, a gap) the audit finds.
        self.audit.entry(&exported);
        let Ok(head) = serde_json::from_str::<Head>(&row.entry) else { return };
        let data = match (&row.payload, &row.salt) {
            (Some(payload), Some(salt)) => {
                let digest = <[u8; 16]>::try_from(salt.as_slice()).map(|salt| text_digest(&salt, payload));
                if digest.ok().as_deref() == Some(head.data.as_str()) {
                    serde_json::from_str(payload).unwrap_or_else(|_| head.clear.clone())
                } else {
                    head.clear.clone()
                }
            }
            // Erased: what the entry keeps in the clear.
            _ => head.clear.clone(),
        };
        match head.kind.as_str() {
            PrincipalCreated::KIND => {
                if let (Some(id), Ok(created)) =
                    (head.subject.strip_prefix("principal:"), PrincipalCreated::deserialize(&data))
                {
                    self.names.insert(id.to_owned(), created.name);
                }
            }
            // An agent's principal is made by the apply that first creates it, named by its key.
            AgentApplied::KIND => {
                if let (Some(key), Ok(applied)) =
                    (head.subject.strip_prefix("agent:"), AgentApplied::deserialize(&data))
                    && applied.created
                {
                    self.names.insert(applied.principal_id, key.to_owned());
                }
            }
            _ => {}
        }
        let entry = Entry { index, kind: head.kind, at: head.at, data };
        self.by_subject.entry(head.subject).or_default().push(entry);
    }

    fn find(&self, subject: &str, kind: &str) -> Option<&Entry> {
        self.by_subject.get(subject)?.iter().find(|entry| entry.kind == kind)
    }

    /// `name (id)` with the name the journal proves; a database that names the principal
    /// otherwise is a finding.
    async fn name_of(&mut self, store: &dyn Store, id: &str) -> String {
        let stored = store.principal(id).await.ok().map(|principal| principal.name);
        match (self.names.get(id), stored) {
            (Some(proven), Some(stored)) if *proven != stored => {
                let finding = format!(
                    "the database names the principal {id} {stored:?}, but the entry that created it names it {proven:?}"
                );
                if !self.findings.contains(&finding) {
                    self.findings.push(finding);
                }
                format!("{proven} ({id})")
            }
            (Some(proven), _) => format!("{proven} ({id})"),
            (None, Some(stored)) => format!("{stored} ({id}; the database's name: no entry of the journal proves it)"),
            (None, None) => id.to_owned(),
        }
    }
}

fn text<'a>(value: &'a Value, key: &str) -> &'a str {
    value.get(key).and_then(Value::as_str).unwrap_or_default()
}

/// Prints the chain of the write `invocation`, then what is wrong with the record, on stderr:
/// what `journal verify` finds in the same entries (against the latest checkpoint), and a name
/// the database gives otherwise than the journal.
pub(crate) async fn explain(store: &dyn Store, invocation: &str, out: Option<&Path>) -> Result<Record> {
    let mut journal = Journal::read(store).await?;
    let subject = format!("skill_invocation:{invocation}");
    let Some(call) = journal.find(&subject, InvocationRequested::KIND).cloned() else {
        bail!("the journal has no call {invocation}");
    };
    // The call as its type: an entry whose payload and clear part do not read is said, not guessed.
    let requested = serde_json::from_value::<InvocationRequested>(call.data.clone())
        .with_context(|| format!("the call's entry (index {}) does not read as a call", call.index))?;
    let mut chain = vec![Link { name: "call", entry: call }];
    let writes = requested.side_effects == Some(SideEffects::ExternalWrite);
    println!(
        "the call {invocation}: {}@{}, {}",
        requested.skill,
        requested.version,
        match requested.side_effects {
            Some(SideEffects::ExternalWrite) => "an external write".to_owned(),
            Some(other) => format!("side effects {:?}", other.as_str()),
            None => "side effects not said".to_owned(),
        }
    );
    let requester_name = journal.name_of(store, &requested.requested_by.reference).await;
    println!("  requested by {} {requester_name}", requested.requested_by.kind.as_str());
    let approval = match &requested.authorization_basis {
        Some(Basis::Approval { approval_id, .. }) => Some(approval_id.clone()),
        Some(Basis::Process {
            instance_id,
            activity_id,
            step,
            definition_key,
            definition_version,
            approval_id,
            ..
        }) => {
            println!(
                "  its basis: the step {step} of the process {definition_key}@{definition_version} (instance {instance_id})"
            );
            if let Some(entry) = journal
                .by_subject
                .get(&format!("process_instance:{instance_id}"))
                .and_then(|found| found.iter().find(|entry| text(&entry.data, "activityId") == activity_id.as_str()))
            {
                chain.push(Link { name: "step", entry: entry.clone() });
            }
            Some(approval_id.clone()).filter(|id| !id.is_empty())
        }
        Some(Basis::Execution { task_id, run_id, .. }) => {
            println!("  its basis: the execution of the task {task_id} (run {run_id})");
            if let Some(run) = journal.find(&format!("run:{run_id}"), RunStarted::KIND) {
                chain.push(Link { name: "run", entry: run.clone() });
            }
            None
        }
        None if writes => {
            println!("  no basis: an external write without one");
            None
        }
        None => {
            println!("  no basis: the call does not write to the outside world");
            None
        }
    };
    if let Some(approval) = approval {
        decision(store, &mut journal, &approval, &mut chain).await;
    }
    for (kind, name) in [
        (InvocationSucceeded::KIND, "succeeded"),
        (InvocationFailed::KIND, "failed"),
        (InvocationCancelled::KIND, "cancelled"),
    ] {
        if let Some(ended) = journal.find(&subject, kind) {
            println!("  the call {name} at {}", ended.at);
            chain.push(Link { name: "ended", entry: ended.clone() });
        }
    }
    let latest = store.journal_checkpoints(1).await?.into_iter().next();
    if let Some(out) = out {
        crate::folders::new_folder(out, "--out")?;
        if let Some(latest) = &latest {
            let text = format!("{}\n", latest.key);
            std::io::Write::write_all(&mut crate::folders::new_file(&out.join("key.txt"))?, text.as_bytes())?;
        }
    }
    println!("the entries:");
    for link in &chain {
        let index = link.entry.index;
        let proof = proof_of(store, index).await?;
        let shown = match (&proof, out) {
            (Some(proof), Some(out)) => {
                let file = out.join(format!("{}.tlog-proof", link.name));
                std::io::Write::write_all(&mut crate::folders::new_file(&file)?, proof.text().as_bytes())?;
                format!(" — proof: {}", file.display())
            }
            (Some(_), None) => String::new(),
            (None, _) => " — not yet in a signed checkpoint".to_owned(),
        };
        println!("  index {index}: {} ({}){shown}", link.entry.kind, link.name);
    }
    match &latest {
        Some(latest) => println!(
            "in the checkpoint of {} entries signed {}; key {}",
            latest.size,
            latest.signed_at.to_rfc3339(),
            latest.key
        ),
        None => println!("the journal has no signed checkpoint yet"),
    }
    let checkpoints: Vec<ExportedCheckpoint> = latest
        .iter()
        .map(|latest| ExportedCheckpoint {
            size: latest.size,
            signed_at: latest.signed_at.to_rfc3339(),
            note: latest.note.clone(),
        })
        .collect();
    let key = match &latest {
        Some(latest) => skill_journal::Verifier::parse(&latest.key).context("the latest checkpoint's key")?,
        // Nothing signed: the rules are checked all the same.
        None => skill_journal::Signer::generate("explain").context("a key")?.verifier(),
    };
    let report = std::mem::take(&mut journal.audit).finish(&key, &checkpoints, None);
    // A name the database gives otherwise is a record that does not hold together.
    let mut record = if journal.findings.is_empty() { Record::Holds } else { Record::Tampered };
    for finding in &report.findings {
        let at = finding.index.map(|index| format!("index {index}: ")).unwrap_or_default();
        journal.findings.push(format!("{at}{} ({})", finding.message, finding.code));
        record = match (record, finding.class) {
            (Record::Tampered, _) | (_, Class::Tampered) => Record::Tampered,
            _ => Record::RuleBroken,
        };
    }
    if record != Record::Holds {
        eprintln!("the record does not hold together, or a write in it broke a rule (as journal verify finds):");
        for finding in &journal.findings {
            eprintln!("  {finding}");
        }
    }
    Ok(record)
}

/// The request and decision of the approval `approval`, printed and added to `chain`.
async fn decision(store: &dyn Store, journal: &mut Journal, approval: &str, chain: &mut Vec<Link>) {
    let subject = format!("approval:{approval}");
    let asked = journal.find(&subject, ApprovalRequested::KIND).cloned();
    let read = asked.as_ref().map(|asked| serde_json::from_value::<ApprovalRequested>(asked.data.clone()));
    if let (Some(asked), Some(read)) = (&asked, &read) {
        let Ok(read) = read else {
            println!("  the approval {approval}'s request (index {}) does not read", asked.index);
            chain.push(Link { name: "request", entry: asked.clone() });
            return;
        };
        let by = journal.name_of(store, &read.requested_by).await;
        println!("  the approval {approval}, asked by {by} on the task {}", read.task_id);
        for initiator in &read.initiators {
            let mut names = HashMap::new();
            for id in std::iter::once(&initiator.person).chain(initiator.agent.as_ref()) {
                names.insert(id.clone(), journal.name_of(store, id).await);
            }
            let name = |id: &str| names.get(id).cloned().unwrap_or_else(|| id.to_owned());
            println!("  set in motion: {}", four_eyes::how(initiator, &name));
        }
        chain.push(Link { name: "request", entry: asked.clone() });
    }
    let Some(decided) = journal.find(&subject, ApprovalDecided::KIND).cloned() else {
        println!("  the approval {approval} has no decision in the journal");
        return;
    };
    // The decision as its type: a payload or clear part that does not read is said, not guessed.
    let Ok(read) = serde_json::from_value::<ApprovalDecided>(decided.data.clone()) else {
        println!(
            "  its decision (index {}) does not read: its payload is erased, or not the one its entry commits to",
            decided.index
        );
        chain.push(Link { name: "decision", entry: decided });
        return;
    };
    let by = journal.name_of(store, &read.decided_by).await;
    println!(
        "  {} by {by}, with the token {}, holding {}",
        read.outcome.as_str(),
        read.token_id.as_deref().unwrap_or("(none recorded)"),
        if read.grants.is_empty() { "no grants".to_owned() } else { read.grants.join(", ") }
    );
    if let Some(asked) = &asked {
        println!("  {}", verdict(&asked.data, &decided.data));
    }
    chain.push(Link { name: "decision", entry: decided });
}

/// What the four-eyes rule says of the decision `decided` on the request `asked` (their events'
/// data, read as their types), as `journal verify` applies it.
fn verdict(asked: &Value, decided: &Value) -> String {
    let (Ok(asked), Ok(decided)) = (
        serde_json::from_value::<ApprovalRequested>(asked.clone()),
        serde_json::from_value::<ApprovalDecided>(decided.clone()),
    ) else {
        return "the four-eyes rule cannot be checked: the request or the decision does not read".to_owned();
    };
    let grants: Vec<HeldGrant> = decided.grants.iter().map(|grant| four_eyes::grant_of(grant)).collect();
    // A decision that does not say its decider's kind proves no person decided it.
    let kind = decided.decider_kind.unwrap_or(PrincipalKind::Executor);
    let decider = four_eyes::Decider { id: &decided.decided_by, kind, grants: &grants };
    let work = four_eyes::Work {
        workspace_id: asked.workspace_id.as_deref().unwrap_or_default(),
        requested_by: &asked.requested_by,
        initiators: &asked.initiators,
    };
    match four_eyes::may_decide(&decider, &work) {
        Ok(()) => "the four-eyes rule holds: a person holding approvals.decide there, who neither asked for it nor \
                   set it in motion"
            .to_owned(),
        Err(refusal) => {
            format!(
                "the four-eyes rule is broken ({}): {}",
                refusal.code(),
                refusal.explain("the decider", &str::to_owned)
            )
        }
    }
}

/// The proof of the entry at `index` in the tree of the latest checkpoint, as a `tlog-proof`.
async fn proof_of(store: &dyn Store, index: u64) -> Result<Option<TlogProof>> {
    let Some(latest) = store.journal_checkpoints(1).await?.into_iter().next() else { return Ok(None) };
    if index >= latest.size {
        return Ok(None);
    }
    let needed = tree::Needed::default();
    let _ = tree::inclusion_proof(&needed, index, latest.size);
    let nodes = store.journal_nodes(&needed.into_vec()).await?;
    let entry = store.journal_leaves(index, 1).await?.into_iter().next().context("the entry is gone")?;
    Ok(Some(TlogProof {
        entry: entry.entry.into_bytes(),
        index,
        hashes: tree::inclusion_proof(&nodes, index, latest.size),
        note: latest.note,
    }))
}
