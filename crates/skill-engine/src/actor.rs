//! Who is acting and what they may do: the principal behind a personal access token and its
//! grants.

use chrono::Utc;
use sha2::{Digest, Sha256};
use skill_api::agent::{PERMISSION_FORBIDDEN, people_only, people_only_message, split_permission};
use skill_api::four_eyes::implies;
use skill_api::{DecisionAuthority, HeldGrant, PrincipalKind};
use skill_contract::codes::Code;
use skill_store::records::{ExecutorAllowance, Grant, Principal};

use crate::error::{Class, EngineError, Result};

/// The prefix of every personal access token, so scanners and people recognise one.
pub const TOKEN_PREFIX: &str = "skp_";

/// The permissions of the core. Contracts may require others (custom permissions), which are
/// granted the same way.
pub const PERMISSIONS: &[&str] = &[
    "org.manage",
    "org.read",
    "skills.invoke",
    "skills.execute",
    "tasks.read",
    "tasks.write",
    "approvals.decide",
    "facts.read",
    "facts.write",
];

/// `403 agent_permission_forbidden` when a principal of `kind` would be granted `written`
/// (`PERMISSION` or `PERMISSION@WORKSPACE`) and only a person holds it
/// ([`skill_contract::agent::PEOPLE_ONLY`]):
/// what every grant — a document's, a command's, the core's own — is checked with.
pub(crate) fn grantable(kind: PrincipalKind, written: &str) -> Result<()> {
    if kind == PrincipalKind::Person || !people_only(written) {
        return Ok(());
    }
    let permission = split_permission(written).0;
    Err(EngineError::new(Class::Forbidden, PERMISSION_FORBIDDEN, people_only_message(kind.as_str(), written))
        .with("permission", permission)
        .with("kind", kind.as_str()))
}

/// A principal with its grants, as one request sees them.
#[derive(Debug, Clone)]
pub struct Actor {
    principal: Principal,
    grants: Vec<Grant>,
    /// For an executor, what the operator allowed it to run (none: nothing).
    allowance: Option<ExecutorAllowance>,
    /// The hash of the bearer token it was authenticated with, so a long wait can read the
    /// credential again before it acts.
    token_hash: Option<String>,
    /// The id of the token behind the actor (directly, or through a console session), for the
    /// journal's record of who decided.
    token_id: Option<String>,
    /// For an agent acting with a token, the person who operates it with that token.
    operator: Option<String>,
    /// For an agent acting with a token, the person who had that token issued (and so held its
    /// secret once), when not its operator.
    issuer: Option<String>,
    /// When the credential was read.
    read_at: std::time::Instant,
}

impl Actor {
    pub fn new(principal: Principal, grants: Vec<Grant>) -> Self {
        if principal.kind != PrincipalKind::Person {
            for grant in grants.iter().filter(|grant| people_only(&grant.permission)) {
                tracing::warn!(
                    principal = %principal.name,
                    kind = principal.kind.as_str(),
                    permission = %grant.permission,
                    "a principal that is not a person holds a permission only a person holds: it counts for nothing; take it back (skill-core revoke, or apply the agent's document again)"
                );
            }
        }
        Self {
            principal,
            grants,
            allowance: None,
            token_hash: None,
            token_id: None,
            operator: None,
            issuer: None,
            read_at: std::time::Instant::now(),
        }
    }

    /// The actor operated by the person `operator` (an agent's token names one).
    #[must_use]
    pub fn operated_by(mut self, operator: Option<String>) -> Self {
        self.operator = operator;
        self
    }

    /// The actor whose token was issued by the person `issuer` (through the API).
    #[must_use]
    pub fn issued_by(mut self, issuer: Option<String>) -> Self {
        self.issuer = issuer;
        self
    }

    /// The person operating this agent, when a token says who.
    pub fn operator(&self) -> Option<&str> {
        self.operator.as_deref()
    }

    /// The persons behind what this actor does now, as `role`: a person themself; an agent, the
    /// person operating it; none for an executor or an agent the core acts as (a rule's, a
    /// process's), whose work carries the initiators of what it was made from.
    ///
    /// An agent's token issued by another person than its operator counts them both: whoever
    /// held the token's secret could have acted as the agent.
    pub fn initiators(&self, role: skill_api::InitiatorRole) -> Vec<skill_api::Initiator> {
        let one = |person: &str, agent: Option<&str>| skill_api::Initiator {
            person: person.to_owned(),
            role,
            agent: agent.map(str::to_owned),
            via: Vec::new(),
        };
        match (self.principal.kind, &self.operator) {
            (PrincipalKind::Person, _) => vec![one(&self.principal.id, None)],
            (PrincipalKind::Agent, Some(operator)) => {
                let agent = Some(self.principal.id.as_str());
                let issuer = self.issuer.as_deref().filter(|issuer| issuer != operator);
                std::iter::once(operator.as_str()).chain(issuer).map(|person| one(person, agent)).collect()
            }
            (PrincipalKind::Agent, None) | (PrincipalKind::Executor, _) => Vec::new(),
        }
    }

