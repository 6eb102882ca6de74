//! What a package publishes once and never changes — task types, artifact types, rules and
//! processes — through one step of the plan: each prepared document is published unless the
//! catalog has its `key@version` already, the same document (left alone) or another one
//! (`409 <kind>_exists`, naming the item). A new kind of document costs one `impl`.

use futures::future::BoxFuture;
use skill_store::ErrorKind;
use skill_store::records::{ArtifactTypeRecord, Event, ProcessRecord, RuleRecord, TaskTypeRecord, WorkChange};

use crate::error::{Class, EngineError, Result};
use crate::{Engine, Origin};

/// A versioned document a package publishes.
pub(crate) trait PackageDocument: Sized + Send + Sync {
    /// Its `key@version`.
    fn reference(&self) -> (&str, &str);
    /// The stored version of the same `key@version`.
    fn stored<'a>(engine: &'a Engine, key: &'a str, version: &'a str) -> BoxFuture<'a, skill_store::Result<Self>>;
    /// Whether `stored` is this very document.
    fn same_as(&self, stored: &Self) -> bool;
    /// `409` for a `key@version` published with another document.
    fn exists(&self) -> EngineError;
    /// Its publication event.
    fn event(&self, engine: &Engine, origin: &Origin) -> Event;
    /// Writes it with its event (`ErrorKind::Conflict`: its `key@version` is there already).
    fn insert<'a>(&'a self, engine: &'a Engine, event: &'a Event) -> BoxFuture<'a, skill_store::Result<()>>;
    /// `409` for publishing, alone, a `key@version` that is there already.
    fn published_already(&self) -> EngineError {
        self.exists()
    }
}

impl Engine {
    /// Publishes `record` alone (outside a package), with its event.
    pub(crate) async fn publish_document<D: PackageDocument>(&self, record: D, origin: &Origin) -> Result<D> {
        let event = record.event(self, origin);
        match record.insert(self, &event).await {
            Ok(()) => Ok(record),
            Err(error) if error.kind() == ErrorKind::Conflict => Err(record.published_already()),
            Err(error) => Err(error.into()),
        }
    }

    /// `record` with its event when it is new; `None` when the catalog has it as it is; a
    /// refusal naming `item` when the catalog has its `key@version` otherwise.
    pub(crate) async fn unpublished<D: PackageDocument>(
        &self,
        record: D,
        item: &str,
        origin: &Origin,
    ) -> Result<Option<(D, Event)>> {
        let (key, version) = record.reference();
        match D::stored(self, key, version).await {
            Ok(stored) if record.same_as(&stored) => Ok(None),
            Ok(_) => Err(record.exists().with("item", item)),
            Err(error) if error.kind() == ErrorKind::NotFound => {
                let event = record.event(self, origin);
                Ok(Some((record, event)))
            }
            Err(error) => Err(error.into()),
        }
    }
}

/// `409 <kind>_exists` for a published rule or process: published documents never change.
fn published_otherwise(code: &'static str, kind: &str, key: &str, version: &str) -> EngineError {
    EngineError::new(
        Class::Conflict,
        code,
        format!(
            "{key}@{version} is published with another document: a published {kind} never changes; give this one a new version"
        ),
    )
}

impl PackageDocument for TaskTypeRecord {
    fn reference(&self) -> (&str, &str) {
        (&self.key, &self.version)
    }

    fn stored<'a>(engine: &'a Engine, key: &'a str, version: &'a str) -> BoxFuture<'a, skill_store::Result<Self>> {
        engine.store.task_type_version(key, version)
    }

    fn same_as(&self, stored: &Self) -> bool {
        (&stored.spec, &stored.display_name, &stored.description) == (&self.spec, &self.display_name, &self.description)
    }

    fn exists(&self) -> EngineError {
        crate::work::type_exists(&self.key, &self.version)
    }

    fn event(&self, engine: &Engine, origin: &Origin) -> Event {
        engine.task_type_event(self, origin)
    }

    fn insert<'a>(&'a self, engine: &'a Engine, event: &'a Event) -> BoxFuture<'a, skill_store::Result<()>> {
        Box::pin(async move {
            engine.store.write_work(&[WorkChange::InsertTaskType(self.clone())], std::slice::from_ref(event)).await
        })
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
        crate::artifacts::types::artifact_type_exists(&self.key, &self.version)
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

impl PackageDocument for RuleRecord {
    fn reference(&self) -> (&str, &str) {
        (&self.key, &self.version)
    }

    fn stored<'a>(engine: &'a Engine, key: &'a str, version: &'a str) -> BoxFuture<'a, skill_store::Result<Self>> {
        engine.store.rule_version(key, version)
    }

    fn same_as(&self, stored: &Self) -> bool {
        stored.spec == self.spec
    }

    fn exists(&self) -> EngineError {
        published_otherwise("rule_exists", "rule", &self.key, &self.version)
    }

    fn event(&self, engine: &Engine, origin: &Origin) -> Event {
        engine.rule_event(self, origin)
    }

    fn insert<'a>(&'a self, engine: &'a Engine, event: &'a Event) -> BoxFuture<'a, skill_store::Result<()>> {
        engine.store.insert_rule(self, event)
    }

    fn published_already(&self) -> EngineError {
        crate::rules::rule_exists(&self.key, &self.version)
    }
}

impl PackageDocument for ProcessRecord {
    fn reference(&self) -> (&str, &str) {
        (&self.key, &self.version)
    }

    fn stored<'a>(engine: &'a Engine, key: &'a str, version: &'a str) -> BoxFuture<'a, skill_store::Result<Self>> {
        engine.store.process_version(key, version)
    }

    fn same_as(&self, stored: &Self) -> bool {
        stored.spec == self.spec
    }

    fn exists(&self) -> EngineError {
        published_otherwise("process_exists", "process", &self.key, &self.version)
    }

    fn event(&self, engine: &Engine, origin: &Origin) -> Event {
        engine.process_event(self, origin)
    }

    fn insert<'a>(&'a self, engine: &'a Engine, event: &'a Event) -> BoxFuture<'a, skill_store::Result<()>> {
        engine.store.insert_process(self, event)
    }

    fn published_already(&self) -> EngineError {
        let reference = format!("{}@{}", self.key, self.version);
        EngineError::new(
            Class::Conflict,
            "process_exists",
            format!("{reference} is published already: a published process never changes; publish another version"),
        )
        .with("process", reference)
    }
}
