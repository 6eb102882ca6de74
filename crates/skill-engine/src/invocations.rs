//! Calls of skill versions: invoking (the check order of the reference, steps 1–7, 11, 13–15),
//! reading and listing with their visibility rule, and cancelling. The queue side (claim,
//! heartbeat, complete, fail, lease expiry) is in `queue.rs`, executor sessions in `sessions.rs`.

mod allowance;
mod checks;
mod costs;
mod failed;
mod looks;
mod policy;
mod queue;
mod schemas;
mod sessions;
mod view;
mod wake;

use skill_contract::codes::Code;
use std::collections::HashMap;

use serde_json::{Value, json};
use skill_api::{
    ApprovalStatus, Basis, CallStatus, CancelRequest, InvocationOut, InvocationQuery, InvokeRequest,
    MAX_DOCUMENT_BYTES, Page, State,
};
use skill_contract::Contract;
use skill_contract::export::canonical;
use skill_store::ErrorKind;
use skill_store::records::{Inserted, InvocationFilter, InvocationRecord, SkillEntry, SkillRecord};

pub use crate::lease::{MAX_LEASE_SECONDS, MIN_LEASE_SECONDS};
pub(crate) use allowance::checked as checked_allowance;
use checks::Asked;
pub use costs::{CostLine, CostReport, MAX_COST_CALLS};
pub(crate) use looks::Looks;
pub use queue::MAX_CLAIM_WAIT_SECONDS;
pub(crate) use queue::{LOOK_AGAIN, Timeouts};
pub(crate) use schemas::SchemaCache;
pub use sessions::{DEFAULT_SESSION_SECONDS, MAX_SESSION_SECONDS, SessionView};

use crate::actor::Actor;
use crate::basis::Internal;
use crate::cancellation::Cancellation;
use crate::catalog::{bounded_page, checked_limit};
use crate::error::{Class, EngineError, Result, busy, requested_state, written};
use crate::{Engine, Origin};

/// The longest body idempotency key, in characters.
pub const MAX_IDEMPOTENCY_KEY: usize = 200;

/// What `invoke` answers: the call, and whether this request created it (`201`) or repeated an
/// accepted one (`200`).
#[derive(Debug, Clone, PartialEq)]
pub struct Invoked {
    pub invocation: InvocationOut,
    pub created: bool,
}

impl Engine {
    /// Creates a call of the version `reference` names (`skills.invoke`), or answers the call a
    /// repeated key names.
    pub async fn invoke(
        &self,
        actor: &Actor,
        reference: &str,
        request: &InvokeRequest,
        request_id: Option<&str>,
    ) -> Result<Invoked> {
        self.invoke_by(actor, reference, request, request_id, None).await
    }

    /// [`Engine::invoke`] for a call the core makes itself (an approval's outcome, a task's
    /// execution): the same checks, the actor's authority, and the basis only such a call has.
    pub(crate) async fn invoke_by(
        &self,
        actor: &Actor,
        reference: &str,
        request: &InvokeRequest,
        request_id: Option<&str>,
        internal: Option<Internal<'_>>,
    ) -> Result<Invoked> {
        actor.require("skills.invoke")?;
        let SkillEntry { skill, .. } = match self.find(reference).await {
            Err(error) if error.class == Class::NotFound && internal.is_none() => {
                return Err(self.with_suggestions(actor, error, reference).await);
            }
            found => found?,
        };
        self.invoke_version(actor, skill, request, request_id, internal).await
    }

