//! Work: the writes of task types, tasks, runs and approvals in one transaction each, the
//! database's guards over them, and what a claim reads of a call's basis.

use skill_contract::codes::Code;
use std::sync::{Arc, Mutex};

use chrono::Utc;
use serde_json::json;
use skill_api::{
    ActionStatus, ApprovalStatus, Basis, CallStatus, DecisionAuthority, PrincipalKind, RunStatus, TaskStatus,
};
use skill_store::records::{
    ActionRecord, Admission, ApprovalRecord, BasisState, Gates, RunRecord, TaskRecord, TaskTypeRecord, WorkChange,
    Workspace,
};
use skill_store::{Decision, ErrorKind};

use crate::calls::{claimed, insert, pending, setup};
use crate::fixture::{Db, event, failure, id, principal};

/// A workspace, a type and an open task in it, created by `ana`.
pub(crate) async fn task(db: &Db, ana: &str) -> TaskRecord {
    let now = Utc::now();
    let workspace = Workspace { id: id(), key: format!("w{}", &id()[24..]), name: String::new(), created_at: now };
    db.store.create_workspace(&workspace, &event("workspace.created", "w")).await.expect("workspace");
    let task_type = TaskTypeRecord {
        id: id(),
        key: format!("t{}", &id()[24..]),
        version: "1".into(),
        display_name: String::new(),
        description: String::new(),
        spec: skill_api::TaskTypeSpec::new("1"),
        created_by: None,
        created_at: now,
    };
    let task = TaskRecord {
        id: id(),
        workspace_id: workspace.id,
        task_type_id: task_type.id.clone(),
        title: "A claim".into(),
        custom_fields: json!({}),
        status: TaskStatus::Open,
        created_by: ana.to_owned(),
        row_version: 1,
        created_at: now,
        updated_at: now,
        closed_at: None,
        close_reason: None,
        initiators: Vec::new(),
    };
    let changes = [WorkChange::InsertTaskType(task_type), WorkChange::InsertTask(task.clone())];
    db.store.write_work(&changes, &[event("task.created", "t")]).await.expect("task");
    task
}

pub(crate) fn approval(task: &TaskRecord, requester: &str) -> ApprovalRecord {
    let now = Utc::now();
    ApprovalRecord {
        id: id(),
        task_id: task.id.clone(),
        gate: true,
        status: ApprovalStatus::Pending,
        requested_by: requester.to_owned(),
        request_comment: String::new(),
        decided_by: None,
        decided_at: None,
        comment: String::new(),
        decision_authority: None,
        withdrawn_by: None,
        withdrawn_at: None,
        outcome_status: None,
        outcome_reaction: None,
        call_skill_id: None,
        call_inputs: None,
        row_version: 1,
        created_at: now,
        updated_at: now,
        initiators: Vec::new(),
    }
}

pub(crate) fn run(task: &TaskRecord, owner: &str) -> RunRecord {
    RunRecord {
        id: id(),
        task_id: task.id.clone(),
        owner_principal_id: owner.to_owned(),
        status: RunStatus::Running,
        result: None,
        error: None,
        row_version: 1,
        created_at: Utc::now(),
        ended_at: None,
    }
}

pub(crate) fn decided(approval: &ApprovalRecord, by: &str, status: &str) -> ApprovalRecord {
    ApprovalRecord {
        status: status.parse().expect("a state"),
        decided_by: Some(by.to_owned()),
        decided_at: Some(Utc::now()),
        decision_authority: Some(DecisionAuthority { principal_id: by.to_owned(), grants: Vec::new() }),
        row_version: approval.row_version + 1,
        ..approval.clone()
    }
}

pub(crate) async fn work_is_written_whole_and_guarded_by_the_database(db: Db) {
    let (_, ana) = setup(&db).await;
    let bob = principal("bob");
    db.store.create_principal(&bob, &event("principal.created", "p")).await.expect("bob");
    let task = task(&db, &ana).await;
    // One running run per owner and task; a write with a refused part writes nothing.
    let first = run(&task, &ana);
    db.store.write_work(&[WorkChange::InsertRun(first.clone())], &[event("run.started", "r")]).await.expect("run");
    let comment = skill_store::records::CommentRecord {
        id: id(),
        task_id: task.id.clone(),
        author_principal_id: ana.clone(),
        body: "noted".into(),
        created_at: Utc::now(),
    };
    let both = [WorkChange::InsertComment(comment), WorkChange::InsertRun(run(&task, &ana))];
    let error = db.store.write_work(&both, &[event("task.commented", "t")]).await.expect_err("a second running run");
    assert_eq!(error.kind(), ErrorKind::Conflict, "{error}");
    assert!(db.store.comments(&task.id, 10).await.expect("comments").is_empty(), "nothing of it written");
    db.store.write_work(&[WorkChange::InsertRun(run(&task, &bob.id))], &[]).await.expect("another owner's run");

    // The requester never decides; a stale write is Stale; a decision never changes.
    let asked = approval(&task, &ana);
    db.store.write_work(&[WorkChange::InsertApproval(asked.clone())], &[]).await.expect("approval");
    let own = db.store.write_work(&[WorkChange::UpdateApproval(decided(&asked, &ana, "approved"))], &[]).await;
    assert_eq!(own.expect_err("self").kind(), ErrorKind::Refused(Code::SelfApprovalRefused));
    let approved = decided(&asked, &bob.id, "approved");
    db.store.write_work(&[WorkChange::UpdateApproval(approved.clone())], &[]).await.expect("decided");
    let stale = db.store.write_work(&[WorkChange::UpdateApproval(decided(&asked, &bob.id, "rejected"))], &[]).await;
    assert_eq!(stale.expect_err("stale").kind(), ErrorKind::Stale);
    let flipped = ApprovalRecord { status: ApprovalStatus::Rejected, row_version: 3, ..approved.clone() };
    let refused = db.store.write_work(&[WorkChange::UpdateApproval(flipped)], &[]).await.expect_err("flip");
    assert_eq!(refused.kind(), ErrorKind::Refused(Code::InvalidStatusTransition), "{refused}");

    // A closed task stays as it was closed.
    let closed = TaskRecord { status: TaskStatus::Done, closed_at: Some(Utc::now()), row_version: 2, ..task.clone() };
    db.store.write_work(&[WorkChange::UpdateTask(closed.clone())], &[event("task.closed", "t")]).await.expect("closed");
    let reopened = TaskRecord { status: TaskStatus::Open, closed_at: None, row_version: 3, ..closed };
    let refused = db.store.write_work(&[WorkChange::UpdateTask(reopened)], &[]).await.expect_err("reopened");
    assert_eq!(refused.kind(), ErrorKind::Refused(Code::InvalidStatusTransition), "{refused}");

    // By SQL: a published type never changes; nothing of work is deleted.
    for sql in [
        format!("UPDATE task_types SET description = 'x' WHERE id = '{}'", task.task_type_id),
        format!("DELETE FROM task_types WHERE id = '{}'", task.task_type_id),
    ] {
        let error = db.raw.execute(&sql).await.expect_err("refused").to_string();
        assert!(error.contains("task_type_immutable"), "{error}");
    }
    for table in ["tasks", "runs", "approvals"] {
        let error = db.raw.execute(&format!("DELETE FROM {table}")).await.expect_err("refused").to_string();
        assert!(error.contains("work_immutable"), "{table}: {error}");
    }
    // A decision by the requester, by SQL.
    let fresh = approval(&task, &ana);
    db.store.write_work(&[WorkChange::InsertApproval(fresh.clone())], &[]).await.expect("approval");
    let sql = format!(
        "UPDATE approvals SET decided_by = requested_by, decided_at = created_at, decision_authority = '{{}}', \
         row_version = row_version + 1 WHERE id = '{}'",
        fresh.id
    );
    let error = db.raw.execute(&sql).await.expect_err("refused").to_string();
    assert!(error.contains("self_approval_refused"), "{error}");
}