    /// [`Actor::initiators`] of the work `work` it makes (`task:<id>`, `fact:<id>`, …).
    pub fn initiators_of(&self, role: skill_api::InitiatorRole, work: &str) -> Vec<skill_api::Initiator> {
        self.initiators(role).into_iter().map(|initiator| initiator.reaching(work.to_owned())).collect()
    }

    /// The actor as authenticated by the token whose hash is `hash`.
    #[must_use]
    pub(crate) fn by_token(mut self, hash: String) -> Self {
        self.token_hash = Some(hash);
        self
    }

    /// The actor as the token `id` stands behind it.
    #[must_use]
    pub(crate) fn with_token_id(mut self, id: String) -> Self {
        self.token_id = Some(id);
        self
    }

    /// What the actor was granted.
    pub fn grants(&self) -> &[Grant] {
        &self.grants
    }

    /// The id of the token behind the actor, when a token is.
    pub fn token_id(&self) -> Option<&str> {
        self.token_id.as_deref()
    }

    /// The hash of the bearer token behind the actor, when a token is.
    pub(crate) fn token_hash(&self) -> Option<&str> {
        self.token_hash.as_deref()
    }

    /// How long ago the credential was read.
    pub(crate) fn age(&self) -> std::time::Duration {
        self.read_at.elapsed()
    }

    /// Whether `other` may do exactly what this actor may: the same principal, grants and
    /// allowance.
    pub(crate) fn same_authority(&self, other: &Actor) -> bool {
        let held = |actor: &Actor| {
            let mut grants: Vec<(Option<String>, String)> =
                actor.grants.iter().map(|g| (g.workspace_id.clone(), g.permission.clone())).collect();
            grants.sort();
            grants
        };
        self.principal.id == other.principal.id && held(self) == held(other) && self.allowance == other.allowance
    }

    /// The actor with what the operator allowed it to run, as an executor.
    #[must_use]
    pub fn with_allowance(mut self, allowance: Option<ExecutorAllowance>) -> Self {
        self.allowance = allowance;
        self
    }

    /// What the operator allowed this executor to run; `None` when nothing.
    pub fn allowance(&self) -> Option<&ExecutorAllowance> {
        self.allowance.as_ref()
    }

    /// Whether the principal is an executor.
    pub fn is_executor(&self) -> bool {
        self.principal.kind == PrincipalKind::Executor
    }

    pub fn principal(&self) -> &Principal {
        &self.principal
    }

    pub fn id(&self) -> &str {
        &self.principal.id
    }

    /// The grants that count: all of a person's; of an agent's or an executor's, none that only
    /// a person holds (`skill_contract::agent::PEOPLE_ONLY`) — no grant path gives one, but a
    /// database from before that rule may hold one, and it is refused at use (fail closed).
    fn counted(&self) -> impl Iterator<Item = &Grant> {
        let person = self.principal.kind == PrincipalKind::Person;
        self.grants.iter().filter(move |grant| person || !people_only(&grant.permission))
    }

    /// Whether the principal holds `permission` organisation-wide. `org.manage` includes
    /// `org.read`.
    pub fn can(&self, permission: &str) -> bool {
        self.counted().any(|grant| grant.workspace_id.is_none() && implies(&grant.permission, permission))
    }

    /// Whether the principal holds `permission` in `workspace_id` (or organisation-wide).
    pub fn can_in(&self, permission: &str, workspace_id: &str) -> bool {
        self.counted().any(|grant| {
            grant.workspace_id.as_deref().is_none_or(|id| id == workspace_id) && implies(&grant.permission, permission)
        })
    }

    /// Whether the principal holds `permission` in some workspace (or organisation-wide).
    pub fn can_somewhere(&self, permission: &str) -> bool {
        self.counted().any(|grant| implies(&grant.permission, permission))
    }

    /// The workspaces where the principal holds `permission`: `None` when it holds it
    /// organisation-wide (every workspace).
    pub fn workspaces_with(&self, permission: &str) -> Option<Vec<String>> {
        if self.can(permission) {
            return None;
        }
        let mut ids: Vec<String> = self
            .counted()
            .filter(|grant| implies(&grant.permission, permission))
            .filter_map(|grant| grant.workspace_id.clone())
            .collect();
        ids.sort();
        ids.dedup();
        Some(ids)
    }

    /// The grants as a decision keeps them: `{principalId, grants: [{workspaceId, permission}]}`.
    pub fn snapshot(&self) -> DecisionAuthority {
        let grants = self
            .grants
            .iter()
            .map(|grant| HeldGrant { workspace_id: grant.workspace_id.clone(), permission: grant.permission.clone() })
            .collect();
        DecisionAuthority { principal_id: self.principal.id.clone(), grants }
    }

    /// The grants of a snapshot [`Actor::snapshot`] made, for `principal`; `None` when the
    /// snapshot is not one.
    pub fn from_snapshot(principal: Principal, snapshot: &DecisionAuthority) -> Option<Self> {
        let kept = snapshot
            .grants
            .iter()
            .map(|grant| Grant {
                id: String::new(),
                principal_id: principal.id.clone(),
                workspace_id: grant.workspace_id.clone(),
                permission: grant.permission.clone(),
                created_at: principal.created_at,
            })
            .collect();
        (snapshot.principal_id == principal.id).then(|| Self::new(principal, kept))
    }

