//! What the MCP gateway asks of the domain: the tools a principal may call, a call through the
//! gateway, and — the reason the gateway exists — an agent's external write without a basis
//! turned into a **request**: a task of the built-in type `agent-request` in the workspace the
//! agent's document names, with a gate approval requested for exactly that call (version and
//! inputs). A person decides it; approved, the core makes exactly that call once, as the agent
//! (its assignment and permissions checked again) with the approval as its basis. Rejected,
//! withdrawn or expired, nothing is called.
//!
//! Every move of a request is one transaction with its event, computed from the rows and written
//! only if the request has not moved meanwhile, so any number of cores may advance requests and
//! none makes a call twice (the call's idempotency key is the request's, and an approval is spent
//! once).

use skill_contract::codes::Code;
use std::collections::BTreeSet;
use std::time::Duration;

use serde_json::{Map, Value, json};
use skill_api::events::{AgentRequestCreated, AgentRequestEnded, AgentRequestInvoked, TaskClosed, TaskCreated};
use skill_api::{
    AgentRequestOut, ApprovalStatus, CallStatus, ClientInfo, InvocationOut, InvokeRequest, Lifecycle, PrincipalKind,
    RequestStatus, SkillStatus, TaskStatus, TaskTypeSpec,
};
use skill_store::ErrorKind;
use skill_store::records::{
    AgentRequestRecord, ApprovalRecord, Event, SkillFilter, SkillRecord, TaskRecord, TaskTypeRecord, Time, WorkChange,
};

use crate::actor::Actor;
use crate::basis::Internal;
use crate::catalog::view_time;
use crate::error::{Class, EngineError, Result, written};
use crate::{Engine, Origin};

pub use crate::work::REQUEST_TYPE;
const REQUEST_TYPE_VERSION: &str = "1";
/// The most tools a principal is shown.
pub const MAX_TOOLS: usize = 1000;
/// Requests one pass of the worker looks at.
const BATCH: i64 = 100;
/// The most requests one agent may have waiting for a person at once.
pub const MAX_OPEN_REQUESTS: usize = 100;
/// The most requests an agent makes in an hour, withdrawn ones included: a person's workspace is
/// not a place to flood.
pub const MAX_REQUESTS_PER_HOUR: i64 = 500;

/// A tool of the gateway: a leaf version the principal may call.
#[derive(Debug, Clone)]
pub struct GatewayTool {
    pub skill: SkillRecord,
}

/// What a gateway call became.
#[derive(Debug, Clone)]
pub enum GatewayCall {
    /// A call was queued (or an earlier one with the same key answered).
    Called(Box<InvocationOut>),
    /// The agent's write waits for a person.
    Requested(Box<AgentRequestOut>),
}

/// Whether `skill` writes to the outside world.
fn writes(skill: &SkillRecord) -> bool {
    crate::basis::writes(skill.side_effects)
}

/// Whether a version can be called at all (a leaf, active, with an invocable protocol).
fn callable(skill: &SkillRecord) -> bool {
    crate::catalog::invocable(skill).is_ok()
}

impl Engine {
    /// The tools `actor` may call, in reference order: for an agent, the leaf versions its
    /// assignments grant (directly, or as a tool of an assigned composite) — a read-only
    /// assignment grants only what does not write; for anyone else holding `skills.invoke`, the
    /// newest callable version of every skill.
    pub async fn gateway_tools(&self, actor: &Actor) -> Result<Vec<GatewayTool>> {
        actor.require("skills.invoke")?;
        let mut tools: Vec<SkillRecord> = Vec::new();
        let mut seen = BTreeSet::new();
        if actor.principal().kind == PrincipalKind::Agent {
            for assignment in self.store.assignments(actor.id()).await? {
                let assigned = self.store.skill(&assignment.skill_id).await?.skill;
                let leaves = if assigned.composition.is_some() {
                    let Ok((_, resolution)) = self.resolve_record(&assigned).await else { continue };
                    let mut leaves = Vec::new();
                    for tool in resolution.tools().iter().filter(|tool| tool.is_skill()) {
                        if let Ok(entry) = self.find(&tool.skill().to_string()).await {
                            leaves.push(entry.skill);
                        }
                    }
                    leaves
                } else {
                    vec![assigned]
                };
                for leaf in leaves {
                    if callable(&leaf) && !(assignment.read_only && writes(&leaf)) && seen.insert(leaf.id.clone()) {
                        tools.push(leaf);
                    }
                }
            }
        } else {
            // Publication order: a later version of a name replaces an earlier one.
            let mut newest: std::collections::BTreeMap<String, SkillRecord> = std::collections::BTreeMap::new();
            let mut after = None;
            loop {
                let filter = SkillFilter {
                    status: Some(SkillStatus::Active),
                    after: after.clone(),
                    limit: 500,
                    ..SkillFilter::default()
                };
                let page = self.store.skills(&filter).await?;
                let Some(last) = page.last() else { break };
                after = Some(last.skill.id.clone());
                for entry in page.into_iter().filter(|entry| callable(&entry.skill)) {
                    newest.insert(entry.skill.name.clone(), entry.skill);
                }
            }
            tools.extend(newest.into_values());
        }
        tools.sort_by(|a, b| (a.name.as_str(), a.version.as_str()).cmp(&(b.name.as_str(), b.version.as_str())));
        tools.truncate(MAX_TOOLS);
        Ok(tools.into_iter().map(|skill| GatewayTool { skill }).collect())
    }

