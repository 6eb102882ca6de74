//! One call, one trace: `skill-core serve`, `skill-core executor` and the claims package's host
//! (`serve http` and `serve mcp-http`, both over TLS) run as processes exporting to an OTLP/HTTP
//! receiver of this test, which decodes the export with the `opentelemetry-proto` types. A call
//! invoked with a caller's `traceparent` is found whole: the core's request, the executor's
//! attempt, its HTTP or MCP request, the host's request and the skill's own span, each the child
//! of the one before, with the conventions' attributes; the call shows its trace id, and the
//! core's JSON log line of the request carries it. A tool called through the core's MCP gateway
//! with the context in `params._meta` joins the caller's trace the same way.

use std::collections::BTreeMap;
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::AnyValue;
use opentelemetry_proto::tonic::common::v1::any_value::Value as Any;
use prost::Message as _;
use serde_json::{Value, json};
use skill_fixtures::{Output, Running, Scratch};

use crate::running::CORE;

/// A span as the receiver got it.
#[derive(Debug, Clone)]
struct Span {
    service: String,
    trace: String,
    id: String,
    parent: String,
    name: String,
    kind: i32,
    attributes: BTreeMap<String, String>,
}

impl Span {
    fn attribute(&self, key: &str) -> &str {
        self.attributes.get(key).map_or("", String::as_str)
    }
}

const SERVER: i32 = 2;
const CLIENT: i32 = 3;

type Received = Arc<Mutex<Vec<Span>>>;

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn text(value: Option<&AnyValue>) -> String {
    match value.and_then(|value| value.value.as_ref()) {
        Some(Any::StringValue(text)) => text.clone(),
        Some(Any::IntValue(n)) => n.to_string(),
        Some(Any::BoolValue(b)) => b.to_string(),
        Some(Any::DoubleValue(x)) => x.to_string(),
        _ => String::new(),
    }
}

/// An OTLP/HTTP receiver (`POST /v1/traces`, protobuf): its base URL and what it received.
fn receiver() -> (String, Received) {
    let received = Received::default();
    let kept = Arc::clone(&received);
    let export = move |body: axum::body::Bytes| {
        let kept = Arc::clone(&kept);
        async move {
            let request = ExportTraceServiceRequest::decode(body).expect("an OTLP export");
            let mut spans = kept.lock().expect("the spans");
            for resource in request.resource_spans {
                let service = resource
                    .resource
                    .iter()
                    .flat_map(|resource| &resource.attributes)
                    .find(|pair| pair.key == "service.name")
                    .map(|pair| text(pair.value.as_ref()))
                    .unwrap_or_default();
                for span in resource.scope_spans.into_iter().flat_map(|scope| scope.spans) {
                    spans.push(Span {
                        service: service.clone(),
                        trace: hex(&span.trace_id),
                        id: hex(&span.span_id),
                        parent: hex(&span.parent_span_id),
                        name: span.name,
                        kind: span.kind,
                        attributes: span
                            .attributes
                            .iter()
                            .map(|pair| (pair.key.clone(), text(pair.value.as_ref())))
                            .collect(),
                    });
                }
            }
            ([("content-type", "application/x-protobuf")], Vec::<u8>::new())
        }
    };
    let app = axum::Router::new().route("/v1/traces", axum::routing::post(export));
    (skill_fixtures::serve(app), received)
}

/// Exports to `endpoint`, in batches sent every 100 ms.
fn exporting(command: &mut Command, endpoint: &str) {
    command
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint)
        .env("OTEL_BSP_SCHEDULE_DELAY", "100")
        .env_remove("OTEL_SERVICE_NAME")
        .env_remove("OTEL_RESOURCE_ATTRIBUTES")
        .env_remove("OTEL_SDK_DISABLED");
}

fn created(db: &str, args: &[&str]) -> String {
    let output = Command::new(CORE).args(["token", "create", "--db", db]).args(args).output().expect("skill-core runs");
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    String::from_utf8_lossy(&output.stdout).trim().to_owned()
}

