//! Artifacts: immutable documents of a workspace (a task's, a run's), their content in the blob
//! store by SHA-256. Visibility follows the workspace: `tasks.read` there; and an executor reads
//! what the call it runs may see — with `forTask`, the artifacts of that task (and those its
//! fields name), as the authority of its running call of that task may read them.

use base64::Engine as _;
use serde_json::Value;
use sha2::{Digest, Sha256};
use skill_api::events::ArtifactCreated;
use skill_api::{ArtifactOut, ArtifactQuery, ArtifactRequest, Items, MAX_ARTIFACT_BYTES};
use skill_store::ErrorKind;
use skill_store::records::ArtifactRecord;

pub mod media;
mod outputs;
pub mod types;

use skill_contract::codes::Code;

use crate::actor::Actor;
use crate::catalog::view_time;
use crate::error::{Class, EngineError, Result};
use crate::{Engine, Origin};

/// The most bytes of an artifact's metadata, as JSON.
const MAX_METADATA_BYTES: usize = 64 * 1024;

/// What an artifact is, before its content is stored.
pub(crate) struct NewArtifact<'a> {
    pub(crate) author: &'a str,
    pub(crate) workspace: &'a str,
    pub(crate) task_id: Option<String>,
    pub(crate) run_id: Option<String>,
    pub(crate) kind: &'a str,
    pub(crate) name: &'a str,
    pub(crate) media_type: &'a str,
    pub(crate) metadata: Value,
    pub(crate) skill_invocation_id: Option<String>,
}

/// An artifact's content as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArtifactContent {
    pub bytes: Vec<u8>,
    pub media_type: String,
    pub sha256: String,
}

fn invalid(field: &str, message: impl Into<String>) -> EngineError {
    EngineError::invalid_request(message).with("field", field)
}

fn not_found(id: &str) -> EngineError {
    EngineError::new(Class::NotFound, Code::ArtifactNotFound, format!("no artifact {id} you may read"))
        .with("artifactId", id)
}

fn unavailable(error: &skill_store::StoreError) -> EngineError {
    tracing::warn!(%error, "the content store failed");
    EngineError::new(Class::Unavailable, Code::ContentStoreUnavailable, "the content store does not answer; retry")
}