    /// The tool `name` (a skill's name with `/` as `.`) `actor` may call, if any: for an agent,
    /// among its assignments; for anyone else, the newest callable version of that name —
    /// without listing every tool.
    pub async fn gateway_tool(&self, actor: &Actor, name: &str) -> Result<Option<GatewayTool>> {
        let named = |skill: &SkillRecord| skill.name.replace('/', ".") == name;
        if actor.principal().kind == PrincipalKind::Agent {
            return Ok(self.gateway_tools(actor).await?.into_iter().find(|tool| named(&tool.skill)));
        }
        actor.require("skills.invoke")?;
        // `ns/name` is shown as `ns.name`: each dot may stand for the one slash.
        let mut candidates = vec![name.to_owned()];
        candidates.extend(name.match_indices('.').map(|(at, _)| format!("{}/{}", &name[..at], &name[at + 1..])));
        let mut found: Option<SkillRecord> = None;
        for candidate in candidates {
            let filter = SkillFilter {
                name: Some(candidate),
                status: Some(SkillStatus::Active),
                limit: 500,
                ..SkillFilter::default()
            };
            for entry in self.store.skills(&filter).await?.into_iter().filter(|entry| callable(&entry.skill)) {
                if named(&entry.skill) && found.as_ref().is_none_or(|kept| kept.id < entry.skill.id) {
                    found = Some(entry.skill);
                }
            }
        }
        Ok(found.map(|skill| GatewayTool { skill }))
    }

    /// A call of `skill` through the gateway, with every check of a direct call. An agent's
    /// external write without a basis becomes a request (when its document names where requests
    /// go); anyone else's is refused as a direct call is.
    pub async fn gateway_call(
        &self,
        actor: &Actor,
        skill: &SkillRecord,
        inputs: Map<String, Value>,
        idempotency_key: Option<String>,
        client: &ClientInfo,
        request_id: Option<&str>,
    ) -> Result<GatewayCall> {
        let reference = format!("{}@{}", skill.name, skill.version);
        let agent = actor.principal().kind == PrincipalKind::Agent;
        // The key is checked first, as a direct call checks it: the core's own keys are refused
        // whichever way the call goes on.
        let key = crate::invocations::callers_key(idempotency_key.as_deref())?;
        if !(agent && writes(skill)) {
            let request = InvokeRequest { inputs: Some(inputs), idempotency_key, ..InvokeRequest::default() };
            let invoked = self.invoke(actor, &reference, &request, request_id).await?;
            return Ok(GatewayCall::Called(Box::new(invoked.invocation)));
        }
        // Every check a direct call meets, in its order, up to the basis: a call without one
        // fails there (`no_basis`) and nothing is written. Any other refusal is the answer.
        let probe = InvokeRequest {
            inputs: Some(inputs.clone()),
            idempotency_key: Some(format!("gateway-probe:{}", self.new_id())),
            ..InvokeRequest::default()
        };
        match self.invoke(actor, &reference, &probe, request_id).await {
            Ok(invoked) => {
                // Never without a task and an approval; kept in case a basis appears here.
                return Ok(GatewayCall::Called(Box::new(invoked.invocation)));
            }
            // Without a task, a run or an approval, the only refusal of a basis there is
            // `no_basis`: the code says it.
            Err(error) if error.is(Code::SkillSideEffectNotAuthorized) => {}
            Err(error) => return Err(error),
        }
        // The agent's key names one request: the same key again answers it.
        if let Some(key) = &key
            && let Some(existing) = self.store.agent_request_by_key(actor.id(), key).await?
        {
            return self.keyed_request(actor, skill, &inputs, existing).await;
        }
        let request = match self.create_request(actor, skill, inputs.clone(), client, key.clone(), request_id).await? {
            Some(request) => request,
            // Two first requests with one key: the other one won.
            None => {
                let key = key.unwrap_or_default();
                let existing = self.store.agent_request_by_key(actor.id(), &key).await?;
                let existing = existing.ok_or_else(crate::error::busy)?;
                return self.keyed_request(actor, skill, &inputs, existing).await;
            }
        };
        Ok(GatewayCall::Requested(Box::new(request)))
    }

