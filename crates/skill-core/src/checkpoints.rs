//! The journal's checkpoint signer beside the server (`docs/journal.md`): it signs a checkpoint
//! of the tree at most once a second when the tree grew — sooner once another 256 entries were
//! written through this core — and sends each one it signs outside the database, to a file and to
//! a webhook, so that a copy exists that whoever holds the database cannot rewrite. Each send is
//! recorded, and shown on the console's journal page. Nothing here is authoritative: any number
//! of cores sign, none a checkpoint the last one signed does not lead to.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use skill_engine::Engine;
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
    /// The sends `file` and `url` name; an error naming the flag when the URL is not http(s).
    pub fn new(file: Option<PathBuf>, url: Option<&str>) -> Result<Self, String> {
        let url = match url {
            None => None,
            Some(text) => {
                let url = reqwest::Url::parse(text)
                    .map_err(|error| format!("--journal-send-url: not a URL ({error}): {text:?}"))?;
                if !matches!(url.scheme(), "http" | "https") || !url.username().is_empty() || url.password().is_some() {
                    return Err(format!(
                        "--journal-send-url: an http:// or https:// URL without credentials in it, not {text:?}"
                    ));
                }
                Some(url)
            }
        };
        Ok(Self { file, url })
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
    let mut refused: Option<String> = None;
    loop {
        let started = Instant::now();
        let signed = engine.sign_checkpoint().await;
        passes::ended("checkpoints", started, signed.is_ok());
        match signed {
            Ok(Some(row)) => {
                refused = None;
                tracing::debug!(size = row.size, "journal checkpoint signed");
                send(&engine, &client, &sends, &row).await;
            }
            Ok(None) => refused = None,
            // Said once, not every second; signing stays stopped until the tree extends the
            // last checkpoint again (it will not, unless the change is undone).
            Err(error) if refused.as_deref() != Some(error.message.as_str()) => {
                tracing::error!(code = error.code, error = %error, "the journal's checkpoint is not signed");
                refused = Some(error.message.clone());
            }
            Err(_) => {}
        }
        tokio::select! {
            () = tokio::time::sleep(SIGN_EVERY) => {}
            () = grown.notified() => {}
        }
    }
}

async fn send(engine: &Engine, client: &reqwest::Client, sends: &Sends, row: &CheckpointRow) {
    if let Some(file) = &sends.file {
        let written = write_whole(file, &row.note).await;
        record(engine, row.size, &format!("file:{}", file.display()), written).await;
    }
    if let Some(url) = &sends.url {
        let posted = client
            .post(url.clone())
            .header(reqwest::header::CONTENT_TYPE, "text/plain; charset=utf-8")
            .body(row.note.clone())
            .send()
            .await;
        let outcome = match posted {
            Ok(answer) if answer.status().is_success() => Ok(format!("HTTP {}", answer.status().as_u16())),
            Ok(answer) => Err(format!("HTTP {}", answer.status().as_u16())),
            Err(error) => Err(if error.is_timeout() { "no answer within 5 s".to_owned() } else { error.to_string() }),
        };
        let mut shown = url.clone();
        shown.set_query(None);
        record(engine, row.size, shown.as_str(), outcome).await;
    }
}

/// Writes `note` to a file beside `file`, then renames it into place: a reader sees the old
/// checkpoint or the new one, never half of one.
async fn write_whole(file: &std::path::Path, note: &str) -> Result<String, String> {
    let mut partial = file.as_os_str().to_owned();
    partial.push(".partial");
    let partial = PathBuf::from(partial);
    tokio::fs::write(&partial, note).await.map_err(|error| format!("cannot write {}: {error}", partial.display()))?;
    tokio::fs::rename(&partial, file)
        .await
        .map_err(|error| format!("cannot rename into {}: {error}", file.display()))?;
    Ok(String::new())
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
