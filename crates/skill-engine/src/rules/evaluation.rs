//! Evaluating facts, durably and idempotently. For each fact not evaluated yet, each rule of its
//! kind (the newest version of each key) is evaluated in the transaction that sets the fact's
//! `evaluated_at` (a batch of facts at a time), so any core may evaluate and none twice. A matched evaluation asks for its
//! interpretation (as the rule's agent, requester kind `rule`, key `rule:<ruleId>:<factId>`),
//! waits for the call's end — woken when it ends, with polling only as the safety net — and
//! ensures its work in one transaction with its end: a task per work key (found when one
//! exists), the interpretation's result as a `skill_result` artifact, the task's origin. A call
//! that has not ended after 24 hours is cancelled and the evaluation expires.

use chrono::Duration;
use serde_json::{Value, json};
use skill_api::events::{RuleEvaluated, RuleEvaluationEnded, RuleInterpretationRequested, TaskCreated};
use skill_api::{CallStatus, Failure, InvokeRequest, Lifecycle, MAX_FACT_DEPTH, RuleEvaluationStatus, TaskStatus};
use skill_contract::codes::Code;
use skill_contract::rule::EnsureWork;
use skill_store::ErrorKind;
use skill_store::records::{
    Event, FactRecord, InvocationRecord, RuleEvaluationRecord, RuleRecord, TaskOriginRecord, TaskRecord,
    TaskTypeRecord, Time, WorkChange,
};

use super::filled;
use crate::artifacts::NewArtifact;
use crate::basis::Internal;
use crate::cancellation::Cancellation;
use crate::error::{Class, EngineError, Result, written};
use crate::instances::Start;
use crate::paths::render;
use crate::scopes::{FactView, RuleScope};
use crate::{Engine, Origin};

/// How long an evaluation waits for its interpretation before it expires.
pub const RULE_WAIT_HOURS: i64 = 24;
/// How many facts, and how many evaluations, one pass takes at most.
const BATCH: i64 = 500;
/// How many evaluations move at once.
const PARALLEL: usize = 64;
/// How many times an interpretation is asked for at most (again after a failure that may pass).
const MAX_ASKS: i32 = 3;

impl Engine {
    /// Waits until a fact was recorded or a rule's call ended through this engine, or `within`
    /// passed (facts and calls also arrive through other cores).
    pub async fn rules_due(&self, within: std::time::Duration) {
        self.moments.wait_for_rules(within).await;
    }

    /// One pass: evaluates the facts no rule evaluated yet, then moves every evaluation that can
    /// move. Answers how many things moved.
    pub async fn run_rule_evaluations(&self, now: Time) -> Result<usize> {
        use futures::StreamExt;
        let mut moved = 0;
        let facts = self.store.unevaluated_facts(BATCH).await?;
        if !facts.is_empty() {
            moved += self.evaluate_facts(&facts, now).await?;
        }
        let expired_before = now - Duration::hours(RULE_WAIT_HOURS);
        let movable = self.store.movable_evaluations(expired_before, BATCH).await?;
        // The rules and their agents, read once for the pass.
        let mut pass = Pass::default();
        let fact_ids: Vec<String> = movable.iter().map(|evaluation| evaluation.fact_id.clone()).collect();
        if !fact_ids.is_empty() {
            pass.facts = self.store.facts_by_ids(&fact_ids).await?.into_iter().map(|f| (f.id.clone(), f)).collect();
        }
        for evaluation in &movable {
            if !pass.rules.contains_key(&evaluation.rule_id) {
                let rule = self.store.rule(&evaluation.rule_id).await?;
                if !pass.agents.contains_key(&rule.agent_principal_id) {
                    let agent = self.agent_actor(&rule.agent_principal_id).await.ok();
                    pass.agents.insert(rule.agent_principal_id.clone(), agent);
                }
                pass.rules.insert(rule.id.clone(), rule);
            }
        }
        let pass = &pass;
        // Evaluations are independent: several move at once (each guarded by its row version).
        let advanced: Vec<Result<usize>> = futures::stream::iter(movable)
            .map(|evaluation| self.advance_evaluation(evaluation, pass, now))
            .buffer_unordered(PARALLEL)
            .collect()
            .await;
        for one in advanced {
            moved += one?;
        }
        if pass.made_work.load(std::sync::atomic::Ordering::Relaxed) {
            // Tasks whose types run an execution.
            self.moments.outcomes_due();
        }
        Ok(moved)
    }

