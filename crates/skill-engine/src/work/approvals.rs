//! Approvals as records: made (pending) for an open task, withdrawn, read and shown; and who
//! may decide one — the four-eyes rule ([`four_eyes::may_decide`]) with its refusals named.
//! Asking and deciding are `decisions.rs`.
use skill_api::events::{ApprovalRequested, ApprovalWithdrawn};
use skill_api::four_eyes::{self, InitiatorRole};

use serde_json::Value;
use skill_api::{
    ActionOut, ActionStatus, ApprovalOut, ApprovalStatus, Items, OfTaskQuery, OutcomeOut, RequestedCallOut, TaskOut,
};
use skill_contract::codes::Code;
use skill_store::ErrorKind;
use skill_store::records::{ActionRecord, ApprovalRecord, Event, TaskRecord, WorkChange};

use crate::actor::Actor;
use crate::catalog::view_time;
use crate::error::{Class, EngineError, Result};
use crate::{Engine, Origin};

/// The most retries of one action.
pub const MAX_RETRIES: i32 = 10;

/// Whether `action` failed for a reason that may pass and may be retried once more.
pub(crate) fn retryable(action: &ActionRecord) -> bool {
    let Some(error) = action.error.as_ref().filter(|_| action.status == ActionStatus::Failed) else { return false };
    let passing = match (error.retryable, Code::parse(&error.code)) {
        (Some(retryable), _) => retryable,
        // Nobody claimed the call: the executors were away, not the call wrong.
        (None, Some(Code::ApprovalOutcomeSkillWaitExpired)) => true,
        (None, code) => code.is_some_and(|code| code.info().retryable == skill_contract::codes::Retry::Yes),
    };
    passing && action.retries < MAX_RETRIES
}

impl Engine {
    /// A pending approval `actor` asks for on `task`, and its event. Its initiators — who set its
    /// work in motion, none of whom decides it — are the requester's person and the task's.
    pub(crate) fn new_approval(
        &self,
        actor: &Actor,
        task: &TaskRecord,
        gate: bool,
        comment: Option<&str>,
        call: Option<(String, Value)>,
        request_id: Option<&str>,
    ) -> Result<(ApprovalRecord, skill_store::records::Event)> {
        let comment = comment.unwrap_or_default().to_owned();
        if comment.chars().count() > 10_000 {
            return Err(EngineError::invalid_request("a comment is at most 10,000 characters").with("field", "comment"));
        }
        let now = self.now();
        let id = self.new_id();
        let link = format!("approval:{id}");
        let asker = actor.initiators_of(InitiatorRole::Asked, &link);
        let approval = ApprovalRecord {
            initiators: four_eyes::carried(&task.initiators, &link, &asker),
            id,
            task_id: task.id.clone(),
            gate,
            status: ApprovalStatus::Pending,
            requested_by: actor.id().to_owned(),
            request_comment: comment,
            decided_by: None,
            decided_at: None,
            comment: String::new(),
            decision_authority: None,
            withdrawn_by: None,
            withdrawn_at: None,
            outcome_status: None,
            outcome_reaction: None,
            call_skill_id: call.as_ref().map(|(skill, _)| skill.clone()),
            call_inputs: call.map(|(_, inputs)| inputs),
            row_version: 1,
            created_at: now,
            updated_at: now,
        };
        let requested = ApprovalRequested {
            task_id: approval.task_id.clone(),
            gate: approval.gate,
            requested_by: approval.requested_by.clone(),
            call_skill_id: approval.call_skill_id.clone(),
            workspace_id: Some(task.workspace_id.clone()),
            initiators: approval.initiators.clone(),
        };
        let event = self.event(format!("approval:{}", approval.id), &requested, &Origin::of(actor, request_id));
        Ok((approval, event))
    }

    /// The approvals of a task, oldest first.
    pub async fn approvals(&self, actor: &Actor, query: &OfTaskQuery) -> Result<Items<ApprovalOut>> {
        let task = self.visible_task(actor, &query.task, None).await?;
        let mut items = Vec::new();
        for approval in self.store.approvals(&task.id).await? {
            let actions = self.store.actions(&approval.id).await?;
            items.push(self.approval_out(approval, actions).await?);
        }
        Ok(Items { items })
    }

    /// One approval with its outcome.
    pub async fn approval(&self, actor: &Actor, id: &str) -> Result<ApprovalOut> {
        let approval = self.visible_approval(actor, id).await?;
        let actions = self.store.actions(&approval.id).await?;
        self.approval_out(approval, actions).await
    }

