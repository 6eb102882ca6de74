//! Calls and sessions on PostgreSQL, through sqlx.

mod inserts;
mod updates;

use futures::future::BoxFuture;
use skill_api::{ApprovalStatus, InstanceStatus, RunStatus, SkillStatus, StepStatus, TaskStatus};
use skill_contract::SideEffects;
use sqlx::types::Json;
use sqlx::{PgConnection, Row as _};

use super::{
    BACKLOG, CALL_BY_ID, CALL_BY_KEY, CALLS, CLAIMED_BY, DISABLE_PRINCIPAL, Decision, EXPIRED, INSERT_SESSION,
    InvocationStore, OpenCallsRow, PRINCIPAL_EXISTS, ROW_VERSION, SESSION, SESSION_CALLS, SESSIONS, Take, UPDATE_CALL,
    UPDATE_SESSION, calls_of_principal_sql, claimable_sql, covered_sql, insert_call_sql, open_calls, open_calls_sql,
    update_call_sql,
};
use crate::backend::PgStore;
use crate::error::{ErrorKind, Result, StoreError};
use crate::records::{
    Admission, ArtifactRecord, Backlog, BasisState, Event, Gates, Inserted, InvocationFilter, InvocationRecord,
    SessionRecord, Time,
};
use crate::states::{Nullable, Text};

const CALLS_OF_PRINCIPAL: &str =
    calls_of_principal_sql!("authorization_basis ->> 'decidedBy'", "authorization_basis ->> 'kind'");
/// [`claimable_sql`] as PostgreSQL reads the basis (`->>`), with `$lock` after it.
macro_rules! pg_claimable_sql {
    ($lock:literal) => {
        claimable_sql!(
            "jsonb_array_elements_text",
            "i.authorization_basis ->> 'approvalId'",
            "i.authorization_basis ->> 'kind'",
            "i.authorization_basis ->> 'instanceId'",
            "i.authorization_basis ->> 'activityId'",
            "(SELECT count(*) FROM approvals oa CROSS JOIN LATERAL jsonb_array_elements(oa.initiators) oj \
              JOIN principals op ON op.id = oj ->> 'person' \
              WHERE oa.id = i.authorization_basis ->> 'approvalId' \
              AND oj ->> 'agent' IS NOT NULL AND op.disabled_at IS NOT NULL)",
            "(SELECT count(*) FROM tasks ot CROSS JOIN LATERAL jsonb_array_elements(ot.initiators) oj \
              JOIN principals op ON op.id = oj ->> 'person' \
              WHERE ot.id = i.task_id AND oj ->> 'agent' IS NOT NULL AND op.disabled_at IS NOT NULL)",
            $lock
        )
    };
}
const CLAIMABLE: &str = pg_claimable_sql!("");
/// One candidate at a time, locked, skipping the rows other claims hold: concurrent claims each
/// get their own call without waiting on one another.
const CLAIM_NEXT: &str = pg_claimable_sql!(" FOR UPDATE OF i SKIP LOCKED");
/// [`CLAIM_NEXT`] explained, as it runs (the benchmark's bloat guard prints it).
const CLAIM_PLAN: &str = concat!("EXPLAIN (ANALYZE, BUFFERS) ", pg_claimable_sql!(" FOR UPDATE OF i SKIP LOCKED"));
/// How many candidates one claim judges at most: the query leaves out the calls a claim would
/// pass over (see [`claimable_sql`]), so these are taken or cancelled in turn.
const CANDIDATES: usize = 20;

/// A candidate with the state of its basis.
#[derive(sqlx::FromRow)]
struct Candidate {
    #[sqlx(flatten)]
    call: InvocationRecord,
    #[sqlx(try_from = "Nullable<TaskStatus>")]
    basis_task_status: Option<TaskStatus>,
    #[sqlx(try_from = "Nullable<ApprovalStatus>")]
    basis_approval_status: Option<ApprovalStatus>,
    basis_decider_disabled: i64,
    #[sqlx(try_from = "Nullable<RunStatus>")]
    basis_run_status: Option<RunStatus>,
    basis_gates: i64,
    #[sqlx(try_from = "Text<SkillStatus>")]
    basis_skill_status: SkillStatus,
    #[sqlx(try_from = "Nullable<SideEffects>")]
    basis_side_effects: Option<SideEffects>,
    basis_skill_name: String,
    basis_skill_version: String,
    #[sqlx(try_from = "Nullable<InstanceStatus>")]
    basis_instance_status: Option<InstanceStatus>,
    #[sqlx(try_from = "Nullable<StepStatus>")]
    basis_activity_status: Option<StepStatus>,
    basis_authority_disabled: i64,
    basis_operator_disabled: i64,
}

