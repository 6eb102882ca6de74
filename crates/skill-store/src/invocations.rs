//! Invocations and executor sessions. Every write is checked against the row version it was
//! computed from (`Stale` otherwise), so the engine decides each transition from a row it read and
//! no two writers both win. The SQL text is shared; PostgreSQL runs it through sqlx
//! (`postgres.rs`), SQLite through its hot path (`sqlite.rs`, see `lite.rs`).

mod postgres;
mod sqlite;

use futures::future::BoxFuture;

use crate::error::Result;
use crate::records::{
    Admission, ArtifactRecord, Backlog, BasisState, Event, Inserted, InvocationFilter, InvocationRecord, OpenCalls,
    SessionRecord, Time,
};

/// What the engine makes of one candidate of a claim, given the state of its basis.
#[derive(Debug, Clone, PartialEq)]
pub enum Decision {
    /// Take it: the running row (one row version on) and its events; the claim ends.
    Take(InvocationRecord, Vec<Event>),
    /// Its basis is gone: the cancelled row (one row version on) and its events, written in the
    /// claim's transaction; the claim goes on to the next candidate.
    Cancel(InvocationRecord, Vec<Event>),
    /// Leave it pending (held, or not for this executor now) and look at the next one.
    Pass,
    /// Take nothing more in this claim.
    Stop,
}

/// The engine's judge of a claim's candidates; it only computes (it runs inside the store's
/// transaction).
pub type Take = Box<dyn FnMut(&InvocationRecord, &BasisState) -> Decision + Send>;

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
    /// Whether `principal_id` ever claimed the call `id` (its journal says so).
    fn claimed_by<'a>(&'a self, id: &'a str, principal_id: &'a str) -> BoxFuture<'a, Result<bool>>;
    /// Calls newest first, after the filter's cursor.
    fn invocations<'a>(&'a self, filter: &'a InvocationFilter) -> BoxFuture<'a, Result<Vec<InvocationRecord>>>;
    /// Writes `call` (whose `row_version` is one more than the stored one) and its events in one
    /// transaction; `Stale` when the stored row moved on, and nothing is written.
    fn update_invocation<'a>(&'a self, call: &'a InvocationRecord, events: &'a [Event]) -> BoxFuture<'a, Result<()>>;
    /// [`InvocationStore::update_invocation`] with the artifacts of the call's result (inserted
    /// first, in order), in the same transaction.
    fn update_invocation_with_artifacts<'a>(
        &'a self,
        call: &'a InvocationRecord,
        artifacts: &'a [ArtifactRecord],
        events: &'a [Event],
    ) -> BoxFuture<'a, Result<()>>;
    /// Pending calls available at `now` that `admission` covers, in queue order, at most `limit`.
    fn claimable<'a>(
        &'a self,
        admission: &'a Admission,
        now: Time,
        limit: u32,
    ) -> BoxFuture<'a, Result<Vec<InvocationRecord>>>;
    /// Takes, in one transaction, the first pending calls available at `now` that `admission`
    /// covers (queue order) and `take` accepts, at most `most`, and writes what `take` made of
    /// them, with the candidates it cancelled on the way. Claims running at once never want the
    /// same row: SQLite has one writer, PostgreSQL skips locked rows.
    fn claim_up_to<'a>(
        &'a self,
        admission: &'a Admission,
        now: Time,
        most: usize,
        take: Take,
    ) -> BoxFuture<'a, Result<Vec<InvocationRecord>>>;
    /// [`InvocationStore::claim_up_to`] one call.
    fn claim<'a>(
        &'a self,
        admission: &'a Admission,
        now: Time,
        take: Take,
    ) -> BoxFuture<'a, Result<Option<InvocationRecord>>> {
        Box::pin(async move { Ok(self.claim_up_to(admission, now, 1, take).await?.pop()) })
    }
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

    /// What waits at `now` (the metrics' queue depth): the open calls (pending and running)
    /// counted by status, implementation and what a pending one waits for; the approvals not
    /// decided; the active executor sessions; the oldest due call; the oldest outcome still
    /// being carried out.
    fn backlog(&self, now: Time) -> BoxFuture<'_, Result<Backlog>>;

    /// The open calls a principal is in: pending or running on its authority, running with it as
    /// the executor, and pending on an approval it decided.
    fn calls_of_principal<'a>(&'a self, principal_id: &'a str) -> BoxFuture<'a, Result<Vec<InvocationRecord>>>;
    /// Disables the principal at `at` and writes `calls` (each one row version on) and `events`,
    /// in one transaction: `NotFound` when there is no such principal, `Conflict` when it is
    /// disabled already, `Stale` when a call moved on — and nothing is written.
    fn disable_principal<'a>(
        &'a self,
        principal_id: &'a str,
        at: Time,
        calls: &'a [InvocationRecord],
        events: &'a [Event],
    ) -> BoxFuture<'a, Result<()>>;

    fn insert_session<'a>(&'a self, session: &'a SessionRecord, event: &'a Event) -> BoxFuture<'a, Result<()>>;
    fn session<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<SessionRecord>>;
    /// The newest `limit` executor sessions, open ones first.
    fn sessions(&self, limit: u32) -> BoxFuture<'_, Result<Vec<SessionRecord>>>;
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
         started_at, attempt_started_at, finished_at, traceparent"
    };
}
use invocation_columns;

