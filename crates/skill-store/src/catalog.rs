//! Skill versions, their assignment to principals, and package installs — written once for both
//! backends.

use futures::future::BoxFuture;
use sqlx::types::Json;
use sqlx::{FromRow as _, Row as _};

use crate::backend::{PgStore, SqliteStore};
use crate::error::{ErrorKind, Result, StoreError};
use crate::key_reads::{KeyReads, select_skill};
use crate::records::{
    AssignOutcome, Assignment, Event, PackageInstall, PackageObject, PackagePlan, SkillChange, SkillEntry, SkillFilter,
    SkillRecord,
};

/// The catalog of skill versions.
pub trait CatalogStore: Send + Sync {
    /// Publishes a skill version; `Conflict` when `name@version` exists.
    fn insert_skill<'a>(&'a self, skill: &'a SkillRecord, event: &'a Event) -> BoxFuture<'a, Result<()>>;
    fn skill<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<SkillEntry>>;
    fn skill_version<'a>(&'a self, name: &'a str, version: &'a str) -> BoxFuture<'a, Result<SkillEntry>>;
    /// The newest `active` version of `name`, else its newest `deprecated` one.
    fn newest_skill<'a>(&'a self, name: &'a str) -> BoxFuture<'a, Result<SkillEntry>>;
    /// Skill versions in publication order after `filter.after`.
    fn skills<'a>(&'a self, filter: &'a SkillFilter) -> BoxFuture<'a, Result<Vec<SkillEntry>>>;
    /// Writes `change` when the row is still at `expected_row_version` (`Stale` otherwise) and
    /// returns the new row. The database refuses what a published version may not change.
    fn update_skill<'a>(
        &'a self,
        id: &'a str,
        expected_row_version: i32,
        change: &'a SkillChange,
        event: &'a Event,
    ) -> BoxFuture<'a, Result<SkillRecord>>;

    /// Assigns a skill version to a principal, or changes the metadata of its assignment; nothing
    /// (and no event) when it was assigned with the same metadata.
    fn assign_skill<'a>(&'a self, assignment: &'a Assignment, event: &'a Event)
    -> BoxFuture<'a, Result<AssignOutcome>>;
    /// Takes an assignment back; `false` (and no event) when there was none.
    fn unassign_skill<'a>(
        &'a self,
        principal_id: &'a str,
        skill_id: &'a str,
        event: &'a Event,
    ) -> BoxFuture<'a, Result<bool>>;
    fn assignments<'a>(&'a self, principal_id: &'a str) -> BoxFuture<'a, Result<Vec<Assignment>>>;
    /// The assignments of one skill version, to whichever principal.
    fn assignments_of_skill<'a>(&'a self, skill_id: &'a str) -> BoxFuture<'a, Result<Vec<Assignment>>>;

    /// Records a package install and links its objects to it; an object another package linked
    /// moves to this one only when it is in `adopt` (`Refused("package_object_conflict")`, with
    /// `details.objects`, otherwise). The same version and hash again writes nothing, no event
    /// either. An object no version of the catalog has is `Refused("unknown_reference")`.
    fn record_install<'a>(
        &'a self,
        install: &'a PackageInstall,
        objects: &'a [PackageObject],
        adopt: &'a [PackageObject],
        event: &'a Event,
    ) -> BoxFuture<'a, Result<()>>;
    /// Writes a package's plan in one transaction: every version it creates, every version it
    /// changes (each at its expected row version), then the install with its objects, each with
    /// its event. Nothing is written when any step is refused.
    fn apply_package<'a>(&'a self, plan: &'a PackagePlan, event: &'a Event) -> BoxFuture<'a, Result<()>>;
    fn package_install<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<PackageInstall>>;
    fn package_objects<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<Vec<PackageObject>>>;
}

macro_rules! returning_skill {
    () => {
        "RETURNING id, name, version, description, protocol, config, input_schema, output_schema, \
     side_effects, risk_level, contract, composition, status, row_version, created_at, updated_at"
    };
}

