//! What a PostgreSQL core keeps of the reads by key every request makes (a token's credential,
//! a version, a skill's package settings), so a call's life does not read them again and again.
//!
//! Kept only while it can be told of every change: the core's listening connection
//! ([`crate::wakeups::Wakeups`]) hears the notification the database's own triggers send when
//! any of the tables behind these reads changes — whoever wrote it, a replica or a person at a
//! `psql` prompt — and empties the cache; a write through this core empties it before it
//! answers. Without a listening connection nothing is kept (fail closed), and should the
//! connection die without a word, no entry outlives [`KeyCache::TTL`]. Only what was found is
//! kept: a guessed token is read every time and fills nothing.

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use crate::records::{Credential, PackageSettings, SkillEntry};

/// A skill's package settings and the package's version, or none.
pub(crate) type Settings = Option<(PackageSettings, String)>;

/// One kind of read's entries.
#[derive(Debug)]
struct Entries<K, V> {
    map: Mutex<HashMap<K, (V, Instant)>>,
}

impl<K: Eq + Hash, V: Clone> Entries<K, V> {
    fn new() -> Self {
        Self { map: Mutex::new(HashMap::new()) }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<K, (V, Instant)>> {
        self.map.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn get<Q>(&self, key: &Q) -> Option<V>
    where
        K: std::borrow::Borrow<Q>,
        Q: Eq + Hash + ?Sized,
    {
        let map = self.lock();
        let (value, at) = map.get(key)?;
        (at.elapsed() < KeyCache::TTL).then(|| value.clone())
    }

    /// Keeps `value` when `keeps` says so, judged under the lock: a change forgets after it
    /// moved the generation on, so what it would have forgotten is never put after it.
    fn put(&self, key: K, value: V, keeps: impl FnOnce() -> bool) {
        let mut map = self.lock();
        if !keeps() {
            return;
        }
        if map.len() >= KeyCache::CAPACITY {
            map.clear();
        }
        map.insert(key, (value, Instant::now()));
    }

    fn clear(&self) {
        self.lock().clear();
    }
}

/// The cache of one store (shared by its clones).
#[derive(Debug)]
pub(crate) struct KeyCache {
    /// Listening connections open now: nothing is kept while there is none.
    listening: AtomicUsize,
    /// Moves on at every change: a read that began before a change keeps nothing.
    generation: AtomicU64,
    credentials: Entries<String, Credential>,
    skills: Entries<String, SkillEntry>,
    versions: Entries<(String, String), SkillEntry>,
    settings: Entries<String, Settings>,
}

impl KeyCache {
    /// The longest an entry is used, should a listening connection die unnoticed.
    pub(crate) const TTL: Duration = Duration::from_secs(2);
    /// Entries kept of each kind at most; past it that kind starts over.
    const CAPACITY: usize = 10_000;

    pub(crate) fn new() -> Self {
        Self {
            listening: AtomicUsize::new(0),
            generation: AtomicU64::new(0),
            credentials: Entries::new(),
            skills: Entries::new(),
            versions: Entries::new(),
            settings: Entries::new(),
        }
    }

    fn live(&self) -> bool {
        self.listening.load(Ordering::SeqCst) > 0
    }

    /// The generation a read starts in: what it found is kept only if nothing changed meanwhile.
    pub(crate) fn generation(&self) -> u64 {
        self.generation.load(Ordering::SeqCst)
    }

    /// Something behind the reads changed: everything kept is forgotten.
    pub(crate) fn changed(&self) {
        self.generation.fetch_add(1, Ordering::SeqCst);
        self.credentials.clear();
        self.skills.clear();
        self.versions.clear();
        self.settings.clear();
    }

    /// A listening connection opened: from now on changes are heard.
    pub(crate) fn listening(&self) {
        self.changed();
        self.listening.fetch_add(1, Ordering::SeqCst);
    }

    /// A listening connection closed or failed: unless another listens, nothing more is kept.
    pub(crate) fn deaf(&self) {
        self.listening.fetch_sub(1, Ordering::SeqCst);
        self.changed();
    }

    /// Whether what a read begun in `generation` found may be kept.
    fn keeps(&self, generation: u64) -> bool {
        self.live() && self.generation() == generation
    }

    pub(crate) fn credential(&self, hash: &str) -> Option<Credential> {
        self.live().then(|| self.credentials.get(hash)).flatten()
    }

    pub(crate) fn keep_credential(&self, generation: u64, hash: &str, credential: &Credential) {
        self.credentials.put(hash.to_owned(), credential.clone(), || self.keeps(generation));
    }

    pub(crate) fn skill(&self, id: &str) -> Option<SkillEntry> {
        self.live().then(|| self.skills.get(id)).flatten()
    }

    pub(crate) fn version(&self, name: &str, version: &str) -> Option<SkillEntry> {
        self.live().then(|| self.versions.get(&(name.to_owned(), version.to_owned()))).flatten()
    }

    /// Keeps a version found by id or by name and version, under both.
    pub(crate) fn keep_skill(&self, generation: u64, entry: &SkillEntry) {
        self.skills.put(entry.skill.id.clone(), entry.clone(), || self.keeps(generation));
        let version = (entry.skill.name.clone(), entry.skill.version.clone());
        self.versions.put(version, entry.clone(), || self.keeps(generation));
    }

    pub(crate) fn settings(&self, name: &str) -> Option<Settings> {
        self.live().then(|| self.settings.get(name)).flatten()
    }

    pub(crate) fn keep_settings(&self, generation: u64, name: &str, settings: &Settings) {
        self.settings.put(name.to_owned(), settings.clone(), || self.keeps(generation));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::records::{AccessToken, Principal};

    fn credential() -> Credential {
        let now = chrono::Utc::now();
        Credential {
            token: AccessToken {
                id: "t".into(),
                principal_id: "p".into(),
                token_hash: "h".into(),
                label: "l".into(),
                created_at: now,
                expires_at: None,
                revoked_at: None,
                operated_by: None,
                issued_by: None,
            },
            principal: Principal {
                id: "p".into(),
                kind: skill_api::PrincipalKind::Person,
                name: "p".into(),
                display_name: "p".into(),
                created_at: now,
                disabled_at: None,
            },
            grants: Vec::new(),
            allowance: None,
            operator_disabled: false,
            issuer_disabled: false,
        }
    }

    #[test]
    fn nothing_is_kept_without_a_listening_connection() {
        let cache = KeyCache::new();
        let credential = credential();
        cache.keep_credential(cache.generation(), "h", &credential);
        assert_eq!(cache.credential("h"), None);
        cache.listening();
        cache.keep_credential(cache.generation(), "h", &credential);
        assert_eq!(cache.credential("h"), Some(credential));
        cache.deaf();
        assert_eq!(cache.credential("h"), None, "what was kept is forgotten when the connection goes");
    }

    #[test]
    fn a_change_forgets_everything_and_a_read_begun_before_it_keeps_nothing() {
        let cache = KeyCache::new();
        cache.listening();
        let before = cache.generation();
        cache.keep_credential(before, "h", &credential());
        cache.changed();
        assert_eq!(cache.credential("h"), None);
        cache.keep_credential(before, "h", &credential());
        assert_eq!(cache.credential("h"), None, "a read begun before the change keeps nothing");
    }
}
