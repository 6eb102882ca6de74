//! Compiled contract schemas, kept per version: a published contract's schemas never change, so
//! a validator compiled once serves every later call. Compiling runs on the blocking pool.

use skill_contract::codes::Code;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use serde_json::Value;
use skill_contract::schema::SchemaValidator;

use crate::error::{Class, EngineError, Result};

/// At most this many validators are kept; past it the cache starts over.
const CAPACITY: usize = 4096;

#[derive(Debug, Default)]
pub(crate) struct SchemaCache {
    validators: Mutex<HashMap<(String, &'static str), Arc<SchemaValidator>>>,
}

impl SchemaCache {
    /// The validator of `schema`, the `part` (`inputs`, `outputs`) of version `skill_id`.
    pub(crate) async fn get(&self, skill_id: &str, part: &'static str, schema: &Value) -> Result<Arc<SchemaValidator>> {
        let key = (skill_id.to_owned(), part);
        if let Some(found) = self.lock().get(&key) {
            return Ok(Arc::clone(found));
        }
        let schema = schema.clone();
        let compiled = tokio::task::spawn_blocking(move || SchemaValidator::new(&schema))
            .await
            .map_err(|error| internal(&error.to_string()))?
            .map_err(|error| internal(&format!("the stored {part} schema of {skill_id} does not compile: {error}")))?;
        let compiled = Arc::new(compiled);
        let mut validators = self.lock();
        if validators.len() >= CAPACITY {
            validators.clear();
        }
        validators.insert(key, Arc::clone(&compiled));
        Ok(compiled)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<(String, &'static str), Arc<SchemaValidator>>> {
        self.validators.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

fn internal(message: &str) -> EngineError {
    tracing::error!(message, "schema compilation failed");
    EngineError::new(Class::Internal, Code::InternalError, "an internal error occurred; the log has its details")
}