pub(crate) async fn a_call_names_only_a_task_and_a_run_of_it_that_exist(db: Db) {
    let (skill, ana) = setup(&db).await;
    let task = task(&db, &ana).await;
    let other = self::task(&db, &ana).await;
    let own = run(&task, &ana);
    db.store.write_work(&[WorkChange::InsertRun(own.clone())], &[]).await.expect("run");
    let base = pending(&skill, &ana, "local", "claims.lookup", None);
    for (task_id, run_id) in [
        (Some("no-such-task".to_owned()), None),
        (Some(other.id.clone()), Some(own.id.clone())),
        (None, Some(own.id.clone())),
    ] {
        let call = skill_store::records::InvocationRecord { id: id(), task_id, run_id, ..base.clone() };
        let error =
            db.store.insert_invocation(&call, &event("skill.invocation_requested", "c")).await.expect_err("refused");
        assert_eq!(error.kind(), ErrorKind::Refused(Code::UnknownReference), "{error}");
    }
    let fine = skill_store::records::InvocationRecord {
        id: id(),
        task_id: Some(task.id.clone()),
        run_id: Some(own.id.clone()),
        ..base.clone()
    };
    insert(&db, &fine).await;
}

/// The core's execution principal (an executor named `core.execution`), created in `db`.
async fn execution_principal(db: &Db) -> String {
    let core = skill_store::records::Principal { kind: PrincipalKind::Executor, ..principal("core.execution") };
    db.store.create_principal(&core, &event("principal.created", "p")).await.expect("core.execution");
    core.id
}

/// An outcome action of `approval` that reserved a call of `skill` with `inputs`.
pub(crate) fn reserved(
    approval: &ApprovalRecord,
    skill: &str,
    inputs: serde_json::Value,
) -> skill_store::records::ActionRecord {
    let now = Utc::now();
    skill_store::records::ActionRecord {
        approval_id: approval.id.clone(),
        action_index: 0,
        action: serde_json::from_value(json!({"invokeSkill": {"skill": "claim.lookup@1"}})).expect("an action"),
        skill_id: Some(skill.to_owned()),
        inputs: Some(inputs),
        status: ActionStatus::Pending,
        invocation_id: None,
        result: None,
        error: None,
        attempts: 0,
        retries: 0,
        row_version: 1,
        created_at: now,
        updated_at: now,
    }
}

async fn refused(db: &Db, call: &skill_store::records::InvocationRecord) -> ErrorKind {
    db.store.insert_invocation(call, &event("skill.invocation_requested", "c")).await.expect_err("refused").kind()
}

