//! Invocations and executor sessions: insert-or-nothing on the key, version-checked writes, the
//! executor's admission, lease expiry, sessions that end their leases, and the database's guards.

use chrono::{Duration, Utc};
use serde_json::json;
use skill_api::{CallStatus, RequesterKind, SessionStatus};
use skill_contract::codes::Code;
use skill_store::records::{Admission, BasisState, Inserted, InvocationRecord, SessionRecord, SkillRecord};
use skill_store::{Decision, ErrorKind};

use crate::fixture::{Db, Raw, event, failure, id, leaf, principal, publish};

/// A published version and a person who calls it.
pub(crate) async fn setup(db: &Db) -> (SkillRecord, String) {
    let skill = leaf("claim.lookup", "1");
    publish(db, &skill).await;
    let ana = principal("ana");
    db.store.create_principal(&ana, &event("principal.created", "principal:ana")).await.expect("ana");
    (skill, ana.id)
}

pub(crate) fn pending(
    skill: &SkillRecord,
    authority: &str,
    protocol: &str,
    target: &str,
    key: Option<&str>,
) -> InvocationRecord {
    let now = Utc::now();
    InvocationRecord {
        id: id(),
        skill_id: skill.id.clone(),
        protocol: protocol.to_owned(),
        target: target.to_owned(),
        audience: None,
        inputs: json!({"claim": "c-1"}),
        requested_by_kind: RequesterKind::Principal,
        requested_by_ref: authority.to_owned(),
        authority_principal_id: authority.to_owned(),
        authorization_basis: None,
        idempotency_key: key.map(str::to_owned),
        status: CallStatus::Pending,
        attempt: 0,
        max_attempts: 3,
        available_at: now,
        output: None,
        error: None,
        cost: None,
        fencing_token: 0,
        executor_principal_id: None,
        executor_session_id: None,
        lease_expires_at: None,
        heartbeat_at: None,
        task_id: None,
        run_id: None,
        artifact_id: None,
        row_version: 1,
        created_at: now,
        updated_at: now,
        started_at: None,
        attempt_started_at: None,
        finished_at: None,
        traceparent: Some("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01".into()),
    }
}

/// An active session of `executor`, open for a minute, admitting nothing in particular.
pub(crate) async fn open_session(db: &Db, executor: &str) -> SessionRecord {
    session_admitting(db, executor, json!({})).await
}

/// An active session of `executor`, open for a minute, that last claimed with `admission`.
pub(crate) async fn session_admitting(db: &Db, executor: &str, admission: serde_json::Value) -> SessionRecord {
    let now = Utc::now();
    let session = SessionRecord {
        id: id(),
        principal_id: executor.to_owned(),
        status: skill_api::SessionStatus::Active,
        capabilities: json!([]),
        admission: serde_json::from_value(admission).expect("an admission"),
        created_at: now,
        heartbeat_at: now,
        expires_at: now + Duration::seconds(60),
        closed_at: None,
        row_version: 1,
        draining_at: None,
    };
    db.store.insert_session(&session, &event("executor.session_opened", "session")).await.expect("session");
    session
}

pub(crate) async fn insert(db: &Db, call: &InvocationRecord) {
    let inserted = db.store.insert_invocation(call, &event("skill.invocation_requested", "call")).await;
    assert!(matches!(inserted.expect("inserted"), Inserted::New { .. }));
}

/// The running form of `call`, taken by `executor` with a lease of `lease` seconds.
pub(crate) fn claimed(call: &InvocationRecord, executor: &str, lease: i64) -> InvocationRecord {
    let now = Utc::now();
    InvocationRecord {
        status: CallStatus::Running,
        attempt: call.attempt + 1,
        fencing_token: call.fencing_token + 1,
        executor_principal_id: Some(executor.to_owned()),
        lease_expires_at: Some(now + Duration::seconds(lease)),
        heartbeat_at: Some(now),
        started_at: call.started_at.or(Some(now)),
        attempt_started_at: Some(now),
        row_version: call.row_version + 1,
        updated_at: now,
        ..call.clone()
    }
}

