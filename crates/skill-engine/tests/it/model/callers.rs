//! The model's callers beyond people's own calls: facts that rules turn into tasks and process
//! instances, and agents — each operated by a person — that send facts and ask for writes. What
//! each makes carries the persons who set it in motion; the model computes them itself and
//! learns the work the core's workers made from the store.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::json;
use skill_api::{AgentRequest, AgentTokenRequest, ClientInfo, FactRequest, RuleRequest};
use skill_engine::requests::GatewayCall;
use skill_engine::{Actor, Engine, Origin};

use super::{Approval, Instance, Model, PEOPLE, Task, World, code, count};
use crate::random::Rng;

/// The agents that act for a person: their keys and the person operating each.
const OPERATED: [(&str, usize); 2] = [("desk-bot", 0), ("side-bot", 2)];
/// The facts the rules listen to: a reply task for each `claim.received`, a `decided-send`
/// instance for each `claim.escalated`.
const KINDS: [&str; 2] = ["claim.received", "claim.escalated"];

/// The agents of the model's package: the two operated ones (they may ask for the write, send
/// facts and read the desk's tasks) and the rules' own.
pub(super) fn agents() -> Vec<AgentRequest> {
    let mut agents: Vec<AgentRequest> = OPERATED
        .iter()
        .map(|(key, _)| AgentRequest {
            key: (*key).to_owned(),
            spec: json!({"identity": {"kind": "agent",
                                      "permissions": ["skills.invoke", "facts.write@desk", "tasks.read@desk"]},
                         "skills": {"invoke": ["claim.send@1"]}, "requests": {"workspace": "desk", "expiresIn": "1h"}}),
        })
        .collect();
    agents.push(AgentRequest {
        key: "intake-bot".into(),
        spec: json!({"identity": {"kind": "agent", "permissions": ["tasks.write@desk"]}}),
    });
    agents
}

/// The rules: a `claim.received` fact becomes a reply task, a `claim.escalated` one an instance
/// of the process whose review decides its write.
pub(super) fn rules() -> Vec<RuleRequest> {
    let reply = json!({"version": "1", "identity": {"agent": "intake-bot"}, "on": {"kind": KINDS[0]},
        "ensureWork": [{"task": {"type": "reply@1", "workKey": "fact:{{$.fact.key}}", "title": "Reply {{$.fact.key}}",
                                 "customFields": {"n": "$.fact.data.n"}}}]});
    let send = json!({"version": "1", "identity": {"agent": "intake-bot"}, "on": {"kind": KINDS[1]},
        "ensureWork": [{"process": {"process": "decided-send@1", "workKey": "fact:{{$.fact.key}}",
                                    "input": {"n": "$.fact.data.n"}}}]});
    vec![RuleRequest { key: "reply-intake".into(), spec: reply }, RuleRequest { key: "send-intake".into(), spec: send }]
}

/// The operated agents' actors and their tokens, each token issued for its person.
pub(super) async fn tokens(engine: &Engine) -> (Vec<Actor>, Vec<String>) {
    let (mut actors, mut tokens) = (Vec::new(), Vec::new());
    for (key, operator) in OPERATED {
        let request = AgentTokenRequest { operated_by: Some(PEOPLE[operator].into()), ..Default::default() };
        let issued = engine.issue_agent_token(None, key, &request, &Origin::default()).await.expect("an agent token");
        actors.push(engine.authenticate(&issued.token).await.expect("authenticates"));
        tokens.push(issued.token);
    }
    (actors, tokens)
}

/// An agent picked at random; `Err` once the person operating it is disabled, when its token is
/// refused (`operator_disabled`) and it does nothing more.
async fn an_agent(w: &World, m: &Model, rng: &mut Rng, at: &str) -> Result<usize, &'static str> {
    let agent = rng.below(OPERATED.len());
    if !m.disabled.contains(&OPERATED[agent].1) {
        return Ok(agent);
    }
    let refused = w.engine.authenticate(&w.agent_tokens[agent]).await.expect_err("refused");
    assert_eq!(
        (refused.code.as_str(), refused.details.get("reason").and_then(|r| r.as_str())),
        ("invalid_token", Some("operator_disabled")),
        "{at}: an agent whose operator is disabled"
    );
    Err("agent's token refused")
}