    /// The facts evaluated in one transaction; when another core took one of them first, each
    /// on its own.
    async fn evaluate_facts(&self, facts: &[FactRecord], now: Time) -> Result<usize> {
        let (mut changes, mut events) = (Vec::new(), Vec::new());
        // The rules of each kind and the key of each workspace, read once for the batch.
        let mut rules: std::collections::HashMap<String, Vec<RuleRecord>> = std::collections::HashMap::new();
        let mut workspaces: std::collections::HashMap<String, String> = std::collections::HashMap::new();
        // The agent each rule acts as (`None`: disabled), read once for the batch.
        let mut agents: std::collections::HashMap<String, Option<crate::Actor>> = std::collections::HashMap::new();
        for fact in facts {
            if !rules.contains_key(&fact.kind) {
                let of_kind = self.store.rules_for_kind(&fact.kind).await?;
                for rule in &of_kind {
                    if !agents.contains_key(&rule.agent_principal_id) {
                        let agent = self.agent_actor(&rule.agent_principal_id).await.ok();
                        agents.insert(rule.agent_principal_id.clone(), agent);
                    }
                }
                rules.insert(fact.kind.clone(), of_kind);
            }
            if !workspaces.contains_key(&fact.workspace_id) {
                let workspace = self.store.workspace_by_reference(&fact.workspace_id).await?;
                workspaces.insert(fact.workspace_id.clone(), workspace.key);
            }
            let (of_kind, key) = (&rules[&fact.kind], &workspaces[&fact.workspace_id]);
            let (more, journaled) = self.fact_changes(fact, of_kind, &agents, key, now);
            changes.extend(more);
            events.extend(journaled);
        }
        match self.store.write_work(&changes, &events).await {
            Ok(()) => return Ok(facts.len()),
            Err(error) if matches!(error.kind(), ErrorKind::Stale | ErrorKind::Conflict) => {}
            Err(error) => return Err(error.into()),
        }
        let mut moved = 0;
        for fact in facts {
            let of_kind = rules.get(&fact.kind).map_or(&[][..], Vec::as_slice);
            let key = workspaces.get(&fact.workspace_id).map_or("", String::as_str);
            let (changes, events) = self.fact_changes(fact, of_kind, &agents, key, now);
            moved += match self.store.write_work(&changes, &events).await {
                Ok(()) => 1,
                Err(error) if matches!(error.kind(), ErrorKind::Stale | ErrorKind::Conflict) => 0,
                Err(error) => return Err(error.into()),
            };
        }
        Ok(moved)
    }

