//! Hosting secrets: an environment variable of the process, then the node's secret file
//! `/run/secrets/<name>` (or `$SKILL_SDK_SECRETS_DIR/<name>`).
//!
//! The rules are the platform's canon for every SDK: the name is checked before anything else (a
//! name is never a path, and `agent-pat` is the agent's own credential); a non-empty variable
//! wins; a blank file means no secret; only trailing `\r` and `\n` are trimmed from a file's
//! value; a file is at most 64 KiB, UTF-8 and regular; nothing outside the folder is ever opened.
//! Secret values never appear in messages, logs or `Debug` output.

mod walk;

use std::path::{Path, PathBuf};

use serde_json::json;

pub use walk::{MAX_SECRET_BYTES, MAX_SYMLINKS};

use crate::SkillError;
use crate::env::Env;

/// The variable that moves the secrets folder.
pub const SECRETS_DIR_VAR: &str = "SKILL_SDK_SECRETS_DIR";
/// The secrets folder a node mounts.
pub const DEFAULT_SECRETS_DIR: &str = "/run/secrets";
/// Names that are never secrets of a skill.
pub const RESERVED_NAMES: &[&str] = &["agent-pat"];
/// How often a read is tried when the path changes under it.
const ATTEMPTS: usize = 3;

/// Whether `name` is a secret file name: `[a-z0-9][a-z0-9-]{0,62}`.
fn is_file_name(name: &str) -> bool {
    let mut chars = name.chars();
    name.len() <= 63
        && chars.next().is_some_and(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
}

fn name_invalid(message: &str) -> SkillError {
    SkillError::new("secret_name_invalid").with_message(message)
}

/// The guard that runs before anything: a name is not a path, and not a reserved name.
fn guard(name: &str) -> Result<(), SkillError> {
    if name.is_empty() || name.contains(['/', '\\', '\0']) || name.contains("..") {
        return Err(name_invalid("a secret name can't be a path: use a plain name such as crm-token"));
    }
    if RESERVED_NAMES.contains(&name) {
        return Err(name_invalid("agent-pat is reserved: it is the agent's own credential, not a skill's secret"));
    }
    Ok(())
}

/// Checks a name for the file API: the guard, then the file-name pattern.
pub fn check_secret_name(name: &str) -> Result<(), SkillError> {
    guard(name)?;
    if !is_file_name(name) {
        return Err(name_invalid(
            "a secret file name is lowercase letters, digits and `-`, starting with a letter or digit, at most 63",
        ));
    }
    Ok(())
}

/// The folder of the secret files: the argument, else `$SKILL_SDK_SECRETS_DIR` (when not empty),
/// else `/run/secrets`.
pub fn secrets_dir(env: &Env, given: Option<&Path>) -> PathBuf {
    given.map(Path::to_path_buf).unwrap_or_else(|| {
        env.get(SECRETS_DIR_VAR)
            .filter(|dir| !dir.is_empty())
            .map_or_else(|| PathBuf::from(DEFAULT_SECRETS_DIR), PathBuf::from)
    })
}

/// Whitespace as the platform's blank-file test counts it: Unicode whitespace plus the
/// separators U+001C–U+001F.
fn is_blank_char(c: char) -> bool {
    c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c)
}

fn rejected(name: &str, reason: &str) -> SkillError {
    SkillError::new("secret_file_rejected")
        .with_message(format!("the secret file {name} is refused: {}", explain(reason)))
        .with_detail("secret", json!(name))
        .with_detail("reason", json!(reason))
}

fn explain(reason: &str) -> &'static str {
    match reason {
        "outside_secrets_dir" => "it leads outside the secrets folder",
        "symlink_swapped" => "its path kept changing while it was read",
        "not_regular_file" => "it is not a regular file",
        "too_large" => "it is larger than 64 KiB",
        "not_utf8" => "it is not UTF-8 text",
        _ => "it cannot be read",
    }
}

fn unreadable(name: &str, path: &Path) -> SkillError {
    SkillError::new("secret_unreadable")
        .with_message(format!(
            "the process user (uid {}) has no right to read {}",
            rustix::process::getuid().as_raw(),
            path.display()
        ))
        .with_detail("secret", json!(name))
        .with_detail("path", json!(path.display().to_string()))
}

/// Reads `<folder>/<name>`: `None` when there is no such file (or folder), `Some("")` when the
/// file is blank, else the value with trailing `\r` and `\n` removed.
pub fn read_secret_file(folder: &Path, name: &str) -> Result<Option<String>, SkillError> {
    read_secret_file_with(folder, name, &mut |_| {})
}

pub(crate) fn read_secret_file_with(
    folder: &Path,
    name: &str,
    hook: &mut dyn FnMut(walk::Point<'_>),
) -> Result<Option<String>, SkillError> {
    check_secret_name(name)?;
    let path = folder.join(name);
    for attempt in 1..=ATTEMPTS {
        let last = attempt == ATTEMPTS;
        let bytes = match walk::attempt(folder, name, hook) {
            walk::Walk::Absent => return Ok(None),
            walk::Walk::Vanished if last => return Ok(None),
            walk::Walk::Swapped if last => return Err(rejected(name, "symlink_swapped")),
            walk::Walk::Vanished | walk::Walk::Swapped => continue,
            walk::Walk::PermissionDenied => return Err(unreadable(name, &path)),
            walk::Walk::Refused(reason) => return Err(rejected(name, reason)),
            walk::Walk::Bytes(bytes) => bytes,
        };
        let Ok(text) = String::from_utf8(bytes) else {
            return Err(rejected(name, "not_utf8"));
        };
        if text.chars().all(is_blank_char) {
            return Ok(Some(String::new()));
        }
        return Ok(Some(text.trim_end_matches(['\r', '\n']).to_owned()));
    }
    unreachable!("invariant: the last attempt returns")
}

/// What `ctx.secret(name)` does: the name guard; a non-empty environment variable `name`; the
/// file `<folder>/<name>` when the name is a file name. No secret is `config_missing`
/// (retryable), with a message that says where it was looked for.
pub fn read_secret(name: &str, env: &Env, folder: Option<&Path>) -> Result<String, SkillError> {
    guard(name)?;
    if let Some(value) = env.get(name).filter(|v| !v.is_empty()) {
        return Ok(value);
    }
    let folder = secrets_dir(env, folder);
    let path = folder.join(name);
    let missing = |message: String| {
        SkillError::new("config_missing")
            .with_message(message)
            .with_detail("secret", json!(name))
            .with_detail("secretsDir", json!(folder.display().to_string()))
    };
    if !is_file_name(name) {
        return Err(missing(format!(
            "the secret {name} is not set: there is no environment variable {name}, and no file was searched \
             because a secret file name is lowercase letters, digits and `-`"
        )));
    }
    match read_secret_file(&folder, name)? {
        Some(value) if !value.is_empty() => Ok(value),
        Some(_) => Err(missing(format!(
            "the secret {name} is not set: there is no environment variable {name}, and the file {} is empty",
            path.display()
        ))),
        None => Err(missing(format!(
            "the secret {name} is not set: set the environment variable {name} or put the file {}",
            path.display()
        ))),
    }
}

#[cfg(test)]
mod tests;
