//! `execute`: the demo host as a local executor of a real core (served in this process on
//! 127.0.0.1): calls invoked through the core run in the host and end with its outcome; the
//! call's ids and key reach the skill; a lost lease reports nothing; SIGTERM lets a running call
//! finish.

use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rustix::process::Signal;
use serde_json::{Value, json};
use skill_engine::{Engine, Origin, TokenRequest};
use skill_fixtures::{Output, Running, Scratch};

use crate::demo_binary::demo_host;

struct Core {
    runtime: tokio::runtime::Runtime,
    base: String,
    engine: Engine,
    admin: String,
    caller: String,
    executor: String,
    http: reqwest::Client,
    _folder: Scratch,
}

impl Core {
    fn start() -> Self {
        let runtime =
            tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().expect("runtime");
        let folder = Scratch::new("skill-host-execute");
        let (base, engine) = runtime.block_on(async {
            let store =
                skill_store::open(folder.path().to_str().expect("utf-8"), &Default::default()).await.expect("store");
            let engine = Engine::new(Arc::clone(&store));
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("a port");
            let base = format!("http://{}", listener.local_addr().expect("address"));
            tokio::spawn(skill_server::serve(engine.clone(), listener, Default::default()));
            (base, engine)
        });
        // The caller and the operator are people: an agent would call only what is assigned to
        // it, and never holds org.manage.
        let token = |name: &str, grant: &str| {
            let request = TokenRequest {
                principal: name.to_owned(),
                kind: match name {
                    "runner" => "executor",
                    _ => "person",
                }
                .to_owned(),
                grants: vec![grant.to_owned()],
                label: String::new(),
                expires_at: None,
            };
            runtime.block_on(engine.issue_token(&request, &Origin::default())).expect("token").token
        };
        let (admin, caller, executor) =
            (token("admin", "org.manage"), token("caller", "skills.invoke"), token("runner", "skills.execute"));
        // What the runner may run is the operator's to say: the demo host's skills.
        let allowance = skill_api::ExecutorAllowance {
            protocols: vec!["local".to_owned()],
            local: vec!["demo_host".to_owned()],
            ..skill_api::ExecutorAllowance::default()
        };
        runtime.block_on(engine.allow_executor(None, "runner", &allowance, None)).expect("allowed");
        Self { runtime, base, engine, admin, caller, executor, http: reqwest::Client::new(), _folder: folder }
    }

    fn post(&self, token: &str, path: &str, body: &Value) -> (u16, Value) {
        self.runtime.block_on(async {
            let answer =
                self.http.post(format!("{}/api/v1{path}", self.base)).bearer_auth(token).json(body).send().await;
            let answer = answer.expect("the core answers");
            (answer.status().as_u16(), answer.json().await.unwrap_or(Value::Null))
        })
    }

    fn get(&self, path: &str) -> Value {
        self.runtime.block_on(async {
            let answer = self.http.get(format!("{}/api/v1{path}", self.base)).bearer_auth(&self.caller).send().await;
            answer.expect("the core answers").json().await.expect("JSON")
        })
    }

    /// Publishes the demo host's version of `reference`, its contract as the host prints it.
    fn publish(&self, reference: &str) {
        let output = Command::new(demo_host()).args(["contract", reference]).output().expect("the host runs");
        assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
        let contract: Value = serde_json::from_slice(&output.stdout).expect("a contract");
        let (name, version) = reference.split_once('@').expect("name@version");
        let body = json!({"name": name, "version": version, "description": "demo", "sideEffects": "none",
                          "riskLevel": "low", "contract": contract});
        let (status, answer) = self.post(&self.admin, "/skills", &body);
        assert_eq!(status, 201, "{answer}");
    }

    fn invoke(&self, reference: &str, body: Value) -> String {
        let (status, answer) = self.post(&self.caller, &format!("/skills/{reference}:invoke"), &body);
        assert_eq!(status, 201, "{answer}");
        answer["id"].as_str().expect("an id").to_owned()
    }

