//! The load generator of benchmarks P2 and P3 (`cargo xtask bench http|mcp`): keeps N requests
//! in flight against a server for a while and prints one JSON line with the request rate and the
//! latency percentiles.
//!
//! ```text
//! load http  <host:port> <path> <body-file> [--header "Name: value"]... [--connections 64] [--seconds 8]
//! load stdio [--concurrency 16] [--seconds 8] -- <server command>...
//! ```
//!
//! `http` speaks HTTP/1.1 with keep-alive over plain sockets (one request at a time per
//! connection); `stdio` starts an MCP server, initializes it, and pipelines `tools/call` requests
//! (read from the body file `LOAD_STDIO_CALL`, a JSON-RPC request without `id`).

#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::process::Stdio;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;

struct Options {
    positional: Vec<String>,
    headers: Vec<String>,
    connections: usize,
    seconds: f64,
    command: Vec<String>,
}

fn parse() -> Options {
    let mut options = Options { positional: vec![], headers: vec![], connections: 64, seconds: 8.0, command: vec![] };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--header" => options.headers.push(args.next().expect("--header VALUE")),
            "--connections" | "--concurrency" => {
                options.connections = args.next().and_then(|v| v.parse().ok()).expect("a count");
            }
            "--seconds" => options.seconds = args.next().and_then(|v| v.parse().ok()).expect("seconds"),
            "--" => options.command = args.by_ref().collect(),
            _ => options.positional.push(arg),
        }
    }
    options
}

/// Latencies in microseconds, and failures.
#[derive(Default)]
struct Tally {
    latencies: Vec<u32>,
    failures: u64,
}

fn report(mut tally: Tally, elapsed: Duration) {
    tally.latencies.sort_unstable();
    let at = |q: f64| -> u32 {
        if tally.latencies.is_empty() {
            return 0;
        }
        let index = ((tally.latencies.len() as f64 - 1.0) * q).round() as usize;
        tally.latencies[index]
    };
    let count = tally.latencies.len();
    let line = json!({
        "requests": count,
        "failures": tally.failures,
        "seconds": elapsed.as_secs_f64(),
        "rps": count as f64 / elapsed.as_secs_f64(),
        "p50_us": at(0.50),
        "p99_us": at(0.99),
    });
    println!("{line}");
}

/// Reads one HTTP/1.1 response; returns its status.
async fn read_response(stream: &mut TcpStream, buffer: &mut Vec<u8>) -> std::io::Result<u16> {
    let header_end = loop {
        if let Some(end) = buffer.windows(4).position(|w| w == b"\r\n\r\n") {
            break end + 4;
        }
        let mut chunk = [0u8; 8192];
        let read = stream.read(&mut chunk).await?;
        if read == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        buffer.extend_from_slice(&chunk[..read]);
    };
    let head = String::from_utf8_lossy(&buffer[..header_end]).to_ascii_lowercase();
    let status: u16 = head.split(' ').nth(1).and_then(|s| s.parse().ok()).unwrap_or(0);
    let length: usize = head
        .lines()
        .find_map(|line| line.strip_prefix("content-length:"))
        .and_then(|v| v.trim().parse().ok())
        .ok_or_else(|| std::io::Error::other("a response without content-length"))?;
    while buffer.len() < header_end + length {
        let mut chunk = [0u8; 8192];
        let read = stream.read(&mut chunk).await?;
        if read == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        buffer.extend_from_slice(&chunk[..read]);
    }
    buffer.drain(..header_end + length);
    Ok(status)
}

async fn http_connection(address: String, request: Arc<Vec<u8>>, deadline: Instant) -> Tally {
    let mut tally = Tally::default();
    let mut stream = match TcpStream::connect(&address).await {
        Ok(stream) => stream,
        Err(_) => {
            tally.failures += 1;
            return tally;
        }
    };
    let _ = stream.set_nodelay(true);
    let mut buffer = Vec::with_capacity(16 * 1024);
    while Instant::now() < deadline {
        let started = Instant::now();
        if stream.write_all(&request).await.is_err() {
            tally.failures += 1;
            break;
        }
        match read_response(&mut stream, &mut buffer).await {
            Ok(200) => tally.latencies.push(started.elapsed().as_micros().min(u32::MAX as u128) as u32),
            Ok(_) => tally.failures += 1,
            Err(_) => {
                tally.failures += 1;
                break;
            }
        }
    }
    tally
}

