//! Calls through a real server, on SQLite and on PostgreSQL: the invoke check order with each
//! code and status, idempotency keys, executor admission, leases and fencing, completion with
//! the output checked, failures and retries, cancellation, sessions, reading and listing.

use skill_api::Code;
use std::process::Command;
use std::sync::Arc;

use chrono::{Duration, Utc};
use reqwest::StatusCode;
use serde_json::{Value, json};
use skill_engine::Engine;
use skill_fixtures::Scratch;

use crate::api::{executor_token, token};

/// A core on 127.0.0.1 over one backend, with an admin (`org.manage`), a caller
/// (`skills.invoke`) and an executor (`skills.execute`).
pub(crate) struct Core {
    pub(crate) base: String,
    pub(crate) engine: Engine,
    pub(crate) admin: String,
    pub(crate) caller: String,
    pub(crate) executor: String,
    pub(crate) http: reqwest::Client,
    /// The database (a SQLite folder or a PostgreSQL URL), for a second core over it.
    pub(crate) target: String,
    /// The core's clock: a test moves it forward (a week's wait in milliseconds).
    pub(crate) clock: Arc<skill_engine::MovedClock>,
    /// The SQLite database and the blobs; removed when dropped. A test block that names only some
    /// fields of the core (`core.engine`) takes only those: bind the whole core (`let core = core;`).
    _folder: Scratch,
}

#[derive(Debug, Clone, Copy)]
pub(crate) enum Backend {
    Sqlite,
    Postgres,
}

pub(crate) async fn core(backend: Backend, label: &str) -> Core {
    core_with(backend, label, None).await
}

/// [`core`] with `blobs` as the store of artifacts' content (a scratch folder when `None`).
pub(crate) async fn core_with(backend: Backend, label: &str, blobs: Option<Arc<dyn skill_store::BlobStore>>) -> Core {
    core_serving(backend, label, blobs, skill_server::console::Options::default()).await
}

/// [`core_with`] served with `options` (the console's, the MCP gateway's).
pub(crate) async fn core_serving(
    backend: Backend,
    label: &str,
    blobs: Option<Arc<dyn skill_store::BlobStore>>,
    options: skill_server::console::Options,
) -> Core {
    let folder = Scratch::new(&format!("skill-core-calls-{label}"));
    let target = match backend {
        Backend::Sqlite => folder.path().to_str().expect("utf-8").to_owned(),
        Backend::Postgres => postgres_database(label),
    };
    let store = skill_store::open(&target, &Default::default()).await.expect("store");
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("a port");
    let root = format!("http://{}", listener.local_addr().expect("address"));
    // New signing keys sign two seconds after they are published (an hour in service), so the
    // rotation test sees the hand-over.
    let clock = Arc::new(skill_engine::MovedClock::default());
    let engine = Engine::new(Arc::clone(&store))
        .with_clock(Arc::clone(&clock) as Arc<dyn skill_engine::Clock>)
        .with_issuer_and_lead(&root, std::time::Duration::from_secs(2))
        .with_blobs(blobs.unwrap_or_else(|| Arc::new(skill_store::FolderBlobs::new(folder.path().join("blobs")))));
    let base = format!("{root}/api/v1");
    tokio::spawn(skill_server::serve_with(
        engine.clone(),
        listener,
        Default::default(),
        options,
        skill_http::stop_signal(),
    ));
    let admin = token(&engine, "admin", &["org.manage"]).await;
    let caller = token(&engine, "caller", &["skills.invoke"]).await;
    let executor = executor_token(&engine, "executor", &["skills.execute"], test_allowance()).await;
    Core { base, engine, admin, caller, executor, http: reqwest::Client::new(), target, clock, _folder: folder }
}

/// What the tests' executor may run: the test skills' modules, and the origins and audiences
/// their endpoints name.
pub(crate) fn test_allowance() -> Value {
    json!({"protocols": ["local", "http", "mcp"], "local": ["claims", "claims_integration"],
           "httpOrigins": ["https://svc.example", "https://new.example", "https://skills.example"],
           "mcpOrigins": ["https://svc.example"], "audiences": ["svc-api", "claims-api"]})
}

/// A fresh database on the test command's PostgreSQL server.
pub(crate) fn postgres_database(label: &str) -> String {
    let admin = std::env::var("SKILL_TEST_POSTGRES_URL").expect(
        "SKILL_TEST_POSTGRES_URL names a PostgreSQL superuser URL; `cargo xtask test -p skill-core` starts a server and sets it",
    );
    let name = format!("skill_core_calls_{}_{}", label.replace('-', "_"), std::process::id());
    let created = Command::new("psql")
        .args([
            admin.as_str(),
            "-q",
            "-c",
            &format!("DROP DATABASE IF EXISTS {name}"),
            "-c",
            &format!("CREATE DATABASE {name}"),
        ])
        .output()
        .expect("psql runs");
    assert!(created.status.success(), "{}", String::from_utf8_lossy(&created.stderr));
    let (base, _) = admin.rsplit_once('/').expect("a URL with a database");
    format!("{base}/{name}")
}

pub(crate) struct Reply {
    pub(crate) status: StatusCode,
    pub(crate) body: Value,
}

impl Reply {
    fn code(&self) -> &str {
        self.body["error"]["code"].as_str().unwrap_or_default()
    }

    #[track_caller]
    pub(crate) fn refused(&self, status: u16, code: &str) -> &Self {
        assert_eq!((self.status.as_u16(), self.code()), (status, code), "{}", self.body);
        self
    }

    #[track_caller]
    pub(crate) fn ok(&self, status: u16) -> &Value {
        assert_eq!(self.status.as_u16(), status, "{}", self.body);
        &self.body
    }
}

impl Core {
    /// The folder of the SQLite database and of the blobs.
    pub(crate) fn folder(&self) -> &std::path::Path {
        self._folder.path()
    }

    pub(crate) async fn post(&self, token: &str, path: &str, body: &Value) -> Reply {
        let answer = self.http.post(format!("{}{path}", self.base)).bearer_auth(token).json(body).send().await;
        let answer = answer.expect("the core answers");
        let status = answer.status();
        let text = answer.text().await.expect("a body");
        Reply { status, body: serde_json::from_str(&text).unwrap_or(Value::Null) }
    }

    pub(crate) async fn get(&self, token: &str, path: &str) -> Reply {
        let answer = self.http.get(format!("{}{path}", self.base)).bearer_auth(token).send().await;
        let answer = answer.expect("the core answers");
        let status = answer.status();
        Reply { status, body: answer.json().await.unwrap_or(Value::Null) }
    }

    pub(crate) async fn publish(&self, body: Value) -> Value {
        self.post(&self.admin, "/skills", &body).await.ok(201).clone()
    }

    pub(crate) async fn invoke(&self, token: &str, reference: &str, body: Value) -> Reply {
        self.post(token, &format!("/skills/{reference}:invoke"), &body).await
    }

    pub(crate) async fn claim(&self, body: Value) -> Reply {
        self.post(&self.executor, "/skill-invocations:claim", &body).await
    }

    /// `path` read with `token` until `done` holds of it (30 s at most).
    pub(crate) async fn until(&self, token: &str, path: &str, done: impl Fn(&Value) -> bool) -> Value {
        for _ in 0..600 {
            let value = self.get(token, path).await.ok(200).clone();
            if done(&value) {
                return value;
            }
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
        panic!("{path} did not get there within 30 s");
    }

    /// The calls of `task`, oldest first, once at least `count` exist (the core's workers make
    /// some of them in the background).
    pub(crate) async fn calls_of(&self, task: &str, count: usize) -> Vec<Value> {
        let listed = self
            .until(&self.admin, "/skill-invocations?limit=200", |page| {
                page["items"]
                    .as_array()
                    .is_some_and(|items| items.iter().filter(|c| c["taskId"] == task).count() >= count)
            })
            .await;
        let mut calls: Vec<Value> =
            listed["items"].as_array().expect("items").iter().filter(|c| c["taskId"] == task).cloned().collect();
        calls.reverse();
        calls
    }

    /// Disables the version `reference` (at row version 1).
    pub(crate) async fn disable(&self, reference: &str) {
        let answer = self
            .http
            .patch(format!("{}/skills/{reference}", self.base))
            .bearer_auth(&self.admin)
            .header("If-Match", "\"skill-1\"")
            .json(&json!({"status": "disabled"}))
            .send()
            .await
            .expect("the core answers");
        assert_eq!(answer.status(), 200, "{reference} disabled");
    }

    pub(crate) async fn act(&self, token: &str, id: &str, verb: &str, body: Value) -> Reply {
        self.post(token, &format!("/skill-invocations/{id}:{verb}"), &body).await
    }
}

/// A `local` leaf: `entrypoint`, the given policy, retries and required permissions.
pub(crate) fn local(name: &str, side_effects: &str, retry: (u32, u32), permissions: &[&str]) -> Value {
    json!({"name": name, "version": "1", "description": "Does one thing.", "sideEffects": side_effects, "riskLevel": "low",
           "contract": {"inputs": {"type": "object", "properties": {"claim": {"type": "string", "maxLength": 10}},
                                   "required": ["claim"]},
                        "outputs": {"type": "object", "properties": {"label": {"type": "string"}}, "required": ["label"]},
                        "timeoutSeconds": 5, "idempotency": "natural",
                        "retryPolicy": {"maxAttempts": retry.0, "backoffSeconds": retry.1},
                        "requiredPermissions": permissions,
                        "implementation": {"protocol": "local", "entrypoint": format!("claims.skills:{}", name.replace('.', "_"))}}})
}

fn http_leaf(name: &str, endpoint: &str, audience: Option<&str>) -> Value {
    let mut implementation = json!({"protocol": "http", "endpoint": endpoint});
    if let Some(audience) = audience {
        implementation["auth"] = json!({"audience": audience, "scopes": []});
    }
    json!({"name": name, "version": "1", "description": "Remote.", "sideEffects": "none", "riskLevel": "low",
           "contract": {"inputs": {"type": "object"}, "outputs": {"type": "object"}, "timeoutSeconds": 5,
                        "implementation": implementation}})
}

const CLASSIFY: &str = "claims.skills:claim_classify";

pub(crate) async fn each_backend<F, Fut>(label: &str, test: F)
where
    F: Fn(Core) -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    let sqlite = core(Backend::Sqlite, label).await;
    let postgres = core(Backend::Postgres, label).await;
    tokio::join!(test(sqlite), test(postgres));
}

