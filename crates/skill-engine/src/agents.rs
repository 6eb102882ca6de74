//! Agents a package declares: each document checked whole against the catalog and the installer
//! (the reference's refusals: `permission_escalation`, `unknown_reference`, `skill_disabled`,
//! `skills_invoke_not_permitted`, `execution_skill_not_invoked`; and ours,
//! `agent_permission_forbidden`, which every grant is checked with too), then planned as its principal
//! with exactly the grants, assignments and executor allow-list the document says, written in
//! the install's transaction. Reading agents, and tokens for them.

use skill_contract::codes::Code;
use std::collections::BTreeSet;

use serde_json::json;
use skill_api::events::AgentApplied;
use skill_api::{
    AgentOut, AgentRequest, AgentTokenOut, AgentTokenRequest, ExecutorAllowance, PrincipalKind, SkillStatus,
};
use skill_contract::agent::{AgentKind, is_agent_key, read_spec, split_permission};
use skill_store::ErrorKind;
use skill_store::records::{AgentPlan, AgentRecord, Assignment, Grant, Principal, SkillRecord};

use crate::actor::Actor;
use crate::catalog::view_time;
use crate::error::{Class, EngineError, Result, document_problem};
use crate::identity::EXECUTION_PRINCIPAL;
use crate::planned::Planned;
use crate::{Engine, Origin};

/// `422 invalid_agent` at `path` of the document.
fn invalid(path: &str, message: impl Into<String>) -> EngineError {
    EngineError::new(Class::Invalid, Code::InvalidAgent, message).with("path", path)
}

/// `422 unknown_reference {path, value}`.
fn unknown(path: &str, value: &str, what: &str) -> EngineError {
    EngineError::new(Class::Invalid, Code::UnknownReference, format!("{what} {value} does not exist in this core"))
        .with("path", path)
        .with("value", value)
}

/// The objects an install lists and those it adopts.
pub(crate) struct Objects<'a> {
    pub objects: &'a [skill_store::records::PackageObject],
    pub adopt: &'a [skill_store::records::PackageObject],
}

impl Engine {
    /// The plans of a package's agents (`item` names each in an error), in request order; an
    /// agent whose document, principal, grants, assignments and allow-list are already as
    /// wanted is left out.
    pub(crate) async fn planned_agents(
        &self,
        actor: &Actor,
        wanted: &[AgentRequest],
        package: &str,
        objects: &Objects<'_>,
        planned: &Planned<'_>,
        origin: &Origin,
    ) -> Result<Vec<AgentPlan>> {
        let mut keys = BTreeSet::new();
        let mut plans = Vec::new();
        for (index, request) in wanted.iter().enumerate() {
            let item = format!("agents[{index}]");
            if !keys.insert(request.key.as_str()) {
                return Err(invalid("key", format!("the agent {} is declared twice", request.key)).with("item", item));
            }
            // An agent is an object of its package: another package's agent moves only by adoption.
            let listed = |list: &[skill_store::records::PackageObject]| {
                list.iter().any(|object| object.kind == "Agent" && object.key == request.key)
            };
            if !listed(objects.objects) {
                return Err(EngineError::invalid_request(format!(
                    "agents[{index}] ({}) is not among the install's objects: list it as {{kind: Agent, key: {}}}",
                    request.key, request.key
                ))
                .with("field", "objects")
                .with("item", item));
            }
            if let Ok(existing) = self.store.agent(&request.key).await
                && existing.package_key.as_deref().is_some_and(|owner| owner != package)
                && !listed(objects.adopt)
            {
                let owner = existing.package_key.unwrap_or_default();
                return Err(EngineError::new(
                    Class::Conflict,
                    Code::PackageObjectConflict,
                    format!("another package installed Agent {} (package {owner}): adopt it to move it to package {package}", request.key),
                )
                .with("objects", json!([{"kind": "Agent", "key": request.key, "package": owner}]))
                .with("item", item));
            }
            let plan = self
                .plan_agent(actor, request, package, planned, origin)
                .await
                .map_err(|error| error.with("item", item).with("agent", request.key.as_str()))?;
            plans.extend(plan);
        }
        Ok(plans)
    }