    /// The answer to an agent's key used before: its request when it asked for the same call,
    /// `409 idempotency_key_reuse` otherwise.
    async fn keyed_request(
        &self,
        actor: &Actor,
        skill: &SkillRecord,
        inputs: &Map<String, Value>,
        existing: AgentRequestRecord,
    ) -> Result<GatewayCall> {
        let same = existing.skill_id == skill.id
            && existing.inputs == skill_contract::export::canonical(&Value::Object(inputs.clone()));
        if !same {
            return Err(EngineError::new(
                Class::Conflict,
                Code::IdempotencyKeyReuse,
                "this idempotency key already names another request: use a new key for a new call",
            )
            .with("requestId", existing.id));
        }
        let id = existing.id.clone();
        Ok(GatewayCall::Requested(Box::new(self.agent_request(actor, &id).await?)))
    }

    /// The request task type, published by the core the first time it is needed.
    async fn request_type(&self) -> Result<TaskTypeRecord> {
        match self.store.task_type_version(REQUEST_TYPE, REQUEST_TYPE_VERSION).await {
            Ok(found) => return Ok(found),
            Err(error) if error.kind() != ErrorKind::NotFound => return Err(error.into()),
            Err(_) => {}
        }
        let fields = json!({
            "agent": {"type": "string", "description": "The agent that asks."},
            "skill": {"type": "string", "description": "The version it asks to call (name@version)."},
            "inputs": {"type": "object", "description": "Exactly the inputs of the call."},
            "client": {"type": "string", "description": "The MCP client the agent asked through."}
        });
        let display_name = "An agent asks to write";
        let description = "An agent asked for an external write it has no basis for: approving the gate makes exactly this call once, as the agent; rejecting it, or letting it expire, calls nothing.";
        let spec = TaskTypeSpec {
            display_name: Some(display_name.to_owned()),
            description: Some(description.to_owned()),
            custom_fields: fields.as_object().cloned().unwrap_or_default(),
            ..TaskTypeSpec::new(REQUEST_TYPE_VERSION)
        };
        let record = TaskTypeRecord {
            id: self.new_id(),
            key: REQUEST_TYPE.to_owned(),
            version: REQUEST_TYPE_VERSION.to_owned(),
            display_name: display_name.to_owned(),
            description: description.to_owned(),
            spec,
            created_by: None,
            created_at: self.now(),
        };
        let event = self.task_type_event(&record, &Origin::default());
        match self.store.write_work(&[WorkChange::InsertTaskType(record.clone())], &[event]).await {
            Ok(()) => Ok(record),
            // Published by another call meanwhile.
            Err(error) if error.kind() == ErrorKind::Conflict => {
                Ok(self.store.task_type_version(REQUEST_TYPE, REQUEST_TYPE_VERSION).await?)
            }
            Err(error) => Err(error.into()),
        }
    }

