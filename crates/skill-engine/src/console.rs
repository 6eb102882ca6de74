//! Console sessions: a person's personal access token exchanged for a session the console keeps
//! in a cookie. The store keeps only hashes — of the cookie's secret and of the token — and every
//! page authenticates again through the token's credential, so a revoked or expired token, a
//! disabled principal or a sign-out ends the session at the next request. Nothing is held in
//! memory: any core replica serves any session.

use chrono::Duration;
use skill_api::events::{ConsoleSignedIn, ConsoleSignedOut};
use skill_api::{PrincipalKind, SkillStatus};
use skill_contract::codes::Code;
use skill_store::ErrorKind;
use skill_store::records::ConsoleSession;

use crate::actor::{Actor, token_hash};
use crate::error::{Class, EngineError, Result};
use crate::{Engine, Origin};

/// How long a session lasts at most (less when its token expires sooner).
pub const SESSION_HOURS: i64 = 12;

/// A session started by [`Engine::sign_in`]: the secret the cookie carries (shown once) and the
/// session.
#[derive(Debug, Clone)]
pub struct SignedIn {
    pub secret: String,
    pub session: ConsoleSession,
}

fn session_invalid() -> EngineError {
    EngineError::new(Class::Unauthenticated, Code::ConsoleSessionInvalid, "sign in again: the session has ended")
}

/// A random secret of 256 bits, hex.
fn secret() -> String {
    let (a, b) = (uuid::Uuid::new_v4(), uuid::Uuid::new_v4());
    format!("{}{}", a.simple(), b.simple())
}

impl Engine {
    /// Starts a console session for the person a personal access token stands for. An unknown,
    /// revoked or expired token is `invalid_token`; a principal that is not a person is
    /// `console_people_only` (agents and executors have no console).
    pub async fn sign_in(&self, token: &str, origin: &Origin) -> Result<SignedIn> {
        let credential = self.live_credential(&token_hash(token.trim())).await?;
        if credential.principal.kind != PrincipalKind::Person {
            return Err(EngineError::new(
                Class::Forbidden,
                Code::ConsolePeopleOnly,
                format!("the console is for people; {} is an {}", credential.principal.name, credential.principal.kind),
            ));
        }
        let now = self.now();
        let most = now + Duration::hours(SESSION_HOURS);
        let expires_at = credential.token.expires_at.map_or(most, |expires| expires.min(most));
        let secret = secret();
        let session = ConsoleSession {
            id: self.new_id(),
            secret_hash: token_hash(&secret),
            token_hash: credential.token.token_hash.clone(),
            principal_id: credential.principal.id.clone(),
            csrf: self::secret(),
            created_at: now,
            expires_at,
            ended_at: None,
        };
        let signed_in = ConsoleSignedIn {
            session_id: session.id.clone(),
            token_id: credential.token.id.clone(),
            expires_at: crate::catalog::view_time(&expires_at),
        };
        let event = self.event(format!("principal:{}", session.principal_id), &signed_in, origin);
        self.store.insert_console_session(&session, &event).await?;
        Ok(SignedIn { secret, session })
    }

    /// The person a session's secret stands for, with the session: `console_session_invalid`
    /// when there is no such live session or its token no longer acts.
    pub async fn console_actor(&self, secret: &str) -> Result<(Actor, ConsoleSession)> {
        let session = match self.store.console_session(&token_hash(secret)).await {
            Ok(found) => found,
            Err(error) if error.kind() == ErrorKind::NotFound => return Err(session_invalid()),
            Err(error) => return Err(error.into()),
        };
        if session.ended_at.is_some() || session.expires_at <= self.now() {
            return Err(session_invalid());
        }
        let credential = match self.live_credential(&session.token_hash).await {
            Ok(found) if found.principal.id == session.principal_id => found,
            Ok(_) => return Err(session_invalid()),
            Err(error) if error.class == Class::Unauthenticated => return Err(session_invalid()),
            Err(error) => return Err(error),
        };
        let token_id = credential.token.id.clone();
        let actor = Actor::new(credential.principal, credential.grants)
            .with_allowance(credential.allowance)
            .with_token_id(token_id);
        Ok((actor, session))
    }

    /// Ends a session (sign-out); ending an ended one changes nothing.
    pub async fn sign_out(&self, session: &ConsoleSession, origin: &Origin) -> Result<()> {
        let signed_out = ConsoleSignedOut { session_id: session.id.clone() };
        let event = self.event(format!("principal:{}", session.principal_id), &signed_out, origin);
        self.store.end_console_session(&session.id, self.now(), &event).await?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn secrets_are_long_and_differ() {
        let (a, b) = (super::secret(), super::secret());
        assert_eq!(a.len(), 64);
        assert_ne!(a, b);
    }
}

/// What the console's new-task form needs of a type: the type, and the custom fields its work
/// cannot do without (marked required in the form).
#[derive(Debug, Clone)]
pub struct TaskTypeForm {
    pub task_type: skill_api::TaskTypeOut,
    pub required: Vec<String>,
}

impl Engine {
    /// The workspaces in which `actor` holds `permission`, by key.
    pub async fn workspaces_where(
        &self,
        actor: &Actor,
        permission: &str,
    ) -> Result<Vec<skill_store::records::Workspace>> {
        let mut found: Vec<_> =
            self.store.workspaces().await?.into_iter().filter(|w| actor.can_in(permission, &w.id)).collect();
        found.sort_by(|a, b| a.key.cmp(&b.key));
        Ok(found)
    }

    /// A task type as the new-task form shows it (`tasks.read` somewhere, or `org.read`).
    pub async fn task_type_form(&self, actor: &Actor, reference: &str) -> Result<TaskTypeForm> {
        let task_type = self.task_type(actor, reference).await?;
        let record = self.find_task_type(&format!("{}@{}", task_type.key, task_type.version)).await?;
        let mut required: Vec<String> =
            self.required_fields(&record).await?.into_iter().map(|need| need.field).collect();
        required.sort();
        required.dedup();
        Ok(TaskTypeForm { task_type, required })
    }
}

impl Engine {
    /// The versions the console's run page offers `actor` (`skills.invoke`): leaf versions that
    /// are not disabled, by name, at most `limit` (1 to 200). What `actor` may actually call is
    /// the invoke's to say, as for any call.
    pub async fn runnable_skills(&self, actor: &Actor, limit: u32) -> Result<Vec<skill_api::SkillOut>> {
        actor.require("skills.invoke")?;
        let filter = skill_store::records::SkillFilter::default();
        let (entries, _) = self.page(filter, Some(limit.clamp(1, 200)), None).await?;
        let mut found: Vec<skill_api::SkillOut> = entries
            .into_iter()
            .filter(|entry| entry.skill.contract.is_some() && entry.skill.status != SkillStatus::Disabled)
            .map(|entry| crate::catalog::skill_out(entry, false))
            .collect();
        found.sort_by(|a, b| (&a.name, &a.version).cmp(&(&b.name, &b.version)));
        Ok(found)
    }
}