pub(crate) async fn a_key_names_one_call_and_writes_check_the_row_version(db: Db) {
    let (skill, ana) = setup(&db).await;
    let first = pending(&skill, &ana, "local", "claims.lookup", Some("k-1"));
    insert(&db, &first).await;
    // The same key again, even with other inputs: nothing written, the first call returned.
    let again =
        InvocationRecord { inputs: json!({"claim": "other"}), ..pending(&skill, &ana, "local", "x", Some("k-1")) };
    match db.store.insert_invocation(&again, &event("skill.invocation_requested", "call")).await.expect("answer") {
        Inserted::Existing(existing) => assert_eq!(existing.id, first.id),
        Inserted::New { .. } => panic!("a second call with one key"),
    }
    assert_eq!(db.store.invocation(&again.id).await.expect_err("not written").kind(), ErrorKind::NotFound);
    // Calls without a key never collide.
    insert(&db, &pending(&skill, &ana, "local", "claims.lookup", None)).await;
    insert(&db, &pending(&skill, &ana, "local", "claims.lookup", None)).await;

    let running = claimed(&first, &ana, 60);
    db.store.update_invocation(&running, &[event("skill.invocation_claimed", "call")]).await.expect("claimed");
    let stored = db.store.invocation(&first.id).await.expect("stored");
    assert_eq!(
        (stored.status.as_str(), stored.attempt, stored.fencing_token, stored.row_version),
        ("running", 1, 1, 2)
    );
    // The trace it was made in stays with it.
    assert_eq!(stored.traceparent, first.traceparent);
    assert!(stored.traceparent.is_some());
    // A second writer computed from the same read loses.
    let error = db.store.update_invocation(&running, &[]).await.expect_err("stale");
    assert_eq!(error.kind(), ErrorKind::Stale, "{error}");

    // Two first calls with one key at once: one row.
    let racers: Vec<InvocationRecord> =
        (0..4).map(|_| pending(&skill, &ana, "local", "claims.lookup", Some("race"))).collect();
    let events: Vec<_> = racers.iter().map(|_| event("skill.invocation_requested", "call")).collect();
    let inserts = racers.iter().zip(&events).map(|(call, event)| db.store.insert_invocation(call, event));
    let outcomes = futures::future::join_all(inserts).await;
    let new = outcomes.iter().filter(|outcome| matches!(outcome, Ok(Inserted::New { .. }))).count();
    assert_eq!(new, 1, "{outcomes:?}");
    assert!(outcomes.iter().all(Result::is_ok), "{outcomes:?}");
}

pub(crate) async fn executors_are_admitted_by_entrypoint_origin_and_audience(db: Db) {
    let (skill, ana) = setup(&db).await;
    let local = pending(&skill, &ana, "local", "claims.lookup", None);
    let http = pending(&skill, &ana, "http", "https://svc.example/lookup", None);
    let port = pending(&skill, &ana, "http", "https://svc.example:443/lookup", None);
    let sibling = pending(&skill, &ana, "http", "https://svc.example.evil/x", None);
    let audience = InvocationRecord {
        audience: Some("claims-api".to_owned()),
        ..pending(&skill, &ana, "http", "https://svc.example/a", None)
    };
    let stdio = pending(&skill, &ana, "mcp", "stdio:Tools", None);
    let later = InvocationRecord {
        available_at: Utc::now() + Duration::seconds(60),
        ..pending(&skill, &ana, "local", "claims.lookup", None)
    };
    for call in [&local, &http, &port, &sibling, &audience, &stdio, &later] {
        insert(&db, call).await;
    }
    let ids = |calls: Vec<InvocationRecord>| calls.into_iter().map(|call| call.id).collect::<Vec<_>>();
    let now = Utc::now();
    let take = |admission: Admission| {
        let store = db.store.clone();
        async move { ids(store.claimable(&admission, now, 20).await.expect("claimable")) }
    };
    assert_eq!(
        take(Admission { local_entrypoints: vec!["claims.lookup".into()], ..Admission::default() }).await,
        [local.id.as_str()]
    );
    assert_eq!(
        take(Admission { local_entrypoints: vec!["claims".into()], ..Admission::default() }).await,
        Vec::<String>::new()
    );
    // An origin admits its own endpoints, compared as strings; an audience must be declared.
    let origin = Admission { http_origins: vec!["https://svc.example".into()], ..Admission::default() };
    assert_eq!(take(origin.clone()).await, [http.id.as_str()]);
    let with_audience = Admission { audiences: vec!["claims-api".into()], ..origin };
    assert_eq!(take(with_audience).await, [http.id.clone(), audience.id.clone()]);
    let with_port = Admission { http_origins: vec!["https://svc.example:443".into()], ..Admission::default() };
    assert_eq!(take(with_port).await, [port.id.as_str()]);
    // `stdio:<name>` is exact, case and all.
    assert_eq!(
        take(Admission { mcp_endpoints: vec!["stdio:tools".into()], ..Admission::default() }).await,
        Vec::<String>::new()
    );
    assert_eq!(
        take(Admission { mcp_endpoints: vec!["stdio:Tools".into()], ..Admission::default() }).await,
        [stdio.id.as_str()]
    );
    // One named call only.
    let named = Admission {
        local_entrypoints: vec!["claims.lookup".into()],
        invocation_id: Some(later.id.clone()),
        ..Admission::default()
    };
    assert_eq!(take(named).await, Vec::<String>::new(), "not available yet");
}

