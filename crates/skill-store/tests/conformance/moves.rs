//! The lifecycles in code and the database's guards agree: for each machine, every move from one
//! state to another is tried on a fresh row (brought to the first state along allowed moves), and
//! the database accepts exactly the moves the machine's table (`skill_api::Lifecycle::MOVES`)
//! allows. A row changed without moving its status is the other guards' to judge.

use skill_contract::codes::Code;
use std::collections::{BTreeMap, VecDeque};
use std::fmt::Display;

use chrono::{Duration, Utc};
use serde_json::json;
use skill_api::{
    ActionStatus, ApprovalStatus, CallStatus, DecisionAuthority, Lifecycle, OutcomeStatus, RequestStatus, RunStatus,
    SessionStatus, SkillStatus, TaskStatus,
};
use skill_store::records::{
    ActionRecord, AgentRequestRecord, ApprovalRecord, InvocationRecord, SessionRecord, SkillChange, WorkChange,
};
use skill_store::{ErrorKind, StoreError};

use crate::calls::{insert, open_session, pending, setup};
use crate::fixture::{Db, event, failure, id, leaf, principal, publish};
use crate::work::{approval, reserved, run, task};

/// The states after `from` on a shortest way to `to` along allowed moves.
fn way<S: Lifecycle + Ord>(from: S, to: S) -> Vec<S> {
    let mut came: BTreeMap<S, S> = BTreeMap::new();
    let mut queue = VecDeque::from([from]);
    while let Some(at) = queue.pop_front() {
        for &(a, b) in S::MOVES {
            if a == at && b != from && !came.contains_key(&b) {
                came.insert(b, a);
                queue.push_back(b);
            }
        }
    }
    let mut states = Vec::new();
    let mut at = to;
    while at != from {
        states.push(at);
        at = *came.get(&at).unwrap_or_else(|| panic!("{to:?} cannot be reached from {from:?}"));
    }
    states.reverse();
    states
}

/// Whether `to` is reached from `from` along allowed moves.
fn reaches<S: Lifecycle + Ord>(from: S, to: S) -> bool {
    let mut seen = vec![from];
    let mut at = 0;
    while at < seen.len() {
        for &(a, b) in S::MOVES {
            if a == seen[at] && !seen.contains(&b) {
                seen.push(b);
            }
        }
        at += 1;
    }
    seen.contains(&to)
}

/// Tries every move of `S` from `initial`'s machine: `create` makes a fresh row in `initial`,
/// `step` writes it in the next state.
pub(crate) async fn every_move<S, R>(
    label: &str,
    initial: S,
    create: impl AsyncFn() -> R,
    step: impl AsyncFn(R, S) -> Result<R, StoreError>,
) where
    S: Lifecycle + Ord + Display,
{
    every_move_from(label, &[initial], async |_| create().await, step).await;
}

/// [`every_move`] for a machine whose rows start in one of several states (`initials`, the first
/// one from which the others are not reached): `create` makes a fresh row in the state given.
pub(crate) async fn every_move_from<S, R>(
    label: &str,
    initials: &[S],
    create: impl AsyncFn(S) -> R,
    step: impl AsyncFn(R, S) -> Result<R, StoreError>,
) where
    S: Lifecycle + Ord + Display,
{
    let mut tried = 0;
    for &from in S::ALL {
        let initial = initials
            .iter()
            .copied()
            .find(|initial| *initial == from || reaches(*initial, from))
            .unwrap_or_else(|| panic!("{label}: {from} is reached from none of {initials:?}"));
        for &to in S::ALL.iter().filter(|to| **to != from) {
            let mut row = create(initial).await;
            for next in way(initial, from) {
                row =
                    step(row, next).await.unwrap_or_else(|error| panic!("{label}: reaching {from} by {next}: {error}"));
            }
            let moved = step(row, to).await;
            assert_eq!(moved.is_ok(), S::allows(from, to), "{label}: {from} → {to}: {:?}", moved.as_ref().err());
            // Refused by a guard of the database (a trigger), not by anything else.
            if let Err(error) = moved {
                assert!(matches!(error.kind(), ErrorKind::Refused(_)), "{label}: {from} → {to}: {error}");
            }
            tried += 1;
        }
    }
    assert_eq!(tried, S::ALL.len() * (S::ALL.len() - 1), "{label}: every move tried");
}

