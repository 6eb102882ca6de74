//! The closed sets of states of the core, defined once: the lifecycle of a call, a task, a run,
//! an approval and its outcome, an outcome action and an executor session; who requested a call;
//! what a typed output slot became. The store keeps them as text and reads them back through
//! [`State::parse`] (an unknown word is an error, never a default); the engine and the answers
//! use them as they are.
//!
//! A lifecycle's allowed moves are one table ([`Lifecycle::MOVES`]); the database's triggers
//! guard the same moves, and a conformance case per machine holds them equal.

use std::fmt;

use serde::{Deserialize, Serialize};
use skill_contract::{RiskLevel, SideEffects};

/// A word that is not one of a closed set's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownState {
    /// What the set is (`call status`).
    pub what: &'static str,
    pub found: String,
    pub allowed: &'static [&'static str],
}

impl fmt::Display for UnknownState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "`{}` is not a {}: one of {}", self.found, self.what, self.allowed.join(", "))
    }
}

impl std::error::Error for UnknownState {}

/// A closed set of words.
pub trait State: Copy + Eq + fmt::Debug + 'static {
    /// What the set is, for messages (`call status`).
    const WHAT: &'static str;
    /// Every member, in declaration order.
    const ALL: &'static [Self];
    /// Every member's word, in the same order.
    const WORDS: &'static [&'static str];

    fn as_str(self) -> &'static str;

    /// The member `word` names.
    fn parse(word: &str) -> Result<Self, UnknownState> {
        Self::ALL.iter().copied().find(|state| state.as_str() == word).ok_or_else(|| UnknownState {
            what: Self::WHAT,
            found: word.to_owned(),
            allowed: Self::WORDS,
        })
    }
}

/// A state machine: the moves from one state to another that its lifecycle allows. Staying in
/// a state is always allowed (a row changes in other ways); every other move is in the table or
/// refused.
pub trait Lifecycle: State {
    /// Every allowed `(from, to)` with `from != to`.
    const MOVES: &'static [(Self, Self)];

    /// Whether a row may go from `from` to `to`.
    fn allows(from: Self, to: Self) -> bool {
        from == to || Self::MOVES.contains(&(from, to))
    }

    /// Whether it may move from this state to another state `to` (not stay).
    fn can_become(self, to: Self) -> bool {
        Self::MOVES.contains(&(self, to))
    }

    /// Whether nothing moves out of this state.
    fn is_terminal(self) -> bool {
        !Self::MOVES.iter().any(|(from, _)| *from == self)
    }
}

macro_rules! states {
    (
        $(#[$meta:meta])*
        $name:ident, what = $what:literal,
        { $( $(#[$vmeta:meta])* $variant:ident => $word:literal ),+ $(,)? }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, schemars::JsonSchema)]
        pub enum $name {
            $( $(#[$vmeta])* #[serde(rename = $word)] $variant ),+
        }

        impl State for $name {
            const WHAT: &'static str = $what;
            const ALL: &'static [Self] = &[$(Self::$variant),+];
            const WORDS: &'static [&'static str] = &[$($word),+];

            fn as_str(self) -> &'static str {
                match self {
                    $( Self::$variant => $word ),+
                }
            }
        }

        impl $name {
            pub fn as_str(self) -> &'static str {
                State::as_str(self)
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(State::as_str(*self))
            }
        }

        impl From<$name> for serde_json::Value {
            fn from(state: $name) -> Self {
                serde_json::Value::String(State::as_str(state).to_owned())
            }
        }

        impl std::str::FromStr for $name {
            type Err = UnknownState;
            fn from_str(word: &str) -> Result<Self, UnknownState> {
                <Self as State>::parse(word)
            }
        }
    };
}

states! {
    /// Where a call is in its life.
    CallStatus, what = "call status",
    {
        /// Waiting for an executor (first attempt, or a retry after its backoff).
        Pending => "pending",
        /// An executor holds its lease.
        Running => "running",
        Succeeded => "succeeded",
        Failed => "failed",
        Cancelled => "cancelled",
    }
}

impl Lifecycle for CallStatus {
    const MOVES: &'static [(Self, Self)] = &[
        (Self::Pending, Self::Running),
        (Self::Pending, Self::Cancelled),
        // A retryable failure, or a lost lease, puts the call back in the queue.
        (Self::Running, Self::Pending),
        (Self::Running, Self::Succeeded),
        (Self::Running, Self::Failed),
        (Self::Running, Self::Cancelled),
    ];
}

states! {
    /// Where a task is: open, or closed for good.
    TaskStatus, what = "task status",
    { Open => "open", Done => "done", Failed => "failed", Cancelled => "cancelled" }
}

impl Lifecycle for TaskStatus {
    const MOVES: &'static [(Self, Self)] =
        &[(Self::Open, Self::Done), (Self::Open, Self::Failed), (Self::Open, Self::Cancelled)];
}

states! {
    /// Where an agent's request for an external write is: waiting for a person, approved (the
    /// call made for it), ended with the call, or decided against, expired or withdrawn.
    RequestStatus, what = "request status",
    {
        Pending => "pending",
        Approved => "approved",
        Succeeded => "succeeded",
        Failed => "failed",
        Rejected => "rejected",
        Expired => "expired",
        Withdrawn => "withdrawn",
    }
}

impl Lifecycle for RequestStatus {
    const MOVES: &'static [(Self, Self)] = &[
        (Self::Pending, Self::Approved),
        (Self::Pending, Self::Rejected),
        (Self::Pending, Self::Expired),
        (Self::Pending, Self::Withdrawn),
        (Self::Pending, Self::Failed),
        (Self::Approved, Self::Succeeded),
        (Self::Approved, Self::Failed),
        (Self::Approved, Self::Withdrawn),
    ];
}

states! {
    /// Where one rule's evaluation of one fact is: the condition did not hold (or failed), or it
    /// held and the interpretation is asked for, waited on, and the work ensured.
    RuleEvaluationStatus, what = "rule evaluation status",
    {
        /// The condition held; the interpretation is not asked for yet (or the work not made).
        Matched => "matched",
        /// The condition did not hold: nothing to do.
        NotMatched => "not_matched",
        /// The interpretation's call was made; the evaluation waits for its end.
        Waiting => "waiting",
        /// The work was ensured.
        Done => "done",
        /// The condition, the call or the work failed (the error says which).
        Failed => "failed",
        /// The interpretation did not end within 24 hours.
        Expired => "expired",
    }
}

impl Lifecycle for RuleEvaluationStatus {
    const MOVES: &'static [(Self, Self)] = &[
        (Self::Matched, Self::Waiting),
        (Self::Matched, Self::Done),
        (Self::Matched, Self::Failed),
        (Self::Waiting, Self::Done),
        (Self::Waiting, Self::Failed),
        (Self::Waiting, Self::Expired),
    ];
}