    /// Each rule of the fact's kind evaluated, and the fact's `evaluated_at`: what one
    /// transaction writes.
    fn fact_changes(
        &self,
        fact: &FactRecord,
        rules: &[RuleRecord],
        agents: &std::collections::HashMap<String, Option<crate::Actor>>,
        workspace_key: &str,
        now: Time,
    ) -> (Vec<WorkChange>, Vec<Event>) {
        let document = RuleScope::of(FactView::of(fact, workspace_key)).document();
        let mut changes = Vec::new();
        let mut events = Vec::new();
        let system = Origin::default();
        for rule in rules {
            // A rule works where its agent may make work: a fact of another workspace is not
            // for it (and reaches neither its agent nor its interpretation).
            let agent = agents.get(&rule.agent_principal_id).cloned().flatten();
            if agent.as_ref().is_some_and(|agent| !agent.can_in("tasks.write", &fact.workspace_id)) {
                continue;
            }
            let (status, error) = if agent.is_none() {
                let message = "the agent the rule acts as is disabled: nothing is interpreted or made";
                (RuleEvaluationStatus::Failed, Some(Failure::new("principal_disabled", message)))
            } else if i64::from(fact.depth) > i64::from(MAX_FACT_DEPTH) {
                let message = format!(
                    "the fact comes from work that rules made {} times in a row: its evaluation stops here",
                    fact.depth
                );
                (RuleEvaluationStatus::Failed, Some(Failure::new("rule_loop_suspected", message)))
            } else if rule.spec.on.when.is_none() {
                (RuleEvaluationStatus::Matched, None)
            } else {
                // A condition too costly for this fact is refused before it runs, or stopped at
                // its time: it says so by its own code, not as a condition without a value.
                match self.condition(rule).and_then(|compiled| {
                    compiled.eval(&document).map_err(|error| {
                        let code = if error.over_budget { Code::RuleConditionTooCostly } else { Code::ConditionError };
                        EngineError::new(Class::Invalid, code, error.message)
                    })
                }) {
                    Ok(true) => (RuleEvaluationStatus::Matched, None),
                    Ok(false) => (RuleEvaluationStatus::NotMatched, None),
                    Err(error) if error.is(Code::RuleConditionTooCostly) => (
                        RuleEvaluationStatus::Failed,
                        Some(Failure::new(error.code, format!("the condition costs too much: {}", error.message))),
                    ),
                    Err(error) => (
                        RuleEvaluationStatus::Failed,
                        Some(Failure::new("condition_error", format!("the condition has no value: {}", error.message))),
                    ),
                }
            };
            let evaluation = RuleEvaluationRecord {
                id: self.new_id(),
                fact_id: fact.id.clone(),
                rule_id: rule.id.clone(),
                status,
                invocation_id: None,
                asks: 1,
                task_ids: Vec::new(),
                instance_ids: Vec::new(),
                artifact_id: None,
                error: error.clone(),
                row_version: 1,
                created_at: now,
                updated_at: now,
                ended_at: status.is_terminal().then_some(now),
            };
            let evaluated = RuleEvaluated {
                fact_id: fact.id.clone(),
                rule_id: rule.id.clone(),
                rule: format!("{}@{}", rule.key, rule.version),
                status,
                reason: error.as_ref().map(|error| error.code.clone()),
            };
            events.push(self.event(format!("rule_evaluation:{}", evaluation.id), &evaluated, &system));
            changes.push(WorkChange::InsertEvaluation(evaluation));
        }
        changes.push(WorkChange::FactEvaluated { fact_id: fact.id.clone(), at: now });
        (changes, events)
    }

    /// Moves one evaluation: a matched one asks for its interpretation (or ensures its work when
    /// it has none); a waiting one ensures its work once the call succeeded, fails with the call,
    /// or expires.
    async fn advance_evaluation(&self, evaluation: RuleEvaluationRecord, pass: &Pass, now: Time) -> Result<usize> {
        let Some(rule) = pass.rules.get(&evaluation.rule_id) else { return Ok(0) };
        let rule = rule.clone();
        let fact = match pass.facts.get(&evaluation.fact_id) {
            Some(fact) => fact.clone(),
            None => self.store.fact(&evaluation.fact_id).await?,
        };
        match evaluation.status {
            RuleEvaluationStatus::Matched if rule.spec.interpretation.is_some() => {
                self.interpret(evaluation, &rule, &fact, pass, now).await
            }
            RuleEvaluationStatus::Matched => self.ensure_work(evaluation, &rule, &fact, None, pass, now).await,
            RuleEvaluationStatus::Waiting => {
                let Some(call_id) = evaluation.invocation_id.clone() else { return Ok(0) };
                let call = self.store.invocation(&call_id).await?;
                match call.status {
                    CallStatus::Succeeded => self.ensure_work(evaluation, &rule, &fact, Some(&call), pass, now).await,
                    // A failure that may pass (its executor died holding it) is asked for again,
                    // with a new call, up to MAX_ASKS in all.
                    CallStatus::Failed
                        if call.error.as_ref().is_some_and(|error| error.retryable) && evaluation.asks < MAX_ASKS =>
                    {
                        self.interpret(evaluation, &rule, &fact, pass, now).await
                    }
                    CallStatus::Failed | CallStatus::Cancelled => {
                        let code = call.error.as_ref().map_or("call_failed", |error| error.code.as_str());
                        let (status, code) = if Code::parse(code) == Some(Code::RuleSkillWaitExpired) {
                            (RuleEvaluationStatus::Expired, code.to_owned())
                        } else {
                            (RuleEvaluationStatus::Failed, code.to_owned())
                        };
                        let message = call.error.as_ref().map_or("", |error| error.message.as_str());
                        let error = Failure::new(code, format!("the interpretation's call {}: {message}", call.status))
                            .of_invocation(&call.id);
                        self.end_evaluation(evaluation, status, error, now).await
                    }
                    CallStatus::Pending | CallStatus::Running => self.expire(evaluation, &call, now).await,
                }
            }
            _ => Ok(0),
        }
    }