    async fn plan_agent(
        &self,
        actor: &Actor,
        request: &AgentRequest,
        package: &str,
        planned: &Planned<'_>,
        origin: &Origin,
    ) -> Result<Option<AgentPlan>> {
        let key = &request.key;
        let spec = &read_spec(&request.spec).map_err(document_problem)?;
        if !is_agent_key(key) || key.eq_ignore_ascii_case(EXECUTION_PRINCIPAL) {
            return Err(invalid(
                "key",
                format!(
                    "{key:?} is not an agent key: 1 to 100 lower-case letters, digits, `.`, `_`, `-` (and not {EXECUTION_PRINCIPAL})"
                ),
            ));
        }
        if let Some(found) = spec.problems().into_iter().next() {
            return Err(document_problem(found));
        }
        let now = self.now();
        let (existing, principal) = self.agent_principal(key, spec.identity.kind).await?;
        let principal_id = principal.as_ref().map_or_else(|| self.new_id(), |found| found.id.clone());

        // Permissions: each known where it names a workspace, and held by the installer.
        let mut grants = Vec::new();
        let mut missing = Vec::new();
        for (index, written) in spec.identity.permissions.iter().enumerate() {
            let path = format!("spec.identity.permissions[{index}]");
            let (permission, workspace) = split_permission(written);
            let workspace_id = match workspace {
                None => None,
                Some(workspace) => Some(self.workspace_id(&path, workspace).await?),
            };
            let held = match &workspace_id {
                None => actor.can(permission),
                Some(id) => actor.can_in(permission, id),
            };
            if !held {
                missing.push(written.clone());
            }
            grants.push(Grant {
                id: self.new_id(),
                principal_id: principal_id.clone(),
                workspace_id,
                permission: permission.to_owned(),
                created_at: now,
            });
        }
        if !missing.is_empty() {
            return Err(EngineError::new(
                Class::Forbidden,
                Code::PermissionEscalation,
                format!(
                    "the agent {key} would hold {}, which you do not hold yourself: an install grants at most what its installer has",
                    missing.join(", ")
                ),
            )
            .with("missing", json!(missing)));
        }

        // Assigned versions: each published (or published by this apply) and not disabled.
        let mut assignments = Vec::new();
        let mut invoked = Vec::new();
        for (index, (skill, read_only)) in spec.invoked().enumerate() {
            let path = format!("spec.skills.invoke[{index}]");
            let record = self.version_for_agent(&path, skill, planned.skills).await?;
            if record.status == SkillStatus::Disabled {
                return Err(EngineError::new(
                    Class::Invalid,
                    Code::SkillDisabled,
                    format!("{skill} is disabled: an agent is assigned only versions that may be called"),
                )
                .with("path", path)
                .with("value", skill));
            }
            invoked.push(if read_only { format!("{skill} (read-only)") } else { skill.to_owned() });
            assignments.push(Assignment {
                principal_id: principal_id.clone(),
                skill_id: record.id,
                metadata: json!({"agent": key}),
                read_only,
                created_at: now,
            });
        }

        // Task types worked on: each known, and each version's execution assigned.
        let assigned: Vec<&str> = spec.invoked().map(|(skill, _)| skill).collect();
        for (index, task_type) in spec.work.task_types.iter().enumerate() {
            let path = format!("spec.work.taskTypes[{index}]");
            let mut versions = self.store.task_types(Some(task_type), None, 1000).await?;
            versions.extend(planned.task_types.iter().filter(|record| &record.key == task_type).cloned());
            if versions.is_empty() {
                return Err(unknown(&path, task_type, "the task type"));
            }
            for version in &versions {
                let Some(execution) = &version.spec.execution else { continue };
                let skill = execution.reference();
                if !assigned.contains(&skill.as_str()) {
                    return Err(EngineError::new(
                        Class::Invalid,
                        Code::ExecutionSkillNotInvoked,
                        format!(
                            "{task_type}@{} is carried out with {skill}, which the agent is not assigned: add it to spec.skills.invoke",
                            version.version
                        ),
                    )
                    .with("path", path)
                    .with("taskType", task_type.as_str())
                    .with("skill", skill)
                    .with("expected", "spec.skills.invoke"));
                }
            }
        }
        if let Some(requests) = &spec.requests {
            self.workspace_id("spec.requests.workspace", &requests.workspace).await?;
        }

        // An executor's allow-list, by the rules of `POST /principals/{name}/executor-allowance`.
        let allowance = match spec.identity.kind {
            AgentKind::Agent => None,
            AgentKind::Executor => {
                let wanted = ExecutorAllowance {
                    protocols: spec.skills.protocols.clone(),
                    local: spec.skills.local.clone(),
                    http_origins: spec.skills.http_origins.clone(),
                    mcp_origins: spec.skills.mcp_origins.clone(),
                    audiences: spec.skills.audiences.clone(),
                };
                let kept = crate::invocations::checked_allowance(&wanted, Some("spec.skills"))?;
                Some(kept)
            }
        };

        if let (Some(agent), Some(found)) = (&existing, &principal)
            && agent.spec == *spec
            && agent.package_key.as_deref() == Some(package)
            && self.holds_exactly(found, &grants, &assignments, allowance.as_ref()).await?
        {
            return Ok(None);
        }
        let kind = principal_kind(spec.identity.kind);
        let new_principal = principal.is_none().then(|| Principal {
            id: principal_id.clone(),
            kind,
            name: key.clone(),
            display_name: spec.display_name.clone().unwrap_or_default(),
            created_at: now,
            disabled_at: None,
        });
        let record = AgentRecord {
            key: key.clone(),
            principal_id: principal_id.clone(),
            kind,
            package_key: Some(package.to_owned()),
            spec: spec.clone(),
            revision: existing.as_ref().map_or(1, |agent| agent.revision + 1),
            created_at: existing.as_ref().map_or(now, |agent| agent.created_at),
            updated_at: now,
        };
        let applied = AgentApplied {
            principal_id: principal_id.clone(),
            kind: kind.as_str().to_owned(),
            revision: record.revision,
            package: package.to_owned(),
            permissions: spec.identity.permissions.clone(),
            invoke: invoked,
            created: new_principal.is_some(),
        };
        let event = self.event(format!("agent:{key}"), &applied, origin);
        Ok(Some(AgentPlan { record, principal: new_principal, grants, assignments, allowance, event }))
    }

