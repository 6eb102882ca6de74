//! The executor's side of a call: claim (admission by what the executor declared, lazy lease
//! expiry, the lease and the fencing token), heartbeat, complete (the output checked against the
//! contract), fail (retry after the backoff while attempts remain), and the expiry sweep.

use skill_contract::codes::Code;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use skill_api::events::{InvocationClaimed, InvocationSucceeded};
use skill_api::{
    CallStatus, ClaimOut, ClaimRequest, ClaimedSkill, CompleteRequest, FailRequest, HeartbeatRequest, InvocationOut,
    MAX_DOCUMENT_BYTES,
};
use skill_store::records::{Admission, BasisState, InvocationRecord, SkillRecord, TaskRecord, Time};
use skill_store::{Decision, ErrorKind, Take};

use super::allowance::normalized_origin;
use super::view;
use crate::actor::Actor;
use crate::artifacts::NewArtifact;
use crate::basis::{Obstacle, recheck};
use crate::cancellation::{Cancellation, cancellation};
use crate::error::{Class, EngineError, Result};
use crate::error::{busy, written};
use crate::lease::{check_holder, ended, error_value, lease_end, timeout_of};
use crate::{Engine, Origin};

/// How many expired leases one sweep handles.
const SWEEP_BATCH: u32 = 100;
/// A rejected output kept whole in the error up to this size; past it only its size.
const REJECTED_OUTPUT_BYTES: usize = 64 * 1024;

const PROTOCOLS: &[&str] = &["local", "http", "mcp"];

/// The longest a claim waits for a call (`waitSeconds`).
pub const MAX_CLAIM_WAIT_SECONDS: u32 = 30;
/// How often the waiting claims of one executor and admission look again on their own (one of
/// them: `looks.rs`): calls queued through this core wake them at once, and so do those queued
/// through another core sharing a PostgreSQL database while this one listens
/// ([`Engine::listen_to_other_cores`]).
pub(crate) const LOOK_AGAIN: Duration = Duration::from_millis(500);

/// Claims look for expired leases at most this often (the sweep looks every second too): under
/// load, every claim looking would read every running call each time.
const EXPIRY_EVERY_MS: i64 = 100;

/// The timeout of each version a claim met, by id (`None`: a version without a contract, which
/// no executor takes). A version's timeout never changes once published.
#[derive(Debug, Default)]
pub(crate) struct Timeouts {
    known: Mutex<HashMap<String, Option<i64>>>,
}

impl Timeouts {
    /// At most this many versions are kept; past it the cache starts over.
    const CAPACITY: usize = 4096;

    fn get(&self, skill_id: &str) -> Option<Option<i64>> {
        self.known.lock().unwrap_or_else(std::sync::PoisonError::into_inner).get(skill_id).copied()
    }

    fn learn(&self, skill_id: &str, timeout: Option<i64>) {
        let mut known = self.known.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if known.len() >= Self::CAPACITY {
            known.clear();
        }
        known.insert(skill_id.to_owned(), timeout);
    }
}

/// What woke a waiting claim.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Woken {
    /// A call queued through this core: one wake-up per call.
    Queued,
    /// A look that found a call, or another core's calls: there may be more than one.
    Told,
    /// Its own time to look came.
    OnItsOwn,
}

