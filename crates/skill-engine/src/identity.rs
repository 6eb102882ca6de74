//! Principals, personal access tokens and grants: authenticating a request, and bootstrapping
//! an operator's first token.

use skill_api::events::{GrantAdded, GrantRemoved, PrincipalCreated, TokenCreated, TokenRevoked, WorkspaceCreated};
use skill_api::{PrincipalKind, State};
use skill_contract::codes::Code;
use skill_store::ErrorKind;
use skill_store::records::{AccessToken, Grant, Principal, Time, Workspace};

use crate::actor::{Actor, new_token, token_hash, usable};
use crate::error::{Class, EngineError, Result};
use crate::{Engine, Origin};

/// The name of the principal the core carries out executions as.
pub(crate) const EXECUTION_PRINCIPAL: &str = "core.execution";

/// The kinds of principal.
pub const PRINCIPAL_KINDS: &[&str] = PrincipalKind::WORDS;
/// The longest life a token may be issued with (ten years).
pub const MAX_TOKEN_DAYS: u32 = 3650;
/// The longest token label, in characters.
pub const MAX_LABEL_CHARS: usize = 200;

/// What `token create` asks for.
#[derive(Debug, Clone)]
pub struct TokenRequest {
    /// The principal's name; created when it does not exist.
    pub principal: String,
    /// Its kind, when it is created.
    pub kind: String,
    /// Permissions to grant (kept when already held): `org.manage` organisation-wide, or
    /// `tasks.write@claims` in the workspace `claims`.
    pub grants: Vec<String>,
    pub label: String,
    pub expires_at: Option<Time>,
}

/// A token as issued: the secret itself (shown once, never stored) and its record.
#[derive(Debug, Clone)]
pub struct IssuedToken {
    pub token: String,
    pub record: AccessToken,
    pub principal: Principal,
}

/// Why a token does not let its holder in.
#[derive(Debug, Clone, Copy)]
enum TokenProblem {
    Unknown,
    Revoked,
    Expired,
    PrincipalDisabled,
    /// An agent's token that names no person operating it (made before tokens named one).
    NoOperator,
    /// An agent's token whose operating person is disabled.
    OperatorDisabled,
    /// A token whose issuing person is disabled.
    IssuerDisabled,
}

/// `401 invalid_token`, saying why and what to do.
fn invalid_token(problem: TokenProblem) -> EngineError {
    let (reason, why) = match problem {
        TokenProblem::Unknown => (
            "unknown",
            "no such token: check that it was copied whole (skp_ and 64 hex digits) and belongs to this core",
        ),
        TokenProblem::Revoked => ("revoked", "it was revoked: ask for a new one"),
        TokenProblem::Expired => {
            ("expired", "it has expired: ask for a new one (skill-core dev mints new ones at each start)")
        }
        TokenProblem::PrincipalDisabled => ("principal_disabled", "its principal is disabled: ask an operator"),
        TokenProblem::NoOperator => (
            "no_operator",
            "an agent's token names the person who operates the agent, and this one names nobody: ask an operator for a new one (skill-core token create --agent KEY --for PERSON)",
        ),
        TokenProblem::OperatorDisabled => (
            "operator_disabled",
            "the person who operates the agent with it is disabled: ask an operator for a token operated by someone who may act",
        ),
        TokenProblem::IssuerDisabled => {
            ("issuer_disabled", "the person who had it issued is disabled: ask an operator for a new one")
        }
    };
    EngineError::new(Class::Unauthenticated, Code::InvalidToken, format!("the token is not valid: {why}"))
        .with("reason", reason)
}

/// How long a credential read for a request counts as read now.
const STILL_FRESH: std::time::Duration = std::time::Duration::from_millis(20);

impl Engine {
    /// The actor behind a bearer token; `invalid_token` when it is unknown, revoked, expired, or
    /// its principal is disabled — one code, with `details.reason` and what to do (which tells the
    /// holder of a token nothing it could use: a guessed token is only ever `unknown`).
    pub async fn authenticate(&self, token: &str) -> Result<Actor> {
        self.authenticate_hash(token_hash(token)).await
    }