/// `call` written in `to`, with what the database asks of a call in that state.
pub(crate) fn call_in(call: InvocationRecord, to: CallStatus, executor: &str) -> InvocationRecord {
    let now = Utc::now();
    let taking = call.status == CallStatus::Pending && to == CallStatus::Running;
    let running = to == CallStatus::Running;
    InvocationRecord {
        status: to,
        attempt: call.attempt + i32::from(taking),
        fencing_token: call.fencing_token + i64::from(taking),
        executor_principal_id: if running { Some(executor.to_owned()) } else { call.executor_principal_id.clone() },
        lease_expires_at: running.then(|| now + Duration::seconds(60)),
        heartbeat_at: if running { Some(now) } else { call.heartbeat_at },
        attempt_started_at: if running { Some(now) } else { call.attempt_started_at },
        started_at: call.started_at.or(running.then_some(now)),
        finished_at: to.is_terminal().then_some(now),
        output: (to == CallStatus::Succeeded).then(|| json!({"ok": true})),
        error: matches!(to, CallStatus::Failed | CallStatus::Cancelled).then(|| failure("boom", "", false)),
        row_version: call.row_version + 1,
        updated_at: now,
        ..call
    }
}

pub(crate) async fn calls_move_as_their_lifecycle_allows(db: Db) {
    let (skill, ana) = setup(&db).await;
    let create = async || {
        let call = pending(&skill, &ana, "local", "claims.lookup", None);
        insert(&db, &call).await;
        call
    };
    let step = async |call: InvocationRecord, to: CallStatus| {
        let next = call_in(call, to, &ana);
        db.store.update_invocation(&next, &[]).await.map(|()| next)
    };
    every_move("call", CallStatus::Pending, create, step).await;
}

pub(crate) async fn sessions_move_as_their_lifecycle_allows(db: Db) {
    let (_, ana) = setup(&db).await;
    let create = async || open_session(&db, &ana).await;
    let step = async |session: SessionRecord, to: SessionStatus| {
        let closed_at = (to == SessionStatus::Closed).then(Utc::now);
        let next = SessionRecord { status: to, closed_at, row_version: session.row_version + 1, ..session };
        db.store.update_session(&next, &[], &[]).await.map(|()| next)
    };
    every_move("session", SessionStatus::Active, create, step).await;
}

pub(crate) async fn skills_move_as_their_lifecycle_allows(db: Db) {
    let create = async || {
        let skill = leaf(&format!("s.x{}", &id()[24..]), "1");
        publish(&db, &skill).await;
        skill
    };
    let step = async |skill: skill_store::records::SkillRecord, to: SkillStatus| {
        let change = SkillChange { status: to, ..SkillChange::from_record(&skill) };
        db.store.update_skill(&skill.id, skill.row_version, &change, &event("skill.updated", "s")).await
    };
    every_move("skill", SkillStatus::Active, create, step).await;
}

pub(crate) async fn tasks_and_runs_move_as_their_lifecycles_allow(db: Db) {
    let (_, ana) = setup(&db).await;
    let create = async || task(&db, &ana).await;
    let step = async |task: skill_store::records::TaskRecord, to: TaskStatus| {
        let closed_at = to.is_terminal().then(Utc::now);
        let next =
            skill_store::records::TaskRecord { status: to, closed_at, row_version: task.row_version + 1, ..task };
        db.store.write_work(&[WorkChange::UpdateTask(next.clone())], &[]).await.map(|()| next)
    };
    every_move("task", TaskStatus::Open, create, step).await;

    let open = task(&db, &ana).await;
    let create = async || {
        let run = run(&open, &ana);
        db.store.write_work(&[WorkChange::InsertRun(run.clone())], &[]).await.expect("a run");
        run
    };
    let step = async |run: skill_store::records::RunRecord, to: RunStatus| {
        let ended_at = to.is_terminal().then(Utc::now);
        let next = skill_store::records::RunRecord { status: to, ended_at, row_version: run.row_version + 1, ..run };
        db.store.write_work(&[WorkChange::UpdateRun(next.clone())], &[]).await.map(|()| next)
    };
    every_move("run", RunStatus::Running, create, step).await;
}

/// `approval` written in `to` by `decider`, with what the database asks of that state.
fn approval_in(approval: ApprovalRecord, to: ApprovalStatus, decider: &str) -> ApprovalRecord {
    let now = Utc::now();
    let deciding = approval.decided_by.is_none() && to.decided();
    let withdrawing = to == ApprovalStatus::Withdrawn;
    ApprovalRecord {
        status: to,
        decided_by: if deciding { Some(decider.to_owned()) } else { approval.decided_by.clone() },
        decided_at: if deciding { Some(now) } else { approval.decided_at },
        decision_authority: if deciding {
            Some(DecisionAuthority { principal_id: decider.to_owned(), grants: Vec::new() })
        } else {
            approval.decision_authority.clone()
        },
        withdrawn_by: withdrawing.then(|| approval.requested_by.clone()),
        withdrawn_at: withdrawing.then_some(now),
        row_version: approval.row_version + 1,
        updated_at: now,
        ..approval
    }
}