    /// The interpretation's call, made as the rule's agent: the evaluation waits for it.
    async fn interpret(
        &self,
        evaluation: RuleEvaluationRecord,
        rule: &RuleRecord,
        fact: &FactRecord,
        pass: &Pass,
        now: Time,
    ) -> Result<usize> {
        let Some(interpretation) = &rule.spec.interpretation else { return Ok(0) };
        let workspace_key = pass.workspace_key(self, &fact.workspace_id).await?;
        let document = RuleScope::of(FactView::of(fact, &workspace_key)).document();
        // The first ask is keyed by rule and fact; an ask again (a waiting evaluation whose call
        // failed for a reason that may pass) is a new call with its number.
        let again = evaluation.status == RuleEvaluationStatus::Waiting;
        let asks = if again { evaluation.asks + 1 } else { evaluation.asks };
        let key = if asks == 1 {
            format!("rule:{}:{}", rule.id, fact.id)
        } else {
            format!("rule:{}:{}:{asks}", rule.id, fact.id)
        };
        let call = InvokeRequest {
            inputs: Some(filled(&interpretation.inputs, &document)),
            idempotency_key: Some(key),
            ..InvokeRequest::default()
        };
        let invoked = match pass.agent(self, &rule.agent_principal_id).await {
            // Its rights may have changed since the fact was evaluated: nothing leaves the
            // workspace for an agent that may not work there.
            Ok(agent) if !agent.can_in("tasks.write", &fact.workspace_id) => {
                Err(EngineError::forbidden("tasks.write").with("workspaceId", fact.workspace_id.as_str()))
            }
            Ok(agent) => {
                let internal = Some(Internal::Rule(&evaluation.id));
                self.invoke_by(&agent, &interpretation.skill, &call, None, internal).await
            }
            Err(error) => Err(error),
        };
        let invoked = match invoked {
            Ok(invoked) => invoked,
            Err(error) => {
                let error =
                    Failure::new(error.code, format!("the interpretation could not be asked for: {}", error.message))
                        .with_details(Value::Object(error.details));
                return self.end_evaluation(evaluation, RuleEvaluationStatus::Failed, error, now).await;
            }
        };
        let requested = RuleInterpretationRequested {
            fact_id: fact.id.clone(),
            invocation_id: invoked.invocation.id.clone(),
            skill: interpretation.skill.clone(),
        };
        let event = self.event(format!("rule_evaluation:{}", evaluation.id), &requested, &Origin::default());
        let next = RuleEvaluationRecord {
            status: RuleEvaluationStatus::Waiting,
            invocation_id: Some(invoked.invocation.id.clone()),
            asks,
            row_version: evaluation.row_version + 1,
            updated_at: now,
            ..evaluation
        };
        written(self.store.write_work(&[WorkChange::UpdateEvaluation(next)], &[event]).await).map(usize::from)
    }