impl Candidate {
    fn basis(&self) -> BasisState {
        BasisState {
            task_status: self.basis_task_status,
            approval_status: self.basis_approval_status,
            decider_disabled: self.basis_decider_disabled > 0,
            run_status: self.basis_run_status,
            gates: Gates::from_bits(self.basis_gates),
            skill_status: self.basis_skill_status,
            side_effects: self.basis_side_effects,
            skill_name: self.basis_skill_name.clone(),
            skill_version: self.basis_skill_version.clone(),
            instance_status: self.basis_instance_status,
            activity_status: self.basis_activity_status,
            authority_disabled: self.basis_authority_disabled > 0,
            operator_disabled: self.basis_operator_disabled > 0,
        }
    }
}
const OPEN_CALLS: &str =
    open_calls_sql!("c.authorization_basis ->> 'kind'", "jsonb_array_elements_text(s.admission -> '", "')");
const COVERED: &str = covered_sql!("jsonb_array_elements_text(s.admission -> '", "')", "$1", "$2", "$3", "$4");

/// The call update with one event, in one statement (one round trip, no `BEGIN`/`COMMIT`): the
/// event is written only when the row was.
const UPDATE_CALL_WITH_EVENT: &str = concat!(
    "WITH updated AS (",
    update_call_sql!(),
    " RETURNING id) INSERT INTO events (id, kind, subject, data, actor_id, request_id, created_at, entry, salt) \
     SELECT $20, $21, $22, $23, $24, $25, $26, $27, $28 FROM updated"
);
/// The call insert with its event, in one statement; nothing when the key is taken. It answers
/// whether it wrote, and whether an active executor session covers the call now (what its
/// caller is told). (Not its wake-up: a transaction that notifies holds the server's one
/// notification lock through its commit, so notifying inserts would commit one at a time. The
/// engine sends wake-ups apart.)
const INSERT_CALL_WITH_EVENT: &str = concat!(
    "WITH inserted AS (",
    insert_call_sql!(),
    " RETURNING id), written AS (INSERT INTO events (id, kind, subject, data, actor_id, request_id, created_at, \
     entry, salt) SELECT $34, $35, $36, $37, $38, $39, $40, $41, $42 FROM inserted RETURNING 1) \
     SELECT (SELECT count(*) FROM written) AS written, (",
    covered_sql!("jsonb_array_elements_text(s.admission -> '", "')", "$28", "$3", "$4", "$5"),
    ") AS covered"
);

/// Binds the 19 values of [`UPDATE_CALL`] to `query`.
fn bind_update<'q>(
    query: sqlx::query::Query<'q, sqlx::Postgres, sqlx::postgres::PgArguments>,
    c: &'q InvocationRecord,
) -> sqlx::query::Query<'q, sqlx::Postgres, sqlx::postgres::PgArguments> {
    query
        .bind(&c.id)
        .bind(c.row_version - 1)
        .bind(c.status.as_str())
        .bind(c.attempt)
        .bind(c.available_at)
        .bind(c.output.as_ref().map(Json))
        .bind(c.error.as_ref().map(Json))
        .bind(c.cost.as_ref().map(Json))
        .bind(c.fencing_token)
        .bind(&c.executor_principal_id)
        .bind(&c.executor_session_id)
        .bind(c.lease_expires_at)
        .bind(c.heartbeat_at)
        .bind(&c.artifact_id)
        .bind(c.row_version)
        .bind(c.updated_at)
        .bind(c.started_at)
        .bind(c.attempt_started_at)
        .bind(c.finished_at)
}

