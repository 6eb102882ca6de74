//! Work — task types, tasks, runs, approvals with the actions of their outcomes, comments —
//! written once for both backends (not a hot path: sqlx on each).

use futures::future::BoxFuture;
use sqlx::types::Json;

use crate::backend::{PgStore, SqliteStore};
use crate::error::{ErrorKind, Result, StoreError};
use crate::records::{
    ActionRecord, ApprovalRecord, CommentRecord, Event, RunRecord, TaskFilter, TaskRecord, TaskTypeRecord, WorkChange,
};

/// Task types, tasks, runs, approvals and comments.
pub trait WorkStore: Send + Sync {
    /// Writes `changes` in order and `events`, in one transaction: an insert whose key is taken
    /// is `Conflict`, a change of a row that moved on `Stale`, of a missing row `NotFound` — and
    /// then nothing is written.
    fn write_work<'a>(&'a self, changes: &'a [WorkChange], events: &'a [Event]) -> BoxFuture<'a, Result<()>>;
    fn task_type<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<TaskTypeRecord>>;
    fn task_type_version<'a>(&'a self, key: &'a str, version: &'a str) -> BoxFuture<'a, Result<TaskTypeRecord>>;
    /// Versions in publication order after the id `after`, of one key when given.
    fn task_types<'a>(
        &'a self,
        key: Option<&'a str>,
        after: Option<&'a str>,
        limit: i64,
    ) -> BoxFuture<'a, Result<Vec<TaskTypeRecord>>>;
    /// The version of `key` published last.
    fn newest_task_type<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<TaskTypeRecord>>;
    fn task<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<TaskRecord>>;
    /// Tasks newest first.
    fn tasks<'a>(&'a self, filter: &'a TaskFilter) -> BoxFuture<'a, Result<Vec<TaskRecord>>>;
    fn run<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<RunRecord>>;
    /// The runs of a task, oldest first.
    fn runs<'a>(&'a self, task_id: &'a str) -> BoxFuture<'a, Result<Vec<RunRecord>>>;
    fn approval<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<ApprovalRecord>>;
    /// The approvals of a task, oldest first.
    fn approvals<'a>(&'a self, task_id: &'a str) -> BoxFuture<'a, Result<Vec<ApprovalRecord>>>;
    /// The actions of an approval's outcome, in order.
    fn actions<'a>(&'a self, approval_id: &'a str) -> BoxFuture<'a, Result<Vec<ActionRecord>>>;
    /// The pending approvals of open tasks in `workspaces` (every workspace when `None`) that
    /// someone other than `decider` asked for, oldest first, at most `limit`.
    fn approvals_to_decide<'a>(
        &'a self,
        workspaces: Option<&'a [String]>,
        decider: &'a str,
        limit: i64,
    ) -> BoxFuture<'a, Result<Vec<ApprovalRecord>>>;
    /// Approvals whose outcome is running, oldest decision first.
    fn running_outcomes(&self, limit: i64) -> BoxFuture<'_, Result<Vec<ApprovalRecord>>>;
    /// Open tasks whose type pins an execution and whose gates let it move — none pending, and
    /// one approved or rejected, or a run still running, or no gate at all for an execution that
    /// does not write (one that writes waits for a gate, as does one whose gates were all
    /// withdrawn, once its run ended) — oldest first.
    fn open_executions(&self, limit: i64) -> BoxFuture<'_, Result<Vec<TaskRecord>>>;
    /// The comments of a task, oldest first.
    fn comments<'a>(&'a self, task_id: &'a str, limit: i64) -> BoxFuture<'a, Result<Vec<CommentRecord>>>;
}

