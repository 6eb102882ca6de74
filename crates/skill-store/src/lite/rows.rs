//! Values in and rows out, stored exactly as sqlx stores them (so both drivers read each other's
//! rows): times as RFC 3339 text with as many fraction digits as needed, JSON as text.

use chrono::{DateTime, SecondsFormat};
use rusqlite::types::Value as Arg;
use rusqlite::{Connection, Row, Statement};
use serde_json::Value;

use crate::error::{ErrorKind, Result, StoreError};
use crate::records::{Event, InvocationRecord, SessionRecord, Time};
use crate::states;

/// A time as sqlx writes it for SQLite (its text order is its time order).
pub(crate) fn time_text(time: Time) -> String {
    time.to_rfc3339_opts(SecondsFormat::AutoSi, false)
}

pub(crate) fn text_time(text: &str) -> rusqlite::Result<Time> {
    DateTime::parse_from_rfc3339(text)
        .map(|time| time.to_utc())
        .map_err(|error| rusqlite::Error::FromSqlConversionFailure(0, rusqlite::types::Type::Text, Box::new(error)))
}

/// Binds `values` to a statement written with `$1`, `$2`, … (the SQL text both backends share):
/// the parameter named `$n` takes `values[n - 1]`, wherever it first appears.
pub(crate) fn bind_dollars(statement: &mut Statement<'_>, values: &[Arg]) -> Result<()> {
    for index in 1..=statement.parameter_count() {
        let name = statement.parameter_name(index).unwrap_or_default();
        let position = name.strip_prefix('$').and_then(|n| n.parse::<usize>().ok()).filter(|n| *n >= 1);
        let Some(value) = position.and_then(|n| values.get(n - 1)) else {
            return Err(StoreError::new(ErrorKind::Internal, format!("no value for the parameter {name:?}")));
        };
        statement.raw_bind_parameter(index, value)?;
    }
    Ok(())
}

pub(crate) fn text(value: &str) -> Arg {
    Arg::Text(value.to_owned())
}

pub(crate) fn maybe_text(value: Option<&str>) -> Arg {
    value.map_or(Arg::Null, text)
}

pub(crate) fn time(value: Time) -> Arg {
    Arg::Text(time_text(value))
}

pub(crate) fn maybe_time(value: Option<Time>) -> Arg {
    value.map_or(Arg::Null, time)
}

pub(crate) fn json(value: &Value) -> Arg {
    Arg::Text(value.to_string())
}

pub(crate) fn maybe_json(value: Option<&Value>) -> Arg {
    value.map_or(Arg::Null, json)
}

/// A fixed-shape document, kept as the same JSON text its `Value` would be; one that does not
/// serialize is an error, never a `NULL` (which would say "no basis").
pub(crate) fn maybe_document<T: serde::Serialize>(value: Option<&T>) -> Result<Arg> {
    match value.map(serde_json::to_value).transpose() {
        Ok(value) => Ok(value.as_ref().map_or(Arg::Null, json)),
        Err(error) => Err(StoreError::new(ErrorKind::Internal, format!("a document does not serialize: {error}"))),
    }
}

/// A call's error, as the JSON text of its document (which always serializes: strings, a flag
/// and a JSON value).
pub(crate) fn maybe_failure(error: Option<&skill_api::ReportedError>) -> Arg {
    error.map_or(Arg::Null, |error| json(&serde_json::json!(error)))
}

pub(crate) fn int(value: impl Into<i64>) -> Arg {
    Arg::Integer(value.into())
}

pub(crate) fn get_time(row: &Row<'_>, index: usize) -> rusqlite::Result<Time> {
    text_time(&row.get::<_, String>(index)?)
}

pub(crate) fn get_maybe_time(row: &Row<'_>, index: usize) -> rusqlite::Result<Option<Time>> {
    row.get::<_, Option<String>>(index)?.as_deref().map(text_time).transpose()
}

