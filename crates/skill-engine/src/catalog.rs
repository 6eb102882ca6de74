//! The catalog: publishing skill versions (leaf, composite or catalog row), reading them by id,
//! `name@version` or bare name, listing, and assigning them to principals. Changes of a published
//! version are in `patch.rs`.

mod patch;
mod publish;
mod view;

use chrono::Utc;
use serde::Deserialize;
use serde_json::{Value, json};
use skill_store::ErrorKind;
use skill_store::records::{Assignment, SkillEntry, SkillFilter};

use crate::actor::Actor;
use crate::error::{Class, EngineError, Result};
use crate::{Engine, Origin};

pub use patch::PatchRequest;
pub use publish::{DEFAULT_VERSION, PROTOCOLS, PublishRequest};
pub use view::{PackageOut, SkillOut, etag};
pub(crate) use view::{kind, time as view_time, to_skill};

/// The largest page of a listing, and the page when none is asked for.
pub const MAX_PAGE: u32 = 200;
pub const DEFAULT_PAGE: u32 = 50;

/// The statuses of a skill version, in the only order they move.
pub const STATUSES: &[&str] = &["active", "deprecated", "disabled"];

/// A listing's query.
#[derive(Debug, Clone, Default, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ListQuery {
    pub name: Option<String>,
    pub status: Option<String>,
    pub package: Option<String>,
    pub limit: Option<u32>,
    pub cursor: Option<String>,
}

/// One page: the items and the cursor of the next page (`None` on the last).
#[derive(Debug, Clone, serde::Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Page<T> {
    pub items: Vec<T>,
    pub next_cursor: Option<String>,
}

impl Engine {
    /// The version `reference` names: an id, `name@version` (whatever its status), or a bare
    /// name (the newest active version, else the newest deprecated one).
    pub(crate) async fn find(&self, reference: &str) -> Result<SkillEntry> {
        let found = if let Some((name, version)) = reference.split_once('@') {
            self.store.skill_version(name, version).await
        } else if uuid::Uuid::try_parse(reference).is_ok() {
            self.store.skill(reference).await
        } else {
            self.store.newest_skill(reference).await
        };
        found.map_err(|error| match error.kind() {
            ErrorKind::NotFound => EngineError::not_found(&format!("skill {reference}")).with("skill", reference),
            _ => error.into(),
        })
    }

    /// Reads one version (`org.read`, `skills.invoke` or `skills.execute`).
    pub async fn skill(&self, actor: &Actor, reference: &str) -> Result<SkillOut> {
        actor.require_any(&["org.read", "skills.invoke", "skills.execute"])?;
        Ok(SkillOut::new(self.find(reference).await?, actor.can("org.read")))
    }

    /// Lists versions in publication order (`org.read`).
    pub async fn skills(&self, actor: &Actor, query: &ListQuery) -> Result<Page<SkillOut>> {
        actor.require("org.read")?;
        if let Some(status) = &query.status {
            check_status(status)?;
        }
        let filter = SkillFilter {
            name: query.name.clone(),
            status: query.status.clone(),
            package: query.package.clone(),
            ..SkillFilter::default()
        };
        let (entries, next_cursor) = self.page(filter, query.limit, query.cursor.clone()).await?;
        Ok(Page { items: entries.into_iter().map(|entry| SkillOut::new(entry, true)).collect(), next_cursor })
    }

    /// One page of versions matching `filter`, in publication order after `cursor`, and the
    /// cursor of the next page.
    pub(crate) async fn page(
        &self,
        filter: SkillFilter,
        limit: Option<u32>,
        cursor: Option<String>,
    ) -> Result<(Vec<SkillEntry>, Option<String>)> {
        let limit = checked_limit(limit, DEFAULT_PAGE, MAX_PAGE)?;
        let filter = SkillFilter { after: cursor, limit: limit + 1, ..filter };
        let mut entries = self.store.skills(&filter).await?;
        let more = entries.len() > limit as usize;
        entries.truncate(limit as usize);
        let next_cursor = more.then(|| entries.last().map(|entry| entry.skill.id.clone())).flatten();
        Ok((entries, next_cursor))
    }

