//! Invocations and executor sessions — written once for both backends. Every write is checked
//! against the row version it was computed from (`Stale` otherwise), so the engine decides each
//! transition from a row it read and no two writers both win.

use futures::future::BoxFuture;
use sqlx::types::Json;

use crate::backend::{PgStore, SqliteStore};
use crate::error::{ErrorKind, Result, StoreError};
use crate::records::{Admission, Event, Inserted, InvocationFilter, InvocationRecord, SessionRecord, Time};

/// Calls of skill versions and the sessions of the executors that run them.
pub trait InvocationStore: Send + Sync {
    /// Inserts a call with its event. When the version already has a call with the same key,
    /// nothing is written and that call is returned; the other unique rules (one call per
    /// approval and version, one execution call per run) are `Conflict`.
    fn insert_invocation<'a>(&'a self, call: &'a InvocationRecord, event: &'a Event)
    -> BoxFuture<'a, Result<Inserted>>;
    fn invocation<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<InvocationRecord>>;
    /// The call of version `skill_id` with the body key `key`.
    fn invocation_by_key<'a>(&'a self, skill_id: &'a str, key: &'a str) -> BoxFuture<'a, Result<InvocationRecord>>;
    /// Calls newest first, after the filter's cursor.
    fn invocations<'a>(&'a self, filter: &'a InvocationFilter) -> BoxFuture<'a, Result<Vec<InvocationRecord>>>;
    /// Writes `call` (whose `row_version` is one more than the stored one) and its events in one
    /// transaction; `Stale` when the stored row moved on, and nothing is written.
    fn update_invocation<'a>(&'a self, call: &'a InvocationRecord, events: &'a [Event]) -> BoxFuture<'a, Result<()>>;
    /// Pending calls available at `now` that `admission` covers, in queue order, at most `limit`.
    fn claimable<'a>(
        &'a self,
        admission: &'a Admission,
        now: Time,
        limit: u32,
    ) -> BoxFuture<'a, Result<Vec<InvocationRecord>>>;
    /// Running calls whose lease, or the session it was taken with, ended at or before `now`,
    /// oldest lease first.
    fn expired_leases<'a>(&'a self, now: Time, limit: u32) -> BoxFuture<'a, Result<Vec<InvocationRecord>>>;
    /// Running calls leased with a session.
    fn session_calls<'a>(&'a self, session_id: &'a str) -> BoxFuture<'a, Result<Vec<InvocationRecord>>>;

    /// Whether an active session at `now` last claimed with an admission that covers a call of
    /// `protocol` at `target` with `audience` (the rule of [`InvocationStore::claimable`]).
    fn covered<'a>(
        &'a self,
        protocol: &'a str,
        target: &'a str,
        audience: Option<&'a str>,
        now: Time,
    ) -> BoxFuture<'a, Result<bool>>;

    fn insert_session<'a>(&'a self, session: &'a SessionRecord, event: &'a Event) -> BoxFuture<'a, Result<()>>;
    fn session<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<SessionRecord>>;
    /// Writes `session` (one row version on) and the calls it ends, each one row version on, with
    /// the events, in one transaction; `Stale` when any of them moved on.
    fn update_session<'a>(
        &'a self,
        session: &'a SessionRecord,
        calls: &'a [InvocationRecord],
        events: &'a [Event],
    ) -> BoxFuture<'a, Result<()>>;
}

macro_rules! invocation_columns {
    () => {
        "id, skill_id, protocol, target, audience, inputs, requested_by_kind, requested_by_ref, \
         authority_principal_id, authorization_basis, idempotency_key, status, attempt, max_attempts, \
         available_at, output, error, cost, fencing_token, executor_principal_id, executor_session_id, \
         lease_expires_at, heartbeat_at, task_id, run_id, artifact_id, row_version, created_at, updated_at, \
         started_at, attempt_started_at, finished_at"
    };
}

