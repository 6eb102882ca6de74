//! `journal verify` without IO: rebuild the tree from an export's entries, check every
//! checkpoint's signature and root (and a trusted one's), then the platform's own rules over the
//! entries — every external write has a basis that was valid when it was made, and which entry
//! made it. Each finding names the offending index where one can be named.

use std::borrow::Cow;
use std::collections::HashMap;

use serde::Deserialize;
use serde_json::value::RawValue;
use skill_api::events::{
    ApprovalDecided, ApprovalRequested, EventData, InvocationCancelled, InvocationRequested, PrincipalCreated,
    ProcessStepStarted, RunStarted,
};
use skill_api::four_eyes::{self, Initiator};
use skill_api::{HeldGrant, PrincipalKind};

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
#[derive(Debug, Deserialize, Default)]
#[serde(rename_all = "camelCase", default)]
struct Asked {
    task_id: Option<String>,
    gate: bool,
    requested_by: Option<String>,
    call_skill_id: Option<String>,
    workspace_id: Option<String>,
    initiators: Vec<Initiator>,
}

/// What a decision says.
#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", default)]
struct Decided {
    outcome: Option<String>,
    decided_by: Option<String>,
    decider_kind: Option<PrincipalKind>,
    /// `PERMISSION` or `PERMISSION@WORKSPACE-ID`; none in an entry from before they were kept.
    grants: Option<Vec<String>>,
    actions: u64,
}

/// What a principal's creation says.
#[derive(Deserialize, Default)]
#[serde(default)]
struct Created {
    kind: Option<PrincipalKind>,
}

/// A decision as the entries recorded it.
#[derive(Debug)]
struct Decision {
    at: u64,
    outcome: Option<String>,
    decided_by: Option<String>,
    kind: Option<PrincipalKind>,
    grants: Option<Vec<HeldGrant>>,
    actions: u64,
}

/// An approval's request as the entries recorded it.
#[derive(Debug)]
struct Request {
    at: u64,
    asked: Asked,
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
    /// The persons behind an agent that made the call.
    initiators: Vec<Initiator>,
}

