//! The events journal: written inside the transaction of the change it records, read in order.

use futures::future::BoxFuture;

use crate::backend::{PgStore, SqliteStore};
use crate::error::Result;
use crate::records::Event;

/// Reading the journal.
pub trait Journal: Send + Sync {
    /// Events after `after_seq` (0 for the first), oldest first, of one subject when given.
    fn events<'a>(&'a self, after_seq: i64, subject: Option<&'a str>, limit: u32) -> BoxFuture<'a, Result<Vec<Event>>>;
}

/// Appends `$event`, with its journal entry and leaf, inside the transaction `$tx`.
macro_rules! insert {
    ($tx:ident, $event:expr) => {{
        let event: &$crate::records::Event = $event;
        $crate::leaves::Append::append(&mut *$tx, event).await?;
    }};
}
pub(crate) use insert;

/// Appends `$event` and commits `$tx`: how every write of the store ends.
macro_rules! commit {
    ($tx:ident, $event:expr) => {{
        $crate::events::insert!($tx, $event);
        $tx.commit().await?;
    }};
}
pub(crate) use commit;

macro_rules! journal {
    ($store:ty) => {
        impl Journal for $store {
            fn events<'a>(
                &'a self,
                after_seq: i64,
                subject: Option<&'a str>,
                limit: u32,
            ) -> BoxFuture<'a, Result<Vec<Event>>> {
                Box::pin(async move {
                    Ok(sqlx::query_as(
                        "SELECT seq, id, kind, subject, data, actor_id, request_id, created_at FROM events \
                         WHERE seq > $1 AND ($2 IS NULL OR subject = $2) ORDER BY seq LIMIT $3",
                    )
                    .bind(after_seq)
                    .bind(subject)
                    .bind(i64::from(limit))
                    .fetch_all(self.read())
                    .await?)
                })
            }
        }
    };
}

journal!(SqliteStore);
journal!(PgStore);