/// Binds the nine values of an event (with its journal entry and salt) to `query`.
fn bind_event<'q>(
    query: sqlx::query::Query<'q, sqlx::Postgres, sqlx::postgres::PgArguments>,
    e: &'q Event,
) -> sqlx::query::Query<'q, sqlx::Postgres, sqlx::postgres::PgArguments> {
    let written = crate::leaves::written(e);
    query
        .bind(&e.id)
        .bind(&e.kind)
        .bind(&e.subject)
        .bind(Json(&e.data))
        .bind(&e.actor_id)
        .bind(&e.request_id)
        .bind(e.created_at)
        .bind(written.entry)
        .bind(written.salt)
}

/// The events of a statement over several calls (`inserts.rs`, `updates.rs`): each call's event,
/// from the input rows whose call `$written` names (a data-modifying `WITH` answering the input's
/// `n`), in the input's order.
macro_rules! events_written_sql {
    ($written:literal) => {
        concat!(
            "written AS (INSERT INTO events (id, kind, subject, data, actor_id, request_id, created_at, entry, \
             salt) SELECT i.event_id, i.event_kind, i.event_subject, i.event_data, i.event_actor, i.event_request, \
             i.event_at, i.event_entry, i.event_salt FROM input i JOIN ",
            $written,
            " u ON u.n = i.n ORDER BY i.n RETURNING 1)"
        )
    };
}
use events_written_sql;

/// Binds the nine values of each of `events` as arrays (in [`bind_event`]'s order), for a
/// statement over several calls that reads them through `unnest`.
fn bind_event_arrays<'q>(
    query: sqlx::query::Query<'q, sqlx::Postgres, sqlx::postgres::PgArguments>,
    events: &[&'q Event],
) -> sqlx::query::Query<'q, sqlx::Postgres, sqlx::postgres::PgArguments> {
    let written: Vec<_> = events.iter().map(|e| crate::leaves::written(e)).collect();
    query
        .bind(events.iter().map(|e| e.id.as_str()).collect::<Vec<_>>())
        .bind(events.iter().map(|e| e.kind.as_str()).collect::<Vec<_>>())
        .bind(events.iter().map(|e| e.subject.as_str()).collect::<Vec<_>>())
        .bind(events.iter().map(|e| Json(&e.data)).collect::<Vec<_>>())
        .bind(events.iter().map(|e| e.actor_id.as_deref()).collect::<Vec<_>>())
        .bind(events.iter().map(|e| e.request_id.as_deref()).collect::<Vec<_>>())
        .bind(events.iter().map(|e| e.created_at).collect::<Vec<_>>())
        .bind(written.iter().map(|w| w.entry.clone()).collect::<Vec<_>>())
        .bind(written.into_iter().map(|w| w.salt).collect::<Vec<_>>())
}

/// Why a version-checked write of `id` wrote nothing: `NotFound` or `Stale`.
async fn unwritten<'e>(executor: impl sqlx::PgExecutor<'e>, id: &str) -> StoreError {
    match sqlx::query_scalar::<_, i32>(ROW_VERSION).bind(id).fetch_optional(executor).await {
        Err(error) => error.into(),
        Ok(None) => StoreError::new(ErrorKind::NotFound, format!("no call {id}")),
        Ok(Some(stored)) => StoreError::new(ErrorKind::Stale, format!("call {id} is at row version {stored}")),
    }
}

/// Writes `c` (and `event`, when given) in one statement, when the stored row is one version
/// behind; `NotFound` or `Stale` otherwise.
async fn update_call(tx: &mut PgConnection, c: &InvocationRecord, event: Option<&Event>) -> Result<()> {
    let done = match event {
        None => bind_update(sqlx::query(UPDATE_CALL), c).execute(&mut *tx).await?,
        Some(event) => bind_event(bind_update(sqlx::query(UPDATE_CALL_WITH_EVENT), c), event).execute(&mut *tx).await?,
    };
    if done.rows_affected() == 0 {
        return Err(unwritten(&mut *tx, &c.id).await);
    }
    Ok(())
}

