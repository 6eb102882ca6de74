//! The versioned documents published once and never changed — task types, artifact types, rules
//! and processes — through one path: alone (`publish_document`: its event, its insert, `409`
//! when its `key@version` is there), or in a package's plan (`unpublished`: left alone when the
//! catalog has the same document, `409 <kind>_exists` naming the item when it has another). Each
//! kind's `impl PackageDocument` sits in its own module; a new kind costs one `impl`.

use futures::future::BoxFuture;
use skill_contract::codes::Code;
use skill_store::ErrorKind;
use skill_store::records::Event;

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
pub(crate) fn published_otherwise(code: Code, kind: &str, key: &str, version: &str) -> EngineError {
    EngineError::new(
        Class::Conflict,
        code,
        format!(
            "{key}@{version} is published with another document: a published {kind} never changes; give this one a new version"
        ),
    )
}
