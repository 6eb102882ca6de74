//! Wake-ups between cores sharing a PostgreSQL database: a call queued through one core wakes
//! the claims waiting on every other at once (`LISTEN`/`NOTIFY` on [`CHANNEL`]), instead of when
//! they next look on their own. The notification is its own statement, sent after the call's
//! insert committed and never in its transaction: a transaction that notifies holds the server's
//! one notification lock through its commit, which would make inserts commit one at a time. Its
//! commit does not wait for the disk (a lost wake-up costs only a look on one's own). A hint
//! only: the claims still look on their own now and then, and a listener that lost its
//! connection says so ([`Wake::Lost`]) so that its core looks at once.
//!
//! The same connection hears [`KEYS`]: the database's triggers tell of every change behind the
//! reads by key the store keeps (`key_cache.rs`), which are kept only while a connection listens.

use std::sync::Arc;

use sqlx::postgres::PgListener;

use crate::key_cache::KeyCache;

use crate::error::Result;

/// The channel the wake-ups go on.
pub const CHANNEL: &str = "skill_wake";
/// The channel the database tells of changes behind the reads by key on.
pub const KEYS: &str = "skill_keys";
/// The payload of a wake-up for a queued call.
pub const CALLS: &str = "calls";
/// The wake-up statement: one statement, its own transaction, committed without waiting for the
/// disk.
pub(crate) const NOTIFY_CALLS: &str =
    "SELECT set_config('synchronous_commit', 'off', true), pg_notify('skill_wake', 'calls')";

/// What woke the listener.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wake {
    /// A call was queued through some core.
    Calls,
    /// The connection was lost (and is made again at the next wait): wake-ups may have been
    /// missed meanwhile.
    Lost,
}

/// One core's listening connection.
pub struct Wakeups {
    listener: PgListener,
    /// The store's cache of reads by key, kept while this listens.
    keys: Arc<KeyCache>,
    /// Whether this connection is counted as listening by `keys`.
    heard: bool,
}

impl std::fmt::Debug for Wakeups {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Wakeups").finish_non_exhaustive()
    }
}

impl Wakeups {
    pub(crate) async fn listen(pool: &sqlx::PgPool, keys: Arc<KeyCache>) -> Result<Self> {
        let mut listener = PgListener::connect_with(pool).await?;
        listener.listen_all([CHANNEL, KEYS]).await?;
        // Heard from now on: what is read from now on may be kept.
        keys.listening();
        Ok(Self { listener, keys, heard: true })
    }

    /// The next wake-up: a queued call, or a lost connection (made again before this answers).
    /// An error when the connection cannot be made again: this listener hears nothing more, and
    /// its core makes a new one.
    pub async fn next(&mut self) -> Result<Wake> {
        loop {
            let received = match self.listener.try_recv().await {
                Ok(received) => received,
                Err(error) => {
                    self.deaf();
                    return Err(error.into());
                }
            };
            match received {
                Some(notification) if notification.channel() == KEYS => self.keys.changed(),
                Some(notification) if notification.payload() == CALLS => return Ok(Wake::Calls),
                Some(_) => {}
                None => {
                    // Changes told while the connection was down went unheard.
                    self.keys.changed();
                    return Ok(Wake::Lost);
                }
            }
        }
    }

    fn deaf(&mut self) {
        if std::mem::take(&mut self.heard) {
            self.keys.deaf();
        }
    }
}

impl Drop for Wakeups {
    fn drop(&mut self) {
        self.deaf();
    }
}
