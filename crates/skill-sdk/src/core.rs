//! Narrow access to the core for a skill: artifact content and the knowledge base. This is the
//! only way a skill sees memory; it cannot create or move tasks.
//!
//! A backend implements [`CoreAccess`]: [`http::HttpCore`] speaks the core's routes under
//! `CONTROL_PLANE_URL`; the testing kit's `FakeCore` keeps everything in memory.

pub mod http;

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Map, Value, json};

use crate::SkillError;
use crate::env::Env;
use crate::scope::CallScope;

/// A boxed future of a core call.
pub type CoreFuture<'a, T> = Pin<Box<dyn Future<Output = Result<T, SkillError>> + Send + 'a>>;

/// The content of an artifact.
#[derive(Clone, PartialEq, Eq)]
pub struct ArtifactContent {
    pub data: Vec<u8>,
    pub media_type: Option<String>,
    pub sha256: Option<String>,
}

impl fmt::Debug for ArtifactContent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ArtifactContent")
            .field("bytes", &self.data.len())
            .field("media_type", &self.media_type)
            .field("sha256", &self.sha256)
            .finish()
    }
}

impl ArtifactContent {
    /// The content as UTF-8 text.
    pub fn text(&self) -> Result<&str, std::str::Utf8Error> {
        std::str::from_utf8(&self.data)
    }
}

/// The knowledge routes, relative to the core's API base.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KnowledgeRoute {
    /// `POST /knowledge/snapshots:preview` — not idempotent.
    Preview,
    /// `POST /knowledge/snapshots` — idempotent.
    Apply,
    /// `POST /knowledge/documents` — idempotent.
    Document,
    /// `POST /context/recall` — not idempotent.
    Recall,
    /// `POST /knowledge/entities:query` — a read, one page.
    Query,
}

impl KnowledgeRoute {
    pub fn path(self) -> &'static str {
        use skill_api::sdk_routes::{
            CONTEXT_RECALL, KNOWLEDGE_APPLY, KNOWLEDGE_DOCUMENT, KNOWLEDGE_PREVIEW, KNOWLEDGE_QUERY,
        };
        match self {
            Self::Preview => KNOWLEDGE_PREVIEW,
            Self::Apply => KNOWLEDGE_APPLY,
            Self::Document => KNOWLEDGE_DOCUMENT,
            Self::Recall => CONTEXT_RECALL,
            Self::Query => KNOWLEDGE_QUERY,
        }
    }

    /// Whether the call carries an `Idempotency-Key` (so that a retry is safe).
    pub fn idempotent(self) -> bool {
        matches!(self, Self::Apply | Self::Document)
    }
}

/// A backend of the core's skill-facing routes.
pub trait CoreAccess: Send + Sync + fmt::Debug {
    /// `GET /artifacts/{id}/content`.
    fn read_artifact<'a>(
        &'a self,
        id: &'a str,
        for_task: Option<&'a str>,
        timeout: Duration,
    ) -> CoreFuture<'a, ArtifactContent>;
    /// One knowledge call with its JSON body.
    fn knowledge<'a>(&'a self, route: KnowledgeRoute, body: Value, timeout: Duration) -> CoreFuture<'a, Value>;
}

/// The core configured by `CONTROL_PLANE_URL` (or `CONTROL_PLANE_SERVER`) in the call's
/// environment, with `CONTROL_PLANE_TOKEN` as its bearer credential; neither address is
/// `config_missing` (retryable).
pub(crate) fn core_from_env(env: &Env) -> Result<Arc<dyn CoreAccess>, SkillError> {
    let address = ["CONTROL_PLANE_URL", "CONTROL_PLANE_SERVER"]
        .iter()
        .find_map(|name| env.get(name).filter(|v| !v.trim().is_empty()));
    let Some(address) = address else {
        return Err(SkillError::new("config_missing")
            .with_message(
                "no core address: set CONTROL_PLANE_URL (or CONTROL_PLANE_SERVER) for artifacts and knowledge",
            )
            .with_detail("config", json!("CONTROL_PLANE_URL")));
    };
    let token = env.get("CONTROL_PLANE_TOKEN").filter(|t| !t.is_empty());
    Ok(Arc::new(http::HttpCore::new(&address, token)?))
}

