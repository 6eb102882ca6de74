//! Artifact types: what an artifact of a type may be — its media types, its size, the schema of
//! its metadata. A published version never changes; the newest version of a key is the one an
//! artifact of that type is checked against.

use chrono::Utc;
use serde_json::Value;
use skill_api::events::ArtifactTypePublished;
use skill_api::{ArtifactTypeOut, ArtifactTypeQuery, ArtifactTypeRequest, MAX_ARTIFACT_BYTES, Page};
use skill_contract::SkillVersion;
use skill_contract::codes::Code;
use skill_contract::schema::SchemaValidator;
use skill_store::ErrorKind;
use skill_store::records::{ArtifactTypeRecord, Event};

use crate::actor::Actor;
use crate::catalog::{checked_limit, view_time};
use crate::documents::PackageDocument;
use crate::error::{Class, EngineError, Result};
use crate::{Engine, Origin};
use futures::future::BoxFuture;
use skill_store::records::WorkChange;

/// The most media types a type lists.
const MAX_MEDIA_TYPES: usize = 20;

fn invalid(field: &str, message: impl Into<String>) -> EngineError {
    EngineError::new(Class::Invalid, Code::InvalidArtifactType, message).with("field", field)
}

/// Whether `kind` is an artifact's type: 1 to 200 of `a-z 0-9 _ . -`.
pub(crate) fn is_kind(kind: &str) -> bool {
    (1..=200).contains(&kind.len())
        && kind.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || matches!(b, b'_' | b'.' | b'-'))
}

/// Why an artifact does not fit its type: a code and what to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Misfit {
    pub(crate) code: Code,
    pub(crate) message: String,
}

impl Engine {
    /// Publishes an artifact type version (`org.manage`).
    pub async fn publish_artifact_type(
        &self,
        actor: &Actor,
        request: &ArtifactTypeRequest,
        request_id: Option<&str>,
    ) -> Result<ArtifactTypeOut> {
        actor.require("org.manage")?;
        let record = prepare_artifact_type(actor, request, self.new_id())?;
        let record = self.publish_document(record, &Origin::of(actor, request_id)).await?;
        Ok(artifact_type_out(record))
    }

    /// The `artifact_type.published` event of `record`.
    pub(crate) fn artifact_type_event(&self, record: &ArtifactTypeRecord, origin: &Origin) -> Event {
        let published = ArtifactTypePublished {
            key: record.key.clone(),
            version: record.version.clone(),
            media_types: record.media_types.clone(),
            max_bytes: record.max_bytes,
        };
        self.event(format!("artifact_type:{}", record.id), &published, origin)
    }

    /// One artifact type version: an id, `key@version` or a key (its newest version). Readable
    /// with `org.read` or `tasks.read` in some workspace.
    pub async fn artifact_type(&self, actor: &Actor, reference: &str) -> Result<ArtifactTypeOut> {
        require_reader(actor)?;
        let found = match reference.split_once('@') {
            Some((key, version)) => self.store.artifact_type_version(key, version).await,
            None if uuid::Uuid::try_parse(reference).is_ok() => self.store.artifact_type(reference).await,
            None => self.store.newest_artifact_type(reference).await,
        };
        match found {
            Ok(record) => Ok(artifact_type_out(record)),
            Err(error) if error.kind() == ErrorKind::NotFound => {
                Err(EngineError::not_found(&format!("artifact type {reference}")).with("artifactType", reference))
            }
            Err(error) => Err(error.into()),
        }
    }

    /// Artifact type versions in publication order.
    pub async fn artifact_types(&self, actor: &Actor, query: &ArtifactTypeQuery) -> Result<Page<ArtifactTypeOut>> {
        require_reader(actor)?;
        let limit = checked_limit(query.limit, 50, 200)?;
        let mut found =
            self.store.artifact_types(query.key.as_deref(), query.cursor.as_deref(), i64::from(limit) + 1).await?;
        let more = found.len() > limit as usize;
        found.truncate(limit as usize);
        let next_cursor = if more { found.last().map(|t| t.id.clone()) } else { None };
        Ok(Page { items: found.into_iter().map(artifact_type_out).collect(), next_cursor })
    }

    /// The newest version of the artifact type `key`, if one is published.
    pub(crate) async fn newest_artifact_type(&self, key: &str) -> Result<Option<ArtifactTypeRecord>> {
        match self.store.newest_artifact_type(key).await {
            Ok(record) => Ok(Some(record)),
            Err(error) if error.kind() == ErrorKind::NotFound => Ok(None),
            Err(error) => Err(error.into()),
        }
    }

    /// Why an artifact of `record`'s type with this media type, size and metadata does not fit
    /// it, if it does not: `media_type_not_allowed`, `artifact_too_large` or `invalid_value`
    /// (the metadata, or a typed output's value, against the type's schema).
    pub(crate) async fn misfit(
        &self,
        record: &ArtifactTypeRecord,
        media_type: &str,
        size: usize,
        checked: &Value,
    ) -> Result<Option<Misfit>> {
        let of = format!("{}@{}", record.key, record.version);
        // A type published before media types were kept normalized is compared as it would be now.
        let allows = |allowed: &String| super::media::normalized(allowed).is_ok_and(|allowed| allowed == media_type);
        if !record.media_types.iter().any(allows) {
            return Ok(Some(Misfit {
                code: Code::MediaTypeNotAllowed,
                message: format!("{of} allows {}, not {media_type}", record.media_types.join(", ")),
            }));
        }
        if i64::try_from(size).unwrap_or(i64::MAX) > record.max_bytes {
            return Ok(Some(Misfit {
                code: Code::ArtifactTooLarge,
                message: format!("the content is {size} bytes; {of} allows at most {}", record.max_bytes),
            }));
        }
        if let Some(schema) = &record.metadata_schema {
            let validator = self.schemas.get(&record.id, "metadata", schema).await?;
            if let Some(first) = validator.errors(checked).first() {
                return Ok(Some(Misfit {
                    code: Code::InvalidArtifactMetadata,
                    message: format!("it does not match the metadata schema of {of}: {first}"),
                }));
            }
        }
        Ok(None)
    }
}

