//! The catalog: publishing skill versions (leaf, composite or catalog row), reading them by id,
//! `name@version` or bare name, listing, and assigning them to principals. Changes of a published
//! version are in `patch.rs`.

mod closure;
mod endpoint;
mod patch;
mod publish;
mod suggest;
mod view;

use serde_json::{Value, json};
use skill_api::events::{SkillAssigned, SkillRevoked};
use skill_api::{AssignedSkill, DEFAULT_PAGE, ListQuery, MAX_PAGE, Page, SkillOut, SkillStatus};
use skill_contract::codes::Code;
use skill_store::ErrorKind;
use skill_store::records::{AssignOutcome, Assignment, SkillEntry, SkillFilter};

use crate::actor::Actor;
use crate::error::{Class, EngineError, Result};
use crate::{Engine, Origin};

pub(crate) use patch::{change_of, version_conflict};
pub use publish::PROTOCOLS;
pub(crate) use view::{kind, skill_out, time as view_time, to_skill};

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

    /// The version `reference` names now; `None` when there is none.
    pub(crate) async fn resolved(&self, reference: &str) -> Result<Option<skill_store::records::SkillRecord>> {
        match self.find(reference).await {
            Ok(entry) => Ok(Some(entry.skill)),
            Err(error) if error.class == Class::NotFound => Ok(None),
            Err(error) => Err(error),
        }
    }

    /// Reads one version (`org.read`, `skills.invoke` or `skills.execute`).
    pub async fn skill(&self, actor: &Actor, reference: &str) -> Result<SkillOut> {
        actor.require_any(&["org.read", "skills.invoke", "skills.execute"])?;
        let entry = match self.find(reference).await {
            Err(error) if error.class == Class::NotFound => {
                return Err(self.with_suggestions(actor, error, reference).await);
            }
            found => found?,
        };
        Ok(skill_out(entry, actor.can("org.read")))
    }

    /// Lists versions in publication order (`org.read`).
    pub async fn skills(&self, actor: &Actor, query: &ListQuery) -> Result<Page<SkillOut>> {
        actor.require("org.read")?;
        let status = query.status.as_deref().map(check_status).transpose()?;
        let filter =
            SkillFilter { name: query.name.clone(), status, package: query.package.clone(), ..SkillFilter::default() };
        let (entries, next_cursor) = self.page(filter, query.limit, query.cursor.clone()).await?;
        let items: Vec<SkillOut> = entries.into_iter().map(|entry| skill_out(entry, true)).collect();
        Ok(bounded_page(items, next_cursor, |item| item.id.clone()))
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
        if let Some(cursor) = &cursor
            && uuid::Uuid::parse_str(cursor).is_err()
        {
            return Err(EngineError::invalid_request(
                "`cursor` is not a cursor this API gave: pass the `nextCursor` of the previous page, or none",
            )
            .with("field", "cursor"));
        }
        let filter = SkillFilter { after: cursor, limit: limit + 1, ..filter };
        let mut entries = self.store.skills(&filter).await?;
        let more = entries.len() > limit as usize;
        entries.truncate(limit as usize);
        let next_cursor = more.then(|| entries.last().map(|entry| entry.skill.id.clone())).flatten();
        Ok((entries, next_cursor))
    }

    /// Assigns a version to a principal (`org.manage`), or changes the metadata of its
    /// assignment; [`AssignOutcome::Unchanged`] (and no event) for a repeat.
    /// A disabled version cannot be assigned (`skill_disabled`).
    pub async fn assign(
        &self,
        actor: &Actor,
        principal_id: &str,
        reference: &str,
        metadata: Option<Value>,
        read_only: bool,
        request_id: Option<&str>,
    ) -> Result<AssignOutcome> {
        actor.require("org.manage")?;
        if let Some(metadata) = &metadata {
            publish::no_secret(&json!({"metadata": metadata}))?;
        }
        let principal = self.principal(principal_id).await?;
        self.not_an_agent(&principal, "an assignment made by hand").await?;
        let entry = self.find(reference).await?;
        if entry.skill.status == SkillStatus::Disabled {
            return Err(EngineError::new(
                Class::Invalid,
                Code::SkillDisabled,
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
            read_only,
            created_at: self.now(),
        };
        let assigned = SkillAssigned {
            skill_id: entry.skill.id.clone(),
            skill: format!("{}@{}", entry.skill.name, entry.skill.version),
            read_only,
        };
        let event = self.event(format!("principal:{}", principal.id), &assigned, &Origin::of(actor, request_id));
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
        self.not_an_agent(&principal, "an assignment taken back by hand").await?;
        let entry = self.find(reference).await?;
        let revoked = SkillRevoked { skill_id: entry.skill.id.clone() };
        let event = self.event(format!("principal:{}", principal.id), &revoked, &Origin::of(actor, request_id));
        Ok(self.store.unassign_skill(&principal.id, &entry.skill.id, &event).await?)
    }

    /// The versions assigned to a principal (`org.read`, or the principal itself).
    pub async fn assigned(&self, actor: &Actor, principal_id: &str) -> Result<Vec<AssignedSkill>> {
        if actor.id() != principal_id {
            actor.require("org.read")?;
        }
        let principal = self.principal(principal_id).await?;
        let mut out = Vec::new();
        for assignment in self.store.assignments(&principal.id).await? {
            let skill = self.store.skill(&assignment.skill_id).await?.skill;
            out.push(AssignedSkill {
                status: skill.status,
                skill_id: skill.id,
                name: skill.name,
                version: skill.version,
                metadata: assignment.metadata,
                read_only: assignment.read_only,
                assigned_at: view_time(&assignment.created_at),
            });
        }
        Ok(out)
    }

    /// Who is assigned a version (`org.read`): each principal's name and whether the assignment is
    /// read-only.
    pub async fn assignees(&self, actor: &Actor, reference: &str) -> Result<Vec<(String, bool)>> {
        actor.require("org.read")?;
        let skill = self.find(reference).await?.skill;
        let mut out = Vec::new();
        for assignment in self.store.assignments_of_skill(&skill.id).await? {
            out.push((self.principal(&assignment.principal_id).await?.name, assignment.read_only));
        }
        Ok(out)
    }

    /// The principal whose id, else whose name, is `reference`.
    async fn principal(&self, reference: &str) -> Result<skill_store::records::Principal> {
        self.principal_by_reference(reference).await
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

/// The status `word` names; `invalid_status` listing the allowed words otherwise.
pub(crate) fn check_status(word: &str) -> Result<SkillStatus> {
    crate::error::requested_state(word, <SkillStatus as skill_api::State>::ALL, "a status")
}

/// The most bytes of items one page answers with: a page stops early (its `nextCursor` after the
/// last item it holds) rather than grow past it; a single larger item still makes a page.
pub const MAX_PAGE_BYTES: usize = 4 * 1024 * 1024;

/// `items` cut to at most [`MAX_PAGE_BYTES`] of JSON, with the cursor after the last one kept
/// when anything was cut.
pub(crate) fn bounded_page<T: serde::Serialize>(
    items: Vec<T>,
    next_cursor: Option<String>,
    cursor_of: impl Fn(&T) -> String,
) -> Page<T> {
    let mut total = 0usize;
    let mut kept = Vec::with_capacity(items.len());
    let count = items.len();
    for item in items {
        let size = serde_json::to_vec(&item).map_or(0, |bytes| bytes.len());
        if !kept.is_empty() && total + size > MAX_PAGE_BYTES {
            break;
        }
        total += size;
        kept.push(item);
    }
    let next_cursor = if kept.len() < count { kept.last().map(&cursor_of) } else { next_cursor };
    Page { items: kept, next_cursor }
}

/// The contract of a version that can be called: `409 skill_not_invocable` with the reason
/// (`disabled`, `no_contract`, `composite`, `protocol_not_invocable`) otherwise.
/// The contract of a version a call was made of (a leaf: only leaves are called).
pub(crate) fn contract_of(skill: &skill_store::records::SkillRecord) -> Result<&skill_contract::Contract> {
    skill.contract.as_ref().ok_or_else(|| {
        tracing::error!(skill = %skill.id, "a call's version has no contract");
        EngineError::new(Class::Internal, Code::InternalError, "an internal error occurred; the log has its details")
    })
}

pub(crate) fn invocable(skill: &skill_store::records::SkillRecord) -> Result<&skill_contract::Contract> {
    let refuse = |reason: &str, message: String| {
        Err(EngineError::new(Class::Conflict, Code::SkillNotInvocable, message)
            .with("skill", format!("{}@{}", skill.name, skill.version))
            .with("skillId", skill.id.clone())
            .with("reason", reason)
            .with("protocol", json!(skill.protocol))
            .with("status", skill.status))
    };
    let name = format!("{}@{}", skill.name, skill.version);
    if skill.status == SkillStatus::Disabled {
        return refuse("disabled", format!("{name} is disabled"));
    }
    if skill.composition.is_some() {
        return refuse("composite", format!("{name} is a composite: call the skills it includes"));
    }
    let Some(contract) = &skill.contract else {
        return refuse("no_contract", format!("{name} is a catalog entry without a contract"));
    };
    if !matches!(skill.protocol.as_deref(), Some("http" | "local" | "mcp")) {
        return refuse("protocol_not_invocable", format!("{name} has no protocol the core calls"));
    }
    Ok(contract)
}