/// Inserts `c` with `event` in one statement of its own; the call that has its key when another
/// has it.
async fn insert_alone(pool: &sqlx::PgPool, c: &InvocationRecord, event: &Event) -> Result<Inserted> {
    let query = sqlx::query(INSERT_CALL_WITH_EVENT)
        .bind(&c.id)
        .bind(&c.skill_id)
        .bind(&c.protocol)
        .bind(&c.target)
        .bind(&c.audience)
        .bind(Json(&c.inputs))
        .bind(c.requested_by_kind.as_str())
        .bind(&c.requested_by_ref)
        .bind(&c.authority_principal_id)
        .bind(c.authorization_basis.as_ref().map(Json))
        .bind(&c.idempotency_key)
        .bind(c.status.as_str())
        .bind(c.attempt)
        .bind(c.max_attempts)
        .bind(c.available_at)
        .bind(c.output.as_ref().map(Json))
        .bind(c.error.as_ref().map(Json))
        .bind(c.cost.as_ref().map(Json))
        .bind(c.fencing_token)
        .bind(&c.executor_principal_id)
        .bind(&c.executor_session_id)
        .bind(c.lease_expires_at)
        .bind(c.heartbeat_at)
        .bind(&c.task_id)
        .bind(&c.run_id)
        .bind(&c.artifact_id)
        .bind(c.row_version)
        .bind(c.created_at)
        .bind(c.updated_at)
        .bind(c.started_at)
        .bind(c.attempt_started_at)
        .bind(c.finished_at)
        .bind(&c.traceparent);
    // One statement: the row and its event, or neither when the key is taken.
    let refused = match bind_event(query, event).fetch_one(pool).await {
        Ok(row) if row.try_get::<i64, _>("written")? == 1 => {
            return Ok(Inserted::New { covered: Some(row.try_get("covered")?) });
        }
        Ok(_) => None,
        Err(error) => Some(StoreError::from(error)),
    };
    // Two inserts of one key at once (two cores carrying out one approval's outcome): the
    // one that commits second may meet the first on a basis's unique index before the
    // key's, which is a conflict only when no call has the key. A call that has it is
    // this insert's answer, as when the key's own index refuses it.
    match refused {
        Some(error) if error.kind() != ErrorKind::Conflict || c.idempotency_key.is_none() => Err(error),
        refused => {
            let existing: Option<InvocationRecord> =
                sqlx::query_as(CALL_BY_KEY).bind(&c.skill_id).bind(&c.idempotency_key).fetch_optional(pool).await?;
            match (existing, refused) {
                (Some(existing), _) => Ok(Inserted::Existing(Box::new(existing))),
                (None, Some(error)) => Err(error),
                (None, None) => Err(StoreError::new(
                    ErrorKind::Internal,
                    format!("call {} was neither inserted nor found by its key", c.id),
                )),
            }
        }
    }
}

/// Writes `c` with `event` in one statement of its own (its own transaction).
async fn update_alone(pool: &sqlx::PgPool, c: &InvocationRecord, event: &Event) -> Result<()> {
    let mut connection = pool.acquire().await?;
    update_call(&mut connection, c, Some(event)).await
}

/// Writes a call and its events: one statement for the usual one event.
async fn write_call(tx: &mut PgConnection, call: &InvocationRecord, events: &[Event]) -> Result<()> {
    match events {
        [event] => update_call(tx, call, Some(event)).await,
        _ => {
            update_call(tx, call, None).await?;
            insert_events(tx, events).await
        }
    }
}

async fn insert_events(tx: &mut PgConnection, events: &[Event]) -> Result<()> {
    for event in events {
        crate::events::insert!(tx, event);
    }
    Ok(())
}