async fn http(options: Options) {
    let [address, path, body_file] = &options.positional[1..] else {
        panic!("load http <host:port> <path> <body-file>");
    };
    let body = std::fs::read(body_file).expect("the body file");
    let mut request = format!("POST {path} HTTP/1.1\r\nHost: {address}\r\nContent-Type: application/json\r\n");
    for header in &options.headers {
        request.push_str(header);
        request.push_str("\r\n");
    }
    request.push_str(&format!("Content-Length: {}\r\n\r\n", body.len()));
    let mut request = request.into_bytes();
    request.extend_from_slice(&body);
    let request = Arc::new(request);

    let started = Instant::now();
    let deadline = started + Duration::from_secs_f64(options.seconds);
    let tasks: Vec<_> = (0..options.connections)
        .map(|_| tokio::spawn(http_connection(address.clone(), Arc::clone(&request), deadline)))
        .collect();
    let mut total = Tally::default();
    for task in tasks {
        let tally = task.await.expect("a connection task");
        total.latencies.extend(tally.latencies);
        total.failures += tally.failures;
    }
    report(total, started.elapsed());
}

async fn stdio(options: Options) {
    let call: Value = serde_json::from_str(&std::env::var("LOAD_STDIO_CALL").expect("LOAD_STDIO_CALL"))
        .expect("LOAD_STDIO_CALL is a JSON-RPC request");
    let (program, args) = options.command.split_first().expect("-- <server command>");
    let mut child = tokio::process::Command::new(program)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("the server starts");
    let mut stdin = child.stdin.take().expect("stdin");
    let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
    let initialize = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "load", "version": "1"}}});
    stdin.write_all(format!("{initialize}\n").as_bytes()).await.expect("initialize");
    lines.next_line().await.expect("reads").expect("the server answers initialize");
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    stdin.write_all(format!("{initialized}\n").as_bytes()).await.expect("initialized");

    let permits = Arc::new(tokio::sync::Semaphore::new(options.connections));
    let sent: Arc<std::sync::Mutex<std::collections::HashMap<u64, Instant>>> = Arc::default();
    let started = Instant::now();
    let deadline = started + Duration::from_secs_f64(options.seconds);
    let writer = {
        let (permits, sent) = (Arc::clone(&permits), Arc::clone(&sent));
        tokio::spawn(async move {
            let mut id = 1u64;
            while Instant::now() < deadline {
                // Closed when the reading side stops at the deadline.
                let Ok(permit) = permits.acquire().await else { break };
                permit.forget();
                let mut request = call.clone();
                request["id"] = json!(id);
                sent.lock().expect("lock").insert(id, Instant::now());
                if stdin.write_all(format!("{request}\n").as_bytes()).await.is_err() {
                    break;
                }
                id += 1;
            }
            stdin
        })
    };
    let mut tally = Tally::default();
    while let Ok(Some(line)) = tokio::time::timeout_at(deadline.into(), lines.next_line()).await.unwrap_or(Ok(None)) {
        let answer: Value = serde_json::from_str(&line).unwrap_or(Value::Null);
        let Some(id) = answer["id"].as_u64() else { continue };
        let Some(at) = sent.lock().expect("lock").remove(&id) else { continue };
        let ok = answer["result"]["isError"] != json!(true) && answer.get("result").is_some();
        if ok {
            tally.latencies.push(at.elapsed().as_micros().min(u32::MAX as u128) as u32);
        } else {
            tally.failures += 1;
        }
        permits.add_permits(1);
    }
    let elapsed = started.elapsed();
    permits.close();
    drop(writer.await);
    report(tally, elapsed);
}

fn main() {
    let options = parse();
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("a runtime");
    match options.positional.first().map(String::as_str) {
        Some("http") => runtime.block_on(http(options)),
        Some("stdio") => runtime.block_on(stdio(options)),
        _ => {
            eprintln!("usage: load http <host:port> <path> <body-file> [--header H]... | load stdio -- <command>...");
            std::process::exit(2);
        }
    }
}
