//! Knowledge: snapshots replace one slot `(workspace, pack, source, scope)` whole — previewed as a
//! plan with the slot's state token, applied only at the token a caller read when it gives one —
//! and entity queries by kind and attribute conditions. The plan, the token and the conditions
//! are `skill_contract::knowledge`'s, which the SDK's `FakeCore` uses too.

use chrono::Utc;
use serde_json::{Value, json};
use skill_api::{EntityPage, EntityQuery, SnapshotPlan, SnapshotRequest};
use skill_contract::knowledge::{self, State};
use skill_store::ErrorKind;
use skill_store::records::SlotRecord;

use crate::actor::Actor;
use crate::error::{Class, EngineError, Result};
use crate::{Engine, Origin};

/// The most entities one snapshot holds.
pub const MAX_ENTITIES: usize = 10_000;

fn invalid(field: &str, message: impl Into<String>) -> EngineError {
    EngineError::invalid_request(message).with("field", field)
}

fn plan_out(plan: Value) -> SnapshotPlan {
    let count = |key: &str| plan[key].as_u64().and_then(|n| usize::try_from(n).ok()).unwrap_or(0);
    SnapshotPlan {
        opened: count("opened"),
        closed: count("closed"),
        superseded: count("superseded"),
        unchanged: count("unchanged"),
        changes: plan["changes"].clone(),
        conflicts: plan["conflicts"].clone(),
        state_token: plan["stateToken"].as_str().unwrap_or_default().to_owned(),
    }
}

impl Engine {
    /// The plan of a snapshot and the slot's state token now (`knowledge.write`).
    pub async fn preview_snapshot(&self, actor: &Actor, request: &SnapshotRequest) -> Result<SnapshotPlan> {
        let (workspace, slot, wanted) = self.snapshot_of(actor, request).await?;
        let current = self.slot_state(&workspace, &slot).await?;
        let token = knowledge::state_token(&current.0);
        Ok(plan_out(knowledge::plan(&current.0, &wanted, token)))
    }

    /// Replaces the slot with the snapshot (`knowledge.write`); with `expectedState`, only when
    /// the slot's token is still that one (`409 snapshot_stale` with `details.stateToken`).
    pub async fn apply_snapshot(
        &self,
        actor: &Actor,
        request: &SnapshotRequest,
        request_id: Option<&str>,
    ) -> Result<SnapshotPlan> {
        let (workspace, slot, wanted) = self.snapshot_of(actor, request).await?;
        for _ in 0..5 {
            let (current, stored) = self.slot_state(&workspace, &slot).await?;
            let token = knowledge::state_token(&current);
            if let Some(expected) = &request.expected_state
                && *expected != token
            {
                return Err(EngineError::new(
                    Class::Conflict,
                    "snapshot_stale",
                    "the knowledge slot changed since its state was read: preview again",
                )
                .with("stateToken", token));
            }
            let new_token = knowledge::state_token(&wanted);
            let plan = knowledge::plan(&current, &wanted, new_token.clone());
            let now = Utc::now();
            let record = SlotRecord {
                workspace_id: workspace.clone(),
                pack: slot.0.clone(),
                source: slot.1.clone(),
                scope: slot.2.clone(),
                state: Value::Object(wanted.iter().map(|(k, v)| (k.clone(), v.clone())).collect()),
                state_token: new_token,
                row_version: stored.as_ref().map_or(1, |s| s.row_version + 1),
                created_at: stored.as_ref().map_or(now, |s| s.created_at),
                updated_at: now,
            };
            let entities: Vec<(String, String, Value)> = wanted
                .iter()
                .map(|(id, entity)| {
                    let (kind, key) = knowledge::split_id(id);
                    (kind.to_owned(), key.to_owned(), entity.clone())
                })
                .collect();
            let event = self.event(
                "knowledge.snapshot_applied",
                format!("knowledge:{workspace}"),
                json!({"pack": slot.0, "source": slot.1, "scope": slot.2, "opened": plan["opened"],
                       "closed": plan["closed"], "stateToken": plan["stateToken"]}),
                &Origin::of(actor, request_id),
            );
            match self.store.put_knowledge_slot(&record, &entities, &event).await {
                Ok(()) => return Ok(plan_out(plan)),
                // Another apply won: decide again on what it wrote.
                Err(error) if error.kind() == ErrorKind::Stale => {}
                Err(error) => return Err(error.into()),
            }
        }
        Err(crate::error::busy())
    }