pub(crate) async fn a_basis_covers_only_what_was_decided_and_an_execution_writes_once(db: Db) {
    let (skill, ana) = setup(&db).await;
    let bob = principal("bob");
    db.store.create_principal(&bob, &event("principal.created", "p")).await.expect("bob");
    let core = execution_principal(&db).await;
    let task = task(&db, &ana).await;
    let base = skill_store::records::InvocationRecord {
        task_id: Some(task.id.clone()),
        ..pending(&skill, &ana, "local", "claims.lookup", None)
    };
    // The execution basis: only the core's execution principal, in its own run.
    let own = run(&task, &ana);
    let core_run = run(&task, &core);
    db.store
        .write_work(&[WorkChange::InsertRun(own.clone()), WorkChange::InsertRun(core_run.clone())], &[])
        .await
        .expect("runs");
    let execution = |run: &RunRecord| {
        Some(Basis::Execution { task_type_id: "tt".into(), task_id: run.task_id.clone(), run_id: run.id.clone() })
    };
    let person = skill_store::records::InvocationRecord {
        id: id(),
        run_id: Some(own.id.clone()),
        authorization_basis: execution(&own),
        ..base.clone()
    };
    assert_eq!(refused(&db, &person).await, ErrorKind::Refused(Code::BasisNotCovered), "a person's own run");
    let borrowed = skill_store::records::InvocationRecord { authority_principal_id: core.clone(), ..person.clone() };
    assert_eq!(refused(&db, &borrowed).await, ErrorKind::Refused(Code::BasisNotCovered), "in a run not its own");
    let first = skill_store::records::InvocationRecord {
        id: id(),
        authority_principal_id: core.clone(),
        run_id: Some(core_run.id.clone()),
        authorization_basis: execution(&core_run),
        ..base.clone()
    };
    insert(&db, &first).await;
    // Once per run, and once per task whatever the runs …
    let again = skill_store::records::InvocationRecord { id: id(), ..first.clone() };
    assert_eq!(refused(&db, &again).await, ErrorKind::Conflict, "twice in a run");
    let ended =
        RunRecord { status: RunStatus::Cancelled, ended_at: Some(Utc::now()), row_version: 2, ..core_run.clone() };
    let next_run = run(&task, &core);
    db.store
        .write_work(&[WorkChange::UpdateRun(ended), WorkChange::InsertRun(next_run.clone())], &[])
        .await
        .expect("a second run");
    let second = skill_store::records::InvocationRecord {
        id: id(),
        run_id: Some(next_run.id.clone()),
        authorization_basis: execution(&next_run),
        ..first.clone()
    };
    assert_eq!(refused(&db, &second).await, ErrorKind::Conflict, "a second run of the task");
    // … but a call cancelled before anyone claimed it wrote nothing, and frees the task's one write.
    let cancelled = skill_store::records::InvocationRecord {
        status: CallStatus::Cancelled,
        finished_at: Some(Utc::now()),
        error: Some(failure("basis_revoked", "approval_withdrawn", false)),
        row_version: 2,
        ..first.clone()
    };
    db.store.update_invocation(&cancelled, &[]).await.expect("cancelled unclaimed");
    insert(&db, &second).await;

    // An approval covers the calls its outcome reserved, with the decider's authority …
    let asked = approval(&task, &ana);
    db.store.write_work(&[WorkChange::InsertApproval(asked.clone())], &[]).await.expect("approval");
    let approved = decided(&asked, &bob.id, "approved");
    let action = reserved(&asked, &skill.id, json!({"claim": "C-1"}));
    db.store
        .write_work(&[WorkChange::UpdateApproval(approved), WorkChange::InsertAction(action)], &[])
        .await
        .expect("decided with its outcome");
    let basis = Some(Basis::Approval { approval_id: asked.id.clone(), decided_by: bob.id.clone(), retry: None });
    let outcome = skill_store::records::InvocationRecord {
        id: id(),
        authority_principal_id: bob.id.clone(),
        inputs: json!({"claim": "C-1"}),
        authorization_basis: basis.clone(),
        ..base.clone()
    };
    let others =
        skill_store::records::InvocationRecord { id: id(), inputs: json!({"claim": "C-2"}), ..outcome.clone() };
    assert_eq!(refused(&db, &others).await, ErrorKind::Refused(Code::BasisNotCovered), "other inputs");
    let requester =
        skill_store::records::InvocationRecord { id: id(), authority_principal_id: ana.clone(), ..outcome.clone() };
    assert_eq!(refused(&db, &requester).await, ErrorKind::Refused(Code::BasisNotCovered), "another authority");
    insert(&db, &outcome).await;
    let twice = skill_store::records::InvocationRecord { id: id(), ..outcome.clone() };
    assert_eq!(refused(&db, &twice).await, ErrorKind::Conflict, "spent once per version");
    // … and the call it was requested for, by its requester.
    let for_call = ApprovalRecord {
        call_skill_id: Some(skill.id.clone()),
        call_inputs: Some(json!({"claim": "C-9"})),
        ..approval(&task, &ana)
    };
    let half = ApprovalRecord { id: id(), call_inputs: None, ..for_call.clone() };
    let error = db.store.write_work(&[WorkChange::InsertApproval(half)], &[]).await.expect_err("half a call");
    assert!(matches!(error.kind(), ErrorKind::Refused(_) | ErrorKind::Invalid), "{error}");
    db.store.write_work(&[WorkChange::InsertApproval(for_call.clone())], &[]).await.expect("asked for a call");
    db.store
        .write_work(&[WorkChange::UpdateApproval(decided(&for_call, &bob.id, "approved"))], &[])
        .await
        .expect("decided");
    let basis = Some(Basis::Approval { approval_id: for_call.id.clone(), decided_by: bob.id.clone(), retry: None });
    let call = skill_store::records::InvocationRecord {
        id: id(),
        inputs: json!({"claim": "C-9"}),
        authorization_basis: basis,
        ..base.clone()
    };
    let by_decider =
        skill_store::records::InvocationRecord { id: id(), authority_principal_id: bob.id.clone(), ..call.clone() };
    assert_eq!(refused(&db, &by_decider).await, ErrorKind::Refused(Code::BasisNotCovered), "not its requester");
    insert(&db, &call).await;
    // By SQL, what a decision fixed never changes.
    let sql = format!(
        "UPDATE approval_actions SET inputs = '{{}}', row_version = row_version + 1 WHERE approval_id = '{}'",
        asked.id
    );
    let error = db.raw.execute(&sql).await.expect_err("refused").to_string();
    assert!(error.contains("row_version_required"), "{error}");
    let sql = format!(
        "UPDATE approvals SET call_inputs = '{{}}', row_version = row_version + 1 WHERE id = '{}'",
        for_call.id
    );
    let error = db.raw.execute(&sql).await.expect_err("refused").to_string();
    assert!(error.contains("work_immutable"), "{error}");
}

