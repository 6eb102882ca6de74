//! Agents a package declares, through a real server on both backends: every refusal of the
//! reference (and ours), each writing nothing; an agent's principal holding exactly what its
//! document grants, again after a change; tokens for agents; an executor agent's allow-list.

use serde_json::{Value, json};
use skill_api::Code;

use crate::api::token;
use crate::calls::{Backend, Core, core};

fn leaf(name: &str, side_effects: &str) -> Value {
    json!({"name": name, "version": "1", "description": "a leaf", "sideEffects": side_effects, "riskLevel": "low",
           "contract": {"inputs": {"type": "object"}, "outputs": {"type": "object"}, "idempotency": "required",
                        "implementation": {"protocol": "local", "entrypoint": format!("claims.skills:{}", name.replace('.', "_"))}}})
}

/// A desk agent's document, changed by `edit`.
fn desk(edit: impl FnOnce(&mut Value)) -> Value {
    let mut spec = json!({
        "identity": {"kind": "agent", "permissions": ["skills.invoke", "claims.reply"]},
        "skills": {"invoke": ["claim.classify@1", {"skill": "claim.send_reply@1", "readOnly": true}]},
        "work": {"taskTypes": ["claim-send"]},
        "requests": {"workspace": "claims"}
    });
    edit(&mut spec);
    json!({"key": "claims-desk", "spec": spec})
}

fn executor_agent() -> Value {
    json!({"key": "claims-skills", "spec": {
        "identity": {"kind": "executor", "permissions": ["skills.execute"]},
        "executor": {"kind": "skills"},
        "skills": {"protocols": ["local"], "local": ["claims.skills"]}
    }})
}

/// A package's apply with the two skills, the task type `claim-send` (carried out with
/// `claim.send_reply@1`) and `agents`.
fn apply_body(version: &str, agents: Vec<Value>) -> Value {
    let mut objects =
        vec![json!({"kind": "Skill", "key": "claim.classify"}), json!({"kind": "Skill", "key": "claim.send_reply"})];
    objects.extend(agents.iter().map(|agent| json!({"kind": "Agent", "key": agent["key"]})));
    json!({
        "package": {"key": "claims", "version": version}, "installHash": format!("{:0>64}", version.replace('.', "")),
        "create": [], "objects": objects, "agents": agents,
        "taskTypes": [{"key": "claim-send", "version": "1",
                       "execution": {"skill": "claim.send_reply", "version": "1", "inputs": "$.customFields"}}]
    })
}

/// The installer: it may manage the organisation and holds what the agents are granted.
async fn setup(backend: Backend, label: &str) -> (Core, String) {
    let core = core(backend, label).await;
    core.engine.create_workspace("claims", "Claims", &Default::default()).await.expect("workspace");
    let installer =
        token(&core.engine, "installer", &["org.manage", "skills.invoke", "claims.reply", "skills.execute"]).await;
    for skill in [leaf("claim.classify", "none"), leaf("claim.send_reply", "external_write")] {
        core.post(&installer, "/skills", &skill).await.ok(201);
    }
    (core, installer)
}

async fn events(core: &Core) -> usize {
    core.engine.store().events(0, None, 1000).await.expect("events").len()
}

#[track_caller]
fn detail<'a>(body: &'a Value, name: &str) -> &'a Value {
    &body["error"]["details"][name]
}

