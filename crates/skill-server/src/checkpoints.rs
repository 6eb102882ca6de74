//! The journal's checkpoint signer beside the server (`docs/journal.md`): it signs a checkpoint
//! of the tree at most once a second when the tree grew — sooner once another 256 entries were
//! written through this core — and sends each one it signs outside the database, to a file and to
//! a webhook, so that a copy exists that whoever holds the database cannot rewrite. Before each
//! signing it reads the file back: the next checkpoint must extend it, whatever the database says.
//! Each send is recorded, and shown on the console's journal page. Nothing here is authoritative:
//! any number of cores sign, none a checkpoint that does not extend the ones known.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use skill_engine::Engine;
use skill_journal::{Checkpoint, Hash, Verifier};
use skill_store::CheckpointRow;

use crate::passes;

/// How often the signer looks, at most.
pub const SIGN_EVERY: Duration = Duration::from_secs(1);
/// How long a webhook has to answer.
const SEND_TIMEOUT: Duration = Duration::from_secs(5);

/// Where each new checkpoint is sent.
#[derive(Debug, Clone, Default)]
pub struct Sends {
    /// A file that always holds the latest checkpoint (written whole, then renamed into place).
    pub file: Option<PathBuf>,
    /// A URL each checkpoint is POSTed to as `text/plain` (a signed note).
    pub url: Option<reqwest::Url>,
}

impl Sends {
    /// The sends `file` and `url` name; an error naming the flag when the file cannot be written
    /// there or the URL is not http(s).
    pub fn new(file: Option<PathBuf>, url: Option<&str>) -> Result<Self, String> {
        if let Some(file) = &file {
            let folder =
                file.parent().filter(|folder| !folder.as_os_str().is_empty()).unwrap_or(std::path::Path::new("."));
            if !folder.is_dir() {
                return Err(format!(
                    "--journal-send-file: no folder {} to write {} in",
                    folder.display(),
                    file.display()
                ));
            }
            if file.is_dir() {
                return Err(format!("--journal-send-file: {} is a folder; name a file in it", file.display()));
            }
        }
        let url = match url {
            None => None,
            Some(text) => {
                // What is refused is described, not echoed: it may hold a password.
                let url =
                    reqwest::Url::parse(text).map_err(|error| format!("--journal-send-url: not a URL ({error})"))?;
                if !matches!(url.scheme(), "http" | "https") {
                    return Err(format!("--journal-send-url: an http:// or https:// URL, not {}://…", url.scheme()));
                }
                if !url.username().is_empty() || url.password().is_some() {
                    return Err("--journal-send-url: a URL without credentials in it (send them as the receiver \
                                allows, not in the URL)"
                        .to_owned());
                }
                Some(url)
            }
        };
        Ok(Self { file, url })
    }

    /// The checkpoint the file holds, when this core's `key` signed it: what the next one must
    /// extend, whatever the database says.
    fn kept(&self, key: &Verifier) -> Result<Option<(u64, Hash)>, String> {
        let Some(file) = &self.file else { return Ok(None) };
        let mut text = String::new();
        match std::fs::File::open(file) {
            Ok(opened) => {
                std::io::Read::read_to_string(&mut std::io::Read::take(opened, 64 * 1024), &mut text)
                    .map_err(|error| format!("cannot read {}: {error}", file.display()))?;
            }
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(error) => return Err(format!("cannot read {}: {error}", file.display())),
        }
        let body = key
            .open(&text)
            .map_err(|error| format!("{} does not verify with this core's key: {error}", file.display()))?;
        let checkpoint = Checkpoint::parse(body).map_err(|error| format!("{}: {error}", file.display()))?;
        Ok(Some((checkpoint.size, checkpoint.root)))
    }
}

/// Signs and sends checkpoints until the task is aborted; nothing when the core has no journal
/// key.
pub(crate) async fn sign_checkpoints(engine: Engine, sends: Sends) {
    if engine.journal_verifier().is_none() {
        return;
    }
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(SEND_TIMEOUT)
        .build()
        .unwrap_or_default();
    let grown = skill_store::journal_grown();
    let mut refused: Option<skill_api::Code> = None;
    let mut unread: Option<String> = None;
    let posting = Arc::new(AtomicBool::new(false));
    loop {
        let started = Instant::now();
        let outside = match engine.journal_verifier().map(|key| sends.kept(key)) {
            Some(Ok(kept)) => kept,
            Some(Err(problem)) => {
                if unread.as_deref() != Some(problem.as_str()) {
                    tracing::warn!(%problem, "the checkpoint sent outside is not read back; the next one extends the database's");
                    unread = Some(problem);
                }
                None
            }
            None => None,
        };
        let signed = engine.sign_checkpoint(outside).await;
        passes::ended("checkpoints", started, signed.is_ok());
        match signed {
            Ok(Some(row)) => {
                refused = None;
                tracing::debug!(size = row.size, "journal checkpoint signed");
                send(&engine, &client, &sends, &row, &posting).await;
            }
            Ok(None) => refused = None,
            // Said once, not every second; signing stays stopped until the tree extends the
            // checkpoints known again (it will not, unless the change is undone).
            Err(error) if refused != Some(error.code) => {
                tracing::error!(code = %error.code, error = %error, "the journal's checkpoint is not signed");
                refused = Some(error.code);
            }
            Err(_) => {}
        }
        tokio::select! {
            () = tokio::time::sleep(SIGN_EVERY) => {}
            () = grown.notified() => {}
        }
    }
}