pub(crate) async fn a_failed_action_is_retried_only_as_often_as_a_decider_asked(db: Db) {
    let (skill, ana) = setup(&db).await;
    let bob = principal("bob");
    db.store.create_principal(&bob, &event("principal.created", "p")).await.expect("bob");
    let task = task(&db, &ana).await;
    let asked = approval(&task, &ana);
    db.store.write_work(&[WorkChange::InsertApproval(asked.clone())], &[]).await.expect("approval");
    // A decision is a person's: an agent holding whatever it holds decides nothing.
    let robot = skill_store::records::Principal { kind: PrincipalKind::Agent, ..principal("robot") };
    db.store.create_principal(&robot, &event("principal.created", "p")).await.expect("robot");
    let by_agent =
        db.store.write_work(&[WorkChange::UpdateApproval(decided(&asked, &robot.id, "approved"))], &[]).await;
    assert_eq!(by_agent.expect_err("refused").kind(), ErrorKind::Refused(Code::DeciderNotAPerson));
    let action = reserved(&asked, &skill.id, json!({"claim": "C-1"}));
    db.store
        .write_work(
            &[
                WorkChange::UpdateApproval(decided(&asked, &bob.id, "approved")),
                WorkChange::InsertAction(action.clone()),
            ],
            &[],
        )
        .await
        .expect("decided with its outcome");
    let call = |retry: Option<i32>| {
        let basis = Basis::Approval { approval_id: asked.id.clone(), decided_by: bob.id.clone(), retry };
        skill_store::records::InvocationRecord {
            id: id(),
            task_id: Some(task.id.clone()),
            authority_principal_id: bob.id.clone(),
            inputs: json!({"claim": "C-1"}),
            authorization_basis: Some(basis),
            ..pending(&skill, &ana, "local", "claims.lookup", None)
        }
    };
    // Retry 1 before anyone asked for it is not covered.
    assert_eq!(refused(&db, &call(Some(1))).await, ErrorKind::Refused(Code::BasisNotCovered), "an unasked retry");
    let first = call(None);
    insert(&db, &first).await;
    let invoked = ActionRecord {
        status: ActionStatus::Invoked,
        invocation_id: Some(first.id.clone()),
        attempts: 1,
        row_version: 2,
        ..action.clone()
    };
    let failed = ActionRecord {
        status: ActionStatus::Failed,
        error: Some(skill_api::Failure { retryable: Some(true), ..skill_api::Failure::new("config_missing", "") }),
        row_version: 3,
        ..invoked.clone()
    };
    db.store.write_work(&[WorkChange::UpdateAction(invoked)], &[]).await.expect("invoked");
    db.store.write_work(&[WorkChange::UpdateAction(failed.clone())], &[]).await.expect("failed");
    // A failed action moves only by a retry: to pending, one more retry, its call let go.
    let keeps_call = ActionRecord { status: ActionStatus::Pending, retries: 1, row_version: 4, ..failed.clone() };
    let unwritten = db.store.write_work(&[WorkChange::UpdateAction(keeps_call)], &[]).await;
    assert!(unwritten.is_err(), "a retry lets its earlier call go");
    let two = ActionRecord {
        status: ActionStatus::Pending,
        retries: 2,
        invocation_id: None,
        row_version: 4,
        ..failed.clone()
    };
    assert!(db.store.write_work(&[WorkChange::UpdateAction(two)], &[]).await.is_err(), "one retry at a time");
    let succeeded = ActionRecord { status: ActionStatus::Succeeded, row_version: 4, ..failed.clone() };
    assert!(db.store.write_work(&[WorkChange::UpdateAction(succeeded)], &[]).await.is_err(), "failed stays failed");
    let retried = ActionRecord {
        status: ActionStatus::Pending,
        retries: 1,
        invocation_id: None,
        error: None,
        row_version: 4,
        ..failed
    };
    db.store.write_work(&[WorkChange::UpdateAction(retried.clone())], &[]).await.expect("retried");
    // Now retry 1 is covered, once; retry 2 is not, and the first call stays spent.
    assert_eq!(refused(&db, &call(Some(2))).await, ErrorKind::Refused(Code::BasisNotCovered), "one retry asked for");
    assert_eq!(refused(&db, &call(None)).await, ErrorKind::Refused(Code::BasisNotCovered), "the first call is past");
    let second = call(Some(1));
    insert(&db, &second).await;
    assert_eq!(refused(&db, &call(Some(1))).await, ErrorKind::Conflict, "retry 1 is spent once");
    // By SQL, the count of retries never moves without a retry.
    let sql = format!(
        "UPDATE approval_actions SET retries = 5, row_version = row_version + 1 WHERE approval_id = '{}'",
        asked.id
    );
    let error = db.raw.execute(&sql).await.expect_err("refused").to_string();
    assert!(error.contains("row_version_required"), "{error}");
}

pub(crate) async fn the_approvals_to_decide_are_the_pending_ones_of_open_tasks_asked_by_others(db: Db) {
    let (_, ana) = setup(&db).await;
    let bob = principal("bob");
    db.store.create_principal(&bob, &event("principal.created", "p")).await.expect("bob");
    let (here, there, closed) = (task(&db, &ana).await, task(&db, &ana).await, task(&db, &ana).await);
    let asked = approval(&here, &ana);
    let own = approval(&here, &bob.id);
    let decided = approval(&here, &ana);
    let elsewhere = approval(&there, &ana);
    let on_closed = approval(&closed, &ana);
    let mut changes: Vec<WorkChange> = [&asked, &own, &decided, &elsewhere, &on_closed]
        .iter()
        .map(|a| WorkChange::InsertApproval((*a).clone()))
        .collect();
    changes.push(WorkChange::UpdateApproval(self::decided(&decided, &bob.id, "approved")));
    let shut = TaskRecord { status: TaskStatus::Done, closed_at: Some(Utc::now()), row_version: 2, ..closed.clone() };
    changes.push(WorkChange::UpdateTask(shut));
    db.store.write_work(&changes, &[]).await.expect("written");
    let ids = |found: Vec<ApprovalRecord>| found.into_iter().map(|a| a.id).collect::<Vec<_>>();
    let everywhere = db.store.approvals_to_decide(None, &bob.id, 10).await.expect("read");
    assert_eq!(ids(everywhere), [asked.id.clone(), elsewhere.id.clone()], "pending, of open tasks, not bob's own");
    let only_here =
        db.store.approvals_to_decide(Some(std::slice::from_ref(&here.workspace_id)), &bob.id, 10).await.expect("read");
    assert_eq!(ids(only_here), vec![asked.id.clone()]);
    assert_eq!(ids(db.store.approvals_to_decide(None, &bob.id, 1).await.expect("read")), vec![asked.id.clone()]);
}