    /// `approval` withdrawn now by `by` (the core when `None`), with its event.
    pub(crate) fn withdrawal(
        &self,
        approval: &ApprovalRecord,
        by: Option<&str>,
        origin: &Origin,
    ) -> (ApprovalRecord, Event) {
        let now = self.now();
        let withdrawn = ApprovalRecord {
            status: ApprovalStatus::Withdrawn,
            withdrawn_by: by.map(str::to_owned),
            withdrawn_at: Some(now),
            row_version: approval.row_version + 1,
            updated_at: now,
            ..approval.clone()
        };
        let data = ApprovalWithdrawn {
            task_id: approval.task_id.clone(),
            withdrawn_by: by.unwrap_or("core").to_owned(),
            was: approval.status,
        };
        (withdrawn, self.event(format!("approval:{}", approval.id), &data, origin))
    }

    /// The pending approvals of `task`, withdrawn by the core in the write that closes it: no
    /// one decides a gate of a closed task, and none waits in a decider's list.
    pub(crate) async fn withdraw_gates(
        &self,
        task: &TaskRecord,
        origin: &Origin,
        changes: &mut Vec<WorkChange>,
        events: &mut Vec<Event>,
    ) -> Result<()> {
        for approval in self.store.approvals(&task.id).await? {
            if approval.status == ApprovalStatus::Pending {
                let (withdrawn, event) = self.withdrawal(&approval, None, origin);
                events.push(event);
                changes.push(WorkChange::UpdateApproval(withdrawn));
            }
        }
        Ok(())
    }

    /// The pending approvals `actor` may decide (`approvals.decide` in their tasks' workspaces, not
    /// asked or set in motion by `actor`), with their tasks, oldest first, at most `limit` (1 to
    /// 500; fewer when some of the oldest are theirs).
    pub async fn approvals_to_decide(&self, actor: &Actor, limit: u32) -> Result<Vec<(ApprovalOut, TaskOut)>> {
        let workspaces = actor.workspaces_with("approvals.decide");
        if workspaces.as_ref().is_some_and(Vec::is_empty) {
            return Ok(Vec::new());
        }
        let limit = i64::from(limit.clamp(1, 500));
        let mut out = Vec::new();
        // Many approvals, few task types: each type read once.
        let mut types: std::collections::HashMap<String, skill_store::records::TaskTypeRecord> =
            std::collections::HashMap::new();
        for approval in self.store.approvals_to_decide(workspaces.as_deref(), actor.id(), limit).await? {
            let task = self.store.task(&approval.task_id).await?;
            // Only what the four-eyes rule lets them decide: not what they set in motion.
            let work = four_eyes::Work {
                workspace_id: &task.workspace_id,
                requested_by: &approval.requested_by,
                initiators: &approval.initiators,
            };
            if self.may_decide(actor, &approval.id, &work).await.is_err() {
                continue;
            }
            if !types.contains_key(&task.task_type_id) {
                types.insert(task.task_type_id.clone(), self.store.task_type(&task.task_type_id).await?);
            }
            let task_type = &types[&task.task_type_id];
            let shown = self.approval_out(approval, Vec::new()).await?;
            out.push((shown, crate::paths::task_out(task, task_type)));
        }
        Ok(out)
    }

    /// Approval `id` and its task, for `actor` to decide — or to retry the decision's outcome,
    /// which carries it out again — as the four-eyes rule lets them ([`four_eyes::may_decide`]):
    /// `approvals.decide` in the task's workspace, a person, not who asked for it and none of
    /// who set its work in motion (`404` for an approval it may not see).
    pub(crate) async fn for_decider(&self, actor: &Actor, id: &str) -> Result<(ApprovalRecord, TaskRecord)> {
        let approval = self.visible_approval(actor, id).await?;
        let task = self.store.task(&approval.task_id).await?;
        let work = four_eyes::Work {
            workspace_id: &task.workspace_id,
            requested_by: &approval.requested_by,
            initiators: &approval.initiators,
        };
        self.may_decide(actor, &approval.id, &work).await?;
        Ok((approval, task))
    }

