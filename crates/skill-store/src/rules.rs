//! Facts, work rules, their evaluations and where a task a rule ensured comes from. A fact and a
//! rule version are inserted with their event; an evaluation moves with work
//! (`WorkChange::InsertEvaluation`, `UpdateEvaluation`, `FactEvaluated`, `InsertTaskOrigin`), so
//! the work it ensures and its end are one transaction. A package's rules are written in the
//! install's transaction ([`insert_rule_in`]).

use futures::future::BoxFuture;
use sqlx::types::Json;

use crate::backend::{PgStore, SqliteStore};
use crate::error::{ErrorKind, Result, StoreError};
use crate::records::{Event, FactRecord, RuleEvaluationRecord, RuleRecord, TaskOriginRecord, Time};

pub trait RuleStore: Send + Sync {
    /// Inserts a fact with its event: `Conflict` when its workspace, kind and key are taken.
    fn insert_fact<'a>(&'a self, fact: &'a FactRecord, event: &'a Event) -> BoxFuture<'a, Result<()>>;
    fn fact<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<FactRecord>>;
    /// The facts of `ids` that exist, in no particular order.
    fn facts_by_ids<'a>(&'a self, ids: &'a [String]) -> BoxFuture<'a, Result<Vec<FactRecord>>>;
    fn fact_by_key<'a>(
        &'a self,
        workspace_id: &'a str,
        kind: &'a str,
        key: &'a str,
    ) -> BoxFuture<'a, Result<Option<FactRecord>>>;
    /// A workspace's facts newest first, of one kind when given, after `before` (`(created_at,
    /// id)`) in that order.
    fn facts<'a>(
        &'a self,
        workspace_id: &'a str,
        kind: Option<&'a str>,
        before: Option<(Time, String)>,
        limit: i64,
    ) -> BoxFuture<'a, Result<Vec<FactRecord>>>;
    /// Facts no rule evaluated yet, oldest first.
    fn unevaluated_facts(&self, limit: i64) -> BoxFuture<'_, Result<Vec<FactRecord>>>;
    /// Inserts a rule version with its event: `Conflict` when its key and version are taken.
    fn insert_rule<'a>(&'a self, rule: &'a RuleRecord, event: &'a Event) -> BoxFuture<'a, Result<()>>;
    fn rule<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<RuleRecord>>;
    fn rule_version<'a>(&'a self, key: &'a str, version: &'a str) -> BoxFuture<'a, Result<RuleRecord>>;
    /// The version of `key` published last.
    fn newest_rule<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<RuleRecord>>;
    /// Versions in publication order after the id `after`, of one key or one kind when given.
    fn rules<'a>(
        &'a self,
        key: Option<&'a str>,
        kind: Option<&'a str>,
        after: Option<&'a str>,
        limit: i64,
    ) -> BoxFuture<'a, Result<Vec<RuleRecord>>>;
    /// The version of each rule key for facts of `kind` published last.
    fn rules_for_kind<'a>(&'a self, kind: &'a str) -> BoxFuture<'a, Result<Vec<RuleRecord>>>;
    fn evaluation<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<RuleEvaluationRecord>>;
    /// A fact's evaluations, oldest first.
    fn evaluations_of_fact<'a>(&'a self, fact_id: &'a str) -> BoxFuture<'a, Result<Vec<RuleEvaluationRecord>>>;
    /// Evaluations that can move at `now`, the longest unchanged first, at most `limit`: matched
    /// ones, and waiting ones whose call ended or that waited since `expired_before`.
    fn movable_evaluations(&self, expired_before: Time, limit: i64)
    -> BoxFuture<'_, Result<Vec<RuleEvaluationRecord>>>;
    /// Where a task comes from, when a rule ensured it.
    fn task_origin<'a>(&'a self, task_id: &'a str) -> BoxFuture<'a, Result<Option<TaskOriginRecord>>>;
    /// The task a workspace's work key names, if any.
    fn origin_by_work_key<'a>(
        &'a self,
        workspace_id: &'a str,
        work_key: &'a str,
    ) -> BoxFuture<'a, Result<Option<TaskOriginRecord>>>;
}

macro_rules! select_fact {
    () => {
        "SELECT id, workspace_id, kind, key, data, occurred_at, source, depth, caused_by_task, recorded_by, \
         created_at, evaluated_at, initiators FROM facts"
    };
}

macro_rules! select_rule {
    () => {
        "SELECT id, key, version, kind, spec, agent_principal_id, interpretation_skill_id, package_key, \
         published_by, created_at FROM rules"
    };
}

