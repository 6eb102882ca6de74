//! What the core benchmark and the fault run share: the release binaries, tokens for the three
//! roles, and publishing one of the demo host's skills.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use anyhow::{Context, Result, bail};
use serde_json::{Value, json};

use crate::{run, target_dir};

pub(crate) fn release(path: &str) -> PathBuf {
    target_dir().join("release").join(path)
}

/// A child process, killed when dropped.
pub(crate) struct Process(Child);

impl Process {
    /// `command` started, killed when dropped.
    pub(crate) fn spawned(command: &mut Command) -> Result<Self> {
        Ok(Self(command.stdin(Stdio::null()).spawn()?))
    }

    pub(crate) fn id(&self) -> u32 {
        self.0.id()
    }

    /// Kills it at once (`kill -9`) and waits for it.
    pub(crate) fn kill(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Starts `command` with its standard error appended to `log`, and waits (at most 30 s) for a new
/// line holding `ready`, which it returns.
pub(crate) fn start(command: &mut Command, log: &Path, ready: &str) -> Result<(Process, String)> {
    let before = std::fs::read_to_string(log).map(|text| text.len()).unwrap_or(0);
    let file = std::fs::OpenOptions::new().create(true).append(true).open(log)?;
    let mut process = Process(command.stdin(Stdio::null()).stdout(Stdio::null()).stderr(file).spawn()?);
    for _ in 0..600 {
        let text = std::fs::read_to_string(log).unwrap_or_default();
        let new = text.get(before..).unwrap_or_default();
        if let Some(line) = new.lines().find(|line| line.contains(ready)) {
            return Ok((process, line.to_owned()));
        }
        if let Some(status) = process.0.try_wait()? {
            bail!("{command:?} exited ({status}): {new}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    bail!("{command:?} did not get ready within 30 s")
}

/// Runs `command` and returns its standard output, trimmed; its standard error when it fails.
pub(crate) fn output(command: &mut Command) -> Result<String> {
    let output = command.output().with_context(|| format!("running {command:?}"))?;
    if !output.status.success() {
        bail!("{command:?} failed: {}", String::from_utf8_lossy(&output.stderr));
    }
    Ok(String::from_utf8_lossy(&output.stdout).trim().to_owned())
}

/// Builds `skill-core`, the load generator and the demo host in release mode, with `more` cargo
/// arguments.
pub(crate) fn build(step: &str, more: &[&str]) -> Result<()> {
    let mut cargo = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
    cargo.args(["build", "--release", "--quiet", "-p", "skill-core", "--bin", "skill-core", "--example", "core_load"]);
    cargo.args(["-p", "skill-host", "--example", "demo_host"]).args(more);
    run(step, &mut cargo)
}

/// Tokens of an operator (`org.manage`), a caller (`skills.invoke`) and an executor
/// (`skills.execute`, allowed the demo host's skills), made straight in the database `db`.
pub(crate) struct Tokens {
    pub(crate) admin: String,
    pub(crate) caller: String,
    pub(crate) executor: String,
}

impl Tokens {
    pub(crate) fn create(db: &str) -> Result<Self> {
        Self::create_with(&release("skill-core"), db)
    }

    /// [`Tokens::create`] by the core binary `core` (another build's, for a comparison).
    pub(crate) fn create_with(core: &Path, db: &str) -> Result<Self> {
        let token = |name: &str, kind: &str, grant: &str| {
            output(
                Command::new(core)
                    .args(["token", "create", "--db", db, "--name", name, "--kind", kind, "--grant", grant]),
            )
        };
        let tokens = Self {
            admin: token("admin", "person", "org.manage")?,
            caller: token("caller", "person", "skills.invoke")?,
            executor: token("runner", "executor", "skills.execute")?,
        };
        // The operator allows the runner the demo host's skills, and nothing more.
        output(Command::new(core).args([
            "allow",
            "--db",
            db,
            "--principal",
            "runner",
            "--protocol",
            "local",
            "--local",
            "demo_host",
        ]))?;
        Ok(tokens)
    }
}

/// A person's token named `name` holding `grants`, made straight in the database `db`.
pub(crate) fn person_token(db: &str, name: &str, grants: &[&str]) -> Result<String> {
    let mut command = Command::new(release("skill-core"));
    command.args(["token", "create", "--db", db, "--name", name]);
    for grant in grants {
        command.args(["--grant", grant]);
    }
    output(&mut command)
}

/// A loopback address nothing listens on now, to serve on.
pub(crate) fn free_listen() -> Result<String> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?.to_string())
}

/// Publishes the demo host's `name@version` (its contract as the host prints it) to the core at
/// `url`.
pub(crate) fn publish_demo(url: &str, admin: &str, reference: &str) -> Result<()> {
    let contract = output(Command::new(release("examples/demo_host")).args(["contract", reference]))?;
    let (name, version) = reference.split_once('@').context("name@version")?;
    let body = json!({"name": name, "version": version, "description": "A demo skill.", "sideEffects": "none",
                      "riskLevel": "low", "contract": serde_json::from_str::<Value>(&contract)?});
    let published = output(Command::new("curl").args([
        "-s",
        "-X",
        "POST",
        "-H",
        &format!("Authorization: Bearer {admin}"),
        "-H",
        "Content-Type: application/json",
        "-d",
        &body.to_string(),
        &format!("{url}/api/v1/skills"),
    ]))?;
    if !published.contains("\"id\"") {
        bail!("publishing {reference} failed: {published}");
    }
    Ok(())
}