#[tokio::test]
async fn invoke_checks_in_the_reference_order() {
    each_backend("order", |core| async move {
        core.publish(local("claim.classify", "none", (1, 0), &[])).await;
        core.publish(local("claim.audit", "external_read", (1, 0), &["audit.read"])).await;
        core.publish(local("claim.send", "external_write", (1, 0), &[])).await;
        core.publish(json!({"name": "claims.desk", "version": "1", "includes": ["claim.classify@1"]})).await;
        core.publish(json!({"name": "claim.legacy", "version": "1", "protocol": "custom"})).await;
        let mut keyed = local("claim.keyed", "none", (1, 0), &[]);
        keyed["contract"]["idempotency"] = json!("required");
        core.publish(keyed).await;
        let ok = json!({"inputs": {"claim": "c-1"}});

        // 1. the permission, before anything about the skill is looked at
        core.invoke(&core.executor, "claim.nothing@1", ok.clone()).await.refused(403, "permission_denied");
        // 2. the version
        let missing = core.invoke(&core.caller, "claim.nothing@1", ok.clone()).await;
        assert_eq!(missing.refused(404, "not_found").body["error"]["details"]["skill"], "claim.nothing@1");
        // A near miss says what was probably meant.
        let typo = core.invoke(&core.caller, "claim.clasify@1", ok.clone()).await;
        let error = &typo.refused(404, "not_found").body["error"];
        assert_eq!(error["details"]["didYouMean"], json!(["claim.classify@1"]), "{error}");
        assert!(error["message"].as_str().is_some_and(|m| m.ends_with("did you mean claim.classify@1?")), "{error}");
        let agent = crate::api::token_of_kind(&core.engine, "typo-agent", "agent", &["skills.invoke"]).await;
        let quiet = core.invoke(&agent, "claim.clasify@1", ok.clone()).await;
        assert!(
            quiet.refused(404, "not_found").body["error"]["details"].get("didYouMean").is_none(),
            "an agent learns no names"
        );
        // 3. the key's shape
        for key in ["   ", &"k".repeat(201)] {
            core.invoke(&core.caller, "claim.classify@1", json!({"inputs": {"claim": "c"}, "idempotencyKey": key}))
                .await
                .refused(422, "invalid_idempotency_key");
        }
        // 5. invocable: a composite, a catalog row
        let composite = core.invoke(&core.caller, "claims.desk@1", ok.clone()).await;
        assert_eq!(composite.refused(409, "skill_not_invocable").body["error"]["details"]["reason"], "composite");
        let legacy = core.invoke(&core.caller, "claim.legacy@1", ok.clone()).await;
        assert_eq!(legacy.refused(409, "skill_not_invocable").body["error"]["details"]["reason"], "no_contract");
        // 6. a key the contract requires
        core.invoke(&core.caller, "claim.keyed@1", ok.clone()).await.refused(400, "idempotency_key_required");
        // 7. the inputs against the contract, every error with its path
        let bad = core
            .invoke(&core.caller, "claim.classify@1", json!({"inputs": {"claim": "far too long a claim id"}}))
            .await;
        let errors = bad.refused(400, "invalid_skill_inputs").body["error"]["details"]["errors"].clone();
        assert_eq!(errors[0]["path"], "/claim", "{errors}");
        let big = json!({"inputs": {"claim": "c", "pad": "x".repeat(300 * 1024)}});
        let big = core.invoke(&core.caller, "claim.classify@1", big).await;
        // Within the body limit, over the 256 KiB of inputs.
        big.refused(400, "invalid_skill_inputs");
        // 8–9. a run or a task that is not there (the rest of 8–10: tests/it/work.rs)
        for field in ["taskId", "runId"] {
            let named = json!({"inputs": {"claim": "c"}, field: "t-1"});
            let answer = core.invoke(&core.caller, "claim.classify@1", named).await;
            assert_eq!(answer.refused(404, "not_found").body["error"]["details"][field], "t-1");
        }
        // 11. the contract's permissions
        let denied = core.invoke(&core.caller, "claim.audit@1", ok.clone()).await;
        let details = &denied.refused(403, "skill_permission_denied").body["error"]["details"];
        assert_eq!(
            (details["missing"].clone(), details["resource"].clone()),
            (json!(["audit.read"]), json!("organization"))
        );
        // 13. an external write has no basis yet
        core.invoke(&core.caller, "claim.send@1", ok.clone()).await.refused(403, "skill_side_effect_not_authorized");
        // Nothing refused was written.
        assert_eq!(core.get(&core.admin, "/skill-invocations").await.ok(200)["items"], json!([]));
        assert_eq!(core.get(&core.executor, "/skill-invocations").await.ok(200)["items"], json!([]));
        // 14–15. the call, pending, with its event
        let created = core.invoke(&core.caller, "claim.classify@1", ok.clone()).await;
        let call = created.ok(201);
        assert_eq!(
            (call["status"].clone(), call["attempt"].clone(), call["maxAttempts"].clone()),
            (json!("pending"), json!(0), json!(1))
        );
        assert_eq!(call["requestedBy"]["kind"], "principal");
        assert_eq!(call["waiting"]["implementation"], format!("local:{CLASSIFY}"));
        let subject = format!("skill_invocation:{}", call["id"].as_str().expect("an id"));
        let events = core.engine.store().events(0, Some(&subject), 10).await.expect("events");
        assert_eq!(events.iter().map(|e| e.kind.as_str()).collect::<Vec<_>>(), ["skill.invocation_requested"]);
    })
    .await;
}

#[tokio::test]
async fn a_key_names_one_call_even_after_the_version_is_disabled() {
    each_backend("keys", |core| async move {
        let published = core.publish(local("claim.classify", "none", (1, 0), &[])).await;
        let body = json!({"inputs": {"claim": "c-1"}, "idempotencyKey": "  k-1 "});
        let first = core.invoke(&core.caller, "claim.classify@1", body.clone()).await;
        let id = first.ok(201)["id"].clone();
        assert_eq!(first.body["idempotencyKey"], "k-1", "trimmed");
        let again = core
            .invoke(&core.caller, "claim.classify@1", json!({"inputs": {"claim": "c-1"}, "idempotencyKey": "k-1"}))
            .await;
        assert_eq!(again.ok(200)["id"], id);
        // Other inputs, or another caller: refused; only the owner learns which call it is.
        let other = core
            .invoke(&core.caller, "claim.classify@1", json!({"inputs": {"claim": "c-2"}, "idempotencyKey": "k-1"}))
            .await;
        assert_eq!(other.refused(409, "idempotency_key_reuse").body["error"]["details"]["invocationId"], id);
        let stranger = token(&core.engine, "stranger", &["skills.invoke"]).await;
        let foreign = core.invoke(&stranger, "claim.classify@1", body.clone()).await;
        assert!(foreign.refused(409, "idempotency_key_reuse").body["error"]["details"].get("invocationId").is_none());
        // Disabled since: the accepted call still answers; a new one is refused.
        let path = format!("/skills/{}", published["id"].as_str().expect("id"));
        let disabled = core
            .http
            .patch(format!("{}{path}", core.base))
            .bearer_auth(&core.admin)
            .header("if-match", "\"skill-1\"")
            .json(&json!({"status": "disabled"}))
            .send()
            .await
            .expect("patched");
        assert_eq!(disabled.status(), StatusCode::OK);
        assert_eq!(core.invoke(&core.caller, "claim.classify@1", body).await.ok(200)["id"], id);
        let fresh = core.invoke(&core.caller, "claim.classify@1", json!({"inputs": {"claim": "c"}})).await;
        assert_eq!(fresh.refused(409, "skill_not_invocable").body["error"]["details"]["reason"], "disabled");

        // Ten first calls with one key at once: one call, one 201.
        core.publish(local("claim.route", "none", (1, 0), &[])).await;
        let body = json!({"inputs": {"claim": "c-9"}, "idempotencyKey": "race"});
        let racing = (0..10).map(|_| core.invoke(&core.caller, "claim.route@1", body.clone()));
        let answers = futures::future::join_all(racing).await;
        let created = answers.iter().filter(|a| a.status == StatusCode::CREATED).count();
        let ids: std::collections::BTreeSet<String> =
            answers.iter().map(|a| a.body["id"].as_str().unwrap_or("?").to_owned()).collect();
        assert_eq!((created, ids.len()), (1, 1), "{:?}", answers.iter().map(|a| &a.body).collect::<Vec<_>>());
    })
    .await;
}