    /// The request for `actor`'s call of `skill` with `inputs`: its task, its gate approval for
    /// exactly that call, and the request, in one transaction. `None`: another request with its
    /// key was made first.
    async fn create_request(
        &self,
        actor: &Actor,
        skill: &SkillRecord,
        inputs: Map<String, Value>,
        client: &ClientInfo,
        key: Option<String>,
        request_id: Option<&str>,
    ) -> Result<Option<AgentRequestOut>> {
        let open = self.store.agent_requests_of(actor.id(), true, MAX_OPEN_REQUESTS as i64 + 1).await?;
        if open.len() >= MAX_OPEN_REQUESTS {
            return Err(EngineError::new(
                Class::Conflict,
                Code::TooManyRequests,
                format!(
                    "{} has {MAX_OPEN_REQUESTS} requests waiting for a person: wait for their decisions, or withdraw some",
                    actor.principal().name
                ),
            )
            .with("open", open.len()));
        }
        let lately = self.store.agent_requests_since(actor.id(), self.now() - chrono::Duration::hours(1)).await?;
        if lately >= MAX_REQUESTS_PER_HOUR {
            return Err(EngineError::new(
                Class::Conflict,
                Code::TooManyRequests,
                format!(
                    "{} made {lately} requests in the last hour, the most an agent makes: wait before asking again",
                    actor.principal().name
                ),
            )
            .with("lastHour", lately));
        }
        let reference = format!("{}@{}", skill.name, skill.version);
        let Some(agent) = self.store.agent_of(actor.id()).await? else {
            return Err(no_requests(&actor.principal().name, &reference));
        };
        let Some(requests) = agent.spec.requests.clone() else {
            return Err(no_requests(&agent.key, &reference));
        };
        let workspace = match self.store.workspace_by_key(&requests.workspace).await {
            Ok(found) => found,
            Err(error) if error.kind() == ErrorKind::NotFound => {
                return Err(EngineError::new(
                    Class::Conflict,
                    Code::RequestWorkspaceMissing,
                    format!(
                        "the agent {}'s requests go to the workspace {}, which does not exist: ask an operator",
                        agent.key, requests.workspace
                    ),
                )
                .with("workspace", requests.workspace.clone()));
            }
            Err(error) => return Err(error.into()),
        };
        let task_type = self.request_type().await?;
        let client = ClientInfo { name: shown(&client.name, 100), version: shown(&client.version, 50) };
        let shown_client = if client.name.is_empty() {
            "an MCP client".to_owned()
        } else {
            format!("the MCP client that calls itself \"{}\"", format!("{} {}", client.name, client.version).trim())
        };
        let now = self.now();
        let inputs = skill_contract::export::canonical(&Value::Object(inputs));
        // The person operating the agent set the request in motion: never its decider.
        let request_id_new = self.new_id();
        let operated: Vec<skill_api::Initiator> =
            actor.initiators_of(skill_api::InitiatorRole::Created, &format!("request:{request_id_new}"));
        if operated.is_empty() {
            return Err(EngineError::new(
                Class::Invalid,
                Code::OperatorRequired,
                format!(
                    "{} acts for nobody: an agent's requests are made with a token that names the person operating it",
                    actor.principal().name
                ),
            ));
        }
        let task_id = self.new_id();
        let task = TaskRecord {
            initiators: skill_api::four_eyes::carried(&operated, &format!("task:{task_id}"), &[]),
            id: task_id,
            workspace_id: workspace.id.clone(),
            task_type_id: task_type.id.clone(),
            title: format!("{} asks to call {reference}", agent.key).chars().take(500).collect(),
            custom_fields: json!({"agent": agent.key, "skill": reference, "inputs": inputs, "client": shown_client}),
            status: TaskStatus::Open,
            created_by: actor.id().to_owned(),
            row_version: 1,
            created_at: now,
            updated_at: now,
            closed_at: None,
            close_reason: None,
        };
        let origin = Origin::of(actor, request_id);
        let created = TaskCreated {
            workspace_id: task.workspace_id.clone(),
            task_type_id: task_type.id.clone(),
            task_type: format!("{REQUEST_TYPE}@{REQUEST_TYPE_VERSION}"),
            initiators: task.initiators.clone(),
        };
        let task_event = self.event(format!("task:{}", task.id), &created, &origin);
        let comment = format!(
            "The agent {} asks, through {shown_client}, to call {reference} ({}, risk {}) with the inputs below. Approving makes exactly this call once, as the agent; rejecting calls nothing.",
            agent.key,
            skill.side_effects.map_or("none", |s| s.as_str()),
            skill.risk_level.map_or("unknown", |r| r.as_str()),
        );
        let (approval, approval_event) = self.new_approval(
            actor,
            &task,
            true,
            Some(&comment),
            Some((skill.id.clone(), inputs.clone())),
            request_id,
        )?;
        let expires_at =
            now + chrono::Duration::seconds(i64::try_from(requests.expires_in_seconds()).unwrap_or(86_400));
        let request = AgentRequestRecord {
            id: request_id_new,
            agent_principal_id: actor.id().to_owned(),
            skill_id: skill.id.clone(),
            inputs,
            client_name: client.name.clone(),
            client_version: client.version.clone(),
            idempotency_key: key,
            task_id: task.id.clone(),
            approval_id: approval.id.clone(),
            status: RequestStatus::Pending,
            invocation_id: None,
            expires_at,
            row_version: 1,
            created_at: now,
            updated_at: now,
            ended_at: None,
            initiators: operated,
        };
        let asked = AgentRequestCreated {
            agent_principal_id: actor.id().to_owned(),
            skill: reference,
            skill_id: skill.id.clone(),
            task_id: task.id.clone(),
            approval_id: approval.id.clone(),
            client_name: client.name,
            client_version: client.version,
            expires_at: view_time(&expires_at),
            initiators: request.initiators.clone(),
        };
        let request_event = self.event(format!("agent_request:{}", request.id), &asked, &origin);
        let changes = [
            WorkChange::InsertTask(task),
            WorkChange::InsertApproval(approval),
            WorkChange::InsertRequest(request.clone()),
        ];
        match self.store.write_work(&changes, &[task_event, approval_event, request_event]).await {
            Ok(()) => {}
            Err(error) if error.kind() == ErrorKind::Conflict && request.idempotency_key.is_some() => return Ok(None),
            Err(error) => return Err(error.into()),
        }
        tracing::info!(request = %request.id, agent = %agent.key, skill = %asked_skill(skill), "an agent asks for a write");
        self.request_out(request, &agent.key, None).await.map(Some)
    }

