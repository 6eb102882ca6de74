//! Executor sessions: an executor opens one, keeps it alive with heartbeats and closes it; a
//! lease taken with a session ends with it (a closed or expired session's running calls go back
//! to the queue as `lease_expired`).

use chrono::Duration;
use serde_json::{Value, json};
use skill_api::events::{SessionClosed, SessionOpened};
use skill_api::{SessionOut, SessionRequest, SessionState, SessionStatus};
use skill_contract::codes::Code;
use skill_store::ErrorKind;
use skill_store::records::{SessionRecord, Time};

use crate::actor::Actor;
use crate::catalog::view_time;
use crate::error::{Class, EngineError, Result};
use crate::error::{busy, written};
use crate::lease::{error_value, session_active};
use crate::{Engine, Origin};

/// A session's life without a heartbeat, by default and at most.
pub const DEFAULT_SESSION_SECONDS: u32 = 60;
pub const MAX_SESSION_SECONDS: u32 = 600;
const MIN_SESSION_SECONDS: u32 = 10;

impl Engine {
    /// Opens a session for the calling executor (`skills.execute`).
    pub async fn open_session(
        &self,
        actor: &Actor,
        request: &SessionRequest,
        request_id: Option<&str>,
    ) -> Result<SessionOut> {
        actor.require("skills.execute")?;
        let ttl = checked_ttl(request.ttl_seconds)?;
        if request.capabilities.len() > 50
            || request.capabilities.iter().any(|c| c.is_empty() || c.len() > 100 || c.chars().any(char::is_control))
        {
            return Err(EngineError::invalid_request("`capabilities` are at most 50 words of 1 to 100 characters")
                .with("field", "capabilities"));
        }
        let now = self.now();
        let session = SessionRecord {
            id: self.new_id(),
            principal_id: actor.id().to_owned(),
            status: SessionStatus::Active,
            capabilities: json!(request.capabilities),
            admission: skill_store::records::ClaimedWith::default(),
            created_at: now,
            heartbeat_at: now,
            expires_at: now + Duration::seconds(i64::from(ttl)),
            closed_at: None,
            row_version: 1,
            draining_at: None,
        };
        let opened = SessionOpened {
            principal_id: actor.id().to_owned(),
            capabilities: json!(request.capabilities),
            expires_at: view_time(&session.expires_at),
        };
        let event = self.event(format!("executor_session:{}", session.id), &opened, &Origin::of(actor, request_id));
        self.store.insert_session(&session, &event).await?;
        Ok(session_out(session, now))
    }

    /// Keeps the caller's session alive for another `ttlSeconds` (`409 session_not_active` when
    /// it ended).
    pub async fn keep_session(&self, actor: &Actor, id: &str, request: &SessionRequest) -> Result<SessionOut> {
        actor.require("skills.execute")?;
        let ttl = checked_ttl(request.ttl_seconds)?;
        for _ in 0..5 {
            let session = self.own_active_session(actor, id).await?;
            let now = self.now();
            let draining = session.draining_at.is_some() || request.draining == Some(true);
            let next = SessionRecord {
                heartbeat_at: now,
                expires_at: session.expires_at.max(now + Duration::seconds(i64::from(ttl))),
                draining_at: if draining { session.draining_at.or(Some(now)) } else { None },
                row_version: session.row_version + 1,
                ..session
            };
            if written(self.store.update_session(&next, &[], &[]).await)? {
                if draining {
                    // Waiting claims look again, see the drain and answer at once.
                    self.moments.claims_look_again();
                }
                return Ok(session_out(next, now));
            }
        }
        Err(busy())
    }