    /// A waiting evaluation past its bound: its call cancelled (`rule_skill_wait_expired`), then
    /// it expires (a core killed between the two finds the call cancelled, and expires it).
    async fn expire(&self, evaluation: RuleEvaluationRecord, call: &InvocationRecord, now: Time) -> Result<usize> {
        if evaluation.created_at > now - Duration::hours(RULE_WAIT_HOURS) {
            return Ok(0);
        }
        let skill = self.store.skill(&call.skill_id).await?.skill;
        let cause = Cancellation {
            code: "rule_skill_wait_expired",
            reason: "the rule's interpretation did not end within 24 hours",
            by: "system",
            initiator: "system",
        };
        let (cancelled, event) = self.cancelled(call, &skill, &cause, now, &Origin::default());
        match self.store.update_invocation(&cancelled, &[event]).await {
            Ok(()) => {}
            Err(error) if error.kind() == ErrorKind::Stale => return Ok(0),
            Err(error) => return Err(error.into()),
        }
        let error = Failure::new(
            "rule_skill_wait_expired",
            "the interpretation did not end within 24 hours: its call was cancelled",
        )
        .of_invocation(&call.id);
        self.end_evaluation(evaluation, RuleEvaluationStatus::Expired, error, now).await
    }

    /// The evaluation ended without work: failed or expired, with why.
    async fn end_evaluation(
        &self,
        evaluation: RuleEvaluationRecord,
        status: RuleEvaluationStatus,
        error: Failure,
        now: Time,
    ) -> Result<usize> {
        let ended = RuleEvaluationEnded {
            fact_id: evaluation.fact_id.clone(),
            status,
            task_ids: Vec::new(),
            created_task_ids: Vec::new(),
            instance_ids: Vec::new(),
            created_instance_ids: Vec::new(),
            artifact_id: None,
            code: Some(error.code.clone()),
        };
        let event = self.event(format!("rule_evaluation:{}", evaluation.id), &ended, &Origin::default());
        let next = RuleEvaluationRecord {
            status,
            error: Some(error),
            row_version: evaluation.row_version + 1,
            updated_at: now,
            ended_at: Some(now),
            ..evaluation
        };
        written(self.store.write_work(&[WorkChange::UpdateEvaluation(next)], &[event]).await).map(usize::from)
    }