    async fn authenticate_hash(&self, hash: String) -> Result<Actor> {
        let credential = self.live_credential(&hash).await?;
        let token_id = credential.token.id.clone();
        // An agent acts for a person: a token that names nobody lets nobody in.
        if credential.principal.kind == PrincipalKind::Agent {
            if credential.token.operated_by.is_none() {
                return Err(invalid_token(TokenProblem::NoOperator));
            }
            // An agent acts for its person only while that person may act.
            if credential.operator_disabled {
                return Err(invalid_token(TokenProblem::OperatorDisabled));
            }
        }
        // Whoever had a token issued held its secret: it stops with them.
        if credential.issuer_disabled {
            return Err(invalid_token(TokenProblem::IssuerDisabled));
        }
        Ok(Actor::new(credential.principal, credential.grants)
            .with_allowance(credential.allowance)
            .by_token(hash)
            .with_token_id(token_id)
            .operated_by(credential.token.operated_by)
            .issued_by(credential.token.issued_by))
    }

    /// `Ok` when `actor`'s credential still stands as it was read: what a request whose body came
    /// slowly checks once the body is in, so it is not served on what its sender held when the
    /// headers came. A credential read within [`STILL_FRESH`] counts as read now; an older one is
    /// read again — `invalid_token` when it no longer lets its holder in, or when its grants or
    /// allowance changed meanwhile (`details.reason` `changed`: send the request again).
    pub async fn still_holds(&self, actor: &Actor) -> Result<()> {
        if actor.age() < STILL_FRESH {
            return Ok(());
        }
        if self.refreshed(actor).await?.same_authority(actor) {
            return Ok(());
        }
        Err(EngineError::new(
            Class::Unauthenticated,
            Code::InvalidToken,
            "the token's grants changed while the request's body arrived: send the request again",
        )
        .with("reason", "changed"))
    }

    /// `actor` as its credential stands now: what a long wait reads before it acts, so a token
    /// revoked, a principal disabled or a grant or allowance taken away meanwhile counts
    /// (`invalid_token` when the credential is no longer live). An actor without a token (a
    /// console session's, the core's own) is read again by its principal.
    pub(crate) async fn refreshed(&self, actor: &Actor) -> Result<Actor> {
        if let Some(hash) = actor.token_hash() {
            return self.authenticate_hash(hash.to_owned()).await;
        }
        let principal = self.store.principal(actor.id()).await?;
        if principal.disabled_at.is_some() {
            return Err(invalid_token(TokenProblem::PrincipalDisabled));
        }
        let allowance = actor.allowance().cloned();
        let grants = self.store.grants(actor.id()).await?;
        Ok(Actor::new(principal, grants).with_allowance(allowance))
    }

    /// `invalid_token` when `actor` may no longer act as it was authenticated — its principal
    /// disabled, or its token no longer letting it in: what a long wait checks before it answers.
    pub(crate) async fn still_enabled(&self, actor: &Actor) -> Result<()> {
        // A token's holder: its credential read again, as a request reads it (the principal,
        // and for an agent's token the person operating it and whoever had it issued).
        if let Some(hash) = actor.token_hash() {
            return self.authenticate_hash(hash.to_owned()).await.map(|_| ());
        }
        match self.store.principal(actor.id()).await?.disabled_at {
            Some(_) => Err(invalid_token(TokenProblem::PrincipalDisabled)),
            None => Ok(()),
        }
    }

    /// The credential behind a token's hash while it may act: `invalid_token` when it is unknown,
    /// revoked, expired, or its principal is disabled. What a bearer token and a console session
    /// are both checked with.
    pub(crate) async fn live_credential(&self, hash: &str) -> Result<skill_store::records::Credential> {
        let credential = match self.store.credential(hash).await {
            Ok(found) => found,
            Err(error) if error.kind() == ErrorKind::NotFound => return Err(invalid_token(TokenProblem::Unknown)),
            Err(error) => return Err(error.into()),
        };
        if !usable(&credential.token, &credential.principal) {
            let problem = if credential.token.revoked_at.is_some() {
                TokenProblem::Revoked
            } else if credential.principal.disabled_at.is_some() {
                TokenProblem::PrincipalDisabled
            } else {
                TokenProblem::Expired
            };
            return Err(invalid_token(problem));
        }
        Ok(credential)
    }