#[tokio::test]
async fn executors_take_only_what_they_declared() {
    each_backend("admission", |core| async move {
        core.publish(local("claim.classify", "none", (1, 0), &[])).await;
        core.publish(http_leaf("svc.plain", "https://svc.example/run", None)).await;
        core.publish(http_leaf("svc.aud", "https://svc.example/aud", Some("svc-api"))).await;
        // An endpoint is kept in one form, the one executors read it as.
        for (endpoint, canonical) in [
            ("https://svc.example:443/run", "https://svc.example/run"),
            ("http://2130706433:80/x", "http://127.0.0.1/x"),
        ] {
            let refused = core.post(&core.admin, "/skills", &http_leaf("svc.port", endpoint, None)).await;
            let details = &refused.refused(422, "invalid_skill_contract").body["error"]["details"];
            assert_eq!(
                (details["field"].clone(), details["canonical"].clone()),
                (json!("implementation.endpoint"), json!(canonical))
            );
        }
        for reference in ["claim.classify@1", "svc.plain@1", "svc.aud@1"] {
            let inputs = if reference.starts_with("claim") { json!({"claim": "c"}) } else { json!({}) };
            core.invoke(&core.caller, reference, json!({"inputs": inputs})).await.ok(201);
        }
        // Not an executor; a protocol nobody runs; an origin that is not one.
        core.post(&core.caller, "/skill-invocations:claim", &json!({"protocols": ["local"]}))
            .await
            .refused(403, "permission_denied");
        let unknown = core.claim(json!({"protocols": ["local", "ftp"]})).await;
        assert_eq!(unknown.refused(422, "invalid_protocol").body["error"]["details"]["unknown"], json!(["ftp"]));
        let path = core.claim(json!({"protocols": ["http"], "httpOrigins": ["https://svc.example/run"]})).await;
        assert_eq!(path.refused(422, "invalid_executor_endpoint").body["error"]["details"]["field"], "httpOrigins");
        // A remote protocol without origins, a local one without entrypoints: nothing.
        assert_eq!(core.claim(json!({"protocols": ["http", "local"]})).await.status, StatusCode::NO_CONTENT);
        // An origin admits the endpoints under it, and an audience must be declared.
        let plain = core.claim(json!({"protocols": ["http"], "httpOrigins": ["HTTPS://SVC.EXAMPLE/"]})).await;
        assert_eq!(plain.ok(200)["skill"]["name"], "svc.plain");
        assert!(plain.body["skill"].get("config").is_none(), "never the catalog config");
        assert_eq!(
            core.claim(json!({"protocols": ["http"], "httpOrigins": ["https://svc.example"]})).await.status,
            StatusCode::NO_CONTENT
        );
        let aud = core
            .claim(json!({"protocols": ["http"], "httpOrigins": ["https://svc.example"], "audiences": ["svc-api"]}))
            .await;
        assert_eq!(aud.ok(200)["skill"]["name"], "svc.aud");
        // Beyond what the operator allowed this executor: refused, naming what is allowed.
        let beyond = core.claim(json!({"protocols": ["http"], "httpOrigins": ["https://other.example"]})).await;
        let details = &beyond.refused(403, "executor_not_allowed").body["error"]["details"];
        assert_eq!(
            (details["field"].clone(), details["value"].clone()),
            (json!("httpOrigins"), json!("https://other.example"))
        );
        let beyond = core.claim(json!({"protocols": ["local"], "localEntrypoints": ["elsewhere:run"]})).await;
        beyond.refused(403, "executor_not_allowed");
        let local = core.claim(json!({"protocols": ["local"], "localEntrypoints": [CLASSIFY]})).await;
        let claimed = local.ok(200);
        assert_eq!(claimed["skill"]["contract"]["implementation"]["entrypoint"], CLASSIFY);
        let invocation = &claimed["invocation"];
        assert_eq!(
            (invocation["status"].clone(), invocation["attempt"].clone(), invocation["fencingToken"].clone()),
            (json!("running"), json!(1), json!(1))
        );
        // The lease: timeout (5 s) + 30 s.
        let lease = chrono::DateTime::parse_from_rfc3339(invocation["leaseExpiresAt"].as_str().expect("a lease"))
            .expect("a time");
        let left = lease.to_utc() - Utc::now();
        assert!(left > Duration::seconds(30) && left <= Duration::seconds(35), "{left}");
    })
    .await;
}

#[tokio::test]
async fn leases_fence_out_the_executor_that_lost_them() {
    each_backend("leases", |core| async move {
        core.publish(local("claim.classify", "none", (3, 0), &[])).await;
        let call =
            core.invoke(&core.caller, "claim.classify@1", json!({"inputs": {"claim": "c"}})).await.ok(201).clone();
        let id = call["id"].as_str().expect("id").to_owned();
        let take = json!({"protocols": ["local"], "localEntrypoints": [CLASSIFY]});
        let first =
            core.claim(json!({"protocols": ["local"], "localEntrypoints": [CLASSIFY], "leaseSeconds": 10})).await;
        let first = first.ok(200).clone();
        assert_eq!(first["invocation"]["fencingToken"], 1);
        let lease = |call: &Value| {
            chrono::DateTime::parse_from_rfc3339(call["leaseExpiresAt"].as_str().expect("a lease"))
                .expect("a time")
                .to_utc()
        };
        let taken = lease(&first["invocation"]);
        // A heartbeat asking for less never shortens the lease.
        let kept = core.act(&core.executor, &id, "heartbeat", json!({"fencingToken": 1, "leaseSeconds": 1})).await;
        assert!(lease(kept.ok(200)) >= taken);

        // The lease runs out; the next claim finds it expired (the attempt is spent) and takes
        // the call again under a new fencing token.
        let wait = (taken - Utc::now()).to_std().unwrap_or_default() + std::time::Duration::from_millis(300);
        tokio::time::sleep(wait).await;
        let second = core.claim(take.clone()).await.ok(200).clone();
        assert_eq!(
            (second["invocation"]["fencingToken"].clone(), second["invocation"]["attempt"].clone()),
            (json!(2), json!(2))
        );
        assert_eq!(second["invocation"]["error"]["code"], "lease_expired", "the last failure stays on the row");
        // Renewed late or long, a lease never passes the attempt's cap: start + 2 × 5 + 30 s.
        let long = core.act(&core.executor, &id, "heartbeat", json!({"fencingToken": 2, "leaseSeconds": 3600})).await;
        assert!(lease(long.ok(200)) - Utc::now() <= Duration::seconds(40));
        // The first holder is fenced out of every report.
        for (verb, body) in [
            ("heartbeat", json!({"fencingToken": 1})),
            ("complete", json!({"fencingToken": 1, "output": {"label": "old"}})),
            ("fail", json!({"fencingToken": 1, "error": {"code": "boom"}})),
        ] {
            let stale = core.act(&core.executor, &id, verb, body).await;
            let details = &stale.refused(409, "stale_invocation_lease").body["error"]["details"];
            assert_eq!(
                (details["fencingToken"].clone(), details["currentFencingToken"].clone()),
                (json!(1), json!(2)),
                "{verb}"
            );
        }
        // Another executor holding skills.execute is not the holder either: to it the call does
        // not exist.
        let other = executor_token(&core.engine, "other-executor", &["skills.execute"], test_allowance()).await;
        core.act(&other, &id, "complete", json!({"fencingToken": 2, "output": {"label": "x"}}))
            .await
            .refused(404, "not_found");
        let done = core
            .act(
                &core.executor,
                &id,
                "complete",
                json!({"fencingToken": 2, "output": {"label": "ok"}, "cost": {"usd": 0.01}}),
            )
            .await;
        let done = done.ok(200);
        assert_eq!(
            (done["status"].clone(), done["output"].clone(), done["cost"].clone()),
            (json!("succeeded"), json!({"label": "ok"}), json!({"usd": 0.01}))
        );
        assert!(done["leaseExpiresAt"].is_null() && done["finishedAt"].is_string());
        let subject = format!("skill_invocation:{id}");
        let kinds: Vec<String> = core
            .engine
            .store()
            .events(0, Some(&subject), 20)
            .await
            .expect("events")
            .into_iter()
            .map(|e| e.kind)
            .collect();
        assert_eq!(
            kinds,
            [
                "skill.invocation_requested",
                "skill.invocation_claimed",
                "skill.invocation_retry_scheduled",
                "skill.invocation_claimed",
                "skill.invocation_succeeded"
            ]
        );
        // A finished call takes no more reports.
        core.act(&core.executor, &id, "complete", json!({"fencingToken": 2, "output": {"label": "again"}}))
            .await
            .refused(409, "stale_invocation_lease");
    })
    .await;
}

