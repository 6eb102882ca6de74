//! Facts, work rules and their evaluations: one fact per workspace, kind and key, evaluated once;
//! a rule acts as an agent and interprets with a version that does not write; an evaluation
//! moves as its lifecycle allows; a work key names one task per workspace.

use chrono::{Duration, Utc};
use serde_json::json;
use skill_api::{CallStatus, Lifecycle, PrincipalKind, RuleEvaluationStatus};
use skill_contract::SideEffects;
use skill_contract::rule::RuleSpec;
use skill_store::ErrorKind;
use skill_store::records::{FactRecord, RuleEvaluationRecord, RuleRecord, TaskOriginRecord, TaskRecord, WorkChange};

use crate::calls::{insert, pending, setup};
use crate::fixture::{Db, event, id, leaf, principal, publish};
use crate::work::task;

fn fact(task: &TaskRecord, recorder: &str, key: &str) -> FactRecord {
    let now = Utc::now();
    FactRecord {
        id: id(),
        workspace_id: task.workspace_id.clone(),
        kind: "claim.received".into(),
        key: key.into(),
        data: json!({"text": "The courier never came."}),
        occurred_at: now,
        source: Some("email".into()),
        depth: 0,
        caused_by_task: None,
        recorded_by: recorder.into(),
        created_at: now,
        evaluated_at: None,
        initiators: Vec::new(),
    }
}

fn spec() -> RuleSpec {
    skill_contract::rule::read_spec(&json!({
        "version": "1", "identity": {"agent": "intake"}, "on": {"kind": "claim.received"},
        "ensureWork": [{"task": {"type": "claim-reply@1", "workKey": "$.fact.key", "title": "A claim"}}]
    }))
    .expect("a rule")
}

fn rule(key: &str, version: &str, agent: &str, publisher: &str, interpretation: Option<&str>) -> RuleRecord {
    RuleRecord {
        id: id(),
        key: key.into(),
        version: version.into(),
        kind: "claim.received".into(),
        spec: spec(),
        agent_principal_id: agent.into(),
        interpretation_skill_id: interpretation.map(str::to_owned),
        package_key: None,
        published_by: publisher.into(),
        created_at: Utc::now(),
    }
}

fn evaluation(fact: &FactRecord, rule: &RuleRecord, status: RuleEvaluationStatus) -> RuleEvaluationRecord {
    let now = Utc::now();
    RuleEvaluationRecord {
        id: id(),
        fact_id: fact.id.clone(),
        rule_id: rule.id.clone(),
        status,
        invocation_id: None,
        asks: 1,
        task_ids: Vec::new(),
        instance_ids: Vec::new(),
        artifact_id: None,
        error: None,
        row_version: 1,
        created_at: now,
        updated_at: now,
        ended_at: status.is_terminal().then_some(now),
    }
}

/// An agent principal a rule may act as.
async fn agent(db: &Db, name: &str) -> String {
    let mut agent = principal(name);
    agent.kind = PrincipalKind::Agent;
    db.store.create_principal(&agent, &event("principal.created", "p")).await.expect("agent");
    agent.id
}

