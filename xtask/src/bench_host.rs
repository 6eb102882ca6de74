//! Benchmarks P2 and P3: the skill host under load from a second process (`examples/load.rs`),
//! side by side with its references in one run.
//!
//! - P2 (`bench http`): `POST /skills/echo@1` with an ES256 token verified against a JWKS, 64
//!   keep-alive connections; the reference is a bare axum handler with the same token check and
//!   JSON parsing (`examples/bare_http.rs`).
//! - P3 (`bench mcp`): `tools/call` of `echo` over streamable HTTP and over stdio; the references
//!   are a bare rmcp server with one hand-written tool (`examples/bare_mcp.rs`) and the Python
//!   FastMCP server with the same tool (`xtask/bench/fastmcp_echo.py`).
//!
//! Each server runs in its own process. P2 starts all its servers at once and gives each, in
//! rotation, three turns of 2 s per round (five rounds); P3 runs one server at a time, five
//! rounds. The median round counts, and the median of the rounds' ratios is printed beside it.
//! Results go to `target/bench/host-http.json` and `target/bench/host-mcp.json`.

use std::io::{Read, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use anyhow::{Context, Result, bail};
use base64::Engine;
use serde_json::{Value, json};

use crate::{run, target_dir, workspace_root};

const ROUNDS: usize = 5;
const SECONDS: &str = "6";
/// P2: turns per server and round, and the length of a turn.
const SLICES: usize = 3;
const SLICE_SECONDS: &str = "2";
const ISSUER: &str = "https://iam.bench";
const AUDIENCE: &str = "bench-skills";

fn release(name: &str) -> PathBuf {
    target_dir().join("release/examples").join(name)
}

fn build() -> Result<()> {
    run(
        "build the hosts, the references and the load generator (release)",
        Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into())).args([
            "build",
            "--release",
            "--quiet",
            "-p",
            "skill-host",
            "--examples",
        ]),
    )
}

