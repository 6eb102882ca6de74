//! `journal verify` without IO: rebuild the tree from an export's entries, check every
//! checkpoint's signature and root (and a trusted one's), then the platform's own rules over the
//! entries — every external write has a basis that was valid when it was made, and which entry
//! made it. Each finding names the offending index where one can be named.

use std::borrow::Cow;
use std::collections::HashMap;

use serde::Deserialize;
use serde_json::value::RawValue;

use crate::entry::text_digest;
use crate::export::{ExportedCheckpoint, ExportedEntry};
use crate::note::{Checkpoint, Verifier};
use crate::tree::{Hash, Levels, leaf_hash, root};

/// What a finding is about: the record itself (tampering), or a rule the record breaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Class {
    /// The entries, their tree or the checkpoints do not hold together.
    Tampered,
    /// The entries hold together, but an external write in them had no valid basis.
    Rule,
}

/// One thing wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    pub class: Class,
    /// The entry at fault, when one can be named.
    pub index: Option<u64>,
    /// A stable name: `entry_changed`, `tail_cut`, `write_without_basis`, …
    pub code: &'static str,
    pub message: String,
}

/// An external write and the basis it stood on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Write {
    /// The entry that made the call.
    pub index: u64,
    pub invocation_id: String,
    /// `approval`, `execution`, `process`.
    pub basis: String,
    /// The entry that made the basis: the decision, the execution's run, the process step.
    pub basis_index: Option<u64>,
    /// The person who decided it, for an approval.
    pub decided_by: Option<String>,
}

/// What `verify` found.
#[derive(Debug, Clone, Default)]
pub struct Report {
    pub entries: u64,
    /// The checkpoints that verified, oldest first.
    pub checkpoints: Vec<Checkpoint>,
    pub writes: Vec<Write>,
    pub findings: Vec<Finding>,
    /// The entries whose payload was erased (data and salt gone; the entry proves the leaf).
    pub erased: Vec<u64>,
    /// The entries the database had no leaf hash for (written by SQL, not yet completed).
    pub unhashed: Vec<u64>,
}

impl Report {
    /// How many entries come after the largest checkpoint that holds: in the record, not yet
    /// signed.
    pub fn unsigned(&self) -> u64 {
        self.entries - self.checkpoints.iter().map(|checkpoint| checkpoint.size).max().unwrap_or(0)
    }
}

fn tampered(index: Option<u64>, code: &'static str, message: String) -> Finding {
    Finding { class: Class::Tampered, index, code, message }
}

fn broken(index: u64, code: &'static str, message: String) -> Finding {
    Finding { class: Class::Rule, index: Some(index), code, message }
}

/// The fields of an entry the audit reads; the rest is hashed, not parsed.
#[derive(Deserialize)]
struct Head<'a> {
    #[serde(borrow)]
    kind: Cow<'a, str>,
    #[serde(borrow, default)]
    subject: Cow<'a, str>,
    #[serde(borrow, default)]
    data: Cow<'a, str>,
    #[serde(borrow)]
    clear: Option<&'a RawValue>,
}

/// An export's entries taken one at a time, in index order, then its checkpoints: what
/// `journal verify` runs over a file it reads line by line.
#[derive(Debug, Default)]
pub struct Audit {
    leaves: Vec<Hash>,
    report: Report,
    rules: Rules,
    stopped: bool,
}

impl Audit {
    pub fn new() -> Self {
        Self::default()
    }

    /// Takes the next entry; `false` once one is missing (nothing after a gap can be placed).
    pub fn entry(&mut self, exported: &ExportedEntry) -> bool {
        if self.stopped {
            return false;
        }
        let at = self.leaves.len() as u64;
        let report = &mut self.report;
        if exported.index != at {
            report.findings.push(tampered(
                Some(at),
                "entry_missing",
                format!("the entry at index {at} is missing (the export goes on at {})", exported.index),
            ));
            self.stopped = true;
            return false;
        }
        let leaf = leaf_hash(exported.entry.as_bytes());
        if exported.leaf_hash.is_none() {
            report.unhashed.push(at);
        }
        if exported.leaf_hash.is_some_and(|stored| stored != leaf) {
            report.findings.push(tampered(
                Some(at),
                "entry_changed",
                format!("the entry at index {at} does not hash to the leaf stored when it was written"),
            ));
        }
        let head = serde_json::from_str::<Head<'_>>(&exported.entry).ok();
        if head.is_none() {
            report.findings.push(tampered(
                Some(at),
                "entry_unreadable",
                format!("the entry at index {at} is not a JSON object with its kind"),
            ));
        }
        match (&exported.payload, &exported.salt) {
            (Some(payload), Some(salt)) => {
                let digest = <[u8; 16]>::try_from(salt.as_slice()).map(|salt| text_digest(&salt, payload));
                if digest.ok().as_deref() != head.as_ref().map(|head| head.data.as_ref()) {
                    report.findings.push(tampered(
                        Some(at),
                        "payload_changed",
                        format!("the payload of the entry at index {at} is not the one its digest commits to"),
                    ));
                }
            }
            (None, None) => report.erased.push(at),
            _ => report.findings.push(tampered(
                Some(at),
                "payload_changed",
                format!("the entry at index {at} has a payload without its salt, or a salt without its payload"),
            )),
        }
        if let Some(head) = head {
            self.rules.entry(at, &head, report);
        }
        self.leaves.push(leaf);
        true
    }

