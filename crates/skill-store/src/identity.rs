//! Principals, their access tokens, workspaces and grants — written once for both backends.

use futures::future::BoxFuture;

use crate::backend::{PgStore, SqliteStore};
use crate::error::Result;
use crate::key_reads::KeyReads;
use sqlx::types::Json;

use crate::error::{ErrorKind, StoreError};
use crate::records::{AccessToken, Credential, Event, ExecutorAllowance, Grant, Principal, Time, Workspace};

/// Who may act, and with which permissions.
pub trait IdentityStore: Send + Sync {
    /// Creates a principal; `Conflict` when the name is taken.
    fn create_principal<'a>(&'a self, principal: &'a Principal, event: &'a Event) -> BoxFuture<'a, Result<()>>;
    fn principal<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<Principal>>;
    fn principal_by_name<'a>(&'a self, name: &'a str) -> BoxFuture<'a, Result<Principal>>;
    fn principals(&self) -> BoxFuture<'_, Result<Vec<Principal>>>;

    fn create_token<'a>(&'a self, token: &'a AccessToken, event: &'a Event) -> BoxFuture<'a, Result<()>>;
    /// The token with this hash, its principal and the principal's grants, in one query (every
    /// API request asks), whatever their state: the caller decides whether a revoked or expired
    /// token or a disabled principal may act.
    fn credential<'a>(&'a self, hash: &'a str) -> BoxFuture<'a, Result<Credential>>;
    /// Revokes a token; `NotFound` when there is none with this id or it was already revoked.
    fn revoke_token<'a>(&'a self, id: &'a str, at: Time, event: &'a Event) -> BoxFuture<'a, Result<()>>;
    fn tokens<'a>(&'a self, principal_id: &'a str) -> BoxFuture<'a, Result<Vec<AccessToken>>>;

    fn create_workspace<'a>(&'a self, workspace: &'a Workspace, event: &'a Event) -> BoxFuture<'a, Result<()>>;
    fn workspace_by_key<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<Workspace>>;
    /// The workspace whose id, else whose key, is `reference`.
    fn workspace_by_reference<'a>(&'a self, reference: &'a str) -> BoxFuture<'a, Result<Workspace>>;
    fn workspaces(&self) -> BoxFuture<'_, Result<Vec<Workspace>>>;

    /// Adds a grant; `false` (and no event) when the principal already held it there.
    fn add_grant<'a>(&'a self, grant: &'a Grant, event: &'a Event) -> BoxFuture<'a, Result<bool>>;
    /// Removes a grant; `false` (and no event) when there was none.
    fn remove_grant<'a>(
        &'a self,
        principal_id: &'a str,
        workspace_id: Option<&'a str>,
        permission: &'a str,
        event: &'a Event,
    ) -> BoxFuture<'a, Result<bool>>;
    fn grants<'a>(&'a self, principal_id: &'a str) -> BoxFuture<'a, Result<Vec<Grant>>>;

    /// Sets (or, with `None`, clears) what an executor principal may run, with its event;
    /// `NotFound` when there is no such principal.
    fn set_executor_allowance<'a>(
        &'a self,
        principal_id: &'a str,
        allowance: Option<&'a ExecutorAllowance>,
        event: &'a Event,
    ) -> BoxFuture<'a, Result<()>>;
    /// What an executor principal may run; `None` when the operator allowed it nothing.
    fn executor_allowance<'a>(&'a self, principal_id: &'a str) -> BoxFuture<'a, Result<Option<ExecutorAllowance>>>;
}

macro_rules! select_principal {
    () => {
        "SELECT id, kind, name, display_name, created_at, disabled_at FROM principals"
    };
}

macro_rules! select_token {
    () => {
        "SELECT id AS token_id, principal_id, token_hash, label, created_at AS token_created_at, \
         expires_at, revoked_at, operated_by, issued_by FROM access_tokens"
    };
}

/// Inserts the principal `$p` inside `$tx`.
macro_rules! insert_principal_in {
    ($tx:ident, $p:expr) => {{
        let p: &$crate::records::Principal = $p;
        sqlx::query(
            "INSERT INTO principals (id, kind, name, display_name, created_at, disabled_at) \
             VALUES ($1, $2, $3, $4, $5, $6)",
        )
        .bind(&p.id)
        .bind(p.kind.as_str())
        .bind(&p.name)
        .bind(&p.display_name)
        .bind(p.created_at)
        .bind(p.disabled_at)
        .execute(&mut *$tx)
        .await?;
    }};
}
pub(crate) use insert_principal_in;