pub(crate) async fn a_fact_is_one_per_key_and_evaluated_once(db: Db) {
    let (_, ana) = setup(&db).await;
    let open = task(&db, &ana).await;
    let first = fact(&open, &ana, "C-1");
    db.store.insert_fact(&first, &event("fact.recorded", "f")).await.expect("a fact");
    let again = FactRecord { id: id(), data: json!({"text": "other"}), ..first.clone() };
    let taken = db.store.insert_fact(&again, &event("fact.recorded", "f")).await.expect_err("the key is taken");
    assert_eq!(taken.kind(), ErrorKind::Conflict);
    let found = db.store.fact_by_key(&open.workspace_id, "claim.received", "C-1").await.expect("read");
    assert_eq!(found.as_ref().map(|f| (&f.id, &f.data)), Some((&first.id, &first.data)));
    assert_eq!(db.store.unevaluated_facts(10).await.expect("pending").len(), 1);

    let evaluated = WorkChange::FactEvaluated { fact_id: first.id.clone(), at: Utc::now() };
    db.store.write_work(std::slice::from_ref(&evaluated), &[]).await.expect("evaluated");
    let twice = db.store.write_work(&[evaluated], &[]).await.expect_err("evaluated once");
    assert_eq!(twice.kind(), ErrorKind::Stale);
    assert!(db.store.unevaluated_facts(10).await.expect("pending").is_empty());

    for change in ["data = '{}'", "key = 'C-2'", "depth = 3", "evaluated_at = NULL"] {
        let sql = format!("UPDATE facts SET {change} WHERE id = '{}'", first.id);
        let error = db.raw.execute(&sql).await.expect_err(change).to_string();
        assert!(error.contains("work_immutable"), "{change}: {error}");
    }
    let error = db.raw.execute(&format!("DELETE FROM facts WHERE id = '{}'", first.id)).await.expect_err("kept");
    assert!(error.to_string().contains("work_immutable"), "{error}");

    // Newest first, by kind, in pages.
    for n in 2..=4 {
        db.store.insert_fact(&fact(&open, &ana, &format!("C-{n}")), &event("fact.recorded", "f")).await.expect("fact");
    }
    let page = db.store.facts(&open.workspace_id, Some("claim.received"), None, 2).await.expect("facts");
    assert_eq!(page.iter().map(|f| f.key.as_str()).collect::<Vec<_>>(), ["C-4", "C-3"]);
    let last = page.last().map(|f| (f.created_at, f.id.clone()));
    let next = db.store.facts(&open.workspace_id, None, last, 10).await.expect("facts");
    assert_eq!(next.iter().map(|f| f.key.as_str()).collect::<Vec<_>>(), ["C-2", "C-1"]);
    assert!(db.store.facts(&open.workspace_id, Some("other"), None, 10).await.expect("facts").is_empty());
}

pub(crate) async fn a_rule_acts_as_an_agent_and_never_interprets_with_a_write(db: Db) {
    let (reading, ana) = setup(&db).await;
    let bot = agent(&db, "intake").await;
    let mut writing = leaf("claim.send_reply", "1");
    writing.side_effects = Some(SideEffects::ExternalWrite);
    publish(&db, &writing).await;

    let as_person = db.store.insert_rule(&rule("r", "1", &ana, &ana, None), &event("rule.published", "r")).await;
    assert!(as_person.expect_err("a person").to_string().contains("invalid_rule"));
    let writes = rule("r", "1", &bot, &ana, Some(&writing.id));
    let refused = db.store.insert_rule(&writes, &event("rule.published", "r")).await.expect_err("a write");
    assert!(refused.to_string().contains("rule_skill_side_effects"), "{refused}");

    let first = rule("intake", "1", &bot, &ana, Some(&reading.id));
    db.store.insert_rule(&first, &event("rule.published", "r")).await.expect("a rule");
    let again = RuleRecord { id: id(), ..first.clone() };
    let taken = db.store.insert_rule(&again, &event("rule.published", "r")).await.expect_err("published once");
    assert_eq!(taken.kind(), ErrorKind::Conflict);
    let second = rule("intake", "2", &bot, &ana, Some(&reading.id));
    db.store.insert_rule(&second, &event("rule.published", "r")).await.expect("a version");
    let other = rule("audit", "1", &bot, &ana, None);
    db.store.insert_rule(&other, &event("rule.published", "r")).await.expect("another rule");

    let newest: Vec<_> =
        db.store.rules_for_kind("claim.received").await.expect("rules").into_iter().map(|r| r.id).collect();
    assert_eq!(newest, [other.id.clone(), second.id.clone()], "the newest version of each key");
    assert_eq!(db.store.newest_rule("intake").await.expect("newest").id, second.id);
    assert_eq!(db.store.rule_version("intake", "1").await.expect("v1").spec, first.spec);
    let listed = db.store.rules(Some("intake"), None, Some(&first.id), 10).await.expect("after v1");
    assert_eq!(listed.iter().map(|r| r.version.as_str()).collect::<Vec<_>>(), ["2"]);

    for sql in [
        format!("UPDATE rules SET version = '9' WHERE id = '{}'", first.id),
        format!("DELETE FROM rules WHERE id = '{}'", first.id),
    ] {
        let error = db.raw.execute(&sql).await.expect_err("immutable").to_string();
        assert!(error.contains("rule_immutable"), "{sql}: {error}");
    }
}

