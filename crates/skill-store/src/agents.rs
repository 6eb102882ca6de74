//! Agents: reading the agents packages declared; writing one is part of a package's apply
//! ([`apply_agent_in`]), in the install's transaction.

use futures::future::BoxFuture;

use crate::backend::{PgStore, SqliteStore};
use crate::error::Result;
use crate::records::{AgentRecord, AgentRequestRecord, Time};

pub trait AgentStore: Send + Sync {
    fn agent<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<AgentRecord>>;
    /// The agent whose principal is `principal_id`, if any.
    fn agent_of<'a>(&'a self, principal_id: &'a str) -> BoxFuture<'a, Result<Option<AgentRecord>>>;
    fn agents(&self) -> BoxFuture<'_, Result<Vec<AgentRecord>>>;
    /// An agent's request for an external write (written with work: `WorkChange::InsertRequest`).
    fn agent_request<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<AgentRequestRecord>>;
    /// Requests still moving (pending or approved), those due first (the earliest expiry), at
    /// most `limit`.
    fn open_agent_requests(&self, limit: i64) -> BoxFuture<'_, Result<Vec<AgentRequestRecord>>>;
    /// Requests that can move at `now`, at most `limit`, the longest unchanged first: pending ones
    /// whose approval a person decided or withdrew, or that expired; approved ones whose call is
    /// still to make, or ended. Requests that only wait never hide those.
    fn movable_agent_requests(&self, now: Time, limit: i64) -> BoxFuture<'_, Result<Vec<AgentRequestRecord>>>;
    /// The request an approval was asked for, if any.
    fn agent_request_of_approval<'a>(
        &'a self,
        approval_id: &'a str,
    ) -> BoxFuture<'a, Result<Option<AgentRequestRecord>>>;
    /// The request an agent made with an idempotency key, if any.
    fn agent_request_by_key<'a>(
        &'a self,
        principal_id: &'a str,
        key: &'a str,
    ) -> BoxFuture<'a, Result<Option<AgentRequestRecord>>>;
    /// How many requests an agent's principal made since `since`.
    fn agent_requests_since<'a>(&'a self, principal_id: &'a str, since: Time) -> BoxFuture<'a, Result<i64>>;
    /// The open requests of an agent's principal, newest first, at most `limit`.
    fn agent_requests_of<'a>(
        &'a self,
        principal_id: &'a str,
        open_only: bool,
        limit: i64,
    ) -> BoxFuture<'a, Result<Vec<AgentRequestRecord>>>;
}

macro_rules! select_request {
    () => {
        "SELECT id, agent_principal_id, skill_id, inputs, client_name, client_version, idempotency_key, task_id, \
         approval_id, status, invocation_id, expires_at, row_version, created_at, updated_at, ended_at, initiators FROM agent_requests"
    };
}

macro_rules! select_agent {
    () => {
        "SELECT key, principal_id, kind, package_key, spec, revision, created_at, updated_at FROM agents"
    };
}

/// Writes the agent plan `$plan` inside `$tx`: the principal when new, the agent's row (at the
/// revision after the one read: `Stale` when another apply moved it), then exactly its grants,
/// assignments and allowance, and its event.
macro_rules! apply_agent_in {
    ($tx:ident, $plan:expr) => {{
        let plan: &$crate::records::AgentPlan = $plan;
        let agent = &plan.record;
        if let Some(p) = &plan.principal {
            crate::identity::insert_principal_in!($tx, p);
        }
        let written = sqlx::query(
            "INSERT INTO agents (key, principal_id, kind, package_key, spec, revision, created_at, updated_at) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8) \
             ON CONFLICT (key) DO UPDATE SET package_key = excluded.package_key, spec = excluded.spec, \
             revision = excluded.revision, updated_at = excluded.updated_at \
             WHERE agents.revision = excluded.revision - 1",
        )
        .bind(&agent.key)
        .bind(&agent.principal_id)
        .bind(agent.kind.as_str())
        .bind(&agent.package_key)
        .bind(sqlx::types::Json(&agent.spec))
        .bind(agent.revision)
        .bind(agent.created_at)
        .bind(agent.updated_at)
        .execute(&mut *$tx)
        .await?;
        if written.rows_affected() == 0 {
            return Err($crate::error::StoreError::new(
                $crate::error::ErrorKind::Stale,
                format!("agent {} moved past revision {}", agent.key, agent.revision - 1),
            ));
        }
        sqlx::query("DELETE FROM grants WHERE principal_id = $1").bind(&agent.principal_id).execute(&mut *$tx).await?;
        for g in &plan.grants {
            sqlx::query(
                "INSERT INTO grants (id, principal_id, workspace_id, permission, created_at) VALUES ($1, $2, $3, $4, $5)",
            )
            .bind(&g.id)
            .bind(&g.principal_id)
            .bind(&g.workspace_id)
            .bind(&g.permission)
            .bind(g.created_at)
            .execute(&mut *$tx)
            .await?;
        }
        sqlx::query("DELETE FROM skill_assignments WHERE principal_id = $1")
            .bind(&agent.principal_id)
            .execute(&mut *$tx)
            .await?;
        for a in &plan.assignments {
            sqlx::query(
                "INSERT INTO skill_assignments (principal_id, skill_id, metadata, created_at, read_only) \
                 VALUES ($1, $2, $3, $4, $5)",
            )
            .bind(&a.principal_id)
            .bind(&a.skill_id)
            .bind(sqlx::types::Json(&a.metadata))
            .bind(a.created_at)
            .bind(a.read_only)
            .execute(&mut *$tx)
            .await?;
        }
        sqlx::query("UPDATE principals SET executor_allowance = $2 WHERE id = $1")
            .bind(&agent.principal_id)
            .bind(plan.allowance.as_ref().map(sqlx::types::Json))
            .execute(&mut *$tx)
            .await?;
        crate::events::insert!($tx, &plan.event);
    }};
}
pub(crate) use apply_agent_in;