/// What a claim's taker noticed inside the store's transaction: a version whose timeout is not
/// known yet (the claim stops and learns it), and the calls it cancelled (logged after the commit).
#[derive(Debug, Default)]
struct Seen {
    unknown: Option<String>,
    /// The calls cancelled, with their skill's name and version and the lost basis's word.
    cancelled: Vec<(InvocationRecord, String, String, &'static str)>,
}

impl Engine {
    /// Takes the oldest pending call the executor covers (`skills.execute`); `None` when there is
    /// none.
    pub async fn claim(
        &self,
        actor: &Actor,
        request: &ClaimRequest,
        request_id: Option<&str>,
    ) -> Result<Option<ClaimOut>> {
        actor.require("skills.execute")?;
        let admission = admission(request)?;
        super::allowance::check_admission(actor, &request.protocols, &admission)?;
        let most = match request.max_calls {
            None => 1,
            Some(most) if (1..=skill_api::MAX_CLAIM_CALLS).contains(&most) => most as usize,
            Some(_) => {
                return Err(EngineError::invalid_request(format!("`maxCalls` is 1 to {}", skill_api::MAX_CLAIM_CALLS))
                    .with("field", "maxCalls"));
            }
        };
        let wait = match request.wait_seconds {
            None => Duration::ZERO,
            Some(seconds) if seconds <= MAX_CLAIM_WAIT_SECONDS => Duration::from_secs(u64::from(seconds)),
            Some(_) => {
                return Err(EngineError::invalid_request(format!("`waitSeconds` is 0 to {MAX_CLAIM_WAIT_SECONDS}"))
                    .with("field", "waitSeconds"));
            }
        };
        if let Some(session_id) = &request.session_id {
            let session = self.own_active_session(actor, session_id).await?;
            if session.draining_at.is_some() {
                // The executor is stopping: nothing more for it.
                return Ok(None);
            }
            self.remember_admission(session, &admission).await?;
        }
        if admission.local_entrypoints.is_empty()
            && admission.http_origins.is_empty()
            && admission.mcp_endpoints.is_empty()
        {
            return Ok(None);
        }
        let origin = Origin::of(actor, request_id);
        if self.expiry_due() {
            self.expire_leases(self.now()).await?;
        }
        let deadline = tokio::time::Instant::now() + wait;
        let looks = super::looks::Looks::key(actor.id(), &admission);
        // What woke the claim last: its first look counts as a call's own wake-up.
        let mut woken = Woken::Queued;
        // After a wait, the executor as its credential stands then.
        let mut fresh: Option<Actor> = None;
        loop {
            // Listen before looking, so a call queued in between is not missed.
            let queued = self.moments.queued();
            tokio::pin!(queued);
            queued.as_mut().enable();
            let told = self.moments.more();
            tokio::pin!(told);
            told.as_mut().enable();
            self.looks.looked(looks);
            let acting = fresh.as_ref().unwrap_or(actor);
            let mut claimed = self.take_up_to(acting, request, &admission, &origin, most).await?.into_iter();
            if let Some(mut first) = claimed.next() {
                if woken != Woken::Queued {
                    // A call no wake-up of its own told of: there may be more, and the next
                    // waiting claim looks for them (and wakes the next if it finds one).
                    self.moments.more_calls();
                }
                first.more = claimed.collect();
                return Ok(Some(first));
            }
            // Woken by a call queued through this core, by a look that found one or another
            // core's calls, or after a while on its own — unless a claim of the same executor
            // and admission looked meanwhile.
            loop {
                let left = deadline.saturating_duration_since(tokio::time::Instant::now());
                if left.is_zero() {
                    return Ok(None);
                }
                woken = tokio::select! {
                    () = &mut queued => Woken::Queued,
                    () = &mut told => Woken::Told,
                    () = tokio::time::sleep(left.min(self.look_again)) => Woken::OnItsOwn,
                };
                // A session drained meanwhile, through any core, ends the wait (its own
                // transaction refuses to take anything anyway).
                if let Some(session_id) = &request.session_id
                    && self.own_active_session(actor, session_id).await?.draining_at.is_some()
                {
                    return Ok(None);
                }
                if woken != Woken::OnItsOwn || self.looks.due(looks, self.look_again) {
                    break;
                }
            }
            // What was checked when the claim came may have changed while it waited: a token
            // revoked, the executor disabled, its grant or allowance taken away. Nothing is
            // handed over on a credential that no longer stands.
            let now = self.refreshed(actor).await?;
            now.require("skills.execute")?;
            super::allowance::check_admission(&now, &request.protocols, &admission)?;
            fresh = Some(now);
        }
    }