    /// The call once it has left `pending` and `running`, or as it is after `seconds`.
    fn settled(&self, id: &str, seconds: u64) -> Value {
        let deadline = Instant::now() + Duration::from_secs(seconds);
        loop {
            let call = self.get(&format!("/skill-invocations/{id}"));
            if !matches!(call["status"].as_str(), Some("pending" | "running")) || Instant::now() > deadline {
                return call;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn execute(&self, grace: &str) -> Running {
        let mut command = Command::new(demo_host());
        command
            .args(["execute", "--core", &self.base, "--concurrency", "2", "--grace", grace])
            .env("SKILL_CORE_TOKEN", &self.executor)
            .env("SKILL_LOG", "info");
        Running::start(command, Output::Stderr)
    }
}

#[test]
fn calls_invoked_through_the_core_run_in_the_host() {
    let core = Core::start();
    for reference in ["echo@1", "whoami@1", "flaky@1", "crash@1", "slow@1", "refuse@1"] {
        core.publish(reference);
    }
    // whoami belongs to a package with settings: its calls receive the values set.
    let install = json!({"package": {"key": "demo", "version": "1"}, "installHash": "ab".repeat(32),
                         "objects": [{"kind": "Skill", "key": "whoami"}],
                         "settingsSchema": {"type": "object", "properties": {"greeting": {"type": "string"}}}});
    let (status, answer) = core.post(&core.admin, "/packages:apply", &install);
    assert_eq!(status, 200, "{answer}");
    let (status, answer) = core.post(&core.admin, "/packages/demo/settings", &json!({"values": {"greeting": "hello"}}));
    assert_eq!(status, 200, "{answer}");
    let mut executor = core.execute("10");
    executor.until(20, |line| line.contains("executing the local skills of this host"));

    let echo = core.settled(&core.invoke("echo@1", json!({"inputs": {"text": "héllo"}})), 20);
    assert_eq!(
        (echo["status"].clone(), echo["output"].clone()),
        (json!("succeeded"), json!({"text": "héllo"})),
        "{echo}"
    );
    assert_eq!(echo["cost"]["units"]["ops"], 1.0, "the skill's cost is the call's: {echo}");

    let id = core.invoke("whoami@1", json!({"inputs": {}, "idempotencyKey": "k-7"}));
    let whoami = core.settled(&id, 20);
    let seen = &whoami["output"];
    assert_eq!(
        (seen["invocation_id"].as_str(), seen["idempotency_key"].as_str(), seen["transport"].as_str()),
        (Some(id.as_str()), Some("k-7"), Some("local")),
        "{whoami}"
    );
    assert_eq!(seen["settings"], json!({"greeting": "hello"}), "the package's settings: {whoami}");

    // A refusal, a retryable failure with no attempt left, a crash: each a failed call with its code.
    let refused = core.settled(&core.invoke("refuse@1", json!({"inputs": {"order": "o-1"}})), 20);
    assert_eq!(
        (refused["status"].clone(), refused["error"]["code"].clone()),
        (json!("failed"), json!("order_unknown"))
    );
    assert_eq!(refused["error"]["details"]["order"], "o-1");
    let flaky = core.settled(&core.invoke("flaky@1", json!({"inputs": {}})), 20);
    assert_eq!(
        (flaky["error"]["code"].clone(), flaky["error"]["retryable"].clone(), flaky["attempt"].clone()),
        (json!("upstream_busy"), json!(true), json!(1))
    );
    let crash = core.settled(&core.invoke("crash@1", json!({"inputs": {"panic": true}})), 20);
    assert_eq!(crash["error"]["code"], "skill_error");
    assert!(
        !crash["error"]["message"].as_str().unwrap_or_default().contains("on purpose"),
        "a panic's text stays in the log"
    );

    // Cancelled while it runs: the host's report is refused, and it reports nothing else.
    let id = core.invoke("slow@1", json!({"inputs": {"ms": 1500}}));
    let deadline = Instant::now() + Duration::from_secs(20);
    while core.get(&format!("/skill-invocations/{id}"))["status"] != "running" && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    let (status, cancelled) = core.post(&core.caller, &format!("/skill-invocations/{id}:cancel"), &json!({}));
    assert_eq!((status, cancelled["error"]["details"]["wasRunning"].clone()), (200, json!(true)), "{cancelled}");
    executor.until(20, |line| line.contains("the lease was lost") && line.contains(&id));
    assert_eq!(core.get(&format!("/skill-invocations/{id}"))["status"], "cancelled");

    // SIGTERM while a call runs: it finishes within the grace period, then the host exits 0.
    let id = core.invoke("slow@1", json!({"inputs": {"ms": 1500}}));
    let deadline = Instant::now() + Duration::from_secs(20);
    while core.get(&format!("/skill-invocations/{id}"))["status"] != "running" && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    executor.signal(Signal::TERM);
    // Prompt: the running call's 1.5 s, not the 10 s a waiting claim would hold the other worker.
    let (code, lines) = executor.wait_within(6);
    assert_eq!(code, 0, "{lines:?}");
    assert!(lines.iter().any(|line| line.contains("executor stopped")), "{lines:?}");
    let settled = core.settled(&id, 5);
    assert_eq!(settled["status"], "succeeded", "{settled} after {lines:?}");
    // Its session is closed.
    let sessions = core.runtime.block_on(core.engine.store().events(0, None, 1000)).expect("events");
    assert!(sessions.iter().any(|event| event.kind == "executor.session_closed"), "the session was closed");
}

#[test]
fn execute_refuses_to_start_without_a_token_or_with_a_bad_one() {
    let missing = Command::new(demo_host()).args(["execute"]).env_remove("SKILL_CORE_TOKEN").output().expect("runs");
    assert_eq!(missing.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&missing.stderr).contains("SKILL_CORE_TOKEN"));
    let core = Core::start();
    // A token without skills.execute: the core refuses the executor, which stops with 1.
    let mut command = Command::new(demo_host());
    command.args(["execute", "--core", &core.base]).env("SKILL_CORE_TOKEN", &core.caller);
    let (code, lines) = Running::start(command, Output::Stderr).wait_within(20);
    assert_eq!(code, 1, "{lines:?}");
    assert!(lines.iter().any(|line| line.contains("permission_denied")), "{lines:?}");
}
