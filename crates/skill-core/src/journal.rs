//! `skill-core journal keygen | export | verify | explain` and the serve flags of the journal's
//! checkpoints (`docs/journal.md`).

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use skill_journal::audit::{self, Class, Report};
use skill_journal::export::{CHECKPOINTS_FILE, ENTRIES_FILE, ExportedCheckpoint, ExportedEntry, KEY_FILE};
use skill_journal::{Checkpoint, Signer, Verifier};
use skill_store::Store;

use crate::Db;
use crate::folders::{new_file, new_folder};

/// The exit code of `verify` when the record does not hold together (a changed, missing or moved
/// entry, a cut tail, a checkpoint that does not verify).
pub(crate) const TAMPERED: u8 = 2;
/// The exit code of `verify` when the record holds but a write in it broke a rule.
pub(crate) const RULE_BROKEN: u8 = 3;

/// The journal's checkpoints on `serve`.
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct JournalArgs {
    /// Sign a checkpoint of the journal at most every second (sooner every 256 entries) with the
    /// Ed25519 key in FILE (`skill-core journal keygen` makes one; readable by its owner only).
    /// Keep it apart from the database: whoever holds both can rewrite history unseen.
    #[arg(long = "journal-key", env = "SKILL_JOURNAL_KEY", value_name = "FILE")]
    pub(crate) key: Option<PathBuf>,
    /// Write each checkpoint signed to FILE (whole, then renamed into place): put it where the
    /// database's holders cannot write, and pass it to `journal verify --trust`.
    #[arg(long = "journal-send-file", env = "SKILL_JOURNAL_SEND_FILE", value_name = "FILE", requires = "key")]
    pub(crate) send_file: Option<PathBuf>,
    /// POST each checkpoint signed to URL as text/plain (a signed note); each send is recorded
    /// and shown on the console's journal page.
    #[arg(long = "journal-send-url", env = "SKILL_JOURNAL_SEND_URL", value_name = "URL", requires = "key")]
    pub(crate) send_url: Option<String>,
}

impl JournalArgs {
    /// The signing key and where checkpoints go.
    pub(crate) fn load(&self) -> Result<(Option<Signer>, skill_server::checkpoints::Sends)> {
        let sends = skill_server::checkpoints::Sends::new(self.send_file.clone(), self.send_url.as_deref())
            .map_err(|error| anyhow::anyhow!(error))?;
        let signer = match &self.key {
            None => None,
            Some(path) => Some(skill_server::checkpoints::read_key(path)?),
        };
        Ok((signer, sends))
    }
}

#[derive(Debug, clap::Subcommand)]
pub(crate) enum JournalCommand {
    /// Make a signing key: the private key goes to --out (readable by its owner only), the
    /// verifier key is printed, to pin wherever checkpoints are checked.
    Keygen {
        /// The log's name: the first line of each checkpoint and the key's name (no spaces, no
        /// `+`): a name of your own, such as claims.example.com/journal.
        #[arg(long, default_value = "skill-core/journal")]
        name: String,
        /// Where to write the private key (refused when it exists).
        #[arg(long, value_name = "FILE")]
        out: PathBuf,
    },
    /// Write the journal to a folder: its entries (key.txt, entries.jsonl, checkpoints.jsonl),
    /// for `journal verify` here or anywhere else.
    Export {
        #[command(flatten)]
        db: Db,
        /// The folder to write (created; refused when it holds an export already).
        #[arg(long, value_name = "DIR")]
        out: PathBuf,
    },
    /// Check an export offline: rebuild the tree, check every checkpoint's signature and root (and
    /// --trust's), then that every external write had a valid basis. Exit 0 when all holds, 2
    /// when the record was changed (the index named), 3 when a write broke a rule.
    Verify {
        /// The folder `journal export` wrote.
        dir: PathBuf,
        /// A checkpoint kept apart from the database (a file --journal-send-file wrote, or a
        /// note from GET /journal/checkpoint): the journal must extend it.
        #[arg(long, value_name = "FILE")]
        trust: Option<PathBuf>,
        /// The verifier key to check signatures with (`name+id+key`, or a file holding it);
        /// without it the export's own key.txt is used, which whoever wrote the export chose.
        #[arg(long, value_name = "KEY|FILE")]
        key: Option<String>,
    },
    /// Show what allowed an external write: the call, its basis, the decision and the person, with
    /// the entries' indices; writes a `.tlog-proof` file for each entry, verifiable offline with
    /// the journal's key.
    Explain {
        #[command(flatten)]
        db: Db,
        /// The call's id.
        invocation: String,
        /// Where to write the proofs (created).
        #[arg(long, value_name = "DIR")]
        out: Option<PathBuf>,
    },
}