/// The claims host serving over `transport` with TLS: the process and its port.
fn host(binary: &str, transport: &str, folder: &Scratch, endpoint: &str) -> (Running, u16) {
    let mut command = Command::new(binary);
    command
        .args(["serve", transport, "--host", "127.0.0.1", "--port", "0", "--allow-anonymous", "--tls-cert"])
        .arg(folder.path().join("cert.pem"))
        .arg("--tls-key")
        .arg(folder.path().join("key.pem"))
        .env("SKILL_LOG", "warn");
    exporting(&mut command, endpoint);
    let mut running = Running::start(command, Output::Stderr);
    let line = running.until(30, |line| line.contains(" on https://")).pop().expect("a line");
    let address = line.split(" on https://").nth(1).and_then(|rest| rest.split(['/', ' ']).next()).expect("an address");
    let port = address.rsplit(':').next().and_then(|port| port.parse().ok()).expect("a port");
    (running, port)
}

fn remote(name: &str, protocol: &str, endpoint: &str, entrypoint: Option<&str>) -> Value {
    json!({"name": name, "version": "1", "description": "A claims skill served by its host.", "sideEffects": "none",
           "riskLevel": "low",
           "contract": {"inputs": {"type": "object"}, "outputs": {"type": "object"}, "timeoutSeconds": 20,
                        "retryPolicy": {"maxAttempts": 1},
                        "implementation": {"protocol": protocol, "endpoint": endpoint, "entrypoint": entrypoint}}})
}

/// The first span of `spans` in `parent`'s trace whose parent it is, from `service`, named `name`.
fn child<'a>(spans: &'a [Span], parent: &Span, service: &str, name: &str) -> &'a Span {
    spans
        .iter()
        .find(|span| {
            span.trace == parent.trace && span.parent == parent.id && span.service == service && span.name == name
        })
        .unwrap_or_else(|| {
            let trace: Vec<_> = spans.iter().filter(|span| span.trace == parent.trace).collect();
            panic!("no {name} of {service} under {} ({}): {trace:#?}", parent.name, parent.id)
        })
}