impl Engine {
    /// Stores an artifact (`tasks.write` in its workspace).
    pub async fn create_artifact(
        &self,
        actor: &Actor,
        request: &ArtifactRequest,
        request_id: Option<&str>,
    ) -> Result<ArtifactOut> {
        let (workspace, task_id, run_id) = match (&request.task_id, &request.run_id) {
            (Some(task_id), run) => {
                let task = self.visible_task(actor, task_id, Some("tasks.write")).await?;
                if let Some(run) = run {
                    let run = self.visible_run(actor, run).await?;
                    if run.task_id != task.id {
                        return Err(invalid("runId", "runId is a run of another task"));
                    }
                }
                (task.workspace_id, Some(task.id), run.clone())
            }
            (None, Some(run)) => {
                let run = self.visible_run(actor, run).await?;
                let task = self.visible_task(actor, &run.task_id, Some("tasks.write")).await?;
                (task.workspace_id, Some(task.id), Some(run.id))
            }
            (None, None) => {
                let Some(workspace) = &request.workspace else {
                    return Err(invalid("workspace", "name the workspace, or the task the artifact belongs to"));
                };
                let workspace = self.find_workspace(workspace).await?;
                if !actor.can_in("tasks.write", &workspace) {
                    return Err(EngineError::forbidden("tasks.write").with("workspaceId", workspace));
                }
                (workspace, None, None)
            }
        };
        if !types::is_kind(&request.kind) {
            return Err(invalid("type", "a type is 1 to 200 of a-z 0-9 _ . -"));
        }
        if !(1..=500).contains(&request.name.chars().count()) {
            return Err(invalid("name", "a name is 1 to 500 characters"));
        }
        // Kept, and served, as its essence and charset: nothing else reaches a Content-Type.
        let media_type = media::normalized(&request.media_type).map_err(|why| {
            EngineError::new(
                Class::Invalid,
                Code::InvalidMediaType,
                format!("mediaType {:?} is not a media type: {why}", request.media_type),
            )
            .with("field", "mediaType")
        })?;
        let metadata = Value::Object(request.metadata.clone().unwrap_or_default());
        if serde_json::to_vec(&metadata).map_or(0, |bytes| bytes.len()) > MAX_METADATA_BYTES {
            return Err(invalid("metadata", "metadata is at most 64 KiB of JSON"));
        }
        let content = match (&request.text, &request.base64) {
            (Some(text), None) => text.as_bytes().to_vec(),
            (None, Some(encoded)) => base64::engine::general_purpose::STANDARD
                .decode(encoded)
                .map_err(|error| invalid("base64", format!("the content is not base64: {error}")))?,
            _ => return Err(invalid("text", "send the content as exactly one of text and base64")),
        };
        // An artifact of a published type fits its newest version.
        if let Some(kind) = self.newest_artifact_type(&request.kind).await?
            && let Some(misfit) = self.misfit(&kind, &media_type, content.len(), &metadata).await?
        {
            let (class, field) = match misfit.code {
                Code::MediaTypeNotAllowed => (Class::Invalid, "mediaType"),
                Code::ArtifactTooLarge => (Class::TooLarge, if request.text.is_some() { "text" } else { "base64" }),
                _ => (Class::Invalid, "metadata"),
            };
            return Err(EngineError::new(class, misfit.code, misfit.message)
                .with("field", field)
                .with("artifactType", format!("{}@{}", kind.key, kind.version)));
        }
        let record = self
            .stored_artifact(
                NewArtifact {
                    author: actor.id(),
                    workspace: &workspace,
                    task_id,
                    run_id,
                    kind: &request.kind,
                    name: &request.name,
                    media_type: &media_type,
                    metadata,
                    skill_invocation_id: None,
                },
                &content,
            )
            .await?;
        let event = self.artifact_event(&record, &Origin::of(actor, request_id));
        self.store.insert_artifact(&record, &event).await?;
        Ok(artifact_out(record))
    }

    /// The record of `new` with `content` once the content is in the blob store (`413
    /// artifact_too_large` past the limit).
    pub(crate) async fn stored_artifact(&self, new: NewArtifact<'_>, content: &[u8]) -> Result<ArtifactRecord> {
        if content.len() > MAX_ARTIFACT_BYTES {
            return Err(EngineError::new(
                Class::TooLarge,
                Code::ArtifactTooLarge,
                format!("the content is {} bytes; an artifact holds at most {MAX_ARTIFACT_BYTES}", content.len()),
            )
            .with("maxBytes", MAX_ARTIFACT_BYTES));
        }
        let sha256: String = Sha256::digest(content).iter().map(|byte| format!("{byte:02x}")).collect();
        self.blobs.put(&sha256, content).await.map_err(|error| unavailable(&error))?;
        Ok(ArtifactRecord {
            id: self.new_id(),
            workspace_id: new.workspace.to_owned(),
            task_id: new.task_id,
            run_id: new.run_id,
            kind: new.kind.to_owned(),
            name: new.name.to_owned(),
            media_type: new.media_type.to_owned(),
            size_bytes: i64::try_from(content.len()).unwrap_or(i64::MAX),
            sha256,
            metadata: new.metadata,
            author_principal_id: new.author.to_owned(),
            skill_invocation_id: new.skill_invocation_id,
            supersedes_id: None,
            created_at: self.now(),
        })
    }

    /// The `artifact.created` event of `record`.
    pub(crate) fn artifact_event(&self, record: &ArtifactRecord, origin: &Origin) -> skill_store::records::Event {
        let created = ArtifactCreated {
            workspace_id: record.workspace_id.clone(),
            task_id: record.task_id.clone(),
            run_id: record.run_id.clone(),
            kind: record.kind.clone(),
            size_bytes: record.size_bytes,
            sha256: record.sha256.clone(),
            skill_invocation_id: record.skill_invocation_id.clone(),
        };
        self.event(format!("artifact:{}", record.id), &created, origin)
    }