async fn refusals(backend: Backend, label: &str) {
    let (core, installer) = setup(backend, label).await;
    // A disabled version, and a person whose name an agent might take.
    core.post(&installer, "/skills", &leaf("claim.old", "none")).await.ok(201);
    let old = core.get(&installer, "/skills/claim.old@1").await;
    let etag = format!("\"skill-{}\"", old.body["rowVersion"]);
    let disabled = core
        .http
        .patch(format!("{}/skills/claim.old@1", core.base))
        .bearer_auth(&installer)
        .header("If-Match", etag)
        .json(&json!({"status": "disabled"}))
        .send()
        .await
        .expect("answers");
    assert_eq!(disabled.status().as_u16(), 200);
    token(&core.engine, "somebody", &[]).await;
    let before = events(&core).await;

    let cases: Vec<(Value, u16, &str, &str)> = vec![
        (
            desk(|spec| spec["identity"]["permissions"] = json!(["skills.invoke", "claims.reply", "claims.refund"])),
            403,
            "permission_escalation",
            "",
        ),
        (
            desk(|spec| spec["skills"]["invoke"] = json!(["claim.classify@1", "claim.nothing@1"])),
            422,
            "unknown_reference",
            "spec.skills.invoke[1]",
        ),
        (
            desk(|spec| spec["skills"]["invoke"] = json!(["claim.old@1", "claim.send_reply@1"])),
            422,
            "skill_disabled",
            "spec.skills.invoke[0]",
        ),
        (
            desk(|spec| spec["identity"]["permissions"] = json!(["claims.reply"])),
            422,
            "skills_invoke_not_permitted",
            "spec.identity.permissions",
        ),
        (
            desk(|spec| spec["skills"]["invoke"] = json!(["claim.classify@1"])),
            422,
            "execution_skill_not_invoked",
            "spec.work.taskTypes[0]",
        ),
        (
            desk(|spec| spec["work"]["taskTypes"] = json!(["claim-unknown"])),
            422,
            "unknown_reference",
            "spec.work.taskTypes[0]",
        ),
        (
            desk(|spec| spec["requests"]["workspace"] = json!("elsewhere")),
            422,
            "unknown_reference",
            "spec.requests.workspace",
        ),
        // What only a person holds, though the installer holds it (org.manage) or not.
        (
            desk(|spec| spec["identity"]["permissions"] = json!(["skills.invoke", "claims.reply", "org.manage"])),
            403,
            "agent_permission_forbidden",
            "spec.identity.permissions[2]",
        ),
        (
            desk(|spec| spec["identity"]["permissions"] = json!(["skills.invoke", "claims.reply", "approvals.decide"])),
            403,
            "agent_permission_forbidden",
            "spec.identity.permissions[2]",
        ),
        (
            {
                let mut executor = executor_agent();
                executor["spec"]["identity"]["permissions"] = json!(["skills.execute", "org.manage"]);
                executor
            },
            403,
            "agent_permission_forbidden",
            "spec.identity.permissions[1]",
        ),
        (
            desk(|spec| spec["skills"]["invoke"] = json!(["claim.classify", "claim.send_reply@1"])),
            422,
            "invalid_agent",
            "spec.skills.invoke[0]",
        ),
        (json!({"key": "somebody", "spec": desk(|_| {})["spec"]}), 409, "agent_principal_conflict", "key"),
        (json!({"key": "core.execution", "spec": desk(|_| {})["spec"]}), 422, "invalid_agent", "key"),
    ];
    for (agent, status, code, path) in cases {
        let answer = core.post(&installer, "/packages:apply", &apply_body("1.0.0", vec![agent.clone()])).await;
        answer.refused(status, code);
        if !path.is_empty() {
            assert_eq!(detail(&answer.body, "path"), path, "{}", answer.body);
        }
        assert_eq!(detail(&answer.body, "item"), "agents[0]", "{}", answer.body);
        match code {
            "permission_escalation" => assert_eq!(detail(&answer.body, "missing"), &json!(["claims.refund"])),
            "unknown_reference" if path.starts_with("spec.skills") => {
                assert_eq!(detail(&answer.body, "value"), "claim.nothing@1");
            }
            "skill_disabled" => assert_eq!(detail(&answer.body, "value"), "claim.old@1"),
            "execution_skill_not_invoked" => {
                assert_eq!(detail(&answer.body, "taskType"), "claim-send");
                assert_eq!(detail(&answer.body, "skill"), "claim.send_reply@1");
            }
            "agent_permission_forbidden" => {
                let message = answer.body["error"]["message"].as_str().unwrap_or_default();
                for instead in ["org.read", "skills.invoke", "tasks.write@…", "facts.write@…", "custom permissions"]
                {
                    assert!(message.contains(instead), "the refusal says what it may hold: {message}");
                }
            }
            _ => {}
        }
        // Nothing of the package was written: not the task type, not the install, no principal.
        assert_eq!(events(&core).await, before, "{code}: {}", answer.body);
        core.get(&installer, "/agents/claims-desk").await.refused(404, "not_found");
        core.get(&installer, "/agents/claims-skills").await.refused(404, "not_found");
    }
    // An installer without a permission an executor agent grants.
    let manager = token(&core.engine, "manager", &["org.manage"]).await;
    let before = events(&core).await;
    let answer = core.post(&manager, "/packages:apply", &apply_body("1.0.0", vec![executor_agent()])).await;
    answer.refused(403, "permission_escalation");
    assert_eq!(detail(&answer.body, "missing"), &json!(["skills.execute"]));
    // An executor allow-list the core would refuse names its path.
    let mut bad = executor_agent();
    bad["spec"]["skills"]["local"] = json!(["not a module"]);
    let answer = core.post(&installer, "/packages:apply", &apply_body("1.0.0", vec![bad])).await;
    answer.refused(422, "invalid_executor_allowance");
    assert_eq!(detail(&answer.body, "path"), "spec.skills.local");
    assert_eq!(events(&core).await, before);
}