    /// An agent's request: its agent sees it, and so do holders of `org.read` and whoever reads
    /// its task; `404` to anyone else.
    pub async fn agent_request(&self, actor: &Actor, id: &str) -> Result<AgentRequestOut> {
        let request = self.visible_request(actor, id).await?;
        let agent = self.principal_name(&request.agent_principal_id).await?;
        let call = match &request.invocation_id {
            Some(call) => Some(self.invocation(&self.agent_actor(&request.agent_principal_id).await?, call).await?),
            None => None,
        };
        self.request_out(request, &agent, call).await
    }

    /// The requests of the agent `actor`, newest first (open ones only when `open_only`).
    pub async fn own_requests(&self, actor: &Actor, open_only: bool, limit: u32) -> Result<Vec<AgentRequestOut>> {
        let limit = i64::from(limit.clamp(1, 200));
        let mut out = Vec::new();
        for request in self.store.agent_requests_of(actor.id(), open_only, limit).await? {
            out.push(self.request_out(request, &actor.principal().name, None).await?);
        }
        Ok(out)
    }

    /// The requests of the agent `key`, newest first, at most `limit` (`org.read`).
    pub async fn requests_of_agent(
        &self,
        actor: &Actor,
        key: &str,
        open_only: bool,
        limit: u32,
    ) -> Result<Vec<AgentRequestOut>> {
        actor.require("org.read")?;
        let agent = match self.store.agent(key).await {
            Ok(agent) => agent,
            Err(error) if error.kind() == ErrorKind::NotFound => {
                return Err(EngineError::not_found(&format!("agent {key}")));
            }
            Err(error) => return Err(error.into()),
        };
        let mut out = Vec::new();
        for request in
            self.store.agent_requests_of(&agent.principal_id, open_only, i64::from(limit.clamp(1, 200))).await?
        {
            out.push(self.request_out(request, key, None).await?);
        }
        Ok(out)
    }

    async fn visible_request(&self, actor: &Actor, id: &str) -> Result<AgentRequestRecord> {
        let missing = || EngineError::not_found(&format!("request {id}"));
        let request = match self.store.agent_request(id).await {
            Ok(found) => found,
            Err(error) if error.kind() == ErrorKind::NotFound => return Err(missing()),
            Err(error) => return Err(error.into()),
        };
        if request.agent_principal_id == actor.id() {
            return Ok(request);
        }
        // An agent sees its own requests only, whatever it may read.
        if actor.principal().kind == PrincipalKind::Agent {
            return Err(missing());
        }
        if actor.can("org.read") {
            return Ok(request);
        }
        let task = self.store.task(&request.task_id).await?;
        if actor.can_in("tasks.read", &task.workspace_id) { Ok(request) } else { Err(missing()) }
    }

    async fn request_out(
        &self,
        request: AgentRequestRecord,
        agent: &str,
        call: Option<InvocationOut>,
    ) -> Result<AgentRequestOut> {
        let skill = self.store.skill(&request.skill_id).await?.skill;
        let decision = self.store.approval(&request.approval_id).await?.status;
        Ok(AgentRequestOut {
            decision,
            agent: agent.to_owned(),
            agent_principal_id: request.agent_principal_id,
            skill: format!("{}@{}", skill.name, skill.version),
            skill_id: request.skill_id,
            inputs: request.inputs,
            client: ClientInfo { name: request.client_name, version: request.client_version },
            status: request.status,
            task_id: request.task_id,
            approval_id: request.approval_id,
            invocation_id: request.invocation_id,
            call: call.map(Box::new),
            expires_at: view_time(&request.expires_at),
            created_at: view_time(&request.created_at),
            ended_at: request.ended_at.as_ref().map(view_time),
            id: request.id,
        })
    }

