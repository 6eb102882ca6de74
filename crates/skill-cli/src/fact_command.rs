//! `skill-sdk fact send`: a fact recorded in a core, as a person or a script sends what happened
//! (`facts.write` in the workspace). The same workspace, kind, key and data again is the same
//! fact; other data under its key is refused (`fact_conflict`). With `--wait`, it waits until
//! the rules evaluated it and prints what each made of it.
//!
//! Exit codes: 0 recorded (or recorded before, the same), 1 refused, 2 a usage error, 3 not
//! evaluated yet when `--wait` ran out.

use std::process::ExitCode;
use std::time::{Duration, Instant};

use clap::{Args, Subcommand};
use serde_json::{Value, json};
use skill_api::FactRequest;
use skill_client::{Client, ClientError};

#[derive(Debug, Subcommand)]
pub enum FactCommand {
    /// Record a fact: what happened, once per workspace, kind and key.
    #[command(after_help = "The token is read from SKILL_CORE_TOKEN (a token with facts.write in the \
        workspace). Prints the fact (with `\"recorded\": false` when the same fact was recorded before) and, \
        with --wait, each rule's evaluation; exit codes: 0 recorded, 1 refused, 2 usage, 3 not evaluated \
        within --wait.\n\nExample:\n  skill-sdk fact send --workspace claims --kind claim.received --key message-7 \\\n    \
        --data '{\"claim\": \"C-1002\", \"text\": \"My parcel has not arrived.\"}' --wait 10")]
    Send(SendArgs),
}

#[derive(Debug, Args)]
pub struct SendArgs {
    /// The workspace (its key or id).
    #[arg(long)]
    workspace: String,
    /// The kind of fact: a-z 0-9 . _ - (claim.received).
    #[arg(long)]
    kind: String,
    /// What makes the fact one (a message's id, an order number).
    #[arg(long)]
    key: String,
    /// What happened: JSON, or @FILE to read it from a file.
    #[arg(long, value_name = "JSON|@FILE")]
    data: String,
    /// When it happened (RFC 3339); now when absent.
    #[arg(long, value_name = "TIME")]
    occurred_at: Option<String>,
    /// Where it comes from (email, crm, …).
    #[arg(long)]
    source: Option<String>,
    /// Seconds to wait until the rules evaluated it (0: do not wait).
    #[arg(long, value_name = "SECONDS", default_value_t = 0, value_parser = clap::value_parser!(u64).range(0..=600))]
    wait: u64,
    /// The core's address. The token is read from SKILL_CORE_TOKEN.
    #[arg(long, value_name = "URL", env = "SKILL_CORE_URL", default_value = "http://127.0.0.1:8700")]
    core: String,
}

#[allow(clippy::print_stderr)]
fn usage(message: &str) -> ExitCode {
    eprintln!("error: {message}");
    ExitCode::from(2)
}

/// `skill-sdk fact …`.
pub fn fact(command: FactCommand) -> ExitCode {
    match command {
        FactCommand::Send(args) => send(&args),
    }
}

#[allow(clippy::print_stdout, clippy::print_stderr)]
fn send(args: &SendArgs) -> ExitCode {
    let text = match args.data.strip_prefix('@') {
        Some(path) => match std::fs::read_to_string(path) {
            Ok(text) => text,
            Err(error) => return usage(&format!("--data: cannot read {path}: {error}")),
        },
        None => args.data.clone(),
    };
    let data: Value = match serde_json::from_str(&text) {
        Ok(data) => data,
        Err(error) => return usage(&format!("--data is not JSON: {error}")),
    };
    let Some(token) = std::env::var("SKILL_CORE_TOKEN").ok().filter(|token| !token.is_empty()) else {
        return usage("set SKILL_CORE_TOKEN to a token of the core with facts.write in the workspace");
    };
    let client = match Client::new(&args.core, token) {
        Ok(client) => client,
        Err(error) => return usage(&format!("--core: {error}")),
    };
    let request = FactRequest {
        workspace: args.workspace.clone(),
        kind: args.kind.clone(),
        key: args.key.clone(),
        data,
        occurred_at: args.occurred_at.clone(),
        source: args.source.clone(),
        caused_by_task: None,
    };
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("invariant: a runtime");
    runtime.block_on(async {
        let (mut fact, recorded) = match client.record_fact(&request).await {
            Ok(answer) => answer,
            Err(error) => return refused(&error),
        };
        let deadline = Instant::now() + Duration::from_secs(args.wait);
        let mut pause = Duration::from_millis(50);
        // Evaluated, and every evaluation ended (not matched, done, failed, expired).
        let settled = |fact: &skill_api::FactOut| {
            fact.evaluated_at.is_some()
                && fact.evaluations.iter().all(|e| !matches!(e.status.as_str(), "matched" | "waiting"))
        };
        if args.wait > 0 {
            loop {
                fact = match client.fact(&fact.id).await {
                    Ok(fact) => fact,
                    Err(error) => return refused(&error),
                };
                if settled(&fact) || Instant::now() >= deadline {
                    break;
                }
                tokio::time::sleep(pause.min(deadline.saturating_duration_since(Instant::now()))).await;
                pause = (pause * 2).min(Duration::from_millis(500));
            }
        }
        let mut printed = serde_json::to_value(&fact).expect("invariant: JSON serializes");
        printed["recorded"] = json!(recorded);
        println!("{}", serde_json::to_string_pretty(&printed).expect("invariant: JSON serializes"));
        if args.wait > 0 && !settled(&fact) {
            eprintln!("the rules have not finished with the fact after {} s", args.wait);
            return ExitCode::from(3);
        }
        ExitCode::SUCCESS
    })
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
