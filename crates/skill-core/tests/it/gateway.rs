//! The core's MCP gateway at `/mcp`, driven as raw JSON-RPC over streamable HTTP (the 2026-07-28
//! revision, per-request capabilities), on both backends, with the claims package applied and its
//! host executing: what each principal is shown, a read-only call's result, and an agent's write —
//! a request a person decides — through the MCP Tasks extension and without it, approved,
//! rejected, withdrawn and expired. Nothing is written without a person's approval, and an
//! approved request writes once.

use std::time::Duration;

use serde_json::{Value, json};
use skill_fixtures::Scratch;

use crate::api::token;
use crate::calls::{Backend, Core, core_serving};
use crate::claims::{Child, apply_package, ensure_workspace, executor, host, outbox};

const TASKS: &str = "io.modelcontextprotocol/tasks";

/// One JSON-RPC request to `/mcp` as `token`; the response's message (the last `data:` line of an
/// event stream, or the JSON body), with the HTTP status.
pub(crate) async fn rpc(
    core: &Core,
    token: &str,
    method: &str,
    name: &str,
    params: Value,
    tasks: bool,
) -> (u16, Value) {
    rpc_at(&core.http, core.base.trim_end_matches("/api/v1"), token, method, name, params, tasks).await
}

/// [`rpc`] to the core at `root`.
async fn rpc_at(
    http: &reqwest::Client,
    root: &str,
    token: &str,
    method: &str,
    name: &str,
    params: Value,
    tasks: bool,
) -> (u16, Value) {
    let mut params = params;
    let capabilities = if tasks { json!({"extensions": {TASKS: {}}}) } else { json!({}) };
    params["_meta"]["io.modelcontextprotocol/protocolVersion"] = json!("2026-07-28");
    params["_meta"]["io.modelcontextprotocol/clientCapabilities"] = capabilities;
    params["_meta"]["io.modelcontextprotocol/clientInfo"] = json!({"name": "gateway-test", "version": "1.0"});
    let body = json!({"jsonrpc": "2.0", "id": 7, "method": method, "params": params});
    let mut request = http
        .post(format!("{root}/mcp"))
        .bearer_auth(token)
        .header("Accept", "application/json, text/event-stream")
        .header("MCP-Protocol-Version", "2026-07-28")
        .header("Mcp-Method", method)
        .json(&body);
    if !name.is_empty() {
        request = request.header("Mcp-Name", name);
    }
    let answer = request.send().await.expect("the core answers");
    let status = answer.status().as_u16();
    let text = answer.text().await.expect("a body");
    let message =
        text.lines().filter_map(|line| line.strip_prefix("data: ")).rfind(|data| !data.trim().is_empty()).map_or_else(
            || serde_json::from_str(&text).unwrap_or(Value::Null),
            |data| serde_json::from_str(data).expect("JSON"),
        );
    (status, message)
}

async fn call(core: &Core, token: &str, tool: &str, arguments: Value, tasks: bool) -> Value {
    let (status, message) =
        rpc(core, token, "tools/call", tool, json!({"name": tool, "arguments": arguments}), tasks).await;
    assert_eq!(status, 200, "{message}");
    message["result"].clone()
}