    /// The name of principal `id`, for showing who did something the caller may see (a name says
    /// nothing a caller may not know); the id itself when there is no such principal.
    pub async fn principal_name(&self, id: &str) -> Result<String> {
        match self.store.principal(id).await {
            Ok(principal) => Ok(principal.name),
            Err(error) if error.kind() == ErrorKind::NotFound => Ok(id.to_owned()),
            Err(error) => Err(error.into()),
        }
    }

    /// Issues a token for a principal (created when missing) with organisation-wide grants —
    /// the operator's way in before anyone holds `org.manage`.
    pub async fn issue_token(&self, request: &TokenRequest, origin: &Origin) -> Result<IssuedToken> {
        self.issue_token_for(request, None, origin).await
    }

    /// [`Engine::issue_token`], for an agent operated by the person named `operator` (required
    /// for an agent, refused for anyone else: an agent acts for a person).
    pub async fn issue_token_for(
        &self,
        request: &TokenRequest,
        operator: Option<&str>,
        origin: &Origin,
    ) -> Result<IssuedToken> {
        let Ok(kind) = PrincipalKind::parse(&request.kind) else {
            return Err(EngineError::new(
                Class::Invalid,
                Code::InvalidPrincipal,
                format!("a principal is one of {}, not {:?}", PRINCIPAL_KINDS.join(", "), request.kind),
            )
            .with("allowed", PRINCIPAL_KINDS.to_vec()));
        };
        // The core's own name, and any that would pass for it in a listing.
        if request.principal.trim().eq_ignore_ascii_case(EXECUTION_PRINCIPAL) {
            return Err(reserved_principal());
        }
        let mut grants = Vec::new();
        for written in &request.grants {
            // Refused before the principal is made, when it would be made of this kind.
            crate::actor::grantable(kind, written)?;
            grants.push(self.parse_grant(written).await?);
        }
        check_token_terms(&request.label, request.expires_at)?;
        // An agent made here names its operator before anything is made.
        let exists = self.store.principal_by_name(&request.principal).await.is_ok();
        if !exists && kind == PrincipalKind::Agent {
            self.operator_of_token(None, operator).await?;
        }
        let principal = self.principal_named(&request.principal, kind, origin).await?;
        // An agent's token comes from `token create --agent`, with what its document grants.
        self.not_an_agent(&principal, "a token with grants made by hand (use skill-core token create --agent)").await?;
        let operator = match (principal.kind, operator) {
            (PrincipalKind::Agent, named) => Some(self.operator_of_token(None, named).await?),
            (_, None) => None,
            (other, Some(_)) => {
                return Err(EngineError::new(
                    Class::Invalid,
                    Code::InvalidOperator,
                    format!("only an agent is operated by a person; {} is an {other}", principal.name),
                )
                .with("field", "operatedBy"));
            }
        };
        for (permission, workspace_id) in grants {
            self.add_grant(&principal, &permission, workspace_id, origin).await?;
        }
        self.mint_token(principal, &request.label, request.expires_at, operator.as_ref(), None, origin).await
    }

    /// A new token for `principal`, with its event.
    pub(crate) async fn mint_token(
        &self,
        principal: Principal,
        label: &str,
        expires_at: Option<Time>,
        operator: Option<&Principal>,
        issuer: Option<&Actor>,
        origin: &Origin,
    ) -> Result<IssuedToken> {
        check_token_terms(label, expires_at)?;
        let operator = operator.map(|person| person.id.clone());
        let issuer = issuer.filter(|actor| actor.principal().kind == PrincipalKind::Person);
        let token = new_token();
        let record = AccessToken {
            id: self.new_id(),
            principal_id: principal.id.clone(),
            token_hash: token_hash(&token),
            label: label.to_owned(),
            created_at: self.now(),
            expires_at,
            revoked_at: None,
            operated_by: operator,
            issued_by: issuer.map(|actor| actor.id().to_owned()),
        };
        let created = TokenCreated {
            token_id: record.id.clone(),
            label: record.label.clone(),
            operated_by: record.operated_by.clone(),
            issued_by: record.issued_by.clone(),
        };
        let event = self.event(format!("principal:{}", principal.id), &created, origin);
        self.store.create_token(&record, &event).await?;
        Ok(IssuedToken { token, record, principal })
    }