pub(crate) async fn leases_expire_and_sessions_end_their_leases(db: Db) {
    let (skill, ana) = setup(&db).await;
    let short = pending(&skill, &ana, "local", "claims.lookup", None);
    let long = pending(&skill, &ana, "local", "claims.lookup", None);
    insert(&db, &short).await;
    insert(&db, &long).await;
    let now = Utc::now();
    let session = SessionRecord {
        id: id(),
        principal_id: ana.clone(),
        status: SessionStatus::Active,
        capabilities: json!(["skills.protocol.local"]),
        admission: serde_json::from_value(json!({"localEntrypoints": ["claims.lookup"],
                                                 "httpOrigins": ["https://svc.example"],
                                                 "mcpEndpoints": ["stdio:Tools"], "audiences": []}))
        .expect("an admission"),
        created_at: now,
        heartbeat_at: now,
        expires_at: now + Duration::seconds(60),
        closed_at: None,
        row_version: 1,
        draining_at: None,
    };
    db.store.insert_session(&session, &event("executor.session_opened", "session")).await.expect("session");
    // What the active session covers, by the claim's own rules.
    for (protocol, target, audience, expected) in [
        ("local", "claims.lookup", None, true),
        ("local", "claims.other", None, false),
        ("http", "https://svc.example/run", None, true),
        ("http", "https://svc.example:443/run", None, false),
        ("http", "https://svc.example/run", Some("api"), false),
        ("mcp", "stdio:Tools", None, true),
        ("mcp", "stdio:tools", None, false),
    ] {
        let covered = db.store.covered(protocol, target, audience, Utc::now()).await.expect("covered");
        assert_eq!(covered, expected, "{protocol} {target} {audience:?}");
        // PostgreSQL answers it with the insert of such a call, by the same rules; SQLite leaves
        // it to the look above.
        let call =
            InvocationRecord { audience: audience.map(str::to_owned), ..pending(&skill, &ana, protocol, target, None) };
        let inserted = db.store.insert_invocation(&call, &event("skill.invocation_requested", "call")).await;
        let answered = match inserted.expect("inserted") {
            Inserted::New { covered } => covered,
            Inserted::Existing(_) => panic!("a new call met another"),
        };
        let wanted = match db.raw {
            Raw::Postgres(_) => Some(expected),
            Raw::Sqlite(_) => None,
        };
        assert_eq!(answered, wanted, "the insert's answer for {protocol} {target} {audience:?}");
    }
    let later = Utc::now() + Duration::seconds(120);
    assert!(
        !db.store.covered("local", "claims.lookup", None, later).await.expect("covered"),
        "an expired session covers nothing"
    );
    let mut expired = claimed(&short, &ana, 60);
    expired.lease_expires_at = Some(now - Duration::milliseconds(1));
    db.store.update_invocation(&expired, &[]).await.expect("claimed");
    let held = InvocationRecord { executor_session_id: Some(session.id.clone()), ..claimed(&long, &ana, 60) };
    db.store.update_invocation(&held, &[]).await.expect("claimed");

    let ended: Vec<String> =
        db.store.expired_leases(Utc::now(), 100).await.expect("expired").into_iter().map(|c| c.id).collect();
    assert_eq!(ended, [short.id.as_str()]);
    let in_session = db.store.session_calls(&session.id).await.expect("calls");
    assert_eq!(in_session.iter().map(|c| c.id.as_str()).collect::<Vec<_>>(), [long.id.as_str()]);

    // Closing the session puts its call back in the queue, in one transaction.
    let closed =
        SessionRecord { status: SessionStatus::Closed, closed_at: Some(Utc::now()), row_version: 2, ..session.clone() };
    let back = InvocationRecord {
        status: CallStatus::Pending,
        executor_principal_id: None,
        executor_session_id: None,
        lease_expires_at: None,
        error: Some(failure("lease_expired", "the session ended", true)),
        row_version: held.row_version + 1,
        ..held.clone()
    };
    // A stale call stops the whole write.
    let stale = InvocationRecord { row_version: held.row_version, ..back.clone() };
    let error = db.store.update_session(&closed, &[stale], &[]).await.expect_err("stale");
    assert_eq!(error.kind(), ErrorKind::Stale);
    assert_eq!(db.store.session(&session.id).await.expect("session").status.as_str(), "active", "nothing written");
    db.store.update_session(&closed, &[back], &[event("executor.session_closed", "session")]).await.expect("closed");
    assert_eq!(db.store.invocation(&long.id).await.expect("call").status.as_str(), "pending");
    assert_eq!(db.store.session(&session.id).await.expect("session").status.as_str(), "closed");
    // A closed session stays closed, even by SQL.
    let sql = format!(
        "UPDATE executor_sessions SET status = 'active', closed_at = NULL, row_version = 3 WHERE id = '{}'",
        session.id
    );
    assert!(db.raw.execute(&sql).await.is_err(), "a closed session reopened");
}