macro_rules! task_type_columns {
    () => {
        "SELECT id, key, version, display_name, description, spec, execution, created_by, created_at FROM task_types"
    };
}
macro_rules! task_columns {
    () => {
        "SELECT id, workspace_id, task_type_id, title, custom_fields, status, created_by, \
     row_version, created_at, updated_at, closed_at, close_reason FROM tasks"
    };
}
macro_rules! run_columns {
    () => {
        "SELECT id, task_id, owner_principal_id, status, result, error, row_version, created_at, ended_at FROM runs"
    };
}
macro_rules! approval_columns {
    () => {
        "SELECT id, task_id, gate, status, requested_by, request_comment, decided_by, \
     decided_at, comment, decision_authority, withdrawn_by, withdrawn_at, outcome_status, outcome_reaction, \
     call_skill_id, call_inputs, row_version, created_at, updated_at FROM approvals"
    };
}
macro_rules! action_columns {
    () => {
        "SELECT approval_id, action_index, action, skill_id, inputs, status, invocation_id, result, error, \
     attempts, retries, row_version, created_at, updated_at FROM approval_actions"
    };
}

/// Inserts the task type `$t` inside `$tx`.
macro_rules! insert_task_type_in {
    ($tx:ident, $t:expr) => {{
        let t: &$crate::records::TaskTypeRecord = $t;
        sqlx::query(
            "INSERT INTO task_types (id, key, version, display_name, description, spec, execution, created_by, \
             created_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
        )
        .bind(&t.id)
        .bind(&t.key)
        .bind(&t.version)
        .bind(&t.display_name)
        .bind(&t.description)
        .bind(sqlx::types::Json(&t.spec))
        .bind(t.execution.as_ref().map(sqlx::types::Json))
        .bind(&t.created_by)
        .bind(t.created_at)
        .execute(&mut *$tx)
        .await?;
    }};
}
pub(crate) use insert_task_type_in;

/// The one row `$sql` finds with the arguments, or `NotFound` in `$what`'s words.
macro_rules! one_row {
    ($store:ident, $sql:expr, [$($arg:expr),*], $what:expr) => {{
        let found = sqlx::query_as($sql)$(.bind($arg))*.fetch_optional($store.read()).await?;
        found.ok_or_else(|| StoreError::new(ErrorKind::NotFound, $what))
    }};
}

pub(crate) use one_row;

/// Every row `$sql` finds with the arguments.
macro_rules! all_rows {
    ($store:ident, $sql:expr, [$($arg:expr),*]) => {
        Ok(sqlx::query_as($sql)$(.bind($arg))*.fetch_all($store.read()).await?)
    };
}

/// `NotFound` or `Stale` for an update of `table`'s row `id` that wrote nothing.
macro_rules! unwritten {
    ($tx:ident, $table:literal, $id:expr) => {{
        let id: &str = $id;
        let stored: Option<i32> = sqlx::query_scalar(concat!("SELECT row_version FROM ", $table, " WHERE id = $1"))
            .bind(id)
            .fetch_optional(&mut *$tx)
            .await?;
        return Err(match stored {
            None => StoreError::new(ErrorKind::NotFound, format!("no {} {id}", $table)),
            Some(version) => StoreError::new(ErrorKind::Stale, format!("{} {id} is at row version {version}", $table)),
        });
    }};
}