    /// Takes up to `most` calls: the store hands the candidates to [`Engine::taker`] in queue
    /// order inside its write transaction. A candidate of a version whose timeout this engine has
    /// not read yet stops an attempt (what it took before stays taken); the version is read and
    /// another attempt takes what is still wanted.
    async fn take_up_to(
        &self,
        actor: &Actor,
        request: &ClaimRequest,
        admission: &Admission,
        origin: &Origin,
        most: usize,
    ) -> Result<Vec<ClaimOut>> {
        let mut out = Vec::with_capacity(most);
        // Each attempt after the first learns one more version.
        for _ in 0..most + 2 {
            let now = self.now();
            let seen = Arc::new(Mutex::new(Seen::default()));
            let take = self.taker(actor, request, origin, now, Arc::clone(&seen));
            let claimed = self.store.claim_up_to(admission, now, most - out.len(), take).await?;
            // What the claim cancelled is logged once its transaction committed.
            let seen = std::mem::take(&mut *seen.lock().unwrap_or_else(std::sync::PoisonError::into_inner));
            for (cancelled, name, version, reason) in &seen.cancelled {
                self.moments.call_moved(cancelled, name, version);
                crate::metered::cancelled_at_claim(reason);
            }
            for running in claimed {
                let skill = self.store.skill(&running.skill_id).await?.skill;
                crate::metered::claimed(&running, &skill.name, &skill.version, now);
                let claimed = claimed_skill(&skill, crate::catalog::contract_of(&skill)?);
                let settings = self.claim_settings(&skill.name).await?;
                // The executor hands the skill the key of the effect (a retried outcome's first key).
                let effect = crate::basis::effect_key(&running);
                let traceparent = running.traceparent.clone();
                let mut invocation = view::invocation_out(running, &skill, now, &view::Looked::default());
                invocation.idempotency_key = effect;
                out.push(ClaimOut { invocation, skill: claimed, settings, more: Vec::new(), traceparent });
            }
            let Some(skill_id) = seen.unknown.filter(|_| out.len() < most) else { return Ok(out) };
            let skill = self.store.skill(&skill_id).await?.skill;
            self.timeouts.learn(&skill_id, skill.contract.as_ref().map(timeout_of));
        }
        Ok(out)
    }

    /// What a claim makes of a candidate: running under a new lease and fencing token, with its
    /// `skill.invocation_claimed` event. Runs inside the store's transaction, so it only computes.
    fn taker(&self, actor: &Actor, request: &ClaimRequest, origin: &Origin, now: Time, seen: Arc<Mutex<Seen>>) -> Take {
        let timeouts = Arc::clone(&self.timeouts);
        let executor = actor.id().to_owned();
        let session = request.session_id.clone();
        let lease_seconds = request.lease_seconds;
        let origin = origin.clone();
        let system = Origin { actor_id: None, request_id: origin.request_id.clone() };
        Box::new(move |candidate: &InvocationRecord, basis: &BasisState| {
            let mut seen = seen.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            if seen.unknown.is_some() {
                return Decision::Stop;
            }
            match recheck(candidate, basis) {
                Obstacle::Cancel(reason) => {
                    let cause = Cancellation {
                        code: "basis_revoked",
                        reason: reason.as_str(),
                        by: "system",
                        initiator: "system",
                    };
                    let skill = (basis.skill_name.as_str(), basis.skill_version.as_str());
                    let (cancelled, event) = cancellation(candidate, skill, &cause, now, &system);
                    // A store that tries its transaction again hands the same candidate again.
                    if !seen.cancelled.iter().any(|(call, ..)| call.id == cancelled.id) {
                        seen.cancelled.push((
                            cancelled.clone(),
                            skill.0.to_owned(),
                            skill.1.to_owned(),
                            reason.as_str(),
                        ));
                    }
                    return Decision::Cancel(cancelled, vec![event]);
                }
                Obstacle::Hold => return Decision::Pass,
                Obstacle::None => {}
            }
            let timeout = match timeouts.get(&candidate.skill_id) {
                Some(Some(timeout)) => timeout,
                Some(None) => return Decision::Pass,
                None => {
                    seen.unknown = Some(candidate.skill_id.clone());
                    return Decision::Stop;
                }
            };
            let running = InvocationRecord {
                status: CallStatus::Running,
                attempt: candidate.attempt + 1,
                fencing_token: candidate.fencing_token + 1,
                executor_principal_id: Some(executor.clone()),
                executor_session_id: session.clone(),
                lease_expires_at: Some(lease_end(now, now, timeout, lease_seconds)),
                heartbeat_at: Some(now),
                started_at: candidate.started_at.or(Some(now)),
                attempt_started_at: Some(now),
                updated_at: now,
                row_version: candidate.row_version + 1,
                ..candidate.clone()
            };
            let claimed = InvocationClaimed {
                skill_id: running.skill_id.clone(),
                attempt: running.attempt,
                fencing_token: running.fencing_token,
                lease_expires_at: running.lease_expires_at.as_ref().map(crate::catalog::view_time),
            };
            let event = crate::new_event(format!("skill_invocation:{}", running.id), &claimed, &origin);
            Decision::Take(running, vec![event])
        })
    }

    /// Whether this claim looks for expired leases: the first claim after [`EXPIRY_EVERY_MS`].
    fn expiry_due(&self) -> bool {
        let now = self.now().timestamp_millis();
        let last = self.expired_at.load(std::sync::atomic::Ordering::Relaxed);
        now - last >= EXPIRY_EVERY_MS
            && self
                .expired_at
                .compare_exchange(last, now, std::sync::atomic::Ordering::Relaxed, std::sync::atomic::Ordering::Relaxed)
                .is_ok()
    }

