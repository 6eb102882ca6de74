//! Wake-ups between the cores sharing a PostgreSQL database: each tells the others when calls
//! were queued through it, and listens for what they tell, so a claim waiting on any core wakes
//! as soon as a call is queued through any, not when it next looks.

use std::time::Duration;

use skill_store::wakeups::Wake;

use crate::Engine;

/// How long the listener waits before it tries its connection again after it failed.
const RETRY_AFTER: Duration = Duration::from_secs(1);

impl Engine {
    /// Listens for the calls queued through any core sharing this database and wakes this
    /// core's waiting claims at once; tells the others when calls are queued through this one.
    /// `None` where this core is the one writer (SQLite). When it answers, the listening
    /// connection is open: a call queued after it wakes the claims. The task it starts runs
    /// until aborted; a lost connection wakes every waiting claim (a wake-up may have been
    /// missed) and is made again.
    pub async fn listen_to_other_cores(&self) -> skill_store::Result<Option<tokio::task::JoinHandle<()>>> {
        let Some(first) = self.store.wakeups().await? else { return Ok(None) };
        let engine = self.clone();
        let telling = self.clone();
        // One wake-up at a time: those asked for meanwhile make one more, not one each.
        let tell = async move {
            loop {
                telling.moments.queued_here().await;
                if let Err(error) = telling.store.wake_others().await {
                    tracing::warn!(error = %error, "the other cores could not be woken; their claims look on their own");
                    tokio::time::sleep(RETRY_AFTER).await;
                }
            }
        };
        // A listener that failed hears nothing more (and the store keeps no read by key while
        // none listens): a new one is made.
        let listen = async move {
            let mut listening = Some(first);
            loop {
                let wakeups = match listening.as_mut() {
                    Some(wakeups) => wakeups,
                    None => match engine.store.wakeups().await {
                        Ok(Some(wakeups)) => listening.insert(wakeups),
                        Ok(None) => return,
                        Err(error) => {
                            tracing::warn!(error = %error, "the wake-ups of other cores still cannot be heard");
                            tokio::time::sleep(RETRY_AFTER).await;
                            continue;
                        }
                    },
                };
                match wakeups.next().await {
                    // Perhaps many calls: the claim that finds one wakes the next.
                    Ok(Wake::Calls) => engine.moments.more_calls(),
                    Ok(Wake::Lost) => engine.moments.claims_look_again(),
                    Err(error) => {
                        tracing::warn!(
                            error = %error,
                            "the wake-ups of other cores cannot be heard; waiting claims look on their own meanwhile"
                        );
                        listening = None;
                        engine.moments.claims_look_again();
                        tokio::time::sleep(RETRY_AFTER).await;
                    }
                }
            }
        };
        Ok(Some(tokio::spawn(async move {
            tokio::join!(tell, listen);
        })))
    }
}