/// What the database refuses of a call, whatever writes it.
pub(crate) async fn calls_are_guarded_by_the_database(db: Db) {
    let (skill, ana) = setup(&db).await;
    let call = pending(&skill, &ana, "local", "claims.lookup", None);
    insert(&db, &call).await;
    let id = &call.id;
    let refused = |sql: String| {
        let raw = &db.raw;
        async move {
            match raw.execute(&sql).await {
                Ok(rows) => panic!("`{sql}` changed {rows} rows"),
                Err(error) => error.to_string(),
            }
        }
    };
    let inputs = match db.raw {
        Raw::Sqlite(_) => "'{\"claim\": \"c-2\"}'",
        Raw::Postgres(_) => "'{\"claim\": \"c-2\"}'::jsonb",
    };
    let error =
        refused(format!("UPDATE skill_invocations SET inputs = {inputs}, row_version = 2 WHERE id = '{id}'")).await;
    assert!(error.contains("invocation_immutable"), "{error}");
    // Running without a lease, or claimed without moving the fencing token.
    let error = refused(format!(
        "UPDATE skill_invocations SET status = 'running', attempt = 1, fencing_token = 1, row_version = 2 WHERE id = '{id}'"
    ))
    .await;
    assert!(error.to_lowercase().contains("check"), "{error}");
    let at = "'2030-01-01T00:00:00+00:00'";
    let error = refused(format!(
        "UPDATE skill_invocations SET status = 'running', attempt = 1, executor_principal_id = '{ana}', \
         lease_expires_at = {at}, attempt_started_at = {at}, row_version = 2 WHERE id = '{id}'"
    ))
    .await;
    assert!(error.contains("invalid_status_transition"), "{error}");
    let error = refused(format!("UPDATE skill_invocations SET row_version = 5 WHERE id = '{id}'")).await;
    assert!(error.contains("row_version_required"), "{error}");
    let error = refused(format!("DELETE FROM skill_invocations WHERE id = '{id}'")).await;
    assert!(error.contains("invocation_immutable"), "{error}");

    // A finished call does not change, not even back to pending.
    let running = claimed(&call, &ana, 60);
    db.store.update_invocation(&running, &[]).await.expect("claimed");
    let done = InvocationRecord {
        status: CallStatus::Succeeded,
        output: Some(json!({"ok": true})),
        lease_expires_at: None,
        finished_at: Some(Utc::now()),
        row_version: running.row_version + 1,
        ..running.clone()
    };
    db.store.update_invocation(&done, &[]).await.expect("succeeded");
    let back = InvocationRecord {
        status: CallStatus::Pending,
        output: None,
        finished_at: None,
        row_version: done.row_version + 1,
        ..done.clone()
    };
    let error = db.store.update_invocation(&back, &[]).await.expect_err("finished");
    assert_eq!(error.kind(), ErrorKind::Refused(Code::InvalidStatusTransition), "{error}");
    // A success without its output is not a success.
    let call = pending(&skill, &ana, "local", "claims.lookup", None);
    insert(&db, &call).await;
    let running = claimed(&call, &ana, 60);
    db.store.update_invocation(&running, &[]).await.expect("claimed");
    let empty = InvocationRecord {
        status: CallStatus::Succeeded,
        lease_expires_at: None,
        finished_at: Some(Utc::now()),
        row_version: running.row_version + 1,
        ..running
    };
    assert_eq!(db.store.update_invocation(&empty, &[]).await.expect_err("no output").kind(), ErrorKind::Invalid);
}

