//! Call updates with their one event, written together (see `together.rs`): `unnest` over each
//! column, the update and the events in one data-modifying `WITH`. Each update keeps its own
//! row-version check and is answered only after the commit — written, or `NotFound`/`Stale` as
//! alone. When the statement fails as a whole (a guard refusing one row), each update is written
//! alone, so one cannot fail the others.

use futures::future::BoxFuture;
use sqlx::PgPool;
use sqlx::Row as _;
use sqlx::types::Json;
use tokio::sync::oneshot;

use super::{bind_event_arrays, events_written_sql};
use crate::error::Result;
use crate::records::{Event, InvocationRecord};
use crate::together::{Gather, Update, stopped};

/// The updates with their events, one row of input each: the row written only at its expected
/// version, the event only with it; the ordinals of the rows written are answered.
const UPDATE_CALLS_WITH_EVENTS: &str = concat!(
    "WITH input AS (SELECT * FROM unnest($1::text[], $2::int4[], \
     $3::text[], $4::int4[], $5::timestamptz[], $6::jsonb[], $7::jsonb[], $8::jsonb[], $9::int8[], $10::text[], \
     $11::text[], $12::timestamptz[], $13::timestamptz[], $14::text[], $15::int4[], $16::timestamptz[], \
     $17::timestamptz[], $18::timestamptz[], $19::timestamptz[], $20::text[], $21::text[], $22::text[], \
     $23::jsonb[], $24::text[], $25::text[], $26::timestamptz[], $27::text[], $28::bytea[]) WITH ORDINALITY AS i (id, expected, status, \
     attempt, available_at, output, error, cost, fencing_token, executor_principal_id, executor_session_id, \
     lease_expires_at, heartbeat_at, artifact_id, row_version, updated_at, started_at, attempt_started_at, \
     finished_at, event_id, event_kind, event_subject, event_data, event_actor, event_request, event_at, event_entry, event_salt, n)), \
     updated AS (UPDATE skill_invocations c SET status = i.status, attempt = i.attempt, \
     available_at = i.available_at, output = i.output, error = i.error, cost = i.cost, \
     fencing_token = i.fencing_token, executor_principal_id = i.executor_principal_id, \
     executor_session_id = i.executor_session_id, lease_expires_at = i.lease_expires_at, \
     heartbeat_at = i.heartbeat_at, artifact_id = i.artifact_id, row_version = i.row_version, \
     updated_at = i.updated_at, started_at = i.started_at, attempt_started_at = i.attempt_started_at, \
     finished_at = i.finished_at FROM input i WHERE c.id = i.id AND c.row_version = i.expected RETURNING i.n), ",
    events_written_sql!("updated"),
    " SELECT n FROM updated"
);

/// Writes `call` with `event` when the stored row is one version behind, together with the
/// updates that came meanwhile; `NotFound` or `Stale` otherwise.
pub(crate) async fn update(
    gather: &Gather<Update>,
    pool: &PgPool,
    call: &InvocationRecord,
    event: &Event,
) -> Result<()> {
    let (done, answer) = oneshot::channel();
    gather.send(pool, Update { call: call.clone(), event: event.clone(), done }, write_all)?;
    answer.await.map_err(|_| stopped())?
}

fn write_all(pool: PgPool, updates: Vec<Update>) -> BoxFuture<'static, ()> {
    Box::pin(async move {
        if let [update] = &updates[..] {
            let result = super::update_alone(&pool, &update.call, &update.event).await;
            if let Some(update) = updates.into_iter().next() {
                let _ = update.done.send(result);
            }
            return;
        }
        let rows: Vec<_> = updates.iter().map(|update| (&update.call, &update.event)).collect();
        match write(&pool, &rows).await {
            Ok(written) => {
                for (ordinal, update) in updates.into_iter().enumerate() {
                    let result = if written.contains(&(ordinal as i64 + 1)) {
                        Ok(())
                    } else {
                        Err(super::unwritten(&pool, &update.call.id).await)
                    };
                    let _ = update.done.send(result);
                }
            }
            Err(_) => {
                // One row's refusal fails the statement: each is written alone, with its own answer.
                for update in updates {
                    let result = super::update_alone(&pool, &update.call, &update.event).await;
                    let _ = update.done.send(result);
                }
            }
        }
    })
}

/// Writes each call with its event in one statement on `executor`; the ordinals (from 1) of
/// the rows written.
pub(in crate::invocations) async fn write<'e>(
    executor: impl sqlx::PgExecutor<'e>,
    rows: &[(&InvocationRecord, &Event)],
) -> Result<Vec<i64>> {
    let calls = || rows.iter().map(|(call, _)| *call);
    let query = sqlx::query(UPDATE_CALLS_WITH_EVENTS)
        .bind(calls().map(|c| c.id.as_str()).collect::<Vec<_>>())
        .bind(calls().map(|c| c.row_version - 1).collect::<Vec<_>>())
        .bind(calls().map(|c| c.status.as_str()).collect::<Vec<_>>())
        .bind(calls().map(|c| c.attempt).collect::<Vec<_>>())
        .bind(calls().map(|c| c.available_at).collect::<Vec<_>>())
        .bind(calls().map(|c| c.output.as_ref().map(Json)).collect::<Vec<_>>())
        .bind(calls().map(|c| c.error.as_ref().map(Json)).collect::<Vec<_>>())
        .bind(calls().map(|c| c.cost.as_ref().map(Json)).collect::<Vec<_>>())
        .bind(calls().map(|c| c.fencing_token).collect::<Vec<_>>())
        .bind(calls().map(|c| c.executor_principal_id.as_deref()).collect::<Vec<_>>())
        .bind(calls().map(|c| c.executor_session_id.as_deref()).collect::<Vec<_>>())
        .bind(calls().map(|c| c.lease_expires_at).collect::<Vec<_>>())
        .bind(calls().map(|c| c.heartbeat_at).collect::<Vec<_>>())
        .bind(calls().map(|c| c.artifact_id.as_deref()).collect::<Vec<_>>())
        .bind(calls().map(|c| c.row_version).collect::<Vec<_>>())
        .bind(calls().map(|c| c.updated_at).collect::<Vec<_>>())
        .bind(calls().map(|c| c.started_at).collect::<Vec<_>>())
        .bind(calls().map(|c| c.attempt_started_at).collect::<Vec<_>>())
        .bind(calls().map(|c| c.finished_at).collect::<Vec<_>>());
    let events: Vec<&Event> = rows.iter().map(|(_, event)| *event).collect();
    let written = bind_event_arrays(query, &events).fetch_all(executor).await?;
    Ok(written.iter().map(|row| row.try_get::<i64, _>(0)).collect::<std::result::Result<_, _>>()?)
}