    /// The agent withdraws its pending request: the approval is withdrawn, the task cancelled,
    /// nothing is called. `409 request_decided` once a person decided it.
    pub async fn withdraw_agent_request(
        &self,
        actor: &Actor,
        id: &str,
        request_id: Option<&str>,
    ) -> Result<AgentRequestOut> {
        loop {
            let request = self.visible_request(actor, id).await?;
            if request.agent_principal_id != actor.id() {
                return Err(EngineError::new(
                    Class::Forbidden,
                    Code::PermissionDenied,
                    "only the agent that asked withdraws its request",
                ));
            }
            if request.status != RequestStatus::Pending {
                return Err(EngineError::new(
                    Class::Conflict,
                    Code::RequestDecided,
                    format!("the request is {} already: only a pending one is withdrawn", request.status),
                )
                .with("status", request.status));
            }
            let approval = self.store.approval(&request.approval_id).await?;
            if approval.status != ApprovalStatus::Pending {
                // Decided meanwhile: the worker moves the request; say so.
                return Err(EngineError::new(
                    Class::Conflict,
                    Code::RequestDecided,
                    "a person decided the request meanwhile",
                ));
            }
            let origin = Origin::of(actor, request_id);
            let (changes, events) = self
                .close_request(
                    &request,
                    Some(&approval),
                    RequestStatus::Withdrawn,
                    Some(actor.id()),
                    "request_withdrawn",
                    &origin,
                )
                .await?;
            if written(self.store.write_work(&changes, &events).await)? {
                return self.agent_request(actor, id).await;
            }
        }
    }

    /// One pass over the open requests at `now`: approved ones called, decided or expired ones
    /// ended, ended calls noted. Answers how many requests moved.
    pub async fn run_agent_requests(&self, now: Time) -> Result<usize> {
        let mut moved = 0;
        for request in self.store.movable_agent_requests(now, BATCH).await? {
            match self.advance_request(&request, now).await {
                Ok(true) => moved += 1,
                Ok(false) => {}
                Err(error) => {
                    tracing::warn!(request = %request.id, error = %error, "advancing a request failed; it is tried again")
                }
            }
        }
        Ok(moved)
    }

    async fn advance_request(&self, request: &AgentRequestRecord, now: Time) -> Result<bool> {
        let system = Origin::default();
        match request.status {
            RequestStatus::Pending => {
                let approval = self.store.approval(&request.approval_id).await?;
                let task = self.store.task(&request.task_id).await?;
                let agent = self.store.principal(&request.agent_principal_id).await?;
                // Nobody can decide it any more: its task was closed, or its agent disabled. (One
                // an agent made for a person disabled since is withdrawn by the disable, and never
                // called: `call_request`.)
                let gone = if task.status.is_terminal() {
                    Some("task_closed")
                } else if agent.disabled_at.is_some() {
                    Some("principal_disabled")
                } else {
                    None
                };
                if let (Some(reason), ApprovalStatus::Pending) = (gone, approval.status) {
                    let (changes, events) = self
                        .close_request(request, Some(&approval), RequestStatus::Withdrawn, None, reason, &system)
                        .await?;
                    return written(self.store.write_work(&changes, &events).await);
                }
                let (changes, events) = match approval.status {
                    ApprovalStatus::Approved => return self.call_request(request, &approval).await,
                    ApprovalStatus::Rejected => {
                        self.close_request(request, None, RequestStatus::Rejected, None, "request_rejected", &system)
                            .await?
                    }
                    ApprovalStatus::Withdrawn => {
                        self.close_request(request, None, RequestStatus::Withdrawn, None, "request_withdrawn", &system)
                            .await?
                    }
                    ApprovalStatus::Pending if now >= request.expires_at => {
                        self.close_request(
                            request,
                            Some(&approval),
                            RequestStatus::Expired,
                            None,
                            "request_expired",
                            &system,
                        )
                        .await?
                    }
                    ApprovalStatus::Pending => return Ok(false),
                };
                written(self.store.write_work(&changes, &events).await)
            }
            RequestStatus::Approved => {
                let Some(call_id) = &request.invocation_id else { return Ok(false) };
                let call = self.store.invocation(call_id).await?;
                let ended = match call.status {
                    CallStatus::Succeeded => RequestStatus::Succeeded,
                    CallStatus::Failed | CallStatus::Cancelled => RequestStatus::Failed,
                    _ => return Ok(false),
                };
                let reason = call.error.as_ref().map(|error| error.code.clone());
                let (changes, events) = self
                    .close_request(request, None, ended, None, reason.as_deref().unwrap_or("request_done"), &system)
                    .await?;
                written(self.store.write_work(&changes, &events).await)
            }
            _ => Ok(false),
        }
    }