pub(crate) async fn a_claim_reads_each_basis_passes_held_calls_and_writes_what_it_cancels(db: Db) {
    let (skill, ana) = setup(&db).await;
    let bob = principal("bob");
    db.store.create_principal(&bob, &event("principal.created", "p")).await.expect("bob");
    let task = task(&db, &ana).await;
    let asked = approval(&task, &ana);
    db.store.write_work(&[WorkChange::InsertApproval(asked.clone())], &[]).await.expect("approval");
    let gate = approval(&task, &ana);
    let approved = decided(&asked, &bob.id, "approved");
    let inputs = pending(&skill, &ana, "local", "claims.lookup", None).inputs;
    let outcome = WorkChange::InsertAction(reserved(&asked, &skill.id, inputs));
    db.store
        .write_work(&[WorkChange::UpdateApproval(approved), outcome, WorkChange::InsertApproval(gate)], &[])
        .await
        .expect("decided, and a pending gate");
    let core = execution_principal(&db).await;
    let own = run(&task, &core);
    db.store.write_work(&[WorkChange::InsertRun(own.clone())], &[]).await.expect("run");
    let at = |minutes: i64| Utc::now() - chrono::Duration::minutes(minutes);
    let base = skill_store::records::InvocationRecord {
        task_id: Some(task.id.clone()),
        ..pending(&skill, &ana, "local", "claims.lookup", None)
    };
    let held = skill_store::records::InvocationRecord {
        id: id(),
        available_at: at(3),
        run_id: Some(own.id.clone()),
        authority_principal_id: core.clone(),
        authorization_basis: Some(Basis::Execution {
            task_type_id: "tt".into(),
            task_id: own.task_id.clone(),
            run_id: own.id.clone(),
        }),
        ..base.clone()
    };
    let revoked = skill_store::records::InvocationRecord {
        id: id(),
        available_at: at(2),
        authority_principal_id: bob.id.clone(),
        authorization_basis: Some(Basis::Approval {
            approval_id: asked.id.clone(),
            decided_by: bob.id.clone(),
            retry: None,
        }),
        ..base.clone()
    };
    let plain = skill_store::records::InvocationRecord { id: id(), available_at: at(1), task_id: None, ..base.clone() };
    for call in [&held, &revoked, &plain] {
        insert(&db, call).await;
    }
    let seen: Arc<Mutex<Vec<(String, BasisState)>>> = Arc::default();
    let judge = {
        let (seen, held, revoked, ana) = (Arc::clone(&seen), held.id.clone(), revoked.id.clone(), ana.clone());
        Box::new(move |call: &skill_store::records::InvocationRecord, basis: &BasisState| {
            seen.lock().expect("seen").push((call.id.clone(), basis.clone()));
            if call.id == held {
                Decision::Pass
            } else if call.id == revoked {
                let mut cancelled = claimed(call, &ana, 60);
                cancelled.status = CallStatus::Cancelled;
                cancelled.attempt = call.attempt;
                cancelled.fencing_token = call.fencing_token;
                cancelled.lease_expires_at = None;
                cancelled.executor_principal_id = None;
                cancelled.attempt_started_at = None;
                cancelled.started_at = None;
                cancelled.heartbeat_at = None;
                cancelled.finished_at = Some(Utc::now());
                cancelled.error = Some(failure("basis_revoked", "approval_withdrawn", false));
                Decision::Cancel(cancelled, vec![event("skill.invocation_cancelled", "c")])
            } else {
                Decision::Take(claimed(call, &ana, 60), vec![event("skill.invocation_claimed", "c")])
            }
        })
    };
    // The person who decided the revoked call's approval is disabled since.
    db.store.disable_principal(&bob.id, Utc::now(), &[], &[]).await.expect("bob disabled");
    let admission = Admission { local_entrypoints: vec!["claims.lookup".to_owned()], ..Admission::default() };
    let taken = db.store.claim(&admission, Utc::now(), judge).await.expect("claim").expect("a call");
    assert_eq!(taken.id, plain.id, "the held call passed, the revoked one cancelled, the next taken");
    let seen = seen.lock().expect("seen").clone();
    assert_eq!(
        seen.iter().map(|(id, _)| id.clone()).collect::<Vec<_>>(),
        [held.id.clone(), revoked.id.clone(), plain.id.clone()]
    );
    let basis = |index: usize| seen[index].1.clone();
    assert_eq!(
        (basis(0).task_status, basis(0).run_status, basis(0).gates, basis(0).approval_status),
        (
            Some(TaskStatus::Open),
            Some(RunStatus::Running),
            Gates { pending: true, approved: true, ..Gates::default() },
            None
        )
    );
    assert_eq!((basis(1).approval_status, basis(1).decider_disabled), (Some(ApprovalStatus::Approved), true));
    assert!(basis(0).decider_disabled, "the execution's task has a gate bob approved");
    assert!(!basis(2).decider_disabled, "no basis, no decider");
    assert_eq!(
        (basis(2).task_status, basis(2).gates, basis(2).skill_status.as_str(), basis(2).skill_name.as_str()),
        (None, Gates::default(), "active", "claim.lookup")
    );
    let status = |id: &str| {
        let db = &db;
        let id = id.to_owned();
        async move { db.store.invocation(&id).await.expect("call").status }
    };
    assert_eq!((status(&held.id).await, status(&revoked.id).await), (CallStatus::Pending, CallStatus::Cancelled));
    // A claim that only passes and cancels writes its cancellations and takes nothing.
    let more = skill_store::records::InvocationRecord { id: id(), task_id: None, available_at: at(1), ..base.clone() };
    insert(&db, &more).await;
    let skip_all = Box::new(|_: &skill_store::records::InvocationRecord, _: &BasisState| Decision::Pass);
    assert_eq!(db.store.claim(&admission, Utc::now(), skip_all).await.expect("claim"), None);
    assert_eq!(status(&more.id).await, CallStatus::Pending);
}

