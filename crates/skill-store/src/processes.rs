//! Processes: published versions, instances and the steps they ran. A version is inserted with
//! its event; an instance and its steps move with work (`WorkChange::InsertInstance`,
//! `UpdateInstance`, `InsertStep`, `UpdateStep`), so a step's end, the next one's start and the
//! work they make are one transaction.

use futures::future::BoxFuture;

use crate::backend::{PgStore, SqliteStore};
use crate::error::{ErrorKind, Result, StoreError};
use crate::records::{Event, InstanceRecord, ProcessRecord, StepRecord, Time};
use skill_api::InstanceStatus;

pub trait ProcessStore: Send + Sync {
    /// Inserts a process version with its event: `Conflict` when its key and version are taken.
    fn insert_process<'a>(&'a self, process: &'a ProcessRecord, event: &'a Event) -> BoxFuture<'a, Result<()>>;
    fn process<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<ProcessRecord>>;
    fn process_version<'a>(&'a self, key: &'a str, version: &'a str) -> BoxFuture<'a, Result<ProcessRecord>>;
    /// The version of `key` published last.
    fn newest_process<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<ProcessRecord>>;
    /// Versions in publication order after the id `after`, of one key when given.
    fn processes<'a>(
        &'a self,
        key: Option<&'a str>,
        after: Option<&'a str>,
        limit: i64,
    ) -> BoxFuture<'a, Result<Vec<ProcessRecord>>>;
    fn instance<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<InstanceRecord>>;
    /// The instance of a process key in a workspace with this key, if any.
    fn instance_by_key<'a>(
        &'a self,
        workspace_id: &'a str,
        process_key: &'a str,
        key: &'a str,
    ) -> BoxFuture<'a, Result<Option<InstanceRecord>>>;
    /// A workspace's instances newest first, of one process key and one status when given,
    /// after `before` (`(created_at, id)`) in that order.
    fn instances<'a>(
        &'a self,
        workspace_id: &'a str,
        process_key: Option<&'a str>,
        status: Option<InstanceStatus>,
        before: Option<(Time, String)>,
        limit: i64,
    ) -> BoxFuture<'a, Result<Vec<InstanceRecord>>>;
    /// The steps an instance ran, in order.
    fn steps<'a>(&'a self, instance_id: &'a str) -> BoxFuture<'a, Result<Vec<StepRecord>>>;
    /// At most `limit` steps of an instance after the step `after` (its `seq`), oldest first.
    fn steps_page<'a>(&'a self, instance_id: &'a str, after: i32, limit: i64)
    -> BoxFuture<'a, Result<Vec<StepRecord>>>;
    /// The task step that made task `task_id`, if a process made it.
    fn step_of_task<'a>(&'a self, task_id: &'a str) -> BoxFuture<'a, Result<Option<StepRecord>>>;
    /// The steps the instances `ids` ran, by instance and in order.
    fn steps_of<'a>(&'a self, ids: &'a [String]) -> BoxFuture<'a, Result<Vec<StepRecord>>>;
    /// Running instances that can move at `now`, the longest unchanged first, at most `limit`:
    /// their time came (a timer, a backoff, a step to enter), the call their open step waits for
    /// ended, or the task it waits for closed.
    fn movable_instances(&self, now: Time, limit: i64) -> BoxFuture<'_, Result<Vec<InstanceRecord>>>;
    /// Running instances whose open step waits for a fact, at most `limit`.
    fn waiting_for_facts(&self, limit: i64) -> BoxFuture<'_, Result<Vec<InstanceRecord>>>;
}

macro_rules! select_process {
    () => {
        "SELECT id, key, version, spec, agent_principal_id, package_key, published_by, created_at FROM processes"
    };
}

macro_rules! select_instance {
    () => {
        "SELECT i.id, i.process_id, i.process_key, i.workspace_id, i.key, i.input, i.vars, i.status, i.at_step, \
         i.wake_at, i.error, i.started_by, i.row_version, i.created_at, i.updated_at, i.ended_at, \
         i.initiators FROM process_instances i"
    };
}