/// Insert-or-nothing on the key; the other unique rules are conflicts.
macro_rules! insert_call_sql {
    () => {
        concat!(
            "INSERT INTO skill_invocations (",
            $crate::invocations::invocation_columns!(),
            ") VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, \
             $18, $19, $20, $21, $22, $23, $24, $25, $26, $27, $28, $29, $30, $31, $32, $33) \
             ON CONFLICT (skill_id, idempotency_key) DO NOTHING"
        )
    };
}
use insert_call_sql;
const INSERT_CALL: &str = insert_call_sql!();
const CALL_BY_ID: &str = concat!("SELECT ", invocation_columns!(), " FROM skill_invocations WHERE id = $1");
const CALL_BY_KEY: &str =
    concat!("SELECT ", invocation_columns!(), " FROM skill_invocations WHERE skill_id = $1 AND idempotency_key = $2");
const CALLS: &str = concat!(
    "SELECT ",
    invocation_columns!(),
    " FROM skill_invocations WHERE ($1 IS NULL OR status = $1) AND ($2 IS NULL OR skill_id = $2) \
     AND ($3 IS NULL OR authority_principal_id = $3) AND ($4 IS NULL OR created_at >= $4) \
     AND ($5 IS NULL OR created_at < $5) \
     AND ($6 IS NULL OR created_at < $6 OR (created_at = $6 AND id < $7)) AND ($9 IS NULL OR task_id = $9) \
     AND ($10 IS NULL OR executor_principal_id = $10) ORDER BY created_at DESC, id DESC LIMIT $8"
);
/// The changing columns of a call, when the stored row is one version behind.
macro_rules! update_call_sql {
    () => {
        "UPDATE skill_invocations SET status = $3, attempt = $4, available_at = $5, output = $6, \
         error = $7, cost = $8, fencing_token = $9, executor_principal_id = $10, executor_session_id = $11, \
         lease_expires_at = $12, heartbeat_at = $13, artifact_id = $14, row_version = $15, updated_at = $16, \
         started_at = $17, attempt_started_at = $18, finished_at = $19 \
         WHERE id = $1 AND row_version = $2"
    };
}
use update_call_sql;
const UPDATE_CALL: &str = update_call_sql!();
const CLAIMED_BY: &str = "SELECT EXISTS (SELECT 1 FROM events WHERE subject = $1 \
     AND kind = 'skill.invocation_claimed' AND actor_id = $2)";