/// A call's time for one core request: what is left of the deadline, at most 30 seconds.
fn request_timeout(scope: &CallScope) -> Duration {
    scope.remaining().min(Duration::from_secs(30)).max(Duration::from_millis(1))
}

/// Artifact content through the core: `ctx.artifacts()?.read(id).await?`.
#[derive(Debug, Clone)]
pub struct Artifacts {
    core: Arc<dyn CoreAccess>,
    scope: CallScope,
}

impl Artifacts {
    pub(crate) fn new(core: Arc<dyn CoreAccess>, scope: CallScope) -> Self {
        Self { core, scope }
    }

    /// The content of artifact `id`; an unknown id is `artifact_not_found`.
    pub async fn read(&self, id: &str) -> Result<ArtifactContent, SkillError> {
        self.core.read_artifact(id, None, request_timeout(&self.scope)).await
    }

    /// The content of artifact `id`, read on behalf of task `task`.
    pub async fn read_for_task(&self, id: &str, task: &str) -> Result<ArtifactContent, SkillError> {
        self.core.read_artifact(id, Some(task), request_timeout(&self.scope)).await
    }
}

/// A document for [`Knowledge::document`].
#[derive(Debug, Clone, PartialEq)]
pub struct KnowledgeDocument {
    pub workspace_id: String,
    pub natural_key: String,
    pub title: String,
    pub chunks: Vec<Value>,
    /// The document type, `document` by default.
    pub kind: String,
    pub links: Vec<Value>,
    pub meta: Option<Value>,
}

impl KnowledgeDocument {
    pub fn new(workspace_id: &str, natural_key: &str, title: &str, chunks: Vec<Value>) -> Self {
        Self {
            workspace_id: workspace_id.to_owned(),
            natural_key: natural_key.to_owned(),
            title: title.to_owned(),
            chunks,
            kind: "document".to_owned(),
            links: Vec::new(),
            meta: None,
        }
    }
}

/// A query for [`Knowledge::query`].
#[derive(Debug, Clone, PartialEq)]
pub struct EntityQuery {
    pub workspace_id: String,
    pub kinds: Vec<String>,
    /// Conditions `{attribute, op, value}`; all must hold.
    pub conditions: Vec<Value>,
    pub as_of: Option<String>,
    /// Entities per page, 500 by default.
    pub limit: u32,
    /// More matches than this is `knowledge_query_too_large`, never a truncated answer.
    pub max_items: usize,
}

impl EntityQuery {
    pub fn new(workspace_id: &str, kinds: &[&str]) -> Self {
        Self {
            workspace_id: workspace_id.to_owned(),
            kinds: kinds.iter().map(|k| (*k).to_owned()).collect(),
            conditions: Vec::new(),
            as_of: None,
            limit: 500,
            max_items: 10_000,
        }
    }

    pub fn condition(mut self, attribute: &str, op: &str, value: Value) -> Self {
        self.conditions.push(json!({"attribute": attribute, "op": op, "value": value}));
        self
    }
}

/// The knowledge base through the core: `ctx.knowledge()?`.
#[derive(Debug, Clone)]
pub struct Knowledge {
    core: Arc<dyn CoreAccess>,
    scope: CallScope,
}

/// `{...snapshot, extra...}`: the snapshot's fields followed by the call's.
fn merged(snapshot: Value, extra: &[(&str, Value)]) -> Result<Value, SkillError> {
    let Value::Object(mut body) = snapshot else {
        return Err(SkillError::new("invalid_knowledge_snapshot").with_message("a knowledge snapshot is a JSON object"));
    };
    for (key, value) in extra {
        body.insert((*key).to_owned(), value.clone());
    }
    Ok(Value::Object(body))
}