    /// [`Engine::invoke_by`] of a version already read (a process step read it to fix it).
    pub(crate) async fn invoke_version(
        &self,
        actor: &Actor,
        skill: skill_store::records::SkillRecord,
        request: &InvokeRequest,
        request_id: Option<&str>,
        internal: Option<Internal<'_>>,
    ) -> Result<Invoked> {
        actor.require("skills.invoke")?;
        let key = match internal {
            None => callers_key(request.idempotency_key.as_deref())?,
            Some(_) => checked_key(request.idempotency_key.as_deref())?,
        };
        // Kept with its keys in order, so that equal inputs are stored as the same text.
        let inputs = canonical(&Value::Object(request.inputs.clone().unwrap_or_default()));
        // A process step's call that does not write is looked up by its key only if its insert
        // meets one (a core that died after making it): the insert answers the call there.
        let process_made = matches!(internal, Some(Internal::Process { .. }));
        let looked_up = !process_made || crate::basis::writes(skill.side_effects);
        // The reference looks the key up before it checks anything else; a check that fails is
        // answered only after that look-up, so a repeated key is still answered as a repeat. A
        // call that passes goes straight to its insert, which meets the key's call if there is
        // one: the look-up costs nothing on the way of a new call.
        let (call, event, basis) = match self
            .checked_call(Asked {
                actor,
                skill: &skill,
                request,
                request_id,
                internal,
                key: key.as_deref(),
                inputs: &inputs,
            })
            .await
        {
            Ok(made) => made,
            Err(error) => {
                if let Some(key) = key.as_ref().filter(|_| looked_up) {
                    match self.store.invocation_by_key(&skill.id, key).await {
                        Ok(existing) => return self.repeat(actor, &skill, existing, &inputs),
                        Err(lookup) if lookup.kind() == ErrorKind::NotFound => {}
                        Err(lookup) => return Err(lookup.into()),
                    }
                }
                return Err(error);
            }
        };
        let now = call.created_at;
        let inserted = match self.store.insert_invocation(&call, &event).await {
            Ok(inserted) => inserted,
            Err(error) if error.kind() == ErrorKind::Conflict => return Err(spent(&skill, basis.as_ref())),
            Err(error) => return Err(error.into()),
        };
        match inserted {
            Inserted::New { covered } => {
                self.moments.call_queued();
                // Whether an executor covers it is told to callers (the insert answered it where
                // it could); a process step does not ask.
                let covered = match (process_made, covered) {
                    (true, _) => None,
                    (false, Some(covered)) => Some(covered),
                    (false, None) => self.covered(&call, now).await?,
                };
                let looked = view::Looked { covered, held_by: Vec::new() };
                Ok(Invoked { invocation: view::invocation_out(call, &skill, now, &looked), created: true })
            }
            // Two first calls with one key: the other one won; this is a repeat of it.
            Inserted::Existing(existing) => self.repeat(actor, &skill, *existing, &call.inputs),
        }
    }

    /// The answer to a key already used: the call when the authority and the inputs are the
    /// same, `409 idempotency_key_reuse` otherwise.
    fn repeat(
        &self,
        actor: &Actor,
        skill: &SkillRecord,
        existing: InvocationRecord,
        inputs: &Value,
    ) -> Result<Invoked> {
        let own = existing.authority_principal_id == actor.id();
        if own && existing.inputs == *inputs {
            return Ok(Invoked {
                invocation: view::invocation_out(existing, skill, self.now(), &view::Looked::default()),
                created: false,
            });
        }
        let mut error = EngineError::new(
            Class::Conflict,
            Code::IdempotencyKeyReuse,
            "this idempotencyKey already names another call of this version: use a new key for a new call",
        );
        if own {
            error = error.with("invocationId", existing.id);
        }
        Err(error)
    }

    /// The inputs fit the contract: at most 256 KiB, and valid against `contract.inputs`.
    pub(crate) async fn check_inputs(&self, skill: &SkillRecord, contract: &Contract, inputs: &Value) -> Result<()> {
        let name = format!("{}@{}", skill.name, skill.version);
        let size = serde_json::to_vec(inputs).map_or(0, |bytes| bytes.len());
        if size > MAX_DOCUMENT_BYTES {
            return Err(EngineError::new(
                Class::BadRequest,
                Code::InvalidSkillInputs,
                format!("the inputs are {size} bytes of JSON; at most {MAX_DOCUMENT_BYTES}"),
            )
            .with("skill", name));
        }
        let validator = self.schemas.get(&skill.id, "inputs", contract.inputs()).await?;
        let errors = validator.errors(inputs);
        if errors.is_empty() {
            return Ok(());
        }
        let first = errors.first().map(ToString::to_string).unwrap_or_default();
        Err(EngineError::new(
            Class::BadRequest,
            Code::InvalidSkillInputs,
            format!("the inputs do not match the contract of {name}: {first}"),
        )
        .with("skill", name)
        .with("errors", json!(errors)))
    }

