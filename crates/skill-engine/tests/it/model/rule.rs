//! The invariant of the model is the four-eyes rule itself: every external write stands on a
//! decision by a person who holds `approvals.decide` in the workspace, is not among the persons
//! who set its work in motion (as the model computes them, independently of the core), and
//! decided exactly that call. At the end of a case, `journal verify` over the store's journal
//! agrees: no finding, the same writes, the same deciders.

use std::collections::BTreeSet;

use skill_api::{ApprovalStatus, Basis};
use skill_store::records::InvocationRecord;

use super::{Approval, DECIDERS, Model, PEOPLE, World};

/// Checks the rule for the write `call` (one of an external-write skill, with its basis); `now`
/// when it is being claimed (its decision must stand), else at the end (it may have been
/// withdrawn since).
pub(super) async fn second_person(w: &World, m: &Model, call: &InvocationRecord, at: &str, now: bool) {
    let store = w.engine.store();
    let standing: &[ApprovalStatus] =
        if now { &[ApprovalStatus::Approved] } else { &[ApprovalStatus::Approved, ApprovalStatus::Withdrawn] };
    let decisions: Vec<&String> = match &call.authorization_basis {
        Some(Basis::Approval { approval_id, .. } | Basis::Process { approval_id, .. }) => vec![approval_id],
        // An execution stands on its task's approved gates (not on an approval asked for one call).
        Some(Basis::Execution { task_id, .. }) => m
            .approvals
            .iter()
            .filter(|(_, a)| {
                a.task == *task_id
                    && a.gate
                    && a.call.is_none()
                    && a.decided_by.is_some()
                    && standing.contains(&a.status)
            })
            .map(|(id, _)| id)
            .collect(),
        None => panic!("{at}: the external write {} has no basis", call.id),
    };
    assert!(!decisions.is_empty(), "{at}: the external write {} stands on no decision", call.id);
    for id in decisions {
        let approval = &m.approvals[id];
        assert!(standing.contains(&approval.status), "{at}: {} stands on {id}, {:?}", call.id, approval.status);
        let decider = approval.decided_by.unwrap_or_else(|| panic!("{at}: {id} approved by no one the model knows"));
        assert!(DECIDERS.contains(&decider), "{at}: {id} decided by {}, who may not decide", who(decider));
        assert!(
            !approval.initiators.contains(&decider) && approval.requester != decider,
            "{at}: {id} decided by {}, who set its work in motion ({:?})",
            who(decider),
            approval.initiators
        );
        let stored = store.approval(id).await.expect(at);
        assert_eq!(stored.decided_by.as_deref(), Some(w.ids[decider].as_str()), "{at}: {id}'s decider");
        assert_eq!(recorded(&stored), expected(w, approval), "{at}: the initiators the core recorded for {id}");
    }
}

/// The persons the core recorded as setting an approval's work in motion.
fn recorded(stored: &skill_store::records::ApprovalRecord) -> BTreeSet<String> {
    stored.initiators.iter().map(|initiator| initiator.person.clone()).collect()
}

/// The persons the model says set it in motion, as principal ids.
fn expected(w: &World, approval: &Approval) -> BTreeSet<String> {
    approval.initiators.iter().map(|person| w.ids[*person].clone()).collect()
}

fn who(index: usize) -> &'static str {
    PEOPLE.get(index).copied().unwrap_or("an agent")
}

/// `journal verify` of the case's store: it finds nothing wrong (the model found nothing), lists
/// exactly the store's external writes, and names, for each on an approval, the decider the model
/// knows.
pub(super) async fn journal_agrees(w: &World, m: &Model, writes: &[&InvocationRecord], at: &str) {
    let store = w.engine.store();
    let mut audit = skill_journal::audit::Audit::new();
    let mut from = 0;
    loop {
        let page = store.journal_leaves(from, 5_000).await.expect(at);
        let Some(last) = page.last() else { break };
        from = last.index + 1;
        for leaf in &page {
            let exported = skill_journal::export::ExportedEntry {
                index: leaf.index,
                entry: leaf.entry.clone(),
                leaf_hash: leaf.hash,
                payload: leaf.payload.clone(),
                salt: leaf.salt.clone(),
            };
            assert!(audit.entry(&exported), "{at}: the journal has a gap at {}", leaf.index);
        }
    }
    let key = skill_journal::note::Signer::generate("model").expect("a key").verifier();
    let report = audit.finish(&key, &[], None);
    let findings: Vec<String> =
        report.findings.iter().map(|f| format!("{:?} {}: {}", f.index, f.code, f.message)).collect();
    assert!(findings.is_empty(), "{at}: journal verify disagrees with the model: {findings:#?}");
    let verified: BTreeSet<&str> = report.writes.iter().map(|write| write.invocation_id.as_str()).collect();
    let stored: BTreeSet<&str> = writes.iter().map(|call| call.id.as_str()).collect();
    assert_eq!(verified, stored, "{at}: the writes journal verify sees are the store's");
    for write in &report.writes {
        let call = writes.iter().find(|call| call.id == write.invocation_id).expect("a stored write");
        let Some(Basis::Approval { approval_id, .. } | Basis::Process { approval_id, .. }) = &call.authorization_basis
        else {
            continue;
        };
        let Some(decider) = m.approvals[approval_id].decided_by else { continue };
        if let Some(named) = &write.decided_by {
            assert_eq!(*named, w.ids[decider], "{at}: journal verify names another decider of {}", call.id);
        }
    }
}