async fn send(
    engine: &Engine,
    client: &reqwest::Client,
    sends: &Sends,
    row: &CheckpointRow,
    posting: &Arc<AtomicBool>,
) {
    if let Some(file) = &sends.file {
        let written = write_whole(file, &row.note).await;
        record(engine, row.size, &format!("file:{}", file.display()), written).await;
    }
    // The webhook answers in its own time: signing never waits for it. One post at a time; a
    // checkpoint signed while one is out is carried by the next (each extends the last).
    if let Some(url) = &sends.url
        && !posting.swap(true, Ordering::AcqRel)
    {
        let (engine, client, url, row, posting) =
            (engine.clone(), client.clone(), url.clone(), row.clone(), Arc::clone(posting));
        tokio::spawn(async move {
            let posted = client
                .post(url.clone())
                .header(reqwest::header::CONTENT_TYPE, "text/plain; charset=utf-8")
                .body(row.note.clone())
                .send()
                .await;
            let outcome = match posted {
                Ok(answer) if answer.status().is_success() => Ok(format!("HTTP {}", answer.status().as_u16())),
                Ok(answer) => Err(format!("HTTP {}", answer.status().as_u16())),
                // Without the URL: its query may hold a secret the receiver asked for.
                Err(error) => Err(if error.is_timeout() {
                    "no answer within 5 s".to_owned()
                } else {
                    error.without_url().to_string()
                }),
            };
            let mut shown = url;
            shown.set_query(None);
            record(&engine, row.size, shown.as_str(), outcome).await;
            posting.store(false, Ordering::Release);
        });
    }
}

/// Writes `note` to a new file of its own beside `file` (created, never opened through a link
/// planted there), then renames it into place: a reader sees the old checkpoint or the new one,
/// never half of one.
async fn write_whole(file: &std::path::Path, note: &str) -> Result<String, String> {
    let folder = file.parent().filter(|folder| !folder.as_os_str().is_empty()).unwrap_or(std::path::Path::new("."));
    let name = file.file_name().map(|name| name.to_string_lossy().into_owned()).unwrap_or_default();
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |since| since.as_nanos());
    let partial = folder.join(format!(".{name}.{}.{nanos}.partial", std::process::id()));
    let (partial, note, file) = (partial, note.to_owned(), file.to_owned());
    tokio::task::spawn_blocking(move || {
        let written = (|| {
            let mut options = std::fs::OpenOptions::new();
            options.write(true).create_new(true);
            #[cfg(unix)]
            std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o644);
            let mut out =
                options.open(&partial).map_err(|error| format!("cannot create {}: {error}", partial.display()))?;
            std::io::Write::write_all(&mut out, note.as_bytes())
                .and_then(|()| out.sync_all())
                .map_err(|error| format!("cannot write {}: {error}", partial.display()))?;
            std::fs::rename(&partial, &file).map_err(|error| format!("cannot rename into {}: {error}", file.display()))
        })();
        if written.is_err() {
            let _ = std::fs::remove_file(&partial);
        }
        written.map(|()| String::new())
    })
    .await
    .unwrap_or_else(|error| Err(format!("the write stopped: {error}")))
}

async fn record(engine: &Engine, size: u64, target: &str, outcome: Result<String, String>) {
    let (ok, detail) = match outcome {
        Ok(detail) => (true, detail),
        Err(detail) => {
            tracing::warn!(target_name = target, size, %detail, "the journal's checkpoint was not sent");
            (false, detail)
        }
    };
    if let Err(error) = engine.record_checkpoint_send(size, target, ok, &detail).await {
        tracing::warn!(%error, "a checkpoint's send was not recorded");
    }
}

/// Reads a signing key, refusing one others can read.
pub fn read_key(path: &Path) -> anyhow::Result<skill_journal::Signer> {
    let metadata = std::fs::metadata(path).with_context(|| format!("--journal-key: cannot read {}", path.display()))?;
    if !metadata.is_file() {
        bail!("--journal-key: {} is not a file", path.display());
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        let mode = metadata.permissions().mode() & 0o777;
        if mode & 0o077 != 0 {
            bail!(
                "--journal-key: {} can be read by others (mode {mode:o}): `chmod 600 {}` and keep it apart from the database",
                path.display(),
                path.display()
            );
        }
    }
    let text =
        std::fs::read_to_string(path).with_context(|| format!("--journal-key: cannot read {}", path.display()))?;
    skill_journal::Signer::parse(text.trim()).map_err(|error| {
        anyhow::anyhow!(
            "--journal-key: {} is not a journal key ({error}); `skill-core journal keygen` makes one",
            path.display()
        )
    })
}
