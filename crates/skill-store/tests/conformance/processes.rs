//! Processes: a version never changes and runs as an agent; an instance moves while running and
//! stays as it ended, one open step at a time; a call stands on a process basis only while its
//! step's row is open, for exactly the version and inputs fixed there, by the process's agent,
//! once — and a claim reads where that step and its instance are.

use chrono::Utc;
use serde_json::json;
use skill_api::{Basis, InstanceStatus, PrincipalKind, StepStatus};
use skill_contract::process::ProcessSpec;
use skill_store::ErrorKind;
use skill_store::records::{InstanceRecord, ProcessRecord, StepRecord, TaskRecord, WorkChange};

use crate::calls::{insert, pending, setup};
use crate::fixture::{Db, event, id, principal};
use crate::work::{approval, decided, task};

fn spec() -> ProcessSpec {
    skill_contract::process::read_spec(&json!({
        "version": "1", "identity": {"agent": "desk"},
        "steps": [{"id": "send", "call": {"skill": "claim.lookup@1"}}]
    }))
    .expect("a process")
}

fn process(agent: &str, publisher: &str, version: &str) -> ProcessRecord {
    ProcessRecord {
        id: id(),
        key: "follow-up".into(),
        version: version.into(),
        spec: spec(),
        agent_principal_id: agent.into(),
        package_key: None,
        published_by: publisher.into(),
        created_at: Utc::now(),
    }
}

fn instance(process: &ProcessRecord, workspace: &str, key: &str, by: &str) -> InstanceRecord {
    let now = Utc::now();
    InstanceRecord {
        id: id(),
        process_id: process.id.clone(),
        process_key: process.key.clone(),
        workspace_id: workspace.into(),
        key: key.into(),
        input: json!({}),
        vars: json!({}),
        status: InstanceStatus::Running,
        at_step: Some("send".into()),
        wake_at: Some(now),
        error: None,
        started_by: by.into(),
        row_version: 1,
        created_at: now,
        updated_at: now,
        ended_at: None,
        initiators: Vec::new(),
    }
}

fn step(instance: &InstanceRecord, seq: i32, skill: &str) -> StepRecord {
    StepRecord {
        id: id(),
        instance_id: instance.id.clone(),
        seq,
        step_id: "send".into(),
        action: skill_api::StepKind::Call,
        status: StepStatus::Open,
        attempt: 1,
        skill_id: Some(skill.into()),
        inputs: Some(json!({"claim": "c-1"})),
        invocation_id: None,
        task_id: None,
        fact_id: None,
        wait_kind: None,
        output: None,
        error: None,
        wake_at: None,
        row_version: 1,
        started_at: Utc::now(),
        ended_at: None,
        approval_id: None,
    }
}

fn basis(instance: &InstanceRecord, step: &StepRecord, decided_by: &str) -> Basis {
    Basis::Process {
        instance_id: instance.id.clone(),
        activity_id: step.id.clone(),
        step: step.step_id.clone(),
        definition_key: "follow-up".into(),
        definition_version: "1".into(),
        approval_id: step.approval_id.clone().unwrap_or_default(),
        decided_by: decided_by.into(),
    }
}

/// A review of `task` in `instance` at `seq`: a task step, closed done once `decider` (or no
/// one) decided its gate, asked for by `agent`. Answers the gate.
async fn reviewed(
    db: &Db,
    instance: &InstanceRecord,
    seq: i32,
    task: &TaskRecord,
    agent: &str,
    decider: Option<&str>,
) -> String {
    let review = StepRecord {
        step_id: "review".into(),
        action: skill_api::StepKind::Task,
        skill_id: None,
        inputs: None,
        task_id: Some(task.id.clone()),
        ..step(instance, seq, "")
    };
    let asked = approval(task, agent);
    db.store
        .write_work(&[WorkChange::InsertStep(review.clone()), WorkChange::InsertApproval(asked.clone())], &[])
        .await
        .expect("a review");
    if let Some(decider) = decider {
        let approved = decided(&asked, decider, "approved");
        db.store.write_work(&[WorkChange::UpdateApproval(approved)], &[]).await.expect("decided");
    }
    let closed =
        TaskRecord { status: skill_api::TaskStatus::Done, closed_at: Some(Utc::now()), row_version: 2, ..task.clone() };
    let done = StepRecord { status: StepStatus::Done, row_version: 2, ended_at: Some(Utc::now()), ..review };
    db.store.write_work(&[WorkChange::UpdateTask(closed), WorkChange::UpdateStep(done)], &[]).await.expect("closed");
    asked.id
}