    /// The work the rule ensures, the interpretation's result as its evidence, and the
    /// evaluation's end, in one transaction. A work key taken meanwhile by another evaluation is
    /// read again and its task linked instead.
    #[allow(clippy::too_many_arguments)]
    async fn ensure_work(
        &self,
        evaluation: RuleEvaluationRecord,
        rule: &RuleRecord,
        fact: &FactRecord,
        call: Option<&InvocationRecord>,
        pass: &Pass,
        now: Time,
    ) -> Result<usize> {
        let workspace_key = pass.workspace_key(self, &fact.workspace_id).await?;
        let document = RuleScope::of(FactView::of(fact, &workspace_key)).interpreted(call).document();
        let agent = match pass.agent(self, &rule.agent_principal_id).await {
            Ok(agent) => agent,
            Err(error) => {
                let error = Failure::new(error.code, error.message);
                return self.end_evaluation(evaluation, RuleEvaluationStatus::Failed, error, now).await;
            }
        };
        for _ in 0..3 {
            let planned = match self.planned_work(&evaluation, rule, fact, &agent, &document, pass, now).await {
                Ok(planned) => planned,
                Err(error) => {
                    let error = Failure::new(error.code, format!("the work could not be made: {}", error.message))
                        .with_details(Value::Object(error.details));
                    return self.end_evaluation(evaluation, RuleEvaluationStatus::Failed, error, now).await;
                }
            };
            let Ensured { mut changes, mut events, task_ids, created, instance_ids, started } = planned;
            // An instance started: the rule's, or one a task it made started (its type names a process).
            let started_any = !started.is_empty() || changes.iter().any(|c| matches!(c, WorkChange::InsertInstance(_)));
            let artifact = match call {
                Some(call) => Some(self.evidence(call, rule, fact, &evaluation, task_ids.first(), pass).await?),
                None => None,
            };
            let artifact_id = artifact.as_ref().map(|a| a.id.clone());
            if let Some(artifact) = artifact {
                changes.push(WorkChange::InsertArtifact(artifact));
            }
            let ended = RuleEvaluationEnded {
                fact_id: fact.id.clone(),
                status: RuleEvaluationStatus::Done,
                task_ids: task_ids.clone(),
                created_task_ids: created,
                instance_ids: instance_ids.clone(),
                created_instance_ids: started,
                artifact_id: artifact_id.clone(),
                code: None,
            };
            events.push(self.event(format!("rule_evaluation:{}", evaluation.id), &ended, &Origin::default()));
            let next = RuleEvaluationRecord {
                status: RuleEvaluationStatus::Done,
                task_ids,
                instance_ids,
                artifact_id,
                row_version: evaluation.row_version + 1,
                updated_at: now,
                ended_at: Some(now),
                ..evaluation.clone()
            };
            changes.push(WorkChange::UpdateEvaluation(next));
            match self.store.write_work(&changes, &events).await {
                Ok(()) => {
                    pass.made_work.store(true, std::sync::atomic::Ordering::Relaxed);
                    if !started_any {
                        return Ok(1);
                    }
                    self.moments.processes_due();
                    return Ok(1);
                }
                // A work key taken meanwhile: read the origins again.
                Err(error) if error.kind() == ErrorKind::Conflict => {}
                Err(error) if error.kind() == ErrorKind::Stale => return Ok(0),
                Err(error) => return Err(error.into()),
            }
        }
        Err(crate::error::busy())
    }

    /// The tasks to make and the instances to start (and those already there under their work
    /// keys), with the tasks' origins and the events.
    #[allow(clippy::too_many_arguments)]
    async fn planned_work(
        &self,
        evaluation: &RuleEvaluationRecord,
        rule: &RuleRecord,
        fact: &FactRecord,
        agent: &crate::Actor,
        document: &Value,
        pass: &Pass,
        now: Time,
    ) -> Result<Ensured> {
        let mut ensured = Ensured::default();
        if !agent.can_in("tasks.write", &fact.workspace_id) {
            return Err(EngineError::forbidden("tasks.write")
                .with("workspaceId", fact.workspace_id.as_str())
                .with("agent", agent.principal().name.as_str()));
        }
        for (index, work) in rule.spec.ensure_work.iter().enumerate() {
            let task = match work {
                EnsureWork::Task(task) => task,
                EnsureWork::Process(process) => {
                    let at = format!("spec.ensureWork[{index}].process");
                    self.ensure_instance(&mut ensured, process, &at, fact, document, pass, now).await?;
                    continue;
                }
            };
            let Ensured { changes, events, task_ids, created, .. } = &mut ensured;
            let at = format!("spec.ensureWork[{index}].task");
            let work_key = render(&task.work_key, document);
            if !(1..=500).contains(&work_key.chars().count()) {
                return Err(EngineError::new(
                    crate::Class::Invalid,
                    Code::InvalidRule,
                    format!("the work key is {} characters; 1 to 500 (is the path right?)", work_key.chars().count()),
                )
                .with("path", format!("{at}.workKey")));
            }
            if let Some(origin) = self.store.origin_by_work_key(&fact.workspace_id, &work_key).await? {
                task_ids.push(origin.task_id);
                continue;
            }
            let task_type = pass.task_type(self, &task.task_type).await?;
            let title: String = render(&task.title, document).chars().take(500).collect();
            let title = if title.trim().is_empty() { format!("{} {}", fact.kind, fact.key) } else { title };
            let fields = Value::Object(
                filled(&task.custom_fields, document).into_iter().filter(|(_, value)| !value.is_null()).collect(),
            );
            crate::work::check_fields(&task_type, &fields)
                .map_err(|error| error.with("path", format!("{at}.customFields")))?;
            self.check_required_fields(&task_type, &fields).await?;
            let id = self.new_id();
            // Whoever sent the fact set this work in motion.
            let initiators = skill_api::four_eyes::carried(&fact.initiators, &format!("task:{id}"), &[]);
            let record = TaskRecord {
                id,
                workspace_id: fact.workspace_id.clone(),
                task_type_id: task_type.id.clone(),
                title,
                custom_fields: fields,
                status: TaskStatus::Open,
                created_by: rule.agent_principal_id.clone(),
                row_version: 1,
                created_at: now,
                updated_at: now,
                closed_at: None,
                close_reason: None,
                initiators,
            };
            let made = TaskCreated {
                workspace_id: record.workspace_id.clone(),
                task_type_id: record.task_type_id.clone(),
                task_type: format!("{}@{}", task_type.key, task_type.version),
                initiators: record.initiators.clone(),
            };
            events.push(self.event(format!("task:{}", record.id), &made, &Origin::default()));
            let origin = TaskOriginRecord {
                task_id: record.id.clone(),
                workspace_id: record.workspace_id.clone(),
                work_key,
                fact_id: fact.id.clone(),
                evaluation_id: evaluation.id.clone(),
                created_at: now,
            };
            task_ids.push(record.id.clone());
            created.push(record.id.clone());
            let started = self.task_instance(&record, &task_type, &fact.recorded_by).await?;
            changes.push(WorkChange::InsertTask(record));
            changes.push(WorkChange::InsertTaskOrigin(origin));
            if let Some((instance, event)) = started {
                changes.push(WorkChange::InsertInstance(instance));
                events.push(event);
            }
        }
        Ok(ensured)
    }