    /// One call (`skills.invoke`, `skills.execute`, `org.read`, or `tasks.read` somewhere): visible
    /// to its authority, the executors that held it, any holder of `org.read`, and whoever may
    /// read its task; `404` to everyone else, as for a missing id.
    pub async fn invocation(&self, actor: &Actor, id: &str) -> Result<InvocationOut> {
        if !actor.can_somewhere("tasks.read") {
            actor.require_any(&["skills.invoke", "skills.execute", "org.read"])?;
        }
        let call = self.visible_call(actor, id).await?;
        let skill = self.store.skill(&call.skill_id).await?.skill;
        let now = self.now();
        let looked = view::Looked { covered: self.covered(&call, now).await?, held_by: self.held_by(&call).await? };
        Ok(view::invocation_out(call, &skill, now, &looked))
    }

    /// The pending gate approvals that hold a pending call: an external write on its task's
    /// execution waits while the task has one (the claim passes it over).
    async fn held_by(&self, call: &InvocationRecord) -> Result<Vec<String>> {
        let execution = matches!(call.authorization_basis, Some(Basis::Execution { .. }));
        let Some(task) = call.task_id.as_deref().filter(|_| call.status == CallStatus::Pending && execution) else {
            return Ok(Vec::new());
        };
        let approvals = self.store.approvals(task).await?;
        Ok(approvals
            .into_iter()
            .filter(|a| a.gates_the_task() && a.status == ApprovalStatus::Pending)
            .map(|a| a.id)
            .collect())
    }

    /// For a pending call that is available now, whether an active executor session covers it.
    async fn covered(&self, call: &InvocationRecord, now: skill_store::records::Time) -> Result<Option<bool>> {
        if call.status != CallStatus::Pending || call.available_at > now {
            return Ok(None);
        }
        Ok(Some(self.store.covered(&call.protocol, &call.target, call.audience.as_deref(), now).await?))
    }

    async fn visible_call(&self, actor: &Actor, id: &str) -> Result<InvocationRecord> {
        let hidden = || EngineError::not_found(&format!("invocation {id}")).with("invocationId", id);
        let call = self.store.invocation(id).await.map_err(|error| match error.kind() {
            ErrorKind::NotFound => hidden(),
            _ => error.into(),
        })?;
        let sees = call.authority_principal_id == actor.id()
            || call.executor_principal_id.as_deref() == Some(actor.id())
            || actor.can("org.read");
        if sees {
            return Ok(call);
        }
        // An executor sees the calls it holds or held (the journal keeps who claimed each).
        if actor.can("skills.execute") && self.store.claimed_by(&call.id, actor.id()).await? {
            return Ok(call);
        }
        // Whoever may read a call's task sees the call (a store failure is no `404`).
        let Some(task) = &call.task_id else { return Err(hidden()) };
        let task = match self.store.task(task).await {
            Ok(task) => task,
            Err(error) if error.kind() == ErrorKind::NotFound => return Err(hidden()),
            Err(error) => return Err(error.into()),
        };
        if actor.can_in("tasks.read", &task.workspace_id) { Ok(call) } else { Err(hidden()) }
    }

