//! Facts: what happened in the world, recorded once per workspace, kind and key (`facts.write`),
//! read with what each rule made of them (`facts.read`). The same fact sent again is the same
//! fact; other data under its key is `409 fact_conflict`. A fact produced by work a rule made
//! carries its causation depth, which the evaluation stops at (`rule_loop_suspected`).

use chrono::{DateTime, Utc};
use serde_json::Value;
use skill_api::events::FactRecorded;
use skill_api::four_eyes::{self, InitiatorRole};
use skill_api::{FactOut, FactQuery, FactRequest, MAX_FACT_BYTES, Page, RuleEvaluationOut};
use skill_contract::codes::Code;
use skill_store::ErrorKind;
use skill_store::records::{FactRecord, RuleEvaluationRecord};

use crate::actor::Actor;
use crate::catalog::{checked_limit, view_time};
use crate::error::{Class, EngineError, Result};
use crate::{Engine, Origin};

fn invalid(field: &str, message: impl Into<String>) -> EngineError {
    EngineError::new(Class::Invalid, Code::InvalidFact, message).with("field", field)
}

/// Whether `text` is 1 to `max` characters, none of them a control character.
fn plain(text: &str, max: usize) -> bool {
    (1..=max).contains(&text.chars().count()) && !text.chars().any(char::is_control)
}

impl Engine {
    /// Records a fact: `(fact, true)` the first time, `(the first fact, false)` when the same
    /// workspace, kind, key and data were recorded before.
    pub async fn record_fact(
        &self,
        actor: &Actor,
        request: &FactRequest,
        request_id: Option<&str>,
    ) -> Result<(FactOut, bool)> {
        let workspace = self.find_workspace(&request.workspace).await?;
        if !actor.can_in("facts.write", &workspace) {
            return Err(EngineError::forbidden("facts.write").with("workspaceId", workspace));
        }
        if !skill_contract::rule::is_fact_kind(&request.kind) {
            return Err(invalid(
                "kind",
                format!(
                    "{:?} is not a fact kind: 1 to 128 of a-z 0-9 . _ - starting with a letter or digit (e.g. claim.received)",
                    request.kind
                ),
            ));
        }
        if !plain(&request.key, 200) {
            return Err(invalid("key", "a fact's key is 1 to 200 characters, none of them a control character"));
        }
        let size = serde_json::to_vec(&request.data).map_or(usize::MAX, |bytes| bytes.len());
        if size > MAX_FACT_BYTES {
            return Err(EngineError::new(
                Class::TooLarge,
                Code::FactTooLarge,
                format!("a fact's data is at most {MAX_FACT_BYTES} bytes as JSON; this one has {size}"),
            )
            .with("field", "data")
            .with("limit", MAX_FACT_BYTES));
        }
        let now = self.now();
        let occurred_at = match &request.occurred_at {
            Some(text) => DateTime::parse_from_rfc3339(text).map(|at| at.with_timezone(&Utc)).map_err(|_| {
                invalid("occurredAt", format!("{text:?} is not an RFC 3339 time (2026-12-03T10:00:00Z)"))
            })?,
            None => now,
        };
        if request.source.as_deref().is_some_and(|source| !plain(source, 200)) {
            return Err(invalid("source", "a fact's source is 1 to 200 characters, none of them a control character"));
        }
        let (depth, behind) = match &request.caused_by_task {
            Some(task_id) => self.causation_depth(actor, task_id, &workspace).await?,
            None => (0, Vec::new()),
        };
        let id = self.new_id();
        // Its sender, and whoever set in motion the task whose work produced it.
        let sender: Vec<_> = actor.initiators_of(InitiatorRole::Sent, &format!("fact:{id}"));
        let initiators = four_eyes::carried(&behind, &format!("fact:{id}"), &sender);
        let fact = FactRecord {
            id,
            workspace_id: workspace,
            kind: request.kind.clone(),
            key: request.key.clone(),
            data: request.data.clone(),
            occurred_at,
            source: request.source.clone(),
            depth,
            caused_by_task: request.caused_by_task.clone(),
            recorded_by: actor.id().to_owned(),
            created_at: now,
            evaluated_at: None,
            initiators,
        };
        // A fact sent again is the common case of no one: its insert's conflict says so.
        let recorded = FactRecorded {
            workspace_id: fact.workspace_id.clone(),
            kind: fact.kind.clone(),
            key: fact.key.clone(),
            depth: u32::try_from(fact.depth).unwrap_or(0),
            source: fact.source.clone(),
            caused_by_task: fact.caused_by_task.clone(),
            initiators: fact.initiators.clone(),
        };
        let event = self.event(format!("fact:{}", fact.id), &recorded, &Origin::of(actor, request_id));
        match self.store.insert_fact(&fact, &event).await {
            Ok(()) => {
                self.moments.fact_recorded();
                Ok((fact_out(fact, Vec::new()), true))
            }
            // Sent twice at once: the other one was first.
            Err(error) if error.kind() == ErrorKind::Conflict => {
                let first = self.store.fact_by_key(&fact.workspace_id, &fact.kind, &fact.key).await?;
                let first = first.ok_or_else(|| EngineError::from(error))?;
                same_fact(first, &fact).map(|first| (fact_out(first, Vec::new()), false))
            }
            Err(error) => Err(error.into()),
        }
    }