    /// Renews the lease of a call the executor holds; it never shortens and never passes the
    /// attempt's cap.
    pub async fn heartbeat(
        &self,
        actor: &Actor,
        id: &str,
        request: &HeartbeatRequest,
        _request_id: Option<&str>,
    ) -> Result<InvocationOut> {
        actor.require("skills.execute")?;
        for _ in 0..5 {
            let (call, skill, now) = self.held(actor, id, request.fencing_token, request.session_id.as_deref()).await?;
            let timeout = timeout_of(crate::catalog::contract_of(&skill)?);
            let start = call.attempt_started_at.or(call.started_at).unwrap_or(now);
            let renewed = lease_end(now, start, timeout, request.lease_seconds);
            let renewed = call.lease_expires_at.map_or(renewed, |current| current.max(renewed));
            let next = InvocationRecord {
                lease_expires_at: Some(renewed),
                heartbeat_at: Some(now),
                updated_at: now,
                row_version: call.row_version + 1,
                ..call
            };
            if written(self.store.update_invocation(&next, &[]).await)? {
                return Ok(view::invocation_out(next, &skill, now, &view::Looked::default()));
            }
        }
        Err(busy())
    }

    /// Finishes a call the executor holds with its output: `succeeded` when the output matches
    /// the contract, else `failed` with `output_contract_violation` (never retried). The cost is
    /// stored either way.
    pub async fn complete(
        &self,
        actor: &Actor,
        id: &str,
        request: &CompleteRequest,
        request_id: Option<&str>,
    ) -> Result<InvocationOut> {
        actor.require("skills.execute")?;
        let output = Value::Object(request.output.clone());
        let size = serde_json::to_vec(&output).map_or(0, |bytes| bytes.len());
        if size > MAX_DOCUMENT_BYTES {
            return Err(EngineError::invalid_request(format!(
                "the output is {size} bytes of JSON; at most {MAX_DOCUMENT_BYTES}"
            ))
            .with("field", "output"));
        }
        let cost = request.cost.clone().map(Value::Object);
        for _ in 0..5 {
            let (call, skill, now) = self.held(actor, id, request.fencing_token, request.session_id.as_deref()).await?;
            let contract = crate::catalog::contract_of(&skill)?;
            let validator = self.schemas.get(&skill.id, "outputs", contract.outputs()).await?;
            let errors = validator.errors(&output);
            let origin = Origin::of(actor, request_id);
            let subject = format!("skill_invocation:{}", call.id);
            let mut artifacts = Vec::new();
            let mut outputs = None;
            let (next, event) = if errors.is_empty() {
                // A task-bound call's result is an artifact of the task, authored by its authority;
                // an execution's typed outputs come before it.
                if let Some(task_id) = &call.task_id {
                    let task = self.store.task(task_id).await?;
                    let typed = self.typed_outputs(&call, &skill, &output, &task).await?;
                    let statuses = Value::Object(typed.statuses);
                    let result = self.result_artifact(&call, &skill, &output, actor.id(), &task, &statuses).await?;
                    artifacts = typed.artifacts;
                    artifacts.push(result);
                    outputs = Some(statuses);
                }
                let artifact_id = artifacts.last().map(|a| a.id.clone());
                let next = InvocationRecord {
                    cost: cost.clone(),
                    artifact_id: artifact_id.clone(),
                    ..ended(&call, CallStatus::Succeeded, Some(output.clone()), None, now)
                };
                let succeeded = InvocationSucceeded {
                    skill_id: skill.id.clone(),
                    skill: skill.name.clone(),
                    version: skill.version.clone(),
                    attempt: call.attempt,
                    task_id: call.task_id.clone(),
                    run_id: call.run_id.clone(),
                    artifact_id,
                    cost: cost.clone(),
                    outputs,
                };
                let event = self.event(subject, &succeeded, &origin);
                (next, event)
            } else {
                let bytes = serde_json::to_vec(&output).map_or(0, |bytes| bytes.len());
                let details = if bytes > REJECTED_OUTPUT_BYTES {
                    json!({"errors": errors, "rejectedOutputTruncated": true, "rejectedOutputBytes": bytes})
                } else {
                    json!({"errors": errors, "rejectedOutput": output})
                };
                let first = errors.first().map(ToString::to_string).unwrap_or_default();
                let message = format!("the output does not match the contract: {first}");
                let error = error_value("output_contract_violation", false, &message, Some(details));
                self.failed(call, &skill, error, cost.clone(), now, &origin)
            };
            let wrote = if artifacts.is_empty() {
                self.store.update_invocation(&next, &[event]).await
            } else {
                let mut events = vec![event];
                events.extend(artifacts.iter().map(|artifact| self.artifact_event(artifact, &origin)));
                self.store.update_invocation_with_artifacts(&next, &artifacts, &events).await
            };
            if written(wrote)? {
                self.moments.call_moved(&next, &skill.name, &skill.version);
                return Ok(view::invocation_out(next, &skill, now, &view::Looked::default()));
            }
        }
        Err(busy())
    }

