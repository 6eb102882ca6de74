//! The files of a package folder, read without trusting the file system: only regular files
//! inside the package (a link may point elsewhere inside it, never out of it), each at most
//! [`MAX_FILE_BYTES`], all together at most [`MAX_PACKAGE_BYTES`] in at most [`MAX_FILES`]
//! files, in folders at most [`MAX_DEPTH`] deep. What breaks a rule is a problem naming the
//! file; the rest of the package is still read.

use std::collections::BTreeSet;
use std::io::Read;
use std::path::{Path, PathBuf};

use skill_contract::package::PackageProblem;

/// The largest YAML file read.
pub const MAX_FILE_BYTES: u64 = 1024 * 1024;
/// The most YAML read from one package.
pub const MAX_PACKAGE_BYTES: u64 = 32 * 1024 * 1024;
/// The most YAML files in one package.
pub const MAX_FILES: usize = 5_000;
/// The deepest folder read.
pub const MAX_DEPTH: usize = 16;

/// Folders that hold no catalog objects.
const SKIPPED: &[&str] = &["schemas", ".layout", "integration", "target", "tests", "node_modules"];

/// One file read: its path relative to the package folder (`/`-separated) and its text.
#[derive(Debug)]
pub(crate) struct FileText {
    pub(crate) relative: String,
    pub(crate) text: String,
}

/// The YAML files of the package in `root` (canonical), in path order, and the problems met.
pub(crate) fn read_package(root: &Path) -> std::io::Result<(Vec<FileText>, Vec<PackageProblem>)> {
    let mut walk = Walk { root, paths: Vec::new(), problems: Vec::new(), visited: BTreeSet::new() };
    walk.folder(root, 0)?;
    let Walk { paths, problems, .. } = walk;
    Ok(read_paths(paths, problems))
}

/// The scenario tests of the package in `root` (canonical): its `tests/**/*.test.yaml`, read
/// as the package's files are, in path order.
pub(crate) fn read_tests(root: &Path) -> std::io::Result<(Vec<FileText>, Vec<PackageProblem>)> {
    let folder = root.join("tests");
    if !folder.is_dir() {
        return Ok((Vec::new(), Vec::new()));
    }
    if !folder.canonicalize()?.starts_with(root) {
        let refused = problem(
            "tests",
            "link_outside_package",
            "the tests folder points outside the package folder, which is never read".to_owned(),
            "keep the tests inside the package",
        );
        return Ok((Vec::new(), vec![refused]));
    }
    let mut walk = Walk { root, paths: Vec::new(), problems: Vec::new(), visited: BTreeSet::new() };
    walk.folder(&folder, 1)?;
    let Walk { mut paths, problems, .. } = walk;
    paths.retain(|(relative, _)| relative.ends_with(".test.yaml"));
    Ok(read_paths(paths, problems))
}

fn read_paths(
    mut paths: Vec<(String, PathBuf)>,
    mut problems: Vec<PackageProblem>,
) -> (Vec<FileText>, Vec<PackageProblem>) {
    paths.sort();
    let mut files = Vec::new();
    let mut total = 0u64;
    for (relative, path) in paths {
        if files.len() == MAX_FILES || total > MAX_PACKAGE_BYTES {
            problems.push(problem(
                &relative,
                "package_too_large",
                format!("the package holds more than {MAX_FILES} YAML files or {MAX_PACKAGE_BYTES} bytes of YAML"),
                "split it into packages that require one another",
            ));
            break;
        }
        match read_bounded(&path) {
            Ok(text) => {
                total += text.len() as u64;
                files.push(FileText { relative, text });
            }
            Err(refusal) => problems.push(refusal.problem(&relative)),
        }
    }
    (files, problems)
}

fn problem(file: &str, code: &'static str, message: String, hint: &str) -> PackageProblem {
    PackageProblem { file: file.to_owned(), path: String::new(), code, message, hint: hint.to_owned() }
}

struct Walk<'a> {
    root: &'a Path,
    /// (relative path, path to open)
    paths: Vec<(String, PathBuf)>,
    problems: Vec<PackageProblem>,
    /// The folders already read (canonical): a folder reached twice (a link to a folder above,
    /// or to one read already) is read once.
    visited: BTreeSet<PathBuf>,
}

