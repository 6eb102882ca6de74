//! Knowledge: snapshots replace one slot `(workspace, pack, source, scope)` whole — previewed as a
//! plan with the slot's state token, applied only at the token a caller read when it gives one —
//! and entity queries by kind and attribute conditions. The plan, the token and the conditions
//! are `skill_contract::knowledge`'s, which the SDK's `FakeCore` uses too.

use serde_json::{Value, json};
use skill_api::events::{KnowledgeDocumentStored, KnowledgeSnapshotApplied};
use skill_api::{EntityPage, EntityQuery, SnapshotPlan, SnapshotRequest};
use skill_contract::codes::Code;
use skill_contract::knowledge::{self, State};
use skill_store::ErrorKind;
use skill_store::records::SlotRecord;

use crate::actor::Actor;
use crate::error::{Class, EngineError, Result};
use crate::{Engine, Origin};

/// The most entities one snapshot holds.
pub const MAX_ENTITIES: usize = 10_000;

/// The most entity rows one page of a query reads: a page whose conditions match few of them
/// answers what it found with a cursor after the last row read.
const MAX_QUERY_ROWS: i64 = 20_000;
/// The most entities a recall from an anchor reads.
pub const MAX_RECALL_ENTITIES: i64 = 20_000;

/// The most entity rows a query reads at once (a batch grows to it while conditions leave a page
/// unfilled; one key held by more slots than a batch has doubles it past this).
const MAX_QUERY_BATCH: i64 = 8_192;

fn invalid(field: &str, message: impl Into<String>) -> EngineError {
    EngineError::invalid_request(message).with("field", field)
}