states! {
    /// Where a process instance is: running (moving, or waiting for a call, a task, a fact or a
    /// time), or ended.
    InstanceStatus, what = "process instance status",
    {
        Running => "running",
        /// An `end {status: completed}` step, or past its last step.
        Completed => "completed",
        /// An `end {status: failed}` step, or a step that failed with nowhere to go.
        Failed => "failed",
        /// Cancelled by a person (with a reason).
        Cancelled => "cancelled",
    }
}

impl Lifecycle for InstanceStatus {
    const MOVES: &'static [(Self, Self)] =
        &[(Self::Running, Self::Completed), (Self::Running, Self::Failed), (Self::Running, Self::Cancelled)];
}

states! {
    /// Where one step of an instance is: open while it runs or waits, then done, failed, or
    /// closed without a result (its instance ended, or its call is asked for again as a new step).
    StepStatus, what = "process step status",
    { Open => "open", Done => "done", Failed => "failed", Closed => "closed" }
}

impl Lifecycle for StepStatus {
    const MOVES: &'static [(Self, Self)] =
        &[(Self::Open, Self::Done), (Self::Open, Self::Failed), (Self::Open, Self::Closed)];
}

states! {
    /// What a process step does: its action's word, as steps are kept and shown.
    StepKind, what = "process step kind",
    { Call => "call", Task => "task", Wait => "wait", Switch => "switch", Set => "set", End => "end" }
}

states! {
    /// Where a principal's run on a task is.
    RunStatus, what = "run status",
    { Running => "running", Succeeded => "succeeded", Failed => "failed", Cancelled => "cancelled" }
}

impl Lifecycle for RunStatus {
    const MOVES: &'static [(Self, Self)] =
        &[(Self::Running, Self::Succeeded), (Self::Running, Self::Failed), (Self::Running, Self::Cancelled)];
}

states! {
    /// Where an approval is: asked, decided, or withdrawn (before or after its decision).
    ApprovalStatus, what = "approval status",
    { Pending => "pending", Approved => "approved", Rejected => "rejected", Withdrawn => "withdrawn" }
}

impl Lifecycle for ApprovalStatus {
    const MOVES: &'static [(Self, Self)] = &[
        (Self::Pending, Self::Approved),
        (Self::Pending, Self::Rejected),
        (Self::Pending, Self::Withdrawn),
        (Self::Approved, Self::Withdrawn),
    ];
}

impl ApprovalStatus {
    /// Whether a person decided it (approved or rejected).
    pub fn decided(self) -> bool {
        matches!(self, Self::Approved | Self::Rejected)
    }
}