/// Inserts the skill record `$s` inside `$tx`.
macro_rules! insert_skill_in {
    ($tx:ident, $s:expr) => {{
        let s: &SkillRecord = $s;
        sqlx::query(
            "INSERT INTO skills (id, name, version, description, protocol, config, input_schema, \
             output_schema, side_effects, risk_level, contract, composition, status, row_version, \
             created_at, updated_at) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16)",
        )
        .bind(&s.id)
        .bind(&s.name)
        .bind(&s.version)
        .bind(&s.description)
        .bind(&s.protocol)
        .bind(Json(&s.config))
        .bind(s.input_schema.as_ref().map(Json))
        .bind(s.output_schema.as_ref().map(Json))
        .bind(s.side_effects.map(|s| s.as_str()))
        .bind(s.risk_level.map(|r| r.as_str()))
        .bind(s.contract.as_ref().map(Json))
        .bind(s.composition.as_ref().map(Json))
        .bind(s.status.as_str())
        .bind(s.row_version)
        .bind(s.created_at)
        .bind(s.updated_at)
        .execute(&mut *$tx)
        .await?;
    }};
}

/// Updates the skill `$id` at row version `$expected` to `$c` inside `$tx`: the new row; the
/// enclosing function returns `NotFound` or `Stale` when the row is gone or has moved on.
macro_rules! update_skill_in {
    ($tx:ident, $id:expr, $expected:expr, $c:expr, $at:expr) => {{
        let (id, expected_row_version, c): (&str, i32, &SkillChange) = ($id, $expected, $c);
        let sql = concat!(
            "UPDATE skills SET description = $3, config = $4, input_schema = $5, output_schema = $6, \
             status = $7, contract = $8, row_version = row_version + 1, updated_at = $9 \
             WHERE id = $1 AND row_version = $2 ",
            returning_skill!()
        );
        let row = sqlx::query(sql)
            .bind(id)
            .bind(expected_row_version)
            .bind(&c.description)
            .bind(Json(&c.config))
            .bind(c.input_schema.as_ref().map(Json))
            .bind(c.output_schema.as_ref().map(Json))
            .bind(c.status.as_str())
            .bind(c.contract.as_ref().map(Json))
            .bind($at)
            .fetch_optional(&mut *$tx)
            .await?;
        let Some(row) = row else {
            let exists =
                sqlx::query("SELECT row_version FROM skills WHERE id = $1").bind(id).fetch_optional(&mut *$tx).await?;
            return Err(match exists {
                None => StoreError::new(ErrorKind::NotFound, format!("no skill {id}")),
                Some(row) => StoreError::new(
                    ErrorKind::Stale,
                    format!("skill {id} is at row version {}", row.try_get::<i32, _>(0)?),
                ),
            });
        };
        SkillRecord::from_row(&row)?
    }};
}