    /// The approved request's call, made as the agent with the approval as its basis, once (the
    /// key is the request's); a call that cannot be made ends the request as failed.
    async fn call_request(&self, request: &AgentRequestRecord, approval: &ApprovalRecord) -> Result<bool> {
        let system = Origin::default();
        // A decision after the request expired decides nothing: it expired.
        if approval.decided_at.is_some_and(|at| at > request.expires_at) {
            let (changes, events) =
                self.close_request(request, None, RequestStatus::Expired, None, "request_expired", &system).await?;
            return written(self.store.write_work(&changes, &events).await);
        }
        // A decision by a person disabled since is not carried out.
        if let Some(decider) = &approval.decided_by
            && self.store.principal(decider).await?.disabled_at.is_some()
        {
            let (changes, events) =
                self.close_request(request, None, RequestStatus::Failed, None, "decider_disabled", &system).await?;
            return written(self.store.write_work(&changes, &events).await);
        }
        // Nor a request whose agent acted for a person disabled since.
        if self.operator_disabled(request).await? {
            let (changes, events) =
                self.close_request(request, None, RequestStatus::Failed, None, "operator_disabled", &system).await?;
            return written(self.store.write_work(&changes, &events).await);
        }
        let skill = self.store.skill(&request.skill_id).await?.skill;
        let reference = format!("{}@{}", skill.name, skill.version);
        let made = match self.agent_actor(&request.agent_principal_id).await {
            Ok(agent) => {
                let call = InvokeRequest {
                    inputs: request.inputs.as_object().cloned(),
                    idempotency_key: Some(format!("agent-request:{}", request.id)),
                    task_id: Some(request.task_id.clone()),
                    approval_id: Some(request.approval_id.clone()),
                    ..InvokeRequest::default()
                };
                self.invoke_by(&agent, &reference, &call, None, Some(Internal::Request)).await
            }
            Err(error) => Err(error),
        };
        let (changes, events) = match made {
            Ok(invoked) => {
                let mut next = request.clone();
                next.status = RequestStatus::Approved;
                next.invocation_id = Some(invoked.invocation.id.clone());
                next.row_version += 1;
                next.updated_at = self.now();
                let data = AgentRequestInvoked {
                    invocation_id: invoked.invocation.id.clone(),
                    approval_id: approval.id.clone(),
                    decided_by: approval.decided_by.clone(),
                };
                let event = self.event(format!("agent_request:{}", request.id), &data, &system);
                tracing::info!(request = %request.id, call = %invoked.invocation.id, skill = %reference, "an approved request's call was made");
                (vec![WorkChange::UpdateRequest(next)], vec![event])
            }
            Err(error) if error.class == Class::Unavailable || error.class == Class::Internal => return Err(error),
            Err(error) => {
                tracing::warn!(request = %request.id, code = %error.code, reason = %error.message, "an approved request's call could not be made");
                self.close_request(request, None, RequestStatus::Failed, None, error.code.as_str(), &system).await?
            }
        };
        written(self.store.write_work(&changes, &events).await)
    }

    /// The writes that end `request` as `status`: the request, its task closed (with every other
    /// approval still pending on it withdrawn by the core), and — when it was still pending — its
    /// approval withdrawn (by `by`, or by the core).
    async fn close_request(
        &self,
        request: &AgentRequestRecord,
        pending_approval: Option<&ApprovalRecord>,
        status: RequestStatus,
        by: Option<&str>,
        reason: &str,
        origin: &Origin,
    ) -> Result<(Vec<WorkChange>, Vec<Event>)> {
        debug_assert!(RequestStatus::allows(request.status, status) && status.is_terminal());
        let now = self.now();
        let mut changes = Vec::new();
        let mut events = Vec::new();
        if let Some(approval) = pending_approval {
            let (withdrawn, event) = self.withdrawal(approval, by, origin);
            events.push(event);
            changes.push(WorkChange::UpdateApproval(withdrawn));
        }
        let task = self.store.task(&request.task_id).await?;
        if !task.status.is_terminal() {
            // Whatever else waits on the task is withdrawn with it: no one decides a closed task's gate.
            for approval in self.store.approvals(&task.id).await? {
                if approval.status == ApprovalStatus::Pending
                    && pending_approval.is_none_or(|own| own.id != approval.id)
                {
                    let (withdrawn, event) = self.withdrawal(&approval, None, origin);
                    events.push(event);
                    changes.push(WorkChange::UpdateApproval(withdrawn));
                }
            }
            let closed_as = match status {
                RequestStatus::Succeeded => TaskStatus::Done,
                RequestStatus::Failed => TaskStatus::Failed,
                _ => TaskStatus::Cancelled,
            };
            let mut closed = task.clone();
            closed.status = closed_as;
            closed.closed_at = Some(now);
            closed.close_reason = Some(reason.to_owned());
            closed.row_version += 1;
            closed.updated_at = now;
            let data = TaskClosed {
                status: closed_as,
                workspace_id: task.workspace_id.clone(),
                reason: Some(reason.to_owned()),
            };
            events.push(self.event(format!("task:{}", task.id), &data, origin));
            changes.push(WorkChange::UpdateTask(closed));
        }
        let mut next = request.clone();
        next.status = status;
        next.row_version += 1;
        next.updated_at = now;
        next.ended_at = Some(now);
        let data = AgentRequestEnded {
            status,
            invocation_id: request.invocation_id.clone(),
            reason: (status != RequestStatus::Succeeded).then(|| reason.to_owned()),
        };
        events.push(self.event(format!("agent_request:{}", request.id), &data, origin));
        changes.push(WorkChange::UpdateRequest(next));
        tracing::info!(request = %request.id, status = %status, reason, "a request ended");
        Ok((changes, events))
    }