const ROW_VERSION: &str = "SELECT row_version FROM skill_invocations WHERE id = $1";
const EXPIRED: &str = concat!(
    "SELECT ",
    invocation_columns!(),
    " FROM skill_invocations WHERE status = 'running' AND (lease_expires_at <= $1 \
     OR EXISTS (SELECT 1 FROM executor_sessions s WHERE s.id = executor_session_id \
       AND s.expires_at <= $1)) ORDER BY lease_expires_at, id LIMIT $2"
);
const SESSION_CALLS: &str = concat!(
    "SELECT ",
    invocation_columns!(),
    " FROM skill_invocations WHERE status = 'running' AND executor_session_id = $1 ORDER BY id"
);
/// The open calls `$1` is in: on its authority, run by it, and waiting on a decision it took —
/// an approval basis it decided, or a task's execution whose gate it approved. `$decider` is the
/// backend's expression of the person an approval basis names, `$kind` of the basis's kind.
macro_rules! calls_of_principal_sql {
    ($decider:literal, $kind:literal) => {
        concat!(
            "SELECT ",
            $crate::invocations::invocation_columns!(),
            " FROM skill_invocations i WHERE (authority_principal_id = $1 AND status IN ('pending', 'running')) \
             OR (status = 'running' AND executor_principal_id = $1) \
             OR (status = 'pending' AND ",
            $decider,
            " = $1) OR (status = 'pending' AND ",
            $kind,
            " = 'execution' AND EXISTS (SELECT 1 FROM approvals g WHERE g.task_id = i.task_id AND g.gate = TRUE AND g.call_skill_id IS NULL \
               AND g.status = 'approved' AND g.decided_by = $1)) ORDER BY created_at, id"
        )
    };
}
use calls_of_principal_sql;
/// Sets `disabled_at` of an enabled principal.
const DISABLE_PRINCIPAL: &str = "UPDATE principals SET disabled_at = $2 WHERE id = $1 AND disabled_at IS NULL";
const PRINCIPAL_EXISTS: &str = "SELECT count(*) FROM principals WHERE id = $1";
const INSERT_SESSION: &str = "INSERT INTO executor_sessions (id, principal_id, status, capabilities, created_at, \
     heartbeat_at, expires_at, closed_at, row_version, admission, draining_at) \
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)";
const SESSION: &str = "SELECT id, principal_id, status, capabilities, admission, created_at, heartbeat_at, \
     expires_at, closed_at, row_version, draining_at FROM executor_sessions WHERE id = $1";
const SESSIONS: &str = "SELECT id, principal_id, status, capabilities, admission, created_at, heartbeat_at, \
     expires_at, closed_at, row_version, draining_at FROM executor_sessions \
     ORDER BY CASE WHEN status = 'active' THEN 0 ELSE 1 END, created_at DESC, id DESC LIMIT $1";
const UPDATE_SESSION: &str = "UPDATE executor_sessions SET status = $3, heartbeat_at = $4, expires_at = $5, \
     closed_at = $6, row_version = $7, admission = $8, draining_at = $9 WHERE id = $1 AND row_version = $2";