    /// The causation depth of a fact that `task_id`'s work produced — the depth of the fact a rule
    /// made the task of, plus one (0 for a task no rule made) — and the task's initiators.
    async fn causation_depth(
        &self,
        actor: &Actor,
        task_id: &str,
        workspace: &str,
    ) -> Result<(i32, Vec<skill_api::Initiator>)> {
        let task =
            self.visible_task(actor, task_id, None).await.map_err(|error| error.with("field", "causedByTask"))?;
        if task.workspace_id != workspace {
            return Err(invalid("causedByTask", "the task is in another workspace than the fact"));
        }
        let depth = match self.store.task_origin(&task.id).await? {
            Some(origin) => self.store.fact(&origin.fact_id).await?.depth + 1,
            None => 0,
        };
        Ok((depth, task.initiators))
    }

    /// A workspace's facts, newest first (`facts.read` there).
    pub async fn facts(&self, actor: &Actor, query: &FactQuery) -> Result<Page<FactOut>> {
        let limit = checked_limit(query.limit, 50, 200)?;
        let workspace = self.find_workspace(&query.workspace).await?;
        if !actor.can_in("facts.read", &workspace) {
            return Err(EngineError::forbidden("facts.read").with("workspaceId", workspace));
        }
        let before = match &query.cursor {
            Some(cursor) => {
                let fact =
                    self.store.fact(cursor).await.ok().filter(|fact| fact.workspace_id == workspace).ok_or_else(
                        || {
                            EngineError::invalid_request("the cursor is not one this listing gave")
                                .with("field", "cursor")
                        },
                    )?;
                Some((fact.created_at, fact.id))
            }
            None => None,
        };
        let mut found = self.store.facts(&workspace, query.kind.as_deref(), before, i64::from(limit) + 1).await?;
        let more = found.len() > limit as usize;
        found.truncate(limit as usize);
        let next_cursor = if more { found.last().map(|fact| fact.id.clone()) } else { None };
        Ok(Page { items: found.into_iter().map(|fact| fact_out(fact, Vec::new())).collect(), next_cursor })
    }

    /// The workspaces whose facts `actor` reads: `(key, id)`, by key.
    pub async fn fact_workspaces(&self, actor: &Actor) -> Result<Vec<(String, String)>> {
        let readable = actor.workspaces_with("facts.read");
        let mut found: Vec<(String, String)> = self
            .store
            .workspaces()
            .await?
            .into_iter()
            .filter(|workspace| readable.as_ref().is_none_or(|ids| ids.contains(&workspace.id)))
            .map(|workspace| (workspace.key, workspace.id))
            .collect();
        found.sort();
        Ok(found)
    }