pub(crate) async fn run(command: JournalCommand) -> Result<std::process::ExitCode> {
    match command {
        JournalCommand::Keygen { name, out } => keygen(&name, &out).map(|()| std::process::ExitCode::SUCCESS),
        JournalCommand::Export { db, out } => {
            let store = audited(&db).await?;
            export(&*store, &out).await?;
            Ok(std::process::ExitCode::SUCCESS)
        }
        JournalCommand::Verify { dir, trust, key } => verify(&dir, trust.as_deref(), key.as_deref()),
        JournalCommand::Explain { db, invocation, out } => {
            let store = audited(&db).await?;
            Ok(match crate::explain::explain(&*store, &invocation, out.as_deref()).await? {
                crate::explain::Record::Holds => std::process::ExitCode::SUCCESS,
                crate::explain::Record::Tampered => std::process::ExitCode::from(TAMPERED),
                crate::explain::Record::RuleBroken => std::process::ExitCode::from(RULE_BROKEN),
            })
        }
    }
}

/// The database `db` names, opened to be read as it is: it must exist (an audit never makes an
/// empty one), and nothing is caught up or written at open.
async fn audited(db: &Db) -> Result<std::sync::Arc<dyn Store>> {
    let postgres = db.db.starts_with("postgres://") || db.db.starts_with("postgresql://");
    if !postgres {
        let path = Path::new(db.db.strip_prefix("sqlite:").unwrap_or(&db.db));
        let file = if path.is_dir() { path.join(skill_store::SQLITE_FILE) } else { path.to_owned() };
        if !file.is_file() {
            bail!(
                "--db: no database at {} (a data folder holding {}, a .db file, or a postgres:// URL)",
                path.display(),
                skill_store::SQLITE_FILE
            );
        }
    }
    let options = skill_store::StoreOptions {
        max_connections: db.db_connections,
        journal_catch_up: false,
        ..skill_store::StoreOptions::default()
    };
    skill_store::open(&db.db, &options).await.context("opening the database")
}

fn keygen(name: &str, out: &Path) -> Result<()> {
    let signer = Signer::generate(name).map_err(|error| anyhow::anyhow!("--name: {error}"))?;
    let private = signer.private_text().map_err(|error| anyhow::anyhow!("{error}"))?;
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let mut file =
        options.open(out).with_context(|| format!("--out: cannot create {} (it must not exist)", out.display()))?;
    std::io::Write::write_all(&mut file, format!("{private}\n").as_bytes())?;
    eprintln!(
        "journal key written to {} (readable by you only; keep it apart from the database). Its verifier key:",
        out.display()
    );
    println!("{}", signer.verifier().text());
    Ok(())
}

/// How many leaves one read of the export takes.
const PAGE: u32 = 5_000;

async fn export(store: &dyn Store, out: &Path) -> Result<()> {
    new_folder(out, "--out")?;
    let checkpoints = store.journal_checkpoints(u32::MAX).await?;
    let key = checkpoints.first().map(|checkpoint| checkpoint.key.clone());
    let mut entries = std::io::BufWriter::new(new_file(&out.join(ENTRIES_FILE))?);
    let mut from = 0_u64;
    loop {
        let page = store.journal_leaves(from, PAGE).await?;
        let Some(last) = page.last() else { break };
        from = last.index + 1;
        for leaf in &page {
            let line = ExportedEntry {
                index: leaf.index,
                entry: leaf.entry.clone(),
                leaf_hash: leaf.hash,
                payload: leaf.payload.clone(),
                salt: leaf.salt.clone(),
            }
            .line();
            std::io::Write::write_all(&mut entries, format!("{line}\n").as_bytes())?;
        }
    }
    std::io::Write::flush(&mut entries)?;
    let mut lines = String::new();
    for checkpoint in checkpoints.iter().rev() {
        let exported = ExportedCheckpoint {
            size: checkpoint.size,
            signed_at: checkpoint.signed_at.to_rfc3339(),
            note: checkpoint.note.clone(),
        };
        lines.push_str(&exported.line());
        lines.push('\n');
    }
    std::io::Write::write_all(&mut new_file(&out.join(CHECKPOINTS_FILE))?, lines.as_bytes())?;
    match key {
        Some(key) => std::io::Write::write_all(&mut new_file(&out.join(KEY_FILE))?, format!("{key}\n").as_bytes())?,
        None => eprintln!("the journal has no signed checkpoint yet: the export has no key.txt"),
    }
    eprintln!("{} entries and {} checkpoints written to {}", from, checkpoints.len(), out.display());
    Ok(())
}

/// A verifier key given as text, or as a file holding it.
fn verifier_of(given: &str) -> Result<Verifier> {
    let text = if Path::new(given).is_file() { bounded(Path::new(given), "--key")? } else { given.to_owned() };
    if text.trim().starts_with("PRIVATE+KEY+") {
        bail!("--key: this is a signing key; give its verifier key (`name+id+key`, as keygen printed it)");
    }
    Verifier::parse(text.trim()).map_err(|error| anyhow::anyhow!("--key: {error}"))
}