/// A fact of a random kind, sometimes caused by one of the tasks the model knows: what it is
/// and the initiators it carries from that task.
fn a_fact(m: &Model, rng: &mut Rng) -> (FactRequest, BTreeSet<usize>) {
    let tasks: Vec<&String> = m.tasks.keys().collect();
    let caused = rng.pick(&tasks).filter(|_| rng.chance(35)).map(|id| (*id).clone());
    let behind = caused.as_ref().map(|task| m.tasks[task].initiators.clone()).unwrap_or_default();
    let request = FactRequest {
        workspace: "desk".into(),
        kind: KINDS[rng.below(2)].into(),
        key: format!("f-{:x}", rng.next()),
        data: json!({"n": rng.below(3)}),
        occurred_at: None,
        source: None,
        caused_by_task: caused,
    };
    (request, behind)
}

/// A person sends a fact (bob may not): it carries its sender and its causing task's initiators.
pub(super) async fn person_sends(w: &World, m: &mut Model, rng: &mut Rng, person: usize, at: &str) -> &'static str {
    let (request, mut initiators) = a_fact(m, rng);
    let result = w.engine.record_fact(&w.people[person], &request, None).await;
    assert_eq!(code(&result), if person == 1 { "permission_denied" } else { "ok" }, "{at}: a fact sent");
    let Ok((fact, _)) = result else { return "fact refused" };
    initiators.insert(person);
    m.facts.insert(fact.id, initiators);
    "fact sent"
}

/// An agent sends a fact: it carries the person operating the agent.
pub(super) async fn agent_sends(w: &World, m: &mut Model, rng: &mut Rng, at: &str) -> &'static str {
    let agent = match an_agent(w, m, rng, at).await {
        Ok(agent) => agent,
        Err(refused) => return refused,
    };
    let (request, mut initiators) = a_fact(m, rng);
    let result = w.engine.record_fact(&w.agents[agent], &request, None).await;
    // No agent reads an agent's request's task, nor cites it.
    let hidden = request.caused_by_task.as_ref().is_some_and(|task| m.tasks[task].kind == "request");
    assert_eq!(code(&result), if hidden { "not_found" } else { "ok" }, "{at}: an agent's fact");
    let Ok((fact, _)) = result else { return "agent's fact refused" };
    initiators.insert(OPERATED[agent].1);
    m.facts.insert(fact.id, initiators);
    "agent's fact sent"
}

/// An agent asks, through the gateway, for the write: a request with its own task, whose
/// approval covers exactly that call and was set in motion by the agent's operator.
pub(super) async fn agent_asks(w: &World, m: &mut Model, rng: &mut Rng, at: &str) -> &'static str {
    let agent = match an_agent(w, m, rng, at).await {
        Ok(agent) => agent,
        Err(refused) => return refused,
    };
    let n = rng.below(3) as u64;
    let inputs = json!({"n": n}).as_object().cloned().expect("an object");
    let client = ClientInfo { name: "model".into(), version: "1".into() };
    let called = w.engine.gateway_call(&w.agents[agent], &w.write, inputs, None, &client, None).await.expect(at);
    let GatewayCall::Requested(request) = called else { panic!("{at}: an agent's write ran without a decision") };
    let task = Task { open: true, kind: "request", initiators: BTreeSet::from([OPERATED[agent].1]) };
    let asked = Approval::asked(&request.task_id, &task, true, PEOPLE.len() + agent, Some(("claim.send@1", n)));
    assert_eq!(asked.initiators, task.initiators, "{at}: an agent is no initiator; its operator is");
    m.approvals.insert(request.approval_id, asked);
    m.tasks.insert(request.task_id, task);
    "agent asked"
}

/// What the rules made of the facts whose evaluations ended: their tasks and instances, set in
/// motion by the facts' initiators.
pub(super) async fn learn(w: &World, m: &mut Model, at: &str, totals: &mut BTreeMap<&'static str, u64>) {
    let store = w.engine.store();
    let mut ended = Vec::new();
    for (fact, initiators) in &m.facts {
        let evaluations = skill_store::RuleStore::evaluations_of_fact(&**store, fact).await.expect(at);
        let Some(evaluation) = evaluations.iter().find(|evaluation| evaluation.ended_at.is_some()) else { continue };
        ended.push(fact.clone());
        for task in &evaluation.task_ids {
            let open = store.task(task).await.expect(at).status == skill_api::TaskStatus::Open;
            m.tasks.insert(task.clone(), Task { open, kind: "reply@1", initiators: initiators.clone() });
            count(totals, "+rule task");
        }
        for instance in &evaluation.instance_ids {
            m.instances.insert(instance.clone(), Instance { initiators: initiators.clone(), running: true });
            count(totals, "+rule instance");
        }
    }
    for fact in ended {
        m.facts.remove(&fact);
    }
}