    /// A line that is not an entry where the entry at `at` was due: nothing after it can be
    /// placed. Always `false`.
    pub fn unreadable(&mut self, at: u64, problem: &str) -> bool {
        self.report.findings.push(tampered(
            Some(at),
            "entry_unreadable",
            format!("the entry at index {at} cannot be read ({problem})"),
        ));
        self.stopped = true;
        false
    }

    /// Checks the tree against every checkpoint signed by `key` and against `trusted` (a signed
    /// note pinned from elsewhere).
    pub fn finish(self, key: &Verifier, checkpoints: &[ExportedCheckpoint], trusted: Option<&str>) -> Report {
        let mut report = self.report;
        report.entries = self.leaves.len() as u64;
        let tree = Levels::new(self.leaves);
        for exported in checkpoints {
            if let Some(checkpoint) = check_checkpoint(key, &exported.note, &tree, &mut report, "checkpoint") {
                if checkpoint.size != exported.size {
                    report.findings.push(tampered(
                        None,
                        "checkpoint_row_mismatch",
                        format!(
                            "a checkpoint kept as the one of {} entries is the signed note of {}: the checkpoints were changed",
                            exported.size, checkpoint.size
                        ),
                    ));
                }
                report.checkpoints.push(checkpoint);
            }
        }
        if let Some(note) = trusted {
            check_checkpoint(key, note, &tree, &mut report, "trusted checkpoint");
        }
        report
    }
}

/// Checks an export held in memory: its entries against their stored hashes and payloads, the
/// tree against every checkpoint signed by `key` and against `trusted`, and the rules.
pub fn audit(
    key: &Verifier,
    entries: &[ExportedEntry],
    checkpoints: &[ExportedCheckpoint],
    trusted: Option<&str>,
) -> Report {
    let mut audit = Audit::new();
    for exported in entries {
        if !audit.entry(exported) {
            break;
        }
    }
    audit.finish(key, checkpoints, trusted)
}

/// Checks one signed checkpoint against the rebuilt tree; the checkpoint when it holds.
fn check_checkpoint(key: &Verifier, note: &str, tree: &Levels, report: &mut Report, what: &str) -> Option<Checkpoint> {
    let body = match key.open(note) {
        Ok(body) => body,
        Err(error) => {
            let text = key.text();
            let named: Vec<&str> = text.splitn(3, '+').take(2).collect();
            report.findings.push(tampered(
                None,
                "checkpoint_unsigned",
                format!("the {what} is not signed by the key {}: {error}", named.join("+")),
            ));
            return None;
        }
    };
    let checkpoint = match Checkpoint::parse(body) {
        Ok(checkpoint) if checkpoint.origin == key.name() => checkpoint,
        Ok(checkpoint) => {
            report.findings.push(tampered(
                None,
                "checkpoint_other_log",
                format!("the {what} is of the log {:?}, not {:?}", checkpoint.origin, key.name()),
            ));
            return None;
        }
        Err(error) => {
            report.findings.push(tampered(
                None,
                "checkpoint_unreadable",
                format!("the {what} cannot be read: {error}"),
            ));
            return None;
        }
    };
    let size = checkpoint.size;
    if size > tree.size() {
        report.findings.push(tampered(
            Some(tree.size()),
            "tail_cut",
            format!(
                "the {what} signs {size} entries but the journal holds {}: the entries from index {} on were cut",
                tree.size(),
                tree.size()
            ),
        ));
        return None;
    }
    if root(tree, size) != checkpoint.root {
        // Where the change is: at an index named already, else after the largest smaller
        // checkpoint that holds (a larger one holding too means the key signed two histories).
        let named = report.findings.iter().filter_map(|finding| finding.index).filter(|at| *at < size).min();
        let below = report.checkpoints.iter().map(|held| held.size).filter(|held| *held < size).max();
        let first = named.unwrap_or(below.unwrap_or(0));
        report.findings.push(tampered(
            Some(first),
            "root_mismatch",
            format!(
                "the entries do not hash to the {what} of {size} entries: one from index {first} to {} was \
                 changed, removed, inserted or moved",
                size - 1
            ),
        ));
        return None;
    }
    Some(checkpoint)
}

