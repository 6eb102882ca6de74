//! New calls with their event, inserted together (see `together.rs`): `unnest` over each column,
//! the calls and the events in one data-modifying `WITH`, each answered after the commit with
//! whether an active executor session covers it. A call whose key another call already has (in
//! the table or earlier in the same statement) is not inserted; it is answered as alone — the
//! call that has the key. When the statement fails as a whole, each call is inserted alone, so
//! one cannot fail the others.

use futures::future::BoxFuture;
use sqlx::PgPool;
use sqlx::Row as _;
use sqlx::types::Json;
use tokio::sync::oneshot;

use super::{bind_event_arrays, events_written_sql};
use crate::error::Result;
use crate::invocations::{covered_sql, invocation_columns};
use crate::records::{Event, Inserted, InvocationRecord};
use crate::together::{Gather, Insertion, stopped};

/// The calls with their events, one row of input each; the ordinals of the calls inserted, with
/// their cover.
const INSERT_CALLS_WITH_EVENTS: &str = concat!(
    "WITH input AS (SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], \
     $6::jsonb[], $7::text[], $8::text[], $9::text[], $10::jsonb[], $11::text[], $12::text[], $13::int4[], \
     $14::int4[], $15::timestamptz[], $16::jsonb[], $17::jsonb[], $18::jsonb[], $19::int8[], $20::text[], \
     $21::text[], $22::timestamptz[], $23::timestamptz[], $24::text[], $25::text[], $26::text[], $27::int4[], \
     $28::timestamptz[], $29::timestamptz[], $30::timestamptz[], $31::timestamptz[], $32::timestamptz[], \
     $33::text[], $34::text[], $35::text[], $36::text[], $37::jsonb[], $38::text[], $39::text[], \
     $40::timestamptz[], $41::text[], $42::bytea[]) \
     WITH ORDINALITY AS i (",
    invocation_columns!(),
    ", event_id, event_kind, event_subject, event_data, event_actor, event_request, event_at, event_entry, event_salt, n)), \
     added AS (INSERT INTO skill_invocations (",
    invocation_columns!(),
    ") SELECT ",
    invocation_columns!(),
    " FROM input ORDER BY n ON CONFLICT (skill_id, idempotency_key) DO NOTHING RETURNING id), \
     inserted AS (SELECT input.n FROM input JOIN added ON added.id = input.id), ",
    events_written_sql!("inserted"),
    " SELECT i.n, (",
    covered_sql!(
        "jsonb_array_elements_text(s.admission -> '",
        "')",
        "i.created_at",
        "i.protocol",
        "i.target",
        "i.audience"
    ),
    ") AS covered FROM input i JOIN inserted u ON u.n = i.n"
);

/// Inserts `call` with `event`, together with the calls that came meanwhile; the call that has
/// its key when another has it.
pub(crate) async fn insert(
    gather: &Gather<Insertion>,
    pool: &PgPool,
    call: &InvocationRecord,
    event: &Event,
) -> Result<Inserted> {
    let (done, answer) = oneshot::channel();
    gather.send(pool, Insertion { call: call.clone(), event: event.clone(), done }, write_all)?;
    answer.await.map_err(|_| stopped())?
}

fn write_all(pool: PgPool, insertions: Vec<Insertion>) -> BoxFuture<'static, ()> {
    Box::pin(async move {
        let written = match &insertions[..] {
            [_] => Err(()),
            _ => write(&pool, &insertions).await.map_err(drop),
        };
        match written {
            Ok(written) => {
                for (ordinal, insertion) in insertions.into_iter().enumerate() {
                    let result = match written.iter().find(|(n, _)| *n == ordinal as i64 + 1) {
                        Some((_, covered)) => Ok(Inserted::New { covered: Some(*covered) }),
                        // Its key was taken: answered with the call that has it.
                        None => super::insert_alone(&pool, &insertion.call, &insertion.event).await,
                    };
                    let _ = insertion.done.send(result);
                }
            }
            // Alone, or one row's refusal failed the statement: each is inserted alone.
            Err(()) => {
                for insertion in insertions {
                    let result = super::insert_alone(&pool, &insertion.call, &insertion.event).await;
                    let _ = insertion.done.send(result);
                }
            }
        }
    })
}

