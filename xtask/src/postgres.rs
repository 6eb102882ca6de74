//! A throwaway PostgreSQL server for the tests: installed from Debian's packages when missing,
//! initialised in a temporary folder, listening on a free loopback port, stopped and removed when
//! dropped.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};

use crate::run;

/// A running server; its URL reaches the `postgres` superuser's `postgres` database.
pub(crate) struct Postgres {
    bin: PathBuf,
    root: PathBuf,
    data: PathBuf,
    pub(crate) url: String,
}

impl Postgres {
    /// Installs (if needed), initialises and starts a server for tests (fsync off).
    pub(crate) fn start() -> Result<Self> {
        Self::start_with(false)
    }

    /// [`Postgres::start`] with every commit flushed to disk, for benchmarks.
    pub(crate) fn start_durable() -> Result<Self> {
        Self::start_with(true)
    }

    fn start_with(durable: bool) -> Result<Self> {
        let bin = match find_bin() {
            Some(bin) => bin,
            None => {
                crate::apt_install("PostgreSQL", &["postgresql"])?;
                find_bin().context("PostgreSQL was installed but its programs are not in /usr/lib/postgresql")?
            }
        };
        // A folder every user can reach, since as root the server runs as `postgres`.
        let root = std::env::temp_dir().join(format!("skill-postgres-{}", std::process::id()));
        let data = root.join("data");
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(&data).with_context(|| format!("creating {}", data.display()))?;
        hand_over(&root)?;
        let port = free_port()?;
        run(
            "initialise a PostgreSQL cluster",
            as_owner(&bin.join("initdb"))
                .args(["--auth=trust", "--username=postgres", "--encoding=UTF8", "--no-sync", "-D"])
                .arg(&data)
                .stdout(std::process::Stdio::null()),
        )?;
        let fsync = if durable { "on" } else { "off" };
        let options = format!(
            "-p {port} -k {} -c listen_addresses=127.0.0.1 -c fsync={fsync} -c max_connections=200 \
             -c shared_preload_libraries=pg_stat_statements",
            root.display()
        );
        run(
            "start PostgreSQL",
            as_owner(&bin.join("pg_ctl"))
                .args(["-w", "-s", "-l"])
                .arg(root.join("server.log"))
                .args(["-D"])
                .arg(&data)
                .args(["-o", &options, "start"]),
        )?;
        Ok(Self { bin, root, data, url: format!("postgres://postgres@127.0.0.1:{port}/postgres") })
    }
}

impl Postgres {
    /// A new database `name` on the server; its URL.
    pub(crate) fn database(&self, name: &str) -> Result<String> {
        run(
            "create a database",
            Command::new(self.bin.join("psql")).args([&self.url, "-q", "-c", &format!("CREATE DATABASE {name}")]),
        )?;
        let (base, _) = self.url.rsplit_once('/').context("a URL with a database")?;
        Ok(format!("{base}/{name}"))
    }

    /// `pgbench -N` (simple updates) TPS with 8 clients for 10 s on a fresh scale-10 database.
    pub(crate) fn pgbench_simple_update(&self) -> Result<f64> {
        self.database("pgbench")?;
        let pgbench = self.bin.join("pgbench");
        // host:port from postgres://postgres@HOST:PORT/postgres
        let address = self.url.split('@').nth(1).and_then(|rest| rest.split('/').next()).context("an address")?;
        let (host, port) = address.split_once(':').context("host:port")?;
        let connect = ["-h", host, "-p", port, "-U", "postgres"];
        run("initialise pgbench", Command::new(&pgbench).args(connect).args(["-i", "-q", "-s", "10", "pgbench"]))?;
        let output =
            Command::new(&pgbench).args(connect).args(["-N", "-c", "8", "-j", "2", "-T", "10", "pgbench"]).output()?;
        let text = String::from_utf8_lossy(&output.stdout);
        text.lines()
            .find_map(|line| line.strip_prefix("tps = "))
            .and_then(|rest| rest.split_whitespace().next())
            .and_then(|tps| tps.parse().ok())
            .with_context(|| format!("no tps in pgbench's output: {text}"))
    }
}

impl Drop for Postgres {
    fn drop(&mut self) {
        let _ =
            as_owner(&self.bin.join("pg_ctl")).args(["-s", "-m", "fast", "-D"]).arg(&self.data).arg("stop").status();
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

fn find_bin() -> Option<PathBuf> {
    let mut versions: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .ok()?
        .filter_map(|entry| entry.ok().map(|entry| entry.path().join("bin")))
        .filter(|bin| bin.join("initdb").exists())
        .collect();
    versions.sort();
    versions.pop()
}

fn is_root() -> bool {
    rustix::process::geteuid().is_root()
}

/// PostgreSQL refuses to run as root: as root, its programs run as the `postgres` user.
fn as_owner(program: &Path) -> Command {
    if is_root() {
        let mut command = Command::new("runuser");
        command.args(["-u", "postgres", "--"]).arg(program);
        command
    } else {
        Command::new(program)
    }
}

fn hand_over(root: &Path) -> Result<()> {
    if !is_root() {
        return Ok(());
    }
    let status = Command::new("chown").args(["-R", "postgres:postgres"]).arg(root).status()?;
    if !status.success() {
        bail!("cannot give {} to the postgres user", root.display());
    }
    Ok(())
}

fn free_port() -> Result<u16> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").context("finding a free port")?;
    Ok(listener.local_addr()?.port())
}