    /// Assigns a version to a principal (`org.manage`); `true` when it was not assigned yet.
    /// A disabled version cannot be assigned (`skill_disabled`).
    pub async fn assign(
        &self,
        actor: &Actor,
        principal_id: &str,
        reference: &str,
        metadata: Option<Value>,
        request_id: Option<&str>,
    ) -> Result<bool> {
        actor.require("org.manage")?;
        let principal = self.principal(principal_id).await?;
        let entry = self.find(reference).await?;
        if entry.skill.status == "disabled" {
            return Err(EngineError::new(
                Class::Invalid,
                "skill_disabled",
                format!("{}@{} is disabled and cannot be assigned", entry.skill.name, entry.skill.version),
            )
            .with("skillId", entry.skill.id.clone()));
        }
        let metadata = match metadata {
            None | Some(Value::Null) => json!({}),
            Some(object @ Value::Object(_)) => object,
            Some(_) => return Err(EngineError::invalid_request("`metadata` must be a JSON object")),
        };
        let assignment = Assignment {
            principal_id: principal.id.clone(),
            skill_id: entry.skill.id.clone(),
            metadata,
            created_at: Utc::now(),
        };
        let event = self.event(
            "skill.assigned",
            format!("principal:{}", principal.id),
            json!({"skillId": entry.skill.id, "skill": format!("{}@{}", entry.skill.name, entry.skill.version)}),
            &Origin::of(actor, request_id),
        );
        Ok(self.store.assign_skill(&assignment, &event).await?)
    }

    /// Takes an assignment back (`org.manage`); `true` when there was one.
    pub async fn unassign(
        &self,
        actor: &Actor,
        principal_id: &str,
        reference: &str,
        request_id: Option<&str>,
    ) -> Result<bool> {
        actor.require("org.manage")?;
        let principal = self.principal(principal_id).await?;
        let entry = self.find(reference).await?;
        let event = self.event(
            "skill.revoked",
            format!("principal:{}", principal.id),
            json!({"skillId": entry.skill.id}),
            &Origin::of(actor, request_id),
        );
        Ok(self.store.unassign_skill(&principal.id, &entry.skill.id, &event).await?)
    }

    /// The versions assigned to a principal (`org.read`, or the principal itself).
    pub async fn assigned(&self, actor: &Actor, principal_id: &str) -> Result<Vec<Value>> {
        if actor.id() != principal_id {
            actor.require("org.read")?;
        }
        let principal = self.principal(principal_id).await?;
        let mut out = Vec::new();
        for assignment in self.store.assignments(&principal.id).await? {
            let skill = self.store.skill(&assignment.skill_id).await?.skill;
            out.push(json!({
                "skillId": skill.id, "name": skill.name, "version": skill.version, "status": skill.status,
                "metadata": assignment.metadata, "assignedAt": view_time(&assignment.created_at),
            }));
        }
        Ok(out)
    }

    async fn principal(&self, id: &str) -> Result<skill_store::records::Principal> {
        self.store.principal(id).await.map_err(|error| match error.kind() {
            ErrorKind::NotFound => EngineError::not_found(&format!("principal {id}")),
            _ => error.into(),
        })
    }
}

/// `limit` when it is 1 to `max`, `default` when absent; `invalid_request` otherwise.
pub(crate) fn checked_limit(limit: Option<u32>, default: u32, max: u32) -> Result<u32> {
    match limit {
        None => Ok(default),
        Some(limit) if (1..=max).contains(&limit) => Ok(limit),
        Some(other) => Err(EngineError::invalid_request(format!("`limit` is 1 to {max}, not {other}"))
            .with("field", "limit")
            .with("max", max)),
    }
}

pub(crate) fn check_status(status: &str) -> Result<()> {
    if STATUSES.contains(&status) {
        Ok(())
    } else {
        Err(EngineError::new(
            Class::Invalid,
            "invalid_status",
            format!("a status is one of {}, not {status:?}", STATUSES.join(", ")),
        )
        .with("allowed", STATUSES.to_vec()))
    }
}