/// Writes the changing columns of `$call` inside `$tx` when the stored row is one version
/// behind; the enclosing function returns `NotFound` or `Stale` otherwise.
macro_rules! update_call_in {
    ($tx:ident, $call:expr) => {{
        let c: &InvocationRecord = $call;
        let done = sqlx::query(
            "UPDATE skill_invocations SET status = $3, attempt = $4, available_at = $5, output = $6, error = $7, \
             cost = $8, fencing_token = $9, executor_principal_id = $10, executor_session_id = $11, \
             lease_expires_at = $12, heartbeat_at = $13, artifact_id = $14, row_version = $15, updated_at = $16, \
             started_at = $17, attempt_started_at = $18, finished_at = $19 \
             WHERE id = $1 AND row_version = $2",
        )
        .bind(&c.id)
        .bind(c.row_version - 1)
        .bind(&c.status)
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
        .execute(&mut *$tx)
        .await?;
        if done.rows_affected() == 0 {
            let stored: Option<i32> = sqlx::query_scalar("SELECT row_version FROM skill_invocations WHERE id = $1")
                .bind(&c.id)
                .fetch_optional(&mut *$tx)
                .await?;
            return Err(match stored {
                None => StoreError::new(ErrorKind::NotFound, format!("no call {}", c.id)),
                Some(stored) => StoreError::new(ErrorKind::Stale, format!("call {} is at row version {stored}", c.id)),
            });
        }
    }};
}