    /// `PERMISSION` (organisation-wide) or `PERMISSION@WORKSPACE`, read: the permission and the
    /// workspace's id.
    async fn parse_grant(&self, written: &str) -> Result<(String, Option<String>)> {
        let (permission, workspace) = match written.split_once('@') {
            Some((permission, key)) => (permission, Some(key)),
            None => (written, None),
        };
        if !skill_contract::is_permission(permission) {
            return Err(EngineError::new(
                Class::Invalid,
                Code::InvalidPermission,
                format!("{permission:?} is not a permission: dotted lowercase words such as org.manage"),
            ));
        }
        let workspace_id = match workspace {
            None => None,
            Some(key) => Some(
                self.store
                    .workspace_by_key(key)
                    .await
                    .map_err(|error| match error.kind() {
                        ErrorKind::NotFound => EngineError::not_found(&format!("workspace {key}"))
                            .with("hint", "create it first: skill-core workspace create --key <key>"),
                        _ => error.into(),
                    })?
                    .id,
            ),
        };
        Ok((permission.to_owned(), workspace_id))
    }

    /// Adds one grant with its event; `false` when the principal held it already. An agent's or
    /// executor's principal is never granted what only a person holds (`agent_permission_forbidden`).
    pub(crate) async fn add_grant(
        &self,
        principal: &Principal,
        permission: &str,
        workspace_id: Option<String>,
        origin: &Origin,
    ) -> Result<bool> {
        crate::actor::grantable(principal.kind, permission)?;
        let grant = Grant {
            id: self.new_id(),
            principal_id: principal.id.clone(),
            workspace_id: workspace_id.clone(),
            permission: permission.to_owned(),
            created_at: self.now(),
        };
        let added = GrantAdded { permission: permission.to_owned(), workspace_id: workspace_id.clone() };
        let event = self.event(format!("principal:{}", principal.id), &added, origin);
        Ok(self.store.add_grant(&grant, &event).await?)
    }

    /// Grants `written` (`PERMISSION` or `PERMISSION@WORKSPACE`) to the principal named `name`,
    /// straight on the database — the operator's way, no token needed (the core's execution
    /// principal, which no token is issued for, is made on first use). Answers whether it was
    /// new.
    pub async fn grant(&self, name: &str, written: &str, origin: &Origin) -> Result<bool> {
        let (permission, workspace_id) = self.parse_grant(written).await?;
        let principal = self.existing_principal(name, origin).await?;
        crate::actor::grantable(principal.kind, written)?;
        self.not_an_agent(&principal, "a grant made by hand").await?;
        self.add_grant(&principal, &permission, workspace_id, origin).await
    }

    /// Takes back a grant [`Engine::grant`] gave; answers whether there was one.
    pub async fn revoke_grant(&self, name: &str, written: &str, origin: &Origin) -> Result<bool> {
        let (permission, workspace_id) = self.parse_grant(written).await?;
        let principal = self.existing_principal(name, origin).await?;
        self.not_an_agent(&principal, "a grant taken back by hand").await?;
        let removed = GrantRemoved { permission: permission.clone(), workspace_id: workspace_id.clone() };
        let event = self.event(format!("principal:{}", principal.id), &removed, origin);
        Ok(self.store.remove_grant(&principal.id, workspace_id.as_deref(), &permission, &event).await?)
    }

    /// The principal named `name`: `404` with a hint when there is none (the core's execution
    /// principal is made on first use).
    async fn existing_principal(&self, name: &str, origin: &Origin) -> Result<Principal> {
        if name == EXECUTION_PRINCIPAL {
            return self.principal_named(name, PrincipalKind::Executor, origin).await;
        }
        match self.store.principal_by_name(name).await {
            Ok(principal) => Ok(principal),
            Err(error) if error.kind() == ErrorKind::NotFound => {
                Err(EngineError::not_found(&format!("principal {name}"))
                    .with("principal", name)
                    .with("hint", "a principal is made by its first token: skill-core token create --name <name>"))
            }
            Err(error) => Err(error.into()),
        }
    }

