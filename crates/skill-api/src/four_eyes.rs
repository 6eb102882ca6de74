//! Four eyes, as one rule: a decision that lets an external write happen is made by a **person**
//! who holds `approvals.decide` where the work is and who did not set that work in motion. The
//! work's provenance — its initiators, fixed when it was made and carried along every chain
//! (fact → rule → instance → task → approval) — says who set it in motion; an agent counts as the
//! person operating it. [`may_decide`] is the rule; the engine (deciding, retrying, the list of
//! approvals to decide, a process write's basis, the console) and `journal verify` and `explain`
//! all call it, over the same facts.

use serde::{Deserialize, Serialize};
use skill_contract::codes::Code;

use crate::{HeldGrant, PrincipalKind};

/// The permission a decider holds where the work is.
pub const DECIDE: &str = "approvals.decide";

/// What an initiator did that set the work in motion.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum InitiatorRole {
    /// Made a task (by hand, or an agent's request).
    Created,
    /// Started a process instance.
    Started,
    /// Sent the fact a rule made the work from.
    Sent,
    /// Asked for the approval.
    Asked,
}

impl InitiatorRole {
    /// The verb as a sentence says it: "created", "started", "sent", "asked for".
    pub fn verb(self) -> &'static str {
        match self {
            Self::Created => "created",
            Self::Started => "started",
            Self::Sent => "sent",
            Self::Asked => "asked for",
        }
    }
}

/// A person who set a piece of work in motion, and how the work reached them.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Initiator {
    /// The person's principal id.
    pub person: String,
    pub role: InitiatorRole,
    /// The agent's principal id, when the person acted through an agent they operate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    /// The work between what they did and this work, first what they made: `fact:<id>`,
    /// `instance:<id>`, `task:<id>`, `approval:<id>`.
    #[serde(default)]
    pub via: Vec<String>,
}

impl Initiator {
    /// This initiator as seen from `work` (`task:<id>`, …), one link further down the chain.
    #[must_use]
    pub fn reaching(&self, work: String) -> Self {
        let mut via = self.via.clone();
        if via.last() != Some(&work) {
            via.push(work);
        }
        Self { via, ..self.clone() }
    }
}

/// `initiators`, each one link further down the chain (to `work`), with the ones in `more`, each
/// person's first way in kept once.
pub fn carried(initiators: &[Initiator], work: &str, more: &[Initiator]) -> Vec<Initiator> {
    let mut all: Vec<Initiator> = Vec::new();
    for initiator in more.iter().cloned().chain(initiators.iter().map(|one| one.reaching(work.to_owned()))) {
        if !all.iter().any(|kept| kept.person == initiator.person && kept.agent == initiator.agent) {
            all.push(initiator);
        }
    }
    all
}

/// Whether holding `held` gives `wanted`: `org.manage` includes `org.read`; `tasks.write` and
/// `approvals.decide` include `tasks.read`; a `.write` includes its `.read`.
pub fn implies(held: &str, wanted: &str) -> bool {
    held == wanted
        || matches!(
            (held, wanted),
            ("org.manage", "org.read")
                | ("tasks.write" | "approvals.decide", "tasks.read")
                | ("knowledge.write", "knowledge.read")
                | ("facts.write", "facts.read")
        )
}

/// Who decides, as the decision records them.
#[derive(Debug, Clone, Copy)]
pub struct Decider<'a> {
    pub id: &'a str,
    pub kind: PrincipalKind,
    /// What they held when deciding.
    pub grants: &'a [HeldGrant],
}

/// The work a decision authorizes, as its approval records it.
#[derive(Debug, Clone, Copy)]
pub struct Work<'a> {
    pub workspace_id: &'a str,
    /// Who asked for the decision (a person, an agent, or a process's or rule's agent).
    pub requested_by: &'a str,
    /// Who set it in motion, the requester's person included.
    pub initiators: &'a [Initiator],
}

/// Why a decider may not decide.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal<'a> {
    /// They do not hold `approvals.decide` in the work's workspace.
    NoPermission,
    /// An agent or an executor: decisions are people's.
    NotAPerson(PrincipalKind),
    /// They asked for the decision themselves.
    Requester,
    /// They set the work in motion, as this initiator says.
    Initiator(&'a Initiator),
}

impl Refusal<'_> {
    /// The error code the core answers and the finding `journal verify` reports.
    pub fn code(&self) -> Code {
        match self {
            Self::NoPermission => Code::PermissionDenied,
            Self::NotAPerson(_) => Code::DeciderNotAPerson,
            Self::Requester => Code::SelfApprovalRefused,
            Self::Initiator(_) => Code::DeciderIsInitiator,
        }
    }

    /// What it means, in a sentence naming the decider as `decider` and principals by `name`.
    pub fn explain(&self, decider: &str, name: &dyn Fn(&str) -> String) -> String {
        match self {
            Self::NoPermission => format!("{decider} does not hold {DECIDE} in the work's workspace"),
            Self::NotAPerson(kind) => format!("a person decides; {decider} is an {kind}"),
            Self::Requester => format!("{decider} asked for this decision: the requester never decides it"),
            Self::Initiator(initiator) => format!(
                "{decider} set this work in motion and cannot decide it: {}; a second person decides",
                how(initiator, name)
            ),
        }
    }
}