impl InvocationStore for PgStore {
    fn insert_invocation<'a>(&'a self, c: &'a InvocationRecord, event: &'a Event) -> BoxFuture<'a, Result<Inserted>> {
        // With the calls that arrive together: one statement for all of them.
        Box::pin(inserts::insert(&self.inserts, self.read(), c, event))
    }

    fn invocation<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<InvocationRecord>> {
        Box::pin(async move { Ok(sqlx::query_as(CALL_BY_ID).bind(id).fetch_one(self.read()).await?) })
    }

    fn invocation_by_key<'a>(&'a self, skill_id: &'a str, key: &'a str) -> BoxFuture<'a, Result<InvocationRecord>> {
        Box::pin(async move { Ok(sqlx::query_as(CALL_BY_KEY).bind(skill_id).bind(key).fetch_one(self.read()).await?) })
    }

    fn invocations<'a>(&'a self, f: &'a InvocationFilter) -> BoxFuture<'a, Result<Vec<InvocationRecord>>> {
        Box::pin(async move {
            let (before_at, before_id) = f.before.clone().unzip();
            Ok(sqlx::query_as(CALLS)
                .bind(f.status.map(|s| s.as_str()))
                .bind(&f.skill_id)
                .bind(&f.authority)
                .bind(f.created_after)
                .bind(f.created_before)
                .bind(before_at)
                .bind(before_id)
                .bind(i64::from(f.limit))
                .bind(&f.task_id)
                .bind(&f.executor)
                .fetch_all(self.read())
                .await?)
        })
    }

    fn claimed_by<'a>(&'a self, id: &'a str, principal_id: &'a str) -> BoxFuture<'a, Result<bool>> {
        Box::pin(async move {
            Ok(sqlx::query_scalar(CLAIMED_BY)
                .bind(format!("skill_invocation:{id}"))
                .bind(principal_id)
                .fetch_one(self.read())
                .await?)
        })
    }

    fn update_invocation<'a>(&'a self, call: &'a InvocationRecord, events: &'a [Event]) -> BoxFuture<'a, Result<()>> {
        Box::pin(async move {
            match events {
                // With the updates that arrive together: one statement for all of them.
                [event] => return updates::update(&self.updates, self.read(), call, event).await,
                // One statement, its own transaction.
                [] => {
                    let mut connection = self.read().acquire().await?;
                    return update_call(&mut connection, call, None).await;
                }
                _ => {}
            }
            let mut tx = self.write().await?;
            update_call(&mut tx, call, None).await?;
            insert_events(&mut tx, events).await?;
            tx.commit().await?;
            Ok(())
        })
    }

    fn update_invocation_with_artifacts<'a>(
        &'a self,
        call: &'a InvocationRecord,
        artifacts: &'a [ArtifactRecord],
        events: &'a [Event],
    ) -> BoxFuture<'a, Result<()>> {
        Box::pin(async move {
            let mut tx = self.write().await?;
            let statements: Vec<_> = artifacts.iter().map(crate::statements::insert_artifact).collect();
            crate::statements::run_in!(tx, &statements);
            update_call(&mut tx, call, None).await?;
            insert_events(&mut tx, events).await?;
            tx.commit().await?;
            Ok(())
        })
    }

    fn claimable<'a>(
        &'a self,
        a: &'a Admission,
        now: Time,
        limit: u32,
    ) -> BoxFuture<'a, Result<Vec<InvocationRecord>>> {
        Box::pin(async move {
            Ok(sqlx::query_as(CLAIMABLE)
                .bind(now)
                .bind(Json(&a.local_entrypoints))
                .bind(Json(&a.http_origins))
                .bind(Json(&a.mcp_endpoints))
                .bind(Json(&a.audiences))
                .bind(&a.invocation_id)
                .bind(i64::from(limit))
                .bind(&a.session_id)
                .bind(Json(Vec::<String>::new()))
                .fetch_all(self.read())
                .await?)
        })
    }

    fn claim_up_to<'a>(
        &'a self,
        a: &'a Admission,
        now: Time,
        most: usize,
        mut take: Take,
    ) -> BoxFuture<'a, Result<Vec<InvocationRecord>>> {
        let most = most.max(1);
        Box::pin(async move {
            let mut tx = self.write().await?;
            let (mut passed, mut wrote, mut judged): (Vec<String>, bool, usize) = (Vec::new(), false, 0);
            let mut taken: Vec<(InvocationRecord, Vec<Event>)> = Vec::new();
            'looking: while taken.len() < most && judged < CANDIDATES + most - 1 {
                // The candidates still wanted, locked at once, skipping the rows other claims hold.
                let wanted = most - taken.len();
                let candidates: Vec<Candidate> = sqlx::query_as(CLAIM_NEXT)
                    .bind(now)
                    .bind(Json(&a.local_entrypoints))
                    .bind(Json(&a.http_origins))
                    .bind(Json(&a.mcp_endpoints))
                    .bind(Json(&a.audiences))
                    .bind(&a.invocation_id)
                    .bind(wanted as i64)
                    .bind(&a.session_id)
                    .bind(Json(&passed))
                    .fetch_all(&mut *tx)
                    .await?;
                let found = candidates.len();
                for candidate in candidates {
                    judged += 1;
                    match take(&candidate.call, &candidate.basis()) {
                        Decision::Take(running, events) => taken.push((running, events)),
                        Decision::Cancel(call, events) => {
                            write_call(&mut tx, &call, &events).await?;
                            wrote = true;
                            passed.push(call.id);
                        }
                        Decision::Pass => passed.push(candidate.call.id),
                        Decision::Stop => break 'looking,
                    }
                }
                if found < wanted {
                    break;
                }
            }
            match &taken[..] {
                [] => {}
                [(running, events)] => write_call(&mut tx, running, events).await?,
                several if several.iter().all(|(_, events)| events.len() == 1) => {
                    let rows: Vec<_> = several.iter().map(|(running, events)| (running, &events[0])).collect();
                    let written = updates::write(&mut *tx, &rows).await?;
                    if written.len() != rows.len() {
                        return Err(StoreError::new(ErrorKind::Stale, "a claimed call moved while it was locked"));
                    }
                }
                several => {
                    for (running, events) in several {
                        write_call(&mut tx, running, events).await?;
                    }
                }
            }
            // At once, not when the dropped transaction's connection is next used: until then
            // the rows it looked at stay locked and the next claim would skip them.
            if wrote || !taken.is_empty() {
                tx.commit().await?;
            } else {
                tx.rollback().await?;
            }
            Ok(taken.into_iter().map(|(running, _)| running).collect())
        })
    }

    fn expired_leases<'a>(&'a self, now: Time, limit: u32) -> BoxFuture<'a, Result<Vec<InvocationRecord>>> {
        Box::pin(
            async move { Ok(sqlx::query_as(EXPIRED).bind(now).bind(i64::from(limit)).fetch_all(self.read()).await?) },
        )
    }

    fn backlog(&self, now: Time) -> BoxFuture<'_, Result<Backlog>> {
        Box::pin(async move {
            let calls: Vec<OpenCallsRow> = sqlx::query_as(OPEN_CALLS).bind(now).fetch_all(self.read()).await?;
            let (approvals_pending, sessions_active, oldest_due, oldest_outcome): (
                i64,
                i64,
                Option<Time>,
                Option<Time>,
            ) = sqlx::query_as(BACKLOG).bind(now).fetch_one(self.read()).await?;
            let calls = calls.into_iter().map(open_calls).collect::<Result<_>>()?;
            Ok(Backlog { calls, approvals_pending, sessions_active, oldest_due, oldest_outcome })
        })
    }

    fn session_calls<'a>(&'a self, session_id: &'a str) -> BoxFuture<'a, Result<Vec<InvocationRecord>>> {
        Box::pin(async move { Ok(sqlx::query_as(SESSION_CALLS).bind(session_id).fetch_all(self.read()).await?) })
    }

    fn covered<'a>(
        &'a self,
        protocol: &'a str,
        target: &'a str,
        audience: Option<&'a str>,
        now: Time,
    ) -> BoxFuture<'a, Result<bool>> {
        Box::pin(async move {
            Ok(sqlx::query_scalar(COVERED)
                .bind(now)
                .bind(protocol)
                .bind(target)
                .bind(audience)
                .fetch_one(self.read())
                .await?)
        })
    }

    fn calls_of_principal<'a>(&'a self, principal_id: &'a str) -> BoxFuture<'a, Result<Vec<InvocationRecord>>> {
        Box::pin(async move { Ok(sqlx::query_as(CALLS_OF_PRINCIPAL).bind(principal_id).fetch_all(self.read()).await?) })
    }

    fn disable_principal<'a>(
        &'a self,
        principal_id: &'a str,
        at: Time,
        calls: &'a [InvocationRecord],
        events: &'a [Event],
    ) -> BoxFuture<'a, Result<()>> {
        Box::pin(async move {
            let mut tx = self.write().await?;
            let done = sqlx::query(DISABLE_PRINCIPAL).bind(principal_id).bind(at).execute(&mut *tx).await?;
            if done.rows_affected() == 0 {
                let found: i64 = sqlx::query_scalar(PRINCIPAL_EXISTS).bind(principal_id).fetch_one(&mut *tx).await?;
                return Err(if found == 0 {
                    StoreError::new(ErrorKind::NotFound, format!("no principal {principal_id}"))
                } else {
                    StoreError::new(ErrorKind::Conflict, format!("principal {principal_id} is disabled already"))
                });
            }
            for call in calls {
                update_call(&mut tx, call, None).await?;
            }
            insert_events(&mut tx, events).await?;
            tx.commit().await?;
            self.keys_changed();
            Ok(())
        })
    }

    fn insert_session<'a>(&'a self, s: &'a SessionRecord, event: &'a Event) -> BoxFuture<'a, Result<()>> {
        Box::pin(async move {
            let mut tx = self.write().await?;
            sqlx::query(INSERT_SESSION)
                .bind(&s.id)
                .bind(&s.principal_id)
                .bind(s.status.as_str())
                .bind(Json(&s.capabilities))
                .bind(s.created_at)
                .bind(s.heartbeat_at)
                .bind(s.expires_at)
                .bind(s.closed_at)
                .bind(s.row_version)
                .bind(Json(&s.admission))
                .bind(s.draining_at)
                .execute(&mut *tx)
                .await?;
            crate::events::commit!(tx, event);
            Ok(())
        })
    }

    fn session<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<SessionRecord>> {
        Box::pin(async move { Ok(sqlx::query_as(SESSION).bind(id).fetch_one(self.read()).await?) })
    }

    fn sessions(&self, limit: u32) -> BoxFuture<'_, Result<Vec<SessionRecord>>> {
        Box::pin(async move { Ok(sqlx::query_as(SESSIONS).bind(i64::from(limit)).fetch_all(self.read()).await?) })
    }

    fn update_session<'a>(
        &'a self,
        s: &'a SessionRecord,
        calls: &'a [InvocationRecord],
        events: &'a [Event],
    ) -> BoxFuture<'a, Result<()>> {
        Box::pin(async move {
            let mut tx = self.write().await?;
            let done = sqlx::query(UPDATE_SESSION)
                .bind(&s.id)
                .bind(s.row_version - 1)
                .bind(s.status.as_str())
                .bind(s.heartbeat_at)
                .bind(s.expires_at)
                .bind(s.closed_at)
                .bind(s.row_version)
                .bind(Json(&s.admission))
                .bind(s.draining_at)
                .execute(&mut *tx)
                .await?;
            if done.rows_affected() == 0 {
                return Err(StoreError::new(ErrorKind::Stale, format!("session {} moved on", s.id)));
            }
            for call in calls {
                update_call(&mut tx, call, None).await?;
            }
            insert_events(&mut tx, events).await?;
            tx.commit().await?;
            Ok(())
        })
    }
}

impl PgStore {
    /// `EXPLAIN (ANALYZE, BUFFERS)` of the claim's candidate query as a claim of the local
    /// `entrypoints` runs it now, in a transaction rolled back after (nothing stays locked): what
    /// the benchmark prints to show the claim keeps to the queue's index however many calls ended.
    pub async fn claim_plan(&self, entrypoints: &[String]) -> Result<String> {
        let mut tx = self.pool.begin().await?;
        let lines: Vec<String> = sqlx::query_scalar(CLAIM_PLAN)
            .bind(chrono::Utc::now())
            .bind(Json(entrypoints))
            .bind(Json(Vec::<String>::new()))
            .bind(Json(Vec::<String>::new()))
            .bind(Json(Vec::<String>::new()))
            .bind(None::<String>)
            .bind(1_i64)
            .bind(None::<String>)
            .bind(Json(Vec::<String>::new()))
            .fetch_all(&mut *tx)
            .await?;
        tx.rollback().await?;
        Ok(lines.join("\n"))
    }
}