async fn tools(core: &Core, token: &str) -> Vec<String> {
    let (status, message) = rpc(core, token, "tools/list", "", json!({}), false).await;
    assert_eq!(status, 200, "{message}");
    message["result"]["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .filter_map(|t| t["name"].as_str().map(str::to_owned))
        .collect()
}

async fn task(core: &Core, token: &str, method: &str, id: &str) -> Value {
    let (status, message) = rpc(core, token, method, id, json!({"taskId": id}), true).await;
    assert_eq!(status, 200, "{message}");
    message
}

/// The reviewer decides the pending approval of the request's task.
async fn decide(core: &Core, reviewer: &str, task_id: &str, outcome: &str) {
    let approvals = core.get(reviewer, &format!("/approvals?task={task_id}")).await;
    let id = approvals.ok(200)["items"][0]["id"].as_str().expect("an approval").to_owned();
    core.post(reviewer, &format!("/approvals/{id}:decide"), &json!({"outcome": outcome})).await.ok(200);
}

/// Polls `tasks/get` until the task leaves `working` (the core's worker makes the approved call).
async fn settled(core: &Core, token: &str, id: &str) -> Value {
    for _ in 0..200 {
        let got = task(core, token, "tasks/get", id).await;
        if got["result"]["status"] != "working" {
            return got["result"].clone();
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("the request {id} never settled");
}

async fn story(core: Core, label: &str) {
    let outbox_folder = Scratch::new(&format!("gateway-outbox-{label}"));
    let root = apply_package(&core).await;
    ensure_workspace(&core, "claims").await;
    let issue = |agent: &str| {
        let core = &core;
        let agent = agent.to_owned();
        async move {
            let installer = token(&core.engine, "installer", &[]).await;
            core.post(&installer, &format!("/agents/{agent}/tokens"), &json!({})).await.ok(201)["token"]
                .as_str()
                .expect("a token")
                .to_owned()
        }
    };
    let desk = issue("claims-desk").await;
    let runner = issue("claims-skills").await;
    let _executor: Child = executor(&host(), &root, &runner, &outbox_folder);
    let reviewer = token(&core.engine, "reviewer", &["tasks.write@claims", "approvals.decide@claims"]).await;
    let person = token(&core.engine, "somebody", &["skills.invoke"]).await;

    // What each principal is shown: the agent its assignments and the status tool; a person
    // every callable skill; nobody without a token anything.
    assert_eq!(
        tools(&core, &desk).await,
        ["claim.classify", "claim.draft_reply", "claim.lookup", "claim.send_reply", "approval_status"]
    );
    let listed = tools(&core, &person).await;
    assert!(
        listed.contains(&"claim.import_rows".to_owned()) && !listed.contains(&"approval_status".to_owned()),
        "{listed:?}"
    );
    let anonymous = core
        .http
        .post(format!("{root}/mcp"))
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}))
        .send()
        .await;
    assert_eq!(anonymous.expect("answers").status().as_u16(), 401);
    let foreign = core
        .http
        .post(format!("{root}/mcp"))
        .bearer_auth(&desk)
        .header("Origin", "https://evil.example")
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}))
        .send()
        .await;
    assert_eq!(foreign.expect("answers").status().as_u16(), 403);
    // Malformed messages get the JSON-RPC answers, as the hosts give them.
    for (body, code) in [("{not json", -32700), ("{\"jsonrpc\": \"2.0\"}", -32600)] {
        let answer = core
            .http
            .post(format!("{root}/mcp"))
            .bearer_auth(&desk)
            .header("Content-Type", "application/json")
            .header("Accept", "application/json, text/event-stream")
            .body(body)
            .send()
            .await
            .expect("answers");
        assert_eq!(answer.status().as_u16(), 400, "{body}");
        let message: Value = answer.json().await.expect("JSON-RPC");
        assert_eq!(message["error"]["code"], code, "{body}: {message}");
    }
    let (_, listing) = rpc(&core, &desk, "tools/list", "", json!({}), false).await;
    let send = listing["result"]["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .find(|t| t["name"] == "claim.send_reply")
        .cloned()
        .expect("listed");
    assert_eq!(
        (send["annotations"]["readOnlyHint"].clone(), send["annotations"]["destructiveHint"].clone()),
        (json!(false), json!(true))
    );
    assert_eq!(
        (send["_meta"]["skill/version"].clone(), send["_meta"]["skill/sideEffects"].clone()),
        (json!("1"), json!("external_write"))
    );

    // A read-only call: its output, through the engine (a call of the agent's).
    let classified = call(&core, &desk, "claim.classify", json!({"text": "The courier lost my parcel."}), false).await;
    assert_eq!(classified["structuredContent"]["category"], "delivery", "{classified}");
    assert_eq!(classified["isError"], false);
    // A call nobody runs (claim.lookup is served over https, and no executor here runs it): the
    // client asked for progress, and hears it while the gateway waits; then it learns the call
    // still runs, with its id.
    let root_url = core.base.trim_end_matches("/api/v1").to_owned();
    let body = json!({"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": {"name": "claim.lookup",
        "arguments": {"claim": "C-1"}, "_meta": {"progressToken": "p-1",
        "io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}}}});
    let streamed = core
        .http
        .post(format!("{root_url}/mcp"))
        .bearer_auth(&desk)
        .header("Accept", "application/json, text/event-stream")
        .header("MCP-Protocol-Version", "2026-07-28")
        .header("Mcp-Method", "tools/call")
        .header("Mcp-Name", "claim.lookup")
        .json(&body)
        .send()
        .await
        .expect("answers")
        .text()
        .await
        .expect("a stream");
    let progress = streamed.matches("notifications/progress").count();
    assert!(progress >= 2, "progress while it waits: {streamed}");
    assert!(streamed.contains("call_still_running"), "{streamed}");
    // A person calls a tool found by its name alone (the newest callable version); an unknown
    // name is refused as not authorized.
    let by_person = call(&core, &person, "claim.classify", json!({"text": "The courier lost my parcel."}), false).await;
    assert_eq!(by_person["structuredContent"]["category"], "delivery", "{by_person}");
    let unknown = call(&core, &person, "claim.nothing", json!({}), false).await;
    assert!(unknown["content"][0]["text"].as_str().is_some_and(|t| t.contains("tool_not_authorized")), "{unknown}");
    // Inputs the contract refuses are the same refusal as a direct call's.
    let bad = call(&core, &desk, "claim.classify", json!({"text": 7}), false).await;
    assert_eq!(
        (
            bad["isError"].clone(),
            bad["content"][0]["text"].as_str().is_some_and(|t| t.contains("invalid_skill_inputs"))
        ),
        (json!(true), true)
    );

    // An agent's write, with the Tasks extension: a task, decided by a person, written once.
    let created =
        call(&core, &desk, "claim.send_reply", json!({"claim": "C-7", "comment": "Your parcel is on its way."}), true)
            .await;
    assert_eq!(
        (created["resultType"].as_str(), created["status"].as_str()),
        (Some("task"), Some("working")),
        "{created}"
    );
    let first = created["taskId"].as_str().expect("a task id").to_owned();
    assert!(outbox(&outbox_folder).is_empty(), "nothing written before a decision");
    let request = core.get(&reviewer, "/tasks?workspace=claims").await;
    let request_task = request.ok(200)["items"][0].clone();
    assert_eq!(request_task["customFields"]["agent"], "claims-desk", "{request_task}");
    assert_eq!(request_task["customFields"]["inputs"]["claim"], "C-7");
    // The agent never decides its own request; the reviewer does.
    let approvals =
        core.get(&reviewer, &format!("/approvals?task={}", request_task["id"].as_str().unwrap_or_default())).await;
    let approval = approvals.ok(200)["items"][0]["id"].as_str().expect("approval").to_owned();
    let self_decided =
        core.post(&desk, &format!("/approvals/{approval}:decide"), &json!({"outcome": "approved"})).await;
    assert_eq!(self_decided.status.as_u16(), 403, "{}", self_decided.body);
    // Asking again and again never makes the call.
    for _ in 0..3 {
        assert_eq!(task(&core, &desk, "tasks/get", &first).await["result"]["status"], "working");
    }
    assert!(outbox(&outbox_folder).is_empty());
    // The reviewer decides in the console, on the task's page: who asks, through which client,
    // what approving will do, with exactly which inputs.
    let console = crate::console::Console::new(&core);
    let (cookie, _) = console.sign_in(&reviewer).await;
    let task_page = console
        .get(Some(&cookie), &format!("/console/tasks/{}", request_task["id"].as_str().unwrap_or_default()))
        .await;
    for shown in
        ["claims-desk", "gateway-test", "claim.send_reply@1", "external_write", "Your parcel is on its way.", "C-7"]
    {
        assert!(task_page.body.contains(shown), "the request's page shows {shown}");
    }
    let decided = console
        .post(
            Some(&cookie),
            &format!("/console/approvals/{approval}/decide"),
            &[("outcome", "approved"), ("csrf", &task_page.csrf())],
            console.origin(),
        )
        .await;
    assert_eq!(decided.status.as_u16(), 303, "{}", decided.body);
    let done = settled(&core, &desk, &first).await;
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(done["result"]["structuredContent"]["status"], "sent", "{done}");
    assert_eq!(outbox(&outbox_folder), [("C-7".to_owned(), "Your parcel is on its way.".to_owned())]);
    // Another principal does not see the task.
    let (_, other) = rpc(&core, &runner, "tasks/get", &first, json!({"taskId": first}), true).await;
    assert!(other["error"].is_object(), "{other}");

    // Without the Tasks extension: held briefly, then pending_approval; rejected, nothing is written.
    let pending = call(&core, &desk, "claim.send_reply", json!({"claim": "C-8", "comment": "No."}), false).await;
    assert_eq!(pending["isError"], true, "{pending}");
    let asked: Value = serde_json::from_str(pending["content"][0]["text"].as_str().expect("a text")).expect("JSON");
    assert_eq!(asked["status"], "pending_approval", "{pending}");
    let second = asked["requestId"].as_str().expect("a request id").to_owned();
    assert!(asked["consoleUrl"].as_str().is_some_and(|url| url.contains("/console/tasks/")));
    let status = call(&core, &desk, "approval_status", json!({"requestId": second}), false).await;
    assert_eq!(status["structuredContent"]["status"], "pending");
    let second_task = core
        .engine
        .agent_request(&core.engine.authenticate(&desk).await.expect("desk"), &second)
        .await
        .expect("request")
        .task_id;
    decide(&core, &reviewer, &second_task, "rejected").await;
    let rejected = settled(&core, &desk, &second).await;
    assert_eq!(
        (rejected["status"].clone(), rejected["result"]["isError"].clone()),
        (json!("completed"), json!(true)),
        "{rejected}"
    );
    let status = call(&core, &desk, "approval_status", json!({"requestId": second}), false).await;
    assert_eq!(status["structuredContent"]["status"], "rejected");

    // Withdrawn by the agent; expired by time: nothing called either way.
    let third =
        call(&core, &desk, "claim.send_reply", json!({"claim": "C-9", "comment": "Later."}), true).await["taskId"]
            .as_str()
            .expect("id")
            .to_owned();
    assert_eq!(task(&core, &desk, "tasks/cancel", &third).await["result"]["resultType"], "complete");
    assert_eq!(task(&core, &desk, "tasks/get", &third).await["result"]["status"], "cancelled");
    let fourth =
        call(&core, &desk, "claim.send_reply", json!({"claim": "C-10", "comment": "Never."}), true).await["taskId"]
            .as_str()
            .expect("id")
            .to_owned();
    core.engine.run_agent_requests(chrono::Utc::now() + chrono::Duration::days(2)).await.expect("a pass");
    let expired = task(&core, &desk, "tasks/get", &fourth).await;
    assert_eq!(expired["result"]["status"], "failed", "{expired}");
    let fourth_task = core
        .engine
        .agent_request(&core.engine.authenticate(&desk).await.expect("desk"), &fourth)
        .await
        .expect("request")
        .task_id;
    let approvals = core.get(&reviewer, &format!("/approvals?task={fourth_task}")).await;
    assert_eq!(approvals.ok(200)["items"][0]["status"], "withdrawn");
    assert_eq!(outbox(&outbox_folder).len(), 1, "one approval, one reply");

    // The operators' page of agents: what each may do, and its open requests.
    let open = call(&core, &desk, "claim.send_reply", json!({"claim": "C-11", "comment": "Open."}), true).await;
    assert_eq!(open["status"], "working");
    let operator = token(&core.engine, "operator", &["org.read"]).await;
    let (operator_cookie, _) = console.sign_in(&operator).await;
    let agents_page = console.get(Some(&operator_cookie), "/console/agents").await;
    assert_eq!(agents_page.status.as_u16(), 200);
    for shown in [
        "claims-desk",
        "claims-skills",
        "claims.reply",
        "claim.send_reply@1",
        "claims_integration.skills",
        "the workspace",
    ] {
        assert!(agents_page.body.contains(shown), "the agents page shows {shown}");
    }
    assert_eq!(agents_page.body.matches("<li>").count(), 1, "one open request: {}", agents_page.body);
    let (desk_console, _) = (console.get(Some(&cookie), "/console/agents").await, ());
    assert_eq!(desk_console.status.as_u16(), 403, "a reviewer without org.read sees no agents");

    // The journal says who asked, through which client, who decided, and what the call was.
    let journal = core.engine.store().events(0, None, 5000).await.expect("events");
    let of = |kind: &str| {
        journal.iter().filter(|event| event.kind == kind).map(|event| event.data.clone()).collect::<Vec<_>>()
    };
    let asked = of("agent_request.created");
    assert_eq!(asked.len(), 5);
    assert_eq!(asked[0]["clientName"], "gateway-test");
    let invoked = of("agent_request.invoked");
    assert_eq!(invoked.len(), 1);
    assert!(invoked[0]["decidedBy"].is_string());
    let ended: Vec<String> =
        of("agent_request.ended").iter().map(|data| data["status"].as_str().unwrap_or_default().to_owned()).collect();
    assert_eq!(ended, ["succeeded", "rejected", "withdrawn", "expired"]);
}

fn options() -> skill_server::console::Options {
    let gateway = skill_gateway::Config {
        hold: Duration::from_millis(500),
        call_wait: Duration::from_millis(2500),
        ..skill_gateway::Config::default()
    };
    skill_server::console::Options { gateway, ..skill_server::console::Options::default() }
}

#[tokio::test]
async fn an_agents_write_waits_for_a_person_and_is_written_once_on_sqlite() {
    story(core_serving(Backend::Sqlite, "gateway", None, options()).await, "sqlite").await;
}

#[tokio::test]
async fn an_agents_write_waits_for_a_person_and_is_written_once_on_postgres() {
    story(core_serving(Backend::Postgres, "gateway", None, options()).await, "postgres").await;
}

/// A core with the claims package, its host executing, the desk agent, a second package's agent
/// that may only classify, and a reviewer: `(core, root, desk, reader, reviewer, outbox, executor)`.
async fn desk_and_reader(label: &str) -> (Core, String, String, String, String, Scratch, Child) {
    let core = core_serving(Backend::Sqlite, label, None, options()).await;
    let outbox_folder = Scratch::new(&format!("{label}-outbox"));
    let root = apply_package(&core).await;
    ensure_workspace(&core, "claims").await;
    let installer = token(&core.engine, "installer", &[]).await;
    let reader = json!({"key": "claims-reader", "spec": {
        "identity": {"kind": "agent", "permissions": ["skills.invoke"]},
        "skills": {"invoke": ["claim.classify@1"]}
    }});
    let body = json!({"package": {"key": "readers", "version": "1"}, "installHash": "1".repeat(64),
                      "objects": [{"kind": "Agent", "key": "claims-reader"}], "agents": [reader]});
    core.post(&installer, "/packages:apply", &body).await.ok(200);
    let mut tokens = Vec::new();
    for agent in ["claims-desk", "claims-reader", "claims-skills"] {
        let issued = core.post(&installer, &format!("/agents/{agent}/tokens"), &json!({})).await;
        tokens.push(issued.ok(201)["token"].as_str().expect("a token").to_owned());
    }
    let executor = executor(&host(), &root, &tokens[2], &outbox_folder);
    let reviewer = token(&core.engine, "reviewer", &["tasks.write@claims", "approvals.decide@claims"]).await;
    let (desk, reader) = (tokens[0].clone(), tokens[1].clone());
    (core, root, desk, reader, reviewer, outbox_folder, executor)
}

/// A request of the 2025-11-25 revision to the core at `root`: the answer's JSON-RPC message.
async fn dated(http: &reqwest::Client, root: &str, token: &str, method: &str, params: Value) -> Value {
    let body = json!({"jsonrpc": "2.0", "id": 3, "method": method, "params": params});
    let answer = http
        .post(format!("{root}/mcp"))
        .bearer_auth(token)
        .header("Accept", "application/json, text/event-stream")
        .header("MCP-Protocol-Version", "2025-11-25")
        .json(&body)
        .send()
        .await
        .expect("the core answers");
    assert_eq!(answer.status().as_u16(), 200);
    let text = answer.text().await.expect("a body");
    let data = text.lines().filter_map(|line| line.strip_prefix("data: ")).rfind(|data| !data.trim().is_empty());
    serde_json::from_str(data.unwrap_or(&text)).expect("JSON")
}

/// The 2025-11-25 revision's tasks keep to their agent: another principal neither reads, waits
/// on nor withdraws them; a task asked of a tool that is no request is an ordinary call; a
/// withdrawn task's result is an error, and nothing is written.
#[tokio::test]
async fn the_older_revisions_tasks_keep_to_their_agent() {
    let (core, root, desk, reader, _reviewer, outbox_folder, _executor) = desk_and_reader("gateway-dated").await;
    let http = &core.http;
    let read =
        json!({"name": "claim.classify", "arguments": {"text": "The courier never came."}, "task": {"ttl": 60000}});
    let answered = dated(http, &root, &reader, "tools/call", read).await;
    assert!(answered["result"].get("task").is_none(), "{answered}");
    assert_eq!(answered["result"]["structuredContent"]["category"], "delivery", "{answered}");

    let write = json!({"name": "claim.send_reply", "arguments": {"claim": "C-9", "comment": "No."}, "task": {}});
    let created = dated(http, &root, &desk, "tools/call", write).await;
    let id = created["result"]["task"]["taskId"].as_str().expect("a task").to_owned();
    assert_eq!(created["result"]["task"]["status"], "working");
    for method in ["tasks/get", "tasks/result", "tasks/cancel"] {
        let refused = dated(http, &root, &reader, method, json!({"taskId": id})).await;
        assert_eq!(refused["error"]["data"]["code"], "not_found", "{method}: {refused}");
        let odd = dated(http, &root, &desk, method, json!({"taskId": 123})).await;
        assert_eq!(odd["error"]["code"], -32602, "{method}: a task id is a string: {odd}");
    }
    // Another agent that writes tasks in the workspace neither sees nor touches the request's task.
    let intake = core
        .engine
        .issue_agent_token(
            None,
            "claims-intake",
            &skill_api::AgentTokenRequest { operated_by: Some("installer".into()), ..Default::default() },
            &skill_engine::Origin::default(),
        )
        .await
        .expect("a token")
        .token;
    let request_task = core.engine.store().agent_request(&id).await.expect("the request").task_id;
    assert_eq!(core.get(&intake, &format!("/tasks/{request_task}")).await.status.as_u16(), 404);
    let listed = core.get(&intake, "/tasks?workspace=claims").await.ok(200).clone();
    assert!(!listed.to_string().contains(&request_task), "{listed}");
    let close = core.post(&intake, &format!("/tasks/{request_task}:close"), &json!({"status": "cancelled"})).await;
    assert_eq!(close.status.as_u16(), 404);
    let comment = core.post(&intake, "/task-comments", &json!({"taskId": request_task, "body": "ok"})).await;
    assert_eq!(comment.status.as_u16(), 404);
    // An id is a string or a number.
    let null_id = json!({"jsonrpc": "2.0", "id": null, "method": "tasks/cancel", "params": {"taskId": id}});
    let answer = http
        .post(format!("{root}/mcp"))
        .bearer_auth(&desk)
        .header("Accept", "application/json, text/event-stream")
        .header("MCP-Protocol-Version", "2025-11-25")
        .json(&null_id)
        .send()
        .await
        .expect("the core answers");
    assert_eq!(answer.status().as_u16(), 400);
    // A notification asks for nothing: it withdraws nothing.
    let notice = json!({"jsonrpc": "2.0", "method": "tasks/cancel", "params": {"taskId": id}});
    let answer = http
        .post(format!("{root}/mcp"))
        .bearer_auth(&desk)
        .header("Accept", "application/json, text/event-stream")
        .header("MCP-Protocol-Version", "2025-11-25")
        .json(&notice)
        .send()
        .await
        .expect("the core answers");
    assert_eq!(answer.status().as_u16(), 202);
    let got = dated(http, &root, &desk, "tasks/get", json!({"taskId": id})).await;
    assert_eq!(got["result"]["status"], "working", "{got}");
    // tasks/result waits its bound, then says the task still works; a principal holds at most 16
    // such waits at once.
    let waits: Vec<_> = (0..16).map(|_| dated(http, &root, &desk, "tasks/result", json!({"taskId": id}))).collect();
    let waiting = futures::future::join_all(waits);
    let extra = async {
        tokio::time::sleep(Duration::from_millis(700)).await;
        dated(http, &root, &desk, "tasks/result", json!({"taskId": id})).await
    };
    let (waited, extra) = tokio::join!(waiting, extra);
    assert_eq!(extra["error"]["data"]["code"], "too_many_waits", "{extra}");
    for answer in waited {
        assert_eq!(answer["error"]["data"]["code"], "task_still_working", "{answer}");
    }
    let cancelled = dated(http, &root, &desk, "tasks/cancel", json!({"taskId": id})).await;
    assert_eq!(cancelled["result"]["status"], "cancelled", "{cancelled}");
    let again = dated(http, &root, &desk, "tasks/cancel", json!({"taskId": id})).await;
    assert!(again["error"]["code"].is_i64(), "a second withdrawal is refused: {again}");
    let result = dated(http, &root, &desk, "tasks/result", json!({"taskId": id})).await;
    assert_eq!(result["error"]["data"]["code"], "request_withdrawn", "{result}");
    assert!(outbox(&outbox_folder).is_empty());

    // A principal disabled while it waits learns nothing more.
    let write = json!({"name": "claim.send_reply", "arguments": {"claim": "C-10", "comment": "Later."}, "task": {}});
    let created = dated(http, &root, &desk, "tools/call", write).await;
    let later = created["result"]["task"]["taskId"].as_str().expect("a task").to_owned();
    let admin = token(&core.engine, "operator", &["org.manage"]).await;
    let wait = dated(http, &root, &desk, "tasks/result", json!({"taskId": later}));
    let disable = async {
        tokio::time::sleep(Duration::from_millis(500)).await;
        core.post(&admin, "/principals:disable", &json!({"principal": "claims-desk", "reason": "offboarded"}))
            .await
            .ok(200);
    };
    let (waited, ()) = tokio::join!(wait, disable);
    assert_eq!(waited["error"]["data"]["code"], "invalid_token", "{waited}");
}

/// The TypeScript SDK's client as an agent, and the MCP Inspector's CLI: the same lists, a
/// read-only call, and a write that waits for a person, is approved, and is sent once.
#[tokio::test]
async fn the_typescript_client_and_the_inspector_cli_see_the_gateway_as_the_agent_does() {
    let (core, root, desk, reader, reviewer, outbox_folder, _executor) = desk_and_reader("gateway-ts").await;
    let node = std::env::var("SKILL_TEST_NODE").unwrap_or_else(|_| ".".to_owned());
    let output = tokio::process::Command::new("node")
        .arg(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/support/gateway_client.cjs"))
        .args([&root, &desk, &reader, &reviewer])
        .env("SKILL_TEST_NODE", &node)
        .output()
        .await
        .expect("node runs");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "the TypeScript client failed (cargo xtask setup installs it): {stderr}");
    let seen: Value = serde_json::from_slice(&output.stdout).unwrap_or_else(|e| panic!("a JSON report: {e}; {stderr}"));
    assert_eq!(seen["readerTools"], json!(["claim.classify"]));
    assert_eq!(
        seen["deskTools"],
        json!(["claim.classify", "claim.draft_reply", "claim.lookup", "claim.send_reply", "approval_status"])
    );
    assert_eq!(seen["classify"]["structuredContent"]["category"], "delivery", "{}", seen["classify"]);
    assert!(seen["pending"].get("thrown").is_none(), "the SDK takes a pending request as it is: {}", seen["pending"]);
    assert_eq!(
        (seen["pending"]["isError"].clone(), seen["request"]["status"].clone()),
        (json!(true), json!("pending_approval"))
    );
    assert_eq!(seen["decided"], 200);
    assert_eq!(seen["status"]["structuredContent"]["status"], "succeeded", "{}", seen["status"]);
    assert_eq!(seen["status"]["structuredContent"]["output"]["status"], "sent");

    // The 2025-11-25 revision's tasks, as the SDK runs them.
    assert!(seen["serverTasks"]["requests"]["tools"]["call"].is_object(), "{}", seen["serverTasks"]);
    assert_eq!(seen["execution"], json!({"taskSupport": "optional"}));
    let kinds = |messages: &Value| -> Vec<String> {
        messages.as_array().into_iter().flatten().filter_map(|m| m["type"].as_str().map(str::to_owned)).collect()
    };
    let approved = &seen["approvedTask"];
    let steps = kinds(approved);
    assert_eq!(&steps[..4], ["taskCreated", "decided", "got", "taskStatus"], "{approved}");
    assert_eq!(steps.last().map(String::as_str), Some("result"), "{approved}");
    assert_eq!(approved[0]["task"]["status"], "working");
    assert!(approved[0]["task"]["ttl"].as_u64().is_some_and(|ttl| ttl > 0), "{approved}");
    assert_eq!(approved[1]["status"], 200);
    let last = approved.as_array().and_then(|messages| messages.last()).cloned().unwrap_or_default();
    assert_eq!(last["result"]["structuredContent"]["status"], "sent", "{approved}");
    let rejected = &seen["rejectedTask"];
    let last = rejected.as_array().and_then(|messages| messages.last()).cloned().unwrap_or_default();
    assert_eq!(
        (last["type"].as_str(), last["result"]["isError"].as_bool()),
        (Some("result"), Some(true)),
        "{rejected}"
    );
    assert!(last["result"]["content"][0]["text"].as_str().is_some_and(|text| text.contains("request_rejected")));
    assert_eq!(
        (seen["cancelled"]["status"].as_str(), seen["afterCancel"]["status"].as_str()),
        (Some("cancelled"), Some("cancelled"))
    );
    assert_eq!(
        outbox(&outbox_folder),
        [("C-41".to_owned(), "Sent from TypeScript.".to_owned()), ("C-42".to_owned(), "Sent as a task.".to_owned())],
        "the approved calls, once each; nothing of the rejected or withdrawn ones"
    );

    // The Inspector's CLI: the same list for the same token, and a read-only call's output.
    let inspector = std::path::Path::new(&node).join("node_modules/.bin/mcp-inspector");
    let run = |args: Vec<String>| {
        let inspector = inspector.clone();
        async move {
            let output =
                tokio::process::Command::new(&inspector).args(&args).output().await.expect("the inspector runs");
            assert!(output.status.success(), "the inspector failed: {}", String::from_utf8_lossy(&output.stderr));
            serde_json::from_slice::<Value>(&output.stdout).expect("the inspector prints JSON")
        }
    };
    let base = |token: &str| {
        vec![
            "--cli".to_owned(),
            format!("{root}/mcp"),
            "--transport".into(),
            "http".into(),
            "--header".into(),
            format!("Authorization: Bearer {token}"),
        ]
    };
    let mut listed = base(&reader);
    listed.extend(["--method".into(), "tools/list".into()]);
    let listed = run(listed).await;
    let names: Vec<&str> =
        listed["tools"].as_array().expect("tools").iter().filter_map(|t| t["name"].as_str()).collect();
    assert_eq!(names, ["claim.classify"]);
    let mut called = base(&desk);
    called.extend(
        ["--method", "tools/call", "--tool-name", "claim.classify", "--tool-arg", "text=The parcel arrived broken."]
            .map(String::from),
    );
    let called = run(called).await;
    assert_eq!(called["structuredContent"]["category"], "quality", "{called}");
    drop(core);
}

/// The Python `mcp` client as an agent (no Tasks extension): what two agents are shown, a
/// read-only call, and writes decided by a person — approved (written once) and rejected.
#[tokio::test]
async fn the_python_mcp_client_asks_and_a_person_decides() {
    let (core, root, desk, reader, reviewer, outbox_folder, _executor) = desk_and_reader("gateway-python").await;
    let python = std::env::var("SKILL_TEST_PYTHON").unwrap_or_else(|_| "python3".to_owned());
    let output = tokio::process::Command::new(python)
        .arg(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/support/gateway_client.py"))
        .args([&root, &desk, &reader, &reviewer])
        .output()
        .await
        .expect("the Python client runs");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "the Python client failed (cargo xtask setup installs mcp): {stderr}");
    let seen: Value = serde_json::from_slice(&output.stdout).unwrap_or_else(|e| panic!("a JSON report: {e}; {stderr}"));

    assert_eq!(seen["reader_tools"], json!(["claim.classify"]), "an agent sees only its assignments");
    assert_eq!(seen["reader_write"]["isError"], true);
    assert!(seen["reader_write"]["content"][0]["text"].as_str().is_some_and(|t| t.contains("tool_not_authorized")));
    let desk_tools: Vec<&str> =
        seen["desk_tools"].as_array().expect("tools").iter().filter_map(|t| t["name"].as_str()).collect();
    assert_eq!(
        desk_tools,
        ["claim.classify", "claim.draft_reply", "claim.lookup", "claim.send_reply", "approval_status"]
    );
    assert_eq!(seen["classify"]["structuredContent"]["category"], "quality", "{}", seen["classify"]);
    assert_eq!(seen["pending"]["isError"], true, "{}", seen["pending"]);
    assert!(seen["pending"].get("structuredContent").is_none(), "nothing a client checks against the output schema");
    assert_eq!(seen["pending_request"]["status"], "pending_approval", "{}", seen["pending"]);
    assert_eq!(seen["decided"], 200);
    assert_eq!(seen["approved"]["structuredContent"]["status"], "succeeded", "{}", seen["approved"]);
    assert_eq!(seen["approved"]["structuredContent"]["output"]["status"], "sent");
    assert_eq!(seen["rejected"]["structuredContent"]["status"], "rejected", "{}", seen["rejected"]);
    assert_eq!(seen["unknown_request"]["isError"], true);
    assert_eq!(
        outbox(&outbox_folder),
        [("C-21".to_owned(), "A new one is on its way.".to_owned())],
        "one reply: the approved one"
    );
    drop(core);
}

/// `skill-core serve` on `db` at `port`, once it listens.
fn serve_at(db: &str, port: u16) -> skill_fixtures::Running {
    let listen = format!("127.0.0.1:{port}");
    let mut running = crate::running::start(&["serve", "--db", db, "--listen", &listen], false);
    running.until(30, |line| line.contains("on http://"));
    running
}

/// A core killed (SIGKILL) while requests wait — one just approved, one not yet decided — answers
/// the same task ids after its restart: the approved one is carried out once, the other waits for
/// its decision. Nothing of a request lived in the killed process.
#[test]
fn a_core_killed_while_requests_wait_answers_the_same_task_ids_after_its_restart() {
    let folder = Scratch::new("gateway-kill");
    let outbox_folder = Scratch::new("gateway-kill-outbox");
    let db = folder.path().join("db").display().to_string();
    let cli = |args: &[&str]| {
        let output = std::process::Command::new(crate::running::CORE).args(args).output().expect("skill-core runs");
        assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
        String::from_utf8_lossy(&output.stdout).trim().to_owned()
    };
    cli(&["workspace", "create", "--db", &db, "--key", "claims"]);
    let installer = cli(&[
        "token",
        "create",
        "--db",
        &db,
        "--name",
        "installer",
        "--grant",
        "org.manage",
        "--grant",
        "skills.invoke",
        "--grant",
        "skills.execute",
        "--grant",
        "claims.reply",
        "--grant",
        "tasks.write@claims",
    ]);
    let reviewer = cli(&[
        "token",
        "create",
        "--db",
        &db,
        "--name",
        "reviewer",
        "--grant",
        "tasks.write@claims",
        "--grant",
        "approvals.decide@claims",
    ]);
    let port = std::net::TcpListener::bind("127.0.0.1:0").expect("a port").local_addr().expect("address").port();
    let root = format!("http://127.0.0.1:{port}");
    let mut core = serve_at(&db, port);
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
    // No connection outlives the killed core.
    let http = reqwest::Client::builder().pool_max_idle_per_host(0).build().expect("a client");
    let (desk, runner) = runtime.block_on(async {
        let loaded =
            skill_package::load(&std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/claims"))
                .expect("the package");
        let client = skill_client::Client::new(&root, installer.clone()).expect("a client");
        let changes = skill_package::plan(&loaded, &client, &[]).await.expect("a plan");
        skill_package::apply(&loaded, &client, &changes, |_| {}).await.expect("applied");
        let issue = |agent: &str| {
            let (http, root, installer) = (&http, &root, &installer);
            let agent = agent.to_owned();
            async move {
                let answer = http
                    .post(format!("{root}/api/v1/agents/{agent}/tokens"))
                    .bearer_auth(installer)
                    .json(&json!({}))
                    .send()
                    .await;
                let body: Value = answer.expect("answers").json().await.expect("JSON");
                body["token"].as_str().expect("a token").to_owned()
            }
        };
        (issue("claims-desk").await, issue("claims-skills").await)
    });
    let _executor: Child = executor(&host(), &root, &runner, &outbox_folder);
    let ask = |claim: &str| {
        runtime.block_on(async {
            let params = json!({"name": "claim.send_reply", "arguments": {"claim": claim, "comment": format!("About {claim}.")}});
            let (status, message) = rpc_at(&http, &root, &desk, "tools/call", "claim.send_reply", params, true).await;
            assert_eq!(status, 200, "{message}");
            message["result"]["taskId"].as_str().expect("a task").to_owned()
        })
    };
    let (approved, undecided) = (ask("C-31"), ask("C-32"));
    let task_of = |request: &str| {
        runtime.block_on(async {
            let listed = http.get(format!("{root}/api/v1/tasks?workspace=claims")).bearer_auth(&reviewer).send().await;
            let listed: Value = listed.expect("answers").json().await.expect("JSON");
            let claim = if request == approved { "C-31" } else { "C-32" };
            let task = listed["items"]
                .as_array()
                .expect("tasks")
                .iter()
                .find(|t| t["customFields"]["inputs"]["claim"] == claim)
                .cloned();
            task.expect("the request's task")["id"].as_str().expect("id").to_owned()
        })
    };
    let decide_now = |task: &str| {
        runtime.block_on(async {
            let approvals =
                http.get(format!("{root}/api/v1/approvals?task={task}")).bearer_auth(&reviewer).send().await;
            let approvals: Value = approvals.expect("answers").json().await.expect("JSON");
            let id = approvals["items"][0]["id"].as_str().expect("an approval").to_owned();
            let decided = http
                .post(format!("{root}/api/v1/approvals/{id}:decide"))
                .bearer_auth(&reviewer)
                .json(&json!({"outcome": "approved"}))
                .send()
                .await;
            assert_eq!(decided.expect("answers").status().as_u16(), 200);
        })
    };
    let (approved_task, undecided_task) = (task_of(&approved), task_of(&undecided));
    decide_now(&approved_task);
    core.kill();
    core = serve_at(&db, port);
    let state = |task: &str| {
        runtime.block_on(async {
            let (_, message) = rpc_at(&http, &root, &desk, "tasks/get", task, json!({"taskId": task}), true).await;
            message["result"].clone()
        })
    };
    let settled = |task: &str| {
        for _ in 0..300 {
            let got = state(task);
            if got["status"] != "working" {
                return got;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        panic!("{task} never settled after the restart");
    };
    let first = settled(&approved);
    assert_eq!(
        (first["status"].as_str(), first["result"]["structuredContent"]["status"].as_str()),
        (Some("completed"), Some("sent")),
        "{first}"
    );
    assert_eq!(state(&undecided)["status"], "working", "the undecided request still waits");
    decide_now(&undecided_task);
    let second = settled(&undecided);
    assert_eq!(second["status"], "completed", "{second}");
    assert_eq!(
        outbox(&outbox_folder),
        [("C-31".to_owned(), "About C-31.".to_owned()), ("C-32".to_owned(), "About C-32.".to_owned())]
    );
    drop(core);
}

/// The claims story told by an agent: it asks to send a reply through `/mcp` (an MCP task); the
/// reviewer, in a real browser, opens the request's page from the task's status message, reads
/// who asks and exactly what approving will call, and approves; the agent's `tasks/get` answers
/// the sent reply, and the outbox holds exactly that one.
#[tokio::test]
async fn a_reviewer_approves_an_agents_request_in_the_browser() {
    let (core, root, desk, _reader, reviewer, outbox_folder, _executor) = desk_and_reader("gateway-browser").await;
    let asked = call(
        &core,
        &desk,
        "claim.send_reply",
        json!({"claim": "C-1002", "comment": "Your refund is on its way."}),
        true,
    )
    .await;
    let request = asked["taskId"].as_str().expect("a task id").to_owned();
    let message = asked["statusMessage"].as_str().expect("a status message");
    let page =
        message.split_whitespace().find(|word| word.starts_with("http")).expect("the console's address").to_owned();

    let browser = crate::webdriver::Session::start(1280, 1200).await;
    browser.open(&format!("{root}/console/sign-in")).await;
    browser.find("#token").await.type_text(&reviewer).await;
    browser.find("form button[type=submit]").await.click().await;
    browser.until_text("main h1", 10, |text| text == "Tasks").await;
    assert!(
        browser.find("#to-decide").await.text().await.contains("claims-desk"),
        "the request waits for the reviewer"
    );
    browser.open(&page).await;
    browser.until_text("main h1", 10, |text| text.contains("claims-desk asks to call claim.send_reply@1")).await;
    let preview = browser.find(".preview").await.text().await;
    for shown in ["claim.send_reply@1", "external_write", "C-1002", "Your refund is on its way."] {
        assert!(preview.contains(shown), "{shown} in: {preview}");
    }
    assert!(outbox(&outbox_folder).is_empty(), "nothing sent before the decision");
    browser.find("button.approve").await.click().await;
    browser.until_text(".approval .decided", 10, |text| text.contains("decided by reviewer")).await;
    let done = settled(&core, &desk, &request).await;
    assert_eq!(
        (done["status"].as_str(), done["result"]["structuredContent"]["status"].as_str()),
        (Some("completed"), Some("sent")),
        "{done}"
    );
    assert_eq!(outbox(&outbox_folder), [("C-1002".to_owned(), "Your refund is on its way.".to_owned())]);
    let closed = browser.until_text(".status, main", 30, |text| text.contains("done")).await;
    assert!(closed.contains("done"), "the request's task is done once its call succeeded");
}

/// The keys the core gives its own calls (`agent-request:`, `rule:`, `process:`) are refused
/// through the gateway as a direct call refuses them — an agent's write among them, which would
/// otherwise become a request — and nothing is asked for or called.
#[tokio::test]
async fn the_cores_own_idempotency_keys_are_refused_as_a_direct_call_refuses_them() {
    let core = core_serving(Backend::Sqlite, "gateway-keys", None, options()).await;
    apply_package(&core).await;
    let installer = token(&core.engine, "installer", &[]).await;
    let issued = core.post(&installer, "/agents/claims-desk/tokens", &json!({})).await;
    let desk = issued.ok(201)["token"].as_str().expect("a token").to_owned();
    let person = token(&core.engine, "somebody", &["skills.invoke"]).await;
    let calls = [
        (&desk, "claim.send_reply", json!({"claim": "C-1", "comment": "Your parcel is on its way."})),
        (&desk, "claim.classify", json!({"text": "The parcel is late."})),
        (&person, "claim.classify", json!({"text": "The parcel is late."})),
    ];
    for key in ["agent-request:0", "rule:r:f", "process:a", "  process:padded  ", "approval-outcome:a:0", "execution:r"]
    {
        for (who, tool, arguments) in &calls {
            let params = json!({"name": tool, "arguments": arguments, "_meta": {"skill/idempotencyKey": key}});
            let (status, message) = rpc(&core, who, "tools/call", tool, params, false).await;
            assert_eq!(status, 200, "{message}");
            assert_eq!(message["result"]["isError"], true, "{key} {tool}: {message}");
            let text = message["result"]["content"][0]["text"].as_str().unwrap_or_default();
            let error: Value = serde_json::from_str(text).unwrap_or_default();
            assert_eq!(
                (error["error"]["code"].as_str(), error["error"]["details"]["field"].as_str()),
                (Some("invalid_idempotency_key"), Some("idempotencyKey")),
                "{key} {tool}: {message}"
            );
        }
        let direct = json!({"inputs": {"text": "The parcel is late."}, "idempotencyKey": key});
        core.post(&person, "/skills/claim.classify@1:invoke", &direct).await.refused(422, "invalid_idempotency_key");
    }
    let reader = token(&core.engine, "reader", &["tasks.read@claims"]).await;
    let tasks = core.get(&reader, "/tasks?workspace=claims").await.ok(200).clone();
    assert_eq!(tasks["items"], json!([]), "no request was made: {tasks}");
    let calls = core.get(&core.admin, "/skill-invocations").await.ok(200).clone();
    assert_eq!(calls["items"], json!([]), "nothing was called: {calls}");
}

/// One POST to `/mcp` as `token` with `headers` and `body` as sent: the status, the
/// `Content-Type` and the body's text.
async fn post_mcp(core: &Core, token: &str, headers: &[(&str, &str)], body: Vec<u8>) -> (u16, String, String) {
    let root = core.base.trim_end_matches("/api/v1");
    let mut request = core
        .http
        .post(format!("{root}/mcp"))
        .bearer_auth(token)
        .header("Accept", "application/json, text/event-stream")
        .body(body);
    if !headers.iter().any(|(name, _)| name.eq_ignore_ascii_case("content-type")) {
        request = request.header("Content-Type", "application/json");
    }
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let answer = request.send().await.expect("the core answers");
    let status = answer.status().as_u16();
    let media = answer.headers().get("content-type").and_then(|v| v.to_str().ok()).unwrap_or_default().to_owned();
    (status, media, answer.text().await.expect("a body"))
}

/// A loopback `Origin` (`localhost`, `127.0.0.1`, `[::1]`) is the core's own only with the port
/// the core listens on: a page that another server of this machine serves is refused as a
/// foreign site's is.
#[tokio::test]
async fn a_loopback_origin_is_the_cores_only_on_its_own_port() {
    let core = core_serving(Backend::Sqlite, "gateway-origins", None, options()).await;
    let person = token(&core.engine, "somebody", &["skills.invoke"]).await;
    let port: u16 =
        core.base.trim_end_matches("/api/v1").rsplit(':').next().and_then(|p| p.parse().ok()).expect("a port");
    let other = if port == 9999 { 9998 } else { 9999 };
    let list = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "gateway-test", "version": "1.0"}}}});
    let origins = [
        (format!("http://localhost:{port}"), 200),
        (format!("http://127.0.0.1:{port}"), 200),
        (format!("http://[::1]:{port}"), 200),
        (format!("HTTP://LOCALHOST:{port}/console"), 200),
        (format!("http://localhost:{other}"), 403),
        (format!("http://127.0.0.1:{other}"), 403),
        (format!("http://[::1]:{other}"), 403),
        ("http://localhost".to_owned(), 403),
        ("https://127.0.0.1".to_owned(), 403),
        (format!("http://localhost.evil.example:{port}"), 403),
    ];
    for (origin, expected) in origins {
        let headers =
            [("Origin", origin.as_str()), ("MCP-Protocol-Version", "2026-07-28"), ("Mcp-Method", "tools/list")];
        let (status, _, text) = post_mcp(&core, &person, &headers, list.to_string().into_bytes()).await;
        assert_eq!(status, expected, "{origin}: {text}");
        if expected == 403 {
            let body: Value = serde_json::from_str(&text).unwrap_or_default();
            assert_eq!(body["error"]["code"], "origin_not_allowed", "{origin}: {text}");
        }
    }
}

/// Malformed JSON-RPC gets a JSON-RPC error as JSON with HTTP 400 and `"id": null`, never an
/// HTTP 415 or plain text: a batch, an id that is neither a string nor an integer, a number no
/// float holds, a body nested deeper than JSON is read, bytes that are not UTF-8.
#[tokio::test]
async fn malformed_json_rpc_gets_a_json_rpc_error() {
    let core = core_serving(Backend::Sqlite, "gateway-malformed", None, options()).await;
    let person = token(&core.engine, "somebody", &["skills.invoke"]).await;
    let message = |id: &str, params: &str| {
        format!(r#"{{"jsonrpc": "2.0", "id": {id}, "method": "tools/list", "params": {params}}}"#)
    };
    let list = |id: &str, params: &str| message(id, params).into_bytes();
    let deep = format!(r#"{{"a": {}1{}}}"#, "[".repeat(3000), "]".repeat(3000));
    let mut not_utf8 = br#"{"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"a": ""#.to_vec();
    not_utf8.extend([0xff, 0xfe, 0x80]);
    not_utf8.extend(br#""}}"#);
    let cases: Vec<(&str, Vec<u8>, i64)> = vec![
        ("a batch", format!("[{}]", message("1", "{}")).into_bytes(), -32600),
        ("an empty batch", b"[]".to_vec(), -32600),
        ("an object as id", list(r#"{"a": 1}"#, "{}"), -32600),
        ("an array as id", list("[1]", "{}"), -32600),
        ("null as id", list("null", "{}"), -32600),
        ("a fraction as id", list("1.5", "{}"), -32600),
        ("an id past i64", list("9223372036854775808", "{}"), -32600),
        ("1e400 as id", list("1e400", "{}"), -32700),
        ("1e400 in params", list("1", r#"{"a": 1e400}"#), -32700),
        ("-1e400 in a call's arguments", br#"{"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "x", "arguments": {"n": -1e400}}}"#.to_vec(), -32700),
        ("params nested 3,000 deep", list("1", &deep), -32700),
        ("bytes that are not UTF-8", not_utf8, -32700),
        ("not UTF-8 outside a string", b"\xff\xfe{}".to_vec(), -32700),
    ];
    for (what, body, code) in cases {
        let headers = [("MCP-Protocol-Version", "2026-07-28")];
        let (status, media, text) = post_mcp(&core, &person, &headers, body).await;
        assert_eq!((status, media.as_str()), (400, "application/json"), "{what}: {text}");
        let answer: Value = serde_json::from_str(&text).unwrap_or_else(|_| panic!("{what}: not JSON: {text}"));
        assert_eq!(
            (answer["jsonrpc"].as_str(), &answer["id"], answer["error"]["code"].as_i64()),
            (Some("2.0"), &Value::Null, Some(code)),
            "{what}: {text}"
        );
        assert!(answer["error"]["message"].as_str().is_some_and(|m| !m.is_empty()), "{what}: {text}");
    }
    // JSON-RPC that no MCP method reads (`params` of the wrong shape): `-32600`, naming its id.
    let headers = [("MCP-Protocol-Version", "2026-07-28"), ("Mcp-Method", "tools/list")];
    let (status, media, text) = post_mcp(&core, &person, &headers, list("3", "5")).await;
    assert_eq!((status, media.as_str()), (400, "application/json"), "{text}");
    let answer: Value = serde_json::from_str(&text).unwrap_or_else(|_| panic!("not JSON: {text}"));
    assert_eq!((answer["id"].as_i64(), answer["error"]["code"].as_i64()), (Some(3), Some(-32600)), "{text}");
    // A body not sent as JSON is still the transport's 415.
    let (status, _, _) = post_mcp(&core, &person, &[("Content-Type", "text/plain")], list("1", "{}")).await;
    assert_eq!(status, 415);
    // A well-formed request still reaches the tools.
    assert!(tools(&core, &person).await.is_empty(), "nothing is published here");
}

/// The agent (`token`) asks through `/mcp` to send a reply on `claim`: the id of the request's
/// task, which a person decides.
pub(crate) async fn request_write(core: &Core, token: &str, claim: &str) -> String {
    let asked =
        call(core, token, "claim.send_reply", json!({"claim": claim, "comment": "Asked by the agent."}), true).await;
    let id = asked["task"]["taskId"].as_str().or(asked["taskId"].as_str()).expect("a request").to_owned();
    core.engine.store().agent_request(&id).await.expect("the request").task_id
}
