//! The race-safe read of one file inside the secrets folder.
//!
//! The folder is opened once and checked against a fresh `stat` of its path; every component
//! below it is `lstat`-ed and opened relative to its parent's descriptor with no-follow, and its
//! (device, inode) compared with what was checked. Symbolic links are resolved here, not by the
//! kernel: a relative target is spliced into the remaining path, an absolute one must lie under
//! the folder (its absolute or real path), and `..` pops our own stack of descriptors, never the
//! filesystem's. So nothing outside the folder is ever opened, and a path swapped between check
//! and open is noticed.

use std::collections::VecDeque;
use std::ffi::OsStr;
use std::io::Read;
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};

use rustix::fs::{AtFlags, FileType, Mode, OFlags, Stat};
use rustix::io::Errno;

/// The largest secret file read (exactly this many bytes is accepted).
pub const MAX_SECRET_BYTES: usize = 64 * 1024;
/// The most symbolic links followed for one name.
pub const MAX_SYMLINKS: usize = 40;

/// Why one attempt did not produce the file's bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Walk {
    /// The folder or the file does not exist.
    Absent,
    /// A component disappeared after a link led to it (retry; absent after the last attempt).
    Vanished,
    /// A component changed between check and open (retry; refused after the last attempt).
    Swapped,
    /// The process may not read a component.
    PermissionDenied,
    /// Refused for good, with the reason code.
    Refused(&'static str),
    /// The file's bytes.
    Bytes(Vec<u8>),
}

/// Points of the walk where tests swap things, between a check and the open that follows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Point<'a> {
    /// The folder is about to be opened.
    Folder,
    /// The folder is open and about to be compared with its path.
    FolderOpened,
    /// A component was checked with `lstat` and is about to be opened or followed.
    Checked(&'a str),
}

fn same_object(a: &Stat, b: &Stat) -> bool {
    a.st_dev == b.st_dev && a.st_ino == b.st_ino
}

fn file_type(stat: &Stat) -> FileType {
    FileType::from_raw_mode(stat.st_mode)
}

/// Maps an open/stat error of a component.
fn failed(errno: Errno) -> Walk {
    match errno {
        Errno::ACCESS | Errno::PERM => Walk::PermissionDenied,
        Errno::NOENT => Walk::Vanished,
        Errno::LOOP | Errno::NOTDIR => Walk::Swapped,
        _ => Walk::Refused("unreadable"),
    }
}

/// `target` below `root`, as the components after it.
fn below(target: &Path, root: &Path) -> Option<Vec<String>> {
    target.strip_prefix(root).ok().map(|rest| {
        rest.components()
            .filter_map(|c| match c {
                Component::Normal(part) => Some(part.to_string_lossy().into_owned()),
                Component::ParentDir => Some("..".to_owned()),
                _ => None,
            })
            .collect()
    })
}