/// Records the install `$install` and links `$objects` to it inside `$tx`; an object linked to
/// another package moves only when it is among `$adopt` (`package_object_conflict` otherwise,
/// naming every such object and its package).
macro_rules! record_install_in {
    ($tx:ident, $install:expr, $objects:expr, $adopt:expr) => {{
        let (install, objects, adopt): (&PackageInstall, &[PackageObject], &[PackageObject]) =
            ($install, $objects, $adopt);
        // The same version and hash again changes nothing; the upsert's row lock makes a
        // concurrent twin wait and then see that.
        let changed = sqlx::query(
            "INSERT INTO package_installs (key, version, install_hash, installed_at, installed_by) \
             VALUES ($1, $2, $3, $4, $5) ON CONFLICT (key) DO UPDATE SET version = excluded.version, \
             install_hash = excluded.install_hash, installed_at = excluded.installed_at, \
             installed_by = excluded.installed_by \
             WHERE package_installs.version <> excluded.version OR package_installs.install_hash <> excluded.install_hash",
        )
        .bind(&install.key)
        .bind(&install.version)
        .bind(&install.install_hash)
        .bind(install.installed_at)
        .bind(&install.installed_by)
        .execute(&mut *$tx)
        .await?
        .rows_affected()
            > 0;
        // Objects are linked again when the install changed, and adopted ones even when not.
        let (mut taken, mut relinked) = (Vec::new(), false);
        for object in objects.iter().filter(|object| changed || adopt.contains(object)) {
            const OWNER: &str = "SELECT package_key FROM package_objects WHERE kind = $1 AND object_key = $2";
            let before: Option<String> =
                sqlx::query_scalar(OWNER).bind(&object.kind).bind(&object.key).fetch_optional(&mut *$tx).await?;
            if before.as_deref() == Some(install.key.as_str()) {
                continue;
            }
            // The condition holds a concurrent install that linked the object meanwhile.
            let linked = sqlx::query(
                "INSERT INTO package_objects (kind, object_key, package_key) VALUES ($1, $2, $3) \
                 ON CONFLICT (kind, object_key) DO UPDATE SET package_key = excluded.package_key \
                 WHERE package_objects.package_key = excluded.package_key OR $4",
            )
            .bind(&object.kind)
            .bind(&object.key)
            .bind(&install.key)
            .bind(adopt.contains(object))
            .execute(&mut *$tx)
            .await?
            .rows_affected();
            if linked == 0 {
                let now: String =
                    sqlx::query_scalar(OWNER).bind(&object.kind).bind(&object.key).fetch_one(&mut *$tx).await?;
                taken.push((object, now));
            } else {
                relinked = true;
            }
        }
        if !taken.is_empty() {
            let names: Vec<String> =
                taken.iter().map(|(object, owner)| format!("{} {} (package {owner})", object.kind, object.key)).collect();
            let list: Vec<serde_json::Value> = taken
                .iter()
                .map(|(object, owner)| serde_json::json!({"kind": object.kind, "key": object.key, "package": owner}))
                .collect();
            return Err(StoreError::new(
                ErrorKind::Refused(skill_contract::codes::Code::PackageObjectConflict),
                format!(
                    "another package installed {}: adopt them to move them to package {}",
                    names.join(", "),
                    install.key
                ),
            )
            .with("objects", serde_json::Value::Array(list)));
        }
        changed || relinked
    }};
}