/// How `initiator` reached the work: "they sent fact:F (through the agent A), which became
/// instance:I, task:T".
pub fn how(initiator: &Initiator, name: &dyn Fn(&str) -> String) -> String {
    let mut text = format!("{} {} ", name(&initiator.person), initiator.role.verb());
    let mut via = initiator.via.iter();
    text.push_str(via.next().map_or("it", String::as_str));
    if let Some(agent) = &initiator.agent {
        text.push_str(&format!(" through the agent {}", name(agent)));
    }
    let rest: Vec<&str> = via.map(String::as_str).collect();
    if !rest.is_empty() {
        text.push_str(&format!(", which reached this decision through {}", rest.join(", ")));
    }
    text
}

/// A grant as a decision's event writes it — `PERMISSION`, or `PERMISSION@WORKSPACE-ID` — read.
pub fn grant_of(text: &str) -> HeldGrant {
    match text.split_once('@') {
        Some((permission, workspace)) => {
            HeldGrant { workspace_id: Some(workspace.to_owned()), permission: permission.to_owned() }
        }
        None => HeldGrant { workspace_id: None, permission: text.to_owned() },
    }
}

/// Whether `grants` give `permission` in `workspace_id` (or everywhere).
pub fn holds(grants: &[HeldGrant], permission: &str, workspace_id: &str) -> bool {
    grants.iter().any(|grant| {
        grant.workspace_id.as_deref().is_none_or(|id| id == workspace_id) && implies(&grant.permission, permission)
    })
}

/// **The rule.** `decider` may make a decision that authorizes `work`'s external write only if
/// they hold `approvals.decide` in its workspace, are a person, did not ask for the decision and
/// are none of the persons who set the work in motion.
pub fn may_decide<'w>(decider: &Decider<'_>, work: &Work<'w>) -> Result<(), Refusal<'w>> {
    if !holds(decider.grants, DECIDE, work.workspace_id) {
        return Err(Refusal::NoPermission);
    }
    if decider.kind != PrincipalKind::Person {
        return Err(Refusal::NotAPerson(decider.kind));
    }
    if decider.id == work.requested_by {
        return Err(Refusal::Requester);
    }
    match work.initiators.iter().find(|initiator| initiator.person == decider.id) {
        Some(initiator) => Err(Refusal::Initiator(initiator)),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn grant(permission: &str, workspace: Option<&str>) -> HeldGrant {
        HeldGrant { workspace_id: workspace.map(str::to_owned), permission: permission.to_owned() }
    }

    fn started_by(person: &str, agent: Option<&str>) -> Initiator {
        Initiator {
            person: person.into(),
            role: InitiatorRole::Sent,
            agent: agent.map(str::to_owned),
            via: vec!["fact:f".into()],
        }
    }

    #[test]
    fn a_second_person_with_the_permission_decides_and_nobody_else() {
        let decide = [grant(DECIDE, Some("w"))];
        let initiators = [started_by("ana", Some("desk"))];
        let work = Work { workspace_id: "w", requested_by: "proc-agent", initiators: &initiators };
        let person = |id| Decider { id, kind: PrincipalKind::Person, grants: &decide };
        assert_eq!(may_decide(&person("bo"), &work), Ok(()));
        assert_eq!(may_decide(&person("ana"), &work), Err(Refusal::Initiator(&initiators[0])));
        let asked = Work { requested_by: "bo", ..work };
        assert_eq!(may_decide(&person("bo"), &asked), Err(Refusal::Requester));
        let agent = Decider { id: "desk", kind: PrincipalKind::Agent, grants: &decide };
        assert_eq!(may_decide(&agent, &work), Err(Refusal::NotAPerson(PrincipalKind::Agent)));
        let elsewhere = [grant(DECIDE, Some("other")), grant("tasks.write", None)];
        let outsider = Decider { id: "cy", kind: PrincipalKind::Person, grants: &elsewhere };
        assert_eq!(may_decide(&outsider, &work), Err(Refusal::NoPermission));
        let everywhere = [grant(DECIDE, None)];
        let org = Decider { id: "cy", kind: PrincipalKind::Person, grants: &everywhere };
        assert_eq!(may_decide(&org, &work), Ok(()));
    }

    #[test]
    fn initiators_are_carried_down_the_chain_once_each() {
        let fact = [started_by("ana", None)];
        let instance = carried(&fact, "instance:i", &[]);
        let task = carried(&instance, "task:t", &[]);
        assert_eq!(task[0].via, ["fact:f", "instance:i", "task:t"]);
        let asker = Initiator { person: "bo".into(), role: InitiatorRole::Asked, agent: None, via: vec![] };
        let approval = carried(&task, "approval:a", &[asker.clone(), started_by("ana", None)]);
        assert_eq!(approval.len(), 2, "{approval:?}");
        assert_eq!(approval[0], asker);
        let text = how(&task[0], &|id| format!("<{id}>"));
        assert_eq!(text, "<ana> sent fact:f, which reached this decision through instance:i, task:t");
        let through = how(&started_by("ana", Some("desk")), &|id| id.to_owned());
        assert_eq!(through, "ana sent fact:f through the agent desk");
    }
}