/// What a call's cancellation says: its attempt, 0 when no executor ever claimed it.
#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", default)]
struct Cancelled {
    attempt: Option<i64>,
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
    /// Approval id → its request.
    requested: HashMap<String, Request>,
    /// Approval id → its decision.
    decided: HashMap<String, Decision>,
    /// Task id → its gates' approval ids, in the order they were asked for.
    gates: HashMap<String, Vec<String>>,
    /// Principal id → its kind, from its creation.
    kinds: HashMap<String, PrincipalKind>,
    /// Run id → (index, task, an execution's run).
    runs: HashMap<String, (u64, Option<String>, bool)>,
    /// (instance, activity) → index.
    steps: HashMap<(String, String), u64>,
    /// The calls each basis made (first tries only: a retry of the same action is not a second
    /// spend).
    spent: HashMap<String, Vec<u64>>,
    /// Call id → the basis it spent and where, so a call cancelled before anyone claimed it —
    /// which wrote nothing — gives its spend back, as the database's guard counts it.
    spent_by: HashMap<String, (String, u64)>,
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
            PrincipalCreated::KIND => {
                if let (Some(id), Created { kind: Some(kind) }) = (subject_id(subject, "principal"), clear(head)) {
                    self.kinds.insert(id.to_owned(), kind);
                }
            }
            ApprovalRequested::KIND => {
                if let Some(id) = subject_id(subject, "approval") {
                    let asked: Asked = clear(head);
                    if let (true, Some(task)) = (asked.gate && asked.call_skill_id.is_none(), &asked.task_id) {
                        self.gates.entry(task.clone()).or_default().push(id.to_owned());
                    }
                    self.requested.insert(id.to_owned(), Request { at, asked });
                }
            }
            ApprovalDecided::KIND => {
                if let Some(id) = subject_id(subject, "approval") {
                    let decided: Decided = clear(head);
                    let decision = Decision {
                        at,
                        outcome: decided.outcome,
                        decided_by: decided.decided_by,
                        kind: decided.decider_kind,
                        grants: decided.grants.map(|grants| grants.iter().map(|g| four_eyes::grant_of(g)).collect()),
                        actions: decided.actions,
                    };
                    self.decided.insert(id.to_owned(), decision);
                }
            }
            RunStarted::KIND => {
                if let Some(id) = subject_id(subject, "run") {
                    let started: Started = clear(head);
                    self.runs.insert(id.to_owned(), (at, started.task_id, started.execution == Some(true)));
                }
            }
            ProcessStepStarted::KIND => {
                let step: Step = clear(head);
                if let (Some(instance), Some(activity)) = (subject_id(subject, "process_instance"), step.activity_id) {
                    self.steps.insert((instance.to_owned(), activity), at);
                }
            }
            InvocationRequested::KIND => {
                let requested: Requested = clear(head);
                if requested.side_effects.as_deref() == Some("external_write") {
                    let call = subject_id(subject, "skill_invocation").unwrap_or_default().to_owned();
                    let write = self.write(at, call, requested, report);
                    report.writes.push(write);
                }
            }
            InvocationCancelled::KIND => {
                let cancelled: Cancelled = clear(head);
                if let (Some(call), Some(0)) = (subject_id(subject, "skill_invocation"), cancelled.attempt)
                    && let Some((basis, index)) = self.spent_by.remove(call)
                    && let Some(calls) = self.spent.get_mut(&basis)
                {
                    calls.retain(|at| *at != index);
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
                let Some(decision) = self.decided.get(id) else {
                    report.findings.push(broken(
                        at,
                        "basis_not_decided",
                        format!("the external write at index {at} stands on the approval {id}, which no earlier entry decides"),
                    ));
                    return write;
                };
                let (decision_at, actions) = (decision.at, &decision.actions);
                write.basis_index = Some(decision_at);
                write.decided_by.clone_from(&decision.decided_by);
                self.four_eyes(at, id, report);
                if let Some(maker) =
                    requested.initiators.iter().find(|i| Some(&i.person) == decision.decided_by.as_ref())
                {
                    report.findings.push(broken(
                        at,
                        "decider_is_initiator",
                        format!(
                            "the external write at index {at} stands on the approval {id}, decided at index {decision_at} by the person who made the call: {}",
                            four_eyes::how(maker, &str::to_owned)
                        ),
                    ));
                }
                if decision.outcome.as_deref() != Some("approved") {
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
                    Some(Request { at: request_at, asked }) => {
                        if let Some(skill) = &asked.call_skill_id
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
                    let key = format!("approval:{id}");
                    self.spent_by.insert(write.invocation_id.clone(), (key.clone(), at));
                    let calls = self.spent.entry(key).or_default();
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
                        self.execution_decided(at, task, &mut write, report);
                    }
                    _ => report.findings.push(broken(
                        at,
                        "basis_unknown",
                        format!("the external write at index {at} stands on the execution run {run}, which no earlier entry started for task {task}"),
                    )),
                }
                if first_try {
                    let key = format!("execution:{task}");
                    self.spent_by.insert(write.invocation_id.clone(), (key.clone(), at));
                    let calls = self.spent.entry(key).or_default();
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
                        Some(decision) => {
                            if decision.outcome.as_deref() != Some("approved") || decision.decided_by != write.decided_by {
                                report.findings.push(broken(
                                    at,
                                    "basis_decider_mismatch",
                                    format!(
                                        "the external write at index {at} stands on the approval {id}, which the entry at index {} did not approve as it says",
                                        decision.at
                                    ),
                                ));
                            }
                            self.four_eyes(at, id, report);
                        }
                        None => report.findings.push(broken(
                            at,
                            "basis_not_decided",
                            format!("the external write at index {at} stands on the approval {id}, which no earlier entry decides"),
                        )),
                    }
                }
                if first_try {
                    let key = format!("process:{activity}");
                    self.spent_by.insert(write.invocation_id.clone(), (key.clone(), at));
                    let calls = self.spent.entry(key).or_default();
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

impl Rules {
    /// The four-eyes rule ([`four_eyes::may_decide`]) over the decision of approval `id`, from the
    /// entries alone — who decided, their kind, the grants they held then, the workspace, who
    /// asked and who set the work in motion — as the core applies it: a finding at the write `at`
    /// when it fails.
    fn four_eyes(&self, at: u64, id: &str, report: &mut Report) {
        let (Some(decision), Some(request)) = (self.decided.get(id), self.requested.get(id)) else { return };
        let decider = decision.decided_by.as_deref().unwrap_or_default();
        // The kind the decision names, else its creation's; a decider of no known kind is no person.
        let kind = decision.kind.or_else(|| self.kinds.get(decider).copied());
        let grants = decision.grants.clone().unwrap_or_default();
        let workspace = request.asked.workspace_id.as_deref().unwrap_or_default();
        let asker = request.asked.requested_by.as_deref().unwrap_or_default();
        let work =
            four_eyes::Work { workspace_id: workspace, requested_by: asker, initiators: &request.asked.initiators };
        let (decided_at, asked_at) = (decision.at, request.at);
        if request.asked.workspace_id.is_none() {
            // Written before requests recorded their workspace and initiators: nothing proves it.
            report.findings.push(broken(
                at,
                "decision_unproven",
                format!(
                    "the external write at index {at} stands on the approval {id}, whose request (index {asked_at}) does not record its workspace and initiators: the four-eyes rule cannot be checked from the entries"
                ),
            ));
            return;
        }
        let refusal = match kind {
            None => Some(four_eyes::Refusal::NotAPerson(PrincipalKind::Executor)),
            Some(kind) => {
                four_eyes::may_decide(&four_eyes::Decider { id: decider, kind, grants: &grants }, &work).err()
            }
        };
        let Some(refusal) = refusal else { return };
        let (code, why) = match &refusal {
            four_eyes::Refusal::NoPermission => (
                "decider_without_permission",
                format!("{decider} held no {} in the workspace {workspace:?} when deciding", four_eyes::DECIDE),
            ),
            four_eyes::Refusal::NotAPerson(_) if kind.is_none() => {
                ("decider_not_a_person", format!("{decider} is no principal the journal created as a person"))
            }
            four_eyes::Refusal::NotAPerson(kind) => ("decider_not_a_person", format!("{decider} is an {kind}")),
            four_eyes::Refusal::Requester => ("self_approved", format!("{decider} asked for it")),
            four_eyes::Refusal::Initiator(initiator) => {
                ("decider_is_initiator", four_eyes::how(initiator, &str::to_owned))
            }
        };
        report.findings.push(broken(
            at,
            code,
            format!(
                "the external write at index {at} stands on the approval {id} (asked at index {asked_at}), decided at index {decided_at} against the four-eyes rule: {why}"
            ),
        ));
    }

    /// An execution's write needs a gate of its task approved, as the rule lets it, before it.
    fn execution_decided(&self, at: u64, task: &str, write: &mut Write, report: &mut Report) {
        let approved = self.gates.get(task).into_iter().flatten().filter_map(|id| {
            let decision = self.decided.get(id)?;
            (decision.outcome.as_deref() == Some("approved")).then_some((id, decision))
        });
        let mut first = None;
        for (id, decision) in approved {
            let mut checked = Report::default();
            self.four_eyes(at, id, &mut checked);
            if checked.findings.is_empty() {
                write.decided_by.clone_from(&decision.decided_by);
                return;
            }
            first = first.or(checked.findings.into_iter().next());
        }
        report.findings.push(first.unwrap_or_else(|| {
            broken(
                at,
                "execution_not_decided",
                format!("the external write at index {at} is the execution of task {task}, whose gate no earlier entry approved"),
            )
        }));
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
        asked_by(by, &json!([]))
    }

    /// An approval `by` asked for in the workspace `w-1`, its work set in motion by `initiators`.
    fn asked_by(by: &str, initiators: &Value) -> (&'static str, String, Value) {
        let data = json!({"taskId": "t-1", "gate": true, "requestedBy": by, "workspaceId": "w-1",
                          "initiators": initiators});
        ("approval.requested", "approval:a-1".into(), data)
    }

    fn decided(by: &str, outcome: &str) -> (&'static str, String, Value) {
        decided_as(by, outcome, "person", &json!(["approvals.decide@w-1"]))
    }

    /// A decision by `by`, of `kind`, holding `grants`.
    fn decided_as(by: &str, outcome: &str, kind: &str, grants: &Value) -> (&'static str, String, Value) {
        let data = json!({"taskId": "t-1", "outcome": outcome, "decidedBy": by, "gate": true, "actions": 1,
                          "deciderKind": kind, "grants": grants});
        ("approval.decided", "approval:a-1".into(), data)
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
        let gate = [asked("ana"), decided("rui", "approved")];
        let report = check(&[gate[0].clone(), gate[1].clone(), run.clone(), write("c-1", execution.clone())]);
        assert_eq!(codes(&report), vec![]);
        assert_eq!(report.writes[0].basis_index, Some(2));
        assert_eq!(report.writes[0].decided_by.as_deref(), Some("rui"), "the gate's decider");
        let twice = [
            gate[0].clone(),
            gate[1].clone(),
            run.clone(),
            write("c-1", execution.clone()),
            write("c-2", execution.clone()),
        ];
        assert_eq!(codes(&check(&twice)), vec![(Some(4), "basis_spent_twice")]);
        // A call cancelled before anyone claimed it wrote nothing: the execution may write once
        // more, as the database's guard lets it; one that was claimed (attempt 1) spent it.
        let cancelled = |attempt: u64| {
            let data = json!({"skillId": "s-1", "attempt": attempt, "code": "basis_revoked", "wasRunning": false});
            ("skill.invocation_cancelled", "skill_invocation:c-1".to_owned(), data)
        };
        let again = |attempt: u64| {
            let first = write("c-1", execution.clone());
            [gate[0].clone(), gate[1].clone(), run.clone(), first, cancelled(attempt), write("c-2", execution.clone())]
        };
        assert_eq!(codes(&check(&again(0))), vec![], "unclaimed, so unspent");
        assert_eq!(codes(&check(&again(1))), vec![(Some(5), "basis_spent_twice")], "claimed once, so spent");
        // So for every basis: an approval's one call, cancelled unclaimed, leaves it unspent.
        let decided_twice = |attempt: u64| {
            let first = write("c-1", by_approval("rui"));
            [asked("ana"), decided("rui", "approved"), first, cancelled(attempt), write("c-2", by_approval("rui"))]
        };
        assert_eq!(codes(&check(&decided_twice(0))), vec![]);
        assert_eq!(codes(&check(&decided_twice(2))), vec![(Some(4), "basis_spent_twice")]);
    }

    /// The core's four-eyes rule, from the entries alone: each way of breaking it, planted in an
    /// otherwise valid history, is named at the write.
    #[test]
    fn every_write_stands_on_a_decision_the_four_eyes_rule_lets() {
        let sent_by_rui =
            json!([{"person": "rui", "role": "sent", "agent": "mailbot", "via": ["fact:f-1", "task:t-1"]}]);
        type Event = (&'static str, String, Value);
        let cases: Vec<(Vec<Event>, &str)> = vec![
            (vec![asked_by("bot", &sent_by_rui), decided("rui", "approved")], "decider_is_initiator"),
            (vec![asked("ana"), decided("ana", "approved")], "self_approved"),
            (
                vec![asked("ana"), decided_as("rui", "approved", "agent", &json!(["approvals.decide"]))],
                "decider_not_a_person",
            ),
            (
                vec![asked("ana"), decided_as("rui", "approved", "person", &json!(["tasks.write@w-1"]))],
                "decider_without_permission",
            ),
            (
                vec![asked("ana"), decided_as("rui", "approved", "person", &json!(["approvals.decide@w-2"]))],
                "decider_without_permission",
            ),
        ];
        for (mut events, expected) in cases {
            events.push(write("c-1", by_approval(events[1].2["decidedBy"].as_str().unwrap_or_default())));
            assert!(codes(&check(&events)).contains(&(Some(2), expected)), "{expected}: {:?}", check(&events).findings);
        }
        // A decision whose kind the entry does not say is a person's only if the journal made one.
        let mut unsaid = decided("rui", "approved");
        unsaid.2.as_object_mut().expect("an object").remove("deciderKind");
        let created = ("principal.created", "principal:rui".to_owned(), json!({"name": "rui", "kind": "person"}));
        let history = [asked("ana"), unsaid.clone(), write("c-1", by_approval("rui"))];
        assert_eq!(codes(&check(&history)), vec![(Some(2), "decider_not_a_person")]);
        let history = [created, asked("ana"), unsaid, write("c-1", by_approval("rui"))];
        assert_eq!(codes(&check(&history)), vec![]);
        // A request that does not record its workspace proves nothing of the rule.
        let mut old = asked("ana");
        old.2.as_object_mut().expect("an object").remove("workspaceId");
        assert_eq!(
            codes(&check(&[old, decided("rui", "approved"), write("c-1", by_approval("rui"))])),
            vec![(Some(2), "decision_unproven")]
        );
        // The decider made the call through an agent's token they operate: the rule refuses it.
        let mut made_by_rui = write("c-1", by_approval("rui"));
        made_by_rui.2["initiators"] = json!([{"person": "rui", "role": "asked", "agent": "bot", "via": []}]);
        assert_eq!(
            codes(&check(&[asked("ana"), decided("rui", "approved"), made_by_rui])),
            vec![(Some(2), "decider_is_initiator")]
        );
        // Organisation-wide, the permission holds in every workspace; the rule still refuses an initiator.
        let everywhere = decided_as("eve", "approved", "person", &json!(["approvals.decide"]));
        assert_eq!(
            codes(&check(&[asked_by("bot", &sent_by_rui), everywhere, write("c-1", by_approval("eve"))])),
            vec![]
        );
        // A process's write, and an execution's, stand on their gate's decision in the same way.
        let process = json!({"kind": "process", "instanceId": "i-1", "activityId": "s-1", "approvalId": "a-1", "decidedBy": "rui"});
        let step = ("process.step_started", "process_instance:i-1".to_owned(), json!({"activityId": "s-1"}));
        let history = [step, asked_by("bot", &sent_by_rui), decided("rui", "approved"), write("c-1", process)];
        assert_eq!(codes(&check(&history)), vec![(Some(3), "decider_is_initiator")]);
        let run = ("run.started", "run:r-1".to_owned(), json!({"taskId": "t-1", "execution": true}));
        let execution = json!({"kind": "execution", "taskTypeId": "tt", "taskId": "t-1", "runId": "r-1"});
        let history =
            [asked_by("bot", &sent_by_rui), decided("rui", "approved"), run.clone(), write("c-1", execution.clone())];
        assert_eq!(codes(&check(&history)), vec![(Some(3), "decider_is_initiator")]);
        assert_eq!(codes(&check(&[run, write("c-1", execution)])), vec![(Some(1), "execution_not_decided")]);
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