    /// Calls newest first (`skills.invoke`, `skills.execute` or `org.read`): without `org.read`, a
    /// caller sees its own and an executor the calls it runs or ran last. With `task`, the task's
    /// calls, to anyone who may read the task.
    pub async fn invocations(&self, actor: &Actor, query: &InvocationQuery) -> Result<Page<InvocationOut>> {
        let task_id = match &query.task {
            Some(task) => Some(self.visible_task(actor, task, None).await?.id),
            None => {
                actor.require_any(&["skills.invoke", "skills.execute", "org.read"])?;
                None
            }
        };
        let limit = checked_limit(query.limit, 50, 200)?;
        let sees_all = actor.can("org.read") || task_id.is_some();
        // Without org.read, an invoker sees the calls on its authority and an executor the calls
        // it runs or ran last.
        let executor = (!sees_all && !actor.can("skills.invoke")).then(|| actor.id().to_owned());
        let authority = match (&query.caller, sees_all) {
            (Some(caller), true) => Some(caller.clone()),
            (Some(caller), false) if caller != actor.id() => {
                return Err(EngineError::forbidden("org.read").with("field", "caller"));
            }
            (_, false) if executor.is_some() => None,
            (_, false) => Some(actor.id().to_owned()),
            (None, true) => None,
        };
        let status = query
            .status
            .as_deref()
            .map(|word| requested_state(word, CallStatus::ALL, "a call's status"))
            .transpose()?;
        let skill_id = match &query.skill {
            Some(reference) => Some(self.find(reference).await?.skill.id),
            None => None,
        };
        let time = |field: &str, value: &Option<String>| -> Result<Option<skill_store::records::Time>> {
            value
                .as_deref()
                .map(|text| {
                    chrono::DateTime::parse_from_rfc3339(text).map(|t| t.to_utc()).map_err(|_| {
                        EngineError::invalid_request(format!("`{field}` is an RFC 3339 time, not {text:?}"))
                            .with("field", field)
                    })
                })
                .transpose()
        };
        let before = match &query.cursor {
            None => None,
            Some(cursor) => {
                let bad =
                    || EngineError::invalid_request("the cursor is not one this listing gave").with("field", "cursor");
                let call = match self.store.invocation(cursor).await {
                    Ok(call) => call,
                    Err(error) if error.kind() == ErrorKind::NotFound => return Err(bad()),
                    Err(error) => return Err(error.into()),
                };
                Some((call.created_at, call.id))
            }
        };
        let filter = InvocationFilter {
            status,
            skill_id,
            authority,
            created_after: time("since", &query.since)?,
            created_before: time("until", &query.until)?,
            task_id,
            executor,
            before,
            limit: limit + 1,
        };
        let mut calls = self.store.invocations(&filter).await?;
        let more = calls.len() > limit as usize;
        calls.truncate(limit as usize);
        let next = if more { calls.last().map(|call| call.id.clone()) } else { None };
        let now = self.now();
        let mut items = Vec::with_capacity(calls.len());
        let mut skills: HashMap<String, SkillRecord> = HashMap::new();
        let mut coverage: HashMap<(String, Option<String>), Option<bool>> = HashMap::new();
        for call in calls {
            if !skills.contains_key(&call.skill_id) {
                let skill = self.store.skill(&call.skill_id).await?.skill;
                skills.insert(skill.id.clone(), skill);
            }
            let skill = &skills[&call.skill_id];
            // Calls of one version may differ in endpoint (it can move): coverage is per implementation.
            let implementation = (view::implementation(&call), call.audience.clone());
            let covered = match coverage.get(&implementation) {
                Some(known) => *known,
                None => {
                    let covered = self.covered(&call, now).await?;
                    if covered.is_some() {
                        coverage.insert(implementation, covered);
                    }
                    covered
                }
            };
            let looked = view::Looked { covered, held_by: self.held_by(&call).await? };
            items.push(view::invocation_out(call, skill, now, &looked));
        }
        Ok(bounded_page(items, next, |item| item.id.clone()))
    }

    /// Cancels a pending or running call (`skills.invoke` for one's own, `org.manage` for any):
    /// a running executor is fenced out (its next report is `stale_invocation_lease`).
    pub async fn cancel(
        &self,
        actor: &Actor,
        id: &str,
        request: &CancelRequest,
        request_id: Option<&str>,
    ) -> Result<InvocationOut> {
        actor.require_any(&["skills.invoke", "org.manage"])?;
        let reason = match &request.reason {
            None => "cancelled".to_owned(),
            Some(reason) if (1..=500).contains(&reason.chars().count()) => reason.clone(),
            Some(_) => {
                return Err(EngineError::invalid_request("a reason is 1 to 500 characters").with("field", "reason"));
            }
        };
        for _ in 0..5 {
            let hidden = || EngineError::not_found(&format!("invocation {id}")).with("invocationId", id);
            let call = self.store.invocation(id).await.map_err(|error| match error.kind() {
                ErrorKind::NotFound => hidden(),
                _ => error.into(),
            })?;
            if call.authority_principal_id != actor.id() && !actor.can("org.manage") {
                return Err(hidden());
            }
            let skill = self.store.skill(&call.skill_id).await?.skill;
            match call.status {
                CallStatus::Cancelled => {
                    return Ok(view::invocation_out(call, &skill, self.now(), &view::Looked::default()));
                }
                CallStatus::Succeeded | CallStatus::Failed => {
                    return Err(EngineError::new(
                        Class::Conflict,
                        Code::InvocationTerminal,
                        format!("the call has ended ({}): there is nothing to cancel", call.status),
                    )
                    .with("invocationId", call.id)
                    .with("status", call.status));
                }
                _ => {}
            }
            let now = self.now();
            let cause = Cancellation { code: "cancelled", reason: &reason, by: actor.id(), initiator: "principal" };
            let (cancelled, event) = self.cancelled(&call, &skill, &cause, now, &Origin::of(actor, request_id));
            if written(self.store.update_invocation(&cancelled, &[event]).await)? {
                self.moments.call_moved(&cancelled, &skill.name, &skill.version);
                return Ok(view::invocation_out(cancelled, &skill, now, &view::Looked::default()));
            }
        }
        Err(busy())
    }
}