#[test]
fn a_call_is_one_trace_from_the_invoke_through_the_executor_to_the_skill() {
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("a runtime");
    let (endpoint, received) = receiver();
    let folder = Scratch::new("skill-core-traces");
    crate::remote::certificates(&folder);
    let db = folder.path().join("data").display().to_string();
    let ops = created(&db, &["--name", "ops", "--grant", "org.manage", "--grant", "skills.invoke"]);
    let executor = created(&db, &["--name", "executor", "--kind", "executor", "--grant", "skills.execute"]);

    let claims = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/claims");
    let binary = skill_package::host_crate::locate_own(std::path::Path::new(claims)).expect("the claims host");
    let binary = skill_package::host_crate::build(&binary).expect("the claims host builds");
    let binary = binary.display().to_string();
    let service = std::path::Path::new(&binary).file_stem().expect("a name").to_string_lossy().into_owned();
    let (http_host, http_port) = host(&binary, "http", &folder, &endpoint);
    let (mcp_host, mcp_port) = host(&binary, "mcp-http", &folder, &endpoint);

    let mut command = Command::new(CORE);
    command
        .args(["serve", "--db", &db, "--listen", "127.0.0.1:0"])
        .env("SKILL_LOG", "info")
        .env("SKILL_LOG_FORMAT", "json");
    exporting(&mut command, &endpoint);
    let mut core = Running::start(command, Output::Stderr);
    let base = format!("http://{}", core.address(30));

    let http_origin = format!("https://localhost:{http_port}");
    let mcp_origin = format!("https://localhost:{mcp_port}");
    let client = reqwest::Client::new();
    let calls = runtime.block_on(async {
        let post = |path: String, body: Value, traceparent: Option<String>| {
            let mut request = client.post(format!("{base}/api/v1{path}")).bearer_auth(&ops).json(&body);
            if let Some(traceparent) = traceparent {
                request = request.header("traceparent", traceparent);
            }
            async move {
                let answer = request.send().await.expect("the core answers");
                let status = answer.status().as_u16();
                (status, answer.json::<Value>().await.expect("JSON"))
            }
        };
        let allowance = json!({"protocols": ["http", "mcp"], "httpOrigins": [http_origin], "mcpOrigins": [mcp_origin]});
        let (status, body) = post("/principals/executor/executor-allowance".into(), allowance, None).await;
        assert_eq!(status, 200, "{body}");
        for skill in [
            remote("remote.classify", "http", &format!("{http_origin}/skills/claim.classify@1"), None),
            remote("remote.missing", "http", &format!("{http_origin}/skills/claim.nothing@1"), None),
            remote("remote.mcp_classify", "mcp", &format!("{mcp_origin}/mcp"), Some("claim.classify")),
        ] {
            let (status, body) = post("/skills".into(), skill, None).await;
            assert_eq!(status, 201, "{body}");
        }
        let mut calls = Vec::new();
        for (n, skill) in ["remote.classify@1", "remote.missing@1", "remote.mcp_classify@1"].into_iter().enumerate() {
            let trace = format!("{:032x}", 0x4bf9_2f35_77b3_4da6_a3ce_929d_0e0e_4700_u128 + n as u128);
            let parent = format!("{:016x}", 0x00f0_67aa_0ba9_0200_u64 + n as u64);
            let inputs = json!({"inputs": {"text": "the courier never came, I want my money back"}});
            let (status, call) =
                post(format!("/skills/{skill}:invoke"), inputs, Some(format!("00-{trace}-{parent}-01"))).await;
            assert_eq!(status, 201, "{call}");
            calls.push((call["id"].as_str().expect("an id").to_owned(), trace, parent));
        }
        calls
    });

    let mut command = Command::new(CORE);
    command
        .args(["executor", "--core", &base, "--http-origin", &http_origin, "--mcp-origin", &mcp_origin])
        .args(["--private-host", "localhost", "--ca-file"])
        .arg(folder.path().join("ca.pem"))
        .env("SKILL_CORE_TOKEN", &executor)
        .env("SKILL_LOG", "info");
    exporting(&mut command, &endpoint);
    let mut executor = Running::start(command, Output::Stderr);
    executor.until(30, |line| line.contains("executing remote skills"));

    // Each call ends, and names the trace its caller started.
    let ended: Vec<Value> = runtime.block_on(async {
        let mut ended = Vec::new();
        for (id, trace, _) in &calls {
            let mut call = Value::Null;
            for _ in 0..300 {
                let answer = client.get(format!("{base}/api/v1/skill-invocations/{id}")).bearer_auth(&ops).send().await;
                call = answer.expect("the core answers").json().await.expect("JSON");
                if matches!(call["status"].as_str(), Some("succeeded" | "failed")) {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            assert_eq!(call["traceId"], json!(trace), "{call}");
            ended.push(call);
            if ended.last().is_some_and(|call| call["status"] == "pending") {
                break;
            }
        }
        ended
    });
    if ended.iter().any(|call| call["status"] == "pending") {
        // What the executor said instead of running it.
        executor.until(2, |_| false);
    }
    assert_eq!(ended[0]["status"], "succeeded", "{}", ended[0]);
    assert_eq!(ended[0]["output"]["category"], "refund", "{}", ended[0]);
    assert_eq!(ended[1]["status"], "failed", "{}", ended[1]);
    assert_eq!(ended[2]["status"], "succeeded", "{}", ended[2]);

    // A tool called through the core's MCP gateway, its context in `params._meta`.
    let gateway = (
        format!("{:032x}", 0x4bf9_2f35_77b3_4da6_a3ce_929d_0e0e_47ff_u128),
        format!("{:016x}", 0x00f0_67aa_0ba9_02ff_u64),
    );
    runtime.block_on(async {
        let traceparent = format!("00-{}-{}-01", gateway.0, gateway.1);
        let meta = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                          "io.modelcontextprotocol/clientCapabilities": {},
                          "io.modelcontextprotocol/clientInfo": {"name": "traces-test", "version": "1.0"},
                          "traceparent": traceparent});
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                          "params": {"name": "remote.classify", "arguments": {"text": "a refund please"}, "_meta": meta}});
        let answer = client
            .post(format!("{base}/mcp"))
            .bearer_auth(&ops)
            .header("Accept", "application/json, text/event-stream")
            .header("MCP-Protocol-Version", "2026-07-28")
            .header("Mcp-Method", "tools/call")
            .header("Mcp-Name", "remote.classify")
            .json(&body)
            .send()
            .await
            .expect("the gateway answers");
        assert_eq!(answer.status().as_u16(), 200);
        let text = answer.text().await.expect("a body");
        assert!(text.contains("refund") && !text.contains("\"isError\":true"), "{text}");
    });

    // Every process sends its spans within a batch's delay; the skills' spans come last.
    let spans = {
        // Everything the checks below look for: each caller's span has its child in the core,
        // three skills ran, two attempts failed, the core saw a report.
        let roots: Vec<(String, String)> =
            calls.iter().map(|(_, trace, parent)| (trace.clone(), parent.clone())).chain([gateway.clone()]).collect();
        for _ in 0..600 {
            let spans = received.lock().expect("the spans").clone();
            let rooted = roots
                .iter()
                .all(|(trace, parent)| spans.iter().any(|span| &span.trace == trace && &span.parent == parent));
            let skills = spans.iter().filter(|span| span.service == service && span.name == "skill").count();
            let failed = spans
                .iter()
                .filter(|span| span.service == "skill-executor" && span.attributes.contains_key("error.type"))
                .count();
            let reported = spans
                .iter()
                .any(|span| span.trace == calls[0].1 && span.name.starts_with("POST /api/v1/skill-invocations/"));
            if rooted && skills >= 3 && failed >= 2 && reported {
                break;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        // Every span ended by now; a batch's delay more brings the last ones.
        std::thread::sleep(Duration::from_secs(1));
        received.lock().expect("the spans").clone()
    };

    let root = |(id, trace, parent): &(String, String, String)| -> Span {
        let server = spans
            .iter()
            .find(|span| &span.trace == trace && &span.parent == parent)
            .unwrap_or_else(|| {
                panic!("no span of the core under the caller's span {parent} of {trace} ({id}): {spans:#?}")
            })
            .clone();
        assert_eq!((server.service.as_str(), server.kind), ("skill-core", SERVER), "{server:#?}");
        assert_eq!(server.name, "POST /api/v1/skills/{*reference}", "{server:#?}");
        assert_eq!(server.attribute("http.route"), "/api/v1/skills/{*reference}");
        assert_eq!(server.attribute("http.request.method"), "POST");
        assert_eq!(server.attribute("http.response.status_code"), "201");
        server
    };

    // Over HTTPS: core → executor → its request → the host's request → the skill.
    let server = root(&calls[0]);
    let execution = child(&spans, &server, "skill-executor", "execute_tool remote.classify");
    assert_eq!(execution.attribute("gen_ai.operation.name"), "execute_tool");
    assert_eq!(execution.attribute("gen_ai.tool.name"), "remote.classify");
    assert_eq!(execution.attribute("gen_ai.tool.call.id"), calls[0].0);
    assert_eq!(execution.attribute("skill.version"), "remote.classify@1");
    assert_eq!(execution.attribute("error.type"), "");
    // Its report reaches the core inside the attempt's span.
    let report = child(&spans, execution, "skill-core", "POST /api/v1/skill-invocations/{*rest}");
    assert_eq!(report.attribute("http.response.status_code"), "200");
    let request = child(&spans, execution, "skill-executor", "POST");
    assert_eq!(request.kind, CLIENT);
    assert_eq!(request.attribute("url.full"), format!("{http_origin}/skills/claim.classify@1"));
    assert_eq!(request.attribute("http.response.status_code"), "200");
    let served = child(&spans, request, &service, "POST /skills/{*reference}");
    assert_eq!(served.kind, SERVER);
    let skill = child(&spans, served, &service, "skill");
    assert_eq!(skill.attribute("skill"), "claim.classify@1");
    assert_eq!(skill.attribute("invocation_id"), calls[0].0);

    // A failed call: its type on the attempt (the call's error code) and on the request (the status).
    let server = root(&calls[1]);
    let execution = child(&spans, &server, "skill-executor", "execute_tool remote.missing");
    let code = ended[1]["error"]["code"].as_str().expect("a code");
    assert_eq!(execution.attribute("error.type"), code, "{execution:#?}");
    let request = child(&spans, execution, "skill-executor", "POST");
    assert_eq!(request.attribute("http.response.status_code"), "404");
    assert_eq!(request.attribute("error.type"), "404");

    // Over MCP: the context travels in `params._meta`.
    let server = root(&calls[2]);
    let execution = child(&spans, &server, "skill-executor", "execute_tool remote.mcp_classify");
    let request = child(&spans, execution, "skill-executor", "tools/call claim.classify");
    assert_eq!(request.kind, CLIENT);
    assert_eq!(request.attribute("mcp.method.name"), "tools/call");
    assert_eq!(request.attribute("gen_ai.tool.name"), "claim.classify");
    assert_eq!(request.attribute("network.transport"), "tcp");
    let served = child(&spans, request, &service, "tools/call claim.classify");
    assert_eq!(served.kind, SERVER);
    assert_eq!(served.attribute("mcp.method.name"), "tools/call");
    let skill = child(&spans, served, &service, "skill");
    assert_eq!(skill.attribute("transport"), "mcp");

    // Through the gateway: its MCP server span under the caller's, then the attempt.
    let server = spans
        .iter()
        .find(|span| span.trace == gateway.0 && span.parent == gateway.1)
        .unwrap_or_else(|| panic!("no span of the gateway under the caller's: {spans:#?}"));
    assert_eq!(
        (server.service.as_str(), server.name.as_str(), server.kind),
        ("skill-core", "tools/call remote.classify", SERVER)
    );
    assert_eq!(server.attribute("mcp.method.name"), "tools/call");
    assert_eq!(server.attribute("gen_ai.tool.name"), "remote.classify");
    let execution = child(&spans, server, "skill-executor", "execute_tool remote.classify");
    child(&spans, execution, "skill-executor", "POST");

    // The call's page in the console shows its trace.
    runtime.block_on(async {
        let console = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().expect("a client");
        let signed = console
            .post(format!("{base}/console/sign-in"))
            .header("origin", &base)
            .header("content-type", "application/x-www-form-urlencoded")
            .body(format!("token={ops}"))
            .send()
            .await
            .expect("the console answers");
        let cookie =
            signed.headers()["set-cookie"].to_str().expect("ASCII").split(';').next().expect("a cookie").to_owned();
        let (id, trace, _) = &calls[0];
        let page = console.get(format!("{base}/console/calls/{id}")).header("cookie", cookie).send().await;
        let page = page.expect("the console answers").text().await.expect("a page");
        assert!(page.contains(&format!(">{trace}</code>")), "{page}");
    });

    // The core's log line of each invoke leads to its trace.
    let lines = core.stop(rustix::process::Signal::TERM);
    for (_, trace, _) in &calls {
        let line = lines
            .iter()
            .filter_map(|line| serde_json::from_str::<Value>(line).ok())
            .find(|line| line["trace_id"] == json!(trace) && line["fields"]["message"] == "request")
            .unwrap_or_else(|| panic!("no request line of {trace}: {lines:#?}"));
        assert_eq!(line["span_id"].as_str().map(str::len), Some(16), "{line}");
        assert_eq!(line["fields"]["status"], 201, "{line}");
    }
    executor.stop(rustix::process::Signal::TERM);
    http_host.stop(rustix::process::Signal::TERM);
    mcp_host.stop(rustix::process::Signal::TERM);
}