pub(crate) async fn artifact_types_never_change_and_an_artifact_is_superseded_once(db: Db) {
    use skill_store::records::{ArtifactRecord, ArtifactTypeRecord};
    let (_, ana) = setup(&db).await;
    let task = task(&db, &ana).await;
    let kind = ArtifactTypeRecord {
        id: id(),
        key: "claim.summary".into(),
        version: "1".into(),
        display_name: String::new(),
        description: String::new(),
        media_types: vec!["application/json".into()],
        max_bytes: 1024,
        metadata_schema: Some(json!({"type": "object"})),
        created_by: None,
        created_at: Utc::now(),
    };
    db.store.write_work(&[WorkChange::InsertArtifactType(kind.clone())], &[]).await.expect("published");
    let again = ArtifactTypeRecord { id: id(), ..kind.clone() };
    let error = db.store.write_work(&[WorkChange::InsertArtifactType(again)], &[]).await.expect_err("taken");
    assert_eq!(error.kind(), ErrorKind::Conflict, "{error}");
    let newer =
        ArtifactTypeRecord { id: id(), version: "2".into(), max_bytes: 2048, created_at: Utc::now(), ..kind.clone() };
    db.store.write_work(&[WorkChange::InsertArtifactType(newer.clone())], &[]).await.expect("a newer version");
    let newest = db.store.newest_artifact_type("claim.summary").await.expect("newest");
    assert_eq!(
        (newest.id, newest.max_bytes, newest.metadata_schema),
        (newer.id.clone(), 2048, kind.metadata_schema.clone())
    );
    assert_eq!(db.store.artifact_type_version("claim.summary", "1").await.expect("v1").id, kind.id);
    let listed = db.store.artifact_types(Some("claim.summary"), Some(&kind.id), 10).await.expect("after v1");
    assert_eq!(listed.into_iter().map(|t| t.id).collect::<Vec<_>>(), vec![newer.id.clone()]);
    for sql in [
        format!("UPDATE artifact_types SET max_bytes = 1 WHERE id = '{}'", kind.id),
        format!("DELETE FROM artifact_types WHERE id = '{}'", kind.id),
    ] {
        let error = db.raw.execute(&sql).await.expect_err("refused").to_string();
        assert!(error.contains("artifact_type_immutable"), "{sql}: {error}");
    }
    let shape = "INSERT INTO artifact_types (id, key, version, media_types, max_bytes, created_at) \
                 VALUES ('x', 'k', '1', '[]', 10, '2026-01-01T00:00:00Z')";
    assert!(db.raw.execute(shape).await.is_err(), "a type allows at least one media type");

    // The head of a type in a task: the newest artifact nothing supersedes; each is superseded once.
    let artifact = |supersedes: Option<&str>| ArtifactRecord {
        id: id(),
        workspace_id: task.workspace_id.clone(),
        task_id: Some(task.id.clone()),
        run_id: None,
        kind: "claim.summary".into(),
        name: "summary.json".into(),
        media_type: "application/json".into(),
        size_bytes: 2,
        sha256: "a".repeat(64),
        metadata: json!({}),
        author_principal_id: ana.clone(),
        skill_invocation_id: None,
        supersedes_id: supersedes.map(str::to_owned),
        created_at: Utc::now(),
    };
    assert_eq!(db.store.task_head(&task.id, "claim.summary").await.expect("head"), None);
    let first = artifact(None);
    db.store.insert_artifact(&first, &event("artifact.created", "a")).await.expect("first");
    let second = artifact(Some(&first.id));
    db.store.insert_artifact(&second, &event("artifact.created", "a")).await.expect("second");
    assert_eq!(
        db.store.task_head(&task.id, "claim.summary").await.expect("head").map(|a| a.id),
        Some(second.id.clone())
    );
    let fork = artifact(Some(&first.id));
    let error = db.store.insert_artifact(&fork, &event("artifact.created", "a")).await.expect_err("superseded once");
    assert_eq!(error.kind(), ErrorKind::Conflict, "{error}");
    assert_eq!(db.store.task_artifacts(&task.id).await.expect("listed").len(), 2, "the fork is not written");
    assert_eq!(db.store.task_head(&task.id, "skill_result").await.expect("none"), None);
}

/// A disabled principal decides nothing, whatever the code read before: the database refuses
/// the decision.
pub(crate) async fn a_disabled_principal_decides_nothing(db: Db) {
    let (_, ana) = setup(&db).await;
    let (bob, carol) = (principal("bob"), principal("carol"));
    for person in [&bob, &carol] {
        db.store.create_principal(person, &event("principal.created", "p")).await.expect("a person");
    }
    let open = task(&db, &ana).await;
    let (first, second) = (approval(&open, &ana), approval(&open, &ana));
    let asked = [WorkChange::InsertApproval(first.clone()), WorkChange::InsertApproval(second.clone())];
    db.store.write_work(&asked, &[]).await.expect("asked");
    db.store.disable_principal(&bob.id, Utc::now(), &[], &[]).await.expect("bob disabled");
    for outcome in ["approved", "rejected"] {
        let refused = db
            .store
            .write_work(&[WorkChange::UpdateApproval(decided(&first, &bob.id, outcome))], &[])
            .await
            .expect_err("bob may not decide");
        assert_eq!(refused.kind(), ErrorKind::Refused(Code::PrincipalDisabled), "{refused}");
    }
    db.store
        .write_work(&[WorkChange::UpdateApproval(decided(&second, &carol.id, "approved"))], &[])
        .await
        .expect("carol decides");
}