    /// Closes the caller's session; the calls it holds go back to the queue (or fail when no
    /// attempt remains) in the same transaction. Closing a closed session changes nothing.
    pub async fn close_session(&self, actor: &Actor, id: &str, request_id: Option<&str>) -> Result<SessionOut> {
        actor.require("skills.execute")?;
        for _ in 0..5 {
            let session = self.owned_session(actor, id).await?;
            let now = self.now();
            if session.status == SessionStatus::Closed {
                return Ok(session_out(session, now));
            }
            let origin = Origin::of(actor, request_id);
            let mut calls = Vec::new();
            let mut skills = Vec::new();
            let mut events = Vec::new();
            for call in self.store.session_calls(&session.id).await? {
                let skill = self.store.skill(&call.skill_id).await?.skill;
                let error =
                    error_value("lease_expired", true, "the executor closed the session that held the lease", None);
                let (next, event) = self.failed(call, &skill, error, None, now, &origin);
                calls.push(next);
                skills.push(skill);
                events.push(event);
            }
            let closed = SessionClosed { principal_id: actor.id().to_owned(), released: calls.len() };
            events.push(self.event(format!("executor_session:{}", session.id), &closed, &origin));
            let closed = SessionRecord {
                status: SessionStatus::Closed,
                closed_at: Some(now),
                row_version: session.row_version + 1,
                ..session
            };
            if written(self.store.update_session(&closed, &calls, &events).await)? {
                for (call, skill) in calls.iter().zip(&skills) {
                    self.moments.call_moved(call, &skill.name, &skill.version);
                }
                return Ok(session_out(closed, now));
            }
        }
        Err(busy())
    }

    /// The caller's session `id`: `404` when there is none, `403 session_owner_mismatch` when
    /// another principal opened it.
    async fn owned_session(&self, actor: &Actor, id: &str) -> Result<SessionRecord> {
        let session = self.store.session(id).await.map_err(|error| match error.kind() {
            ErrorKind::NotFound => EngineError::not_found(&format!("session {id}")).with("sessionId", id),
            _ => error.into(),
        })?;
        if session.principal_id != actor.id() {
            return Err(EngineError::new(
                Class::Forbidden,
                Code::SessionOwnerMismatch,
                "another executor opened this session",
            )
            .with("sessionId", id));
        }
        Ok(session)
    }

    /// [`Self::owned_session`], and still active (`409 session_not_active` otherwise).
    pub(crate) async fn own_active_session(&self, actor: &Actor, id: &str) -> Result<SessionRecord> {
        let session = self.owned_session(actor, id).await?;
        if !session_active(&session, self.now()) {
            return Err(EngineError::new(
                Class::Conflict,
                Code::SessionNotActive,
                "the session was closed or expired: open a new one (leases taken with it have ended)",
            )
            .with("sessionId", id));
        }
        Ok(session)
    }
}

/// An executor session as operators see it: the session, what its executor last claimed with
/// (`{localEntrypoints, httpOrigins, mcpEndpoints, audiences}`), and how many calls it runs now.
#[derive(Debug, Clone)]
pub struct SessionView {
    pub session: SessionOut,
    /// What it last claimed with.
    pub covers: skill_store::records::ClaimedWith,
    pub running: usize,
}

impl Engine {
    /// The newest `limit` (1 to 200) executor sessions, open ones first (`org.read` or
    /// `skills.execute`).
    pub async fn sessions(&self, actor: &Actor, limit: u32) -> Result<Vec<SessionView>> {
        actor.require_any(&["org.read", "skills.execute"])?;
        let limit = limit.clamp(1, 200);
        let now = self.now();
        let mut out = Vec::new();
        for session in self.store.sessions(limit).await? {
            let running = if session.status == SessionStatus::Active {
                self.store.session_calls(&session.id).await?.len()
            } else {
                0
            };
            let covers = session.admission.clone();
            out.push(SessionView { session: session_out(session, now), covers, running });
        }
        Ok(out)
    }
}

fn checked_ttl(ttl: Option<u32>) -> Result<u32> {
    let ttl = ttl.unwrap_or(DEFAULT_SESSION_SECONDS);
    if (MIN_SESSION_SECONDS..=MAX_SESSION_SECONDS).contains(&ttl) {
        return Ok(ttl);
    }
    Err(EngineError::invalid_request(format!(
        "`ttlSeconds` is {MIN_SESSION_SECONDS} to {MAX_SESSION_SECONDS}, not {ttl}"
    ))
    .with("field", "ttlSeconds"))
}

fn session_out(session: SessionRecord, now: Time) -> SessionOut {
    SessionOut {
        status: SessionState::of(session.status, session.expires_at <= now),
        capabilities: match session.capabilities {
            Value::Array(items) => items.into_iter().filter_map(|item| item.as_str().map(str::to_owned)).collect(),
            _ => Vec::new(),
        },
        created_at: view_time(&session.created_at),
        heartbeat_at: view_time(&session.heartbeat_at),
        expires_at: view_time(&session.expires_at),
        closed_at: session.closed_at.as_ref().map(view_time),
        draining: session.draining_at.is_some(),
        id: session.id,
        principal_id: session.principal_id,
    }
}