impl Walk<'_> {
    fn relative(&self, path: &Path) -> String {
        path.strip_prefix(self.root).unwrap_or(path).to_string_lossy().replace('\\', "/")
    }

    fn folder(&mut self, folder: &Path, depth: usize) -> std::io::Result<()> {
        let canonical = folder.canonicalize()?;
        if !self.visited.insert(canonical) {
            return Ok(());
        }
        let mut entries = std::fs::read_dir(folder)?.collect::<std::io::Result<Vec<_>>>()?;
        // In name order, so which path of a folder reached twice counts does not vary.
        entries.sort_by_key(std::fs::DirEntry::file_name);
        for entry in entries {
            let path = entry.path();
            let relative = self.relative(&path);
            let Some(name) = entry.file_name().to_str().map(str::to_owned) else {
                self.problems.push(problem(
                    &relative,
                    "unreadable_file",
                    "the file name is not UTF-8".to_owned(),
                    "rename it with a UTF-8 name, or move it out of the package",
                ));
                continue;
            };
            let yaml = name.ends_with(".yaml") || name.ends_with(".yml");
            let mut kind = entry.file_type()?;
            if kind.is_symlink() {
                match path.canonicalize() {
                    Ok(target) if target.starts_with(self.root) => kind = std::fs::metadata(&target)?.file_type(),
                    Ok(_) => {
                        self.problems.push(problem(
                            &relative,
                            "link_outside_package",
                            "the link points outside the package folder, which is never read".to_owned(),
                            "copy what it points to into the package, or remove the link",
                        ));
                        continue;
                    }
                    Err(error) if yaml => {
                        self.problems.push(problem(
                            &relative,
                            "unreadable_file",
                            format!("the link cannot be followed: {error}"),
                            "fix or remove the link",
                        ));
                        continue;
                    }
                    Err(_) => continue,
                }
            }
            if kind.is_dir() {
                if name.starts_with('.') || SKIPPED.contains(&name.as_str()) {
                    continue;
                }
                if depth + 1 >= MAX_DEPTH {
                    self.problems.push(problem(
                        &relative,
                        "package_too_large",
                        format!("folders are nested more than {MAX_DEPTH} deep"),
                        "flatten the package's folders",
                    ));
                    continue;
                }
                self.folder(&path, depth + 1)?;
            } else if yaml {
                if kind.is_file() {
                    self.paths.push((relative, path));
                } else {
                    self.problems.push(problem(
                        &relative,
                        "unreadable_file",
                        "not a regular file (a device, a pipe or a socket)".to_owned(),
                        "a package holds regular files only",
                    ));
                }
            }
        }
        Ok(())
    }
}

/// Why a file was not read.
enum Refusal {
    TooLarge,
    NotRegular,
    NotUtf8,
    Io(std::io::Error),
}

impl Refusal {
    fn problem(self, relative: &str) -> PackageProblem {
        match self {
            Self::TooLarge => problem(
                relative,
                "file_too_large",
                format!("the file is larger than {MAX_FILE_BYTES} bytes"),
                "split it; a catalog object is far smaller",
            ),
            Self::NotRegular => problem(
                relative,
                "unreadable_file",
                "not a regular file (a device, a pipe or a socket)".to_owned(),
                "a package holds regular files only",
            ),
            Self::NotUtf8 => problem(relative, "invalid_yaml", "the file is not UTF-8".to_owned(), "save it as UTF-8"),
            Self::Io(error) => {
                problem(relative, "unreadable_file", format!("cannot read the file: {error}"), "check its permissions")
            }
        }
    }
}

