//! Calls and sessions on SQLite, through the hot path (`lite.rs`): writes batched by the writer
//! thread, reads on the caller's thread.

use futures::future::BoxFuture;
use rusqlite::Connection;
use rusqlite::types::Value as Arg;

use super::{
    BACKLOG, CALL_BY_ID, CALL_BY_KEY, CALLS, CLAIMED_BY, DISABLE_PRINCIPAL, Decision, EXPIRED, INSERT_CALL,
    INSERT_SESSION, InvocationStore, PRINCIPAL_EXISTS, ROW_VERSION, SESSION, SESSION_CALLS, SESSIONS, Take,
    UPDATE_CALL, UPDATE_SESSION, calls_of_principal_sql, claimable_sql, covered_sql, open_calls, open_calls_sql,
};
use crate::backend::SqliteStore;
use crate::error::{ErrorKind, Result, StoreError};
use crate::lite::rows::{execute, get_maybe_time, one, rows};
use crate::lite::rows::{int, invocation_values, json, maybe_text, maybe_time, text, time, update_values};
use crate::lite::{bind_dollars, event_insert, invocation_row, session_row};
use crate::records::{
    Admission, ArtifactRecord, Backlog, BasisState, Event, Gates, Inserted, InvocationFilter, InvocationRecord,
    SessionRecord, Time,
};
use crate::states;

const CALLS_OF_PRINCIPAL: &str = calls_of_principal_sql!(
    "json_extract(authorization_basis, '$.decidedBy')",
    "json_extract(authorization_basis, '$.kind')"
);
const CLAIMABLE: &str = claimable_sql!(
    "json_each",
    "json_extract(i.authorization_basis, '$.approvalId')",
    "json_extract(i.authorization_basis, '$.kind')",
    "json_extract(i.authorization_basis, '$.instanceId')",
    "json_extract(i.authorization_basis, '$.activityId')",
    "(SELECT count(*) FROM approvals oa JOIN json_each(oa.initiators) oj \
      JOIN principals op ON op.id = json_extract(oj.value, '$.person') \
      WHERE oa.id = json_extract(i.authorization_basis, '$.approvalId') \
      AND json_extract(oj.value, '$.agent') IS NOT NULL AND op.disabled_at IS NOT NULL)",
    "(SELECT count(*) FROM tasks ot JOIN json_each(ot.initiators) oj \
      JOIN principals op ON op.id = json_extract(oj.value, '$.person') \
      WHERE ot.id = i.task_id AND json_extract(oj.value, '$.agent') IS NOT NULL AND op.disabled_at IS NOT NULL)",
    ""
);
const OPEN_CALLS: &str =
    open_calls_sql!("json_extract(c.authorization_basis, '$.kind')", "json_each(s.admission, '$.", "')");
const COVERED: &str = covered_sql!("json_each(s.admission, '$.", "')", "$1", "$2", "$3", "$4");
/// How many pending calls one claim looks at (the engine passes over calls it cannot take yet).
const CANDIDATES: i64 = 20;

/// Writes the changing columns of `c` when the stored row is one version behind; `NotFound` or
/// `Stale` otherwise.
fn update_call(connection: &Connection, c: &InvocationRecord) -> Result<()> {
    if execute(connection, UPDATE_CALL, &update_values(c))? == 1 {
        return Ok(());
    }
    let stored = rows(connection, ROW_VERSION, &[text(&c.id)], |row| row.get::<_, i32>(0))?;
    Err(match stored.first() {
        None => StoreError::new(ErrorKind::NotFound, format!("no call {}", c.id)),
        Some(stored) => StoreError::new(ErrorKind::Stale, format!("call {} is at row version {stored}", c.id)),
    })
}

fn admission_values(a: &Admission, now: Time, limit: i64) -> Vec<Arg> {
    vec![
        time(now),
        Arg::Text(serde_json::to_string(&a.local_entrypoints).unwrap_or_default()),
        Arg::Text(serde_json::to_string(&a.http_origins).unwrap_or_default()),
        Arg::Text(serde_json::to_string(&a.mcp_endpoints).unwrap_or_default()),
        Arg::Text(serde_json::to_string(&a.audiences).unwrap_or_default()),
        maybe_text(a.invocation_id.as_deref()),
        int(limit),
        maybe_text(a.session_id.as_deref()),
        Arg::Text("[]".to_owned()),
    ]
}