pub(crate) fn get_json(row: &Row<'_>, index: usize) -> rusqlite::Result<Value> {
    let text = row.get::<_, String>(index)?;
    serde_json::from_str(&text)
        .map_err(|error| rusqlite::Error::FromSqlConversionFailure(index, rusqlite::types::Type::Text, Box::new(error)))
}

/// A JSON column read as the document `T`.
pub(crate) fn get_document<T: serde::de::DeserializeOwned>(row: &Row<'_>, index: usize) -> rusqlite::Result<T> {
    let text = row.get::<_, String>(index)?;
    serde_json::from_str(&text)
        .map_err(|error| rusqlite::Error::FromSqlConversionFailure(index, rusqlite::types::Type::Text, Box::new(error)))
}

pub(crate) fn get_maybe_json(row: &Row<'_>, index: usize) -> rusqlite::Result<Option<Value>> {
    match row.get::<_, Option<String>>(index)? {
        None => Ok(None),
        Some(text) => serde_json::from_str(&text).map(Some).map_err(|error| {
            rusqlite::Error::FromSqlConversionFailure(index, rusqlite::types::Type::Text, Box::new(error))
        }),
    }
}

/// How many columns `invocation_columns!` has.
pub(crate) const CALL_COLUMNS: usize = 33;

/// A call, from the columns of `invocation_columns!` in their order.
pub(crate) fn invocation_row(row: &Row<'_>) -> rusqlite::Result<InvocationRecord> {
    Ok(InvocationRecord {
        id: row.get(0)?,
        skill_id: row.get(1)?,
        protocol: row.get(2)?,
        target: row.get(3)?,
        audience: row.get(4)?,
        inputs: get_json(row, 5)?,
        requested_by_kind: states::get(row, 6)?,
        requested_by_ref: row.get(7)?,
        authority_principal_id: row.get(8)?,
        authorization_basis: states::get_document(row, 9)?,
        idempotency_key: row.get(10)?,
        status: states::get(row, 11)?,
        attempt: row.get(12)?,
        max_attempts: row.get(13)?,
        available_at: get_time(row, 14)?,
        output: get_maybe_json(row, 15)?,
        error: states::get_document(row, 16)?,
        cost: get_maybe_json(row, 17)?,
        fencing_token: row.get(18)?,
        executor_principal_id: row.get(19)?,
        executor_session_id: row.get(20)?,
        lease_expires_at: get_maybe_time(row, 21)?,
        heartbeat_at: get_maybe_time(row, 22)?,
        task_id: row.get(23)?,
        run_id: row.get(24)?,
        artifact_id: row.get(25)?,
        row_version: row.get(26)?,
        created_at: get_time(row, 27)?,
        updated_at: get_time(row, 28)?,
        started_at: get_maybe_time(row, 29)?,
        attempt_started_at: get_maybe_time(row, 30)?,
        finished_at: get_maybe_time(row, 31)?,
        traceparent: row.get(32)?,
    })
}

/// Every column of a call, in the order of `invocation_columns!` (for an insert).
pub(crate) fn invocation_values(c: &InvocationRecord) -> Result<Vec<Arg>> {
    Ok(vec![
        text(&c.id),
        text(&c.skill_id),
        text(&c.protocol),
        text(&c.target),
        maybe_text(c.audience.as_deref()),
        json(&c.inputs),
        text(c.requested_by_kind.as_str()),
        text(&c.requested_by_ref),
        text(&c.authority_principal_id),
        maybe_document(c.authorization_basis.as_ref())?,
        maybe_text(c.idempotency_key.as_deref()),
        text(c.status.as_str()),
        int(c.attempt),
        int(c.max_attempts),
        time(c.available_at),
        maybe_json(c.output.as_ref()),
        maybe_failure(c.error.as_ref()),
        maybe_json(c.cost.as_ref()),
        int(c.fencing_token),
        maybe_text(c.executor_principal_id.as_deref()),
        maybe_text(c.executor_session_id.as_deref()),
        maybe_time(c.lease_expires_at),
        maybe_time(c.heartbeat_at),
        maybe_text(c.task_id.as_deref()),
        maybe_text(c.run_id.as_deref()),
        maybe_text(c.artifact_id.as_deref()),
        int(c.row_version),
        time(c.created_at),
        time(c.updated_at),
        maybe_time(c.started_at),
        maybe_time(c.attempt_started_at),
        maybe_time(c.finished_at),
        maybe_text(c.traceparent.as_deref()),
    ])
}