#[tokio::test]
async fn outputs_are_checked_and_failures_retried_until_attempts_run_out() {
    each_backend("outcomes", |core| async move {
        core.publish(local("claim.classify", "none", (2, 30), &[])).await;
        let take = json!({"protocols": ["local"], "localEntrypoints": [CLASSIFY]});
        // An output that breaks the contract: failed, never retried, the output and the cost kept.
        let id = core.invoke(&core.caller, "claim.classify@1", json!({"inputs": {"claim": "a"}})).await.ok(201)["id"]
            .as_str()
            .expect("id")
            .to_owned();
        core.claim(take.clone()).await.ok(200);
        let bad = core
            .act(
                &core.executor,
                &id,
                "complete",
                json!({"fencingToken": 1, "output": {"labels": 3}, "cost": {"tokens": 7}}),
            )
            .await;
        let bad = bad.ok(200);
        assert_eq!(
            (bad["status"].clone(), bad["error"]["code"].clone(), bad["error"]["retryable"].clone()),
            (json!("failed"), json!("output_contract_violation"), json!(false))
        );
        assert_eq!(bad["error"]["details"]["rejectedOutput"], json!({"labels": 3}));
        assert_eq!(bad["cost"], json!({"tokens": 7}));
        assert!(bad["output"].is_null());
        // A large rejected output is kept only by its size.
        let id = core.invoke(&core.caller, "claim.classify@1", json!({"inputs": {"claim": "b"}})).await.ok(201)["id"]
            .as_str()
            .expect("id")
            .to_owned();
        core.claim(take.clone()).await.ok(200);
        let huge = json!({"fencingToken": 1, "output": {"blob": "x".repeat(70 * 1024)}});
        let huge = core.act(&core.executor, &id, "complete", huge).await;
        let details = &huge.ok(200)["error"]["details"];
        assert_eq!(details["rejectedOutputTruncated"], true);
        assert!(details["rejectedOutputBytes"].as_u64().is_some_and(|n| n > 70 * 1024));

        // A retryable failure: back to the queue after the 30-s backoff; then attempts run out.
        let id = core.invoke(&core.caller, "claim.classify@1", json!({"inputs": {"claim": "c"}})).await.ok(201)["id"]
            .as_str()
            .expect("id")
            .to_owned();
        core.claim(take.clone()).await.ok(200);
        core.act(&core.executor, &id, "fail", json!({"fencingToken": 1, "error": {"code": "Bad Code"}}))
            .await
            .refused(400, "invalid_request");
        let retry = core
            .act(
                &core.executor,
                &id,
                "fail",
                json!({"fencingToken": 1, "error": {"code": "upstream_down", "message": "503", "retryable": true}}),
            )
            .await;
        let retry = retry.ok(200).clone();
        assert_eq!(
            (retry["status"].clone(), retry["error"]["code"].clone(), retry["waiting"]["reason"].clone()),
            (json!("pending"), json!("upstream_down"), json!("backoff"))
        );
        let available = chrono::DateTime::parse_from_rfc3339(retry["availableAt"].as_str().expect("a time"))
            .expect("a time")
            .to_utc();
        assert!(available - Utc::now() > Duration::seconds(25), "{available}");
        assert_eq!(core.claim(take.clone()).await.status, StatusCode::NO_CONTENT, "not before the backoff");
        // (The backoff passes: the queue is read as the clock will be.)
        let later =
            skill_store::records::Admission { local_entrypoints: vec![CLASSIFY.to_owned()], ..Default::default() };
        let ready = core.engine.store().claimable(&later, Utc::now() + Duration::seconds(31), 20).await.expect("queue");
        assert_eq!(ready.iter().map(|c| c.id.as_str()).collect::<Vec<_>>(), [id.as_str()]);
    })
    .await;
}

#[tokio::test]
async fn a_cancelled_call_fences_its_executor_out() {
    each_backend("cancel", |core| async move {
        core.publish(local("claim.classify", "none", (1, 0), &[])).await;
        let take = json!({"protocols": ["local"], "localEntrypoints": [CLASSIFY]});
        let id = core.invoke(&core.caller, "claim.classify@1", json!({"inputs": {"claim": "a"}})).await.ok(201)["id"]
            .as_str()
            .expect("id")
            .to_owned();
        core.claim(take.clone()).await.ok(200);
        // Another caller cannot see it, so cannot cancel it.
        let stranger = token(&core.engine, "stranger", &["skills.invoke"]).await;
        core.act(&stranger, &id, "cancel", json!({})).await.refused(404, "not_found");
        core.get(&stranger, &format!("/skill-invocations/{id}")).await.refused(404, "not_found");
        core.act(&core.caller, &id, "cancel", json!({"reason": ""})).await.refused(400, "invalid_request");
        let cancelled = core.act(&core.caller, &id, "cancel", json!({"reason": "the customer withdrew"})).await;
        let cancelled = cancelled.ok(200).clone();
        assert_eq!(cancelled["status"], "cancelled");
        let details = &cancelled["error"]["details"];
        assert_eq!((details["wasRunning"].clone(), details["initiator"].clone()), (json!(true), json!("principal")));
        assert_eq!(cancelled["error"]["message"], "the customer withdrew");
        // The executor may have acted, but its report is refused.
        core.act(&core.executor, &id, "complete", json!({"fencingToken": 1, "output": {"label": "x"}}))
            .await
            .refused(409, "stale_invocation_lease");
        // Cancelling again changes nothing; a finished call cannot be cancelled.
        assert_eq!(core.act(&core.caller, &id, "cancel", json!({})).await.ok(200)["updatedAt"], cancelled["updatedAt"]);
        let done = core.invoke(&core.caller, "claim.classify@1", json!({"inputs": {"claim": "b"}})).await.ok(201)["id"]
            .as_str()
            .expect("id")
            .to_owned();
        core.claim(take.clone()).await.ok(200);
        core.act(&core.executor, &done, "complete", json!({"fencingToken": 1, "output": {"label": "x"}})).await.ok(200);
        let terminal = core.act(&core.admin, &done, "cancel", json!({})).await;
        assert_eq!(terminal.refused(409, "invocation_terminal").body["error"]["details"]["status"], "succeeded");
        // A pending call is cancelled without an executor ever seeing it.
        let queued =
            core.invoke(&core.caller, "claim.classify@1", json!({"inputs": {"claim": "c"}})).await.ok(201)["id"]
                .as_str()
                .expect("id")
                .to_owned();
        let gone = core.act(&core.admin, &queued, "cancel", json!({})).await;
        assert_eq!(gone.ok(200)["error"]["details"]["wasRunning"], false);
        assert_eq!(core.claim(take).await.status, StatusCode::NO_CONTENT);
    })
    .await;
}

