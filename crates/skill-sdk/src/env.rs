//! [`Env`]: the environment a skill reads its configuration, secrets and providers from.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

/// The environment a skill reads its configuration and secrets from: the process's, or a map
/// given for one call (tests). `Debug` shows names only, never values.
#[derive(Clone, Default)]
pub enum Env {
    #[default]
    Process,
    Map(Arc<BTreeMap<String, String>>),
}

impl Env {
    pub fn from_map(map: BTreeMap<String, String>) -> Self {
        Self::Map(Arc::new(map))
    }

    /// The variable `name`, as it is (an empty value is returned as empty).
    pub fn get(&self, name: &str) -> Option<String> {
        match self {
            Self::Process => std::env::var(name).ok(),
            Self::Map(map) => map.get(name).cloned(),
        }
    }
}

impl fmt::Debug for Env {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Process => f.write_str("Env::Process"),
            Self::Map(map) => f.debug_tuple("Env::Map").field(&map.keys().collect::<Vec<_>>()).finish(),
        }
    }
}