/// The values of the call update shared with PostgreSQL (`UPDATE_CALL`), `$1` to `$19`.
pub(crate) fn update_values(c: &InvocationRecord) -> Vec<Arg> {
    vec![
        text(&c.id),
        int(c.row_version - 1),
        text(c.status.as_str()),
        int(c.attempt),
        time(c.available_at),
        maybe_json(c.output.as_ref()),
        maybe_failure(c.error.as_ref()),
        maybe_json(c.cost.as_ref()),
        int(c.fencing_token),
        maybe_text(c.executor_principal_id.as_deref()),
        maybe_text(c.executor_session_id.as_deref()),
        maybe_time(c.lease_expires_at),
        maybe_time(c.heartbeat_at),
        maybe_text(c.artifact_id.as_deref()),
        int(c.row_version),
        time(c.updated_at),
        maybe_time(c.started_at),
        maybe_time(c.attempt_started_at),
        maybe_time(c.finished_at),
    ]
}

/// A session, from `id, principal_id, status, capabilities, admission, created_at, heartbeat_at,
/// expires_at, closed_at, row_version, draining_at`.
pub(crate) fn session_row(row: &Row<'_>) -> rusqlite::Result<SessionRecord> {
    Ok(SessionRecord {
        id: row.get(0)?,
        principal_id: row.get(1)?,
        status: states::get(row, 2)?,
        capabilities: get_json(row, 3)?,
        admission: get_document(row, 4)?,
        created_at: get_time(row, 5)?,
        heartbeat_at: get_time(row, 6)?,
        expires_at: get_time(row, 7)?,
        closed_at: get_maybe_time(row, 8)?,
        row_version: row.get(9)?,
        draining_at: get_maybe_time(row, 10)?,
    })
}

/// Appends `event`, with its journal entry and leaf, in the writer's transaction.
pub(crate) fn event_insert(connection: &Connection, event: &Event) -> Result<()> {
    let written = crate::leaves::written(event);
    let mut statement = connection.prepare_cached(
        "INSERT INTO events (id, kind, subject, data, actor_id, request_id, created_at, entry, salt) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
    )?;
    statement.execute((
        &event.id,
        &event.kind,
        &event.subject,
        event.data.to_string(),
        &event.actor_id,
        &event.request_id,
        time_text(event.created_at),
        &written.entry,
        &written.salt,
    ))?;
    crate::leaves::lite_nodes(connection, written.leaf)
}

/// The rows `sql` returns with `values`, each made by `row`.
pub(crate) fn rows<T>(
    connection: &Connection,
    sql: &str,
    values: &[Arg],
    row: impl Fn(&rusqlite::Row<'_>) -> rusqlite::Result<T>,
) -> Result<Vec<T>> {
    let mut statement = connection.prepare_cached(sql)?;
    bind_dollars(&mut statement, values)?;
    let mut found = Vec::new();
    let mut cursor = statement.raw_query();
    while let Some(next) = cursor.next()? {
        found.push(row(next)?);
    }
    Ok(found)
}

/// The one row `sql` returns; `NotFound` when none.
pub(crate) fn one<T>(
    connection: &Connection,
    sql: &str,
    values: &[Arg],
    row: impl Fn(&rusqlite::Row<'_>) -> rusqlite::Result<T>,
) -> Result<T> {
    rows(connection, sql, values, row)?
        .into_iter()
        .next()
        .ok_or_else(|| StoreError::new(ErrorKind::NotFound, "no such row"))
}

pub(crate) fn execute(connection: &Connection, sql: &str, values: &[Arg]) -> Result<usize> {
    let mut statement = connection.prepare_cached(sql)?;
    bind_dollars(&mut statement, values)?;
    Ok(statement.raw_execute()?)
}
