//! The looks of waiting claims on their own. Claims waiting for the same executor's calls (one
//! principal, one admission) need not each look every [`crate::invocations::LOOK_AGAIN`]: one
//! look covers them all, and the claim that finds a call this way wakes the next waiting one,
//! which looks in turn. So an idle executor with 64 waiting claims costs the database two looks a
//! second, not 128 — what a queued call's own wake-up brings is not changed.

use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use skill_store::records::Admission;

/// When the claims of each executor and admission last looked.
#[derive(Debug, Default)]
pub(crate) struct Looks {
    last: Mutex<HashMap<u64, Instant>>,
}

impl Looks {
    /// At most this many executors' looks are kept; past it the map starts over (a claim then
    /// looks once more than it needed to).
    const CAPACITY: usize = 4096;

    /// The key of the claims of principal `actor` with `admission`.
    pub(crate) fn key(actor: &str, admission: &Admission) -> u64 {
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        actor.hash(&mut hasher);
        admission.hash(&mut hasher);
        hasher.finish()
    }

    /// A claim of `key` looks now.
    pub(crate) fn looked(&self, key: u64) {
        Self::mark(&mut self.last.lock().unwrap_or_else(std::sync::PoisonError::into_inner), key);
    }

    /// Whether a claim of `key` whose own time to look came should look: no claim of `key`
    /// looked within `every`. When it should, its look is counted from now.
    pub(crate) fn due(&self, key: u64, every: Duration) -> bool {
        let mut last = self.last.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let due = last.get(&key).is_none_or(|at| at.elapsed() >= every);
        if due {
            Self::mark(&mut last, key);
        }
        due
    }

    fn mark(last: &mut HashMap<u64, Instant>, key: u64) {
        if last.len() >= Self::CAPACITY {
            last.clear();
        }
        last.insert(key, Instant::now());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_look_covers_the_claims_of_one_executor_and_admission() {
        let looks = Looks::default();
        let every = Duration::from_millis(200);
        let admission = Admission { local_entrypoints: vec!["a:b".into()], ..Admission::default() };
        let key = Looks::key("executor", &admission);
        assert!(looks.due(key, every), "nobody looked yet");
        assert!(!looks.due(key, every), "one look covers the others");
        let other = Looks::key("executor", &Admission { local_entrypoints: vec!["c:d".into()], ..admission.clone() });
        assert_ne!(key, other);
        assert!(looks.due(other, every), "another admission looks for itself");
        assert!(looks.due(Looks::key("another", &admission), every), "another executor looks for itself");
        std::thread::sleep(every);
        assert!(looks.due(key, every), "after a while, a look again");
        looks.looked(key);
        assert!(!looks.due(key, every), "a look after a wake-up counts too");
    }
}