/// Pending calls available at `$1` that an admission covers (`$2` local entrypoints, `$3` http
/// origins, `$4` MCP endpoints, `$5` audiences, each a JSON array; `$6` one call's id or null;
/// `$8` the claim's session or null, which must be open and not draining; `$9` the ids passed
/// over already, a JSON array), in queue order, at most `$7`, each with the state of its basis
/// (the columns of [`BasisState`]; a basis's rows are looked up only for a call that has one).
/// `$each` is the backend's set-returning function over a JSON
/// array of strings, with a `value` column; `$approval` the basis's `approvalId`. Origins admit
/// an endpoint equal to them or under them (`origin/…`), as strings: `https://h:443/x` is not
/// under `https://h`. Left out, so that however many there are they never hide the calls behind
/// them: versions without a contract (no executor runs them), and the executions a pending gate
/// holds — exactly the state the engine's re-check at claim answers "hold" to (an execution's
/// call, its task open with a pending gate and none rejected, its run running, no approved
/// gate's decider disabled; `recheck` in skill-engine's `work/basis.rs`).
macro_rules! claimable_sql {
    (
        $each:literal,
        $approval:literal,
        $kind:literal,
        $instance:literal,
        $activity:literal,
        $operators:literal,
        $task_operators:literal,
        $lock:literal
    ) => {
        concat!(
            "SELECT ",
            $crate::invocations::invocation_columns!(),
            ", CASE WHEN i.task_id IS NULL THEN NULL \
               ELSE (SELECT t.status FROM tasks t WHERE t.id = i.task_id) END AS basis_task_status, \
             CASE WHEN i.authorization_basis IS NULL THEN NULL \
               ELSE (SELECT a.status FROM approvals a WHERE a.id = ",
            $approval,
            ") END AS basis_approval_status, \
             CASE WHEN i.authorization_basis IS NULL THEN 0 ELSE (SELECT count(*) FROM approvals a \
               JOIN principals p ON p.id = a.decided_by WHERE p.disabled_at IS NOT NULL AND (a.id = ",
            $approval,
            " OR (",
            $kind,
            " = 'execution' AND a.task_id = i.task_id AND a.gate = TRUE AND a.call_skill_id IS NULL AND a.status = 'approved'))) \
               END AS basis_decider_disabled, \
             CASE WHEN i.run_id IS NULL THEN NULL \
               ELSE (SELECT r.status FROM runs r WHERE r.id = i.run_id) END AS basis_run_status, \
             CASE WHEN i.task_id IS NULL THEN 0 ELSE COALESCE((SELECT sum(DISTINCT CASE g.status \
               WHEN 'pending' THEN 1 WHEN 'approved' THEN 2 WHEN 'rejected' THEN 4 WHEN 'withdrawn' THEN 8 ELSE 0 END) \
               FROM approvals g WHERE g.task_id = i.task_id AND g.gate = TRUE AND g.call_skill_id IS NULL), 0) END AS basis_gates, \
             s.skill_state AS basis_skill_status, s.skill_effects AS basis_side_effects, \
             s.skill_name AS basis_skill_name, s.skill_version AS basis_skill_version, \
             CASE WHEN ",
            $kind,
            " = 'process' THEN (SELECT pi.status FROM process_instances pi WHERE pi.id = ",
            $instance,
            ") END AS basis_instance_status, \
             CASE WHEN ",
            $kind,
            " = 'process' THEN (SELECT ps.status FROM process_steps ps WHERE ps.id = ",
            $activity,
            ") END AS basis_activity_status, \
             (SELECT count(*) FROM principals ap WHERE ap.id = i.authority_principal_id \
               AND ap.disabled_at IS NOT NULL) AS basis_authority_disabled, \
             CASE WHEN ",
            $kind,
            " = 'approval' THEN ",
            $operators,
            " WHEN ",
            $kind,
            " = 'execution' THEN ",
            $task_operators,
            " ELSE 0 END AS basis_operator_disabled \
             FROM skill_invocations i JOIN (SELECT id AS skill_ref, status AS skill_state, \
               side_effects AS skill_effects, name AS skill_name, version AS skill_version FROM skills \
               WHERE contract IS NOT NULL) s \
               ON s.skill_ref = i.skill_id \
             WHERE i.status = 'pending' AND i.available_at <= $1 \
             AND ($6 IS NULL OR i.id = $6) \
             AND NOT (COALESCE(",
            $kind,
            " = 'execution', FALSE) \
               AND EXISTS (SELECT 1 FROM approvals g WHERE g.task_id = i.task_id AND g.gate = TRUE AND g.call_skill_id IS NULL \
                 AND g.status = 'pending') \
               AND NOT EXISTS (SELECT 1 FROM approvals g WHERE g.task_id = i.task_id AND g.gate = TRUE AND g.call_skill_id IS NULL \
                 AND g.status = 'rejected') \
               AND EXISTS (SELECT 1 FROM tasks t WHERE t.id = i.task_id AND t.status = 'open') \
               AND EXISTS (SELECT 1 FROM runs r WHERE r.id = i.run_id AND r.status = 'running') \
               AND NOT EXISTS (SELECT 1 FROM approvals a JOIN principals p ON p.id = a.decided_by \
                 WHERE p.disabled_at IS NOT NULL AND a.task_id = i.task_id AND a.gate = TRUE \
                 AND a.call_skill_id IS NULL AND a.status = 'approved')) \
             AND i.id NOT IN (SELECT value FROM ",
            $each,
            "($9)) \
             AND ($8 IS NULL OR EXISTS (SELECT 1 FROM executor_sessions d WHERE d.id = $8 \
               AND d.status = 'active' AND d.draining_at IS NULL)) AND ( \
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
            "($5))) ORDER BY i.available_at, i.created_at, i.id LIMIT $7",
            $lock
        )
    };
}
use claimable_sql;