/// `$each` is the backend's set-returning function over a JSON array of strings, with a
/// `value` column (`json_each`, `jsonb_array_elements_text`); `$open` and `$close` surround a key
/// of a session's `admission` to make the same set of the array under it.
macro_rules! invocation_store {
    ($store:ty, $each:literal, $open:literal, $close:literal) => {
        impl InvocationStore for $store {
            fn insert_invocation<'a>(
                &'a self,
                c: &'a InvocationRecord,
                event: &'a Event,
            ) -> BoxFuture<'a, Result<Inserted>> {
                Box::pin(async move {
                    let mut tx = self.write().await?;
                    // Insert-or-nothing on the key; the other unique rules are conflicts.
                    let sql = concat!(
                        "INSERT INTO skill_invocations (",
                        invocation_columns!(),
                        ") VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, \
                         $18, $19, $20, $21, $22, $23, $24, $25, $26, $27, $28, $29, $30, $31, $32) \
                         ON CONFLICT (skill_id, idempotency_key) DO NOTHING"
                    );
                    let done = sqlx::query(sql)
                        .bind(&c.id)
                        .bind(&c.skill_id)
                        .bind(&c.protocol)
                        .bind(&c.target)
                        .bind(&c.audience)
                        .bind(Json(&c.inputs))
                        .bind(&c.requested_by_kind)
                        .bind(&c.requested_by_ref)
                        .bind(&c.authority_principal_id)
                        .bind(c.authorization_basis.as_ref().map(Json))
                        .bind(&c.idempotency_key)
                        .bind(&c.status)
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
                        .execute(&mut *tx)
                        .await?;
                    if done.rows_affected() == 1 {
                        crate::events::commit!(tx, event);
                        return Ok(Inserted::New);
                    }
                    let sql = concat!(
                        "SELECT ",
                        invocation_columns!(),
                        " FROM skill_invocations WHERE skill_id = $1 AND idempotency_key = $2"
                    );
                    let existing: InvocationRecord =
                        sqlx::query_as(sql).bind(&c.skill_id).bind(&c.idempotency_key).fetch_one(&mut *tx).await?;
                    Ok(Inserted::Existing(Box::new(existing)))
                })
            }

            fn invocation<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<InvocationRecord>> {
                Box::pin(async move {
                    let sql = concat!("SELECT ", invocation_columns!(), " FROM skill_invocations WHERE id = $1");
                    Ok(sqlx::query_as(sql).bind(id).fetch_one(self.read()).await?)
                })
            }

            fn invocation_by_key<'a>(
                &'a self,
                skill_id: &'a str,
                key: &'a str,
            ) -> BoxFuture<'a, Result<InvocationRecord>> {
                Box::pin(async move {
                    let sql = concat!(
                        "SELECT ",
                        invocation_columns!(),
                        " FROM skill_invocations WHERE skill_id = $1 AND idempotency_key = $2"
                    );
                    Ok(sqlx::query_as(sql).bind(skill_id).bind(key).fetch_one(self.read()).await?)
                })
            }

            fn invocations<'a>(
                &'a self,
                f: &'a InvocationFilter,
            ) -> BoxFuture<'a, Result<Vec<InvocationRecord>>> {
                Box::pin(async move {
                    let sql = concat!(
                        "SELECT ",
                        invocation_columns!(),
                        " FROM skill_invocations WHERE ($1 IS NULL OR status = $1) AND ($2 IS NULL OR skill_id = $2) \
                         AND ($3 IS NULL OR authority_principal_id = $3) AND ($4 IS NULL OR created_at >= $4) \
                         AND ($5 IS NULL OR created_at < $5) \
                         AND ($6 IS NULL OR created_at < $6 OR (created_at = $6 AND id < $7)) \
                         ORDER BY created_at DESC, id DESC LIMIT $8"
                    );
                    let (before_at, before_id) = f.before.clone().unzip();
                    Ok(sqlx::query_as(sql)
                        .bind(&f.status)
                        .bind(&f.skill_id)
                        .bind(&f.authority)
                        .bind(f.created_after)
                        .bind(f.created_before)
                        .bind(before_at)
                        .bind(before_id)
                        .bind(i64::from(f.limit))
                        .fetch_all(self.read())
                        .await?)
                })
            }

            fn update_invocation<'a>(
                &'a self,
                call: &'a InvocationRecord,
                events: &'a [Event],
            ) -> BoxFuture<'a, Result<()>> {
                Box::pin(async move {
                    let mut tx = self.write().await?;
                    update_call_in!(tx, call);
                    for event in events {
                        crate::events::insert!(tx, event);
                    }
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
                    // Origins admit an endpoint equal to them or under them (`origin/…`), as
                    // strings: `https://h:443/x` is not under `https://h`.
                    let sql = concat!(
                        "SELECT ",
                        invocation_columns!(),
                        " FROM skill_invocations i WHERE i.status = 'pending' AND i.available_at <= $1 \
                         AND ($6 IS NULL OR i.id = $6) AND ( \
                           (i.protocol = 'local' AND i.target IN (SELECT value FROM ",
                        $each,
                        "($2))) \
                           OR (i.protocol = 'http' AND EXISTS (SELECT 1 FROM ",
                        $each,
                        "($3) o WHERE i.target = o.value OR substr(i.target, 1, length(o.value) + 1) = o.value || '/')) \
                           OR (i.protocol = 'mcp' AND EXISTS (SELECT 1 FROM ",
                        $each,
                        "($4) o WHERE i.target = o.value OR (o.value NOT LIKE 'stdio:%' \
                             AND substr(i.target, 1, length(o.value) + 1) = o.value || '/')))) \
                         AND (i.protocol = 'local' OR i.audience IS NULL OR i.audience IN (SELECT value FROM ",
                        $each,
                        "($5))) ORDER BY i.available_at, i.created_at, i.id LIMIT $7"
                    );
                    Ok(sqlx::query_as(sql)
                        .bind(now)
                        .bind(Json(&a.local_entrypoints))
                        .bind(Json(&a.http_origins))
                        .bind(Json(&a.mcp_endpoints))
                        .bind(Json(&a.audiences))
                        .bind(&a.invocation_id)
                        .bind(i64::from(limit))
                        .fetch_all(self.read())
                        .await?)
                })
            }

            fn expired_leases<'a>(&'a self, now: Time, limit: u32) -> BoxFuture<'a, Result<Vec<InvocationRecord>>> {
                Box::pin(async move {
                    let sql = concat!(
                        "SELECT ",
                        invocation_columns!(),
                        " FROM skill_invocations WHERE status = 'running' AND (lease_expires_at <= $1 \
                         OR EXISTS (SELECT 1 FROM executor_sessions s WHERE s.id = executor_session_id \
                           AND s.expires_at <= $1)) ORDER BY lease_expires_at, id LIMIT $2"
                    );
                    Ok(sqlx::query_as(sql).bind(now).bind(i64::from(limit)).fetch_all(self.read()).await?)
                })
            }

            fn session_calls<'a>(&'a self, session_id: &'a str) -> BoxFuture<'a, Result<Vec<InvocationRecord>>> {
                Box::pin(async move {
                    let sql = concat!(
                        "SELECT ",
                        invocation_columns!(),
                        " FROM skill_invocations WHERE status = 'running' AND executor_session_id = $1 ORDER BY id"
                    );
                    Ok(sqlx::query_as(sql).bind(session_id).fetch_all(self.read()).await?)
                })
            }

            fn covered<'a>(
                &'a self,
                protocol: &'a str,
                target: &'a str,
                audience: Option<&'a str>,
                now: Time,
            ) -> BoxFuture<'a, Result<bool>> {
                Box::pin(async move {
                    let sql = concat!(
                        "SELECT EXISTS (SELECT 1 FROM executor_sessions s WHERE s.status = 'active' AND s.expires_at > $1 AND ( \
                           ($2 = 'local' AND EXISTS (SELECT 1 FROM ",
                        $open,
                        "localEntrypoints",
                        $close,
                        " e WHERE e.value = $3)) \
                           OR ($2 = 'http' AND EXISTS (SELECT 1 FROM ",
                        $open,
                        "httpOrigins",
                        $close,
                        " o WHERE $3 = o.value OR substr($3, 1, length(o.value) + 1) = o.value || '/')) \
                           OR ($2 = 'mcp' AND EXISTS (SELECT 1 FROM ",
                        $open,
                        "mcpEndpoints",
                        $close,
                        " o WHERE $3 = o.value OR (o.value NOT LIKE 'stdio:%' \
                             AND substr($3, 1, length(o.value) + 1) = o.value || '/')))) \
                         AND ($2 = 'local' OR $4 IS NULL OR EXISTS (SELECT 1 FROM ",
                        $open,
                        "audiences",
                        $close,
                        " a WHERE a.value = $4)))"
                    );
                    Ok(sqlx::query_scalar(sql)
                        .bind(now)
                        .bind(protocol)
                        .bind(target)
                        .bind(audience)
                        .fetch_one(self.read())
                        .await?)
                })
            }

            fn insert_session<'a>(&'a self, s: &'a SessionRecord, event: &'a Event) -> BoxFuture<'a, Result<()>> {
                Box::pin(async move {
                    let mut tx = self.write().await?;
                    sqlx::query(
                        "INSERT INTO executor_sessions (id, principal_id, status, capabilities, created_at, \
                         heartbeat_at, expires_at, closed_at, row_version, admission) \
                         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)",
                    )
                    .bind(&s.id)
                    .bind(&s.principal_id)
                    .bind(&s.status)
                    .bind(Json(&s.capabilities))
                    .bind(s.created_at)
                    .bind(s.heartbeat_at)
                    .bind(s.expires_at)
                    .bind(s.closed_at)
                    .bind(s.row_version)
                    .bind(Json(&s.admission))
                    .execute(&mut *tx)
                    .await?;
                    crate::events::commit!(tx, event);
                    Ok(())
                })
            }

            fn session<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<SessionRecord>> {
                Box::pin(async move {
                    Ok(sqlx::query_as(
                        "SELECT id, principal_id, status, capabilities, admission, created_at, heartbeat_at, \
                         expires_at, closed_at, row_version FROM executor_sessions WHERE id = $1",
                    )
                    .bind(id)
                    .fetch_one(self.read())
                    .await?)
                })
            }

            fn update_session<'a>(
                &'a self,
                s: &'a SessionRecord,
                calls: &'a [InvocationRecord],
                events: &'a [Event],
            ) -> BoxFuture<'a, Result<()>> {
                Box::pin(async move {
                    let mut tx = self.write().await?;
                    let done = sqlx::query(
                        "UPDATE executor_sessions SET status = $3, heartbeat_at = $4, expires_at = $5, closed_at = $6, \
                         row_version = $7, admission = $8 WHERE id = $1 AND row_version = $2",
                    )
                    .bind(&s.id)
                    .bind(s.row_version - 1)
                    .bind(&s.status)
                    .bind(s.heartbeat_at)
                    .bind(s.expires_at)
                    .bind(s.closed_at)
                    .bind(s.row_version)
                    .bind(Json(&s.admission))
                    .execute(&mut *tx)
                    .await?;
                    if done.rows_affected() == 0 {
                        return Err(StoreError::new(ErrorKind::Stale, format!("session {} moved on", s.id)));
                    }
                    for call in calls {
                        update_call_in!(tx, call);
                    }
                    for event in events {
                        crate::events::insert!(tx, event);
                    }
                    tx.commit().await?;
                    Ok(())
                })
            }
        }
    };
}

invocation_store!(SqliteStore, "json_each", "json_each(s.admission, '$.", "')");
invocation_store!(PgStore, "jsonb_array_elements_text", "jsonb_array_elements_text(s.admission -> '", "')");