    /// A process instance the rule ensures: the one its key names in the fact's workspace, or
    /// one started with the evaluation's end (its starter whoever recorded the fact).
    #[allow(clippy::too_many_arguments)]
    async fn ensure_instance(
        &self,
        ensured: &mut Ensured,
        work: &skill_contract::rule::ProcessWork,
        at: &str,
        fact: &FactRecord,
        document: &Value,
        pass: &Pass,
        now: Time,
    ) -> Result<()> {
        let key = render(&work.work_key, document);
        if !(1..=200).contains(&key.chars().count()) {
            return Err(EngineError::new(
                crate::Class::Invalid,
                Code::InvalidRule,
                format!("the work key is {} characters; 1 to 200 (is the path right?)", key.chars().count()),
            )
            .with("path", format!("{at}.workKey")));
        }
        let process = pass.process(self, &work.process).await?;
        self.agent_may_work(&process, &fact.workspace_id).await.map_err(|error| error.with("path", at))?;
        if let Some(found) = self.store.instance_by_key(&fact.workspace_id, &process.key, &key).await? {
            ensured.instance_ids.push(found.id);
            return Ok(());
        }
        let input = Value::Object(filled(&work.input, document));
        // Whoever sent the fact set it in motion: a write's decision comes from someone else.
        let started_by = (fact.recorded_by.as_str(), fact.initiators.as_slice());
        let start =
            Start { process: &process, workspace: &fact.workspace_id, key: &key, input, started_by, by: "rule" };
        let (record, event) = self.new_instance(start, now);
        ensured.instance_ids.push(record.id.clone());
        ensured.started.push(record.id.clone());
        ensured.events.push(event);
        ensured.changes.push(WorkChange::InsertInstance(record));
        Ok(())
    }