macro_rules! agent_store {
    ($store:ty) => {
        impl AgentStore for $store {
            fn agent<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<AgentRecord>> {
                Box::pin(async move {
                    let sql = concat!(select_agent!(), " WHERE key = $1");
                    Ok(sqlx::query_as(sql).bind(key).fetch_one(self.read()).await?)
                })
            }

            fn agent_of<'a>(&'a self, principal_id: &'a str) -> BoxFuture<'a, Result<Option<AgentRecord>>> {
                Box::pin(async move {
                    let sql = concat!(select_agent!(), " WHERE principal_id = $1");
                    Ok(sqlx::query_as(sql).bind(principal_id).fetch_optional(self.read()).await?)
                })
            }

            fn agents(&self) -> BoxFuture<'_, Result<Vec<AgentRecord>>> {
                Box::pin(async move {
                    let sql = concat!(select_agent!(), " ORDER BY key");
                    Ok(sqlx::query_as(sql).fetch_all(self.read()).await?)
                })
            }

            fn agent_request<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<AgentRequestRecord>> {
                Box::pin(async move {
                    let sql = concat!(select_request!(), " WHERE id = $1");
                    Ok(sqlx::query_as(sql).bind(id).fetch_one(self.read()).await?)
                })
            }

            fn open_agent_requests(&self, limit: i64) -> BoxFuture<'_, Result<Vec<AgentRequestRecord>>> {
                Box::pin(async move {
                    let sql = concat!(
                        select_request!(),
                        " WHERE status IN ('pending', 'approved') ORDER BY expires_at, id LIMIT $1"
                    );
                    Ok(sqlx::query_as(sql).bind(limit).fetch_all(self.read()).await?)
                })
            }

            fn agent_request_of_approval<'a>(
                &'a self,
                approval_id: &'a str,
            ) -> BoxFuture<'a, Result<Option<AgentRequestRecord>>> {
                Box::pin(async move {
                    let sql = concat!(select_request!(), " WHERE approval_id = $1");
                    Ok(sqlx::query_as(sql).bind(approval_id).fetch_optional(self.read()).await?)
                })
            }

            fn agent_request_by_key<'a>(
                &'a self,
                principal_id: &'a str,
                key: &'a str,
            ) -> BoxFuture<'a, Result<Option<AgentRequestRecord>>> {
                Box::pin(async move {
                    let sql = concat!(select_request!(), " WHERE agent_principal_id = $1 AND idempotency_key = $2");
                    Ok(sqlx::query_as(sql).bind(principal_id).bind(key).fetch_optional(self.read()).await?)
                })
            }

            fn movable_agent_requests(&self, now: Time, limit: i64) -> BoxFuture<'_, Result<Vec<AgentRequestRecord>>> {
                Box::pin(async move {
                    Ok(sqlx::query_as(
                        "SELECT r.id, r.agent_principal_id, r.skill_id, r.inputs, r.client_name, r.client_version, \
                         r.idempotency_key, r.task_id, r.approval_id, r.status, r.invocation_id, r.expires_at, \
                         r.row_version, r.created_at, r.updated_at, r.ended_at, r.initiators FROM agent_requests r \
                         JOIN approvals a ON a.id = r.approval_id JOIN tasks t ON t.id = r.task_id \
                         JOIN principals p ON p.id = r.agent_principal_id \
                         LEFT JOIN skill_invocations c ON c.id = r.invocation_id \
                         WHERE (r.status = 'pending' AND (a.status <> 'pending' OR r.expires_at <= $1 \
                             OR t.status <> 'open' OR p.disabled_at IS NOT NULL)) \
                         OR (r.status = 'approved' AND (r.invocation_id IS NULL \
                             OR c.status IN ('succeeded', 'failed', 'cancelled'))) \
                         ORDER BY r.updated_at, r.id LIMIT $2",
                    )
                    .bind(now)
                    .bind(limit)
                    .fetch_all(self.read())
                    .await?)
                })
            }

            fn agent_requests_since<'a>(&'a self, principal_id: &'a str, since: Time) -> BoxFuture<'a, Result<i64>> {
                Box::pin(async move {
                    Ok(sqlx::query_scalar(
                        "SELECT count(*) FROM agent_requests WHERE agent_principal_id = $1 AND created_at >= $2",
                    )
                    .bind(principal_id)
                    .bind(since)
                    .fetch_one(self.read())
                    .await?)
                })
            }

            fn agent_requests_of<'a>(
                &'a self,
                principal_id: &'a str,
                open_only: bool,
                limit: i64,
            ) -> BoxFuture<'a, Result<Vec<AgentRequestRecord>>> {
                Box::pin(async move {
                    let sql = concat!(
                        select_request!(),
                        " WHERE agent_principal_id = $1 AND (NOT $2 OR status IN ('pending', 'approved')) \
                         ORDER BY created_at DESC, id DESC LIMIT $3"
                    );
                    Ok(sqlx::query_as(sql)
                        .bind(principal_id)
                        .bind(open_only)
                        .bind(limit)
                        .fetch_all(self.read())
                        .await?)
                })
            }
        }
    };
}

agent_store!(SqliteStore);
agent_store!(PgStore);