pub(crate) async fn approvals_and_outcomes_move_as_their_lifecycles_allow(db: Db) {
    let (skill, ana) = setup(&db).await;
    let bob = principal("bob");
    db.store.create_principal(&bob, &event("principal.created", "p")).await.expect("bob");
    let open = task(&db, &ana).await;
    let asked = async || {
        let asked = approval(&open, &ana);
        db.store.write_work(&[WorkChange::InsertApproval(asked.clone())], &[]).await.expect("an approval");
        asked
    };
    let step = async |approval: ApprovalRecord, to: ApprovalStatus| {
        let next = approval_in(approval, to, &bob.id);
        db.store.write_work(&[WorkChange::UpdateApproval(next.clone())], &[]).await.map(|()| next)
    };
    every_move("approval", ApprovalStatus::Pending, asked, step).await;

    // The outcome of a decision, from the decision that starts it.
    let decided = async || {
        let approved = approval_in(asked().await, ApprovalStatus::Approved, &bob.id);
        let running = ApprovalRecord { outcome_status: Some(OutcomeStatus::Running), ..approved };
        db.store.write_work(&[WorkChange::UpdateApproval(running.clone())], &[]).await.expect("decided");
        running
    };
    let step = async |approval: ApprovalRecord, to: OutcomeStatus| {
        let next = ApprovalRecord {
            outcome_status: Some(to),
            row_version: approval.row_version + 1,
            updated_at: Utc::now(),
            ..approval
        };
        db.store.write_work(&[WorkChange::UpdateApproval(next.clone())], &[]).await.map(|()| next)
    };
    every_move("outcome", OutcomeStatus::Running, decided, step).await;
    let never_decided = approval_in(asked().await, ApprovalStatus::Approved, &bob.id);
    let ended = ApprovalRecord { outcome_status: Some(OutcomeStatus::Succeeded), ..never_decided };
    let error =
        db.store.write_work(&[WorkChange::UpdateApproval(ended)], &[]).await.expect_err("an outcome starts running");
    assert_eq!(error.kind(), ErrorKind::Refused(Code::InvalidStatusTransition), "{error}");

    // The actions of an outcome.
    let approved = decided().await;
    let create = async || {
        let mut action = reserved(&approved, &skill.id, json!({"claim": "C-1"}));
        action.action_index = next_index();
        db.store.write_work(&[WorkChange::InsertAction(action.clone())], &[]).await.expect("an action");
        action
    };
    let step = async |action: ActionRecord, to: ActionStatus| {
        let retrying = action.status == ActionStatus::Failed && to == ActionStatus::Pending;
        let next = ActionRecord {
            status: to,
            retries: action.retries + i32::from(retrying),
            error: (to == ActionStatus::Failed).then(|| skill_api::Failure::new("boom", "")),
            row_version: action.row_version + 1,
            updated_at: Utc::now(),
            ..action
        };
        db.store.write_work(&[WorkChange::UpdateAction(next.clone())], &[]).await.map(|()| next)
    };
    every_move("action", ActionStatus::Pending, create, step).await;
}

/// A fresh action index: the actions of one approval are numbered, each number once.
fn next_index() -> i32 {
    use std::sync::atomic::{AtomicI32, Ordering};
    static NEXT: AtomicI32 = AtomicI32::new(0);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

pub(crate) async fn agents_requests_move_as_their_lifecycle_allows(db: Db) {
    let (skill, ana) = setup(&db).await;
    let create = async || {
        let open = task(&db, &ana).await;
        let asked = approval(&open, &ana);
        let now = Utc::now();
        let request = AgentRequestRecord {
            id: id(),
            agent_principal_id: ana.clone(),
            skill_id: skill.id.clone(),
            inputs: json!({"claim": "C-1"}),
            client_name: "conformance".into(),
            client_version: "1".into(),
            idempotency_key: None,
            task_id: open.id.clone(),
            approval_id: asked.id.clone(),
            status: RequestStatus::Pending,
            invocation_id: None,
            expires_at: now + Duration::hours(1),
            row_version: 1,
            created_at: now,
            updated_at: now,
            ended_at: None,
            initiators: Vec::new(),
        };
        let changes = [WorkChange::InsertApproval(asked), WorkChange::InsertRequest(request.clone())];
        db.store.write_work(&changes, &[]).await.expect("a request");
        request
    };
    let step = async |request: AgentRequestRecord, to: RequestStatus| {
        let now = Utc::now();
        let next = AgentRequestRecord {
            status: to,
            row_version: request.row_version + 1,
            updated_at: now,
            ended_at: to.is_terminal().then_some(now),
            ..request
        };
        db.store.write_work(&[WorkChange::UpdateRequest(next.clone())], &[]).await.map(|()| next)
    };
    every_move("request", RequestStatus::Pending, create, step).await;
}