macro_rules! work_store {
    ($store:ty, $each:literal, $skill:literal, $version:literal) => {
        impl WorkStore for $store {
            fn write_work<'a>(&'a self, changes: &'a [WorkChange], events: &'a [Event]) -> BoxFuture<'a, Result<()>> {
                Box::pin(async move {
                    let mut tx = self.write().await?;
                    for change in changes {
                        match change {
                            WorkChange::InsertTaskType(t) => insert_task_type_in!(tx, t),
                            WorkChange::InsertArtifactType(t) => crate::artifacts::insert_artifact_type_in!(tx, t),
                            WorkChange::InsertTask(t) => {
                                sqlx::query(
                                    "INSERT INTO tasks (id, workspace_id, task_type_id, title, custom_fields, status, \
                                     created_by, row_version, created_at, updated_at, closed_at, close_reason) \
                                     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)",
                                )
                                .bind(&t.id)
                                .bind(&t.workspace_id)
                                .bind(&t.task_type_id)
                                .bind(&t.title)
                                .bind(Json(&t.custom_fields))
                                .bind(t.status.as_str())
                                .bind(&t.created_by)
                                .bind(t.row_version)
                                .bind(t.created_at)
                                .bind(t.updated_at)
                                .bind(t.closed_at)
                                .bind(&t.close_reason)
                                .execute(&mut *tx)
                                .await?;
                            }
                            WorkChange::UpdateTask(t) => {
                                let done = sqlx::query(
                                    "UPDATE tasks SET title = $3, custom_fields = $4, status = $5, row_version = $6, \
                                     updated_at = $7, closed_at = $8, close_reason = $9 WHERE id = $1 AND row_version = $2",
                                )
                                .bind(&t.id)
                                .bind(t.row_version - 1)
                                .bind(&t.title)
                                .bind(Json(&t.custom_fields))
                                .bind(t.status.as_str())
                                .bind(t.row_version)
                                .bind(t.updated_at)
                                .bind(t.closed_at)
                                .bind(&t.close_reason)
                                .execute(&mut *tx)
                                .await?;
                                if done.rows_affected() == 0 {
                                    unwritten!(tx, "tasks", &t.id);
                                }
                            }
                            WorkChange::InsertRun(r) => {
                                sqlx::query(
                                    "INSERT INTO runs (id, task_id, owner_principal_id, status, result, error, \
                                     row_version, created_at, ended_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
                                )
                                .bind(&r.id)
                                .bind(&r.task_id)
                                .bind(&r.owner_principal_id)
                                .bind(r.status.as_str())
                                .bind(r.result.as_ref().map(Json))
                                .bind(r.error.as_ref().map(Json))
                                .bind(r.row_version)
                                .bind(r.created_at)
                                .bind(r.ended_at)
                                .execute(&mut *tx)
                                .await?;
                            }
                            WorkChange::UpdateRun(r) => {
                                let done = sqlx::query(
                                    "UPDATE runs SET status = $3, result = $4, error = $5, row_version = $6, \
                                     ended_at = $7 WHERE id = $1 AND row_version = $2",
                                )
                                .bind(&r.id)
                                .bind(r.row_version - 1)
                                .bind(r.status.as_str())
                                .bind(r.result.as_ref().map(Json))
                                .bind(r.error.as_ref().map(Json))
                                .bind(r.row_version)
                                .bind(r.ended_at)
                                .execute(&mut *tx)
                                .await?;
                                if done.rows_affected() == 0 {
                                    unwritten!(tx, "runs", &r.id);
                                }
                            }
                            WorkChange::InsertApproval(a) => {
                                sqlx::query(
                                    "INSERT INTO approvals (id, task_id, gate, status, requested_by, request_comment, \
                                     decided_by, decided_at, comment, decision_authority, withdrawn_by, withdrawn_at, \
                                     outcome_status, outcome_reaction, row_version, created_at, updated_at, \
                                     call_skill_id, call_inputs) \
                                     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, \
                                     $18, $19)",
                                )
                                .bind(&a.id)
                                .bind(&a.task_id)
                                .bind(a.gate)
                                .bind(a.status.as_str())
                                .bind(&a.requested_by)
                                .bind(&a.request_comment)
                                .bind(&a.decided_by)
                                .bind(a.decided_at)
                                .bind(&a.comment)
                                .bind(a.decision_authority.as_ref().map(Json))
                                .bind(&a.withdrawn_by)
                                .bind(a.withdrawn_at)
                                .bind(a.outcome_status.map(|s| s.as_str()))
                                .bind(a.outcome_reaction.map(|r| r.as_str()))
                                .bind(a.row_version)
                                .bind(a.created_at)
                                .bind(a.updated_at)
                                .bind(&a.call_skill_id)
                                .bind(a.call_inputs.as_ref().map(Json))
                                .execute(&mut *tx)
                                .await?;
                            }
                            WorkChange::UpdateApproval(a) => {
                                let done = sqlx::query(
                                    "UPDATE approvals SET status = $3, decided_by = $4, decided_at = $5, comment = $6, \
                                     decision_authority = $7, withdrawn_by = $8, withdrawn_at = $9, \
                                     outcome_status = $10, outcome_reaction = $11, row_version = $12, updated_at = $13 \
                                     WHERE id = $1 AND row_version = $2",
                                )
                                .bind(&a.id)
                                .bind(a.row_version - 1)
                                .bind(a.status.as_str())
                                .bind(&a.decided_by)
                                .bind(a.decided_at)
                                .bind(&a.comment)
                                .bind(a.decision_authority.as_ref().map(Json))
                                .bind(&a.withdrawn_by)
                                .bind(a.withdrawn_at)
                                .bind(a.outcome_status.map(|s| s.as_str()))
                                .bind(a.outcome_reaction.map(|r| r.as_str()))
                                .bind(a.row_version)
                                .bind(a.updated_at)
                                .execute(&mut *tx)
                                .await?;
                                if done.rows_affected() == 0 {
                                    unwritten!(tx, "approvals", &a.id);
                                }
                            }
                            WorkChange::InsertAction(a) => {
                                sqlx::query(
                                    "INSERT INTO approval_actions (approval_id, action_index, action, status, \
                                     invocation_id, result, error, attempts, row_version, created_at, updated_at, \
                                     skill_id, inputs, retries) \
                                     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)",
                                )
                                .bind(&a.approval_id)
                                .bind(a.action_index)
                                .bind(Json(&a.action))
                                .bind(a.status.as_str())
                                .bind(&a.invocation_id)
                                .bind(a.result.as_ref().map(Json))
                                .bind(a.error.as_ref().map(Json))
                                .bind(a.attempts)
                                .bind(a.row_version)
                                .bind(a.created_at)
                                .bind(a.updated_at)
                                .bind(&a.skill_id)
                                .bind(a.inputs.as_ref().map(Json))
                                .bind(a.retries)
                                .execute(&mut *tx)
                                .await?;
                            }
                            WorkChange::UpdateAction(a) => {
                                let done = sqlx::query(
                                    "UPDATE approval_actions SET status = $4, invocation_id = $5, result = $6, \
                                     error = $7, attempts = $8, row_version = $9, updated_at = $10, retries = $11 \
                                     WHERE approval_id = $1 AND action_index = $2 AND row_version = $3",
                                )
                                .bind(&a.approval_id)
                                .bind(a.action_index)
                                .bind(a.row_version - 1)
                                .bind(a.status.as_str())
                                .bind(&a.invocation_id)
                                .bind(a.result.as_ref().map(Json))
                                .bind(a.error.as_ref().map(Json))
                                .bind(a.attempts)
                                .bind(a.row_version)
                                .bind(a.updated_at)
                                .bind(a.retries)
                                .execute(&mut *tx)
                                .await?;
                                if done.rows_affected() == 0 {
                                    return Err(StoreError::new(
                                        ErrorKind::Stale,
                                        format!("action {} of approval {} moved on", a.action_index, a.approval_id),
                                    ));
                                }
                            }
                            WorkChange::InsertComment(c) => {
                                sqlx::query(
                                    "INSERT INTO task_comments (id, task_id, author_principal_id, body, created_at) \
                                     VALUES ($1, $2, $3, $4, $5)",
                                )
                                .bind(&c.id)
                                .bind(&c.task_id)
                                .bind(&c.author_principal_id)
                                .bind(&c.body)
                                .bind(c.created_at)
                                .execute(&mut *tx)
                                .await?;
                            }
                            WorkChange::InsertRequest(r) => {
                                sqlx::query(
                                    "INSERT INTO agent_requests (id, agent_principal_id, skill_id, inputs, client_name, \
                                     client_version, task_id, approval_id, status, invocation_id, expires_at, row_version, \
                                     created_at, updated_at, ended_at, idempotency_key) \
                                     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16)",
                                )
                                .bind(&r.id)
                                .bind(&r.agent_principal_id)
                                .bind(&r.skill_id)
                                .bind(Json(&r.inputs))
                                .bind(&r.client_name)
                                .bind(&r.client_version)
                                .bind(&r.task_id)
                                .bind(&r.approval_id)
                                .bind(r.status.as_str())
                                .bind(&r.invocation_id)
                                .bind(r.expires_at)
                                .bind(r.row_version)
                                .bind(r.created_at)
                                .bind(r.updated_at)
                                .bind(r.ended_at)
                                .bind(&r.idempotency_key)
                                .execute(&mut *tx)
                                .await?;
                            }
                            WorkChange::UpdateRequest(r) => {
                                let done = sqlx::query(
                                    "UPDATE agent_requests SET status = $3, invocation_id = $4, row_version = $5, \
                                     updated_at = $6, ended_at = $7 WHERE id = $1 AND row_version = $2",
                                )
                                .bind(&r.id)
                                .bind(r.row_version - 1)
                                .bind(r.status.as_str())
                                .bind(&r.invocation_id)
                                .bind(r.row_version)
                                .bind(r.updated_at)
                                .bind(r.ended_at)
                                .execute(&mut *tx)
                                .await?;
                                if done.rows_affected() == 0 {
                                    unwritten!(tx, "agent_requests", &r.id);
                                }
                            }
                            WorkChange::InsertEvaluation(e) => {
                                sqlx::query(
                                    "INSERT INTO rule_evaluations (id, fact_id, rule_id, status, invocation_id, task_ids, \
                                     artifact_id, error, row_version, created_at, updated_at, ended_at, asks) \
                                     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)",
                                )
                                .bind(&e.id)
                                .bind(&e.fact_id)
                                .bind(&e.rule_id)
                                .bind(e.status.as_str())
                                .bind(&e.invocation_id)
                                .bind(Json(&e.task_ids))
                                .bind(&e.artifact_id)
                                .bind(e.error.as_ref().map(Json))
                                .bind(e.row_version)
                                .bind(e.created_at)
                                .bind(e.updated_at)
                                .bind(e.ended_at)
                                .bind(e.asks)
                                .execute(&mut *tx)
                                .await?;
                            }
                            WorkChange::UpdateEvaluation(e) => {
                                let done = sqlx::query(
                                    "UPDATE rule_evaluations SET status = $3, invocation_id = $4, task_ids = $5, \
                                     artifact_id = $6, error = $7, row_version = $8, updated_at = $9, ended_at = $10, \
                                     asks = $11 WHERE id = $1 AND row_version = $2",
                                )
                                .bind(&e.id)
                                .bind(e.row_version - 1)
                                .bind(e.status.as_str())
                                .bind(&e.invocation_id)
                                .bind(Json(&e.task_ids))
                                .bind(&e.artifact_id)
                                .bind(e.error.as_ref().map(Json))
                                .bind(e.row_version)
                                .bind(e.updated_at)
                                .bind(e.ended_at)
                                .bind(e.asks)
                                .execute(&mut *tx)
                                .await?;
                                if done.rows_affected() == 0 {
                                    unwritten!(tx, "rule_evaluations", &e.id);
                                }
                            }
                            WorkChange::FactEvaluated { fact_id, at } => {
                                let done =
                                    sqlx::query("UPDATE facts SET evaluated_at = $2 WHERE id = $1 AND evaluated_at IS NULL")
                                        .bind(fact_id)
                                        .bind(at)
                                        .execute(&mut *tx)
                                        .await?;
                                if done.rows_affected() == 0 {
                                    return Err(StoreError::new(
                                        ErrorKind::Stale,
                                        format!("fact {fact_id} is evaluated already, or there is none"),
                                    ));
                                }
                            }
                            WorkChange::InsertTaskOrigin(o) => {
                                sqlx::query(
                                    "INSERT INTO task_origins (task_id, workspace_id, work_key, fact_id, evaluation_id, \
                                     created_at) VALUES ($1, $2, $3, $4, $5, $6)",
                                )
                                .bind(&o.task_id)
                                .bind(&o.workspace_id)
                                .bind(&o.work_key)
                                .bind(&o.fact_id)
                                .bind(&o.evaluation_id)
                                .bind(o.created_at)
                                .execute(&mut *tx)
                                .await?;
                            }
                            WorkChange::InsertArtifact(a) => {
                                crate::artifacts::bind_artifact!(sqlx::query(crate::artifacts::INSERT_ARTIFACT), a)
                                    .execute(&mut *tx)
                                    .await?;
                            }
                        }
                    }
                    for event in events {
                        crate::events::insert!(tx, event);
                    }
                    tx.commit().await?;
                    Ok(())
                })
            }

            fn task_type<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<TaskTypeRecord>> {
                Box::pin(async move {
                    one_row!(
                        self,
                        concat!(task_type_columns!(), " WHERE id = $1"),
                        [id],
                        format!("no task type {id}")
                    )
                })
            }

            fn task_type_version<'a>(
                &'a self,
                key: &'a str,
                version: &'a str,
            ) -> BoxFuture<'a, Result<TaskTypeRecord>> {
                Box::pin(async move {
                    one_row!(
                        self,
                        concat!(task_type_columns!(), " WHERE key = $1 AND version = $2"),
                        [key, version],
                        format!("no task type {key}@{version}")
                    )
                })
            }

            fn task_types<'a>(
                &'a self,
                key: Option<&'a str>,
                after: Option<&'a str>,
                limit: i64,
            ) -> BoxFuture<'a, Result<Vec<TaskTypeRecord>>> {
                Box::pin(async move {
                    Ok(sqlx::query_as(concat!(task_type_columns!(), " WHERE ($1 IS NULL OR key = $1) AND ($2 IS NULL OR \
                         (created_at, id) > (SELECT created_at, id FROM task_types WHERE id = $2)) \
                         ORDER BY created_at, id LIMIT $3"
                    ))
                    .bind(key)
                    .bind(after)
                    .bind(limit)
                    .fetch_all(self.read())
                    .await?)
                })
            }

            fn newest_task_type<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<TaskTypeRecord>> {
                Box::pin(async move {
                    one_row!(
                        self,
                        concat!(task_type_columns!(), " WHERE key = $1 ORDER BY created_at DESC, id DESC LIMIT 1"),
                        [key],
                        format!("no task type {key}")
                    )
                })
            }

            fn task<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<TaskRecord>> {
                Box::pin(async move {
                    one_row!(
                        self,
                        concat!(task_columns!(), " WHERE id = $1"),
                        [id],
                        format!("no task {id}")
                    )
                })
            }

            fn tasks<'a>(&'a self, f: &'a TaskFilter) -> BoxFuture<'a, Result<Vec<TaskRecord>>> {
                Box::pin(async move {
                    let (before_at, before_id) = f.before.clone().unzip();
                    Ok(sqlx::query_as(concat!(task_columns!(), " WHERE ($1 IS NULL OR workspace_id IN (SELECT value FROM ", $each, "($1))) \
                         AND ($2 IS NULL OR status = $2) AND ($3 IS NULL OR task_type_id = $3) \
                         AND ($4 IS NULL OR created_at < $4 OR (created_at = $4 AND id < $5)) \
                         ORDER BY created_at DESC, id DESC LIMIT $6"))
                    .bind(f.workspaces.as_ref().map(Json))
                    .bind(f.status.map(|s| s.as_str()))
                    .bind(&f.task_type_id)
                    .bind(before_at)
                    .bind(before_id)
                    .bind(f.limit)
                    .fetch_all(self.read())
                    .await?)
                })
            }

            fn run<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<RunRecord>> {
                Box::pin(async move {
                    one_row!(
                        self,
                        concat!(run_columns!(), " WHERE id = $1"),
                        [id],
                        format!("no run {id}")
                    )
                })
            }

            fn runs<'a>(&'a self, task_id: &'a str) -> BoxFuture<'a, Result<Vec<RunRecord>>> {
                Box::pin(async move {
                    all_rows!(
                        self,
                        concat!(run_columns!(), " WHERE task_id = $1 ORDER BY created_at, id"),
                        [task_id]
                    )
                })
            }

            fn approval<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<ApprovalRecord>> {
                Box::pin(async move {
                    one_row!(
                        self,
                        concat!(approval_columns!(), " WHERE id = $1"),
                        [id],
                        format!("no approval {id}")
                    )
                })
            }

            fn approvals<'a>(&'a self, task_id: &'a str) -> BoxFuture<'a, Result<Vec<ApprovalRecord>>> {
                Box::pin(async move {
                    all_rows!(
                        self,
                        concat!(approval_columns!(), " WHERE task_id = $1 ORDER BY created_at, id"),
                        [task_id]
                    )
                })
            }

            fn actions<'a>(&'a self, approval_id: &'a str) -> BoxFuture<'a, Result<Vec<ActionRecord>>> {
                Box::pin(async move {
                    all_rows!(
                        self,
                        concat!(action_columns!(), " WHERE approval_id = $1 ORDER BY action_index"),
                        [approval_id]
                    )
                })
            }

            fn approvals_to_decide<'a>(
                &'a self,
                workspaces: Option<&'a [String]>,
                decider: &'a str,
                limit: i64,
            ) -> BoxFuture<'a, Result<Vec<ApprovalRecord>>> {
                Box::pin(async move {
                    Ok(sqlx::query_as(concat!(
                        "SELECT a.id, a.task_id, a.gate, a.status, a.requested_by, a.request_comment, a.decided_by, \
                         a.decided_at, a.comment, a.decision_authority, a.withdrawn_by, a.withdrawn_at, \
                         a.outcome_status, a.outcome_reaction, a.call_skill_id, a.call_inputs, a.row_version, \
                         a.created_at, a.updated_at FROM approvals a JOIN tasks t ON t.id = a.task_id \
                         WHERE a.status = 'pending' AND t.status = 'open' AND a.requested_by <> $2 \
                         AND ($1 IS NULL OR t.workspace_id IN (SELECT value FROM ", $each, "($1))) \
                         ORDER BY a.created_at, a.id LIMIT $3"
                    ))
                    .bind(workspaces.map(Json))
                    .bind(decider)
                    .bind(limit)
                    .fetch_all(self.read())
                    .await?)
                })
            }

            fn running_outcomes(&self, limit: i64) -> BoxFuture<'_, Result<Vec<ApprovalRecord>>> {
                Box::pin(async move {
                    Ok(sqlx::query_as(concat!(
                        approval_columns!(),
                        " WHERE outcome_status = 'running' ORDER BY decided_at, id LIMIT $1"
                    ))
                    .bind(limit)
                    .fetch_all(self.read())
                    .await?)
                })
            }

            fn open_executions(&self, limit: i64) -> BoxFuture<'_, Result<Vec<TaskRecord>>> {
                Box::pin(async move {
                    Ok(sqlx::query_as(concat!(
                        task_columns!(),
                        " WHERE status = 'open' AND EXISTS (SELECT 1 FROM task_types tt \
                         WHERE tt.id = task_type_id AND tt.execution IS NOT NULL) \
                         AND NOT EXISTS (SELECT 1 FROM approvals g WHERE g.task_id = tasks.id AND g.gate = TRUE \
                           AND g.status = 'pending') \
                         AND (EXISTS (SELECT 1 FROM approvals g WHERE g.task_id = tasks.id AND g.gate = TRUE \
                             AND g.status IN ('approved', 'rejected')) \
                           OR EXISTS (SELECT 1 FROM runs r WHERE r.task_id = tasks.id AND r.status = 'running') \
                           OR (NOT EXISTS (SELECT 1 FROM approvals g WHERE g.task_id = tasks.id AND g.gate = TRUE) \
                             AND NOT EXISTS (SELECT 1 FROM task_types tt JOIN skills s ON s.name = ", $skill,
                        " AND s.version = ", $version, " WHERE tt.id = task_type_id \
                               AND s.side_effects = 'external_write'))) \
                         ORDER BY created_at, id LIMIT $1"
                    ))
                    .bind(limit)
                    .fetch_all(self.read())
                    .await?)
                })
            }

            fn comments<'a>(&'a self, task_id: &'a str, limit: i64) -> BoxFuture<'a, Result<Vec<CommentRecord>>> {
                Box::pin(async move {
                    Ok(sqlx::query_as(
                        "SELECT id, task_id, author_principal_id, body, created_at FROM task_comments \
                         WHERE task_id = $1 ORDER BY created_at, id LIMIT $2",
                    )
                    .bind(task_id)
                    .bind(limit)
                    .fetch_all(self.read())
                    .await?)
                })
            }
        }
    };
}

work_store!(
    SqliteStore,
    "json_each",
    "json_extract(tt.execution, '$.skill')",
    "json_extract(tt.execution, '$.version')"
);
work_store!(PgStore, "jsonb_array_elements_text", "tt.execution ->> 'skill'", "tt.execution ->> 'version'");