#[tokio::test]
async fn a_lease_taken_with_a_session_ends_with_it() {
    each_backend("sessions", |core| async move {
        core.publish(local("claim.classify", "none", (2, 0), &[])).await;
        let session = core.post(&core.executor, "/executor-sessions", &json!({"capabilities": ["skills.protocol.local"], "ttlSeconds": 30})).await;
        let session = session.ok(201).clone();
        let session_id = session["id"].as_str().expect("id").to_owned();
        assert_eq!(session["status"], "active");
        core.post(&core.executor, "/executor-sessions", &json!({"ttlSeconds": 5})).await.refused(400, "invalid_request");
        let other = executor_token(&core.engine, "other-executor", &["skills.execute"], test_allowance()).await;
        core.post(&other, &format!("/executor-sessions/{session_id}:heartbeat"), &json!({})).await.refused(403, "session_owner_mismatch");
        core.post(&other, "/skill-invocations:claim", &json!({"protocols": ["local"], "localEntrypoints": [CLASSIFY], "sessionId": session_id})).await.refused(403, "session_owner_mismatch");
        core.post(&core.executor, "/executor-sessions/nope:heartbeat", &json!({})).await.refused(404, "not_found");

        let id = core.invoke(&core.caller, "claim.classify@1", json!({"inputs": {"claim": "a"}})).await.ok(201)["id"].as_str().expect("id").to_owned();
        // Nobody has claimed with this entrypoint: the call says it waits for an executor.
        let waiting = core.get(&core.caller, &format!("/skill-invocations/{id}")).await.ok(200)["waiting"].clone();
        assert_eq!((waiting["reason"].clone(), waiting["implementation"].clone()), (json!("no_executor"), json!(format!("local:{CLASSIFY}"))), "{waiting}");
        let other_call = core.invoke(&core.caller, "claim.classify@1", json!({"inputs": {"claim": "b"}})).await.ok(201)["id"].as_str().expect("id").to_owned();
        let claimed = core.claim(json!({"protocols": ["local"], "localEntrypoints": [CLASSIFY], "sessionId": session_id})).await;
        assert_eq!(claimed.ok(200)["invocation"]["executorSessionId"], session_id.as_str());
        // Now an executor's session covers it: the other call is merely queued.
        let queued = core.get(&core.caller, &format!("/skill-invocations/{other_call}")).await.ok(200)["waiting"]["reason"].clone();
        assert_eq!(queued, "queued");
        let listed = core.get(&core.caller, "/skill-invocations?status=pending").await.ok(200)["items"][0]["waiting"]["reason"].clone();
        assert_eq!(listed, "queued");
        // A report must name the lease's session.
        core.act(&core.executor, &id, "heartbeat", json!({"fencingToken": 1})).await.refused(409, "stale_invocation_lease");
        core.act(&core.executor, &id, "heartbeat", json!({"fencingToken": 1, "sessionId": session_id})).await.ok(200);
        let kept = core.post(&core.executor, &format!("/executor-sessions/{session_id}:heartbeat"), &json!({"ttlSeconds": 120})).await;
        assert_eq!(kept.ok(200)["status"], "active");

        // Closing the session puts its call back in the queue, in the same transaction.
        let closed = core.post(&core.executor, &format!("/executor-sessions/{session_id}:close"), &json!({})).await;
        assert_eq!(closed.ok(200)["status"], "closed");
        let call = core.get(&core.caller, &format!("/skill-invocations/{id}")).await.ok(200).clone();
        assert_eq!((call["status"].clone(), call["error"]["code"].clone()), (json!("pending"), json!("lease_expired")));
        core.act(&core.executor, &id, "complete", json!({"fencingToken": 1, "output": {"label": "x"}, "sessionId": session_id})).await.refused(409, "stale_invocation_lease");
        core.post(&core.executor, &format!("/executor-sessions/{session_id}:heartbeat"), &json!({})).await.refused(409, "session_not_active");
        core.claim(json!({"protocols": ["local"], "localEntrypoints": [CLASSIFY], "sessionId": session_id})).await.refused(409, "session_not_active");
        assert_eq!(core.post(&core.executor, &format!("/executor-sessions/{session_id}:close"), &json!({})).await.ok(200)["status"], "closed", "closing twice changes nothing");
        // Without a session the calls are taken again (the first on its attempt 2).
        let mut taken = Vec::new();
        for _ in 0..2 {
            let call = core.claim(json!({"protocols": ["local"], "localEntrypoints": [CLASSIFY]})).await.ok(200)["invocation"].clone();
            taken.push((call["id"].as_str().expect("id").to_owned(), call["attempt"].as_i64().expect("attempt")));
        }
        taken.sort();
        let mut expected = vec![(id.clone(), 2), (other_call.clone(), 1)];
        expected.sort();
        assert_eq!(taken, expected);
    })
    .await;
}

#[tokio::test]
async fn callers_list_their_own_calls_and_executors_all() {
    each_backend("listing", |core| async move {
        core.publish(local("claim.classify", "none", (1, 0), &[])).await;
        core.publish(local("claim.route", "none", (1, 0), &[])).await;
        let stranger = token(&core.engine, "stranger", &["skills.invoke"]).await;
        let mut mine = Vec::new();
        for n in 0..5 {
            let reference = if n % 2 == 0 { "claim.classify@1" } else { "claim.route@1" };
            let body = json!({"inputs": {"claim": format!("c-{n}")}});
            mine.push(core.invoke(&core.caller, reference, body).await.ok(201)["id"].as_str().expect("id").to_owned());
        }
        core.invoke(&stranger, "claim.classify@1", json!({"inputs": {"claim": "s"}})).await.ok(201);
        // Newest first, paged by cursor; a caller sees only its own.
        let first = core.get(&core.caller, "/skill-invocations?limit=2").await.ok(200).clone();
        let ids = |page: &Value| {
            page["items"]
                .as_array()
                .expect("items")
                .iter()
                .map(|i| i["id"].as_str().expect("id").to_owned())
                .collect::<Vec<_>>()
        };
        assert_eq!(ids(&first), [mine[4].clone(), mine[3].clone()]);
        let cursor = first["nextCursor"].as_str().expect("a cursor");
        let second =
            core.get(&core.caller, &format!("/skill-invocations?limit=2&cursor={cursor}")).await.ok(200).clone();
        assert_eq!(ids(&second), [mine[2].clone(), mine[1].clone()]);
        let third = core
            .get(
                &core.caller,
                &format!("/skill-invocations?limit=2&cursor={}", second["nextCursor"].as_str().expect("cursor")),
            )
            .await
            .ok(200)
            .clone();
        assert_eq!((ids(&third), third["nextCursor"].clone()), (vec![mine[0].clone()], Value::Null));
        // Filters: the version, the status, the caller (others' only with org.read).
        let routes = core.get(&core.caller, "/skill-invocations?skill=claim.route@1").await.ok(200).clone();
        assert_eq!(ids(&routes), [mine[3].clone(), mine[1].clone()]);
        let count = |token: &str, query: String| {
            let (core, token) = (&core, token.to_owned());
            async move {
                core.get(&token, &format!("/skill-invocations?{query}")).await.ok(200)["items"]
                    .as_array()
                    .map_or(0, Vec::len)
            }
        };
        assert_eq!(count(&core.admin, "status=pending".into()).await, 6);
        // An executor reads only the calls it holds or held: none of these, until it takes one.
        assert_eq!(count(&core.executor, "status=pending".into()).await, 0);
        core.get(&core.executor, &format!("/skill-invocations/{}", mine[0])).await.refused(404, "not_found");
        let taken =
            core.claim(json!({"protocols": ["local"], "localEntrypoints": ["claims.skills:claim_route"]})).await;
        let taken = taken.ok(200)["invocation"]["id"].as_str().expect("an id").to_owned();
        assert_eq!(count(&core.executor, String::new()).await, 1);
        core.get(&core.executor, &format!("/skill-invocations/{taken}")).await.ok(200);
        let stranger_id = core.engine.authenticate(&stranger).await.expect("stranger").id().to_owned();
        core.get(&core.caller, &format!("/skill-invocations?caller={stranger_id}"))
            .await
            .refused(403, "permission_denied");
        core.get(&core.executor, &format!("/skill-invocations?caller={stranger_id}"))
            .await
            .refused(403, "permission_denied");
        assert_eq!(count(&core.admin, format!("caller={stranger_id}")).await, 1);
        let future = (Utc::now() + Duration::hours(1)).to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
        assert_eq!(count(&core.admin, format!("since={future}")).await, 0);
        core.get(&core.caller, "/skill-invocations?status=lost").await.refused(422, "invalid_status");
        core.get(&core.caller, "/skill-invocations?since=yesterday").await.refused(400, "invalid_request");
        core.get(&core.caller, "/skill-invocations?cursor=garbage").await.refused(400, "invalid_request");
        core.get(&core.caller, "/skill-invocations?colour=red").await.refused(400, "invalid_request");
    })
    .await;
}

/// An executor that dies holding the only attempt: the core's sweep fails the call when the
/// lease ends, though nobody claims again.
#[tokio::test]
async fn the_sweep_ends_a_dead_executors_lease_without_a_claim() {
    each_backend("sweep", |core| async move {
        core.publish(local("claim.classify", "none", (1, 0), &[])).await;
        let id = core.invoke(&core.caller, "claim.classify@1", json!({"inputs": {"claim": "a"}})).await.ok(201)["id"]
            .as_str()
            .expect("id")
            .to_owned();
        core.claim(json!({"protocols": ["local"], "localEntrypoints": [CLASSIFY], "leaseSeconds": 10})).await.ok(200);
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        let call = loop {
            let call = core.get(&core.caller, &format!("/skill-invocations/{id}")).await.ok(200).clone();
            if call["status"] != "running" || std::time::Instant::now() > deadline {
                break call;
            }
            tokio::time::sleep(std::time::Duration::from_millis(250)).await;
        };
        assert_eq!(
            (call["status"].clone(), call["error"]["code"].clone()),
            (json!("failed"), json!("lease_expired")),
            "{call}"
        );
        let subject = format!("skill_invocation:{id}");
        let kinds: Vec<String> = core
            .engine
            .store()
            .events(0, Some(&subject), 20)
            .await
            .expect("events")
            .into_iter()
            .map(|e| e.kind)
            .collect();
        assert_eq!(kinds.last().map(String::as_str), Some("skill.invocation_failed"));
    })
    .await;
}