/// The state token of a `snapshot_stale` failure.
pub fn stale_state_token(error: &SkillError) -> Option<&str> {
    (error.code() == "snapshot_stale").then(|| error.details()?.get("stateToken")?.as_str()).flatten()
}

impl Knowledge {
    pub(crate) fn new(core: Arc<dyn CoreAccess>, scope: CallScope) -> Self {
        Self { core, scope }
    }

    async fn call(&self, route: KnowledgeRoute, body: Value) -> Result<Value, SkillError> {
        self.core.knowledge(route, body, request_timeout(&self.scope)).await
    }

    /// What applying `snapshot` would change, with the current `stateToken`.
    pub async fn preview(&self, snapshot: Value, workspace_id: &str) -> Result<Value, SkillError> {
        self.call(KnowledgeRoute::Preview, merged(snapshot, &[("workspaceId", json!(workspace_id))])?).await
    }

    /// Applies `snapshot`; with `expected_state`, only if the state is still that one, else
    /// `snapshot_stale` (not retryable) carrying the current token ([`stale_state_token`]).
    pub async fn apply(
        &self,
        snapshot: Value,
        workspace_id: &str,
        expected_state: Option<&str>,
    ) -> Result<Value, SkillError> {
        let mut extra = vec![("workspaceId", json!(workspace_id))];
        if let Some(state) = expected_state {
            extra.push(("expectedState", json!(state)));
        }
        self.call(KnowledgeRoute::Apply, merged(snapshot, &extra)?).await
    }

    /// Stores a document.
    pub async fn document(&self, document: KnowledgeDocument) -> Result<Value, SkillError> {
        let mut body = Map::new();
        body.insert("workspaceId".into(), json!(document.workspace_id));
        body.insert("naturalKey".into(), json!(document.natural_key));
        body.insert("title".into(), json!(document.title));
        body.insert("type".into(), json!(document.kind));
        body.insert("chunks".into(), json!(document.chunks));
        body.insert("links".into(), json!(document.links));
        if let Some(meta) = document.meta {
            body.insert("meta".into(), meta);
        }
        self.call(KnowledgeRoute::Document, Value::Object(body)).await
    }

    /// Recalls context; the query's fields are sent as given (camelCase: anchor, kinds, …).
    pub async fn recall(&self, query: Value) -> Result<Value, SkillError> {
        self.call(KnowledgeRoute::Recall, query).await
    }

    /// Every entity that matches, page after page; more than `max_items` is
    /// `knowledge_query_too_large`.
    pub async fn query(&self, query: EntityQuery) -> Result<Vec<Value>, SkillError> {
        let mut items = Vec::new();
        let mut cursor: Option<String> = None;
        loop {
            let mut body = Map::new();
            body.insert("workspaceId".into(), json!(query.workspace_id));
            body.insert("kinds".into(), json!(query.kinds));
            body.insert("limit".into(), json!(query.limit));
            if !query.conditions.is_empty() {
                body.insert("where".into(), json!(query.conditions));
            }
            if let Some(as_of) = &query.as_of {
                body.insert("asOf".into(), json!(as_of));
            }
            if let Some(cursor) = &cursor {
                body.insert("cursor".into(), json!(cursor));
            }
            let page = self.call(KnowledgeRoute::Query, Value::Object(body)).await?;
            if let Some(found) = page.get("items").and_then(Value::as_array) {
                items.extend(found.iter().cloned());
            }
            if items.len() > query.max_items {
                return Err(SkillError::new("knowledge_query_too_large")
                    .with_message(format!(
                        "the query matches more than {} entities: narrow it with kinds or conditions",
                        query.max_items
                    ))
                    .with_detail("maxItems", json!(query.max_items)));
            }
            cursor = page.get("nextCursor").and_then(Value::as_str).filter(|c| !c.is_empty()).map(str::to_owned);
            if cursor.is_none() {
                return Ok(items);
            }
        }
    }
}