states! {
    /// Where the outcome of a decision is: its actions run, then it ended.
    OutcomeStatus, what = "outcome status",
    {
        Running => "running",
        Succeeded => "succeeded",
        Failed => "failed",
        /// Nothing ran: the decision's actions were skipped.
        Skipped => "skipped",
    }
}

impl Lifecycle for OutcomeStatus {
    const MOVES: &'static [(Self, Self)] = &[
        (Self::Running, Self::Succeeded),
        (Self::Running, Self::Failed),
        (Self::Running, Self::Skipped),
        // A decider retried its failed actions.
        (Self::Failed, Self::Running),
    ];
}

states! {
    /// The reaction that ran after a decision's actions.
    OutcomeReaction, what = "outcome reaction",
    { OnSuccess => "onSuccess", OnFailure => "onFailure" }
}

states! {
    /// Where one action of a decision's outcome is.
    ActionStatus, what = "action status",
    {
        /// To be invoked.
        Pending => "pending",
        /// Its call runs.
        Invoked => "invoked",
        Succeeded => "succeeded",
        Failed => "failed",
        /// Its call did not run: the task closed, or the approval was withdrawn, first.
        Skipped => "skipped",
    }
}

impl Lifecycle for ActionStatus {
    const MOVES: &'static [(Self, Self)] = &[
        (Self::Pending, Self::Invoked),
        // Refused before its call was made.
        (Self::Pending, Self::Failed),
        (Self::Invoked, Self::Succeeded),
        (Self::Invoked, Self::Failed),
        // Its call lost its basis: the task closed, or the approval was withdrawn.
        (Self::Invoked, Self::Skipped),
        // A decider retried it.
        (Self::Failed, Self::Pending),
    ];
}

states! {
    /// Whether an executor's session is open.
    SessionStatus, what = "session status",
    { Active => "active", Closed => "closed" }
}

impl Lifecycle for SessionStatus {
    const MOVES: &'static [(Self, Self)] = &[(Self::Active, Self::Closed)];
}

states! {
    /// A skill version's status; it only moves forward.
    SkillStatus, what = "skill status",
    { Active => "active", Deprecated => "deprecated", Disabled => "disabled" }
}

impl Lifecycle for SkillStatus {
    const MOVES: &'static [(Self, Self)] =
        &[(Self::Active, Self::Deprecated), (Self::Active, Self::Disabled), (Self::Deprecated, Self::Disabled)];
}

states! {
    /// Who a call was requested by.
    RequesterKind, what = "requester kind",
    {
        /// A principal's own call.
        Principal => "principal",
        Rule => "rule",
        /// A decided approval's outcome.
        Approval => "approval",
        Verification => "verification",
        /// A task type's execution, in its run.
        Run => "run",
    }
}

states! {
    /// What a principal is.
    PrincipalKind, what = "principal kind",
    { Person => "person", Agent => "agent", Executor => "executor" }
}

states! {
    /// What became of one typed output slot of a call on a task.
    OutputStatus, what = "output status",
    {
        /// An artifact was made of it.
        Created => "created",
        /// A required slot the output left out.
        Missing => "missing",
        /// An optional slot the output left out.
        Absent => "absent",
        /// Its value was refused (`code`, `message` say why).
        Rejected => "rejected",
    }
}

states! {
    /// An executor session as the API shows it: the stored `active` or `closed`, or `expired` —
    /// active in its row, but past its expiry (no claim is made with it any more).
    SessionState, what = "session state",
    { Active => "active", Expired => "expired", Closed => "closed" }
}

impl SessionState {
    /// How a session stored as `status`, expiring (`expired`) or not, shows.
    pub fn of(status: SessionStatus, expired: bool) -> Self {
        match status {
            SessionStatus::Active if expired => Self::Expired,
            SessionStatus::Active => Self::Active,
            SessionStatus::Closed => Self::Closed,
        }
    }
}

states! {
    /// Why a pending call has not started.
    WaitingReason, what = "waiting reason",
    {
        /// An external write of its task's execution, while the task has a pending gate approval.
        HeldForApproval => "held_for_approval",
        /// Retried after a failure: it waits until its next attempt is due.
        Backoff => "backoff",
        /// No open executor session covers its implementation.
        NoExecutor => "no_executor",
        /// It waits its turn.
        Queued => "queued",
    }
}

impl WaitingReason {
    /// Why a pending call waits, the first that holds: a pending gate holds it, its backoff runs,
    /// no executor session covers it (`uncovered`), else its turn. A call's page and the metrics'
    /// count of the waiting calls both read it here.
    pub fn of(held: bool, later: bool, uncovered: bool) -> Self {
        match (held, later, uncovered) {
            (true, ..) => Self::HeldForApproval,
            (false, true, _) => Self::Backoff,
            (false, false, true) => Self::NoExecutor,
            (false, false, false) => Self::Queued,
        }
    }
}