/// The text of a regular file of at most [`MAX_FILE_BYTES`], checked again on the open handle
/// (a file swapped after the walk), and never more than the limit read.
fn read_bounded(path: &Path) -> Result<String, Refusal> {
    if !std::fs::metadata(path).map_err(Refusal::Io)?.is_file() {
        return Err(Refusal::NotRegular);
    }
    let file = std::fs::File::open(path).map_err(Refusal::Io)?;
    let metadata = file.metadata().map_err(Refusal::Io)?;
    if !metadata.is_file() {
        return Err(Refusal::NotRegular);
    }
    if metadata.len() > MAX_FILE_BYTES {
        return Err(Refusal::TooLarge);
    }
    let mut bytes = Vec::with_capacity(usize::try_from(metadata.len()).unwrap_or(0));
    file.take(MAX_FILE_BYTES + 1).read_to_end(&mut bytes).map_err(Refusal::Io)?;
    if bytes.len() as u64 > MAX_FILE_BYTES {
        return Err(Refusal::TooLarge);
    }
    String::from_utf8(bytes).map_err(|_| Refusal::NotUtf8)
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::symlink;

    use super::*;

    /// A package folder `pkg` inside a fresh folder, with an `outside.yaml` beside it.
    fn scratch(label: &str) -> PathBuf {
        let base = std::env::temp_dir().join(format!("skill-package-files-{label}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        std::fs::create_dir_all(base.join("pkg/skills")).expect("folders");
        std::fs::write(base.join("outside.yaml"), "secret: outside\n").expect("outside");
        std::fs::write(base.join("pkg/package.yaml"), "kind: Package\n").expect("manifest");
        base
    }

    fn read(base: &Path) -> (Vec<String>, Vec<(String, &'static str)>) {
        let root = base.join("pkg").canonicalize().expect("canonical");
        let (files, problems) = read_package(&root).expect("readable");
        (
            files.into_iter().map(|file| file.relative).collect(),
            problems.into_iter().map(|problem| (problem.file, problem.code)).collect(),
        )
    }

    #[test]
    fn links_out_of_the_package_devices_and_pipes_are_not_read() {
        let base = scratch("links");
        let pkg = base.join("pkg");
        symlink("/dev/zero", pkg.join("skills/zero.yaml")).expect("link");
        symlink(base.join("outside.yaml"), pkg.join("skills/stolen.yaml")).expect("link");
        symlink("/etc", pkg.join("etc")).expect("link");
        symlink(pkg.join("package.yaml"), pkg.join("skills/alias.yaml")).expect("link");
        symlink(&pkg, pkg.join("skills/loop")).expect("link");
        symlink(pkg.join("nowhere.yaml"), pkg.join("skills/broken.yaml")).expect("link");
        let fifo = std::process::Command::new("mkfifo").arg(pkg.join("skills/pipe.yaml")).status().expect("mkfifo");
        assert!(fifo.success());
        let (files, problems) = read(&base);
        assert_eq!(files, ["package.yaml", "skills/alias.yaml"]);
        assert_eq!(
            problems.into_iter().collect::<BTreeSet<_>>(),
            BTreeSet::from([
                ("etc".to_owned(), "link_outside_package"),
                ("skills/broken.yaml".to_owned(), "unreadable_file"),
                ("skills/pipe.yaml".to_owned(), "unreadable_file"),
                ("skills/stolen.yaml".to_owned(), "link_outside_package"),
                ("skills/zero.yaml".to_owned(), "link_outside_package"),
            ])
        );
        let _ = std::fs::remove_dir_all(&base);
    }

    #[test]
    fn a_linked_folder_inside_the_package_is_read() {
        let base = scratch("linked-folder");
        let pkg = base.join("pkg");
        std::fs::create_dir_all(pkg.join("integration/skills")).expect("folder");
        std::fs::write(pkg.join("integration/skills/a.yaml"), "kind: Skill\n").expect("file");
        std::fs::remove_dir(pkg.join("skills")).expect("removed");
        symlink(pkg.join("integration/skills"), pkg.join("skills")).expect("link");
        let (files, problems) = read(&base);
        assert_eq!(files, ["package.yaml", "skills/a.yaml"]);
        assert!(problems.is_empty(), "{problems:?}");
        let _ = std::fs::remove_dir_all(&base);
    }

    #[test]
    fn sizes_and_depths_are_bounded() {
        let base = scratch("sizes");
        let pkg = base.join("pkg");
        let big = "x".repeat(usize::try_from(MAX_FILE_BYTES).expect("fits") + 1);
        std::fs::write(pkg.join("skills/big.yaml"), big).expect("big");
        std::fs::write(pkg.join("skills/latin1.yaml"), b"a: \xe9\n").expect("latin1");
        let mut deep = pkg.clone();
        for level in 0..MAX_DEPTH + 1 {
            deep = deep.join(format!("d{level}"));
        }
        std::fs::create_dir_all(&deep).expect("deep");
        std::fs::write(deep.join("deep.yaml"), "a: 1\n").expect("deep file");
        let (files, problems) = read(&base);
        assert_eq!(files, ["package.yaml"]);
        let codes: BTreeSet<&str> = problems.iter().map(|(_, code)| *code).collect();
        assert_eq!(codes, BTreeSet::from(["file_too_large", "invalid_yaml", "package_too_large"]));
        let _ = std::fs::remove_dir_all(&base);
    }
}