/// What an approval's request says.
#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", default)]
struct Asked {
    requested_by: Option<String>,
    call_skill_id: Option<String>,
}

/// What a decision says.
#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", default)]
struct Decided {
    outcome: Option<String>,
    decided_by: Option<String>,
    actions: u64,
}

/// What a run's start says.
#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", default)]
struct Started {
    task_id: Option<String>,
    execution: Option<bool>,
}

/// What a step's start says.
#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", default)]
struct Step {
    activity_id: Option<String>,
}

/// What a call's request says.
#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", default)]
struct Requested {
    side_effects: Option<String>,
    skill_id: Option<String>,
    authorization_basis: Option<BasisView>,
}

/// A call's basis, every kind's fields.
#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", default)]
struct BasisView {
    kind: Option<String>,
    approval_id: Option<String>,
    decided_by: Option<String>,
    retry: Option<serde_json::Value>,
    task_id: Option<String>,
    run_id: Option<String>,
    instance_id: Option<String>,
    activity_id: Option<String>,
}

/// Where each basis was made, and what it already paid for.
#[derive(Debug, Default)]
struct Rules {
    /// Approval id → (index, who asked, the version asked for).
    requested: HashMap<String, (u64, Option<String>, Option<String>)>,
    /// Approval id → (index, outcome, who decided, actions).
    decided: HashMap<String, (u64, Option<String>, Option<String>, u64)>,
    /// Run id → (index, task, an execution's run).
    runs: HashMap<String, (u64, Option<String>, bool)>,
    /// (instance, activity) → index.
    steps: HashMap<(String, String), u64>,
    /// The calls each basis made (first tries only: a retry of the same action is not a second
    /// spend).
    spent: HashMap<String, Vec<u64>>,
}

fn subject_id<'a>(subject: &'a str, prefix: &str) -> Option<&'a str> {
    subject.strip_prefix(prefix)?.strip_prefix(':')
}

fn clear<T: for<'de> Deserialize<'de> + Default>(head: &Head<'_>) -> T {
    head.clear.and_then(|clear| serde_json::from_str(clear.get()).ok()).unwrap_or_default()
}

impl Rules {
    /// Every external write has a basis that was valid when it was made.
    fn entry(&mut self, at: u64, head: &Head<'_>, report: &mut Report) {
        let subject = head.subject.as_ref();
        match head.kind.as_ref() {
            "approval.requested" => {
                if let Some(id) = subject_id(subject, "approval") {
                    let asked: Asked = clear(head);
                    self.requested.insert(id.to_owned(), (at, asked.requested_by, asked.call_skill_id));
                }
            }
            "approval.decided" => {
                if let Some(id) = subject_id(subject, "approval") {
                    let decided: Decided = clear(head);
                    self.decided.insert(id.to_owned(), (at, decided.outcome, decided.decided_by, decided.actions));
                }
            }
            "run.started" => {
                if let Some(id) = subject_id(subject, "run") {
                    let started: Started = clear(head);
                    self.runs.insert(id.to_owned(), (at, started.task_id, started.execution == Some(true)));
                }
            }
            "process.step_started" => {
                let step: Step = clear(head);
                if let (Some(instance), Some(activity)) = (subject_id(subject, "process_instance"), step.activity_id) {
                    self.steps.insert((instance.to_owned(), activity), at);
                }
            }
            "skill.invocation_requested" => {
                let requested: Requested = clear(head);
                if requested.side_effects.as_deref() == Some("external_write") {
                    let call = subject_id(subject, "skill_invocation").unwrap_or_default().to_owned();
                    let write = self.write(at, call, requested, report);
                    report.writes.push(write);
                }
            }
            _ => {}
        }
    }