    /// The agent named `key` and its principal, when they exist; `409 agent_principal_conflict`
    /// when a principal of that name is not this agent's, or the agent would change its kind.
    async fn agent_principal(&self, key: &str, kind: AgentKind) -> Result<(Option<AgentRecord>, Option<Principal>)> {
        let existing = match self.store.agent(key).await {
            Ok(agent) => Some(agent),
            Err(error) if error.kind() == ErrorKind::NotFound => None,
            Err(error) => return Err(error.into()),
        };
        let principal = match self.store.principal_by_name(key).await {
            Ok(found) => Some(found),
            Err(error) if error.kind() == ErrorKind::NotFound => None,
            Err(error) => return Err(error.into()),
        };
        let conflict = |message: String| {
            EngineError::new(Class::Conflict, Code::AgentPrincipalConflict, message)
                .with("path", "key")
                .with("value", key)
        };
        match (&existing, &principal) {
            (None, Some(_)) => Err(conflict(format!(
                "a principal named {key} exists that no agent document made: name the agent otherwise"
            ))),
            (Some(agent), Some(found)) if agent.principal_id != found.id => {
                Err(conflict(format!("the agent {key} belongs to another principal")))
            }
            (Some(agent), _) if agent.kind != principal_kind(kind) => Err(conflict(format!(
                "the agent {key} is an {} and stays one: declare an {} under another key",
                agent.kind,
                kind.as_str()
            ))),
            _ => Ok((existing, principal)),
        }
    }

    /// The id of the workspace `key`; `422 unknown_reference {path, value}` when there is none.
    async fn workspace_id(&self, path: &str, key: &str) -> Result<String> {
        match self.store.workspace_by_key(key).await {
            Ok(found) => Ok(found.id),
            Err(error) if error.kind() == ErrorKind::NotFound => Err(unknown(path, key, "the workspace")
                .with("hint", "create it first: skill-core workspace create --key <key>")),
            Err(error) => Err(error.into()),
        }
    }

    /// The version `written` (`name@version`) names, from the catalog or this apply.
    async fn version_for_agent(&self, path: &str, written: &str, planned: &[SkillRecord]) -> Result<SkillRecord> {
        let (name, version) = written.split_once('@').unwrap_or((written, ""));
        if let Some(record) = planned.iter().find(|record| record.name == name && record.version == version) {
            return Ok(record.clone());
        }
        match self.store.skill_version(name, version).await {
            Ok(entry) => Ok(entry.skill),
            Err(error) if error.kind() == ErrorKind::NotFound => Err(unknown(path, written, "the skill version")),
            Err(error) => Err(error.into()),
        }
    }

    /// Whether `principal` holds exactly these grants, assignments and allow-list now.
    async fn holds_exactly(
        &self,
        principal: &Principal,
        grants: &[Grant],
        assignments: &[Assignment],
        allowance: Option<&skill_store::records::ExecutorAllowance>,
    ) -> Result<bool> {
        let held: BTreeSet<(String, Option<String>)> = self
            .store
            .grants(&principal.id)
            .await?
            .into_iter()
            .map(|grant| (grant.permission, grant.workspace_id))
            .collect();
        let wanted: BTreeSet<(String, Option<String>)> =
            grants.iter().map(|grant| (grant.permission.clone(), grant.workspace_id.clone())).collect();
        let assigned: BTreeSet<(String, bool)> = self
            .store
            .assignments(&principal.id)
            .await?
            .into_iter()
            .map(|assignment| (assignment.skill_id, assignment.read_only))
            .collect();
        let wanted_assigned: BTreeSet<(String, bool)> =
            assignments.iter().map(|assignment| (assignment.skill_id.clone(), assignment.read_only)).collect();
        let allowed = self.store.executor_allowance(&principal.id).await?;
        Ok(held == wanted && assigned == wanted_assigned && allowed.as_ref() == allowance)
    }