    /// `Ok` when the four-eyes rule ([`four_eyes::may_decide`]) lets `actor` decide the approval
    /// `approval_id` of `work`; otherwise the refusal, its code the rule's, naming the initiator
    /// the decider is and how the work reached them. What deciding, retrying and the console's
    /// forms all ask.
    pub async fn may_decide(&self, actor: &Actor, approval_id: &str, work: &four_eyes::Work<'_>) -> Result<()> {
        let grants = actor.snapshot().grants;
        let decider = four_eyes::Decider { id: actor.id(), kind: actor.principal().kind, grants: &grants };
        let Err(refusal) = four_eyes::may_decide(&decider, work) else { return Ok(()) };
        Err(match refusal {
            four_eyes::Refusal::NoPermission => {
                EngineError::forbidden(four_eyes::DECIDE).with("workspaceId", work.workspace_id)
            }
            four_eyes::Refusal::NotAPerson(_) => super::not_a_person(actor),
            four_eyes::Refusal::Requester => EngineError::new(
                Class::Forbidden,
                refusal.code(),
                "the requester of an approval never decides it, nor retries its outcome: ask someone else",
            )
            .with("approvalId", approval_id),
            four_eyes::Refusal::Initiator(initiator) => {
                let mut names = std::collections::HashMap::new();
                for id in std::iter::once(&initiator.person).chain(initiator.agent.as_ref()) {
                    names.insert(id.clone(), self.principal_name(id).await?);
                }
                let name = |id: &str| names.get(id).cloned().unwrap_or_else(|| id.to_owned());
                EngineError::new(Class::Forbidden, refusal.code(), refusal.explain("you", &name))
                    .with("approvalId", approval_id)
                    .with("initiator", serde_json::to_value(initiator).unwrap_or_default())
            }
        })
    }

    /// The approval `id` if its task is visible to `actor`; `404` otherwise.
    pub(crate) async fn visible_approval(&self, actor: &Actor, id: &str) -> Result<ApprovalRecord> {
        let hidden = || EngineError::not_found(&format!("approval {id}")).with("approvalId", id);
        let approval = match self.store.approval(id).await {
            Ok(approval) => approval,
            Err(error) if error.kind() == ErrorKind::NotFound => return Err(hidden()),
            Err(error) => return Err(error.into()),
        };
        self.visible_task(actor, &approval.task_id, None).await.map_err(|_| hidden())?;
        Ok(approval)
    }
}

impl Engine {
    /// An approval as the API shows it, with its outcome's actions and the call it was asked for.
    pub(crate) async fn approval_out(
        &self,
        approval: ApprovalRecord,
        actions: Vec<ActionRecord>,
    ) -> Result<ApprovalOut> {
        let call = match (&approval.call_skill_id, &approval.call_inputs) {
            (Some(id), Some(inputs)) => {
                let skill = self.store.skill(id).await?.skill;
                Some(RequestedCallOut {
                    skill: format!("{}@{}", skill.name, skill.version),
                    skill_id: skill.id,
                    inputs: inputs.clone(),
                })
            }
            _ => None,
        };
        Ok(approval_view(approval, actions, call))
    }
}

fn approval_view(approval: ApprovalRecord, actions: Vec<ActionRecord>, call: Option<RequestedCallOut>) -> ApprovalOut {
    let outcome = approval.outcome_status.map(|status| OutcomeOut {
        status,
        reaction: approval.outcome_reaction,
        actions: actions
            .into_iter()
            .map(|action| ActionOut {
                retryable: retryable(&action),
                attempts: action.attempts,
                retries: action.retries,
                index: action.action_index,
                action: action.action,
                skill_id: action.skill_id,
                inputs: action.inputs,
                status: action.status,
                invocation_id: action.invocation_id,
                result: action.result,
                error: action.error,
            })
            .collect(),
    });
    ApprovalOut {
        id: approval.id,
        task_id: approval.task_id,
        gate: approval.gate,
        status: approval.status,
        requested_by: approval.requested_by,
        initiators: approval.initiators,
        request_comment: approval.request_comment,
        decided_by: approval.decided_by,
        decided_at: approval.decided_at.as_ref().map(view_time),
        comment: approval.comment,
        withdrawn_by: approval.withdrawn_by,
        withdrawn_at: approval.withdrawn_at.as_ref().map(view_time),
        outcome,
        call,
        created_at: view_time(&approval.created_at),
        updated_at: view_time(&approval.updated_at),
    }
}

/// A grant as a decision's event names it: `PERMISSION`, or `PERMISSION@WORKSPACE-ID`.
pub(super) fn grant_text(grant: &skill_store::records::Grant) -> String {
    match &grant.workspace_id {
        Some(workspace) => format!("{}@{workspace}", grant.permission),
        None => grant.permission.clone(),
    }
}