/// The answer to an insert another call's basis refused: one execution call per run, one call
/// per approval and version (whatever became of it).
fn spent(skill: &SkillRecord, basis: Option<&Basis>) -> EngineError {
    let name = format!("{}@{}", skill.name, skill.version);
    match basis {
        Some(Basis::Execution { run_id, .. }) => EngineError::new(
            Class::Conflict,
            Code::ExecutionAlreadyInvoked,
            "this task has made its execution call already (one call of a task's execution may write)",
        )
        .with("runId", run_id.clone())
        .with("skill", name),
        Some(Basis::Approval { approval_id, .. }) => EngineError::new(
            Class::Conflict,
            Code::ApprovalAlreadyUsed,
            format!("this approval authorized a call of {name} already (failed and cancelled calls spend it too)"),
        )
        .with("approvalId", approval_id.clone())
        .with("skill", name),
        Some(Basis::Process { activity_id, .. }) => EngineError::new(
            Class::Conflict,
            Code::ProcessStepAlreadyInvoked,
            format!("this process step made its call of {name} already (one call per step run)"),
        )
        .with("activityId", activity_id.clone())
        .with("skill", name),
        // A call without a basis spends nothing: its key's conflict is the key's to answer.
        None => EngineError::new(
            Class::Conflict,
            Code::ApprovalAlreadyUsed,
            format!("a call of {name} conflicted with one made already"),
        )
        .with("approvalId", serde_json::Value::Null)
        .with("skill", name),
    }
}

/// The prefixes of the idempotency keys of the calls the core makes itself: a rule's
/// interpretation (`rule:<ruleId>:<factId>`), an agent's approved request (`agent-request:<id>`),
/// a process's call step (`process:<activity id>`), an approved outcome's action
/// (`approval-outcome:<approvalId>:<index>`) and a task's execution (`execution:<runId>`).
pub(crate) const RESERVED_KEYS: &[&str] = &["rule:", "agent-request:", "process:", "approval-outcome:", "execution:"];

/// A caller's key as [`checked_key`] takes it, and `422 invalid_idempotency_key` when it starts
/// like the keys the core gives its own calls: no caller takes one of those first, whichever
/// door (the API's invoke, the MCP gateway) it comes through.
pub(crate) fn callers_key(key: Option<&str>) -> Result<Option<String>> {
    let key = checked_key(key)?;
    if let Some(key) = key.as_deref().filter(|key| RESERVED_KEYS.iter().any(|prefix| key.starts_with(prefix))) {
        return Err(EngineError::new(
            Class::Invalid,
            Code::InvalidIdempotencyKey,
            format!("{key:?}: keys starting with {} are the core's own", RESERVED_KEYS.join(" or ")),
        )
        .with("field", "idempotencyKey"));
    }
    Ok(key)
}

/// The key trimmed; `422 invalid_idempotency_key` when empty or longer than 200 characters.
pub(crate) fn checked_key(key: Option<&str>) -> Result<Option<String>> {
    let Some(key) = key else { return Ok(None) };
    let trimmed = key.trim();
    let hidden = |c: char| c.is_control() || skill_contract::is_invisible_or_bidi(c);
    if trimmed.is_empty() || trimmed.chars().count() > MAX_IDEMPOTENCY_KEY || trimmed.chars().any(hidden) {
        return Err(EngineError::new(
            Class::Invalid,
            Code::InvalidIdempotencyKey,
            format!(
                "an idempotencyKey is 1 to {MAX_IDEMPOTENCY_KEY} characters after trimming, none of them a control, invisible or direction-changing character"
            ),
        )
        .with("field", "idempotencyKey"));
    }
    Ok(Some(trimmed.to_owned()))
}

/// An endpoint as executors' origins are compared with it: lower-case, except `stdio:<name>`.
fn endpoint_target(endpoint: &str) -> String {
    if endpoint.starts_with("stdio:") { endpoint.to_owned() } else { endpoint.to_ascii_lowercase() }
}