/// The header layer's records: one request per key, the answer replayed, expired keys taken
/// again and purged.
pub(crate) async fn request_keys_keep_one_answer(db: Db) {
    use skill_store::{Begun, StoredAnswer};
    let now = Utc::now();
    let minute = now + Duration::seconds(60);
    let begin = |principal: &'static str, print: &'static str, at| {
        let store = db.store.clone();
        async move { store.begin_request("k-1", principal, print, at, at + Duration::seconds(60)).await.expect("begun") }
    };
    assert_eq!(begin("ana", "p1", now).await, Begun::Fresh);
    assert_eq!(begin("ana", "p1", now).await, Begun::InFlight);
    assert_eq!(begin("bob", "p1", now).await, Begun::Mismatch);
    assert_eq!(begin("ana", "p2", now).await, Begun::Mismatch);
    let answer = StoredAnswer { status: 201, headers: json!({"etag": "\"skill-1\""}), body: b"{\"id\":1}".to_vec() };
    db.store.finish_request("k-1", &answer, now + Duration::hours(24)).await.expect("finished");
    assert_eq!(begin("ana", "p1", minute).await, Begun::Replay(answer.clone()));
    // A day on, the key is free again.
    let later = now + Duration::hours(25);
    assert_eq!(db.store.purge_requests(later, 10).await.expect("purged"), 1);
    assert_eq!(begin("bob", "p3", later).await, Begun::Fresh);
    // A pending key let go is free at once; one never answered is free after its minute.
    db.store.abandon_request("k-1").await.expect("abandoned");
    assert_eq!(begin("ana", "p4", later).await, Begun::Fresh);
    assert_eq!(begin("bob", "p5", later + Duration::seconds(61)).await, Begun::Fresh);
}

/// The claim of `call` by `executor` as the engine makes it: running, with its event.
fn take_by(executor: &str) -> skill_store::Take {
    let executor = executor.to_owned();
    Box::new(move |call: &InvocationRecord, _: &BasisState| {
        Decision::Take(claimed(call, &executor, 60), vec![event("skill.invocation_claimed", "call")])
    })
}

pub(crate) async fn claims_at_once_each_take_their_own_call_in_queue_order(db: Db) {
    let (skill, ana) = setup(&db).await;
    let admission = Admission { local_entrypoints: vec!["claims.lookup".to_owned()], ..Admission::default() };
    let mut queued = Vec::new();
    for minutes in (1..=12).rev() {
        let call = InvocationRecord {
            available_at: Utc::now() - Duration::minutes(minutes),
            ..pending(&skill, &ana, "local", "claims.lookup", None)
        };
        insert(&db, &call).await;
        queued.push(call.id);
    }
    // A claim whose taker declines takes nothing and writes nothing.
    let declined = db
        .store
        .claim(&admission, Utc::now(), Box::new(|_: &InvocationRecord, _: &BasisState| Decision::Stop))
        .await
        .expect("claim");
    assert_eq!(declined, None);
    assert_eq!(db.store.invocation(&queued[0]).await.expect("call").status.as_str(), "pending");

    // Twelve claims at once: twelve different calls, every one of them taken once.
    let claims = (0..12).map(|_| db.store.claim(&admission, Utc::now(), take_by(&ana)));
    let taken = futures::future::join_all(claims).await;
    let mut ids: Vec<String> = taken.into_iter().map(|taken| taken.expect("claim").expect("a call").id).collect();
    ids.sort();
    let mut expected = queued.clone();
    expected.sort();
    assert_eq!(ids, expected, "each call taken once");
    for id in &queued {
        let call = db.store.invocation(id).await.expect("call");
        assert_eq!((call.status.as_str(), call.fencing_token, call.row_version), ("running", 1, 2));
    }
    // Nothing left: the next claim finds nothing.
    assert_eq!(db.store.claim(&admission, Utc::now(), take_by(&ana)).await.expect("claim"), None);

    // Queue order: the call available first is taken first.
    let late = InvocationRecord {
        available_at: Utc::now() - Duration::seconds(1),
        ..pending(&skill, &ana, "local", "claims.lookup", None)
    };
    let early = InvocationRecord {
        available_at: Utc::now() - Duration::seconds(5),
        ..pending(&skill, &ana, "local", "claims.lookup", None)
    };
    insert(&db, &late).await;
    insert(&db, &early).await;
    let first = db.store.claim(&admission, Utc::now(), take_by(&ana)).await.expect("claim").expect("a call");
    assert_eq!(first.id, early.id);

    // Writes that fail beside writes that pass, at once: each answer is its own, and a failed
    // one leaves nothing behind (no row, no event).
    let before = db.store.events(0, None, 10_000).await.expect("events").len();
    let stale = claimed(&early, &ana, 60); // `early` is already at this row version
    let fresh: Vec<InvocationRecord> = (0..6).map(|_| pending(&skill, &ana, "local", "claims.lookup", None)).collect();
    let requested: Vec<_> = fresh.iter().map(|_| event("skill.invocation_requested", "call")).collect();
    let inserts = fresh.iter().zip(&requested).map(|(call, event)| db.store.insert_invocation(call, event));
    let claimed_event = [event("skill.invocation_claimed", "call")];
    let (inserted, lost) =
        futures::future::join(futures::future::join_all(inserts), db.store.update_invocation(&stale, &claimed_event))
            .await;
    assert!(inserted.iter().all(|outcome| matches!(outcome, Ok(Inserted::New { .. }))), "{inserted:?}");
    assert_eq!(lost.expect_err("stale").kind(), ErrorKind::Stale);
    let after = db.store.events(0, None, 10_000).await.expect("events").len();
    assert_eq!(after, before + fresh.len(), "one event per insert, none for the stale write");
}

