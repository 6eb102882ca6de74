//! Time as a dependency: the engine reads the time through a [`Clock`], so a test moves it (a
//! 24-hour wait tested in milliseconds) while everything else keeps its pace.

use std::sync::atomic::{AtomicI64, Ordering};

use chrono::{Duration, Utc};
use skill_store::records::Time;

/// Where the engine reads the time.
pub trait Clock: Send + Sync + std::fmt::Debug {
    fn now(&self) -> Time;
}

/// The system's clock.
#[derive(Debug, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> Time {
        Utc::now()
    }
}

/// The system's clock moved forward by what [`MovedClock::advance`] added: time passes as it
/// does, and a test jumps over a wait.
#[derive(Debug, Default)]
pub struct MovedClock {
    /// Milliseconds added.
    ahead: AtomicI64,
}

impl MovedClock {
    /// Moves the clock forward by `by` (a negative duration is refused: time does not go back).
    pub fn advance(&self, by: Duration) {
        self.ahead.fetch_add(by.num_milliseconds().max(0), Ordering::SeqCst);
    }

    /// How far ahead of the system's clock it is.
    pub fn ahead(&self) -> Duration {
        Duration::milliseconds(self.ahead.load(Ordering::SeqCst))
    }
}

impl Clock for MovedClock {
    fn now(&self) -> Time {
        Utc::now() + self.ahead()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_moved_clock_jumps_forward_and_never_back() {
        let clock = MovedClock::default();
        let before = clock.now();
        clock.advance(Duration::hours(24));
        assert!(clock.now() - before >= Duration::hours(24));
        clock.advance(Duration::hours(-48));
        assert!(clock.now() - before >= Duration::hours(24), "time does not go back");
        assert_eq!(clock.ahead(), Duration::hours(24));
    }
}