    /// Withdraws the pending requests an agent made for `person` (its operator, or who had its
    /// token issued), now disabled: nobody decides them any more. A request this misses (the
    /// core stopped first) stays pending, and is never called once approved (`call_request`;
    /// a call already queued is cancelled at its claim).
    pub(crate) async fn withdraw_requests_for(&self, person: &str) -> Result<usize> {
        let system = Origin::default();
        let mut withdrawn = 0;
        for request in self.store.open_agent_requests(i64::from(u16::MAX)).await? {
            let acted_for = request.initiators.iter().any(|i| i.agent.is_some() && i.person == person);
            if request.status != RequestStatus::Pending || !acted_for {
                continue;
            }
            let approval = self.store.approval(&request.approval_id).await?;
            if approval.status != ApprovalStatus::Pending {
                continue;
            }
            let (changes, events) = self
                .close_request(&request, Some(&approval), RequestStatus::Withdrawn, None, "operator_disabled", &system)
                .await?;
            if written(self.store.write_work(&changes, &events).await)? {
                withdrawn += 1;
            }
        }
        Ok(withdrawn)
    }

    /// Whether a person the request's agent acted for — its operator, or who had its token
    /// issued — is disabled now.
    async fn operator_disabled(&self, request: &AgentRequestRecord) -> Result<bool> {
        for initiator in request.initiators.iter().filter(|initiator| initiator.agent.is_some()) {
            if self.store.principal(&initiator.person).await?.disabled_at.is_some() {
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// Waits until the call `id` ended or `within` passed, woken by calls ending through this
    /// engine and looking again on its own (calls end through other cores too). Answers the
    /// call as the actor sees it.
    pub async fn wait_for_end(&self, actor: &Actor, id: &str, within: Duration) -> Result<InvocationOut> {
        let deadline = tokio::time::Instant::now() + within;
        let mut pause = Duration::from_millis(2);
        loop {
            let ended = self.moments.ended();
            let call = self.invocation(actor, id).await?;
            if call.status.is_terminal() || tokio::time::Instant::now() >= deadline {
                // Someone disabled meanwhile learns nothing more.
                self.still_enabled(actor).await?;
                return Ok(call);
            }
            let _ = tokio::time::timeout_at(deadline.min(tokio::time::Instant::now() + pause), ended).await;
            pause = (pause * 2).min(Duration::from_millis(500));
        }
    }

    /// Waits until the request `id` ended or `within` passed, looking again at least every 500
    /// ms (a decision may come through any core).
    pub async fn wait_for_request(&self, actor: &Actor, id: &str, within: Duration) -> Result<AgentRequestOut> {
        let deadline = tokio::time::Instant::now() + within;
        loop {
            let request = self.agent_request(actor, id).await?;
            if request.status.is_terminal() || tokio::time::Instant::now() >= deadline {
                // Someone disabled meanwhile learns nothing more.
                self.still_enabled(actor).await?;
                return Ok(request);
            }
            let woken = self.moments.ended();
            let _ =
                tokio::time::timeout_at(deadline.min(tokio::time::Instant::now() + Duration::from_millis(500)), woken)
                    .await;
        }
    }
}

/// What a client says of itself, fit to show a person: no control or direction-changing
/// characters, at most `max` characters.
fn shown(text: &str, max: usize) -> String {
    let kept: String =
        text.chars().filter(|c| !c.is_control() && !skill_contract::is_invisible_or_bidi(*c)).take(max).collect();
    kept.trim().to_owned()
}

fn asked_skill(skill: &SkillRecord) -> String {
    format!("{}@{}", skill.name, skill.version)
}

/// `403 requests_not_configured`: the agent's writes have nowhere to wait for a person.
fn no_requests(agent: &str, skill: &str) -> EngineError {
    EngineError::new(
        Class::Forbidden,
        Code::SkillSideEffectNotAuthorized,
        format!("{skill} writes to the outside world and runs only on a basis; {agent}'s agent document names no requests.workspace, so its writes cannot be asked for"),
    )
    .with("skill", skill)
    .with("reason", "requests_not_configured")
}