    fn write(&mut self, at: u64, call: String, requested: Requested, report: &mut Report) -> Write {
        let basis = requested.authorization_basis.unwrap_or_default();
        let kind = basis.kind.clone().unwrap_or_default();
        let mut write =
            Write { index: at, invocation_id: call, basis: kind.clone(), basis_index: None, decided_by: None };
        let first_try = basis.retry.as_ref().is_none_or(serde_json::Value::is_null);
        match kind.as_str() {
            "approval" => {
                let id = basis.approval_id.as_deref().unwrap_or_default();
                let Some((decision_at, outcome, decider, actions)) = self.decided.get(id) else {
                    report.findings.push(broken(
                        at,
                        "basis_not_decided",
                        format!("the external write at index {at} stands on the approval {id}, which no earlier entry decides"),
                    ));
                    return write;
                };
                let decision_at = *decision_at;
                write.basis_index = Some(decision_at);
                write.decided_by.clone_from(decider);
                if outcome.as_deref() != Some("approved") {
                    report.findings.push(broken(
                        at,
                        "basis_rejected",
                        format!("the external write at index {at} stands on the approval {id}, which the entry at index {decision_at} did not approve"),
                    ));
                }
                if basis.decided_by != write.decided_by {
                    report.findings.push(broken(
                        at,
                        "basis_decider_mismatch",
                        format!(
                            "the external write at index {at} names {:?} as its approver, but the decision at index {decision_at} was by {:?}",
                            basis.decided_by.as_deref().unwrap_or_default(),
                            write.decided_by.as_deref().unwrap_or_default()
                        ),
                    ));
                }
                match self.requested.get(id) {
                    Some((request_at, asker, skill)) => {
                        if asker.is_some() && *asker == write.decided_by {
                            report.findings.push(broken(
                                at,
                                "self_approved",
                                format!("the approval {id} (asked at index {request_at}) was decided at index {decision_at} by the one who asked for it"),
                            ));
                        }
                        if let Some(skill) = skill
                            && requested.skill_id.as_ref() != Some(skill)
                        {
                            report.findings.push(broken(
                                at,
                                "basis_other_call",
                                format!("the approval {id} was asked (index {request_at}) for a call of another version than the write at index {at}"),
                            ));
                        }
                    }
                    None => report.findings.push(broken(
                        at,
                        "basis_not_requested",
                        format!("the approval {id} of the write at index {at} was never asked for in the journal"),
                    )),
                }
                if first_try {
                    let allowed = (*actions).max(1);
                    let calls = self.spent.entry(format!("approval:{id}")).or_default();
                    if calls.len() as u64 >= allowed {
                        report.findings.push(broken(
                            at,
                            "basis_spent_twice",
                            format!(
                                "the approval {id} (decided at index {decision_at}) allowed {allowed} call(s), already made at index {}; the write at index {at} is one more",
                                join(calls)
                            ),
                        ));
                    }
                    calls.push(at);
                }
            }
            "execution" => {
                let run = basis.run_id.as_deref().unwrap_or_default();
                let task = basis.task_id.as_deref().unwrap_or_default();
                match self.runs.get(run) {
                    Some((run_at, started_task, true)) if started_task.as_deref() == Some(task) => {
                        write.basis_index = Some(*run_at);
                    }
                    _ => report.findings.push(broken(
                        at,
                        "basis_unknown",
                        format!("the external write at index {at} stands on the execution run {run}, which no earlier entry started for task {task}"),
                    )),
                }
                if first_try {
                    let calls = self.spent.entry(format!("execution:{task}")).or_default();
                    if !calls.is_empty() {
                        report.findings.push(broken(
                            at,
                            "basis_spent_twice",
                            format!("the task {task}'s execution already wrote at index {}; the write at index {at} is a second", join(calls)),
                        ));
                    }
                    calls.push(at);
                }
            }
            "process" => {
                let instance = basis.instance_id.clone().unwrap_or_default();
                let activity = basis.activity_id.clone().unwrap_or_default();
                match self.steps.get(&(instance.clone(), activity.clone())) {
                    Some(&step_at) => write.basis_index = Some(step_at),
                    None => report.findings.push(broken(
                        at,
                        "basis_unknown",
                        format!("the external write at index {at} stands on the step {activity} of the process instance {instance}, which no earlier entry began"),
                    )),
                }
                write.decided_by.clone_from(&basis.decided_by);
                // The gate it waited for: decided, approved, by the person it names.
                if let Some(id) = basis.approval_id.as_deref().filter(|id| !id.is_empty()) {
                    match self.decided.get(id) {
                        Some((decision_at, outcome, decider, _)) => {
                            if outcome.as_deref() != Some("approved") || *decider != write.decided_by {
                                report.findings.push(broken(
                                    at,
                                    "basis_decider_mismatch",
                                    format!("the external write at index {at} stands on the approval {id}, which the entry at index {decision_at} did not approve as it says"),
                                ));
                            }
                        }
                        None => report.findings.push(broken(
                            at,
                            "basis_not_decided",
                            format!("the external write at index {at} stands on the approval {id}, which no earlier entry decides"),
                        )),
                    }
                }
                if first_try {
                    let calls = self.spent.entry(format!("process:{activity}")).or_default();
                    if !calls.is_empty() {
                        report.findings.push(broken(
                            at,
                            "basis_spent_twice",
                            format!("the process step {activity} already wrote at index {}; the write at index {at} is a second", join(calls)),
                        ));
                    }
                    calls.push(at);
                }
            }
            "" => report.findings.push(broken(
                at,
                "write_without_basis",
                format!("the external write at index {at} names no basis"),
            )),
            other => report.findings.push(broken(
                at,
                "basis_unknown",
                format!(
                    "the external write at index {at} names a basis of a kind this verifier does not know: {other:?}"
                ),
            )),
        }
        write
    }
}