macro_rules! catalog_store {
    ($store:ty) => {
        impl CatalogStore for $store {
            fn insert_skill<'a>(&'a self, s: &'a SkillRecord, event: &'a Event) -> BoxFuture<'a, Result<()>> {
                Box::pin(async move {
                    let mut tx = self.write().await?;
                    insert_skill_in!(tx, s);
                    crate::events::commit!(tx, event);
                    self.keys_changed();
                    Ok(())
                })
            }

            fn skill<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<SkillEntry>> {
                KeyReads::skill_by_id(self, id)
            }

            fn skill_version<'a>(&'a self, name: &'a str, version: &'a str) -> BoxFuture<'a, Result<SkillEntry>> {
                KeyReads::skill_by_version(self, name, version)
            }

            fn newest_skill<'a>(&'a self, name: &'a str) -> BoxFuture<'a, Result<SkillEntry>> {
                Box::pin(async move {
                    // Ids are UUIDv7: their order is the order of publication.
                    let sql = concat!(
                        select_skill!(),
                        " WHERE s.name = $1 AND s.status IN ('active', 'deprecated') \
                         ORDER BY CASE s.status WHEN 'active' THEN 0 ELSE 1 END, s.created_at DESC, s.id DESC LIMIT 1"
                    );
                    Ok(sqlx::query_as(sql).bind(name).fetch_one(self.read()).await?)
                })
            }

            fn skills<'a>(&'a self, f: &'a SkillFilter) -> BoxFuture<'a, Result<Vec<SkillEntry>>> {
                Box::pin(async move {
                    let sql = concat!(
                        select_skill!(),
                        " WHERE ($1 IS NULL OR s.name = $1) AND ($2 IS NULL OR s.status = $2) \
                         AND ($3 IS NULL OR po.package_key = $3) AND ($4 IS NULL OR s.id > $4) \
                         ORDER BY s.id LIMIT $5"
                    );
                    Ok(sqlx::query_as(sql)
                        .bind(&f.name)
                        .bind(f.status.map(|s| s.as_str()))
                        .bind(&f.package)
                        .bind(&f.after)
                        .bind(i64::from(f.limit))
                        .fetch_all(self.read())
                        .await?)
                })
            }

            fn update_skill<'a>(
                &'a self,
                id: &'a str,
                expected_row_version: i32,
                c: &'a SkillChange,
                event: &'a Event,
            ) -> BoxFuture<'a, Result<SkillRecord>> {
                Box::pin(async move {
                    let mut tx = self.write().await?;
                    let skill = update_skill_in!(tx, id, expected_row_version, c, event.created_at);
                    crate::events::commit!(tx, event);
                    self.keys_changed();
                    Ok(skill)
                })
            }

            fn assign_skill<'a>(&'a self, a: &'a Assignment, event: &'a Event) -> BoxFuture<'a, Result<AssignOutcome>> {
                Box::pin(async move {
                    let mut tx = self.write().await?;
                    let done = sqlx::query(
                        "INSERT INTO skill_assignments (principal_id, skill_id, metadata, created_at, read_only) \
                         VALUES ($1, $2, $3, $4, $5) ON CONFLICT DO NOTHING",
                    )
                    .bind(&a.principal_id)
                    .bind(&a.skill_id)
                    .bind(Json(&a.metadata))
                    .bind(a.created_at)
                    .bind(a.read_only)
                    .execute(&mut *tx)
                    .await?;
                    if done.rows_affected() == 1 {
                        crate::events::commit!(tx, event);
                        return Ok(AssignOutcome::Created);
                    }
                    let row = sqlx::query(
                        "SELECT metadata, read_only FROM skill_assignments WHERE principal_id = $1 AND skill_id = $2",
                    )
                    .bind(&a.principal_id)
                    .bind(&a.skill_id)
                    .fetch_one(&mut *tx)
                    .await?;
                    let Json(stored): Json<serde_json::Value> = row.try_get(0)?;
                    let read_only: bool = row.try_get(1)?;
                    if stored == a.metadata && read_only == a.read_only {
                        return Ok(AssignOutcome::Unchanged);
                    }
                    sqlx::query(
                        "UPDATE skill_assignments SET metadata = $3, read_only = $4 \
                         WHERE principal_id = $1 AND skill_id = $2",
                    )
                    .bind(&a.principal_id)
                    .bind(&a.skill_id)
                    .bind(Json(&a.metadata))
                    .bind(a.read_only)
                        .execute(&mut *tx)
                        .await?;
                    crate::events::commit!(tx, event);
                    Ok(AssignOutcome::Updated)
                })
            }

            fn unassign_skill<'a>(
                &'a self,
                principal_id: &'a str,
                skill_id: &'a str,
                event: &'a Event,
            ) -> BoxFuture<'a, Result<bool>> {
                Box::pin(async move {
                    let mut tx = self.write().await?;
                    let done = sqlx::query("DELETE FROM skill_assignments WHERE principal_id = $1 AND skill_id = $2")
                        .bind(principal_id)
                        .bind(skill_id)
                        .execute(&mut *tx)
                        .await?;
                    if done.rows_affected() == 0 {
                        return Ok(false);
                    }
                    crate::events::commit!(tx, event);
                    Ok(true)
                })
            }

            fn assignments<'a>(&'a self, principal_id: &'a str) -> BoxFuture<'a, Result<Vec<Assignment>>> {
                Box::pin(async move {
                    Ok(sqlx::query_as(
                        "SELECT principal_id, skill_id, metadata, read_only, created_at FROM skill_assignments \
                         WHERE principal_id = $1 ORDER BY skill_id",
                    )
                    .bind(principal_id)
                    .fetch_all(self.read())
                    .await?)
                })
            }

            fn assignments_of_skill<'a>(&'a self, skill_id: &'a str) -> BoxFuture<'a, Result<Vec<Assignment>>> {
                Box::pin(async move {
                    Ok(sqlx::query_as(
                        "SELECT principal_id, skill_id, metadata, read_only, created_at FROM skill_assignments \
                         WHERE skill_id = $1 ORDER BY principal_id",
                    )
                    .bind(skill_id)
                    .fetch_all(self.read())
                    .await?)
                })
            }

            fn record_install<'a>(
                &'a self,
                install: &'a PackageInstall,
                objects: &'a [PackageObject],
                adopt: &'a [PackageObject],
                event: &'a Event,
            ) -> BoxFuture<'a, Result<()>> {
                Box::pin(async move {
                    let mut tx = self.write().await?;
                    // An install recorded again (the same version and hash) writes no event.
                    if record_install_in!(tx, install, objects, adopt) {
                        crate::events::commit!(tx, event);
                        self.keys_changed();
                    }
                    Ok(())
                })
            }

            fn apply_package<'a>(&'a self, plan: &'a PackagePlan, event: &'a Event) -> BoxFuture<'a, Result<()>> {
                Box::pin(async move {
                    let mut tx = self.write().await?;
                    for (s, created) in &plan.creates {
                        insert_skill_in!(tx, s);
                        crate::events::insert!(tx, created);
                    }
                    for update in &plan.updates {
                        let c = &update.change;
                        update_skill_in!(tx, &update.id, update.expected_row_version, c, update.event.created_at);
                        crate::events::insert!(tx, &update.event);
                    }
                    // Agents after the versions they are assigned, before the install links them.
                    for agent in &plan.agents {
                        crate::agents::apply_agent_in!(tx, agent);
                    }
                    let (install, objects, adopt) = (&plan.install, &plan.objects[..], &plan.adopt[..]);
                    let installed = record_install_in!(tx, install, objects, adopt);
                    if let Some(schema) = &plan.settings_schema {
                        crate::settings::settings_schema_in!(tx, &install.key, schema, install.installed_at);
                    }
                    for (artifact_type, published) in &plan.artifact_types {
                        crate::statements::run_in!(tx, &[crate::statements::insert_artifact_type(artifact_type)?]);
                        crate::events::insert!(tx, published);
                    }
                    for (task_type, published) in &plan.task_types {
                        crate::statements::run_in!(tx, &[crate::statements::insert_task_type(task_type)?]);
                        crate::events::insert!(tx, published);
                    }
                    // Rules after the agents they act as and the task types they ensure.
                    for (rule, published) in &plan.rules {
                        crate::rules::insert_rule_in!(tx, rule);
                        crate::events::insert!(tx, published);
                    }
                    for (process, published) in &plan.processes {
                        crate::statements::run_in!(tx, &[crate::statements::insert_process(process)?]);
                        crate::events::insert!(tx, published);
                    }
                    if installed || !plan.creates.is_empty() || !plan.updates.is_empty() || !plan.task_types.is_empty()
                        || !plan.artifact_types.is_empty() || !plan.agents.is_empty() || !plan.rules.is_empty()
                        || !plan.processes.is_empty()
                    {
                        crate::events::commit!(tx, event);
                        self.keys_changed();
                    }
                    Ok(())
                })
            }

            fn package_install<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<PackageInstall>> {
                Box::pin(async move {
                    Ok(sqlx::query_as(
                        "SELECT key, version, install_hash, installed_at, installed_by FROM package_installs \
                         WHERE key = $1",
                    )
                    .bind(key)
                    .fetch_one(self.read())
                    .await?)
                })
            }

            fn package_objects<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<Vec<PackageObject>>> {
                Box::pin(async move {
                    Ok(sqlx::query_as(
                        "SELECT kind, object_key FROM package_objects WHERE package_key = $1 ORDER BY kind, object_key",
                    )
                    .bind(key)
                    .fetch_all(self.read())
                    .await?)
                })
            }
        }
    };
}

catalog_store!(SqliteStore);
catalog_store!(PgStore);
