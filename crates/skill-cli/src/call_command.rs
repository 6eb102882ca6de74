//! `skill-sdk call` and `skill-sdk calls`: a skill called through a core, as a person tries it,
//! and the recent calls.
//!
//! Exit codes of `call`: 0 the call succeeded (or was accepted, with `--wait 0`); 1 it failed, was
//! cancelled, or the core refused it; 2 a usage error; 3 still pending or running when `--wait`
//! ran out (the printed id reads it later).

use std::process::ExitCode;
use std::time::{Duration, Instant};

use clap::Args;
use serde_json::{Value, json};
use skill_api::{InvocationOut, InvocationQuery, InvokeRequest};
use skill_client::{Client, ClientError};

#[derive(Debug, Args)]
#[command(after_help = "The token is read from SKILL_CORE_TOKEN (a token with skills.invoke). Prints \
    {\"invocationId\", \"status\", \"outputs\", \"cost\"} when the call succeeds, {\"invocationId\", \"status\", \
    \"error\"} when it fails; exit codes: 0 succeeded, 1 failed or refused, 2 usage, 3 still running after --wait.")]
pub struct CallArgs {
    /// The skill version: name@version (or an id).
    #[arg(value_name = "NAME@VERSION")]
    skill: String,
    /// The inputs: a JSON object, or @FILE to read it from a file.
    #[arg(long, value_name = "JSON|@FILE", default_value = "{}")]
    input: String,
    /// Names the call: the same key and inputs again answer the same call, never a second one.
    #[arg(long, value_name = "KEY")]
    idempotency_key: Option<String>,
    /// Seconds to wait for the call to end (0: print the accepted call and return).
    #[arg(long, value_name = "SECONDS", default_value_t = 30, value_parser = clap::value_parser!(u64).range(0..=3600))]
    wait: u64,
    #[command(flatten)]
    core: CoreArgs,
}

#[derive(Debug, Args)]
pub struct CallsArgs {
    /// Only calls in this status: pending, running, succeeded, failed, cancelled.
    #[arg(long)]
    status: Option<String>,
    /// Only calls of this version (name@version or an id).
    #[arg(long, value_name = "NAME@VERSION")]
    skill: Option<String>,
    /// How many, newest first (1 to 200).
    #[arg(long, default_value_t = 20)]
    limit: u32,
    /// Print the page as JSON.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    core: CoreArgs,
}

#[derive(Debug, Args)]
struct CoreArgs {
    /// The core's address. The token is read from SKILL_CORE_TOKEN.
    #[arg(long, value_name = "URL", env = "SKILL_CORE_URL", default_value = "http://127.0.0.1:8700")]
    core: String,
}

impl CoreArgs {
    fn client(&self) -> Result<Client, ExitCode> {
        let Some(token) = std::env::var("SKILL_CORE_TOKEN").ok().filter(|token| !token.is_empty()) else {
            eprintln_usage(
                "set SKILL_CORE_TOKEN to a token of the core (skill-core token create --grant skills.invoke)",
            );
            return Err(ExitCode::from(2));
        };
        Client::new(&self.core, token).map_err(|error| {
            eprintln_usage(&format!("--core: {error}"));
            ExitCode::from(2)
        })
    }
}

#[allow(clippy::print_stderr)]
fn eprintln_usage(message: &str) {
    eprintln!("error: {message}");
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread().enable_all().build().expect("invariant: a runtime starts")
}

