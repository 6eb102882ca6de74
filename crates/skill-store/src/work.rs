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
        "SELECT id, key, version, display_name, description, spec, created_by, created_at FROM task_types"
    };
}
macro_rules! task_columns {
    () => {
        "SELECT id, workspace_id, task_type_id, title, custom_fields, status, created_by, \
     row_version, created_at, updated_at, closed_at, close_reason, initiators FROM tasks"
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
     call_skill_id, call_inputs, row_version, created_at, updated_at, initiators FROM approvals"
    };
}
macro_rules! action_columns {
    () => {
        "SELECT approval_id, action_index, action, skill_id, inputs, status, invocation_id, result, error, \
     attempts, retries, row_version, created_at, updated_at FROM approval_actions"
    };
}

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

macro_rules! work_store {
    ($store:ty, $each:literal, $skill:literal, $version:literal) => {
        impl WorkStore for $store {
            fn write_work<'a>(&'a self, changes: &'a [WorkChange], events: &'a [Event]) -> BoxFuture<'a, Result<()>> {
                Box::pin(async move {
                    self.write_statements(statements_of(changes)?, events).await
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
                         a.created_at, a.updated_at, a.initiators FROM approvals a JOIN tasks t ON t.id = a.task_id \
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
                         AND NOT EXISTS (SELECT 1 FROM approvals g WHERE g.task_id = tasks.id AND g.gate = TRUE AND g.call_skill_id IS NULL \
                           AND g.status = 'pending') \
                         AND (EXISTS (SELECT 1 FROM approvals g WHERE g.task_id = tasks.id AND g.gate = TRUE AND g.call_skill_id IS NULL \
                             AND g.status IN ('approved', 'rejected')) \
                           OR EXISTS (SELECT 1 FROM runs r WHERE r.task_id = tasks.id AND r.status = 'running') \
                           OR (NOT EXISTS (SELECT 1 FROM approvals g WHERE g.task_id = tasks.id AND g.gate = TRUE AND g.call_skill_id IS NULL) \
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

/// The statements of `changes`, in order.
fn statements_of(changes: &[WorkChange]) -> Result<Vec<crate::statements::Statement>> {
    changes.iter().map(crate::statements::of_change).collect()
}

impl SqliteStore {
    /// Writes `statements` and `events` in one transaction of the writer thread, committed with
    /// the others waiting for it.
    pub(crate) async fn write_statements(
        &self,
        statements: Vec<crate::statements::Statement>,
        events: &[Event],
    ) -> Result<()> {
        let events = events.to_vec();
        self.lite
            .write(move |connection| {
                crate::statements::run_lite(connection, &statements)?;
                for event in &events {
                    crate::lite::event_insert(connection, event)?;
                }
                Ok(())
            })
            .await
    }
}

impl PgStore {
    /// Writes `statements` and `events` in one transaction.
    pub(crate) async fn write_statements(
        &self,
        statements: Vec<crate::statements::Statement>,
        events: &[Event],
    ) -> Result<()> {
        let mut tx = self.write().await?;
        crate::statements::run_in!(tx, &statements);
        for event in events {
            crate::events::insert!(tx, event);
        }
        tx.commit().await?;
        Ok(())
    }
}