    /// Revokes a token by its id; `not_found` when there is no such live token.
    pub async fn revoke_token(&self, token_id: &str, origin: &Origin) -> Result<()> {
        let event = self.event(format!("token:{token_id}"), &TokenRevoked { token_id: token_id.to_owned() }, origin);
        match self.store.revoke_token(token_id, self.now(), &event).await {
            Err(error) if error.kind() == ErrorKind::NotFound => {
                Err(EngineError::not_found("a live token with this id"))
            }
            other => Ok(other?),
        }
    }

    /// Creates a workspace; `workspace_exists` when the key is taken.
    pub async fn create_workspace(&self, key: &str, name: &str, origin: &Origin) -> Result<Workspace> {
        if !skill_contract::agent::is_workspace_key(key) {
            return Err(EngineError::new(
                Class::Invalid,
                Code::InvalidWorkspace,
                format!("a workspace key is 1 to 100 lowercase letters, digits, - or _, not {key:?}"),
            ));
        }
        let workspace =
            Workspace { id: self.new_id(), key: key.to_owned(), name: name.to_owned(), created_at: self.now() };
        let created = WorkspaceCreated { key: key.to_owned(), name: name.to_owned() };
        let event = self.event(format!("workspace:{}", workspace.id), &created, origin);
        match self.store.create_workspace(&workspace, &event).await {
            Ok(()) => Ok(workspace),
            Err(error) if error.kind() == ErrorKind::Conflict => {
                Err(EngineError::new(Class::Conflict, Code::WorkspaceExists, format!("a workspace {key} exists")))
            }
            Err(error) => Err(error.into()),
        }
    }

    pub(crate) async fn principal_named(&self, name: &str, kind: PrincipalKind, origin: &Origin) -> Result<Principal> {
        match self.store.principal_by_name(name).await {
            Ok(principal) => return Ok(principal),
            Err(error) if error.kind() != ErrorKind::NotFound => return Err(error.into()),
            Err(_) => {}
        }
        // A name that would pass for an agent's (its key, in other case or with spaces) is not
        // given to anyone else.
        let folded = name.trim().to_lowercase();
        if let Some(agent) = self.store.agents().await?.into_iter().find(|agent| agent.key == folded) {
            return Err(EngineError::new(
                Class::Conflict,
                Code::AgentPrincipalConflict,
                format!("{name:?} would pass for the agent {}: choose another name", agent.key),
            ));
        }
        if name.is_empty() || name.chars().count() > 200 || name.chars().any(char::is_control) {
            return Err(EngineError::new(
                Class::Invalid,
                Code::InvalidPrincipal,
                "a principal's name has 1 to 200 characters and no control characters",
            ));
        }
        let principal = Principal {
            id: self.new_id(),
            kind,
            name: name.to_owned(),
            display_name: String::new(),
            created_at: self.now(),
            disabled_at: None,
        };
        let created = PrincipalCreated { name: name.to_owned(), kind };
        let event = self.event(format!("principal:{}", principal.id), &created, origin);
        match self.store.create_principal(&principal, &event).await {
            Ok(()) => Ok(principal),
            // Created by someone else in the meantime.
            Err(error) if error.kind() == ErrorKind::Conflict => Ok(self.store.principal_by_name(name).await?),
            Err(error) => Err(error.into()),
        }
    }
}

/// A token's label (at most 200 characters, none a control character) and expiry (after now,
/// within ten years).
fn check_token_terms(label: &str, expires_at: Option<Time>) -> Result<()> {
    if label.chars().count() > MAX_LABEL_CHARS || label.chars().any(char::is_control) {
        return Err(EngineError::new(
            Class::Invalid,
            Code::InvalidLabel,
            format!("a token's label has at most {MAX_LABEL_CHARS} characters and no control characters"),
        )
        .with("field", "label"));
    }
    if let Some(expires_at) = expires_at {
        let now = chrono::Utc::now();
        if expires_at <= now || expires_at > now + chrono::Duration::days(i64::from(MAX_TOKEN_DAYS)) {
            return Err(EngineError::new(
                Class::Invalid,
                Code::InvalidExpiry,
                format!("a token expires after now and within {MAX_TOKEN_DAYS} days"),
            ));
        }
    }
    Ok(())
}