/// A small text file (a key, a note): refused when it is not a regular file or is over 64 KiB.
fn bounded(path: &Path, flag: &str) -> Result<String> {
    let metadata = std::fs::metadata(path).with_context(|| format!("{flag}: cannot read {}", path.display()))?;
    if !metadata.is_file() || metadata.len() > 64 * 1024 {
        bail!("{flag}: {} is not a file of at most 64 KiB", path.display());
    }
    std::fs::read_to_string(path).with_context(|| format!("{flag}: cannot read {}", path.display()))
}

fn verify(dir: &Path, trust: Option<&Path>, key: Option<&str>) -> Result<std::process::ExitCode> {
    let key = match key {
        Some(given) => verifier_of(given)?,
        None => {
            let path = dir.join(KEY_FILE);
            let text = std::fs::read_to_string(&path).with_context(|| {
                format!("no --key and no {}: nothing to check the checkpoints with", path.display())
            })?;
            eprintln!("checking signatures with the export's own key (pin yours with --key)");
            Verifier::parse(text.trim()).map_err(|error| anyhow::anyhow!("{}: {error}", path.display()))?
        }
    };
    let read = |name: &str| -> Result<String> {
        let path = dir.join(name);
        std::fs::read_to_string(&path).with_context(|| format!("cannot read {}", path.display()))
    };
    // The entries are read a line at a time: an export of millions is never held whole.
    let path = dir.join(ENTRIES_FILE);
    let file = std::fs::File::open(&path).with_context(|| format!("cannot read {}", path.display()))?;
    let mut audit = audit::Audit::new();
    for (number, line) in std::io::BufRead::lines(std::io::BufReader::with_capacity(1 << 20, file)).enumerate() {
        let line = line.with_context(|| format!("cannot read {}", path.display()))?;
        let taken = match ExportedEntry::parse(&line) {
            Ok(exported) => audit.entry(&exported),
            Err(error) => audit.unreadable(number as u64, &format!("{ENTRIES_FILE} line {}: {error}", number + 1)),
        };
        if !taken {
            break;
        }
    }
    let mut checkpoints = Vec::new();
    for (number, line) in read(CHECKPOINTS_FILE)?.lines().enumerate() {
        checkpoints.push(
            ExportedCheckpoint::parse(line)
                .map_err(|error| anyhow::anyhow!("{CHECKPOINTS_FILE} line {}: {error}", number + 1))?,
        );
    }
    let trusted = match trust {
        Some(path) => Some(bounded(path, "--trust")?),
        None => None,
    };
    let report = audit.finish(&key, &checkpoints, trusted.as_deref());
    Ok(print_report(&report, trusted.is_some()))
}

fn print_report(report: &Report, trusted: bool) -> std::process::ExitCode {
    for finding in &report.findings {
        let at = finding.index.map_or_else(String::new, |index| format!("index {index}: "));
        println!("{at}{} ({})", finding.message, finding.code);
    }
    let latest: Option<&Checkpoint> = report.checkpoints.last();
    if report.findings.iter().any(|finding| finding.class == Class::Tampered) {
        eprintln!("the journal was changed: {} finding(s)", report.findings.len());
        return std::process::ExitCode::from(TAMPERED);
    }
    if !report.findings.is_empty() {
        eprintln!("the journal holds together, but {} write(s) broke a rule", report.findings.len());
        return std::process::ExitCode::from(RULE_BROKEN);
    }
    println!(
        "{} entries verified{}; {} checkpoint(s) hold{}; {} external write(s), each with a valid basis",
        report.entries,
        latest.map_or_else(String::new, |checkpoint| format!(" (the latest checkpoint signs {})", checkpoint.size)),
        report.checkpoints.len(),
        if trusted { ", and the journal extends the trusted one" } else { "" },
        report.writes.len()
    );
    if report.unsigned() > 0 {
        println!(
            "{} entries after the latest checkpoint are not signed yet: they hold together, but nothing outside \
             the database vouches for them",
            report.unsigned()
        );
    }
    if !report.unhashed.is_empty() {
        let shown: Vec<String> = report.unhashed.iter().take(20).map(u64::to_string).collect();
        println!(
            "{} entries had no leaf hash stored (appended by SQL, not completed yet): index {}{}",
            report.unhashed.len(),
            shown.join(", "),
            if report.unhashed.len() > 20 { ", …" } else { "" }
        );
    }
    if !report.erased.is_empty() {
        let shown: Vec<String> = report.erased.iter().take(20).map(u64::to_string).collect();
        println!(
            "{} payload(s) erased (their entries still prove them): index {}{}",
            report.erased.len(),
            shown.join(", "),
            if report.erased.len() > 20 { ", …" } else { "" }
        );
    }
    std::process::ExitCode::SUCCESS
}