/// The `Idempotency-Key` header: a repeat gets the first answer (marked replayed) and acts once;
/// the key with another body or principal is refused; a refused credential takes no key.
#[tokio::test]
async fn a_repeated_idempotency_key_replays_the_first_answer() {
    each_backend("header-keys", |core| async move {
        let keyed = |token: &str, path: &str, key: &str, body: Value| {
            let request = core
                .http
                .post(format!("{}{path}", core.base))
                .bearer_auth(token)
                .header("idempotency-key", key)
                .json(&body);
            async move {
                let answer = request.send().await.expect("the core answers");
                let replayed = answer.headers().get("idempotency-replayed").is_some();
                let etag = answer.headers().get("etag").map(|v| v.to_str().unwrap_or_default().to_owned());
                (answer.status().as_u16(), replayed, etag, answer.json::<Value>().await.unwrap_or(Value::Null))
            }
        };
        let skill = local("claim.classify", "none", (1, 0), &[]);
        let first = keyed(&core.admin, "/skills", "pub-1", skill.clone()).await;
        assert_eq!((first.0, first.1), (201, false), "{}", first.3);
        let again = keyed(&core.admin, "/skills", "pub-1", skill.clone()).await;
        assert_eq!(
            (again.0, again.1, again.2.clone(), again.3["id"].clone()),
            (201, true, first.2.clone(), first.3["id"].clone())
        );
        let registered = core.engine.store().events(0, None, 100).await.expect("events");
        assert_eq!(registered.iter().filter(|e| e.kind == "skill.registered").count(), 1, "acted once");
        // Another body, another principal: refused; a body-free GET ignores the header.
        let other = keyed(&core.admin, "/skills", "pub-1", local("claim.route", "none", (1, 0), &[])).await;
        assert_eq!((other.0, other.3["error"]["code"].as_str()), (409, Some("idempotency_key_reused")));
        let stranger = token(&core.engine, "other-admin", &["org.manage"]).await;
        let foreign = keyed(&stranger, "/skills", "pub-1", skill.clone()).await;
        assert_eq!((foreign.0, foreign.3["error"]["code"].as_str()), (409, Some("idempotency_key_reused")));
        let bad = keyed(&core.admin, "/skills", &"k".repeat(201), skill.clone()).await;
        assert_eq!((bad.0, bad.3["error"]["details"]["field"].as_str()), (400, Some("Idempotency-Key")));
        // A refused credential takes no key: the same key then acts for the right one.
        let unauthenticated =
            keyed("skp_nope", "/skills/claim.classify@1:invoke", "inv-1", json!({"inputs": {"claim": "c"}})).await;
        assert_eq!(unauthenticated.0, 401);
        let invoked =
            keyed(&core.caller, "/skills/claim.classify@1:invoke", "inv-1", json!({"inputs": {"claim": "c"}})).await;
        assert_eq!((invoked.0, invoked.1), (201, false), "{}", invoked.3);
        let replayed =
            keyed(&core.caller, "/skills/claim.classify@1:invoke", "inv-1", json!({"inputs": {"claim": "c"}})).await;
        assert_eq!((replayed.1, replayed.3["id"].clone()), (true, invoked.3["id"].clone()));

        // A claim repeated after a lost answer gets the same lease, not a second call; an empty
        // answer (204) is kept too.
        let take = json!({"protocols": ["local"], "localEntrypoints": [CLASSIFY]});
        let claimed = keyed(&core.executor, "/skill-invocations:claim", "claim-1", take.clone()).await;
        let again = keyed(&core.executor, "/skill-invocations:claim", "claim-1", take.clone()).await;
        assert_eq!(
            (claimed.0, again.0, again.1),
            (200, 200, true),
            "{:?} {}",
            core.engine.store().backend(),
            claimed.3
        );
        assert_eq!(again.3["invocation"]["fencingToken"], claimed.3["invocation"]["fencingToken"]);
        let empty = keyed(&core.executor, "/skill-invocations:claim", "claim-2", take.clone()).await;
        assert_eq!(empty.0, 204);
        core.invoke(&core.caller, "claim.classify@1", json!({"inputs": {"claim": "d"}})).await.ok(201);
        let still = keyed(&core.executor, "/skill-invocations:claim", "claim-2", take.clone()).await;
        assert_eq!((still.0, still.1), (204, true), "the repeat does not take the new call");

        // Ten identical requests at once: one acts, every one answers alike.
        let body = local("claim.route", "none", (1, 0), &[]);
        let racing = (0..10).map(|_| keyed(&core.admin, "/skills", "race-1", body.clone()));
        let answers = futures::future::join_all(racing).await;
        let ids: std::collections::BTreeSet<String> =
            answers.iter().map(|a| format!("{} {}", a.0, a.3["id"].as_str().unwrap_or("?"))).collect();
        assert_eq!(ids.len(), 1, "{ids:?}");
        assert_eq!(answers.iter().filter(|a| !a.1).count(), 1, "one answer is the first");
    })
    .await;
}

/// Package settings: the schema an apply brings, values set against it (versioned, no secrets),
/// and a claim of the package's skill carries them.
#[tokio::test]
async fn package_settings_reach_the_calls_of_its_skills() {
    each_backend("settings", |core| async move {
        const HASH: &str = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
        let schema = json!({"type": "object", "properties": {"tone": {"type": "string", "enum": ["formal", "warm"]},
                                                             "limit": {"type": "integer", "minimum": 1}},
                            "additionalProperties": false});
        let apply = |version: &str, schema: Value| {
            json!({"package": {"key": "claims", "version": version}, "installHash": HASH.replace('0', &version[..1]),
                   "create": if version == "1.0.0" { vec![local("claim.classify", "none", (1, 0), &[])] } else { vec![] },
                   "objects": [{"kind": "Skill", "key": "claim.classify"}], "settingsSchema": schema})
        };
        core.post(&core.admin, "/packages:apply", &apply("1.0.0", json!({"type": "string"}))).await.refused(422, "invalid_package_settings");
        core.post(&core.admin, "/packages:apply", &apply("1.0.0", schema.clone())).await.ok(200);
        let settings = core.get(&core.admin, "/packages/claims/settings").await.ok(200).clone();
        assert_eq!((settings["schemaRevision"].clone(), settings["valuesRevision"].clone(), settings["values"].clone()), (json!(1), json!(0), json!({})));
        core.get(&core.admin, "/packages/other/settings").await.refused(404, "not_found");

        let set = |values: Value, expected: Option<i32>| {
            let mut body = json!({"values": values});
            if let Some(expected) = expected {
                body["expectedRevision"] = json!(expected);
            }
            let core = &core;
            async move { core.post(&core.admin, "/packages/claims/settings", &body).await }
        };
        let bad = set(json!({"tone": "rude"}), None).await;
        assert_eq!(bad.refused(422, "invalid_package_settings").body["error"]["details"]["errors"][0]["path"], "/tone");
        set(json!({"tone": "warm", "token": "sk_live_4eC39HqLyjWDarjtT1zdp7dc"}), None).await.refused(422, "secret_material_rejected");
        core.post(&core.caller, "/packages/claims/settings", &json!({"values": {}})).await.refused(403, "permission_denied");
        let done = set(json!({"tone": "warm", "limit": 3}), Some(0)).await.ok(200).clone();
        assert_eq!((done["valuesRevision"].clone(), done["updatedBy"].is_string()), (json!(1), true));
        set(json!({"tone": "formal"}), Some(0)).await.refused(409, "version_conflict");

        // A call of the package's skill carries them.
        core.invoke(&core.caller, "claim.classify@1", json!({"inputs": {"claim": "c"}})).await.ok(201);
        let claimed = core.claim(json!({"protocols": ["local"], "localEntrypoints": [CLASSIFY]})).await.ok(200).clone();
        assert_eq!(claimed["settings"], json!({"package": "claims", "version": "1.0.0", "schemaRevision": 1, "values": {"tone": "warm", "limit": 3}}));

        // A new schema the values do not fit is refused whole; one they fit moves the revision.
        let narrower = json!({"type": "object", "properties": {"tone": {"type": "string", "enum": ["formal"]}}});
        let refused = core.post(&core.admin, "/packages:apply", &apply("2.0.0", narrower)).await;
        assert!(refused.refused(422, "invalid_package_settings").body["error"]["message"].as_str().unwrap_or_default().contains("fit both"));
        assert_eq!(core.get(&core.admin, "/packages/claims").await.ok(200)["version"], "1.0.0", "nothing of the refused apply");
        let wider = json!({"type": "object", "properties": {"tone": {"type": "string"}, "limit": {"type": "integer"}}});
        core.post(&core.admin, "/packages:apply", &apply("3.0.0", wider)).await.ok(200);
        let settings = core.get(&core.admin, "/packages/claims/settings").await.ok(200).clone();
        assert_eq!((settings["schemaRevision"].clone(), settings["packageVersion"].clone(), settings["values"]["tone"].clone()), (json!(2), json!("3.0.0"), json!("warm")));
        let events = core.engine.store().events(0, Some("package:claims"), 100).await.expect("events");
        assert!(events.iter().any(|e| e.kind == "package.settings_changed" && e.data["valuesRevision"] == 1));
        assert!(events.iter().all(|e| e.data.get("values").is_none()), "no values in the journal");
    })
    .await;
}