pub(crate) async fn disabling_a_principal_writes_it_with_its_calls_or_nothing(db: Db) {
    let (skill, ana) = setup(&db).await;
    let call = pending(&skill, &ana, "local", "claims.lookup", None);
    insert(&db, &call).await;
    assert_eq!(db.store.calls_of_principal(&ana).await.expect("calls").len(), 1);
    let cancelled = InvocationRecord {
        status: CallStatus::Cancelled,
        finished_at: Some(Utc::now()),
        error: Some(failure("basis_revoked", "offboarded", false)),
        row_version: call.row_version + 1,
        ..call.clone()
    };
    // A stale call stops the whole write: the principal stays enabled, no event.
    let stale = InvocationRecord { row_version: call.row_version + 2, ..cancelled.clone() };
    let before = db.store.events(0, None, 1000).await.expect("events").len();
    let refused = db.store.disable_principal(&ana, Utc::now(), &[stale], &[event("principal.disabled", "p")]).await;
    assert_eq!(refused.expect_err("stale").kind(), ErrorKind::Stale);
    assert_eq!(db.store.principal(&ana).await.expect("ana").disabled_at, None);
    assert_eq!(db.store.events(0, None, 1000).await.expect("events").len(), before);

    db.store
        .disable_principal(&ana, Utc::now(), &[cancelled], &[event("principal.disabled", "p")])
        .await
        .expect("disabled");
    assert!(db.store.principal(&ana).await.expect("ana").disabled_at.is_some());
    assert_eq!(db.store.invocation(&call.id).await.expect("call").status.as_str(), "cancelled");
    assert!(db.store.calls_of_principal(&ana).await.expect("calls").is_empty(), "nothing open is left");
    let again = db.store.disable_principal(&ana, Utc::now(), &[], &[event("principal.disabled", "p")]).await;
    assert_eq!(again.expect_err("disabled already").kind(), ErrorKind::Conflict);
    let nobody = db.store.disable_principal(&id(), Utc::now(), &[], &[]).await;
    assert_eq!(nobody.expect_err("no principal").kind(), ErrorKind::NotFound);
}

pub(crate) async fn a_claim_with_a_draining_session_takes_nothing(db: Db) {
    let (skill, ana) = setup(&db).await;
    let session = open_session(&db, &ana).await;
    insert(&db, &pending(&skill, &ana, "local", "claims.lookup", None)).await;
    let admission = Admission {
        local_entrypoints: vec!["claims.lookup".to_owned()],
        session_id: Some(session.id.clone()),
        ..Admission::default()
    };
    let drained = SessionRecord { draining_at: Some(Utc::now()), row_version: 2, ..session.clone() };
    db.store.update_session(&drained, &[], &[]).await.expect("drained");
    assert!(db.store.session(&session.id).await.expect("session").draining_at.is_some());
    // Checked in the claim's own transaction: nothing taken with the drained session.
    assert_eq!(db.store.claim(&admission, Utc::now(), take_by(&ana)).await.expect("claim"), None);
    let without = Admission { session_id: None, ..admission };
    assert!(db.store.claim(&without, Utc::now(), take_by(&ana)).await.expect("claim").is_some());
}