pub(crate) async fn evaluations_move_as_their_lifecycle_allows(db: Db) {
    let (skill, ana) = setup(&db).await;
    let bot = agent(&db, "intake").await;
    let open = task(&db, &ana).await;
    let the_rule = rule("intake", "1", &bot, &ana, Some(&skill.id));
    db.store.insert_rule(&the_rule, &event("rule.published", "r")).await.expect("a rule");
    let create = async |initial: RuleEvaluationStatus| {
        let the_fact = fact(&open, &ana, &id());
        db.store.insert_fact(&the_fact, &event("fact.recorded", "f")).await.expect("a fact");
        let row = evaluation(&the_fact, &the_rule, initial);
        db.store.write_work(&[WorkChange::InsertEvaluation(row.clone())], &[]).await.expect("evaluated");
        row
    };
    let step = async |row: RuleEvaluationRecord, to: RuleEvaluationStatus| {
        let now = Utc::now();
        let invocation_id = match (&row.invocation_id, to) {
            (Some(call), _) => Some(call.clone()),
            (None, RuleEvaluationStatus::Waiting) => {
                let call = pending(&skill, &bot, "local", "claims.lookup", None);
                insert(&db, &call).await;
                Some(call.id)
            }
            (None, _) => None,
        };
        let next = RuleEvaluationRecord {
            status: to,
            invocation_id,
            row_version: row.row_version + 1,
            updated_at: now,
            ended_at: to.is_terminal().then_some(now),
            ..row
        };
        db.store.write_work(&[WorkChange::UpdateEvaluation(next.clone())], &[]).await.map(|()| next)
    };
    // An evaluation starts matched or not matched (a failed one is written as matched would move).
    let initials = [RuleEvaluationStatus::Matched, RuleEvaluationStatus::NotMatched];
    crate::moves::every_move_from("evaluation", &initials, create, step).await;
}