impl Engine {
    /// The plan of a snapshot and the slot's state token now (`knowledge.write`).
    pub async fn preview_snapshot(&self, actor: &Actor, request: &SnapshotRequest) -> Result<SnapshotPlan> {
        let (workspace, slot, wanted) = self.snapshot_of(actor, request).await?;
        let current = self.slot_state(&workspace, &slot).await?;
        let token = knowledge::state_token(&current.0);
        Ok(knowledge::plan(&current.0, &wanted, token))
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
                    Code::SnapshotStale,
                    "the knowledge slot changed since its state was read: preview again",
                )
                .with("stateToken", token));
            }
            let new_token = knowledge::state_token(&wanted);
            let plan = knowledge::plan(&current, &wanted, new_token.clone());
            let now = self.now();
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
            let applied = KnowledgeSnapshotApplied {
                pack: slot.0.clone(),
                source: slot.1.clone(),
                scope: slot.2.clone(),
                opened: json!(plan.opened),
                closed: json!(plan.closed),
                state_token: json!(plan.state_token),
            };
            let event = self.event(format!("knowledge:{workspace}"), &applied, &Origin::of(actor, request_id));
            match self.store.put_knowledge_slot(&record, &entities, &event).await {
                Ok(()) => return Ok(plan),
                // Another apply won: decide again on what it wrote.
                Err(error) if error.kind() == ErrorKind::Stale => {}
                Err(error) => return Err(error.into()),
            }
        }
        Err(crate::error::busy())
    }

    /// One page of entities (`knowledge.read`).
    ///
    /// Reads the rows after the cursor in growing batches of whole keys until the page is full or
    /// the rows end.
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
        let written = Value::Array(query.conditions.clone().unwrap_or_default());
        let conditions: Vec<knowledge::Condition> =
            skill_contract::read_typed(&written, "where").map_err(|unread| {
                invalid(&unread.path, format!("a condition is {{attribute, op, value}}: {}", unread.reason))
                    .with("allowed", json!(knowledge::OPS))
            })?;
        let mut after = match query.cursor.as_deref() {
            None => None,
            Some(cursor) => match knowledge::split_id(cursor) {
                (kind, key) if !kind.is_empty() && !key.is_empty() => Some((kind.to_owned(), key.to_owned())),
                _ => return Err(invalid("cursor", "the cursor is not one this listing gave (nextCursor)")),
            },
        };
        // At most this many rows are read for one page: a page whose conditions match few rows
        // ends early, with a cursor to go on from.
        let mut budget = MAX_QUERY_ROWS;
        // Rows are read in batches, so a page costs about what it answers, not the workspace: twice
        // the page first, then twice as many each time the conditions left the page unfilled.
        let mut batch = (limit as i64 + 1) * 2;
        let mut items: Vec<Value> = Vec::new();
        // Each item's kind and key, beside it: the cursor of a full page is the last one's.
        let mut ids: Vec<(String, String)> = Vec::new();
        let mut scanned_to: Option<(String, String)> = None;
        'pages: loop {
            let from = after.as_ref().map(|(kind, key)| (kind.as_str(), key.as_str()));
            let rows = self.store.knowledge_entities(&workspace, Some(&query.kinds), from, batch).await?;
            budget -= rows.len() as i64;
            let full = rows.len() as i64 == batch;
            // Only whole keys: in a full batch the last key's rows may go on in the next one.
            let mut end = rows.len();
            if full {
                let last = (&rows[end - 1].kind, &rows[end - 1].key);
                while end > 0 && (&rows[end - 1].kind, &rows[end - 1].key) == last {
                    end -= 1;
                }
                if end == 0 {
                    // One key's rows fill the batch: read more at once.
                    batch *= 2;
                    continue;
                }
            }
            let mut index = 0;
            while index < end {
                // The rows of one (kind, key): the slot applied last wins.
                let mut last = index;
                while last + 1 < end
                    && (&rows[last + 1].kind, &rows[last + 1].key) == (&rows[index].kind, &rows[index].key)
                {
                    last += 1;
                }
                let row = &rows[last];
                let item = knowledge::query_item(
                    &knowledge::entity_id(&row.kind, &row.key),
                    &row.entity,
                    &row.source,
                    &row.scope,
                );
                if conditions.iter().all(|c| knowledge::holds(c, &item.attributes)) {
                    ids.push((item.kind.clone(), item.key.clone()));
                    items.push(item.to_value());
                    if items.len() > limit {
                        break 'pages;
                    }
                }
                index = last + 1;
            }
            if !full {
                break;
            }
            after = Some((rows[end - 1].kind.clone(), rows[end - 1].key.clone()));
            if budget <= 0 {
                // The page ends here, short: its cursor goes on after the last row read.
                scanned_to = after.clone();
                break;
            }
            batch = (batch * 2).min(MAX_QUERY_BATCH).min(budget.max(1));
        }
        let next_cursor = if let Some((kind, key)) = scanned_to.filter(|_| items.len() <= limit) {
            Some(knowledge::entity_id(&kind, &key))
        } else if items.len() > limit {
            items.truncate(limit);
            ids.truncate(limit);
            ids.last().map(|(kind, key)| knowledge::entity_id(kind, key))
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

/// The words of `text` a search looks for: runs of letters and digits, lower-case, at most 20.
fn words(text: &str) -> Vec<String> {
    let mut found: Vec<String> = text
        .split(|c: char| !c.is_alphanumeric())
        .filter(|word| !word.is_empty())
        .map(|word| word.chars().take(64).collect::<String>().to_lowercase())
        .collect();
    found.dedup();
    found.truncate(20);
    found
}

/// A link as stored: `kind:key`.
fn link(value: &Value) -> Option<String> {
    match value {
        Value::String(text) if text.contains(':') => Some(text.clone()),
        Value::Object(_) => {
            let (kind, key) = knowledge::kind_and_key(value);
            (!kind.is_empty() && !key.is_empty()).then(|| format!("{kind}:{key}"))
        }
        _ => None,
    }
}

fn document_item(document: &skill_store::records::DocumentRecord) -> Value {
    let excerpt: String = document.body.chars().take(280).collect();
    json!({"naturalKey": document.natural_key, "title": document.title, "type": document.kind,
           "links": document.links, "excerpt": excerpt})
}

impl Engine {
    /// Stores a document (`knowledge.write`), replacing the one with its natural key.
    pub async fn store_document(
        &self,
        actor: &Actor,
        request: &skill_api::DocumentRequest,
        request_id: Option<&str>,
    ) -> Result<skill_api::DocumentOut> {
        let workspace = self.knowledge_workspace(actor, &request.workspace_id, "knowledge.write").await?;
        if !(1..=500).contains(&request.natural_key.chars().count()) {
            return Err(invalid("naturalKey", "a natural key is 1 to 500 characters"));
        }
        if request.title.chars().count() > 1000 {
            return Err(invalid("title", "a title is at most 1,000 characters"));
        }
        let mut texts = vec![request.title.clone()];
        for (index, chunk) in request.chunks.iter().enumerate() {
            match chunk {
                Value::String(text) => texts.push(text.clone()),
                Value::Object(object) => match object.get("text") {
                    Some(Value::String(text)) => texts.push(text.clone()),
                    None => {}
                    Some(_) => return Err(invalid(&format!("chunks[{index}].text"), "a chunk's text is a string")),
                },
                _ => return Err(invalid(&format!("chunks[{index}]"), "a chunk is a string or an object with a text")),
            }
        }
        let mut links = Vec::new();
        for (index, value) in request.links.iter().flatten().enumerate() {
            let Some(stored) = link(value) else {
                return Err(invalid(&format!("links[{index}]"), "a link is \"kind:key\" or {kind, key}"));
            };
            links.push(Value::String(stored));
        }
        let now = self.now();
        let document = skill_store::records::DocumentRecord {
            workspace_id: workspace.clone(),
            natural_key: request.natural_key.clone(),
            title: request.title.clone(),
            kind: request.kind.clone().unwrap_or_else(|| "document".to_owned()),
            chunks: Value::Array(request.chunks.clone()),
            links: Value::Array(links),
            meta: request.meta.clone().map(Value::Object),
            body: texts.join("\n"),
            created_at: now,
            updated_at: now,
        };
        let stored = KnowledgeDocumentStored { natural_key: document.natural_key.clone(), kind: document.kind.clone() };
        let event = self.event(format!("knowledge:{workspace}"), &stored, &Origin::of(actor, request_id));
        self.store.put_document(&document, &event).await?;
        Ok(skill_api::DocumentOut { natural_key: document.natural_key, status: "stored".to_owned() })
    }

    /// What is relevant to an anchor entity or a text (`knowledge.read`): the anchor, the
    /// entities related to it to a depth (an entity whose attributes hold the anchor's key, or
    /// `kind:key`, is related to it), and the documents linked to it or matching the words.
    pub async fn recall(&self, actor: &Actor, request: &skill_api::RecallRequest) -> Result<skill_api::RecallAnswer> {
        let workspace = self.knowledge_workspace(actor, &request.workspace_id, "knowledge.read").await?;
        let depth = match request.depth {
            None => 1,
            Some(depth @ 0..=3) => depth,
            Some(_) => return Err(invalid("depth", "`depth` is 0 to 3")),
        };
        let limit = match request.limit {
            None => 20,
            Some(limit @ 1..=100) => limit as usize,
            Some(_) => return Err(invalid("limit", "`limit` is 1 to 100")),
        };
        let anchor = match &request.anchor {
            None => None,
            Some(value) => {
                let (kind, key) = knowledge::kind_and_key(value);
                if kind.is_empty() || key.is_empty() {
                    return Err(invalid("anchor", "an anchor is {kind, key}"));
                }
                Some((kind, key))
            }
        };
        if anchor.is_none() && request.query.as_deref().is_none_or(|q| q.trim().is_empty()) {
            return Err(invalid("anchor", "recall from an anchor {kind, key}, or a query"));
        }
        let mut sections = Vec::new();
        let mut search = request.query.clone().unwrap_or_default();
        if let Some((kind, key)) = &anchor {
            // Every entity of the workspace (of the kinds asked for), the slot applied last winning
            // a key — at most a bounded number.
            let rows = self
                .store
                .knowledge_entities(&workspace, request.kinds.as_deref(), None, MAX_RECALL_ENTITIES + 1)
                .await?;
            if rows.len() as i64 > MAX_RECALL_ENTITIES {
                return Err(EngineError::new(
                    Class::Invalid,
                    Code::RecallTooBroad,
                    format!(
                        "a recall from an anchor reads the entities it relates: this workspace has more than {MAX_RECALL_ENTITIES} of the kinds asked for; name fewer `kinds`"
                    ),
                )
                .with("field", "kinds")
                .with("max", MAX_RECALL_ENTITIES));
            }
            let mut entities: std::collections::BTreeMap<(String, String), knowledge::Item> =
                std::collections::BTreeMap::new();
            for row in rows {
                let item = knowledge::query_item(
                    &knowledge::entity_id(&row.kind, &row.key),
                    &row.entity,
                    &row.source,
                    &row.scope,
                );
                entities.insert((row.kind, row.key), item);
            }
            let found = entities.get(&(kind.clone(), key.clone()));
            if search.is_empty() {
                let title = found.map(|item| item.title.as_str()).unwrap_or_default();
                search = format!("{key} {title}");
            }
            let anchor: Vec<Value> = found.map(knowledge::Item::to_value).into_iter().collect();
            sections.push(json!({"name": "anchor", "items": anchor}));
            let mut frontier = vec![(kind.clone(), key.clone())];
            let mut seen: std::collections::BTreeSet<(String, String)> = frontier.iter().cloned().collect();
            let mut related = Vec::new();
            for hop in 1..=depth {
                let mut next = Vec::new();
                for ((other_kind, other_key), item) in &entities {
                    if seen.contains(&(other_kind.clone(), other_key.clone())) || related.len() >= limit {
                        continue;
                    }
                    if request.kinds.as_ref().is_some_and(|kinds| !kinds.contains(other_kind)) {
                        continue;
                    }
                    let mentions = |(k, key): &(String, String)| {
                        let wanted = [key.clone(), format!("{k}:{key}")];
                        let attributes = item.attributes.as_object().cloned().unwrap_or_default();
                        attributes.values().any(|value| match value {
                            Value::Array(items) => {
                                items.iter().any(|v| v.as_str().is_some_and(|s| wanted.iter().any(|w| w == s)))
                            }
                            other => other.as_str().is_some_and(|s| wanted.iter().any(|w| w == s)),
                        })
                    };
                    if frontier.iter().any(mentions) {
                        let mut with_depth = item.to_value();
                        if let Value::Object(fields) = &mut with_depth {
                            fields.insert("depth".to_owned(), json!(hop));
                        }
                        related.push(with_depth);
                        next.push((other_kind.clone(), other_key.clone()));
                    }
                }
                seen.extend(next.iter().cloned());
                frontier = next;
            }
            sections.push(json!({"name": "related", "items": related}));
        }
        let mut documents = Vec::new();
        if let Some((kind, key)) = &anchor {
            documents.extend(self.store.linked_documents(&workspace, kind, key, limit as i64).await?);
        }
        for document in self.store.search_documents(&workspace, &words(&search), limit as i64).await? {
            if !documents.iter().any(|d| d.natural_key == document.natural_key) {
                documents.push(document);
            }
        }
        documents.truncate(limit);
        sections.push(json!({"name": "documents", "items": documents.iter().map(document_item).collect::<Vec<_>>()}));
        Ok(skill_api::RecallAnswer { sections })
    }
}