/// However many calls wait for a pending gate at the head of the queue, a claim reaches the call
/// behind them: a held call is not even a candidate. Once the gate is approved they come first
/// again.
/// A task of `ana`'s with a pending gate and a run of `core`'s, and the execution call of that
/// run the gate holds (due at `due`); answers the call and the gate.
async fn held_execution(
    db: &Db,
    skill: &skill_store::records::SkillRecord,
    ana: &str,
    core: &str,
    due: chrono::DateTime<Utc>,
) -> (skill_store::records::InvocationRecord, ApprovalRecord) {
    let task = task(db, ana).await;
    let gate = approval(&task, ana);
    let own = run(&task, core);
    let changes = [WorkChange::InsertApproval(gate.clone()), WorkChange::InsertRun(own.clone())];
    db.store.write_work(&changes, &[]).await.expect("a pending gate and a run");
    let call = skill_store::records::InvocationRecord {
        available_at: due,
        task_id: Some(task.id.clone()),
        run_id: Some(own.id.clone()),
        authority_principal_id: core.to_owned(),
        authorization_basis: Some(Basis::Execution {
            task_type_id: task.task_type_id.clone(),
            task_id: task.id.clone(),
            run_id: own.id.clone(),
        }),
        ..pending(skill, ana, "local", "claims.lookup", None)
    };
    insert(db, &call).await;
    (call, gate)
}

pub(crate) async fn held_calls_never_hide_the_calls_behind_them(db: Db) {
    let (skill, ana) = setup(&db).await;
    let core = execution_principal(&db).await;
    let at = |seconds: i64| Utc::now() - chrono::Duration::seconds(seconds);
    // 50 tasks, each with a pending gate and the execution it holds (one per run).
    let (mut held, mut gates) = (Vec::new(), Vec::new());
    for n in 0..50 {
        let (call, gate) = held_execution(&db, &skill, &ana, &core, at(600 - n)).await;
        held.push(call.id);
        gates.push(gate);
    }
    let plain = skill_store::records::InvocationRecord {
        available_at: at(1),
        ..pending(&skill, &ana, "local", "claims.lookup", None)
    };
    insert(&db, &plain).await;
    let admission = Admission { local_entrypoints: vec!["claims.lookup".to_owned()], ..Admission::default() };
    let judge = |seen: Arc<Mutex<Vec<String>>>, executor: String| {
        Box::new(move |call: &skill_store::records::InvocationRecord, _: &BasisState| {
            seen.lock().expect("seen").push(call.id.clone());
            Decision::Take(claimed(call, &executor, 60), vec![event("skill.invocation_claimed", "c")])
        })
    };
    let seen: Arc<Mutex<Vec<String>>> = Arc::default();
    let taken = db.store.claim(&admission, Utc::now(), judge(Arc::clone(&seen), ana.clone())).await.expect("claim");
    assert_eq!(taken.map(|call| call.id), Some(plain.id.clone()), "the call behind 50 held ones is taken");
    assert_eq!(*seen.lock().expect("seen"), std::slice::from_ref(&plain.id), "no held call was a candidate");

    let bob = principal("bob");
    db.store.create_principal(&bob, &event("principal.created", "p")).await.expect("bob");
    let approved = decided(&gates[0], &bob.id, "approved");
    db.store.write_work(&[WorkChange::UpdateApproval(approved)], &[]).await.expect("the gate approved");
    let seen: Arc<Mutex<Vec<String>>> = Arc::default();
    let taken = db.store.claim(&admission, Utc::now(), judge(Arc::clone(&seen), ana.clone())).await.expect("claim");
    assert_eq!(taken.map(|call| call.id), Some(held[0].clone()), "approved, the oldest held call comes first");
}

pub(crate) async fn the_backlog_counts_what_waits_and_why(db: Db) {
    let (skill, ana) = setup(&db).await;
    let core = execution_principal(&db).await;
    let now = Utc::now();
    // Two executions held by their tasks' pending gates; a gate decided lets its call go.
    let mut gates = Vec::new();
    for _ in 0..2 {
        gates.push(held_execution(&db, &skill, &ana, &core, now).await.1);
    }
    // Three due, one in its backoff, one running; an http call no session covers.
    for _ in 0..3 {
        insert(&db, &pending(&skill, &ana, "local", "claims.lookup", None)).await;
    }
    let later = skill_store::records::InvocationRecord {
        available_at: now + chrono::Duration::hours(1),
        attempt: 1,
        ..pending(&skill, &ana, "local", "claims.lookup", None)
    };
    insert(&db, &later).await;
    let running = pending(&skill, &ana, "local", "claims.lookup", None);
    insert(&db, &running).await;
    let taken = claimed(&running, &ana, 60);
    db.store.update_invocation(&taken, &[event("skill.invocation_claimed", "c")]).await.expect("running");
    insert(&db, &pending(&skill, &ana, "http", "https://svc.example/run", None)).await;
    crate::calls::session_admitting(&db, &ana, json!({"localEntrypoints": ["claims.lookup"]})).await;

    let backlog = db.store.backlog(Utc::now()).await.expect("the backlog");
    let count = |status: CallStatus, later: bool, held: bool, protocol: &str| -> i64 {
        backlog
            .calls
            .iter()
            .filter(|c| c.status == status && c.later == later && c.held == held && c.protocol == protocol)
            .map(|c| c.count)
            .sum()
    };
    assert_eq!(count(CallStatus::Pending, false, true, "local"), 2, "held: {:?}", backlog.calls);
    assert_eq!(count(CallStatus::Pending, false, false, "local"), 3, "due: {:?}", backlog.calls);
    assert_eq!(count(CallStatus::Pending, true, false, "local"), 1, "in backoff: {:?}", backlog.calls);
    assert_eq!(count(CallStatus::Running, false, false, "local"), 1, "running: {:?}", backlog.calls);
    assert_eq!(count(CallStatus::Pending, false, false, "http"), 1, "{:?}", backlog.calls);
    assert_eq!(backlog.calls.iter().map(|c| c.count).sum::<i64>(), 8, "every open call, once");
    // The session admits the local entrypoint, not the http endpoint.
    for group in &backlog.calls {
        assert_eq!(group.covered, group.protocol == "local", "{group:?}");
    }
    assert_eq!((backlog.approvals_pending, backlog.sessions_active), (2, 1));
    assert!(backlog.oldest_due.is_some_and(|due| due <= Utc::now() && due >= now - chrono::Duration::seconds(5)));
    assert_eq!(backlog.oldest_outcome, None, "no outcome is being carried out");
    let pools = db.store.connections();
    assert!(!pools.is_empty() && pools.iter().all(|(_, open, idle)| *open >= 1 && idle <= open), "{pools:?}");

    let bob = principal("bob");
    db.store.create_principal(&bob, &event("principal.created", "p")).await.expect("bob");
    let approved = ApprovalRecord {
        outcome_status: Some(skill_api::OutcomeStatus::Running),
        ..decided(&gates[0], &bob.id, "approved")
    };
    db.store.write_work(&[WorkChange::UpdateApproval(approved.clone())], &[]).await.expect("the gate approved");
    let backlog = db.store.backlog(Utc::now()).await.expect("the backlog");
    let held: i64 = backlog.calls.iter().filter(|c| c.held).map(|c| c.count).sum();
    assert_eq!((held, backlog.approvals_pending), (1, 1), "the approved gate holds its call no more");
    let decided_at = approved.decided_at.expect("decided");
    let read = backlog.oldest_outcome.expect("its outcome is being carried out");
    assert!((read - decided_at).num_milliseconds().abs() < 1_000, "{read} for {decided_at}");
}