/// `403 principal_reserved`: the core's execution principal acts only inside the core.
fn reserved_principal() -> EngineError {
    EngineError::new(
        Class::Forbidden,
        Code::PrincipalReserved,
        format!(
            "{EXECUTION_PRINCIPAL} is the core's own principal: no token is issued for it; give it the permissions the pinned contracts require with `skill-core grant --principal {EXECUTION_PRINCIPAL} PERMISSION[@WORKSPACE]`"
        ),
    )
    .with("principal", EXECUTION_PRINCIPAL)
}

impl Engine {
    /// The principal whose id, else whose name, is `reference`; `404` when there is none.
    pub(crate) async fn principal_by_reference(&self, reference: &str) -> Result<Principal> {
        let missing = || EngineError::not_found(&format!("principal {reference}")).with("principal", reference);
        match self.store.principal(reference).await {
            Ok(found) => return Ok(found),
            Err(error) if error.kind() != ErrorKind::NotFound => return Err(error.into()),
            Err(_) => {}
        }
        match self.store.principal_by_name(reference).await {
            Ok(found) => Ok(found),
            Err(error) if error.kind() == ErrorKind::NotFound => Err(missing()),
            Err(error) => Err(error.into()),
        }
    }

    /// The person who will operate an agent with a new token: the one `named`, else the person
    /// asking (`operator_required` from the operator's command, which has nobody to default to);
    /// `invalid_operator` unless it names an enabled person.
    pub(crate) async fn operator_of_token(&self, actor: Option<&Actor>, named: Option<&str>) -> Result<Principal> {
        let refused = |message: String| {
            EngineError::new(Class::Invalid, Code::InvalidOperator, message).with("field", "operatedBy")
        };
        let principal = match (named, actor) {
            (Some(name), _) => match self.store.principal_by_name(name).await {
                Ok(principal) => principal,
                Err(error) if error.kind() == ErrorKind::NotFound => {
                    return Err(refused(format!("no principal is named {name:?}: an agent is operated by a person")));
                }
                Err(error) => return Err(error.into()),
            },
            (None, Some(actor)) => actor.principal().clone(),
            (None, None) => {
                return Err(EngineError::new(
                    Class::Invalid,
                    Code::OperatorRequired,
                    "an agent's token names the person who operates the agent: pass --for PERSON",
                )
                .with("field", "operatedBy"));
            }
        };
        if principal.kind != PrincipalKind::Person {
            return Err(refused(format!(
                "{} is an {}: an agent is operated by a person, who answers for what it does",
                principal.name, principal.kind
            )));
        }
        if principal.disabled_at.is_some() {
            return Err(refused(format!("{} is disabled: a disabled person operates nothing", principal.name)));
        }
        Ok(principal)
    }

    /// `409 agent_principal_conflict` when `principal` is an agent's: it holds exactly what its
    /// document grants, so nothing of it is changed by hand (`what` says what was tried).
    pub(crate) async fn not_an_agent(&self, principal: &Principal, what: &str) -> Result<()> {
        match self.store.agent_of(&principal.id).await? {
            None => Ok(()),
            Some(agent) => Err(EngineError::new(
                Class::Conflict,
                Code::AgentPrincipalConflict,
                format!(
                    "{} is the principal of the agent {}: it holds exactly what its document grants, so {what} is refused — change the agent document and apply its package",
                    principal.name, agent.key
                ),
            )
            .with("agent", agent.key)),
        }
    }
}

impl Engine {
    /// A workspace's id from its id or key; `404` when there is none.
    pub(crate) async fn find_workspace(&self, reference: &str) -> Result<String> {
        match self.store.workspace_by_reference(reference).await {
            Ok(workspace) => Ok(workspace.id),
            Err(error) if error.kind() == skill_store::ErrorKind::NotFound => {
                Err(EngineError::not_found(&format!("workspace {reference}")).with("workspace", reference))
            }
            Err(error) => Err(error.into()),
        }
    }
}

impl Engine {
    /// The agent whose principal is `id`, with its grants as they are now; `principal_disabled`
    /// when it may not act.
    pub(crate) async fn agent_actor(&self, id: &str) -> Result<Actor> {
        let principal = self.store.principal(id).await?;
        if principal.disabled_at.is_some() {
            return Err(EngineError::new(
                Class::Conflict,
                Code::PrincipalDisabled,
                format!("{} is disabled", principal.name),
            ));
        }
        let grants = self.store.grants(id).await?;
        Ok(Actor::new(principal, grants))
    }
}