macro_rules! identity_store {
    ($store:ty) => {
        impl IdentityStore for $store {
            fn create_principal<'a>(&'a self, p: &'a Principal, event: &'a Event) -> BoxFuture<'a, Result<()>> {
                Box::pin(async move {
                    let mut tx = self.write().await?;
                    insert_principal_in!(tx, p);
                    crate::events::commit!(tx, event);
                    Ok(())
                })
            }

            fn principal<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<Principal>> {
                Box::pin(async move {
                    let sql = concat!(select_principal!(), " WHERE id = $1");
                    Ok(sqlx::query_as(sql).bind(id).fetch_one(self.read()).await?)
                })
            }

            fn principal_by_name<'a>(&'a self, name: &'a str) -> BoxFuture<'a, Result<Principal>> {
                Box::pin(async move {
                    let sql = concat!(select_principal!(), " WHERE name = $1");
                    Ok(sqlx::query_as(sql).bind(name).fetch_one(self.read()).await?)
                })
            }

            fn principals(&self) -> BoxFuture<'_, Result<Vec<Principal>>> {
                Box::pin(async move {
                    let sql = concat!(select_principal!(), " ORDER BY name");
                    Ok(sqlx::query_as(sql).fetch_all(self.read()).await?)
                })
            }

            fn create_token<'a>(&'a self, t: &'a AccessToken, event: &'a Event) -> BoxFuture<'a, Result<()>> {
                Box::pin(async move {
                    let mut tx = self.write().await?;
                    sqlx::query(
                        "INSERT INTO access_tokens (id, principal_id, token_hash, label, created_at, expires_at, \
                         revoked_at, operated_by, issued_by) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
                    )
                    .bind(&t.id)
                    .bind(&t.principal_id)
                    .bind(&t.token_hash)
                    .bind(&t.label)
                    .bind(t.created_at)
                    .bind(t.expires_at)
                    .bind(t.revoked_at)
                    .bind(&t.operated_by)
                    .bind(&t.issued_by)
                    .execute(&mut *tx)
                    .await?;
                    crate::events::commit!(tx, event);
                    Ok(())
                })
            }

            fn credential<'a>(&'a self, hash: &'a str) -> BoxFuture<'a, Result<Credential>> {
                KeyReads::credential_by_hash(self, hash)
            }

            fn revoke_token<'a>(&'a self, id: &'a str, at: Time, event: &'a Event) -> BoxFuture<'a, Result<()>> {
                Box::pin(async move {
                    let mut tx = self.write().await?;
                    let done =
                        sqlx::query("UPDATE access_tokens SET revoked_at = $2 WHERE id = $1 AND revoked_at IS NULL")
                            .bind(id)
                            .bind(at)
                            .execute(&mut *tx)
                            .await?;
                    if done.rows_affected() == 0 {
                        return Err(sqlx::Error::RowNotFound.into());
                    }
                    crate::events::commit!(tx, event);
                    self.keys_changed();
                    Ok(())
                })
            }

            fn tokens<'a>(&'a self, principal_id: &'a str) -> BoxFuture<'a, Result<Vec<AccessToken>>> {
                Box::pin(async move {
                    let sql = concat!(select_token!(), " WHERE principal_id = $1 ORDER BY id");
                    Ok(sqlx::query_as(sql).bind(principal_id).fetch_all(self.read()).await?)
                })
            }

            fn create_workspace<'a>(&'a self, w: &'a Workspace, event: &'a Event) -> BoxFuture<'a, Result<()>> {
                Box::pin(async move {
                    let mut tx = self.write().await?;
                    sqlx::query("INSERT INTO workspaces (id, key, name, created_at) VALUES ($1, $2, $3, $4)")
                        .bind(&w.id)
                        .bind(&w.key)
                        .bind(&w.name)
                        .bind(w.created_at)
                        .execute(&mut *tx)
                        .await?;
                    crate::events::commit!(tx, event);
                    Ok(())
                })
            }

            fn workspace_by_key<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<Workspace>> {
                Box::pin(async move {
                    Ok(sqlx::query_as("SELECT id, key, name, created_at FROM workspaces WHERE key = $1")
                        .bind(key)
                        .fetch_one(self.read())
                        .await?)
                })
            }

            fn workspace_by_reference<'a>(&'a self, reference: &'a str) -> BoxFuture<'a, Result<Workspace>> {
                Box::pin(async move {
                    Ok(sqlx::query_as(
                        "SELECT id, key, name, created_at FROM workspaces WHERE id = $1 OR key = $1 \
                         ORDER BY CASE WHEN id = $1 THEN 0 ELSE 1 END LIMIT 1",
                    )
                    .bind(reference)
                    .fetch_one(self.read())
                    .await?)
                })
            }

            fn workspaces(&self) -> BoxFuture<'_, Result<Vec<Workspace>>> {
                Box::pin(async move {
                    Ok(sqlx::query_as("SELECT id, key, name, created_at FROM workspaces ORDER BY key")
                        .fetch_all(self.read())
                        .await?)
                })
            }

            fn add_grant<'a>(&'a self, g: &'a Grant, event: &'a Event) -> BoxFuture<'a, Result<bool>> {
                Box::pin(async move {
                    let mut tx = self.write().await?;
                    let done = sqlx::query(
                        "INSERT INTO grants (id, principal_id, workspace_id, permission, created_at) \
                         VALUES ($1, $2, $3, $4, $5) ON CONFLICT DO NOTHING",
                    )
                    .bind(&g.id)
                    .bind(&g.principal_id)
                    .bind(&g.workspace_id)
                    .bind(&g.permission)
                    .bind(g.created_at)
                    .execute(&mut *tx)
                    .await?;
                    if done.rows_affected() == 0 {
                        return Ok(false);
                    }
                    crate::events::commit!(tx, event);
                    self.keys_changed();
                    Ok(true)
                })
            }

            fn remove_grant<'a>(
                &'a self,
                principal_id: &'a str,
                workspace_id: Option<&'a str>,
                permission: &'a str,
                event: &'a Event,
            ) -> BoxFuture<'a, Result<bool>> {
                Box::pin(async move {
                    let mut tx = self.write().await?;
                    let done = sqlx::query(
                        "DELETE FROM grants WHERE principal_id = $1 AND COALESCE(workspace_id, '') = COALESCE($2, '') \
                         AND permission = $3",
                    )
                    .bind(principal_id)
                    .bind(workspace_id)
                    .bind(permission)
                    .execute(&mut *tx)
                    .await?;
                    if done.rows_affected() == 0 {
                        return Ok(false);
                    }
                    crate::events::commit!(tx, event);
                    self.keys_changed();
                    Ok(true)
                })
            }

            fn grants<'a>(&'a self, principal_id: &'a str) -> BoxFuture<'a, Result<Vec<Grant>>> {
                Box::pin(async move {
                    Ok(sqlx::query_as(
                        "SELECT id AS grant_id, principal_id, workspace_id, permission, created_at AS grant_created_at \
                         FROM grants WHERE principal_id = $1 ORDER BY permission, workspace_id",
                    )
                    .bind(principal_id)
                    .fetch_all(self.read())
                    .await?)
                })
            }

            fn set_executor_allowance<'a>(
                &'a self,
                principal_id: &'a str,
                allowance: Option<&'a ExecutorAllowance>,
                event: &'a Event,
            ) -> BoxFuture<'a, Result<()>> {
                Box::pin(async move {
                    let mut tx = self.write().await?;
                    let done = sqlx::query("UPDATE principals SET executor_allowance = $2 WHERE id = $1")
                        .bind(principal_id)
                        .bind(allowance.map(Json))
                        .execute(&mut *tx)
                        .await?;
                    if done.rows_affected() == 0 {
                        return Err(StoreError::new(ErrorKind::NotFound, format!("no principal {principal_id}")));
                    }
                    crate::events::commit!(tx, event);
                    self.keys_changed();
                    Ok(())
                })
            }

            fn executor_allowance<'a>(
                &'a self,
                principal_id: &'a str,
            ) -> BoxFuture<'a, Result<Option<ExecutorAllowance>>> {
                Box::pin(async move {
                    let found: Option<Option<Json<ExecutorAllowance>>> =
                        sqlx::query_scalar("SELECT executor_allowance FROM principals WHERE id = $1")
                            .bind(principal_id)
                            .fetch_optional(self.read())
                            .await?;
                    match found {
                        None => Err(StoreError::new(ErrorKind::NotFound, format!("no principal {principal_id}"))),
                        Some(allowance) => Ok(allowance.map(|Json(allowance)| allowance)),
                    }
                })
            }
        }
    };
}

identity_store!(SqliteStore);
identity_store!(PgStore);