states! {
    /// Why the core cancelled a call whose basis was lost (`basis_revoked`, the `message` of its
    /// error), at a claim or by a worker.
    LostBasis, what = "lost basis",
    {
        /// Its task closed.
        TaskTerminal => "task_terminal",
        /// Its approval is no longer approved (or an execution's gate was withdrawn).
        ApprovalWithdrawn => "approval_withdrawn",
        /// Its task's gate was rejected.
        GateRejected => "gate_rejected",
        /// The run of an execution ended.
        RunNotActive => "run_not_active",
        /// Its version was disabled.
        SkillDisabled => "skill_disabled",
        /// An execution's call waited past its deadline after its gate was approved.
        ExecutionDeadline => "execution_deadline",
        /// The person who decided its approval was disabled before the call was claimed.
        DeciderDisabled => "decider_disabled",
        /// Its process instance was cancelled (or is gone).
        ProcessCancelled => "process_cancelled",
        /// Its process step closed (the instance moved on or ended) before the call was claimed.
        ProcessStepClosed => "process_step_closed",
        /// The principal it was made for was disabled before it was claimed (a call made while
        /// the disable was being written, which the disable's own transaction did not see).
        AuthorityDisabled => "authority_disabled",
        /// A person an agent acted for when setting its work in motion (the agent's operator, or
        /// who had its token issued) was disabled before it was claimed: its approval's
        /// initiators, or its task's for an execution.
        OperatorDisabled => "operator_disabled",
    }
}

impl State for SideEffects {
    const WHAT: &'static str = "side effect";
    const ALL: &'static [Self] = &[Self::None, Self::ExternalRead, Self::ExternalWrite];
    const WORDS: &'static [&'static str] = Self::ALLOWED;

    fn as_str(self) -> &'static str {
        SideEffects::as_str(self)
    }
}

impl State for RiskLevel {
    const WHAT: &'static str = "risk level";
    const ALL: &'static [Self] = &[Self::Low, Self::Medium, Self::High];
    const WORDS: &'static [&'static str] = Self::ALLOWED;

    fn as_str(self) -> &'static str {
        RiskLevel::as_str(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip<S: State + Serialize + for<'de> Deserialize<'de>>() {
        assert_eq!(S::ALL.len(), S::WORDS.len());
        for (state, word) in S::ALL.iter().zip(S::WORDS) {
            assert_eq!(state.as_str(), *word);
            assert_eq!(S::parse(word), Ok(*state));
            assert_eq!(serde_json::to_value(state).expect("serializes"), serde_json::json!(word));
            assert_eq!(serde_json::from_value::<S>(serde_json::json!(word)).expect("reads back"), *state);
        }
        let unknown = S::parse("Pending ").expect_err("not a state");
        assert!(unknown.to_string().contains(S::WHAT), "{unknown}");
        assert!(serde_json::from_value::<S>(serde_json::json!("nope")).is_err());
    }

    #[test]
    fn every_set_reads_back_what_it_writes() {
        round_trip::<CallStatus>();
        round_trip::<TaskStatus>();
        round_trip::<RunStatus>();
        round_trip::<ApprovalStatus>();
        round_trip::<OutcomeStatus>();
        round_trip::<OutcomeReaction>();
        round_trip::<ActionStatus>();
        round_trip::<SessionStatus>();
        round_trip::<SessionState>();
        round_trip::<WaitingReason>();
        round_trip::<LostBasis>();
        round_trip::<SkillStatus>();
        round_trip::<RequesterKind>();
        round_trip::<PrincipalKind>();
        round_trip::<RequestStatus>();
        round_trip::<RuleEvaluationStatus>();
        round_trip::<InstanceStatus>();
        round_trip::<StepStatus>();
        round_trip::<StepKind>();
        round_trip::<OutputStatus>();
        round_trip::<SideEffects>();
        round_trip::<RiskLevel>();
    }

    #[test]
    fn terminal_states_are_the_ones_nothing_leaves() {
        assert!(CallStatus::Succeeded.is_terminal() && !CallStatus::Running.is_terminal());
        assert!(!ActionStatus::Failed.is_terminal(), "a failed action may be retried");
        assert!(ActionStatus::Skipped.is_terminal());
        assert!(TaskStatus::Done.is_terminal() && !TaskStatus::Open.is_terminal());
        assert!(CallStatus::allows(CallStatus::Succeeded, CallStatus::Succeeded), "staying is always allowed");
        assert_eq!(SessionState::of(SessionStatus::Active, true), SessionState::Expired);
        assert_eq!(SessionState::of(SessionStatus::Closed, true), SessionState::Closed, "closed before it expired");
        assert!(!CallStatus::allows(CallStatus::Pending, CallStatus::Succeeded));
    }
}