    /// One page of entities (`knowledge.read`).
    pub async fn query_entities(&self, actor: &Actor, query: &EntityQuery) -> Result<EntityPage> {
        let workspace = self.knowledge_workspace(actor, &query.workspace_id, "knowledge.read").await?;
        if query.kinds.is_empty() || query.kinds.len() > 50 {
            return Err(invalid("kinds", "name 1 to 50 kinds"));
        }
        let limit = match query.limit {
            None => 500,
            Some(limit @ 1..=1000) => limit as usize,
            Some(_) => return Err(invalid("limit", "`limit` is 1 to 1,000")),
        };
        let conditions = query.conditions.clone().unwrap_or_default();
        if let Some(index) =
            conditions.iter().position(|c| !c.is_object() || c.get("attribute").and_then(Value::as_str).is_none())
        {
            return Err(invalid(&format!("where[{index}]"), "a condition is {attribute, op, value}"));
        }
        let after = query.cursor.as_deref().map(knowledge::split_id);
        let rows = self.store.knowledge_entities(&workspace, &query.kinds, after).await?;
        let mut items: Vec<Value> = Vec::new();
        let mut index = 0;
        while index < rows.len() {
            // The rows of one (kind, key): the slot applied last wins.
            let mut last = index;
            while last + 1 < rows.len()
                && (&rows[last + 1].kind, &rows[last + 1].key) == (&rows[index].kind, &rows[index].key)
            {
                last += 1;
            }
            let row = &rows[last];
            let item =
                knowledge::query_item(&knowledge::entity_id(&row.kind, &row.key), &row.entity, &row.source, &row.scope);
            if conditions.iter().all(|c| knowledge::holds(c, &item["attributes"])) {
                items.push(item);
                if items.len() > limit {
                    break;
                }
            }
            index = last + 1;
        }
        let next_cursor = if items.len() > limit {
            items.truncate(limit);
            items.last().map(|item| {
                knowledge::entity_id(
                    item["kind"].as_str().unwrap_or_default(),
                    item["key"].as_str().unwrap_or_default(),
                )
            })
        } else {
            None
        };
        Ok(EntityPage { items, next_cursor })
    }

    /// The workspace, the slot and the wanted state of a snapshot, every part checked.
    async fn snapshot_of(
        &self,
        actor: &Actor,
        request: &SnapshotRequest,
    ) -> Result<(String, (String, String, String), State)> {
        let workspace = self.knowledge_workspace(actor, &request.workspace_id, "knowledge.write").await?;
        let part = |field: &str, value: &Option<String>| -> Result<String> {
            let value = value.clone().unwrap_or_default();
            if value.chars().count() > 200 {
                return Err(invalid(field, format!("`{field}` is at most 200 characters")));
            }
            Ok(value)
        };
        let slot = (part("pack", &request.pack)?, part("source", &request.source)?, part("scope", &request.scope)?);
        if request.entities.len() > MAX_ENTITIES {
            return Err(invalid("entities", format!("a snapshot holds at most {MAX_ENTITIES} entities")));
        }
        for (index, entity) in request.entities.iter().enumerate() {
            let (kind, key) = knowledge::kind_and_key(&Value::Object(entity.clone()));
            if kind.is_empty() || kind.chars().count() > 200 {
                return Err(invalid(&format!("entities[{index}].kind"), "an entity has a kind of 1 to 200 characters"));
            }
            if key.is_empty() || key.chars().count() > 500 {
                return Err(invalid(
                    &format!("entities[{index}].key"),
                    "an entity has a key (or naturalKey) of 1 to 500 characters",
                ));
            }
            if entity.get("attributes").is_some_and(|a| !a.is_object()) {
                return Err(invalid(&format!("entities[{index}].attributes"), "attributes are an object"));
            }
        }
        let body = json!({"workspaceId": workspace, "pack": slot.0, "source": slot.1, "scope": slot.2,
                          "entities": request.entities});
        let (_, wanted) = knowledge::read_snapshot(&body);
        Ok((workspace, slot, wanted))
    }

    /// The slot's state (empty when no snapshot was applied) and its row.
    async fn slot_state(
        &self,
        workspace: &str,
        slot: &(String, String, String),
    ) -> Result<(State, Option<SlotRecord>)> {
        let stored = self.store.knowledge_slot(workspace, &slot.0, &slot.1, &slot.2).await?;
        let state = stored
            .as_ref()
            .and_then(|s| s.state.as_object())
            .map(|object| object.iter().map(|(k, v)| (k.clone(), v.clone())).collect())
            .unwrap_or_default();
        Ok((state, stored))
    }

    /// The workspace (id or key) if `actor` holds `permission` there; a workspace it may not
    /// read knowledge of is `404`, as a missing one.
    async fn knowledge_workspace(&self, actor: &Actor, reference: &str, permission: &str) -> Result<String> {
        let workspace = self.find_workspace(reference).await?;
        if !actor.can_in("knowledge.read", &workspace) {
            return Err(EngineError::not_found(&format!("workspace {reference}")).with("workspace", reference));
        }
        if !actor.can_in(permission, &workspace) {
            return Err(EngineError::forbidden(permission).with("workspaceId", workspace));
        }
        Ok(workspace)
    }
}