/// Why a pending call waits is worked out per implementation, not per version: after an
/// endpoint moved, the version's calls at the old endpoint wait for an executor even while those
/// at the new one are covered.
#[tokio::test]
async fn a_moved_endpoint_is_covered_call_by_call() {
    each_backend("moved", |core| async move {
        let published = core.publish(http_leaf("svc.lookup", "https://old.example/run", None)).await;
        let old = core.invoke(&core.caller, "svc.lookup@1", json!({"inputs": {}})).await.ok(201)["id"].clone();
        let path = format!("/skills/{}", published["id"].as_str().expect("id"));
        let moved = core
            .http
            .patch(format!("{}{path}", core.base))
            .bearer_auth(&core.admin)
            .header("if-match", "\"skill-1\"")
            .json(&json!({"endpoint": "https://new.example/run"}))
            .send()
            .await
            .expect("patched");
        assert_eq!(moved.status(), StatusCode::OK);
        let first_new = core.invoke(&core.caller, "svc.lookup@1", json!({"inputs": {}})).await.ok(201)["id"].clone();
        let second_new = core.invoke(&core.caller, "svc.lookup@1", json!({"inputs": {}})).await.ok(201)["id"].clone();
        let session = core.post(&core.executor, "/executor-sessions", &json!({})).await.ok(201)["id"].clone();
        let take = json!({"protocols": ["http"], "httpOrigins": ["https://new.example"], "sessionId": session});
        assert_eq!(core.claim(take).await.ok(200)["invocation"]["id"], first_new);
        let page = core.get(&core.caller, "/skill-invocations?status=pending").await.ok(200).clone();
        let reasons: Vec<(Value, Value)> = page["items"]
            .as_array()
            .expect("items")
            .iter()
            .map(|call| (call["id"].clone(), call["waiting"]["reason"].clone()))
            .collect();
        assert_eq!(reasons, [(second_new, json!("queued")), (old, json!("no_executor"))]);
    })
    .await;
}

/// A claim with `waitSeconds` waits at the core and takes the call queued meanwhile; a wait past
/// 30 s is refused.
#[tokio::test]
async fn a_waiting_claim_takes_the_call_queued_meanwhile() {
    each_backend("wait", |core| async move {
        core.publish(local("claim.classify", "none", (1, 0), &[])).await;
        let take = json!({"protocols": ["local"], "localEntrypoints": [CLASSIFY], "waitSeconds": 31});
        assert_eq!(
            core.claim(take).await.refused(400, "invalid_request").body["error"]["details"]["field"],
            "waitSeconds"
        );
        let take = json!({"protocols": ["local"], "localEntrypoints": [CLASSIFY], "waitSeconds": 20});
        let started = std::time::Instant::now();
        let (claimed, invoked) = tokio::join!(core.claim(take), async {
            tokio::time::sleep(std::time::Duration::from_millis(300)).await;
            core.invoke(&core.caller, "claim.classify@1", json!({"inputs": {"claim": "c"}})).await
        });
        let id = invoked.ok(201)["id"].clone();
        assert_eq!(claimed.ok(200)["invocation"]["id"], id);
        assert!(started.elapsed() < std::time::Duration::from_secs(10), "woken by the call, not by the wait's end");
        // Nothing to take: the wait runs out and answers 204.
        let short = json!({"protocols": ["local"], "localEntrypoints": [CLASSIFY], "waitSeconds": 1});
        let started = std::time::Instant::now();
        assert_eq!(core.claim(short).await.status, StatusCode::NO_CONTENT);
        assert!(started.elapsed() >= std::time::Duration::from_millis(900), "it waited");
    })
    .await;
}

/// Disabling a principal: its token stops at once; the calls it authorized are cancelled
/// (`basis_revoked`, the reason), the running one fencing its executor out; the call a disabled
/// executor was running goes back to the queue with the reason as its code.
#[tokio::test]
async fn disabling_a_principal_cancels_its_calls_and_returns_what_it_ran() {
    each_backend("disable", |core| async move {
        core.publish(local("claim.classify", "none", (3, 0), &[])).await;
        let take = json!({"protocols": ["local"], "localEntrypoints": [CLASSIFY]});
        let leaver = token(&core.engine, "leaver", &["skills.invoke"]).await;
        let running = core.invoke(&leaver, "claim.classify@1", json!({"inputs": {"claim": "a"}})).await.ok(201).clone();
        let held = core.claim(take.clone()).await.ok(200).clone();
        assert_eq!(held["invocation"]["id"], running["id"]);
        // Another caller's call, run by an executor that is disabled next.
        let runner = executor_token(&core.engine, "runner", &["skills.execute"], test_allowance()).await;
        let theirs =
            core.invoke(&core.caller, "claim.classify@1", json!({"inputs": {"claim": "c"}})).await.ok(201).clone();
        let taken = core.post(&runner, "/skill-invocations:claim", &take).await.ok(200).clone();
        assert_eq!(taken["invocation"]["id"], theirs["id"]);
        let pending = core.invoke(&leaver, "claim.classify@1", json!({"inputs": {"claim": "b"}})).await.ok(201).clone();

        // Only org.manage; a reason is a code.
        let body = json!({"principal": "leaver", "reason": "offboarded"});
        core.post(&core.caller, "/principals:disable", &body).await.refused(403, "permission_denied");
        let odd = json!({"principal": "leaver", "reason": "Left the company"});
        core.post(&core.admin, "/principals:disable", &odd).await.refused(400, "invalid_request");
        core.post(&core.admin, "/principals:disable", &json!({"principal": "nobody", "reason": "x"}))
            .await
            .refused(404, "not_found");

        let disabled = core.post(&core.admin, "/principals:disable", &body).await.ok(200).clone();
        let mut cancelled: Vec<String> = disabled["cancelledCalls"]
            .as_array()
            .expect("ids")
            .iter()
            .filter_map(|v| v.as_str().map(str::to_owned))
            .collect();
        cancelled.sort();
        let mut expected =
            vec![running["id"].as_str().expect("id").to_owned(), pending["id"].as_str().expect("id").to_owned()];
        expected.sort();
        assert_eq!(cancelled, expected, "{disabled}");
        core.post(&core.admin, "/principals:disable", &body).await.refused(409, "principal_disabled");
        // Its token stops at once.
        let gone = core.get(&leaver, "/skills").await;
        assert_eq!(gone.refused(401, "invalid_token").body["error"]["details"]["reason"], "principal_disabled");

        let read = |id: &Value| {
            let core = &core;
            let id = id.as_str().expect("id").to_owned();
            async move { core.get(&core.admin, &format!("/skill-invocations/{id}")).await.ok(200).clone() }
        };
        let was_running = read(&running["id"]).await;
        assert_eq!(
            (
                was_running["status"].clone(),
                was_running["error"]["code"].clone(),
                was_running["error"]["message"].clone()
            ),
            (json!("cancelled"), json!("basis_revoked"), json!("offboarded"))
        );
        assert_eq!(was_running["error"]["details"]["wasRunning"], true);
        assert_eq!(read(&pending["id"]).await["error"]["details"]["wasRunning"], false);
        // The executor that held the cancelled call is fenced out.
        let report = json!({"fencingToken": 1, "output": {"label": "x"}});
        core.act(&core.executor, running["id"].as_str().expect("id"), "complete", report)
            .await
            .refused(409, "stale_invocation_lease");

        // The runner disabled: the call it held is back in the queue, its attempt spent.
        let gone = json!({"principal": "runner", "reason": "executor_retired"});
        let returned = core.post(&core.admin, "/principals:disable", &gone).await.ok(200).clone();
        assert_eq!(returned["returnedCalls"], json!([theirs["id"]]), "{returned}");
        assert_eq!(returned["cancelledCalls"], json!([]));
        let back = read(&theirs["id"]).await;
        assert_eq!(
            (
                back["status"].clone(),
                back["attempt"].clone(),
                back["error"]["code"].clone(),
                back["error"]["retryable"].clone()
            ),
            (json!("pending"), json!(1), json!("executor_retired"), json!(true))
        );
        let again = core.claim(take).await.ok(200).clone();
        assert_eq!(
            (again["invocation"]["id"].clone(), again["invocation"]["attempt"].clone()),
            (theirs["id"].clone(), json!(2))
        );
        let events = core.engine.store().events(0, None, 1000).await.expect("events");
        assert_eq!(events.iter().filter(|e| e.kind == "principal.disabled").count(), 2);
    })
    .await;
}