/// Whether an active session at `$now` covers a call of protocol `$protocol` at target `$target`
/// with audience `$audience` (each a placeholder or a column); `$open` and `$close` surround a key of a session's `admission` to make the set of the
/// array under it.
/// One row of [`InvocationStore::backlog`]'s statement of the open calls, as read.
pub(crate) type OpenCallsRow = (String, String, String, Option<String>, bool, bool, i64, bool);

/// One row of [`InvocationStore::backlog`]'s statement of the open calls, read.
pub(crate) fn open_calls(
    (status, protocol, target, audience, later, held, count, covered): OpenCallsRow,
) -> Result<OpenCalls> {
    let status = status.parse().map_err(|error| {
        crate::error::StoreError::new(crate::error::ErrorKind::Invalid, format!("a stored call status: {error}"))
    })?;
    Ok(OpenCalls { status, protocol, target, audience, later, held, count, covered })
}

/// The scalars of [`InvocationStore::backlog`] at `$1`.
pub(crate) const BACKLOG: &str = "SELECT (SELECT COUNT(*) FROM approvals WHERE status = 'pending'), \
     (SELECT COUNT(*) FROM executor_sessions WHERE status = 'active' AND expires_at > $1), \
     (SELECT MIN(available_at) FROM skill_invocations WHERE status = 'pending' AND available_at <= $1), \
     (SELECT MIN(decided_at) FROM approvals WHERE outcome_status = 'running')";

/// [`InvocationStore::backlog`]'s statement of the open calls; `$kind` reads the basis's kind,
/// `$open`/`$close` read a session admission's list (as [`covered_sql`]), `$now` is the first
/// parameter. Each group says whether an active session covers its implementation.
macro_rules! open_calls_sql {
    ($kind:literal, $open:literal, $close:literal) => {
        concat!(
            "SELECT g.status, g.protocol, g.target, g.audience, g.later, g.held, g.n, (",
            covered_sql!($open, $close, "$1", "g.protocol", "g.target", "g.audience"),
            ") AS covered FROM (SELECT c.status, c.protocol, c.target, c.audience, \
             (c.status = 'pending' AND c.available_at > $1) AS later, \
             (c.status = 'pending' AND c.task_id IS NOT NULL AND ",
            $kind,
            " = 'execution' AND EXISTS (SELECT 1 FROM approvals a WHERE a.task_id = c.task_id AND a.gate \
             AND a.status = 'pending')) AS held, COUNT(*) AS n \
             FROM skill_invocations c WHERE c.status IN ('pending', 'running') \
             GROUP BY c.status, c.protocol, c.target, c.audience, later, held) g"
        )
    };
}
use open_calls_sql;

macro_rules! covered_sql {
    ($open:literal, $close:literal, $now:literal, $protocol:literal, $target:literal, $audience:literal) => {
        concat!(
            "SELECT EXISTS (SELECT 1 FROM executor_sessions s WHERE s.status = 'active' AND s.expires_at > ",
            $now,
            " AND ((",
            $protocol,
            " = 'local' AND EXISTS (SELECT 1 FROM ",
            $open,
            "localEntrypoints",
            $close,
            " e WHERE e.value = ",
            $target,
            ")) OR (",
            $protocol,
            " = 'http' AND EXISTS (SELECT 1 FROM ",
            $open,
            "httpOrigins",
            $close,
            " o WHERE ",
            $target,
            " = o.value OR substr(",
            $target,
            ", 1, length(o.value) + 1) = o.value || '/')) OR (",
            $protocol,
            " = 'mcp' AND EXISTS (SELECT 1 FROM ",
            $open,
            "mcpEndpoints",
            $close,
            " o WHERE ",
            $target,
            " = o.value OR (o.value NOT LIKE 'stdio:%' AND substr(",
            $target,
            ", 1, length(o.value) + 1) = o.value || '/')))) AND (",
            $protocol,
            " = 'local' OR ",
            $audience,
            " IS NULL OR EXISTS (SELECT 1 FROM ",
            $open,
            "audiences",
            $close,
            " a WHERE a.value = ",
            $audience,
            ")))"
        )
    };
}
use covered_sql;