pub(crate) async fn a_process_basis_holds_only_while_its_step_is_open(db: Db) {
    let (skill, ana) = setup(&db).await;
    let mut desk = principal("desk");
    desk.kind = PrincipalKind::Agent;
    db.store.create_principal(&desk, &event("principal.created", "p")).await.expect("agent");
    let open_task = task(&db, &ana).await;
    let workspace = open_task.workspace_id.clone();

    // A version runs as an agent, and never changes.
    let as_person = db.store.insert_process(&process(&ana, &ana, "1"), &event("process.published", "p")).await;
    assert!(as_person.expect_err("a person").to_string().contains("invalid_process"));
    let published = process(&desk.id, &ana, "1");
    db.store.insert_process(&published, &event("process.published", "p")).await.expect("published");
    let again = db.store.insert_process(&ProcessRecord { id: id(), ..published.clone() }, &event("p", "p")).await;
    assert_eq!(again.expect_err("once").kind(), ErrorKind::Conflict);
    for sql in [
        format!("UPDATE processes SET version = '9' WHERE id = '{}'", published.id),
        format!("DELETE FROM processes WHERE id = '{}'", published.id),
    ] {
        let error = db.raw.execute(&sql).await.expect_err("immutable").to_string();
        assert!(error.contains("process_immutable"), "{sql}: {error}");
    }

    // One instance per workspace, process and key; one open step at a time.
    let running = instance(&published, &workspace, "k", &ana);
    db.store.write_work(&[WorkChange::InsertInstance(running.clone())], &[]).await.expect("started");
    let twin = InstanceRecord { id: id(), ..running.clone() };
    let taken = db.store.write_work(&[WorkChange::InsertInstance(twin)], &[]).await.expect_err("the key");
    assert_eq!(taken.kind(), ErrorKind::Conflict);
    // Its review, decided by bob (not ana, who started it).
    let bob = principal("bob");
    db.store.create_principal(&bob, &event("principal.created", "p")).await.expect("bob");
    let gate = reviewed(&db, &running, 1, &open_task, &desk.id, Some(&bob.id)).await;
    let open = StepRecord { approval_id: Some(gate.clone()), ..step(&running, 2, &skill.id) };
    db.store.write_work(&[WorkChange::InsertStep(open.clone())], &[]).await.expect("a step");
    let second = db.store.write_work(&[WorkChange::InsertStep(step(&running, 3, &skill.id))], &[]).await;
    assert_eq!(second.expect_err("one open step").kind(), ErrorKind::Conflict);
    let no_skill = StepRecord { skill_id: None, ..step(&running, 3, &skill.id) };
    let refused = db.store.write_work(&[WorkChange::InsertStep(no_skill)], &[]).await.expect_err("a call's version");
    assert_eq!(refused.kind(), ErrorKind::Invalid);
    let sql = format!("UPDATE process_steps SET approval_id = NULL, row_version = 2 WHERE id = '{}'", open.id);
    let refused = db.raw.execute(&sql).await.expect_err("the decision is fixed").to_string();
    assert!(refused.contains("invalid_status_transition"), "{refused}");

    // A call on the step's basis: only exactly what the step fixed, by the process's agent, on
    // the decision the step fixed and by whom it was made.
    let mut call = pending(&skill, &desk.id, "local", "claims.lookup", Some("process:a"));
    call.authorization_basis = Some(basis(&running, &open, &bob.id));
    let mut not_the_decider = call.clone();
    not_the_decider.id = id();
    not_the_decider.idempotency_key = Some("process:f".into());
    not_the_decider.authorization_basis = Some(basis(&running, &open, &ana));
    let mut other_inputs = call.clone();
    other_inputs.id = id();
    other_inputs.idempotency_key = Some("process:b".into());
    other_inputs.inputs = json!({"claim": "c-2"});
    let mut by_a_person = call.clone();
    by_a_person.id = id();
    by_a_person.idempotency_key = Some("process:c".into());
    by_a_person.authority_principal_id = ana.clone();
    by_a_person.requested_by_ref = ana.clone();
    for refused in [&other_inputs, &by_a_person, &not_the_decider] {
        let error = db.store.insert_invocation(refused, &event("skill.invocation_requested", "c")).await;
        assert!(error.expect_err("not covered").to_string().contains("basis_not_covered"));
    }
    insert(&db, &call).await;
    let mut twice = call.clone();
    twice.id = id();
    twice.idempotency_key = Some("process:d".into());
    let error = db.store.insert_invocation(&twice, &event("skill.invocation_requested", "c")).await;
    assert_eq!(error.expect_err("once per step run").kind(), ErrorKind::Conflict);

    // A decision taken on a closed task is refused, whatever the code read before.
    let late = approval(&open_task, &desk.id);
    db.store.write_work(&[WorkChange::InsertApproval(late.clone())], &[]).await.expect("asked");
    let error = db.store.write_work(&[WorkChange::UpdateApproval(decided(&late, &bob.id, "approved"))], &[]).await;
    assert!(error.expect_err("a closed task").to_string().contains("task_terminal"));
    // One decision, one write: another step run naming the same decision is refused.
    let reused = StepRecord {
        approval_id: Some(gate.clone()),
        step_id: "again".into(),
        status: StepStatus::Done,
        ended_at: Some(Utc::now()),
        ..step(&running, 9, &skill.id)
    };
    let error = db.store.write_work(&[WorkChange::InsertStep(reused)], &[]).await.expect_err("used once");
    assert!(matches!(error.kind(), ErrorKind::Conflict), "{error}");

    // A review its starter decided, or no one, covers no write.
    for (key, starter, decider) in [("own", bob.id.clone(), Some(bob.id.clone())), ("none", ana.clone(), None)] {
        let other = instance(&published, &workspace, key, &starter);
        db.store.write_work(&[WorkChange::InsertInstance(other.clone())], &[]).await.expect("started");
        let reviewed_task = TaskRecord { id: id(), ..open_task.clone() };
        db.store.write_work(&[WorkChange::InsertTask(reviewed_task.clone())], &[]).await.expect("a task");
        let gate = reviewed(&db, &other, 1, &reviewed_task, &desk.id, decider.as_deref()).await;
        let send = StepRecord { approval_id: Some(gate), ..step(&other, 2, &skill.id) };
        db.store.write_work(&[WorkChange::InsertStep(send.clone())], &[]).await.expect("a step");
        let mut write = call.clone();
        write.id = id();
        write.idempotency_key = Some(format!("process:{key}"));
        write.authorization_basis = Some(basis(&other, &send, decider.as_deref().unwrap_or("bob")));
        let error = db.store.insert_invocation(&write, &event("skill.invocation_requested", "c")).await;
        assert!(error.expect_err("undecided").to_string().contains("basis_not_covered"), "{key}");
    }

    // Closed, the step covers nothing more, and stays closed.
    let closed = StepRecord { status: StepStatus::Closed, row_version: 2, ended_at: Some(Utc::now()), ..open.clone() };
    db.store.write_work(&[WorkChange::UpdateStep(closed.clone())], &[]).await.expect("closed");
    let reopened = StepRecord { status: StepStatus::Open, row_version: 3, ended_at: None, ..closed.clone() };
    let error = db.store.write_work(&[WorkChange::UpdateStep(reopened)], &[]).await.expect_err("stays closed");
    assert!(error.to_string().contains("invalid_status_transition"), "{error}");
    let mut late = call.clone();
    late.id = id();
    late.idempotency_key = Some("process:e".into());
    late.authorization_basis = Some(basis(&running, &closed, &bob.id));
    let error = db.store.insert_invocation(&late, &event("skill.invocation_requested", "c")).await;
    assert!(error.expect_err("a closed step").to_string().contains("basis_not_covered"));

    // An ended instance stays as it ended, and no step opens in it.
    let ended = InstanceRecord {
        status: InstanceStatus::Cancelled,
        row_version: 2,
        ended_at: Some(Utc::now()),
        wake_at: None,
        ..running.clone()
    };
    db.store.write_work(&[WorkChange::UpdateInstance(ended.clone())], &[]).await.expect("cancelled");
    let revived = InstanceRecord { status: InstanceStatus::Running, row_version: 3, ended_at: None, ..ended };
    let error = db.store.write_work(&[WorkChange::UpdateInstance(revived)], &[]).await.expect_err("final");
    assert!(error.to_string().contains("invalid_status_transition"), "{error}");
    let error = db.store.write_work(&[WorkChange::InsertStep(step(&running, 4, &skill.id))], &[]).await;
    assert!(error.expect_err("not running").to_string().contains("invalid_status_transition"));
    for sql in [
        format!("DELETE FROM process_steps WHERE id = '{}'", open.id),
        format!("DELETE FROM process_instances WHERE id = '{}'", running.id),
    ] {
        let error = db.raw.execute(&sql).await.expect_err("kept").to_string();
        assert!(error.contains("work_immutable"), "{sql}: {error}");
    }
    let steps = db.store.steps(&running.id).await.expect("steps");
    assert_eq!(
        steps.iter().map(|s| (s.seq, s.status)).collect::<Vec<_>>(),
        [(1, StepStatus::Done), (2, StepStatus::Closed)]
    );
    assert_eq!(
        db.store.instance_by_key(&workspace, "follow-up", "k").await.expect("read").map(|i| i.id),
        Some(running.id)
    );
}