/// The ordinals (from 1) of the calls inserted, with whether a session covers each.
async fn write(pool: &PgPool, insertions: &[Insertion]) -> Result<Vec<(i64, bool)>> {
    let calls = || insertions.iter().map(|insertion| &insertion.call);
    let query = sqlx::query(INSERT_CALLS_WITH_EVENTS)
        .bind(calls().map(|c| c.id.as_str()).collect::<Vec<_>>())
        .bind(calls().map(|c| c.skill_id.as_str()).collect::<Vec<_>>())
        .bind(calls().map(|c| c.protocol.as_str()).collect::<Vec<_>>())
        .bind(calls().map(|c| c.target.as_str()).collect::<Vec<_>>())
        .bind(calls().map(|c| c.audience.as_deref()).collect::<Vec<_>>())
        .bind(calls().map(|c| Json(&c.inputs)).collect::<Vec<_>>())
        .bind(calls().map(|c| c.requested_by_kind.as_str()).collect::<Vec<_>>())
        .bind(calls().map(|c| c.requested_by_ref.as_str()).collect::<Vec<_>>())
        .bind(calls().map(|c| c.authority_principal_id.as_str()).collect::<Vec<_>>())
        .bind(calls().map(|c| c.authorization_basis.as_ref().map(Json)).collect::<Vec<_>>())
        .bind(calls().map(|c| c.idempotency_key.as_deref()).collect::<Vec<_>>())
        .bind(calls().map(|c| c.status.as_str()).collect::<Vec<_>>())
        .bind(calls().map(|c| c.attempt).collect::<Vec<_>>())
        .bind(calls().map(|c| c.max_attempts).collect::<Vec<_>>())
        .bind(calls().map(|c| c.available_at).collect::<Vec<_>>())
        .bind(calls().map(|c| c.output.as_ref().map(Json)).collect::<Vec<_>>())
        .bind(calls().map(|c| c.error.as_ref().map(Json)).collect::<Vec<_>>())
        .bind(calls().map(|c| c.cost.as_ref().map(Json)).collect::<Vec<_>>())
        .bind(calls().map(|c| c.fencing_token).collect::<Vec<_>>())
        .bind(calls().map(|c| c.executor_principal_id.as_deref()).collect::<Vec<_>>())
        .bind(calls().map(|c| c.executor_session_id.as_deref()).collect::<Vec<_>>())
        .bind(calls().map(|c| c.lease_expires_at).collect::<Vec<_>>())
        .bind(calls().map(|c| c.heartbeat_at).collect::<Vec<_>>())
        .bind(calls().map(|c| c.task_id.as_deref()).collect::<Vec<_>>())
        .bind(calls().map(|c| c.run_id.as_deref()).collect::<Vec<_>>())
        .bind(calls().map(|c| c.artifact_id.as_deref()).collect::<Vec<_>>())
        .bind(calls().map(|c| c.row_version).collect::<Vec<_>>())
        .bind(calls().map(|c| c.created_at).collect::<Vec<_>>())
        .bind(calls().map(|c| c.updated_at).collect::<Vec<_>>())
        .bind(calls().map(|c| c.started_at).collect::<Vec<_>>())
        .bind(calls().map(|c| c.attempt_started_at).collect::<Vec<_>>())
        .bind(calls().map(|c| c.finished_at).collect::<Vec<_>>())
        .bind(calls().map(|c| c.traceparent.as_deref()).collect::<Vec<_>>());
    let events: Vec<&Event> = insertions.iter().map(|insertion| &insertion.event).collect();
    let written = bind_event_arrays(query, &events).fetch_all(pool).await?;
    Ok(written
        .iter()
        .map(|row| Ok((row.try_get::<i64, _>(0)?, row.try_get::<bool, _>(1)?)))
        .collect::<std::result::Result<_, sqlx::Error>>()?)
}
