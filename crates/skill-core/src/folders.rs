//! The folders and files the audit commands write (`journal export`, `journal explain`): new, the
//! owner's only (what they hold quotes the database), never written through a link planted there.

use std::path::Path;

use anyhow::{Context, Result, bail};

/// A new folder readable by its owner only; refused when something is there already.
pub(crate) fn new_folder(out: &Path, flag: &str) -> Result<()> {
    if let Ok(found) = std::fs::symlink_metadata(out) {
        let empty = std::fs::read_dir(out).map(|mut entries| entries.next().is_none()).unwrap_or(false);
        if found.file_type().is_symlink() || !found.is_dir() || !empty {
            bail!("{flag}: {} is not an empty folder of its own; give a new one", out.display());
        }
    }
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder.create(out).with_context(|| format!("{flag}: cannot create {}", out.display()))?;
    // An empty folder given is made the owner's only too.
    #[cfg(unix)]
    std::fs::set_permissions(out, std::os::unix::fs::PermissionsExt::from_mode(0o700))
        .with_context(|| format!("{flag}: cannot make {} its owner's only", out.display()))?;
    Ok(())
}

/// A new file in a folder [`new_folder`] made: created, never opened through a link planted there.
pub(crate) fn new_file(path: &Path) -> Result<std::fs::File> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    options.open(path).with_context(|| format!("cannot create {}", path.display()))
}