/// Four eyes in the database: an approval's decider is never one of its initiators, who set its
/// work in motion; initiators never change once written; an agent's token is operated by a person.
pub(crate) async fn no_initiator_decides_and_initiators_never_change(db: Db) {
    let (_, ana) = setup(&db).await;
    let bob = principal("bob");
    db.store.create_principal(&bob, &event("principal.created", "p")).await.expect("bob");
    let cy = principal("cy");
    db.store.create_principal(&cy, &event("principal.created", "p")).await.expect("cy");
    let task = task(&db, &ana).await;
    let started_by_bob = skill_api::Initiator {
        person: bob.id.clone(),
        role: skill_api::InitiatorRole::Started,
        agent: None,
        via: vec!["instance:i".into(), format!("task:{}", task.id)],
    };
    let asked = ApprovalRecord { initiators: vec![started_by_bob.clone()], ..approval(&task, &ana) };
    db.store.write_work(&[WorkChange::InsertApproval(asked.clone())], &[]).await.expect("approval");
    assert_eq!(db.store.approval(&asked.id).await.expect("read").initiators, std::slice::from_ref(&started_by_bob));
    let own = db.store.write_work(&[WorkChange::UpdateApproval(decided(&asked, &bob.id, "approved"))], &[]).await;
    assert_eq!(own.expect_err("an initiator").kind(), ErrorKind::Refused(Code::DeciderIsInitiator));
    // Inserted decided, too.
    let inserted = ApprovalRecord { id: id(), ..decided(&asked, &bob.id, "approved") };
    let own = db.store.write_work(&[WorkChange::InsertApproval(inserted)], &[]).await;
    assert_eq!(own.expect_err("an initiator").kind(), ErrorKind::Refused(Code::DeciderIsInitiator));
    // Nor by SQL: the initiators stay as written.
    for table in ["approvals", "tasks"] {
        let id = if table == "tasks" { &task.id } else { &asked.id };
        let sql = format!(
            "UPDATE {table} SET initiators = '[{{\"person\": \"x\"}}]', row_version = row_version + 1 WHERE id = '{id}'"
        );
        let wiped = db.raw.execute(&sql).await.expect_err("refused").to_string();
        assert!(wiped.contains("work_immutable"), "{table}: {wiped}");
    }
    db.store.write_work(&[WorkChange::UpdateApproval(decided(&asked, &cy.id, "approved"))], &[]).await.expect("cy");
    // An agent's token names a person as its operator, never another agent.
    let agent = skill_store::records::Principal { kind: PrincipalKind::Agent, ..principal("desk-bot") };
    db.store.create_principal(&agent, &event("principal.created", "p")).await.expect("an agent");
    let token = |operator: &str| skill_store::records::AccessToken {
        id: id(),
        principal_id: agent.id.clone(),
        token_hash: id().replace('-', "").repeat(2),
        label: String::new(),
        created_at: Utc::now(),
        expires_at: None,
        revoked_at: None,
        operated_by: Some(operator.to_owned()),
        issued_by: Some(bob.id.clone()),
    };
    let by_agent = db.store.create_token(&token(&agent.id), &event("token.created", "t")).await;
    assert_eq!(by_agent.expect_err("no person").kind(), ErrorKind::Refused(Code::UnknownReference));
    let by_cy = token(&cy.id);
    db.store.create_token(&by_cy, &event("token.created", "t")).await.expect("operated by cy");
    let found = db.store.credential(&by_cy.token_hash).await.expect("found");
    assert_eq!(found.token.operated_by.as_deref(), Some(cy.id.as_str()));
    assert_eq!(found.token.issued_by.as_deref(), Some(bob.id.as_str()), "who had it issued is kept");
    assert!(!found.operator_disabled);
    // Who had a token issued, and a principal's name and kind, never change by SQL either.
    for sql in [
        format!("UPDATE access_tokens SET issued_by = '{}' WHERE id = '{}'", cy.id, by_cy.id),
        format!("UPDATE principals SET name = 'mallory' WHERE id = '{}'", cy.id),
        format!("UPDATE principals SET kind = 'agent' WHERE id = '{}'", cy.id),
    ] {
        let changed = db.raw.execute(&sql).await.expect_err("refused").to_string();
        assert!(changed.contains("work_immutable"), "{sql}: {changed}");
    }
    // The agent's token tells when the person operating it is disabled.
    db.store.disable_principal(&cy.id, Utc::now(), &[], &[event("principal.disabled", "p")]).await.expect("off");
    assert!(db.store.credential(&by_cy.token_hash).await.expect("found").operator_disabled, "cy is disabled");
    // …and who had it issued.
    assert!(!db.store.credential(&by_cy.token_hash).await.expect("found").issuer_disabled);
    db.store.disable_principal(&bob.id, Utc::now(), &[], &[event("principal.disabled", "p")]).await.expect("off");
    assert!(db.store.credential(&by_cy.token_hash).await.expect("found").issuer_disabled, "bob is disabled");
}