/// The state of a candidate's basis: the columns after the call's.
fn basis_row(row: &rusqlite::Row<'_>) -> rusqlite::Result<BasisState> {
    const AFTER: usize = crate::lite::CALL_COLUMNS;
    Ok(BasisState {
        task_status: states::get_maybe(row, AFTER)?,
        approval_status: states::get_maybe(row, AFTER + 1)?,
        decider_disabled: row.get::<_, i64>(AFTER + 2)? > 0,
        run_status: states::get_maybe(row, AFTER + 3)?,
        gates: Gates::from_bits(row.get(AFTER + 4)?),
        skill_status: states::get(row, AFTER + 5)?,
        side_effects: states::get_maybe(row, AFTER + 6)?,
        skill_name: row.get(AFTER + 7)?,
        skill_version: row.get(AFTER + 8)?,
        instance_status: states::get_maybe(row, AFTER + 9)?,
        activity_status: states::get_maybe(row, AFTER + 10)?,
        authority_disabled: row.get::<_, i64>(AFTER + 11)? > 0,
        operator_disabled: row.get::<_, i64>(AFTER + 12)? > 0,
    })
}

impl InvocationStore for SqliteStore {
    fn insert_invocation<'a>(&'a self, c: &'a InvocationRecord, event: &'a Event) -> BoxFuture<'a, Result<Inserted>> {
        let values = invocation_values(c);
        let key = [text(&c.skill_id), maybe_text(c.idempotency_key.as_deref())];
        let event = event.clone();
        Box::pin(self.lite.write(move |connection| {
            let values = values?;
            if execute(connection, INSERT_CALL, &values)? == 1 {
                event_insert(connection, &event)?;
                return Ok(Inserted::New { covered: None });
            }
            let existing = one(connection, CALL_BY_KEY, &key, invocation_row)?;
            Ok(Inserted::Existing(Box::new(existing)))
        }))
    }

    fn invocation<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<InvocationRecord>> {
        let found = self.lite.read(|connection| one(connection, CALL_BY_ID, &[text(id)], invocation_row));
        Box::pin(async move { found })
    }

    fn invocation_by_key<'a>(&'a self, skill_id: &'a str, key: &'a str) -> BoxFuture<'a, Result<InvocationRecord>> {
        let found =
            self.lite.read(|connection| one(connection, CALL_BY_KEY, &[text(skill_id), text(key)], invocation_row));
        Box::pin(async move { found })
    }

    fn invocations<'a>(&'a self, f: &'a InvocationFilter) -> BoxFuture<'a, Result<Vec<InvocationRecord>>> {
        let (before_at, before_id) = f.before.clone().unzip();
        let values = [
            maybe_text(f.status.map(|s| s.as_str())),
            maybe_text(f.skill_id.as_deref()),
            maybe_text(f.authority.as_deref()),
            maybe_time(f.created_after),
            maybe_time(f.created_before),
            maybe_time(before_at),
            maybe_text(before_id.as_deref()),
            int(f.limit),
            maybe_text(f.task_id.as_deref()),
            maybe_text(f.executor.as_deref()),
        ];
        let found = self.lite.read(|connection| rows(connection, CALLS, &values, invocation_row));
        Box::pin(async move { found })
    }

    fn claimed_by<'a>(&'a self, id: &'a str, principal_id: &'a str) -> BoxFuture<'a, Result<bool>> {
        let subject = format!("skill_invocation:{id}");
        let found = self.lite.read(|connection| {
            one(connection, CLAIMED_BY, &[text(&subject), text(principal_id)], |row| row.get::<_, bool>(0))
        });
        Box::pin(async move { found })
    }

    fn update_invocation<'a>(&'a self, call: &'a InvocationRecord, events: &'a [Event]) -> BoxFuture<'a, Result<()>> {
        let call = call.clone();
        let events = events.to_vec();
        Box::pin(self.lite.write(move |connection| {
            update_call(connection, &call)?;
            for event in &events {
                event_insert(connection, event)?;
            }
            Ok(())
        }))
    }

    fn update_invocation_with_artifacts<'a>(
        &'a self,
        call: &'a InvocationRecord,
        artifacts: &'a [ArtifactRecord],
        events: &'a [Event],
    ) -> BoxFuture<'a, Result<()>> {
        let call = call.clone();
        let statements: Vec<_> = artifacts.iter().map(crate::statements::insert_artifact).collect();
        let events = events.to_vec();
        Box::pin(self.lite.write(move |connection| {
            crate::statements::run_lite(connection, &statements)?;
            update_call(connection, &call)?;
            for event in &events {
                event_insert(connection, event)?;
            }
            Ok(())
        }))
    }

    fn claimable<'a>(
        &'a self,
        a: &'a Admission,
        now: Time,
        limit: u32,
    ) -> BoxFuture<'a, Result<Vec<InvocationRecord>>> {
        let values = admission_values(a, now, i64::from(limit));
        let found = self.lite.read(|connection| rows(connection, CLAIMABLE, &values, invocation_row));
        Box::pin(async move { found })
    }

    fn claim_up_to<'a>(
        &'a self,
        a: &'a Admission,
        now: Time,
        most: usize,
        mut take: Take,
    ) -> BoxFuture<'a, Result<Vec<InvocationRecord>>> {
        let most = most.max(1);
        let values = admission_values(a, now, CANDIDATES + most as i64 - 1);
        Box::pin(self.lite.write(move |connection| {
            // The writer is the only one: what it reads here nobody else changes before it
            // commits. Rows are read one at a time, up to the last one taken; what the judge
            // cancels on the way is written after the reading.
            let (cancelled, chosen) = {
                let mut statement = connection.prepare_cached(CLAIMABLE)?;
                bind_dollars(&mut statement, &values)?;
                let mut cursor = statement.raw_query();
                let (mut cancelled, mut chosen) = (Vec::new(), Vec::new());
                while let Some(row) = cursor.next()? {
                    match take(&invocation_row(row)?, &basis_row(row)?) {
                        Decision::Take(running, events) => {
                            chosen.push((running, events));
                            if chosen.len() == most {
                                break;
                            }
                        }
                        Decision::Cancel(call, events) => cancelled.push((call, events)),
                        Decision::Pass => {}
                        Decision::Stop => break,
                    }
                }
                (cancelled, chosen)
            };
            for (call, events) in cancelled.iter().chain(chosen.iter()) {
                update_call(connection, call)?;
                for event in events {
                    event_insert(connection, event)?;
                }
            }
            Ok(chosen.into_iter().map(|(running, _)| running).collect())
        }))
    }

    fn expired_leases<'a>(&'a self, now: Time, limit: u32) -> BoxFuture<'a, Result<Vec<InvocationRecord>>> {
        let found = self.lite.read(|connection| rows(connection, EXPIRED, &[time(now), int(limit)], invocation_row));
        Box::pin(async move { found })
    }

    fn session_calls<'a>(&'a self, session_id: &'a str) -> BoxFuture<'a, Result<Vec<InvocationRecord>>> {
        let found = self.lite.read(|connection| rows(connection, SESSION_CALLS, &[text(session_id)], invocation_row));
        Box::pin(async move { found })
    }

    fn backlog(&self, now: Time) -> BoxFuture<'_, Result<Backlog>> {
        let found = self.lite.read(|connection| {
            let calls = rows(connection, OPEN_CALLS, &[time(now)], |row| {
                Ok((
                    row.get::<_, String>(0)?,
                    row.get::<_, String>(1)?,
                    row.get::<_, String>(2)?,
                    row.get::<_, Option<String>>(3)?,
                    row.get::<_, bool>(4)?,
                    row.get::<_, bool>(5)?,
                    row.get::<_, i64>(6)?,
                    row.get::<_, bool>(7)?,
                ))
            })?;
            let (approvals_pending, sessions_active, oldest_due, oldest_outcome) =
                one(connection, BACKLOG, &[time(now)], |row| {
                    Ok((row.get::<_, i64>(0)?, row.get::<_, i64>(1)?, get_maybe_time(row, 2)?, get_maybe_time(row, 3)?))
                })?;
            let calls = calls.into_iter().map(open_calls).collect::<Result<_>>()?;
            Ok(Backlog { calls, approvals_pending, sessions_active, oldest_due, oldest_outcome })
        });
        Box::pin(async move { found })
    }

    fn covered<'a>(
        &'a self,
        protocol: &'a str,
        target: &'a str,
        audience: Option<&'a str>,
        now: Time,
    ) -> BoxFuture<'a, Result<bool>> {
        let values = [time(now), text(protocol), text(target), maybe_text(audience)];
        let found = self.lite.read(|connection| one(connection, COVERED, &values, |row| row.get::<_, bool>(0)));
        Box::pin(async move { found })
    }

    fn calls_of_principal<'a>(&'a self, principal_id: &'a str) -> BoxFuture<'a, Result<Vec<InvocationRecord>>> {
        let found =
            self.lite.read(|connection| rows(connection, CALLS_OF_PRINCIPAL, &[text(principal_id)], invocation_row));
        Box::pin(async move { found })
    }

    fn disable_principal<'a>(
        &'a self,
        principal_id: &'a str,
        at: Time,
        calls: &'a [InvocationRecord],
        events: &'a [Event],
    ) -> BoxFuture<'a, Result<()>> {
        let id = principal_id.to_owned();
        let calls = calls.to_vec();
        let events = events.to_vec();
        Box::pin(self.lite.write(move |connection| {
            if execute(connection, DISABLE_PRINCIPAL, &[text(&id), time(at)])? == 0 {
                let found = one(connection, PRINCIPAL_EXISTS, &[text(&id)], |row| row.get::<_, i64>(0))?;
                return Err(if found == 0 {
                    StoreError::new(ErrorKind::NotFound, format!("no principal {id}"))
                } else {
                    StoreError::new(ErrorKind::Conflict, format!("principal {id} is disabled already"))
                });
            }
            for call in &calls {
                update_call(connection, call)?;
            }
            for event in &events {
                event_insert(connection, event)?;
            }
            Ok(())
        }))
    }

    fn insert_session<'a>(&'a self, s: &'a SessionRecord, event: &'a Event) -> BoxFuture<'a, Result<()>> {
        let values = vec![
            text(&s.id),
            text(&s.principal_id),
            text(s.status.as_str()),
            json(&s.capabilities),
            time(s.created_at),
            time(s.heartbeat_at),
            time(s.expires_at),
            maybe_time(s.closed_at),
            int(s.row_version),
            Arg::Text(serde_json::to_string(&s.admission).unwrap_or_default()),
            maybe_time(s.draining_at),
        ];
        let event = event.clone();
        Box::pin(self.lite.write(move |connection| {
            execute(connection, INSERT_SESSION, &values)?;
            event_insert(connection, &event)
        }))
    }

    fn session<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<SessionRecord>> {
        let found = self.lite.read(|connection| one(connection, SESSION, &[text(id)], session_row));
        Box::pin(async move { found })
    }

    fn sessions(&self, limit: u32) -> BoxFuture<'_, Result<Vec<SessionRecord>>> {
        let found = self.lite.read(|connection| rows(connection, SESSIONS, &[int(limit)], session_row));
        Box::pin(async move { found })
    }

    fn update_session<'a>(
        &'a self,
        s: &'a SessionRecord,
        calls: &'a [InvocationRecord],
        events: &'a [Event],
    ) -> BoxFuture<'a, Result<()>> {
        let values = vec![
            text(&s.id),
            int(s.row_version - 1),
            text(s.status.as_str()),
            time(s.heartbeat_at),
            time(s.expires_at),
            maybe_time(s.closed_at),
            int(s.row_version),
            Arg::Text(serde_json::to_string(&s.admission).unwrap_or_default()),
            maybe_time(s.draining_at),
        ];
        let id = s.id.clone();
        let calls = calls.to_vec();
        let events = events.to_vec();
        Box::pin(self.lite.write(move |connection| {
            if execute(connection, UPDATE_SESSION, &values)? == 0 {
                return Err(StoreError::new(ErrorKind::Stale, format!("session {id} moved on")));
            }
            for call in &calls {
                update_call(connection, call)?;
            }
            for event in &events {
                event_insert(connection, event)?;
            }
            Ok(())
        }))
    }
}