/// Updates that arrive at once (PostgreSQL writes them in one statement) each get the answer
/// they would get alone: written with their event, `Stale` for a version already moved (and for
/// the second of two writers of one call), `NotFound` for no such call, and a guard's refusal for
/// the one that breaks a rule — which leaves every other update written.
pub(crate) async fn updates_at_once_each_get_their_own_answer(db: Db) {
    let (skill, ana) = setup(&db).await;
    let mut calls = Vec::new();
    for _ in 0..40 {
        let call = pending(&skill, &ana, "local", "claims.lookup", None);
        insert(&db, &call).await;
        calls.push(call);
    }
    #[derive(Debug, PartialEq)]
    enum Expect {
        Written,
        Stale,
        NotFound,
        Refused,
    }
    let mut updates: Vec<(InvocationRecord, skill_store::records::Event, Expect)> = Vec::new();
    for call in &calls[..30] {
        let subject = format!("skill_invocation:{}", call.id);
        updates.push((claimed(call, &ana, 60), event("skill.invocation_claimed", &subject), Expect::Written));
    }
    for call in &calls[30..34] {
        let ahead = InvocationRecord { row_version: call.row_version + 5, ..claimed(call, &ana, 60) };
        updates.push((ahead, event("skill.invocation_claimed", "ahead"), Expect::Stale));
    }
    for _ in 0..2 {
        let nowhere = pending(&skill, &ana, "local", "claims.lookup", None);
        updates.push((claimed(&nowhere, &ana, 60), event("skill.invocation_claimed", "nowhere"), Expect::NotFound));
    }
    let first_round = updates.len();
    // With a success without its output, which breaks a rule the database keeps.
    let broken = InvocationRecord {
        status: CallStatus::Succeeded,
        finished_at: Some(Utc::now()),
        row_version: calls[34].row_version + 1,
        ..calls[34].clone()
    };
    updates.push((broken, event("skill.invocation_succeeded", "broken"), Expect::Refused));
    for call in &calls[36..40] {
        let subject = format!("skill_invocation:{}", call.id);
        updates.push((claimed(call, &ana, 60), event("skill.invocation_claimed", &subject), Expect::Written));
    }
    for round in [&updates[..first_round], &updates[first_round..]] {
        let answers = futures::future::join_all(
            round.iter().map(|(call, event, _)| db.store.update_invocation(call, std::slice::from_ref(event))),
        )
        .await;
        for ((call, _, expected), answer) in round.iter().zip(&answers) {
            let got = match answer {
                Ok(()) => Expect::Written,
                Err(error) if error.kind() == ErrorKind::Stale => Expect::Stale,
                Err(error) if error.kind() == ErrorKind::NotFound => Expect::NotFound,
                Err(_) => Expect::Refused,
            };
            assert_eq!(&got, expected, "{}: {answer:?}", call.id);
        }
    }
    // Two writers of one call at once: one wins.
    let twice = claimed(&calls[35], &ana, 60);
    let (first, second) = (event("skill.invocation_claimed", "twice"), event("skill.invocation_claimed", "twice"));
    let (a, b) = tokio::join!(
        db.store.update_invocation(&twice, std::slice::from_ref(&first)),
        db.store.update_invocation(&twice, std::slice::from_ref(&second))
    );
    assert_eq!(usize::from(a.is_ok()) + usize::from(b.is_ok()), 1, "{a:?} {b:?}");
    let loser = if a.is_ok() { b } else { a };
    assert_eq!(loser.expect_err("lost").kind(), ErrorKind::Stale);

    // Each written call holds its new version, with exactly its own event; nothing else changed.
    let journal = db.store.events(0, None, 10_000).await.expect("journal");
    for (call, event, expected) in &updates {
        let stored = db.store.invocation(&call.id).await;
        let recorded = journal.iter().filter(|e| e.id == event.id).count();
        match expected {
            Expect::Written => {
                assert_eq!(stored.expect("stored").row_version, call.row_version);
                assert_eq!(recorded, 1, "{}", call.id);
            }
            _ => assert_eq!(recorded, 0, "no event of an update not written: {}", call.id),
        }
    }
    assert_eq!(db.store.invocation(&calls[34].id).await.expect("stored").status, CallStatus::Pending);
    assert_eq!(journal.iter().filter(|e| e.subject == "twice").count(), 1);
}

