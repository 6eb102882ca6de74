//! `skill-core journal explain <invocation>`: the chain of an external write read from the
//! journal — the call, its basis, who set it in motion, the decision, the person with their token
//! and grants, and what the four-eyes rule says of it — each
//! with its entry's index, and a `.tlog-proof` file per entry that verifies offline.

use std::collections::HashMap;
use std::path::Path;

use anyhow::{Context, Result, bail};
use serde_json::Value;
use skill_api::events::{ApprovalDecided, ApprovalRequested};
use skill_api::four_eyes;
use skill_api::{HeldGrant, PrincipalKind};
use skill_journal::{TlogProof, tree};
use skill_store::Store;
use skill_store::records::Event;

/// One link of the chain: what it is, and the event that records it.
struct Link {
    name: &'static str,
    event: Event,
}

/// Every event, by subject (explain reads the whole journal once).
async fn by_subject(store: &dyn Store) -> Result<HashMap<String, Vec<Event>>> {
    let mut found: HashMap<String, Vec<Event>> = HashMap::new();
    let mut after = 0;
    loop {
        let page = store.events(after, None, 1_000).await?;
        let Some(last) = page.last() else { break };
        after = last.seq;
        for event in page {
            found.entry(event.subject.clone()).or_default().push(event);
        }
    }
    Ok(found)
}

fn find<'a>(events: &'a HashMap<String, Vec<Event>>, subject: &str, kind: &str) -> Option<&'a Event> {
    events.get(subject)?.iter().find(|event| event.kind == kind)
}

fn text<'a>(value: &'a Value, key: &str) -> &'a str {
    value.get(key).and_then(Value::as_str).unwrap_or_default()
}

async fn name_of(store: &dyn Store, id: &str) -> String {
    match store.principal(id).await {
        Ok(principal) => format!("{} ({id})", principal.name),
        Err(_) => id.to_owned(),
    }
}

pub(crate) async fn explain(store: &dyn Store, invocation: &str, out: Option<&Path>) -> Result<()> {
    let events = by_subject(store).await?;
    let subject = format!("skill_invocation:{invocation}");
    let Some(call) = find(&events, &subject, "skill.invocation_requested") else {
        bail!("the journal has no call {invocation}");
    };
    let data = &call.data;
    let mut chain = vec![Link { name: "call", event: call.clone() }];
    println!(
        "the call {invocation}: {}@{}, {}",
        text(data, "skill"),
        text(data, "version"),
        match text(data, "sideEffects") {
            "external_write" => "an external write".to_owned(),
            other => format!("side effects {other:?}"),
        }
    );
    let requester = &data["requestedBy"];
    println!("  requested by {} {}", text(requester, "kind"), name_of(store, text(requester, "ref")).await);
    let basis = &data["authorizationBasis"];
    let approval = match text(basis, "kind") {
        "approval" => Some(text(basis, "approvalId").to_owned()),
        "process" => {
            let instance = text(basis, "instanceId");
            println!(
                "  its basis: the step {} of the process {}@{} (instance {instance})",
                text(basis, "step"),
                text(basis, "definitionKey"),
                text(basis, "definitionVersion")
            );
            if let Some(step) = events.get(&format!("process_instance:{instance}")).and_then(|found| {
                found.iter().find(|event| text(&event.data, "activityId") == text(basis, "activityId"))
            }) {
                chain.push(Link { name: "step", event: step.clone() });
            }
            Some(text(basis, "approvalId").to_owned()).filter(|id| !id.is_empty())
        }
        "execution" => {
            println!("  its basis: the execution of the task {} (run {})", text(basis, "taskId"), text(basis, "runId"));
            if let Some(run) = find(&events, &format!("run:{}", text(basis, "runId")), "run.started") {
                chain.push(Link { name: "run", event: run.clone() });
            }
            None
        }
        "" => {
            println!("  no basis: the call does not write to the outside world");
            None
        }
        other => {
            println!("  a basis of kind {other:?}");
            None
        }
    };
    if let Some(approval) = approval {
        let subject = format!("approval:{approval}");
        if let Some(asked) = find(&events, &subject, "approval.requested") {
            println!(
                "  the approval {approval}, asked by {} on the task {}",
                name_of(store, text(&asked.data, "requestedBy")).await,
                text(&asked.data, "taskId")
            );
            let initiators = serde_json::from_value::<ApprovalRequested>(asked.data.clone())
                .map(|asked| asked.initiators)
                .unwrap_or_default();
            for initiator in &initiators {
                let mut names = std::collections::HashMap::new();
                for id in std::iter::once(&initiator.person).chain(initiator.agent.as_ref()) {
                    names.insert(id.clone(), name_of(store, id).await);
                }
                let name = |id: &str| names.get(id).cloned().unwrap_or_else(|| id.to_owned());
                println!("  set in motion: {}", four_eyes::how(initiator, &name));
            }
            chain.push(Link { name: "request", event: asked.clone() });
        }
        match find(&events, &subject, "approval.decided") {
            Some(decided) => {
                let grants: Vec<&str> = decided.data["grants"]
                    .as_array()
                    .map(|grants| grants.iter().filter_map(Value::as_str).collect())
                    .unwrap_or_default();
                println!(
                    "  {} by {}, with the token {}, holding {}",
                    text(&decided.data, "outcome"),
                    name_of(store, text(&decided.data, "decidedBy")).await,
                    decided.data.get("tokenId").and_then(Value::as_str).unwrap_or("(none recorded)"),
                    if grants.is_empty() { "no grants".to_owned() } else { grants.join(", ") }
                );
                if let Some(asked) = find(&events, &subject, "approval.requested") {
                    println!("  {}", verdict(&asked.data, &decided.data));
                }
                chain.push(Link { name: "decision", event: decided.clone() });
            }
            None => println!("  the approval {approval} has no decision in the journal"),
        }
    }
    for (kind, name) in [
        ("skill.invocation_succeeded", "succeeded"),
        ("skill.invocation_failed", "failed"),
        ("skill.invocation_cancelled", "cancelled"),
    ] {
        if let Some(ended) = find(&events, &subject, kind) {
            println!("  the call {name} at {}", ended.created_at.to_rfc3339());
            chain.push(Link { name: "ended", event: ended.clone() });
        }
    }
    let latest = store.journal_checkpoints(1).await?.into_iter().next();
    if let Some(out) = out {
        crate::folders::new_folder(out, "--out")?;
        if let Some(latest) = &latest {
            let text = format!("{}\n", latest.key);
            std::io::Write::write_all(&mut crate::folders::new_file(&out.join("key.txt"))?, text.as_bytes())?;
        }
    }
    println!("the entries:");
    for link in &chain {
        let index = store.journal_leaf_of(&link.event.id).await?.context("an event without its leaf")?;
        let proof = proof_of(store, index).await?;
        let shown = match (&proof, out) {
            (Some(proof), Some(out)) => {
                let file = out.join(format!("{}.tlog-proof", link.name));
                std::io::Write::write_all(&mut crate::folders::new_file(&file)?, proof.text().as_bytes())?;
                format!(" — proof: {}", file.display())
            }
            (Some(_), None) => String::new(),
            (None, _) => " — not yet in a signed checkpoint".to_owned(),
        };
        println!("  index {index}: {} ({}){shown}", link.event.kind, link.name);
    }
    match latest {
        Some(latest) => println!(
            "in the checkpoint of {} entries signed {}; key {}",
            latest.size,
            latest.signed_at.to_rfc3339(),
            latest.key
        ),
        None => println!("the journal has no signed checkpoint yet"),
    }
    Ok(())
}