fn join(indices: &[u64]) -> String {
    indices.iter().map(u64::to_string).collect::<Vec<_>>().join(", ")
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;
    use crate::entry::{Entry, Event, clear_of};
    use crate::note::Signer;
    use crate::tree::Levels;

    /// Entries of `(kind, subject, data)`, exported as the store writes them.
    fn exported(events: &[(&str, String, Value)]) -> Vec<ExportedEntry> {
        events
            .iter()
            .enumerate()
            .map(|(at, (kind, subject, data))| {
                let clear = clear_of(kind, data);
                let id = format!("e-{at}");
                let event = Event {
                    id: &id,
                    kind,
                    subject,
                    actor: None,
                    request: None,
                    at: "2026-12-05T00:00:00.000000Z",
                    clear: &clear,
                };
                let salt = [at as u8; 16];
                let entry = Entry::new(&event, data, &salt);
                ExportedEntry {
                    index: at as u64,
                    leaf_hash: Some(entry.leaf()),
                    entry: entry.bytes,
                    payload: Some(crate::entry::canonical(data)),
                    salt: Some(salt.to_vec()),
                }
            })
            .collect()
    }

    fn signed(signer: &Signer, entries: &[ExportedEntry], size: u64) -> ExportedCheckpoint {
        let levels = Levels::new(entries.iter().map(|e| leaf_hash(e.entry.as_bytes())).collect());
        let checkpoint = Checkpoint { origin: signer.verifier().name().to_owned(), size, root: root(&levels, size) };
        ExportedCheckpoint { size, signed_at: String::new(), note: signer.sign(&checkpoint.body()) }
    }

    fn asked(by: &str) -> (&'static str, String, Value) {
        ("approval.requested", "approval:a-1".into(), json!({"taskId": "t-1", "gate": true, "requestedBy": by}))
    }

    fn decided(by: &str, outcome: &str) -> (&'static str, String, Value) {
        (
            "approval.decided",
            "approval:a-1".into(),
            json!({"taskId": "t-1", "outcome": outcome, "decidedBy": by, "gate": true, "actions": 1}),
        )
    }

    fn write(call: &str, basis: Value) -> (&'static str, String, Value) {
        (
            "skill.invocation_requested",
            format!("skill_invocation:{call}"),
            json!({"skillId": "s-1", "skill": "claim.send_reply", "sideEffects": "external_write", "authorizationBasis": basis}),
        )
    }

    fn by_approval(decider: &str) -> Value {
        json!({"kind": "approval", "approvalId": "a-1", "decidedBy": decider})
    }

    fn codes(report: &Report) -> Vec<(Option<u64>, &'static str)> {
        report.findings.iter().map(|finding| (finding.index, finding.code)).collect()
    }

    fn check(events: &[(&str, String, Value)]) -> Report {
        let signer = Signer::generate("skills.example/journal").expect("a key");
        let entries = exported(events);
        let checkpoint = signed(&signer, &entries, entries.len() as u64);
        audit(&signer.verifier(), &entries, &[checkpoint], None)
    }

    #[test]
    fn a_write_on_a_decision_by_another_person_holds_and_names_the_decision() {
        let report = check(&[asked("ana"), decided("rui", "approved"), write("c-1", by_approval("rui"))]);
        assert_eq!(codes(&report), vec![]);
        assert_eq!(report.writes.len(), 1);
        assert_eq!((report.writes[0].basis_index, report.writes[0].decided_by.as_deref()), (Some(1), Some("rui")));
        // A read-only call needs no basis.
        let read =
            ("skill.invocation_requested", "skill_invocation:c-2".to_owned(), json!({"sideEffects": "external_read"}));
        assert_eq!(codes(&check(&[read])), vec![]);
    }

    #[test]
    fn each_broken_rule_is_named_at_the_write() {
        type Case = (Vec<(&'static str, String, Value)>, (Option<u64>, &'static str));
        let cases: Vec<Case> = vec![
            (
                vec![asked("ana"), decided("ana", "approved"), write("c-1", by_approval("ana"))],
                (Some(2), "self_approved"),
            ),
            (
                vec![asked("ana"), decided("rui", "rejected"), write("c-1", by_approval("rui"))],
                (Some(2), "basis_rejected"),
            ),
            (
                vec![asked("ana"), write("c-1", by_approval("rui")), decided("rui", "approved")],
                (Some(1), "basis_not_decided"),
            ),
            (
                vec![asked("ana"), decided("rui", "approved"), write("c-1", by_approval("eve"))],
                (Some(2), "basis_decider_mismatch"),
            ),
            (vec![write("c-1", Value::Null)], (Some(0), "write_without_basis")),
            (
                vec![
                    asked("ana"),
                    decided("rui", "approved"),
                    write("c-1", by_approval("rui")),
                    write("c-2", by_approval("rui")),
                ],
                (Some(3), "basis_spent_twice"),
            ),
            (
                vec![write("c-1", json!({"kind": "execution", "taskTypeId": "tt", "taskId": "t-1", "runId": "r-9"}))],
                (Some(0), "basis_unknown"),
            ),
        ];
        for (events, expected) in cases {
            let report = check(&events);
            assert!(codes(&report).contains(&expected), "{expected:?} in {:?}", report.findings);
            assert!(report.findings.iter().all(|finding| finding.class == Class::Rule), "{:?}", report.findings);
        }
        // An execution writes once per task.
        let run = ("run.started", "run:r-1".to_owned(), json!({"taskId": "t-1", "owner": "core", "execution": true}));
        let execution = json!({"kind": "execution", "taskTypeId": "tt", "taskId": "t-1", "runId": "r-1"});
        let report = check(&[run.clone(), write("c-1", execution.clone())]);
        assert_eq!(codes(&report), vec![]);
        assert_eq!(report.writes[0].basis_index, Some(0));
        let report = check(&[run, write("c-1", execution.clone()), write("c-2", execution)]);
        assert_eq!(codes(&report), vec![(Some(2), "basis_spent_twice")]);
    }

    #[test]
    fn the_record_is_checked_against_every_checkpoint() {
        let signer = Signer::generate("skills.example/journal").expect("a key");
        let events: Vec<_> = (0..10).map(|n| ("task.created", format!("task:t-{n}"), json!({"n": n}))).collect();
        let entries = exported(&events);
        let early = signed(&signer, &entries, 4);
        let late = signed(&signer, &entries, 10);
        let key = signer.verifier();
        assert_eq!(codes(&audit(&key, &entries, &[early.clone(), late.clone()], None)), vec![]);

        // The tail cut after the checkpoint of 10.
        let report = audit(&key, &entries[..7], std::slice::from_ref(&early), Some(&late.note));
        assert_eq!(codes(&report), vec![(Some(7), "tail_cut")]);
        // An entry changed consistently (its stored hash too): the checkpoints bound where.
        let mut changed = entries.clone();
        let forged = exported(&[("task.created", "task:t-6".into(), json!({"n": 66}))]).remove(0);
        changed[6] = ExportedEntry { index: 6, ..forged };
        let report = audit(&key, &changed, &[early.clone(), late.clone()], None);
        assert_eq!(codes(&report), vec![(Some(4), "root_mismatch")]);
        // A checkpoint another key signed, and a history that key signed, against a pinned one.
        let forger = Signer::generate("skills.example/journal").expect("a key");
        let report = audit(&forger.verifier(), &changed, &[signed(&forger, &changed, 10)], Some(&late.note));
        assert_eq!(codes(&report), vec![(None, "checkpoint_unsigned")]);
        let report = audit(&key, &changed, &[signed(&forger, &changed, 10)], Some(&late.note));
        assert_eq!(codes(&report), vec![(None, "checkpoint_unsigned"), (Some(0), "root_mismatch")]);
    }
}