#[tokio::test]
async fn every_refusal_of_an_agent_writes_nothing_on_sqlite() {
    refusals(Backend::Sqlite, "agent-refusals").await;
}

#[tokio::test]
async fn every_refusal_of_an_agent_writes_nothing_on_postgres() {
    refusals(Backend::Postgres, "agent-refusals").await;
}

/// The versions assigned to `principal`: `name@version`, `(ro)` after read-only ones.
async fn assigned(core: &Core, token: &str, principal: &str) -> Vec<String> {
    let answer = core.get(token, &format!("/principals/{principal}/skills")).await;
    let mut out: Vec<String> = answer.ok(200)["items"]
        .as_array()
        .expect("items")
        .iter()
        .map(|item| {
            let read_only = if item["readOnly"] == true { " (ro)" } else { "" };
            format!(
                "{}@{}{read_only}",
                item["name"].as_str().unwrap_or_default(),
                item["version"].as_str().unwrap_or_default()
            )
        })
        .collect();
    out.sort();
    out
}

async fn lifecycle(backend: Backend, label: &str) {
    let (core, installer) = setup(backend, label).await;
    let answer =
        core.post(&installer, "/packages:apply", &apply_body("1.0.0", vec![desk(|_| {}), executor_agent()])).await;
    let applied = answer.ok(200);
    assert_eq!(applied["agents"].as_array().map(Vec::len), Some(2), "{applied}");
    let agent = core.get(&installer, "/agents/claims-desk").await;
    let agent = agent.ok(200);
    assert_eq!(
        (agent["kind"].as_str(), agent["revision"].as_i64(), agent["package"].as_str()),
        (Some("agent"), Some(1), Some("claims"))
    );
    let principal = agent["principalId"].as_str().expect("principal").to_owned();
    assert_eq!(assigned(&core, &installer, &principal).await, ["claim.classify@1", "claim.send_reply@1 (ro)"]);
    let installed = core.get(&installer, "/packages/claims").await;
    assert!(
        installed.ok(200)["objects"]
            .as_array()
            .expect("objects")
            .contains(&json!({"kind": "Agent", "key": "claims-desk"}))
    );

    // A token for the agent acts as its principal, with exactly the document's grants.
    let issued =
        core.post(&installer, "/agents/claims-desk/tokens", &json!({"label": "the desk", "expiresInDays": 7})).await;
    let issued = issued.ok(201).clone();
    assert_eq!(issued["principalId"], principal.as_str());
    let desk_token = issued["token"].as_str().expect("a token").to_owned();
    let mine = core.get(&desk_token, &format!("/principals/{principal}/skills")).await;
    assert_eq!(mine.ok(200)["items"].as_array().map(Vec::len), Some(2));
    // It calls what it is assigned, and nothing else; it may not manage (or issue itself tokens).
    core.post(&desk_token, "/agents/claims-desk/tokens", &json!({})).await.refused(403, "permission_denied");
    let call =
        core.post(&desk_token, "/skills/claim.classify@1:invoke", &json!({"inputs": {}, "idempotencyKey": "k1"})).await;
    call.ok(201);
    // Read-only: the write is not granted to it.
    let write = core
        .post(&desk_token, "/skills/claim.send_reply@1:invoke", &json!({"inputs": {}, "idempotencyKey": "k2"}))
        .await;
    write.refused(403, "tool_not_authorized");
    assert_eq!(write.body["error"]["details"]["reason"], "read_only");
    // Bad token terms, an unknown agent.
    core.post(&installer, "/agents/claims-desk/tokens", &json!({"expiresInDays": 0}))
        .await
        .refused(422, "invalid_expiry");
    core.post(&installer, "/agents/nobody/tokens", &json!({})).await.refused(404, "not_found");
    // A hand-made grant on an agent's principal is refused: its document is what it holds.
    let request = skill_engine::TokenRequest {
        principal: "claims-desk".into(),
        kind: "agent".into(),
        grants: vec!["org.read".into()],
        label: String::new(),
        expires_at: None,
    };
    let refused = core.engine.issue_token(&request, &Default::default()).await.expect_err("refused");
    assert_eq!(refused.code, Code::AgentPrincipalConflict);

    // The same documents again: nothing moves.
    let before = events(&core).await;
    let mut again = apply_body("1.0.1", vec![desk(|_| {}), executor_agent()]);
    core.post(&installer, "/packages:apply", &again).await.ok(200);
    assert_eq!(core.get(&installer, "/agents/claims-desk").await.ok(200)["revision"], 1);
    let journal = core.engine.store().events(0, None, 1000).await.expect("events");
    assert!(
        journal[before..].iter().all(|event| event.kind != "agent.applied"),
        "an unchanged agent is not applied again"
    );

    // A changed document replaces the principal's rights whole.
    let changed = desk(|spec| {
        spec["identity"]["permissions"] = json!(["skills.invoke", "claims.reply", "tasks.read@claims"]);
        spec["skills"]["invoke"] = json!(["claim.send_reply@1"]);
    });
    again = apply_body("1.0.2", vec![changed, executor_agent()]);
    core.post(&installer, "/packages:apply", &again).await.refused(403, "permission_escalation");
    let installer = token(&core.engine, "installer", &["tasks.read@claims"]).await;
    let answer = core.post(&installer, "/packages:apply", &again).await;
    answer.ok(200);
    let agent = core.get(&installer, "/agents/claims-desk").await;
    assert_eq!(agent.ok(200)["revision"], 2);
    assert_eq!(assigned(&core, &installer, &principal).await, ["claim.send_reply@1"]);
    let grants: Vec<(String, Option<String>)> = core
        .engine
        .store()
        .grants(&principal)
        .await
        .expect("grants")
        .into_iter()
        .map(|grant| (grant.permission, grant.workspace_id.map(|_| "claims".to_owned())))
        .collect();
    assert_eq!(grants.len(), 3, "{grants:?}");
    assert!(grants.contains(&("tasks.read".to_owned(), Some("claims".to_owned()))));
    // Now it may call the write, which needs a basis like anybody's.
    let write = core
        .post(&desk_token, "/skills/claim.send_reply@1:invoke", &json!({"inputs": {}, "idempotencyKey": "k3"}))
        .await;
    write.refused(403, "skill_side_effect_not_authorized");
    let dropped =
        core.post(&desk_token, "/skills/claim.classify@1:invoke", &json!({"inputs": {}, "idempotencyKey": "k4"})).await;
    dropped.refused(403, "tool_not_authorized");
    assert_eq!(dropped.body["error"]["details"]["reason"], "not_assigned");
    let journal = core.engine.store().events(0, None, 1000).await.expect("events");
    let applied: Vec<&Value> =
        journal.iter().filter(|event| event.kind == "agent.applied").map(|event| &event.data).collect();
    assert_eq!(applied.len(), 3, "two agents, then one change");
    assert_eq!(applied[2]["invoke"], json!(["claim.send_reply@1"]));
    assert_eq!(applied[2]["created"], false);

    // The executor agent claims within its allow-list only.
    let executor = core.post(&installer, "/agents/claims-skills/tokens", &json!({})).await;
    let executor = executor.ok(201)["token"].as_str().expect("token").to_owned();
    let claim = |local: &str| json!({"protocols": ["local"], "localEntrypoints": [local]});
    core.post(&executor, "/skill-invocations:claim", &claim("claims.skills:claim_classify")).await.ok(200);
    let beyond = core.post(&executor, "/skill-invocations:claim", &claim("other.skills:x")).await;
    beyond.refused(403, "executor_not_allowed");
    let allowance = core.get(&installer, "/principals/claims-skills/executor-allowance").await;
    assert_eq!(allowance.ok(200)["allowance"]["local"], json!(["claims.skills"]));
    // An agent's kind stays.
    let mut kind = executor_agent();
    kind["key"] = json!("claims-desk");
    core.post(&installer, "/packages:apply", &apply_body("1.0.3", vec![kind]))
        .await
        .refused(409, "agent_principal_conflict");
    // Nothing of an agent's principal changes by hand: grants, assignments, its allow-list.
    let by_hand = core.engine.grant("claims-desk", "org.read", &Default::default()).await.expect_err("refused");
    assert_eq!(by_hand.code, Code::AgentPrincipalConflict);
    let assign = json!({"skillId": "claim.classify@1"});
    core.post(&installer, &format!("/principals/{principal}/skills"), &assign)
        .await
        .refused(409, "agent_principal_conflict");
    core.post(&installer, "/principals/claims-desk/skills", &assign).await.refused(409, "agent_principal_conflict");
    let allow = json!({"protocols": ["local"], "local": ["evil.mod"]});
    core.post(&installer, "/principals/claims-skills/executor-allowance", &allow)
        .await
        .refused(409, "agent_principal_conflict");
    // Nor does a name that would pass for it go to anyone else.
    for name in ["Claims-Desk", " claims-desk "] {
        let request = skill_engine::TokenRequest {
            principal: name.into(),
            kind: "person".into(),
            grants: vec![],
            label: String::new(),
            expires_at: None,
        };
        let refused = core.engine.issue_token(&request, &Default::default()).await.expect_err("a look-alike");
        assert_eq!(refused.code, Code::AgentPrincipalConflict, "{name}");
    }
    // Another package takes no agent over: listed, it is a conflict; unlisted, it is refused.
    let mut other = apply_body("9.0.0", vec![desk(|_| {})]);
    other["package"]["key"] = json!("other");
    core.post(&installer, "/packages:apply", &other).await.refused(409, "package_object_conflict");
    other["objects"] =
        json!([{"kind": "Skill", "key": "claim.classify"}, {"kind": "Skill", "key": "claim.send_reply"}]);
    let unlisted = core.post(&installer, "/packages:apply", &other).await;
    assert_eq!(unlisted.refused(400, "invalid_request").body["error"]["details"]["field"], "objects");
    let record = json!({"package": {"key": "other", "version": "1"}, "installHash": "0".repeat(64),
                        "objects": [{"kind": "Agent", "key": "claims-desk"}]});
    core.post(&installer, "/packages:record", &record).await.refused(400, "invalid_request");
    assert_eq!(core.get(&installer, "/agents/claims-desk").await.ok(200)["package"], "claims");
    // A token acts with the agent's permissions: whoever asks for one holds them all, and it is
    // never kept for a replay.
    let manager = token(&core.engine, "manager", &["org.manage"]).await;
    let escalation = core.post(&manager, "/agents/claims-desk/tokens", &json!({})).await;
    assert_eq!(
        escalation.refused(403, "permission_escalation").body["error"]["details"]["missing"].as_array().map(Vec::len),
        Some(3)
    );
    let keyed = |key: &str| {
        core.http
            .post(format!("{}/agents/claims-desk/tokens", core.base))
            .bearer_auth(&installer)
            .header("Idempotency-Key", key)
            .json(&json!({}))
            .send()
    };
    let first: Value = keyed("t1").await.expect("answers").json().await.expect("JSON");
    let second: Value = keyed("t1").await.expect("answers").json().await.expect("JSON");
    assert_ne!(first["token"], second["token"], "a token is never replayed");

    // Listing.
    let listed = core.get(&installer, "/agents").await;
    let keys: Vec<&str> =
        listed.ok(200)["items"].as_array().expect("items").iter().filter_map(|a| a["key"].as_str()).collect();
    assert_eq!(keys, ["claims-desk", "claims-skills"]);
}