/// One attempt at reading `name` inside `folder`.
pub(crate) fn attempt(folder: &Path, name: &str, hook: &mut dyn FnMut(Point<'_>)) -> Walk {
    hook(Point::Folder);
    let root = match rustix::fs::open(folder, OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC, Mode::empty()) {
        Ok(fd) => fd,
        Err(Errno::NOENT | Errno::NOTDIR) => return Walk::Absent,
        Err(Errno::ACCESS | Errno::PERM) => return Walk::PermissionDenied,
        Err(_) => return Walk::Refused("unreadable"),
    };
    hook(Point::FolderOpened);
    match (rustix::fs::fstat(&root), rustix::fs::stat(folder)) {
        (Ok(opened), Ok(now)) if same_object(&opened, &now) => {}
        _ => return Walk::Swapped,
    }
    let absolute = std::path::absolute(folder).unwrap_or_else(|_| folder.to_path_buf());
    let real = std::fs::canonicalize(folder).unwrap_or_else(|_| absolute.clone());

    let mut stack: Vec<OwnedFd> = vec![root];
    let mut remaining: VecDeque<String> = name.split('/').map(str::to_owned).collect();
    let mut links = 0usize;
    let mut followed = false;
    while let Some(part) = remaining.pop_front() {
        if part.is_empty() || part == "." {
            continue;
        }
        if part == ".." {
            if stack.len() == 1 {
                return Walk::Refused("outside_secrets_dir");
            }
            stack.pop();
            continue;
        }
        let parent = stack.last().expect("invariant: the folder's descriptor stays on the stack");
        let checked = match rustix::fs::statat(parent, part.as_str(), AtFlags::SYMLINK_NOFOLLOW) {
            Ok(stat) => stat,
            Err(Errno::NOENT) if !followed => return Walk::Absent,
            Err(errno) => return failed(errno),
        };
        hook(Point::Checked(&part));
        match file_type(&checked) {
            FileType::Symlink => {
                links += 1;
                if links > MAX_SYMLINKS {
                    return Walk::Refused("unreadable");
                }
                let target = match rustix::fs::readlinkat(parent, part.as_str(), Vec::new()) {
                    Ok(target) => PathBuf::from(OsStr::from_bytes(target.as_bytes())),
                    Err(Errno::NOENT) => return Walk::Vanished,
                    Err(Errno::INVAL) => return Walk::Swapped,
                    Err(errno) => return failed(errno),
                };
                followed = true;
                if target.is_absolute() {
                    let Some(rest) = below(&target, &absolute).or_else(|| below(&target, &real)) else {
                        return Walk::Refused("outside_secrets_dir");
                    };
                    stack.truncate(1);
                    for component in rest.into_iter().rev() {
                        remaining.push_front(component);
                    }
                } else {
                    let parts: Vec<String> = target.to_string_lossy().split('/').map(str::to_owned).collect();
                    for component in parts.into_iter().rev() {
                        remaining.push_front(component);
                    }
                }
            }
            FileType::Directory if !remaining.iter().all(|p| p.is_empty() || p == ".") => {
                let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
                let fd = match rustix::fs::openat(parent, part.as_str(), flags, Mode::empty()) {
                    Ok(fd) => fd,
                    Err(errno) => return failed(errno),
                };
                match rustix::fs::fstat(&fd) {
                    Ok(opened) if same_object(&opened, &checked) => stack.push(fd),
                    _ => return Walk::Swapped,
                }
            }
            FileType::Directory => return Walk::Refused("not_regular_file"),
            _ if !remaining.iter().all(|p| p.is_empty() || p == ".") => {
                // A file where a folder is needed: the path leads nowhere, like a dangling link.
                return Walk::Vanished;
            }
            _ => return read_file(parent, &part, &checked),
        }
    }
    // The name resolved to the folder itself (or a folder reached through links).
    Walk::Refused("not_regular_file")
}

fn read_file(parent: &OwnedFd, part: &str, checked: &Stat) -> Walk {
    let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::NOCTTY | OFlags::CLOEXEC;
    let fd = match rustix::fs::openat(parent, part, flags, Mode::empty()) {
        Ok(fd) => fd,
        Err(Errno::NXIO) => return Walk::Refused("not_regular_file"),
        Err(errno) => return failed(errno),
    };
    let opened = match rustix::fs::fstat(&fd) {
        Ok(stat) => stat,
        Err(_) => return Walk::Refused("unreadable"),
    };
    if !same_object(&opened, checked) {
        return Walk::Swapped;
    }
    if file_type(&opened) != FileType::RegularFile {
        return Walk::Refused("not_regular_file");
    }
    if opened.st_size > MAX_SECRET_BYTES as i64 {
        return Walk::Refused("too_large");
    }
    let mut bytes = Vec::with_capacity(usize::try_from(opened.st_size).unwrap_or(0).min(MAX_SECRET_BYTES));
    let read = std::fs::File::from(fd).take(MAX_SECRET_BYTES as u64 + 1).read_to_end(&mut bytes);
    match read {
        Ok(_) if bytes.len() > MAX_SECRET_BYTES => Walk::Refused("too_large"),
        Ok(_) => Walk::Bytes(bytes),
        Err(error) if error.kind() == std::io::ErrorKind::PermissionDenied => Walk::PermissionDenied,
        Err(_) => Walk::Refused("unreadable"),
    }
}