    /// The `skill_result` artifact of a task-bound call's `output`: `{invocationId, skill,
    /// version, attempt, output}` as JSON, named `name@version`, in the task's workspace, linked
    /// to the task and the run, authored by the call's authority (not its executor); its metadata
    /// lists the statuses of the typed `outputs`.
    async fn result_artifact(
        &self,
        call: &InvocationRecord,
        skill: &SkillRecord,
        output: &Value,
        executor: &str,
        task: &TaskRecord,
        outputs: &Value,
    ) -> Result<skill_store::records::ArtifactRecord> {
        let content = json!({"invocationId": call.id, "skill": skill.name, "version": skill.version,
                             "attempt": call.attempt, "output": output});
        let bytes = serde_json::to_vec(&content).unwrap_or_default();
        let metadata = json!({"skillId": skill.id, "invocationId": call.id, "executorPrincipalId": executor,
                              "outputs": outputs});
        let name = format!("{}@{}", skill.name, skill.version);
        let new = NewArtifact {
            author: &call.authority_principal_id,
            workspace: &task.workspace_id,
            task_id: Some(task.id.clone()),
            run_id: call.run_id.clone(),
            kind: "skill_result",
            name: &name,
            media_type: "application/json",
            metadata,
            skill_invocation_id: Some(call.id.clone()),
        };
        self.stored_artifact(new, &bytes).await
    }

    /// Reports a failure of a call the executor holds: back to the queue after the backoff when
    /// it is retryable and attempts remain, else `failed`.
    pub async fn fail(
        &self,
        actor: &Actor,
        id: &str,
        request: &FailRequest,
        request_id: Option<&str>,
    ) -> Result<InvocationOut> {
        actor.require("skills.execute")?;
        let reported = &request.error;
        if !skill_contract::is_valid_code(&reported.code) {
            return Err(EngineError::invalid_request(format!(
                "error.code is `^[a-z0-9][a-z0-9_.-]*$` and at most {} characters",
                skill_contract::MAX_CODE
            ))
            .with("field", "error.code"));
        }
        if reported.message.chars().count() > 4000 {
            return Err(
                EngineError::invalid_request("error.message is at most 4000 characters").with("field", "error.message")
            );
        }
        for _ in 0..5 {
            let (call, skill, now) = self.held(actor, id, request.fencing_token, request.session_id.as_deref()).await?;
            let error = error_value(&reported.code, reported.retryable, &reported.message, reported.details.clone());
            let origin = Origin::of(actor, request_id);
            let (next, event) = self.failed(call, &skill, error, None, now, &origin);
            if written(self.store.update_invocation(&next, &[event]).await)? {
                self.moments.call_moved(&next, &skill.name, &skill.version);
                return Ok(view::invocation_out(next, &skill, now, &view::Looked::default()));
            }
        }
        Err(busy())
    }

    /// Running calls whose lease ended are retryable failures (`lease_expired`): the attempt is
    /// spent, as the executor may have acted. Run at every claim and by the core's sweep; returns
    /// how many calls it handled.
    pub async fn expire_leases(&self, now: Time) -> Result<usize> {
        let expired = self.store.expired_leases(now, SWEEP_BATCH).await?;
        let mut handled = 0;
        for call in expired {
            let Ok(skill) = self.store.skill(&call.skill_id).await.map(|entry| entry.skill) else { continue };
            let error = error_value("lease_expired", true, "the executor's lease ended before it reported", None);
            let (next, event) = self.failed(call, &skill, error, None, now, &Origin::default());
            match self.store.update_invocation(&next, &[event]).await {
                Ok(()) => {
                    handled += 1;
                    crate::metered::lease_expired();
                    self.moments.call_moved(&next, &skill.name, &skill.version);
                }
                // Someone else moved it first (a report just in time, another sweep).
                Err(error) if error.kind() == ErrorKind::Stale => {}
                Err(error) => return Err(error.into()),
            }
        }
        Ok(handled)
    }