    /// Every agent (`org.read`).
    pub async fn agents(&self, actor: &Actor) -> Result<Vec<AgentOut>> {
        actor.require("org.read")?;
        let mut out = Vec::new();
        for agent in self.store.agents().await? {
            out.push(self.agent_out(agent).await?);
        }
        Ok(out)
    }

    /// One agent (`org.read`).
    pub async fn agent(&self, actor: &Actor, key: &str) -> Result<AgentOut> {
        actor.require("org.read")?;
        let agent = self.agent_record(key).await?;
        self.agent_out(agent).await
    }

    async fn agent_record(&self, key: &str) -> Result<AgentRecord> {
        self.store.agent(key).await.map_err(|error| match error.kind() {
            ErrorKind::NotFound => EngineError::not_found(&format!("agent {key}"))
                .with("hint", "agents are declared by packages (agents/*.yaml) and installed with them"),
            _ => error.into(),
        })
    }

    async fn agent_out(&self, agent: AgentRecord) -> Result<AgentOut> {
        let principal = self.store.principal(&agent.principal_id).await?;
        Ok(AgentOut {
            kind: if agent.kind == PrincipalKind::Executor { AgentKind::Executor } else { AgentKind::Agent },
            key: agent.key,
            principal_id: agent.principal_id,
            package: agent.package_key,
            revision: agent.revision,
            spec: agent.spec,
            disabled: principal.disabled_at.is_some(),
            created_at: view_time(&agent.created_at),
            updated_at: view_time(&agent.updated_at),
        })
    }

    /// Issues a token for the agent `key`'s principal (`org.manage`; the operator's own command
    /// passes no actor). The token acts with exactly what the agent's document grants.
    pub async fn issue_agent_token(
        &self,
        actor: Option<&Actor>,
        key: &str,
        request: &AgentTokenRequest,
        origin: &Origin,
    ) -> Result<AgentTokenOut> {
        if let Some(actor) = actor {
            actor.require("org.manage")?;
        }
        let expires_at = match request.expires_in_days {
            None => None,
            Some(days) if (1..=crate::MAX_TOKEN_DAYS).contains(&days) => {
                Some(self.now() + chrono::Duration::days(i64::from(days)))
            }
            Some(_) => {
                return Err(EngineError::new(
                    Class::Invalid,
                    Code::InvalidExpiry,
                    format!("expiresInDays is 1 to {}", crate::MAX_TOKEN_DAYS),
                )
                .with("field", "expiresInDays"));
            }
        };
        let agent = self.agent_record(key).await?;
        let principal = self.store.principal(&agent.principal_id).await?;
        // A token acts with the agent's permissions: whoever asks for one holds them all.
        if let Some(actor) = actor {
            let mut missing = Vec::new();
            for grant in self.store.grants(&principal.id).await? {
                let held = match &grant.workspace_id {
                    None => actor.can(&grant.permission),
                    Some(workspace) => actor.can_in(&grant.permission, workspace),
                };
                if !held {
                    missing.push(grant.permission);
                }
            }
            if !missing.is_empty() {
                return Err(EngineError::new(
                    Class::Forbidden,
                    Code::PermissionEscalation,
                    format!(
                        "a token of the agent {key} would act with {}, which you do not hold yourself",
                        missing.join(", ")
                    ),
                )
                .with("missing", json!(missing)));
            }
        }
        if principal.disabled_at.is_some() {
            return Err(EngineError::new(
                Class::Conflict,
                Code::PrincipalDisabled,
                format!("the agent {key}'s principal is disabled: no token is issued for it"),
            ));
        }
        // An agent acts for a person; an executor runs what it is given, for no one.
        let operator = match principal.kind {
            PrincipalKind::Agent => Some(self.operator_of_token(actor, request.operated_by.as_deref()).await?),
            _ => None,
        };
        let issued = self.mint_token(principal, &request.label, expires_at, operator.as_ref(), actor, origin).await?;
        Ok(AgentTokenOut {
            token: issued.token,
            token_id: issued.record.id,
            agent: agent.key,
            principal_id: agent.principal_id,
            expires_at: issued.record.expires_at.as_ref().map(view_time),
            operated_by: operator.map(|person| skill_api::OperatorOut { id: person.id, name: person.name }),
        })
    }
}

fn principal_kind(kind: AgentKind) -> PrincipalKind {
    match kind {
        AgentKind::Agent => PrincipalKind::Agent,
        AgentKind::Executor => PrincipalKind::Executor,
    }
}