    /// An artifact's metadata, if `actor` may read it.
    pub async fn artifact(&self, actor: &Actor, id: &str, query: &ArtifactQuery) -> Result<ArtifactOut> {
        Ok(artifact_out(self.readable_artifact(actor, id, query.for_task.as_deref()).await?))
    }

    /// An artifact's content, if `actor` may read it.
    pub async fn artifact_content(&self, actor: &Actor, id: &str, query: &ArtifactQuery) -> Result<ArtifactContent> {
        let record = self.readable_artifact(actor, id, query.for_task.as_deref()).await?;
        let bytes = self.blobs.get(&record.sha256).await.map_err(|error| unavailable(&error))?;
        Ok(ArtifactContent { bytes, media_type: media::served(&record.media_type), sha256: record.sha256 })
    }

    /// The artifacts of a task (`tasks.read` in its workspace).
    pub async fn artifacts(&self, actor: &Actor, query: &ArtifactQuery) -> Result<Items<ArtifactOut>> {
        let Some(task) = &query.task else {
            return Err(invalid("task", "list the artifacts of a task: ?task=<id>"));
        };
        let task = self.visible_task(actor, task, None).await?;
        let items = self.store.task_artifacts(&task.id).await?.into_iter().map(artifact_out).collect();
        Ok(Items { items })
    }

    async fn readable_artifact(&self, actor: &Actor, id: &str, for_task: Option<&str>) -> Result<ArtifactRecord> {
        let record = match self.store.artifact(id).await {
            Ok(record) => record,
            Err(error) if error.kind() == ErrorKind::NotFound => return Err(not_found(id)),
            Err(error) => return Err(error.into()),
        };
        if actor.can_in("tasks.read", &record.workspace_id) {
            return Ok(record);
        }
        // An executor reads what the call it runs may: the artifacts of that call's task (and those
        // its fields name, what the task was given), with its authority's reading rights.
        if let Some(task) = for_task
            && actor.can("skills.execute")
            && self.of_task(&record, task).await?
            && let Some(authority) = self.store.running_authority(actor.id(), task).await?
        {
            let principal = self.store.principal(&authority).await?;
            let grants = self.store.grants(&authority).await?;
            if principal.disabled_at.is_none()
                && Actor::new(principal, grants).can_in("tasks.read", &record.workspace_id)
            {
                return Ok(record);
            }
        }
        Err(not_found(id))
    }
}

impl Engine {
    /// Whether `record` belongs to the task `task_id`, or is an artifact of the task's workspace
    /// that the task's custom fields name by id (the input a task was created with, such as a
    /// register to import) — never one of another workspace, whoever the call's authority.
    async fn of_task(&self, record: &ArtifactRecord, task_id: &str) -> Result<bool> {
        let task = match self.store.task(task_id).await {
            Ok(task) => task,
            Err(error) if error.kind() == ErrorKind::NotFound => return Ok(false),
            Err(error) => return Err(error.into()),
        };
        if record.workspace_id != task.workspace_id {
            return Ok(false);
        }
        if record.task_id.as_deref() == Some(task_id) {
            return Ok(true);
        }
        let named = |value: &serde_json::Value| value.as_str() == Some(record.id.as_str());
        Ok(task.custom_fields.as_object().is_some_and(|fields| {
            fields.values().any(|value| named(value) || value.as_array().is_some_and(|items| items.iter().any(named)))
        }))
    }
}

pub(crate) fn artifact_out(record: ArtifactRecord) -> ArtifactOut {
    ArtifactOut {
        id: record.id,
        workspace_id: record.workspace_id,
        task_id: record.task_id,
        run_id: record.run_id,
        kind: record.kind,
        name: record.name,
        media_type: media::served(&record.media_type),
        size_bytes: record.size_bytes,
        sha256: record.sha256,
        metadata: record.metadata,
        author_principal_id: record.author_principal_id,
        skill_invocation_id: record.skill_invocation_id,
        supersedes_id: record.supersedes_id,
        created_at: view_time(&record.created_at),
    }
}
