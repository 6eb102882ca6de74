//! How many long waits each principal has open at once — a call held until it ends, an agent's
//! request held for a client without tasks, a `tasks/result` — so that one token cannot hold
//! every connection of the core. Beyond [`MAX_WAITS`] a call is refused before anything is made
//! (`too_many_waits`, retryable), a request is answered pending at once, and `tasks/result` is
//! refused. This is a guard of this process's resources, not a record of anything: a restart
//! forgets it with the connections it counted.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// The most long waits one principal has open on one core.
pub(crate) const MAX_WAITS: usize = 16;

#[derive(Debug, Default)]
pub(crate) struct Waits {
    open: Mutex<HashMap<String, usize>>,
}

/// One open wait; dropping it ends it.
#[derive(Debug)]
pub(crate) struct Wait {
    waits: Arc<Waits>,
    principal: String,
}

impl Waits {
    /// A wait for `principal`, when it has fewer than [`MAX_WAITS`] open.
    pub(crate) fn enter(self: &Arc<Self>, principal: &str) -> Option<Wait> {
        let mut open = self.open.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let count = open.entry(principal.to_owned()).or_default();
        if *count >= MAX_WAITS {
            return None;
        }
        *count += 1;
        Some(Wait { waits: Arc::clone(self), principal: principal.to_owned() })
    }
}

impl Drop for Wait {
    fn drop(&mut self) {
        let mut open = self.waits.open.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(count) = open.get_mut(&self.principal) {
            *count = count.saturating_sub(1);
            if *count == 0 {
                open.remove(&self.principal);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_principal_holds_at_most_its_share_and_gets_it_back() {
        let waits = Arc::new(Waits::default());
        let held: Vec<Wait> = (0..MAX_WAITS).map(|_| waits.enter("agent").expect("a wait")).collect();
        assert!(waits.enter("agent").is_none(), "one more is refused");
        assert!(waits.enter("other").is_some(), "another principal has its own");
        drop(held);
        assert!(waits.enter("agent").is_some(), "ended waits are given back");
        assert!(waits.open.lock().expect("open").get("other").is_none(), "nothing left behind");
    }
}