/// `skill-sdk call`.
#[allow(clippy::print_stdout, clippy::print_stderr)]
pub fn call(args: CallArgs) -> ExitCode {
    let inputs = match read_object(&args.input) {
        Ok(inputs) => inputs,
        Err(message) => {
            eprintln_usage(&format!("--input: {message}"));
            return ExitCode::from(2);
        }
    };
    let client = match args.core.client() {
        Ok(client) => client,
        Err(code) => return code,
    };
    let request = InvokeRequest {
        inputs: Some(inputs),
        idempotency_key: args.idempotency_key.clone(),
        ..InvokeRequest::default()
    };
    runtime().block_on(async {
        let call = match client.invoke(&args.skill, &request).await {
            Ok((call, _)) => call,
            Err(error) => return refused(&error),
        };
        let deadline = Instant::now() + Duration::from_secs(args.wait);
        let mut call = call;
        let mut pause = Duration::from_millis(50);
        while args.wait > 0 && matches!(call.status.as_str(), "pending" | "running") && Instant::now() < deadline {
            tokio::time::sleep(pause.min(deadline.saturating_duration_since(Instant::now()))).await;
            pause = (pause * 2).min(Duration::from_millis(500));
            call = match client.invocation(&call.id).await {
                Ok(call) => call,
                Err(error) => return refused(&error),
            };
        }
        let (printed, code) = outcome(&call, args.wait == 0);
        println!("{}", serde_json::to_string_pretty(&printed).expect("invariant: JSON serializes"));
        if code == 3 {
            let why = call.waiting.as_ref().map_or_else(String::new, |waiting| format!(": {}", waiting.message));
            eprintln!("the call is still {} after {} s{why}", call.status, args.wait);
        }
        ExitCode::from(code)
    })
}

/// What `call` prints for `call`, and its exit code.
fn outcome(call: &InvocationOut, accepted_is_enough: bool) -> (Value, u8) {
    match call.status.as_str() {
        "succeeded" => {
            (json!({"invocationId": call.id, "status": call.status, "outputs": call.output, "cost": call.cost}), 0)
        }
        "failed" | "cancelled" => (json!({"invocationId": call.id, "status": call.status, "error": call.error}), 1),
        _ => {
            let printed = json!({"invocationId": call.id, "status": call.status, "waiting": call.waiting});
            (printed, if accepted_is_enough { 0 } else { 3 })
        }
    }
}

#[allow(clippy::print_stdout)]
fn refused(error: &ClientError) -> ExitCode {
    let printed = match error.api() {
        Some(api) => json!({"error": {"code": api.code(), "message": api.body.message, "details": api.body.details}}),
        None => json!({"error": {"code": "core_unavailable", "message": error.to_string()}}),
    };
    println!("{}", serde_json::to_string_pretty(&printed).expect("invariant: JSON serializes"));
    ExitCode::FAILURE
}

/// `skill-sdk calls`.
#[allow(clippy::print_stdout, clippy::print_stderr)]
pub fn calls(args: CallsArgs) -> ExitCode {
    let client = match args.core.client() {
        Ok(client) => client,
        Err(code) => return code,
    };
    let query = InvocationQuery {
        status: args.status.clone(),
        skill: args.skill.clone(),
        limit: Some(args.limit),
        ..InvocationQuery::default()
    };
    runtime().block_on(async {
        let page = match client.invocations(&query).await {
            Ok(page) => page,
            Err(error) => return refused(&error),
        };
        if args.json {
            println!("{}", serde_json::to_string_pretty(&page).expect("invariant: JSON serializes"));
            return ExitCode::SUCCESS;
        }
        if page.items.is_empty() {
            eprintln!("no calls");
        }
        for call in &page.items {
            println!("{}", line(call));
        }
        ExitCode::SUCCESS
    })
}

/// One call on one line: id, when, version, status, attempt, and why it failed or waits.
fn line(call: &InvocationOut) -> String {
    let why = match (&call.error, &call.waiting) {
        (_, Some(waiting)) => format!("waiting: {}", waiting.reason),
        (Some(error), None) => error.code.clone(),
        (None, None) => String::new(),
    };
    format!(
        "{}  {}  {}@{}  {:<9}  {}/{}  {}",
        call.id,
        call.created_at.get(..19).unwrap_or(&call.created_at),
        call.skill.name,
        call.skill.version,
        call.status,
        call.attempt,
        call.max_attempts,
        why
    )
    .trim_end()
    .to_owned()
}

/// A JSON object from `text`, or from the file `@path`.
fn read_object(text: &str) -> Result<serde_json::Map<String, Value>, String> {
    let text = match text.strip_prefix('@') {
        Some(path) => std::fs::read_to_string(path).map_err(|error| format!("cannot read {path}: {error}"))?,
        None => text.to_owned(),
    };
    match serde_json::from_str(&text) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(_) => Err("the inputs are a JSON object".to_owned()),
        Err(error) => Err(format!("not JSON: {error}")),
    }
}