    /// Why a task exists, when a rule made it: the fact (its data only for who reads facts in
    /// the workspace) and the evaluation (`tasks.read`).
    pub async fn task_origin(&self, actor: &Actor, task_id: &str) -> Result<Option<(FactOut, RuleEvaluationOut)>> {
        let task = self.visible_task(actor, task_id, None).await?;
        let Some(origin) = self.store.task_origin(&task.id).await? else { return Ok(None) };
        let mut fact = self.store.fact(&origin.fact_id).await?;
        if !actor.can_in("facts.read", &fact.workspace_id) {
            fact.data = Value::Null;
        }
        let evaluation = self.store.evaluation(&origin.evaluation_id).await?;
        let rule = self.store.rule(&evaluation.rule_id).await?;
        let evaluation = evaluation_out(evaluation, &format!("{}@{}", rule.key, rule.version));
        Ok(Some((fact_out(fact, Vec::new()), evaluation)))
    }

    /// One fact with each rule's evaluation of it (`facts.read` in its workspace).
    pub async fn fact(&self, actor: &Actor, id: &str) -> Result<FactOut> {
        let fact = match self.store.fact(id).await {
            Ok(fact) if actor.can_in("facts.read", &fact.workspace_id) => fact,
            Ok(_) => return Err(EngineError::not_found(&format!("fact {id}")).with("factId", id)),
            Err(error) if error.kind() == ErrorKind::NotFound => {
                return Err(EngineError::not_found(&format!("fact {id}")).with("factId", id));
            }
            Err(error) => return Err(error.into()),
        };
        let mut evaluations = Vec::new();
        for evaluation in self.store.evaluations_of_fact(&fact.id).await? {
            let rule = self.store.rule(&evaluation.rule_id).await?;
            evaluations.push(evaluation_out(evaluation, &format!("{}@{}", rule.key, rule.version)));
        }
        Ok(fact_out(fact, evaluations))
    }
}

/// `first` when `fact` carries the same data, else `409 fact_conflict`.
fn same_fact(first: FactRecord, fact: &FactRecord) -> Result<FactRecord> {
    if first.data == fact.data {
        return Ok(first);
    }
    Err(EngineError::new(
        Class::Conflict,
        Code::FactConflict,
        format!(
            "a fact {} {:?} with other data was recorded before: a fact never changes; send what changed as a new fact under its own key",
            fact.kind, fact.key
        ),
    )
    .with("factId", first.id.as_str()))
}

pub(crate) fn fact_out(fact: FactRecord, evaluations: Vec<RuleEvaluationOut>) -> FactOut {
    FactOut {
        id: fact.id,
        workspace_id: fact.workspace_id,
        kind: fact.kind,
        key: fact.key,
        data: fact.data,
        occurred_at: view_time(&fact.occurred_at),
        source: fact.source,
        depth: u32::try_from(fact.depth).unwrap_or(0),
        caused_by_task: fact.caused_by_task,
        recorded_by: fact.recorded_by,
        initiators: fact.initiators,
        created_at: view_time(&fact.created_at),
        evaluated_at: fact.evaluated_at.as_ref().map(view_time),
        evaluations,
    }
}

pub(crate) fn evaluation_out(evaluation: RuleEvaluationRecord, rule: &str) -> RuleEvaluationOut {
    RuleEvaluationOut {
        id: evaluation.id,
        fact_id: evaluation.fact_id,
        rule_id: evaluation.rule_id,
        rule: rule.to_owned(),
        status: evaluation.status,
        invocation_id: evaluation.invocation_id,
        task_ids: evaluation.task_ids,
        instance_ids: evaluation.instance_ids,
        artifact_id: evaluation.artifact_id,
        error: evaluation.error,
        created_at: view_time(&evaluation.created_at),
        updated_at: view_time(&evaluation.updated_at),
        ended_at: evaluation.ended_at.as_ref().map(view_time),
    }
}