/// The record a publication of `request` writes, every field checked.
pub(crate) fn prepare_artifact_type(
    actor: &Actor,
    request: &ArtifactTypeRequest,
    id: String,
) -> Result<ArtifactTypeRecord> {
    let key = request.key.as_str();
    if !is_kind(key) || !key.starts_with(|c: char| c.is_ascii_alphanumeric()) {
        return Err(invalid(
            "key",
            format!("an artifact type key is 1 to 200 of a-z 0-9 . _ - starting with a letter or digit, not {key:?}"),
        ));
    }
    SkillVersion::new(&request.version).map_err(|error| invalid("version", error.to_string()))?;
    for (field, value) in [("displayName", &request.display_name), ("description", &request.description)] {
        if value.as_ref().is_some_and(|text| text.chars().count() > 10_000) {
            return Err(invalid(field, format!("{field} is at most 10,000 characters")));
        }
    }
    let media_types = request.media_types.clone().unwrap_or_else(|| vec!["application/json".to_owned()]);
    if media_types.is_empty() || media_types.len() > MAX_MEDIA_TYPES {
        return Err(invalid("mediaTypes", format!("mediaTypes lists 1 to {MAX_MEDIA_TYPES} media types")));
    }
    let media_types = media_types
        .iter()
        .enumerate()
        .map(|(index, media_type)| {
            super::media::normalized(media_type).map_err(|why| {
                invalid(&format!("mediaTypes[{index}]"), format!("{media_type:?} is not a media type: {why}"))
            })
        })
        .collect::<Result<Vec<_>>>()?;
    let max_bytes = request.max_bytes.unwrap_or(MAX_ARTIFACT_BYTES as u64);
    if max_bytes == 0 || max_bytes > MAX_ARTIFACT_BYTES as u64 {
        return Err(invalid("maxBytes", format!("maxBytes is 1 to {MAX_ARTIFACT_BYTES} (16 MiB)")));
    }
    if let Some(schema) = &request.metadata_schema {
        SchemaValidator::new(schema)
            .map_err(|error| invalid("metadataSchema", format!("metadataSchema is not a valid schema: {error}")))?;
    }
    Ok(ArtifactTypeRecord {
        id,
        key: key.to_owned(),
        version: request.version.clone(),
        display_name: request.display_name.clone().unwrap_or_default(),
        description: request.description.clone().unwrap_or_default(),
        media_types,
        max_bytes: i64::try_from(max_bytes).unwrap_or(i64::MAX),
        metadata_schema: request.metadata_schema.clone(),
        created_by: Some(actor.id().to_owned()),
        created_at: Utc::now(),
    })
}

/// `409 artifact_type_exists`.
pub(crate) fn artifact_type_exists(key: &str, version: &str) -> EngineError {
    EngineError::new(
        Class::Conflict,
        Code::ArtifactTypeExists,
        format!("{key}@{version} is published already, and a published version never changes: publish a new version"),
    )
    .with("artifactType", format!("{key}@{version}"))
}

fn require_reader(actor: &Actor) -> Result<()> {
    if actor.can("org.read") || actor.can_somewhere("tasks.read") {
        Ok(())
    } else {
        Err(EngineError::forbidden("tasks.read"))
    }
}

pub(crate) fn artifact_type_out(record: ArtifactTypeRecord) -> ArtifactTypeOut {
    ArtifactTypeOut {
        id: record.id,
        key: record.key,
        version: record.version,
        display_name: record.display_name,
        description: record.description,
        media_types: record.media_types,
        max_bytes: record.max_bytes,
        metadata_schema: record.metadata_schema,
        created_at: view_time(&record.created_at),
    }
}

impl PackageDocument for ArtifactTypeRecord {
    fn reference(&self) -> (&str, &str) {
        (&self.key, &self.version)
    }

    fn stored<'a>(engine: &'a Engine, key: &'a str, version: &'a str) -> BoxFuture<'a, skill_store::Result<Self>> {
        engine.store.artifact_type_version(key, version)
    }

    fn same_as(&self, stored: &Self) -> bool {
        (&stored.display_name, &stored.description, &stored.media_types, stored.max_bytes, &stored.metadata_schema)
            == (&self.display_name, &self.description, &self.media_types, self.max_bytes, &self.metadata_schema)
    }

    fn exists(&self) -> EngineError {
        artifact_type_exists(&self.key, &self.version)
    }

    fn event(&self, engine: &Engine, origin: &Origin) -> Event {
        engine.artifact_type_event(self, origin)
    }

    fn insert<'a>(&'a self, engine: &'a Engine, event: &'a Event) -> BoxFuture<'a, skill_store::Result<()>> {
        Box::pin(async move {
            engine.store.write_work(&[WorkChange::InsertArtifactType(self.clone())], std::slice::from_ref(event)).await
        })
    }
}