    /// Keeps on the session what its executor claims with, so a waiting call can tell whether any
    /// executor covers it. Written only when it changed.
    async fn remember_admission(
        &self,
        session: skill_store::records::SessionRecord,
        admission: &Admission,
    ) -> Result<()> {
        let wanted = skill_store::records::ClaimedWith {
            local_entrypoints: admission.local_entrypoints.clone(),
            http_origins: admission.http_origins.clone(),
            mcp_endpoints: admission.mcp_endpoints.clone(),
            audiences: admission.audiences.clone(),
        };
        if session.admission == wanted {
            return Ok(());
        }
        let next =
            skill_store::records::SessionRecord { admission: wanted, row_version: session.row_version + 1, ..session };
        match self.store.update_session(&next, &[], &[]).await {
            // A heartbeat moved it meanwhile: the next claim writes it.
            Err(error) if error.kind() == ErrorKind::Stale => Ok(()),
            other => Ok(other?),
        }
    }

    /// The call `id` with its version, when `actor` holds its current lease (and the lease's
    /// session is still active).
    pub(crate) async fn held(
        &self,
        actor: &Actor,
        id: &str,
        fencing_token: i64,
        session_id: Option<&str>,
    ) -> Result<(InvocationRecord, SkillRecord, Time)> {
        let call = self.visible_call(actor, id).await?;
        let now = self.now();
        check_holder(&call, actor.id(), fencing_token, session_id, now)?;
        if let Some(session_id) = &call.executor_session_id {
            self.own_active_session(actor, session_id).await?;
        }
        let skill = self.store.skill(&call.skill_id).await?.skill;
        Ok((call, skill, now))
    }
}

/// What a claim hands over of the version.
fn claimed_skill(skill: &SkillRecord, contract: &skill_contract::Contract) -> ClaimedSkill {
    ClaimedSkill {
        id: skill.id.clone(),
        name: skill.name.clone(),
        version: skill.version.clone(),
        protocol: skill.protocol.clone().unwrap_or_default(),
        side_effects: skill.side_effects.unwrap_or_default(),
        risk_level: skill.risk_level.unwrap_or_default(),
        contract: contract.clone(),
    }
}

/// What the executor may take, from what it declared: each remote protocol only with its
/// origins, each origin normalized (lower-case, no trailing `/`) and checked.
fn admission(request: &ClaimRequest) -> Result<Admission> {
    if request.protocols.is_empty() || request.protocols.len() > 10 {
        return Err(
            EngineError::invalid_request("`protocols` names 1 to 10 of local, http, mcp").with("field", "protocols")
        );
    }
    let unknown: Vec<&String> = request.protocols.iter().filter(|p| !PROTOCOLS.contains(&p.as_str())).collect();
    if !unknown.is_empty() {
        return Err(EngineError::new(
            Class::Invalid,
            Code::InvalidProtocol,
            format!(
                "an executor runs local, http or mcp calls, not {}",
                unknown.iter().map(|p| format!("{p:?}")).collect::<Vec<_>>().join(", ")
            ),
        )
        .with("unknown", json!(unknown)));
    }
    for (field, count, max) in [
        ("localEntrypoints", request.local_entrypoints.len(), 500),
        ("httpOrigins", request.http_origins.len(), 100),
        ("mcpEndpoints", request.mcp_endpoints.len(), 100),
        ("audiences", request.audiences.len(), 100),
    ] {
        if count > max {
            return Err(EngineError::invalid_request(format!("`{field}` has at most {max} items")).with("field", field));
        }
    }
    let declared = |protocol: &str| request.protocols.iter().any(|p| p == protocol);
    let origins = |field: &str, values: &[String], stdio: bool| -> Result<Vec<String>> {
        values.iter().map(|value| normalized_origin(field, value, stdio)).collect()
    };
    Ok(Admission {
        local_entrypoints: if declared("local") { request.local_entrypoints.clone() } else { Vec::new() },
        http_origins: if declared("http") { origins("httpOrigins", &request.http_origins, false)? } else { Vec::new() },
        mcp_endpoints: if declared("mcp") {
            origins("mcpEndpoints", &request.mcp_endpoints, true)?
        } else {
            Vec::new()
        },
        audiences: request.audiences.clone(),
        invocation_id: request.invocation_id.clone(),
        session_id: request.session_id.clone(),
    })
}
