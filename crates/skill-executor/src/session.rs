//! The executor's session: opened at start, kept alive, opened again when the core says it
//! ended (leases taken with the old one have ended with it), closed at the stop.

use std::sync::Mutex;
use std::time::Duration;

use skill_api::SessionRequest;
use skill_client::{Client, ClientError};

pub(crate) struct Sessions {
    client: Client,
    request: SessionRequest,
    current: Mutex<Option<String>>,
    /// One opening at a time: workers starting together share one session.
    opening: tokio::sync::Mutex<()>,
}

impl Sessions {
    pub(crate) fn new(client: Client, capabilities: Vec<String>, ttl_seconds: u32) -> Self {
        let request = SessionRequest { capabilities, ttl_seconds: Some(ttl_seconds), draining: None };
        Self { client, request, current: Mutex::new(None), opening: tokio::sync::Mutex::new(()) }
    }

    fn slot(&self) -> std::sync::MutexGuard<'_, Option<String>> {
        self.current.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The session to claim with, opening one when there is none.
    pub(crate) async fn current(&self) -> Result<String, ClientError> {
        if let Some(id) = self.slot().clone() {
            return Ok(id);
        }
        let _turn = self.opening.lock().await;
        if let Some(id) = self.slot().clone() {
            return Ok(id);
        }
        let opened = self.client.open_session(&self.request).await?;
        tracing::info!(session = %opened.id, "executor session opened");
        let mut slot = self.slot();
        Ok(slot.get_or_insert(opened.id).clone())
    }

    /// The core says `id` ended: the next claim opens a new one.
    pub(crate) fn lost(&self, id: &str) {
        let mut slot = self.slot();
        if slot.as_deref() == Some(id) {
            tracing::warn!(session = id, "the executor session ended; opening a new one");
            *slot = None;
        }
    }

    /// Keeps the session alive every third of its life, until the task is dropped.
    pub(crate) async fn keep_alive(&self) {
        let every =
            Duration::from_secs(u64::from(self.request.ttl_seconds.unwrap_or(60)) / 3).max(Duration::from_secs(1));
        loop {
            tokio::time::sleep(every).await;
            let Some(id) = self.slot().clone() else { continue };
            match self.client.keep_session(&id, &self.request).await {
                Ok(_) => {}
                Err(error) if matches!(error.code(), Some("session_not_active" | "not_found")) => self.lost(&id),
                // Not a verdict: the core may be restarting. The next beat tries again.
                Err(error) => tracing::warn!(session = %id, error = %error, "the session heartbeat failed"),
            }
        }
    }

    /// Tells the core the executor is stopping: claims made with the session take nothing from
    /// now on and waiting ones answer at once (its running calls go on). Not a verdict when it
    /// fails: the claims then end at the stop as before.
    pub(crate) async fn drain(&self) {
        let Some(id) = self.slot().clone() else { return };
        let request = SessionRequest { draining: Some(true), ..self.request.clone() };
        if let Err(error) = self.client.keep_session(&id, &request).await {
            tracing::warn!(session = %id, error = %error, "the session could not be drained");
        }
    }

    /// Closes the session: calls still holding its leases go back to the queue.
    pub(crate) async fn close(&self) {
        let Some(id) = self.slot().take() else { return };
        match self.client.close_session(&id).await {
            Ok(_) => tracing::info!(session = %id, "executor session closed"),
            Err(error) => {
                tracing::warn!(session = %id, error = %error, "the session could not be closed; its leases end on their own")
            }
        }
    }
}