macro_rules! select_evaluation {
    () => {
        "SELECT id, fact_id, rule_id, status, invocation_id, asks, task_ids, instance_ids, artifact_id, error, \
         row_version, created_at, updated_at, ended_at FROM rule_evaluations"
    };
}

macro_rules! select_origin {
    () => {
        "SELECT task_id, workspace_id, work_key, fact_id, evaluation_id, created_at FROM task_origins"
    };
}

/// Inserts the rule version `$r` inside `$tx`.
macro_rules! insert_rule_in {
    ($tx:ident, $r:expr) => {{
        let r: &$crate::records::RuleRecord = $r;
        sqlx::query(
            "INSERT INTO rules (id, key, version, kind, spec, agent_principal_id, interpretation_skill_id, \
             package_key, published_by, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)",
        )
        .bind(&r.id)
        .bind(&r.key)
        .bind(&r.version)
        .bind(&r.kind)
        .bind(sqlx::types::Json(&r.spec))
        .bind(&r.agent_principal_id)
        .bind(&r.interpretation_skill_id)
        .bind(&r.package_key)
        .bind(&r.published_by)
        .bind(r.created_at)
        .execute(&mut *$tx)
        .await?;
    }};
}
pub(crate) use insert_rule_in;

macro_rules! rule_store {
    ($store:ty, $each:literal) => {
        impl RuleStore for $store {
            fn insert_fact<'a>(&'a self, f: &'a FactRecord, event: &'a Event) -> BoxFuture<'a, Result<()>> {
                Box::pin(self.write_statements(vec![crate::statements::insert_fact(f)], std::slice::from_ref(event)))
            }

            fn facts_by_ids<'a>(&'a self, ids: &'a [String]) -> BoxFuture<'a, Result<Vec<FactRecord>>> {
                Box::pin(async move {
                    let sql = concat!(select_fact!(), " WHERE id IN (SELECT value FROM ", $each, "($1))");
                    Ok(sqlx::query_as(sql).bind(Json(ids)).fetch_all(self.read()).await?)
                })
            }

            fn fact<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<FactRecord>> {
                Box::pin(async move {
                    crate::work::one_row!(self, concat!(select_fact!(), " WHERE id = $1"), [id], format!("no fact {id}"))
                })
            }

            fn fact_by_key<'a>(
                &'a self,
                workspace_id: &'a str,
                kind: &'a str,
                key: &'a str,
            ) -> BoxFuture<'a, Result<Option<FactRecord>>> {
                Box::pin(async move {
                    let sql = concat!(select_fact!(), " WHERE workspace_id = $1 AND kind = $2 AND key = $3");
                    Ok(sqlx::query_as(sql).bind(workspace_id).bind(kind).bind(key).fetch_optional(self.read()).await?)
                })
            }

            fn facts<'a>(
                &'a self,
                workspace_id: &'a str,
                kind: Option<&'a str>,
                before: Option<(Time, String)>,
                limit: i64,
            ) -> BoxFuture<'a, Result<Vec<FactRecord>>> {
                Box::pin(async move {
                    let (at, id) = before.map_or((None, None), |(at, id)| (Some(at), Some(id)));
                    let sql = concat!(
                        select_fact!(),
                        " WHERE workspace_id = $1 AND ($2 IS NULL OR kind = $2) \
                         AND ($3 IS NULL OR created_at < $3 OR (created_at = $3 AND id < $4)) \
                         ORDER BY created_at DESC, id DESC LIMIT $5"
                    );
                    Ok(sqlx::query_as(sql)
                        .bind(workspace_id)
                        .bind(kind)
                        .bind(at)
                        .bind(id)
                        .bind(limit)
                        .fetch_all(self.read())
                        .await?)
                })
            }

            fn unevaluated_facts(&self, limit: i64) -> BoxFuture<'_, Result<Vec<FactRecord>>> {
                Box::pin(async move {
                    let sql = concat!(select_fact!(), " WHERE evaluated_at IS NULL ORDER BY created_at, id LIMIT $1");
                    Ok(sqlx::query_as(sql).bind(limit).fetch_all(self.read()).await?)
                })
            }

            fn insert_rule<'a>(&'a self, r: &'a RuleRecord, event: &'a Event) -> BoxFuture<'a, Result<()>> {
                Box::pin(async move {
                    let mut tx = self.write().await?;
                    insert_rule_in!(tx, r);
                    crate::events::commit!(tx, event);
                    Ok(())
                })
            }

            fn rule<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<RuleRecord>> {
                Box::pin(async move {
                    crate::work::one_row!(self, concat!(select_rule!(), " WHERE id = $1"), [id], format!("no rule {id}"))
                })
            }

            fn rule_version<'a>(&'a self, key: &'a str, version: &'a str) -> BoxFuture<'a, Result<RuleRecord>> {
                Box::pin(async move {
                    crate::work::one_row!(self, concat!(select_rule!(), " WHERE key = $1 AND version = $2"), [key, version], format!("no rule {key}@{version}"))
                })
            }

            fn newest_rule<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<RuleRecord>> {
                Box::pin(async move {
                    crate::work::one_row!(self, concat!(select_rule!(), " WHERE key = $1 ORDER BY created_at DESC, id DESC LIMIT 1"), [key], format!("no rule {key}"))
                })
            }

            fn rules<'a>(
                &'a self,
                key: Option<&'a str>,
                kind: Option<&'a str>,
                after: Option<&'a str>,
                limit: i64,
            ) -> BoxFuture<'a, Result<Vec<RuleRecord>>> {
                Box::pin(async move {
                    let sql = concat!(
                        select_rule!(),
                        " WHERE ($1 IS NULL OR key = $1) AND ($2 IS NULL OR kind = $2) AND ($3 IS NULL OR \
                         (created_at, id) > (SELECT created_at, id FROM rules WHERE id = $3)) \
                         ORDER BY created_at, id LIMIT $4"
                    );
                    Ok(sqlx::query_as(sql).bind(key).bind(kind).bind(after).bind(limit).fetch_all(self.read()).await?)
                })
            }

            fn rules_for_kind<'a>(&'a self, kind: &'a str) -> BoxFuture<'a, Result<Vec<RuleRecord>>> {
                Box::pin(async move {
                    let sql = concat!(
                        select_rule!(),
                        " r WHERE r.kind = $1 AND NOT EXISTS (SELECT 1 FROM rules n WHERE n.key = r.key \
                         AND (n.created_at, n.id) > (r.created_at, r.id)) ORDER BY r.key"
                    );
                    Ok(sqlx::query_as(sql).bind(kind).fetch_all(self.read()).await?)
                })
            }

            fn evaluation<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<RuleEvaluationRecord>> {
                Box::pin(async move {
                    crate::work::one_row!(self, concat!(select_evaluation!(), " WHERE id = $1"), [id], format!("no evaluation {id}"))
                })
            }

            fn evaluations_of_fact<'a>(
                &'a self,
                fact_id: &'a str,
            ) -> BoxFuture<'a, Result<Vec<RuleEvaluationRecord>>> {
                Box::pin(async move {
                    let sql = concat!(select_evaluation!(), " WHERE fact_id = $1 ORDER BY created_at, id");
                    Ok(sqlx::query_as(sql).bind(fact_id).fetch_all(self.read()).await?)
                })
            }

            fn movable_evaluations(
                &self,
                expired_before: Time,
                limit: i64,
            ) -> BoxFuture<'_, Result<Vec<RuleEvaluationRecord>>> {
                Box::pin(async move {
                    Ok(sqlx::query_as(
                        "SELECT e.id, e.fact_id, e.rule_id, e.status, e.invocation_id, e.asks, e.task_ids, e.instance_ids, \
                         e.artifact_id, e.error, e.row_version, e.created_at, e.updated_at, e.ended_at FROM rule_evaluations e \
                         LEFT JOIN skill_invocations c ON c.id = e.invocation_id \
                         WHERE e.status = 'matched' OR (e.status = 'waiting' AND \
                             (c.status IN ('succeeded', 'failed', 'cancelled') OR e.created_at <= $1)) \
                         ORDER BY e.updated_at, e.id LIMIT $2",
                    )
                    .bind(expired_before)
                    .bind(limit)
                    .fetch_all(self.read())
                    .await?)
                })
            }

            fn task_origin<'a>(&'a self, task_id: &'a str) -> BoxFuture<'a, Result<Option<TaskOriginRecord>>> {
                Box::pin(async move {
                    let sql = concat!(select_origin!(), " WHERE task_id = $1");
                    Ok(sqlx::query_as(sql).bind(task_id).fetch_optional(self.read()).await?)
                })
            }

            fn origin_by_work_key<'a>(
                &'a self,
                workspace_id: &'a str,
                work_key: &'a str,
            ) -> BoxFuture<'a, Result<Option<TaskOriginRecord>>> {
                Box::pin(async move {
                    let sql = concat!(select_origin!(), " WHERE workspace_id = $1 AND work_key = $2");
                    Ok(sqlx::query_as(sql).bind(workspace_id).bind(work_key).fetch_optional(self.read()).await?)
                })
            }
        }
    };
}

rule_store!(SqliteStore, "json_each");
rule_store!(PgStore, "jsonb_array_elements_text");