/// New calls that arrive at once (PostgreSQL inserts them in one statement) each get the answer
/// they would get alone: new with whether a session covers it, the call that has its key (one
/// already stored, or one of the same moment), and a refusal for the one that breaks a rule —
/// which leaves every other call inserted.
pub(crate) async fn inserts_at_once_each_get_their_own_answer(db: Db) {
    let (skill, ana) = setup(&db).await;
    let admission = json!({"localEntrypoints": ["claims.lookup"], "httpOrigins": ["https://svc.example"],
                           "mcpEndpoints": [], "audiences": []});
    session_admitting(&db, &ana, admission).await;
    let before = pending(&skill, &ana, "local", "claims.lookup", Some("before"));
    insert(&db, &before).await;

    #[derive(Debug, Clone, PartialEq)]
    enum Expect {
        New(bool),
        Keyed,
        Refused,
    }
    let mut round: Vec<(InvocationRecord, Expect)> = Vec::new();
    for (protocol, target, covered) in [
        ("local", "claims.lookup", true),
        ("local", "claims.other", false),
        ("http", "https://svc.example/run", true),
        ("http", "https://other.example/run", false),
    ] {
        round.push((pending(&skill, &ana, protocol, target, None), Expect::New(covered)));
    }
    for _ in 0..5 {
        round.push((pending(&skill, &ana, "local", "claims.lookup", Some("same")), Expect::Keyed));
    }
    round.push((pending(&skill, &ana, "local", "claims.lookup", Some("before")), Expect::Keyed));
    let mut nowhere = pending(&skill, &ana, "local", "claims.lookup", None);
    nowhere.skill_id = id();
    let second = vec![
        (nowhere, Expect::Refused),
        (pending(&skill, &ana, "local", "claims.lookup", None), Expect::New(true)),
        (pending(&skill, &ana, "local", "claims.other", None), Expect::New(false)),
    ];
    let events: Vec<_> = round.iter().chain(&second).map(|_| event("skill.invocation_requested", "at-once")).collect();
    let mut answers = Vec::new();
    for (calls, events) in [(&round[..], &events[..round.len()]), (&second[..], &events[round.len()..])] {
        let inserts = calls.iter().zip(events).map(|((call, _), event)| db.store.insert_invocation(call, event));
        answers.extend(futures::future::join_all(inserts).await);
    }
    let postgres = matches!(db.raw, Raw::Postgres(_));
    let mut same_key = Vec::new();
    for (((call, expected), event), answer) in round.iter().chain(&second).zip(&events).zip(answers) {
        let journaled = db.store.events(0, None, 10_000).await.expect("journal").iter().any(|e| e.id == event.id);
        match (expected, answer) {
            (Expect::New(covered), Ok(Inserted::New { covered: answered })) => {
                assert_eq!(answered, postgres.then_some(*covered), "{} {}", call.protocol, call.target);
                assert!(journaled, "the event of a new call");
            }
            // Of the five with one key, one is new and the others are answered with it.
            (Expect::Keyed, Ok(Inserted::New { .. })) if call.idempotency_key.as_deref() == Some("same") => {
                same_key.push(call.id.clone());
                assert!(journaled);
            }
            (Expect::Keyed, Ok(Inserted::Existing(existing))) => {
                if call.idempotency_key.as_deref() == Some("before") {
                    assert_eq!(existing.id, before.id);
                } else {
                    same_key.push(existing.id.clone());
                }
                assert!(!journaled, "no event of a call not inserted");
            }
            (Expect::Refused, Err(error)) => {
                assert_ne!(error.kind(), ErrorKind::Stale, "{error}");
                assert!(!journaled);
            }
            (expected, answer) => panic!("{expected:?}: {answer:?}"),
        }
    }
    same_key.dedup();
    assert_eq!(same_key.len(), 1, "five calls with one key are one call: {same_key:?}");
}

/// A claim reads whether each candidate's authority is disabled (a call made while a disable was
/// being written, which the disable's own transaction did not see), so it is never handed over.
pub(crate) async fn a_claim_sees_a_disabled_authority(db: Db) {
    let (skill, ana) = setup(&db).await;
    insert(&db, &pending(&skill, &ana, "local", "claims.lookup", None)).await;
    let admission = Admission { local_entrypoints: vec!["claims.lookup".to_owned()], ..Admission::default() };
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let judge = |seen: std::sync::Arc<std::sync::Mutex<Vec<bool>>>| -> skill_store::Take {
        Box::new(move |_: &InvocationRecord, basis: &BasisState| {
            seen.lock().expect("seen").push(basis.authority_disabled);
            Decision::Pass
        })
    };
    assert!(db.store.claim(&admission, Utc::now(), judge(seen.clone())).await.expect("claim").is_none());
    // Disabled by hand, as a disable that committed after the call was inserted leaves it.
    let at = match db.raw {
        Raw::Sqlite(_) => "'2026-01-01T00:00:00+00:00'",
        Raw::Postgres(_) => "now()",
    };
    db.raw.execute(&format!("UPDATE principals SET disabled_at = {at} WHERE id = '{ana}'")).await.expect("disabled");
    assert!(db.store.claim(&admission, Utc::now(), judge(seen.clone())).await.expect("claim").is_none());
    assert_eq!(*seen.lock().expect("seen"), vec![false, true]);
}