    /// `permission_denied` unless the principal holds `permission` organisation-wide.
    pub fn require(&self, permission: &str) -> Result<()> {
        if self.can(permission) { Ok(()) } else { Err(EngineError::forbidden(permission)) }
    }

    /// `permission_denied` unless the principal holds one of `permissions`.
    pub fn require_any(&self, permissions: &[&str]) -> Result<()> {
        if permissions.iter().any(|permission| self.can(permission)) {
            Ok(())
        } else {
            Err(EngineError::new(
                Class::Forbidden,
                Code::PermissionDenied,
                format!("this needs one of the permissions {}", permissions.join(", ")),
            )
            .with("permissions", permissions.to_vec()))
        }
    }
}

/// A new token: `skp_` and 64 hex digits from a cryptographically secure generator (two v4
/// UUIDs, 244 random bits).
pub fn new_token() -> String {
    let (a, b) = (uuid::Uuid::new_v4(), uuid::Uuid::new_v4());
    format!("{TOKEN_PREFIX}{}{}", a.simple(), b.simple())
}

/// What the store keeps of a token: its SHA-256, hex. Tokens carry enough entropy that a fast
/// hash is safe; a lookup by hash needs no secret comparison.
pub fn token_hash(token: &str) -> String {
    let digest = Sha256::digest(token.as_bytes());
    digest.iter().map(|byte| format!("{byte:02x}")).collect()
}

/// Whether the token may act now: not revoked, not expired, and its principal not disabled.
pub(crate) fn usable(token: &skill_store::records::AccessToken, principal: &Principal) -> bool {
    let now = Utc::now();
    token.revoked_at.is_none()
        && token.expires_at.is_none_or(|expires| expires > now)
        && principal.disabled_at.is_none()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn actor(grants: &[(Option<&str>, &str)]) -> Actor {
        actor_of(PrincipalKind::Person, grants)
    }

    fn actor_of(kind: PrincipalKind, grants: &[(Option<&str>, &str)]) -> Actor {
        let principal = Principal {
            id: "p".into(),
            kind,
            name: "ana".into(),
            display_name: String::new(),
            created_at: chrono::Utc::now(),
            disabled_at: None,
        };
        let grants = grants
            .iter()
            .map(|(workspace, permission)| Grant {
                id: "g".into(),
                principal_id: "p".into(),
                workspace_id: workspace.map(str::to_owned),
                permission: (*permission).to_owned(),
                created_at: chrono::Utc::now(),
            })
            .collect();
        Actor::new(principal, grants)
    }

    #[test]
    fn organisation_grants_hold_everywhere_and_workspace_grants_only_there() {
        let ana = actor(&[(None, "org.manage"), (Some("w1"), "tasks.write")]);
        assert!(ana.can("org.manage") && ana.can("org.read"), "manage includes read");
        assert!(!ana.can("skills.invoke"));
        assert!(!ana.can("tasks.write"), "a workspace grant is not organisation-wide");
        assert!(ana.can_in("tasks.write", "w1") && !ana.can_in("tasks.write", "w2"));
        assert!(ana.can_in("org.read", "w2"));
        assert_eq!(ana.require("skills.execute").map_err(|e| e.code), Err(Code::PermissionDenied));
        assert!(actor(&[(None, "org.read")]).require("org.manage").is_err(), "read does not include manage");
    }

    #[test]
    fn what_only_a_person_holds_counts_for_nothing_held_by_an_agent_or_executor() {
        let held = [(None, "org.manage"), (Some("w1"), "approvals.decide"), (Some("w1"), "tasks.write")];
        for kind in [PrincipalKind::Agent, PrincipalKind::Executor] {
            let robot = actor_of(kind, &held);
            assert!(!robot.can("org.manage") && !robot.can("org.read"), "{kind:?}: org.manage counts for nothing");
            assert!(robot.require("org.manage").is_err() && robot.require_any(&["org.manage"]).is_err());
            assert!(!robot.can_in("approvals.decide", "w1") && !robot.can_somewhere("approvals.decide"));
            assert_eq!(robot.workspaces_with("approvals.decide"), Some(vec![]));
            assert!(robot.can_in("tasks.write", "w1") && robot.can_in("tasks.read", "w1"), "the rest still counts");
        }
        let person = actor(&held);
        assert!(person.can("org.manage") && person.can_in("approvals.decide", "w1"));
    }

    #[test]
    fn tokens_are_long_random_and_stored_as_their_hash() {
        let (a, b) = (new_token(), new_token());
        assert_ne!(a, b);
        assert!(a.starts_with(TOKEN_PREFIX) && a.len() == TOKEN_PREFIX.len() + 64, "{a}");
        assert_eq!(token_hash("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
        assert_ne!(token_hash(&a), token_hash(&b));
    }
}