#[tokio::test]
async fn an_agent_holds_exactly_what_its_document_grants_on_sqlite() {
    lifecycle(Backend::Sqlite, "agent-lifecycle").await;
}

#[tokio::test]
async fn an_agent_holds_exactly_what_its_document_grants_on_postgres() {
    lifecycle(Backend::Postgres, "agent-lifecycle").await;
}

/// The refusal of a permission only a person holds: its code and class, the permission named.
#[track_caller]
fn forbidden(refused: &skill_engine::EngineError, permission: &str) {
    assert_eq!((refused.code.as_str(), refused.class), ("agent_permission_forbidden", skill_engine::Class::Forbidden));
    assert_eq!(refused.details["permission"], permission, "{}", refused.message);
    assert!(refused.message.contains("org.read") && refused.message.contains("skills.invoke"), "{}", refused.message);
}

/// Whether the principal `name` holds `permission` (in any workspace) in the database.
async fn holds(core: &Core, name: &str, permission: &str) -> bool {
    let store = core.engine.store();
    let Ok(principal) = store.principal_by_name(name).await else { return false };
    store.grants(&principal.id).await.expect("grants").iter().any(|grant| grant.permission == permission)
}

async fn people_only_by_hand(backend: Backend, label: &str) {
    let (core, installer) = setup(backend, label).await;
    core.post(&installer, "/packages:apply", &apply_body("1.0.0", vec![desk(|_| {}), executor_agent()])).await.ok(200);
    // A token made with such a grant: refused before its principal is made.
    for kind in ["agent", "executor"] {
        for (written, permission) in [("org.manage", "org.manage"), ("approvals.decide@claims", "approvals.decide")] {
            let request = skill_engine::TokenRequest {
                principal: format!("hand-{kind}"),
                kind: kind.into(),
                grants: vec!["org.read".into(), written.into()],
                label: String::new(),
                expires_at: None,
            };
            forbidden(&core.engine.issue_token(&request, &Default::default()).await.expect_err("refused"), permission);
        }
        assert!(core.engine.store().principal_by_name(&format!("hand-{kind}")).await.is_err(), "no principal made");
    }
    // A grant to a principal that is not a person: made by hand, an agent's, the core's own.
    crate::api::token_of_kind(&core.engine, "hand-executor", "executor", &["skills.execute"]).await;
    crate::api::token_of_kind(&core.engine, "hand-agent", "agent", &["skills.invoke"]).await;
    core.engine.grant_execution(&[]).await.expect("the core's own principal");
    let before = events(&core).await;
    for name in ["hand-executor", "hand-agent", "claims-desk", "claims-skills", "core.execution"] {
        for (written, permission) in [("org.manage", "org.manage"), ("approvals.decide@claims", "approvals.decide")] {
            forbidden(&core.engine.grant(name, written, &Default::default()).await.expect_err(name), permission);
        }
    }
    forbidden(&core.engine.grant_execution(&["org.manage"]).await.expect_err("refused"), "org.manage");
    // The operator's commands, straight on the database.
    if matches!(backend, Backend::Sqlite) {
        for args in [
            vec!["grant", "--principal", "hand-executor", "org.manage"],
            vec!["grant", "--principal", "core.execution", "approvals.decide@claims"],
            vec!["token", "create", "--name", "new-executor", "--kind", "executor", "--grant", "org.manage"],
        ] {
            let output = std::process::Command::new(crate::running::CORE)
                .args(&args)
                .args(["--db", &core.target])
                .output()
                .expect("skill-core runs");
            let said = String::from_utf8_lossy(&output.stderr);
            assert!(!output.status.success() && said.contains("never holds"), "{args:?}: {said}");
            assert!(output.stdout.is_empty(), "no token printed: {args:?}");
        }
    }
    assert_eq!(events(&core).await, before, "nothing written");
    for name in ["hand-executor", "hand-agent", "claims-desk", "claims-skills", "core.execution", "new-executor"] {
        assert!(!holds(&core, name, "org.manage").await && !holds(&core, name, "approvals.decide").await, "{name}");
    }
    // A person is granted them as before.
    token(&core.engine, "reviewer", &["org.read"]).await;
    assert!(core.engine.grant("reviewer", "approvals.decide@claims", &Default::default()).await.expect("granted"));
    assert!(core.engine.grant("reviewer", "org.manage", &Default::default()).await.expect("granted"));
}

