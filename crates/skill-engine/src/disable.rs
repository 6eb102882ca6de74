//! Disabling a principal (`org.manage`), in one transaction: its tokens stop working at once
//! (every request reads the principal), and so do the agent tokens a disabled person operates or
//! had issued; the pending and running calls it is the authority of are cancelled
//! (`basis_revoked`, the reason as the message), so are the pending calls that stand on a
//! decision it took — an approval it decided, a task's gate it approved — (`decider_disabled`; a
//! claim re-checks the same, so a call queued meanwhile is not made either), and the running calls
//! it executes for others go back to the queue as a retryable failure with the reason as the code
//! (or fail, when no attempt remains). Just after, the requests agents made for a disabled person
//! are withdrawn (`operator_disabled`).

use skill_api::events::PrincipalDisabled;
use skill_api::{CallStatus, DisableOut, DisableRequest, LostBasis};
use skill_contract::codes::Code;
use skill_store::ErrorKind;

use crate::actor::Actor;
use crate::cancellation::Cancellation;
use crate::catalog::view_time;
use crate::error::busy;
use crate::error::{Class, EngineError, Result};
use crate::lease;
use crate::{Engine, Origin};

impl Engine {
    pub async fn disable_principal(
        &self,
        actor: &Actor,
        request: &DisableRequest,
        request_id: Option<&str>,
    ) -> Result<DisableOut> {
        actor.require("org.manage")?;
        let reason = request.reason.as_str();
        if !skill_contract::is_valid_code(reason) {
            return Err(EngineError::invalid_request(format!(
                "`reason` is a code: `^[a-z0-9][a-z0-9_.-]*$`, at most {} characters (e.g. offboarded)",
                skill_contract::MAX_CODE
            ))
            .with("field", "reason"));
        }
        let found = match uuid::Uuid::try_parse(&request.principal) {
            Ok(_) => self.store.principal(&request.principal).await,
            Err(_) => self.store.principal_by_name(&request.principal).await,
        };
        let principal = found.map_err(|error| match error.kind() {
            ErrorKind::NotFound => EngineError::not_found(&format!("principal {}", request.principal))
                .with("principal", request.principal.as_str()),
            _ => error.into(),
        })?;
        let origin = Origin::of(actor, request_id);
        for _ in 0..5 {
            if principal.disabled_at.is_some() {
                return Err(disabled_already(&principal.id));
            }
            let now = self.now();
            let mut writes = Vec::new();
            // The skill of each write, for the line logged when it moved.
            let mut skills = Vec::new();
            let mut events = Vec::new();
            let (mut cancelled, mut returned) = (Vec::new(), Vec::new());
            for call in self.store.calls_of_principal(&principal.id).await? {
                let skill = self.store.skill(&call.skill_id).await?.skill;
                // A pending call not on its authority is here for a decision it took (an
                // approval basis, or the gate of a task's execution).
                if call.authority_principal_id == principal.id || call.status == CallStatus::Pending {
                    // A call on its authority ends with the reason given; one on its decision
                    // with the lost basis's word, as a claim would name it.
                    let reason = if call.authority_principal_id == principal.id {
                        reason
                    } else {
                        LostBasis::DeciderDisabled.as_str()
                    };
                    let cause = Cancellation { code: "basis_revoked", reason, by: actor.id(), initiator: "system" };
                    let (next, event) = self.cancelled(&call, &skill, &cause, now, &origin);
                    cancelled.push(next.id.clone());
                    writes.push(next);
                    skills.push(skill);
                    events.push(event);
                } else {
                    let message = format!("the executor {} was disabled ({reason})", principal.name);
                    let error = lease::error_value(reason, true, &message, None);
                    let (next, event) = self.failed(call, &skill, error, None, now, &origin);
                    returned.push(next.id.clone());
                    writes.push(next);
                    skills.push(skill);
                    events.push(event);
                }
            }
            let disabled = PrincipalDisabled {
                principal_id: principal.id.clone(),
                name: principal.name.clone(),
                reason: reason.to_owned(),
                cancelled_calls: cancelled.len(),
                returned_calls: returned.len(),
            };
            events.push(self.event(format!("principal:{}", principal.id), &disabled, &origin));
            match self.store.disable_principal(&principal.id, now, &writes, &events).await {
                Ok(()) => {
                    for (call, skill) in writes.iter().zip(&skills) {
                        self.moments.call_moved(call, &skill.name, &skill.version);
                    }
                    // The disable stands whatever happens next: a request this leaves pending is
                    // never called (the request worker and the claim check the operator).
                    if principal.kind == skill_api::PrincipalKind::Person
                        && let Err(error) = self.withdraw_requests_for(&principal.id).await
                    {
                        tracing::warn!(principal = %principal.id, error = %error, "withdrawing the requests made for a disabled person failed; none of them is called");
                    }
                    return Ok(DisableOut {
                        principal_id: principal.id,
                        name: principal.name,
                        disabled_at: view_time(&now),
                        reason: reason.to_owned(),
                        cancelled_calls: cancelled,
                        returned_calls: returned,
                    });
                }
                // A call moved meanwhile: read them again.
                Err(error) if error.kind() == ErrorKind::Stale => {}
                Err(error) if error.kind() == ErrorKind::Conflict => return Err(disabled_already(&principal.id)),
                Err(error) => return Err(error.into()),
            }
        }
        Err(busy())
    }
}

fn disabled_already(id: &str) -> EngineError {
    EngineError::new(Class::Conflict, Code::PrincipalDisabled, format!("the principal {id} is disabled already"))
        .with("principalId", id)
}