    /// The interpretation's result as a `skill_result` artifact in the fact's workspace, linked
    /// to the first task the evaluation ensured.
    async fn evidence(
        &self,
        call: &InvocationRecord,
        rule: &RuleRecord,
        fact: &FactRecord,
        evaluation: &RuleEvaluationRecord,
        task: Option<&String>,
        pass: &Pass,
    ) -> Result<skill_store::records::ArtifactRecord> {
        let skill = pass.skill(self, &call.skill_id).await?;
        let name = format!("{}@{}", skill.name, skill.version);
        let content = json!({"invocationId": call.id, "skill": skill.name, "version": skill.version,
                             "attempt": call.attempt, "output": call.output});
        let bytes = serde_json::to_vec(&content).unwrap_or_default();
        let metadata = json!({"skillId": skill.id, "invocationId": call.id, "factId": fact.id,
                              "evaluationId": evaluation.id, "rule": format!("{}@{}", rule.key, rule.version)});
        let new = NewArtifact {
            author: &rule.agent_principal_id,
            workspace: &fact.workspace_id,
            task_id: task.cloned(),
            run_id: None,
            kind: "skill_result",
            name: &name,
            media_type: "application/json",
            metadata,
            skill_invocation_id: Some(call.id.clone()),
        };
        self.stored_artifact(new, &bytes).await
    }
}

/// What an evaluation ensures: the writes and events, every task and instance, and those made.
#[derive(Default)]
struct Ensured {
    changes: Vec<WorkChange>,
    events: Vec<Event>,
    task_ids: Vec<String>,
    created: Vec<String>,
    instance_ids: Vec<String>,
    started: Vec<String>,
}

/// What one pass reads once for the evaluations it moves: their rules and facts, the agents the
/// rules act as (`None`: disabled or gone — read again to say why), the keys of the facts'
/// workspaces, the task types and skills named (versions never change); and whether it made work.
#[derive(Default)]
struct Pass {
    rules: std::collections::HashMap<String, RuleRecord>,
    facts: std::collections::HashMap<String, FactRecord>,
    agents: std::collections::HashMap<String, Option<crate::Actor>>,
    keys: std::sync::Mutex<std::collections::HashMap<String, String>>,
    task_types: std::sync::Mutex<std::collections::HashMap<String, TaskTypeRecord>>,
    skills: std::sync::Mutex<std::collections::HashMap<String, skill_store::records::SkillRecord>>,
    processes: std::sync::Mutex<std::collections::HashMap<String, skill_store::records::ProcessRecord>>,
    made_work: std::sync::atomic::AtomicBool,
}

/// The value `key` has in `map`, or the one `read` gives, kept.
async fn kept<T: Clone>(
    map: &std::sync::Mutex<std::collections::HashMap<String, T>>,
    key: &str,
    read: impl std::future::Future<Output = Result<T>>,
) -> Result<T> {
    let known = map.lock().unwrap_or_else(std::sync::PoisonError::into_inner).get(key).cloned();
    if let Some(value) = known {
        return Ok(value);
    }
    let value = read.await?;
    map.lock().unwrap_or_else(std::sync::PoisonError::into_inner).insert(key.to_owned(), value.clone());
    Ok(value)
}

impl Pass {
    async fn task_type(&self, engine: &Engine, reference: &str) -> Result<TaskTypeRecord> {
        kept(&self.task_types, reference, engine.find_task_type(reference)).await
    }

    async fn process(&self, engine: &Engine, reference: &str) -> Result<skill_store::records::ProcessRecord> {
        kept(&self.processes, reference, engine.find_process(reference)).await
    }

    async fn skill(&self, engine: &Engine, id: &str) -> Result<skill_store::records::SkillRecord> {
        kept(&self.skills, id, async { Ok(engine.store.skill(id).await?.skill) }).await
    }

    async fn workspace_key(&self, engine: &Engine, id: &str) -> Result<String> {
        kept(&self.keys, id, async { Ok(engine.store.workspace_by_reference(id).await?.key) }).await
    }

    async fn agent(&self, engine: &Engine, principal: &str) -> Result<crate::Actor> {
        match self.agents.get(principal) {
            Some(Some(agent)) => Ok(agent.clone()),
            _ => engine.agent_actor(principal).await,
        }
    }
}