/// What the four-eyes rule says of the decision `decided` on the request `asked` (their events'
/// data, read as their types), as `journal verify` applies it.
fn verdict(asked: &Value, decided: &Value) -> String {
    let (Ok(asked), Ok(decided)) = (
        serde_json::from_value::<ApprovalRequested>(asked.clone()),
        serde_json::from_value::<ApprovalDecided>(decided.clone()),
    ) else {
        return "the four-eyes rule cannot be checked: the request or the decision does not read".to_owned();
    };
    let grants: Vec<HeldGrant> = decided.grants.iter().map(|grant| four_eyes::grant_of(grant)).collect();
    // A decision that does not say its decider's kind proves no person decided it.
    let kind = decided.decider_kind.unwrap_or(PrincipalKind::Executor);
    let decider = four_eyes::Decider { id: &decided.decided_by, kind, grants: &grants };
    let work = four_eyes::Work {
        workspace_id: asked.workspace_id.as_deref().unwrap_or_default(),
        requested_by: &asked.requested_by,
        initiators: &asked.initiators,
    };
    match four_eyes::may_decide(&decider, &work) {
        Ok(()) => "the four-eyes rule holds: a person holding approvals.decide there, who neither asked for it nor \
                   set it in motion"
            .to_owned(),
        Err(refusal) => {
            format!(
                "the four-eyes rule is broken ({}): {}",
                refusal.code(),
                refusal.explain("the decider", &str::to_owned)
            )
        }
    }
}

/// The proof of the entry at `index` in the tree of the latest checkpoint, as a `tlog-proof`.
async fn proof_of(store: &dyn Store, index: u64) -> Result<Option<TlogProof>> {
    let Some(latest) = store.journal_checkpoints(1).await?.into_iter().next() else { return Ok(None) };
    if index >= latest.size {
        return Ok(None);
    }
    let needed = tree::Needed::default();
    let _ = tree::inclusion_proof(&needed, index, latest.size);
    let nodes = store.journal_nodes(&needed.into_vec()).await?;
    let entry = store.journal_leaves(index, 1).await?.into_iter().next().context("the entry is gone")?;
    Ok(Some(TlogProof {
        entry: entry.entry.into_bytes(),
        index,
        hashes: tree::inclusion_proof(&nodes, index, latest.size),
        note: latest.note,
    }))
}