/// A key set server on 127.0.0.1 for the fixture key `ec-1`; returns its URL.
fn jwks_server(jwk: Value) -> Result<String> {
    let listener = TcpListener::bind("127.0.0.1:0")?;
    let url = format!("http://{}/jwks.json", listener.local_addr()?);
    let body = json!({"keys": [jwk]}).to_string();
    std::thread::spawn(move || {
        for mut stream in listener.incoming().map_while(Result::ok) {
            let mut request = [0u8; 4096];
            let _ = stream.read(&mut request);
            let _ = write!(
                stream,
                "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nCache-Control: max-age=3600\r\n\
                 Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    Ok(url)
}

/// The fixture key `ec-1` and a token it signed.
fn key_and_token() -> Result<(Value, String)> {
    let path = workspace_root().join("crates/skill-host/tests/it/fixtures/test-keys.json");
    let keys: Value = serde_json::from_str(&std::fs::read_to_string(&path)?)?;
    let key = keys["keys"].as_array().and_then(|k| k.iter().find(|k| k["kid"] == "ec-1")).context("ec-1")?.clone();
    let der = base64::engine::general_purpose::STANDARD.decode(key["private_der"].as_str().context("der")?)?;
    let mut header = jsonwebtoken::Header::new(jsonwebtoken::Algorithm::ES256);
    header.kid = Some("ec-1".to_owned());
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH)?.as_secs();
    let claims = json!({"iss": ISSUER, "aud": AUDIENCE, "sub": "bench", "exp": now + 7200});
    let token = jsonwebtoken::encode(&header, &claims, &jsonwebtoken::EncodingKey::from_ec_der(&der))?;
    Ok((key["jwk"].clone(), token))
}

/// A server process and the address it printed ("… on http://ADDRESS…").
struct Server {
    child: Child,
    address: String,
}

impl Server {
    /// Starts the server with its stderr in a file (as a supervisor would keep it), and waits for
    /// the line that says where it listens.
    fn start(command: &mut Command) -> Result<Self> {
        Self::start_logging_to(command, "server.log")
    }

    /// [`Server::start`] with the server's stderr in `target/bench/<log>`.
    fn start_logging_to(command: &mut Command, log: &str) -> Result<Self> {
        let log = target_dir().join("bench").join(log);
        let child = command.stdin(Stdio::null()).stdout(Stdio::null()).stderr(std::fs::File::create(&log)?).spawn()?;
        let mut server = Self { child, address: String::new() };
        for _ in 0..400 {
            let text = std::fs::read_to_string(&log).unwrap_or_default();
            if let Some(rest) = text.split(" on http://").nth(1) {
                server.address = rest.split(['/', ' ', '\n']).next().context("an address")?.to_owned();
                return Ok(server);
            }
            if let Some(status) = server.child.try_wait()? {
                bail!("the server exited ({status}) before saying where it listens: {command:?}: {text}");
            }
            std::thread::sleep(Duration::from_millis(25));
        }
        bail!("the server did not say where it listens within 10 s: {command:?}")
    }

    /// Resident memory in KiB, from /proc.
    fn rss_kib(&self) -> Option<u64> {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id())).ok()?;
        status.lines().find_map(|l| l.strip_prefix("VmRSS:")).and_then(|v| v.split_whitespace().next()?.parse().ok())
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One load run: `{requests, failures, rps, p50_us, p99_us}`.
fn load(args: &[&str], env: &[(&str, &str)]) -> Result<Value> {
    let output = Command::new(release("load")).args(args).envs(env.iter().copied()).output()?;
    if !output.status.success() {
        bail!("the load generator failed: {}", String::from_utf8_lossy(&output.stderr));
    }
    let result: Value = serde_json::from_slice(&output.stdout).context("the load generator's JSON")?;
    if result["failures"].as_u64().unwrap_or(0) > 0 || result["requests"].as_u64().unwrap_or(0) == 0 {
        bail!("failed requests under load ({args:?}): {result}");
    }
    Ok(result)
}

/// The load runs of one server in one round as one run: requests and seconds summed, the
/// median of the turns' latency percentiles.
fn combine(turns: &[Value]) -> Value {
    let sum = |field: &str| turns.iter().map(|t| t[field].as_f64().unwrap_or(0.0)).sum::<f64>();
    let median = |field: &str| {
        let mut values: Vec<u64> = turns.iter().map(|t| t[field].as_u64().unwrap_or(0)).collect();
        values.sort_unstable();
        values[values.len() / 2]
    };
    json!({"requests": sum("requests"), "failures": sum("failures"), "seconds": sum("seconds"),
           "rps": sum("requests") / sum("seconds"), "p50_us": median("p50_us"), "p99_us": median("p99_us")})
}

fn median_by_rps(mut runs: Vec<Value>) -> Value {
    runs.sort_by(|a, b| a["rps"].as_f64().unwrap_or(0.0).total_cmp(&b["rps"].as_f64().unwrap_or(0.0)));
    runs[runs.len() / 2].clone()
}

fn write_result(name: &str, result: &Value) -> Result<()> {
    let folder = target_dir().join("bench");
    std::fs::create_dir_all(&folder)?;
    let path = folder.join(name);
    std::fs::write(&path, format!("{}\n", serde_json::to_string_pretty(result)?))?;
    println!("written {}", path.display());
    Ok(())
}

fn row(label: &str, run: &Value) {
    let micros = |field: &str| run[field].as_u64().unwrap_or(0);
    println!(
        "{label:<34} {:>10.0} {:>9} {:>9}",
        run["rps"].as_f64().unwrap_or(0.0),
        micros("p50_us"),
        micros("p99_us")
    );
}

fn ratio(ours: &Value, reference: &Value, field: &str) -> f64 {
    ours[field].as_f64().unwrap_or(0.0) / reference[field].as_f64().unwrap_or(f64::NAN)
}

fn body_file(name: &str, body: &Value) -> Result<PathBuf> {
    let folder = target_dir().join("bench");
    std::fs::create_dir_all(&folder)?;
    let path = folder.join(name);
    std::fs::write(&path, body.to_string())?;
    Ok(path)
}

fn path_arg(path: &Path) -> String {
    path.to_string_lossy().into_owned()
}

/// P2.
#[allow(
    clippy::too_many_lines,
    reason = "a benchmark is one script: our host and the reference's in the same run, then the ratios"
)]
pub(crate) fn bench_http() -> Result<()> {
    build()?;
    let (jwk, token) = key_and_token()?;
    let jwks = jwks_server(jwk)?;
    let body = path_arg(&body_file("p2-body.json", &json!({"inputs": {"text": "hello"}}))?);
    let env =
        [("SKILL_SDK_IAM_ISSUER", ISSUER), ("SKILL_SDK_AUDIENCE", AUDIENCE), ("SKILL_SDK_JWKS_URL", jwks.as_str())];
    let authorization = format!("Authorization: Bearer {token}");
    // (label, our host?, path, SKILL_LOG)
    let servers = [
        ("skill host, async skill", true, "/skills/echo@1", "info"),
        ("skill host, sync skill", true, "/skills/echo-sync@1", "info"),
        ("skill host, async, no request log", true, "/skills/echo@1", "warn"),
        ("bare axum + the same JWT check", false, "/skills/echo@1", "info"),
    ];
    // Every server runs from the start; within a round each gets SLICES turns of SLICE_SECONDS
    // under load, in rotation, so a drift of the machine's speed (this kind of machine drifts by
    // ±10% within seconds) weighs on all of them alike.
    let mut started = Vec::new();
    for (index, (_, is_ours, _, log)) in servers.iter().enumerate() {
        let mut command = if *is_ours {
            let mut c = Command::new(release("demo_host"));
            c.args(["serve", "http", "--host", "127.0.0.1", "--port", "0"]);
            c
        } else {
            Command::new(release("bare_http"))
        };
        started.push(Server::start_logging_to(
            command.envs(env).env("SKILL_LOG", log),
            &format!("p2-server-{index}.log"),
        )?);
    }
    std::thread::sleep(Duration::from_millis(300));
    let idle_rss = started[0].rss_kib();
    let args = |index: usize| {
        vec![
            "http".to_owned(),
            started[index].address.clone(),
            servers[index].2.to_owned(),
            body.clone(),
            "--header".to_owned(),
            authorization.clone(),
            "--connections".to_owned(),
            "64".to_owned(),
        ]
    };
    for index in 0..servers.len() {
        let warm = [args(index), vec!["--seconds".to_owned(), "1".to_owned()]].concat();
        load(&warm.iter().map(String::as_str).collect::<Vec<_>>(), &[])?;
    }
    let mut runs: Vec<Vec<Value>> = vec![Vec::new(); servers.len()];
    for round in 0..ROUNDS {
        let mut slices: Vec<Vec<Value>> = vec![Vec::new(); servers.len()];
        for turn in 0..SLICES * servers.len() {
            let index = (turn + round) % servers.len();
            let run = [args(index), vec!["--seconds".to_owned(), SLICE_SECONDS.to_owned()]].concat();
            slices[index].push(load(&run.iter().map(String::as_str).collect::<Vec<_>>(), &[])?);
        }
        for (index, (label, ..)) in servers.iter().enumerate() {
            let result = combine(&slices[index]);
            println!("    round {} {label}: {result}", round + 1);
            runs[index].push(result);
        }
    }
    // Within a round the servers' turns are seconds apart, so a round's ratio is steadier than
    // the ratio of the medians when the machine's speed drifts between rounds.
    let paired: Vec<Vec<f64>> = (0..3)
        .map(|index| runs[index].iter().zip(&runs[3]).map(|(ours, bare)| ratio(ours, bare, "rps")).collect())
        .collect();
    let medians: Vec<Value> = runs.into_iter().map(median_by_rps).collect();
    let reference = &medians[3];
    println!(
        "\nP2: POST /skills/<echo>@1, ES256 token checked, request logs on (to a file), 64 connections, \
         median of {ROUNDS} rounds of {SLICES} turns of {SLICE_SECONDS} s per server"
    );
    println!("{:<34} {:>10} {:>9} {:>9}", "server", "req/s", "p50 µs", "p99 µs");
    for ((label, ..), run) in servers.iter().zip(&medians) {
        row(label, run);
    }
    let mut ratios = serde_json::Map::new();
    for (index, kind) in [(0, "async"), (1, "sync"), (2, "async, no request log")] {
        let throughput = ratio(&medians[index], reference, "rps");
        let p99 = ratio(&medians[index], reference, "p99_us");
        let mut rounds = paired[index].clone();
        rounds.sort_by(f64::total_cmp);
        let per_round = rounds[rounds.len() / 2];
        println!(
            "{kind}: throughput ratio {throughput:.3} (bar ≥ 0.85: {}), per-round median {per_round:.3} of {}; \
             p99 ratio {p99:.2} (bar ≤ 2: {})",
            if throughput >= 0.85 { "met" } else { "MISSED" },
            paired[index].iter().map(|r| format!("{r:.2}")).collect::<Vec<_>>().join(", "),
            if p99 <= 2.0 { "met" } else { "MISSED" },
        );
        ratios.insert(
            kind.to_owned(),
            json!({"throughput": throughput, "throughput_per_round": paired[index], "per_round_median": per_round, "p99": p99}),
        );
    }
    println!("idle host RSS {} KiB (P7 bar ≤ 15 MB)", idle_rss.map_or("?".to_owned(), |k| k.to_string()));
    write_result(
        "host-http.json",
        &json!({"benchmark": "P2", "servers": servers.iter().map(|s| s.0).collect::<Vec<_>>(), "results": medians,
                "ratios": ratios, "idle_rss_kib": idle_rss}),
    )
}

fn free_port() -> Result<String> {
    Ok(TcpListener::bind("127.0.0.1:0")?.local_addr()?.port().to_string())
}

/// P3.
#[allow(
    clippy::too_many_lines,
    reason = "a benchmark is one script: our host and the reference's in the same run, then the ratios"
)]
pub(crate) fn bench_mcp() -> Result<()> {
    build()?;
    let python = crate::setup()?.python;
    let fastmcp = path_arg(&workspace_root().join("xtask/bench/fastmcp_echo.py"));
    let call = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                      "params": {"name": "echo", "arguments": {"text": "hello"}}});
    let body = path_arg(&body_file("p3-call.json", &call)?);
    let stdio_call = json!({"jsonrpc": "2.0", "method": "tools/call",
                            "params": {"name": "echo", "arguments": {"text": "hello"}}})
    .to_string();
    let demo = path_arg(&release("demo_host"));
    let bare = path_arg(&release("bare_mcp"));
    let python_arg = path_arg(&python);
    let servers: [(&str, Vec<String>, Vec<String>); 3] = [
        (
            "skill host",
            vec![
                demo.clone(),
                "serve".into(),
                "mcp-http".into(),
                "--host".into(),
                "127.0.0.1".into(),
                "--port".into(),
                "0".into(),
                "--allow-anonymous".into(),
            ],
            vec![demo.clone(), "serve".into(), "mcp-stdio".into()],
        ),
        ("bare rmcp", vec![bare.clone(), "http".into()], vec![bare.clone(), "stdio".into()]),
        (
            "fastmcp",
            vec![python_arg.clone(), fastmcp.clone(), "http".into()],
            vec![python_arg, fastmcp, "stdio".into()],
        ),
    ];
    let mut http_runs: Vec<Vec<Value>> = vec![Vec::new(); 3];
    let mut stdio_runs: Vec<Vec<Value>> = vec![Vec::new(); 3];
    for round in 0..ROUNDS {
        for (index, (name, http_command, stdio_command)) in servers.iter().enumerate() {
            let mut command = Command::new(&http_command[0]);
            command.args(&http_command[1..]).env("SKILL_LOG", "warn");
            let server = if *name == "fastmcp" {
                let port = free_port()?;
                command.arg(&port);
                let server = Server {
                    child: command.stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::null()).spawn()?,
                    address: format!("127.0.0.1:{port}"),
                };
                wait_for_port(&server.address)?;
                server
            } else {
                Server::start(&mut command)?
            };
            let args = [
                "http",
                &server.address,
                "/mcp",
                &body,
                "--header",
                "Accept: application/json, text/event-stream",
                "--connections",
                "16",
            ];
            load(&[&args[..], &["--seconds", "1"]].concat(), &[])?;
            let result = load(&[&args[..], &["--seconds", SECONDS]].concat(), &[])?;
            println!("    round {} {name} http: {result}", round + 1);
            http_runs[index].push(result);
            drop(server);

            let mut args: Vec<&str> = vec!["stdio", "--concurrency", "16", "--seconds", SECONDS, "--"];
            args.extend(stdio_command.iter().map(String::as_str));
            let result = load(&args, &[("LOAD_STDIO_CALL", &stdio_call), ("SKILL_LOG", "warn")])?;
            println!("    round {} {name} stdio: {result}", round + 1);
            stdio_runs[index].push(result);
        }
    }
    let http: Vec<Value> = http_runs.into_iter().map(median_by_rps).collect();
    let stdio: Vec<Value> = stdio_runs.into_iter().map(median_by_rps).collect();
    println!("\nP3: tools/call echo, 16 in flight, median of {ROUNDS} rounds of {SECONDS} s");
    println!("{:<34} {:>10} {:>9} {:>9}", "server", "calls/s", "p50 µs", "p99 µs");
    let mut ratios = serde_json::Map::new();
    for (transport, runs) in [("streamable http", &http), ("stdio", &stdio)] {
        for (index, (name, _, _)) in servers.iter().enumerate() {
            row(&format!("{name} ({transport})"), &runs[index]);
        }
        let vs_rmcp = ratio(&runs[0], &runs[1], "rps");
        let vs_fastmcp = ratio(&runs[0], &runs[2], "rps");
        println!(
            "  {transport}: {vs_rmcp:.3} of bare rmcp (bar ≥ 0.85: {}), {vs_fastmcp:.1}× fastmcp (bar ≥ 10: {})",
            if vs_rmcp >= 0.85 { "met" } else { "MISSED" },
            if vs_fastmcp >= 10.0 { "met" } else { "MISSED" }
        );
        ratios.insert(transport.to_owned(), json!({"of_bare_rmcp": vs_rmcp, "times_fastmcp": vs_fastmcp}));
    }
    let names: Vec<&str> = servers.iter().map(|(n, _, _)| *n).collect();
    write_result(
        "host-mcp.json",
        &json!({"benchmark": "P3", "servers": names, "http": http, "stdio": stdio, "ratios": ratios}),
    )
}

fn wait_for_port(address: &str) -> Result<()> {
    for _ in 0..200 {
        if std::net::TcpStream::connect(address).is_ok() {
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    bail!("nothing listens on {address} after 10 s")
}