/// A stopping executor drains its session: a claim waiting with it answers at once, and claims
/// made with it take nothing, though a call waits; its running calls still report.
#[tokio::test]
async fn a_drained_session_takes_nothing_and_ends_waiting_claims() {
    each_backend("drain", |core| async move {
        core.publish(local("claim.classify", "none", (1, 0), &[])).await;
        let session = core.post(&core.executor, "/executor-sessions", &json!({})).await.ok(201).clone();
        let sid = session["id"].as_str().expect("id").to_owned();
        let take = json!({"protocols": ["local"], "localEntrypoints": [CLASSIFY], "sessionId": sid});
        let running =
            core.invoke(&core.caller, "claim.classify@1", json!({"inputs": {"claim": "a"}})).await.ok(201).clone();
        let held = core.claim(take.clone()).await.ok(200).clone();
        assert_eq!(held["invocation"]["id"], running["id"]);

        // A claim waits (up to 10 s) for a call; the drain ends it at once.
        let waiting = {
            let mut body = take.clone();
            body["waitSeconds"] = json!(10);
            let (http, url, token) =
                (core.http.clone(), format!("{}/skill-invocations:claim", core.base), core.executor.clone());
            tokio::spawn(async move {
                let started = std::time::Instant::now();
                let answer = http.post(url).bearer_auth(token).json(&body).send().await.expect("answers");
                (answer.status().as_u16(), started.elapsed())
            })
        };
        tokio::time::sleep(std::time::Duration::from_millis(300)).await;
        let drained =
            core.post(&core.executor, &format!("/executor-sessions/{sid}:heartbeat"), &json!({"draining": true})).await;
        assert_eq!(drained.ok(200)["draining"], true);
        let (status, waited) = waiting.await.expect("the claim ended");
        assert_eq!(status, 204);
        assert!(waited < std::time::Duration::from_secs(5), "answered at the drain, not after its 10 s: {waited:?}");

        // A call waits; a claim with the drained session does not take it, one without does.
        let queued =
            core.invoke(&core.caller, "claim.classify@1", json!({"inputs": {"claim": "b"}})).await.ok(201).clone();
        assert_eq!(core.claim(take.clone()).await.status.as_u16(), 204);
        // The running call still reports.
        let report = json!({"fencingToken": 1, "output": {"label": "refund"}, "sessionId": sid});
        assert_eq!(
            core.act(&core.executor, running["id"].as_str().expect("id"), "complete", report).await.ok(200)["status"],
            "succeeded"
        );
        // Draining is never undone.
        let again = core.post(&core.executor, &format!("/executor-sessions/{sid}:heartbeat"), &json!({})).await;
        assert_eq!(again.ok(200)["draining"], true);
        let plain = json!({"protocols": ["local"], "localEntrypoints": [CLASSIFY]});
        assert_eq!(core.claim(plain).await.ok(200)["invocation"]["id"], queued["id"]);
    })
    .await;
}

/// A claim waiting on one core takes a call queued through another core sharing the PostgreSQL
/// database as soon as it is queued: the core that queued it notifies every listening core. Here
/// the waiting core looks again on its own only every hour, and the claim waits 30 s: only the
/// wake-up can bring the call back within 15 s.
#[tokio::test]
async fn a_call_queued_through_one_core_wakes_a_claim_waiting_on_another() {
    let first = core(Backend::Postgres, "wake").await;
    first.publish(local("claim.classify", "none", (1, 0), &[])).await;
    let store = skill_store::open(&first.target, &Default::default()).await.expect("the same database");
    let second = Engine::new(store).with_look_again(std::time::Duration::from_secs(3600));
    let listening = second.listen_to_other_cores().await.expect("listens").expect("PostgreSQL has wake-ups");
    let executor = second.authenticate(&first.executor).await.expect("the executor");
    let request: skill_api::ClaimRequest =
        serde_json::from_value(json!({"protocols": ["local"], "localEntrypoints": [CLASSIFY], "waitSeconds": 30}))
            .expect("a claim");
    let waiting = {
        let second = second.clone();
        tokio::spawn(async move { second.claim(&executor, &request, None).await })
    };
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    let queued = first.invoke(&first.caller, "claim.classify@1", json!({"inputs": {"claim": "c-1"}})).await;
    let id = queued.ok(201)["id"].as_str().expect("an id").to_owned();
    let claimed = tokio::time::timeout(std::time::Duration::from_secs(15), waiting)
        .await
        .expect("woken before its own look")
        .expect("the claim ran")
        .expect("claimed");
    assert_eq!(claimed.map(|out| out.invocation.id), Some(id));
    // SQLite has one writer, so nothing to listen to.
    let lite = core(Backend::Sqlite, "wake-lite").await;
    assert!(lite.engine.listen_to_other_cores().await.expect("answers").is_none());
    listening.abort();
}

/// Until `deadline`, whether `token` still lets its holder in on `engine`.
async fn refused_within(engine: &Engine, token: &str, deadline: std::time::Duration) -> bool {
    let until = std::time::Instant::now() + deadline;
    loop {
        match engine.authenticate(token).await {
            Err(error) => return error.code == Code::InvalidToken,
            Ok(_) if std::time::Instant::now() >= until => return false,
            Ok(_) => tokio::time::sleep(std::time::Duration::from_millis(5)).await,
        }
    }
}

/// A listening core keeps the credentials it read, and forgets them at every change of what they
/// are made of, whoever made it: a token revoked through another core, a grant deleted by hand at
/// a `psql` prompt, a principal disabled — each is refused within a second, well before what is
/// kept would run out on its own (2 s), and a token revoked through the core itself is refused at
/// once.
#[tokio::test]
async fn a_listening_core_forgets_a_credential_the_moment_it_changes_anywhere() {
    let first = core(Backend::Postgres, "keys").await;
    let store = skill_store::open(&first.target, &Default::default()).await.expect("the same database");
    let second = Engine::new(store);
    let listening = second.listen_to_other_cores().await.expect("listens").expect("PostgreSQL listens");
    let soon = std::time::Duration::from_secs(1);
    let issue = |name: &'static str| {
        let engine = first.engine.clone();
        async move {
            let request = skill_engine::TokenRequest {
                principal: name.to_owned(),
                kind: "person".to_owned(),
                grants: vec!["skills.invoke".to_owned()],
                label: String::new(),
                expires_at: None,
            };
            engine.issue_token(&request, &skill_engine::Origin::default()).await.expect("a token")
        }
    };

    // Revoked through the other core.
    let revoked = issue("revoked-elsewhere").await;
    for _ in 0..3 {
        second.authenticate(&revoked.token).await.expect("kept and used");
    }
    first.engine.revoke_token(&revoked.record.id, &skill_engine::Origin::default()).await.expect("revoked");
    assert!(refused_within(&second, &revoked.token, soon).await, "the revocation was heard");

    // A grant deleted by hand.
    let granted = issue("granted-by-hand").await;
    assert!(second.authenticate(&granted.token).await.expect("in").can("skills.invoke"));
    let deleted = Command::new("psql")
        .args([
            first.target.as_str(),
            "-q",
            "-c",
            &format!("DELETE FROM grants WHERE principal_id = '{}'", granted.principal.id),
        ])
        .output()
        .expect("psql runs");
    assert!(deleted.status.success(), "{}", String::from_utf8_lossy(&deleted.stderr));
    let until = std::time::Instant::now() + soon;
    while second.authenticate(&granted.token).await.expect("still a token").can("skills.invoke") {
        assert!(std::time::Instant::now() < until, "the deleted grant was still kept after {soon:?}");
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }

    // A principal disabled by hand.
    let disabled = issue("disabled-by-hand").await;
    second.authenticate(&disabled.token).await.expect("in");
    let sql = format!("UPDATE principals SET disabled_at = now() WHERE id = '{}'", disabled.principal.id);
    let done = Command::new("psql").args([first.target.as_str(), "-q", "-c", &sql]).output().expect("psql runs");
    assert!(done.status.success(), "{}", String::from_utf8_lossy(&done.stderr));
    assert!(refused_within(&second, &disabled.token, soon).await, "the disabled principal was heard");

    // Revoked through the core that kept it: refused at the very next request.
    let own = issue("revoked-here").await;
    second.authenticate(&own.token).await.expect("in");
    second.revoke_token(&own.record.id, &skill_engine::Origin::default()).await.expect("revoked");
    assert_eq!(second.authenticate(&own.token).await.expect_err("refused").code, Code::InvalidToken);
    listening.abort();
}