#[tokio::test]
async fn no_grant_gives_an_agent_or_executor_what_only_a_person_holds_on_sqlite() {
    people_only_by_hand(Backend::Sqlite, "agent-people-only").await;
}

#[tokio::test]
async fn no_grant_gives_an_agent_or_executor_what_only_a_person_holds_on_postgres() {
    people_only_by_hand(Backend::Postgres, "agent-people-only").await;
}

async fn held_from_before(backend: Backend, label: &str) {
    let (core, installer) = setup(backend, label).await;
    let applied = core.post(&installer, "/packages:apply", &apply_body("1.0.0", vec![desk(|_| {})])).await;
    applied.ok(200);
    let issued = core.post(&installer, "/agents/claims-desk/tokens", &json!({})).await;
    let desk_token = issued.ok(201)["token"].as_str().expect("a token").to_owned();
    let reviewer = token(&core.engine, "reviewer", &["tasks.write@claims"]).await;
    // A database from before the rule: the agent's principal holds org.manage, written as an
    // older core wrote grants.
    let principal = core.engine.store().principal_by_name("claims-desk").await.expect("the agent's principal");
    let added = skill_api::events::GrantAdded { permission: "org.manage".into(), workspace_id: None };
    let event = skill_store::records::Event {
        seq: 0,
        id: "01900000-0000-7000-8000-0000000be4e1".into(),
        kind: <skill_api::events::GrantAdded as skill_api::EventData>::KIND.to_owned(),
        subject: format!("principal:{}", principal.id),
        data: serde_json::to_value(&added).expect("JSON"),
        actor_id: None,
        request_id: None,
        created_at: chrono::Utc::now(),
    };
    let grant = skill_store::records::Grant {
        id: "01900000-0000-7000-8000-0000000be4e2".into(),
        principal_id: principal.id.clone(),
        workspace_id: None,
        permission: "org.manage".into(),
        created_at: chrono::Utc::now(),
    };
    assert!(core.engine.store().add_grant(&grant, &event).await.expect("written straight"));
    assert!(holds(&core, "claims-desk", "org.manage").await);

    // It counts for nothing: the agent disables no one, publishes nothing, reads no listing.
    let disable = json!({"principal": "reviewer", "reason": "offboarded"});
    core.post(&desk_token, "/principals:disable", &disable).await.refused(403, "permission_denied");
    core.post(&desk_token, "/skills", &leaf("claim.evil", "none")).await.refused(403, "permission_denied");
    core.get(&desk_token, "/agents").await.refused(403, "permission_denied");
    let reviewer_row = core.engine.store().principal_by_name("reviewer").await.expect("the reviewer");
    assert!(reviewer_row.disabled_at.is_none(), "the reviewer stays enabled");
    core.get(&reviewer, "/tasks?workspace=claims").await.ok(200);
    // Still what its document grants: it calls what it is assigned.
    let call =
        core.post(&desk_token, "/skills/claim.classify@1:invoke", &json!({"inputs": {}, "idempotencyKey": "k1"})).await;
    call.ok(201);
    // A person with org.manage still may.
    core.post(&installer, "/principals:disable", &disable).await.ok(200);
}

#[tokio::test]
async fn an_agent_holding_org_manage_from_before_disables_no_one_on_sqlite() {
    held_from_before(Backend::Sqlite, "agent-held-before").await;
}

#[tokio::test]
async fn an_agent_holding_org_manage_from_before_disables_no_one_on_postgres() {
    held_from_before(Backend::Postgres, "agent-held-before").await;
}