macro_rules! select_step {
    () => {
        "SELECT id, instance_id, seq, step_id, action, status, attempt, skill_id, inputs, invocation_id, task_id, \
         fact_id, wait_kind, output, error, wake_at, row_version, started_at, ended_at, approval_id FROM process_steps"
    };
}

macro_rules! process_store {
    ($store:ty, $each:literal) => {
        impl ProcessStore for $store {
            fn insert_process<'a>(&'a self, p: &'a ProcessRecord, event: &'a Event) -> BoxFuture<'a, Result<()>> {
                Box::pin(async move {
                    let statement = crate::statements::insert_process(p)?;
                    let mut tx = self.write().await?;
                    crate::statements::run_in!(tx, &[statement]);
                    crate::events::commit!(tx, event);
                    Ok(())
                })
            }

            fn process<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<ProcessRecord>> {
                Box::pin(async move {
                    crate::work::one_row!(self, concat!(select_process!(), " WHERE id = $1"), [id], format!("no process {id}"))
                })
            }

            fn process_version<'a>(&'a self, key: &'a str, version: &'a str) -> BoxFuture<'a, Result<ProcessRecord>> {
                Box::pin(async move {
                    crate::work::one_row!(
                        self,
                        concat!(select_process!(), " WHERE key = $1 AND version = $2"),
                        [key, version],
                        format!("no process {key}@{version}")
                    )
                })
            }

            fn newest_process<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<ProcessRecord>> {
                Box::pin(async move {
                    crate::work::one_row!(
                        self,
                        concat!(select_process!(), " WHERE key = $1 ORDER BY created_at DESC, id DESC LIMIT 1"),
                        [key],
                        format!("no process {key}")
                    )
                })
            }

            fn processes<'a>(
                &'a self,
                key: Option<&'a str>,
                after: Option<&'a str>,
                limit: i64,
            ) -> BoxFuture<'a, Result<Vec<ProcessRecord>>> {
                Box::pin(async move {
                    let sql = concat!(
                        select_process!(),
                        " WHERE ($1 IS NULL OR key = $1) AND ($2 IS NULL OR \
                         (created_at, id) > (SELECT created_at, id FROM processes WHERE id = $2)) \
                         ORDER BY created_at, id LIMIT $3"
                    );
                    Ok(sqlx::query_as(sql).bind(key).bind(after).bind(limit).fetch_all(self.read()).await?)
                })
            }

            fn instance<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<InstanceRecord>> {
                Box::pin(async move {
                    crate::work::one_row!(
                        self,
                        concat!(select_instance!(), " WHERE i.id = $1"),
                        [id],
                        format!("no process instance {id}")
                    )
                })
            }

            fn instance_by_key<'a>(
                &'a self,
                workspace_id: &'a str,
                process_key: &'a str,
                key: &'a str,
            ) -> BoxFuture<'a, Result<Option<InstanceRecord>>> {
                Box::pin(async move {
                    let sql =
                        concat!(select_instance!(), " WHERE i.workspace_id = $1 AND i.process_key = $2 AND i.key = $3");
                    Ok(sqlx::query_as(sql).bind(workspace_id).bind(process_key).bind(key).fetch_optional(self.read()).await?)
                })
            }

            fn instances<'a>(
                &'a self,
                workspace_id: &'a str,
                process_key: Option<&'a str>,
                status: Option<InstanceStatus>,
                before: Option<(Time, String)>,
                limit: i64,
            ) -> BoxFuture<'a, Result<Vec<InstanceRecord>>> {
                Box::pin(async move {
                    let (at, id) = before.map_or((None, None), |(at, id)| (Some(at), Some(id)));
                    let sql = concat!(
                        select_instance!(),
                        " WHERE i.workspace_id = $1 AND ($2 IS NULL OR i.process_key = $2) \
                         AND ($3 IS NULL OR i.status = $3) \
                         AND ($4 IS NULL OR i.created_at < $4 OR (i.created_at = $4 AND i.id < $5)) \
                         ORDER BY i.created_at DESC, i.id DESC LIMIT $6"
                    );
                    Ok(sqlx::query_as(sql)
                        .bind(workspace_id)
                        .bind(process_key)
                        .bind(status.map(|s| s.as_str()))
                        .bind(at)
                        .bind(id)
                        .bind(limit)
                        .fetch_all(self.read())
                        .await?)
                })
            }

            fn steps<'a>(&'a self, instance_id: &'a str) -> BoxFuture<'a, Result<Vec<StepRecord>>> {
                Box::pin(async move {
                    let sql = concat!(select_step!(), " WHERE instance_id = $1 ORDER BY seq");
                    Ok(sqlx::query_as(sql).bind(instance_id).fetch_all(self.read()).await?)
                })
            }

            fn steps_page<'a>(
                &'a self,
                instance_id: &'a str,
                after: i32,
                limit: i64,
            ) -> BoxFuture<'a, Result<Vec<StepRecord>>> {
                Box::pin(async move {
                    let sql = concat!(select_step!(), " WHERE instance_id = $1 AND seq > $2 ORDER BY seq LIMIT $3");
                    Ok(sqlx::query_as(sql).bind(instance_id).bind(after).bind(limit).fetch_all(self.read()).await?)
                })
            }

            fn step_of_task<'a>(&'a self, task_id: &'a str) -> BoxFuture<'a, Result<Option<StepRecord>>> {
                Box::pin(async move {
                    let sql = concat!(select_step!(), " WHERE task_id = $1");
                    Ok(sqlx::query_as(sql).bind(task_id).fetch_optional(self.read()).await?)
                })
            }

            fn steps_of<'a>(&'a self, ids: &'a [String]) -> BoxFuture<'a, Result<Vec<StepRecord>>> {
                Box::pin(async move {
                    let sql = concat!(
                        select_step!(),
                        " WHERE instance_id IN (SELECT value FROM ",
                        $each,
                        "($1)) ORDER BY instance_id, seq"
                    );
                    Ok(sqlx::query_as(sql).bind(sqlx::types::Json(ids)).fetch_all(self.read()).await?)
                })
            }

            fn movable_instances(&self, now: Time, limit: i64) -> BoxFuture<'_, Result<Vec<InstanceRecord>>> {
                Box::pin(async move {
                    let sql = concat!(
                        select_instance!(),
                        " LEFT JOIN process_steps s ON s.instance_id = i.id AND s.status = 'open' \
                         LEFT JOIN skill_invocations c ON c.id = s.invocation_id \
                         LEFT JOIN tasks t ON t.id = s.task_id \
                         WHERE i.status = 'running' AND (i.wake_at <= $1 \
                             OR c.status IN ('succeeded', 'failed', 'cancelled') \
                             OR t.status IN ('done', 'cancelled', 'failed')) \
                         ORDER BY i.updated_at, i.id LIMIT $2"
                    );
                    Ok(sqlx::query_as(sql).bind(now).bind(limit).fetch_all(self.read()).await?)
                })
            }

            fn waiting_for_facts(&self, limit: i64) -> BoxFuture<'_, Result<Vec<InstanceRecord>>> {
                Box::pin(async move {
                    let sql = concat!(
                        select_instance!(),
                        " JOIN process_steps s ON s.instance_id = i.id AND s.status = 'open' \
                         AND s.wait_kind IS NOT NULL WHERE i.status = 'running' ORDER BY i.updated_at, i.id LIMIT $1"
                    );
                    Ok(sqlx::query_as(sql).bind(limit).fetch_all(self.read()).await?)
                })
            }
        }
    };
}

process_store!(SqliteStore, "json_each");
process_store!(PgStore, "jsonb_array_elements_text");