pub(crate) async fn a_work_key_names_one_task_and_a_waiting_evaluation_moves_when_its_call_ends(db: Db) {
    let (skill, ana) = setup(&db).await;
    let bot = agent(&db, "intake").await;
    let open = task(&db, &ana).await;
    let elsewhere = task(&db, &ana).await;
    let the_rule = rule("intake", "1", &bot, &ana, Some(&skill.id));
    db.store.insert_rule(&the_rule, &event("rule.published", "r")).await.expect("a rule");
    let the_fact = fact(&open, &ana, "C-1");
    db.store.insert_fact(&the_fact, &event("fact.recorded", "f")).await.expect("a fact");
    let call = pending(&skill, &bot, "local", "claims.lookup", None);
    insert(&db, &call).await;
    let waiting = RuleEvaluationRecord {
        invocation_id: Some(call.id.clone()),
        ..evaluation(&the_fact, &the_rule, RuleEvaluationStatus::Waiting)
    };
    db.store.write_work(&[WorkChange::InsertEvaluation(waiting.clone())], &[]).await.expect("waiting");
    let twice = evaluation(&the_fact, &the_rule, RuleEvaluationStatus::NotMatched);
    let refused = db.store.write_work(&[WorkChange::InsertEvaluation(twice)], &[]).await.expect_err("one per rule");
    assert_eq!(refused.kind(), ErrorKind::Conflict);

    // A waiting evaluation moves once its call ended, or once it waited too long.
    let soon = Utc::now() - Duration::hours(24);
    assert!(db.store.movable_evaluations(soon, 10).await.expect("movable").is_empty(), "its call runs");
    let later = Utc::now() + Duration::seconds(1);
    assert_eq!(db.store.movable_evaluations(later, 10).await.expect("movable").len(), 1, "it waited too long");
    let ended = crate::moves::call_in(call.clone(), CallStatus::Cancelled, &bot);
    db.store.update_invocation(&ended, &[]).await.expect("the call ended");
    assert_eq!(db.store.movable_evaluations(soon, 10).await.expect("movable").len(), 1, "its call ended");

    // Asked again: waiting on a new call, its ask counted, at most three in all.
    let again = fact(&open, &ana, "C-2");
    db.store.insert_fact(&again, &event("fact.recorded", "f")).await.expect("a fact");
    let first_call = pending(&skill, &bot, "local", "claims.lookup", None);
    insert(&db, &first_call).await;
    let asked = RuleEvaluationRecord {
        invocation_id: Some(first_call.id.clone()),
        ..evaluation(&again, &the_rule, RuleEvaluationStatus::Waiting)
    };
    db.store.write_work(&[WorkChange::InsertEvaluation(asked.clone())], &[]).await.expect("waiting");
    let mut latest = asked;
    for ask in 2..=4 {
        let call = pending(&skill, &bot, "local", "claims.lookup", None);
        insert(&db, &call).await;
        let moved = |asks: i32, call: &str| RuleEvaluationRecord {
            invocation_id: Some(call.to_owned()),
            asks,
            row_version: latest.row_version + 1,
            ..latest.clone()
        };
        let uncounted = db.store.write_work(&[WorkChange::UpdateEvaluation(moved(latest.asks, &call.id))], &[]).await;
        assert!(uncounted.is_err(), "a new call is a new ask");
        let same_call = db
            .store
            .write_work(
                &[WorkChange::UpdateEvaluation(moved(ask, latest.invocation_id.as_deref().unwrap_or_default()))],
                &[],
            )
            .await;
        assert!(same_call.is_err(), "an ask is a new call");
        let next = moved(ask, &call.id);
        let written = db.store.write_work(&[WorkChange::UpdateEvaluation(next.clone())], &[]).await;
        if ask <= 3 {
            written.expect("asked again");
            latest = next;
        } else {
            assert!(written.is_err(), "three asks at most");
        }
    }

    let origin = |task: &TaskRecord, key: &str| TaskOriginRecord {
        task_id: task.id.clone(),
        workspace_id: task.workspace_id.clone(),
        work_key: key.into(),
        fact_id: the_fact.id.clone(),
        evaluation_id: waiting.id.clone(),
        created_at: Utc::now(),
    };
    db.store.write_work(&[WorkChange::InsertTaskOrigin(origin(&open, "C-1"))], &[]).await.expect("an origin");
    let found = db.store.origin_by_work_key(&open.workspace_id, "C-1").await.expect("read");
    assert_eq!(found.map(|o| o.task_id), Some(open.id.clone()));
    assert_eq!(db.store.task_origin(&open.id).await.expect("read").map(|o| o.work_key), Some("C-1".to_owned()));
    // Another task of the same workspace under the same work key: the key names one task.
    let other = TaskRecord { id: id(), ..open.clone() };
    db.store.write_work(&[WorkChange::InsertTask(other.clone())], &[]).await.expect("another task");
    let refused =
        db.store.write_work(&[WorkChange::InsertTaskOrigin(origin(&other, "C-1"))], &[]).await.expect_err("taken");
    assert_eq!(refused.kind(), ErrorKind::Conflict, "{refused}");
    db.store.write_work(&[WorkChange::InsertTaskOrigin(origin(&other, "C-2"))], &[]).await.expect("its own key");
    // The other workspace's task under the fact's workspace: refused.
    let crossed = TaskOriginRecord { workspace_id: open.workspace_id.clone(), ..origin(&elsewhere, "C-9") };
    let refused = db.store.write_work(&[WorkChange::InsertTaskOrigin(crossed)], &[]).await.expect_err("one workspace");
    assert!(refused.to_string().contains("invalid_rule"), "{refused}");
    let sql = format!("UPDATE task_origins SET work_key = 'x' WHERE task_id = '{}'", open.id);
    let error = db.raw.execute(&sql).await.expect_err("fixed").to_string();
    assert!(error.contains("work_immutable"), "{error}");
}
