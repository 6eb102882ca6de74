//! The secret rules, row by row, on real files: the name guard, the environment, the folder, the
//! file rules, every refusal, swaps during the read, a Kubernetes rotation, FIFOs, and a user
//! without rights (a child process run as `nobody`).

use std::collections::BTreeMap;
use std::os::unix::fs::{PermissionsExt, symlink};
use std::path::{Path, PathBuf};

use super::walk::Point;
use super::*;

/// A scratch folder removed on drop.
struct Scratch(PathBuf);

impl Scratch {
    fn new(label: &str) -> Self {
        static COUNTER: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let path = std::env::temp_dir().join(format!("skill-secrets-{label}-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir_all(path.join("secrets")).expect("scratch");
        Self(path)
    }

    /// The secrets folder.
    fn dir(&self) -> PathBuf {
        self.0.join("secrets")
    }

    fn file(&self, relative: &str, bytes: &[u8]) -> PathBuf {
        let path = self.dir().join(relative);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("folders");
        std::fs::write(&path, bytes).expect("write");
        path
    }

    fn link(&self, relative: &str, target: impl AsRef<Path>) {
        symlink(target, self.dir().join(relative)).expect("symlink");
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::set_permissions(&self.0, std::fs::Permissions::from_mode(0o755));
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn env(pairs: &[(&str, &str)]) -> Env {
    Env::from_map(pairs.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect::<BTreeMap<_, _>>())
}

fn reason(error: &SkillError) -> (&str, Option<&str>) {
    (error.code(), error.details().and_then(|d| d.get("reason")).and_then(|r| r.as_str()))
}

fn refused(folder: &Path, name: &str) -> String {
    let error = read_secret_file(folder, name).expect_err("refused");
    let (code, reason) = reason(&error);
    assert_eq!(code, "secret_file_rejected", "{error:?}");
    reason.expect("a reason").to_owned()
}

#[test]
fn the_name_guard_runs_before_the_environment() {
    let env = env(&[("agent-pat", "pat-value"), ("../x", "v"), ("a/b", "v")]);
    for name in ["", "../x", "a/b", "a\\b", "a\0b", "x..y"] {
        let error = read_secret(name, &env, None).expect_err("a path");
        assert_eq!(error.code(), "secret_name_invalid", "{name:?}");
        assert!(error.message().contains("can't be a path"), "{name:?}: {}", error.message());
    }
    let error = read_secret("agent-pat", &env, None).expect_err("reserved");
    assert_eq!(error.code(), "secret_name_invalid");
    assert!(error.message().contains("reserved"));
    assert!(!format!("{error:?}").contains("pat-value"));
}

#[test]
fn a_non_empty_variable_wins_verbatim() {
    let scratch = Scratch::new("env");
    scratch.file("crm-token", b"from-file\n");
    let from_env = read_secret("crm-token", &env(&[("crm-token", " spaced \n")]), Some(&scratch.dir()));
    assert_eq!(from_env.expect("env"), " spaced \n");
    let empty = read_secret("crm-token", &env(&[("crm-token", "")]), Some(&scratch.dir()));
    assert_eq!(empty.expect("falls through to the file"), "from-file");
}

#[test]
fn the_folder_is_the_argument_then_the_variable_then_the_default() {
    let given = Path::new("/given");
    assert_eq!(secrets_dir(&env(&[(SECRETS_DIR_VAR, "/from-var")]), Some(given)), PathBuf::from("/given"));
    assert_eq!(secrets_dir(&env(&[(SECRETS_DIR_VAR, "/from-var")]), None), PathBuf::from("/from-var"));
    assert_eq!(secrets_dir(&env(&[(SECRETS_DIR_VAR, "")]), None), PathBuf::from(DEFAULT_SECRETS_DIR));
    assert_eq!(secrets_dir(&env(&[]), None), PathBuf::from("/run/secrets"));
    let scratch = Scratch::new("var");
    scratch.file("crm-token", b"v");
    let folder = scratch.dir().to_string_lossy().into_owned();
    assert_eq!(read_secret("crm-token", &env(&[(SECRETS_DIR_VAR, &folder)]), None).expect("found"), "v");
}

#[test]
fn a_missing_secret_is_config_missing_naming_where_it_looked() {
    let scratch = Scratch::new("missing");
    let error =
        read_secret("crm-token", &env(&[("OTHER", "unrelated-value")]), Some(&scratch.dir())).expect_err("missing");
    assert_eq!((error.code(), error.retryable()), ("config_missing", true));
    let path = scratch.dir().join("crm-token");
    assert!(error.message().contains("environment variable crm-token"), "{}", error.message());
    assert!(error.message().contains(&path.display().to_string()), "{}", error.message());
    let details = error.details().expect("details");
    assert_eq!(details["secret"], "crm-token");
    assert_eq!(details["secretsDir"], scratch.dir().display().to_string());
    assert!(!format!("{error:?}").contains("unrelated-value"));
}

#[test]
fn a_blank_file_is_config_missing_saying_it_is_empty() {
    let scratch = Scratch::new("blank");
    scratch.file("crm-token", " \t\r\n\u{1c}\u{1f}\u{a0}\n".as_bytes());
    assert_eq!(read_secret_file(&scratch.dir(), "crm-token").expect("read"), Some(String::new()));
    let error = read_secret("crm-token", &env(&[]), Some(&scratch.dir())).expect_err("blank");
    assert_eq!(error.code(), "config_missing");
    assert!(error.message().contains("is empty"), "{}", error.message());
}

#[test]
fn a_name_that_is_not_a_file_name_is_not_searched() {
    let scratch = Scratch::new("pattern");
    scratch.file("EXT_TOKEN", b"never-read");
    let error = read_secret("EXT_TOKEN", &env(&[]), Some(&scratch.dir())).expect_err("not searched");
    assert_eq!(error.code(), "config_missing");
    assert!(error.message().contains("no file was searched"), "{}", error.message());
    assert_eq!(
        read_secret("EXT_TOKEN", &env(&[("EXT_TOKEN", "from-env")]), Some(&scratch.dir())).expect("env"),
        "from-env"
    );
    for name in ["EXT_TOKEN", "agent-pat", "../x", "-lead", &"a".repeat(64)] {
        assert_eq!(check_secret_name(name).expect_err(name).code(), "secret_name_invalid", "{name}");
    }
    assert!(check_secret_name(&"a".repeat(63)).is_ok());
}

#[test]
fn only_trailing_line_breaks_are_trimmed() {
    let scratch = Scratch::new("trim");
    for (content, expected) in
        [("v\r\n", "v"), (" v \r\n", " v "), ("a b\n", "a b"), ("\tv\n\r\n", "\tv"), ("v", "v"), ("l1\nl2\n", "l1\nl2")]
    {
        scratch.file("token", content.as_bytes());
        assert_eq!(read_secret_file(&scratch.dir(), "token").expect("read"), Some(expected.to_owned()), "{content:?}");
    }
}

#[test]
fn the_size_limit_is_inclusive() {
    let scratch = Scratch::new("size");
    scratch.file("token", &vec![b'a'; MAX_SECRET_BYTES]);
    assert_eq!(read_secret_file(&scratch.dir(), "token").expect("read").map(|v| v.len()), Some(65_536));
    scratch.file("token", &vec![b'a'; MAX_SECRET_BYTES + 1]);
    assert_eq!(refused(&scratch.dir(), "token"), "too_large");
}

#[test]
fn invalid_utf8_is_refused() {
    let scratch = Scratch::new("utf8");
    scratch.file("token", &[0x66, 0xff, 0xfe]);
    assert_eq!(refused(&scratch.dir(), "token"), "not_utf8");
}

#[test]
fn only_regular_files_are_read() {
    let scratch = Scratch::new("kinds");
    std::fs::create_dir(scratch.dir().join("folder")).expect("folder");
    assert_eq!(refused(&scratch.dir(), "folder"), "not_regular_file");
    rustix::fs::mknodat(
        rustix::fs::CWD,
        scratch.dir().join("fifo"),
        rustix::fs::FileType::Fifo,
        rustix::fs::Mode::from_raw_mode(0o600),
        0,
    )
    .expect("mkfifo");
    let started = std::time::Instant::now();
    assert_eq!(refused(&scratch.dir(), "fifo"), "not_regular_file");
    assert!(started.elapsed() < std::time::Duration::from_secs(5), "a FIFO never blocks the read");
    let _socket = std::os::unix::net::UnixListener::bind(scratch.dir().join("socket")).expect("socket");
    assert_eq!(refused(&scratch.dir(), "socket"), "not_regular_file");
    scratch.link("self", ".");
    assert_eq!(refused(&scratch.dir(), "self"), "not_regular_file");
}

#[test]
fn links_may_not_leave_the_folder() {
    let scratch = Scratch::new("outside");
    std::fs::write(scratch.0.join("outside"), "outside-value").expect("write");
    scratch.link("absolute", scratch.0.join("outside"));
    assert_eq!(refused(&scratch.dir(), "absolute"), "outside_secrets_dir");
    scratch.link("relative", "../outside");
    assert_eq!(refused(&scratch.dir(), "relative"), "outside_secrets_dir");
    std::fs::create_dir(scratch.dir().join("sub")).expect("sub");
    scratch.link("climb", "sub/../../outside");
    assert_eq!(refused(&scratch.dir(), "climb"), "outside_secrets_dir");
    let error = read_secret_file(&scratch.dir(), "absolute").expect_err("refused");
    assert!(!error.message().contains("outside-value") && !format!("{error:?}").contains("outside-value"));
}

#[test]
fn links_inside_the_folder_are_followed() {
    let scratch = Scratch::new("inside");
    scratch.file("data/real", b"inside-value\n");
    scratch.link("relative", "data/real");
    scratch.link("absolute", scratch.dir().join("data/real"));
    scratch.link("hop", "relative");
    scratch.link("up-and-down", "data/../data/real");
    for name in ["relative", "absolute", "hop", "up-and-down"] {
        assert_eq!(read_secret_file(&scratch.dir(), name).expect("read"), Some("inside-value".to_owned()), "{name}");
    }
    // The folder reached through a link of its own: targets under its real path are inside too.
    symlink(scratch.dir(), scratch.0.join("alias")).expect("alias");
    let real_target = std::fs::canonicalize(scratch.dir()).expect("real").join("data/real");
    scratch.link("by-real-path", real_target);
    assert_eq!(
        read_secret_file(&scratch.0.join("alias"), "by-real-path").expect("read"),
        Some("inside-value".to_owned())
    );
}

#[test]
fn absent_things_are_none() {
    let scratch = Scratch::new("absent");
    assert_eq!(read_secret_file(&scratch.0.join("no-folder"), "token").expect("read"), None);
    assert_eq!(read_secret_file(&scratch.dir(), "token").expect("read"), None);
    scratch.link("dangling", "nothing-here");
    assert_eq!(read_secret_file(&scratch.dir(), "dangling").expect("read"), None);
    scratch.file("plain", b"x");
    scratch.link("through-a-file", "plain/x");
    assert_eq!(read_secret_file(&scratch.dir(), "through-a-file").expect("read"), None);
    std::fs::write(scratch.0.join("a-file"), "x").expect("write");
    assert_eq!(read_secret_file(&scratch.0.join("a-file"), "token").expect("read"), None, "a file as the folder");
}

#[test]
fn too_many_links_are_unreadable() {
    let scratch = Scratch::new("loop");
    scratch.link("a", "b");
    scratch.link("b", "a");
    assert_eq!(refused(&scratch.dir(), "a"), "unreadable");
    scratch.file("end", b"v");
    let mut previous = "end".to_owned();
    for i in 0..=MAX_SYMLINKS {
        let name = format!("chain{i}");
        scratch.link(&name, &previous);
        previous = name;
    }
    assert_eq!(refused(&scratch.dir(), &previous), "unreadable", "41 links");
    assert_eq!(read_secret_file(&scratch.dir(), "chain39").expect("40 links"), Some("v".to_owned()));
}

/// Replaces the folder by a new one holding `token` = `value`.
fn replace_folder(scratch: &Scratch, value: &str, round: usize) {
    std::fs::rename(scratch.dir(), scratch.0.join(format!("old-{round}"))).expect("move away");
    std::fs::create_dir(scratch.dir()).expect("new folder");
    std::fs::write(scratch.dir().join("token"), value).expect("write");
}

#[test]
fn a_folder_swapped_during_the_read_is_read_again() {
    let scratch = Scratch::new("swap-folder");
    scratch.file("token", b"old");
    let mut swaps = 0;
    let value = read_secret_file_with(&scratch.dir(), "token", &mut |point| {
        if point == Point::FolderOpened && swaps == 0 {
            swaps += 1;
            replace_folder(&scratch, "new", swaps);
        }
    });
    assert_eq!(value.expect("read"), Some("new".to_owned()));

    let mut swaps = 0;
    let error = read_secret_file_with(&scratch.dir(), "token", &mut |point| {
        if point == Point::FolderOpened {
            swaps += 1;
            replace_folder(&scratch, "again", swaps + 10);
        }
    })
    .expect_err("swapped on every attempt");
    assert_eq!(reason(&error), ("secret_file_rejected", Some("symlink_swapped")));
    assert_eq!(swaps, 3, "three attempts");
}

#[test]
fn a_file_swapped_between_check_and_open_is_read_again() {
    let scratch = Scratch::new("swap-file");
    scratch.file("token", b"first");
    let mut swapped = false;
    let value = read_secret_file_with(&scratch.dir(), "token", &mut |point| {
        if point == Point::Checked("token") && !swapped {
            swapped = true;
            std::fs::write(scratch.dir().join("token.new"), "second").expect("write");
            std::fs::rename(scratch.dir().join("token.new"), scratch.dir().join("token")).expect("replace");
        }
    });
    assert_eq!(value.expect("read"), Some("second".to_owned()));

    let mut swapped = false;
    let value = read_secret_file_with(&scratch.dir(), "token", &mut |point| {
        if point == Point::Checked("token") && !swapped {
            swapped = true;
            std::fs::remove_file(scratch.dir().join("token")).expect("remove");
            symlink("/etc/hostname", scratch.dir().join("token")).expect("link outside");
        }
    });
    let error = value.expect_err("the swapped-in link leads outside");
    assert_eq!(reason(&error), ("secret_file_rejected", Some("outside_secrets_dir")));
}

#[test]
fn an_intermediate_folder_swapped_during_the_read_is_read_again() {
    let scratch = Scratch::new("swap-middle");
    scratch.file("sub/token", b"before");
    scratch.link("token", "sub/token");
    let mut swapped = false;
    let value = read_secret_file_with(&scratch.dir(), "token", &mut |point| {
        if point == Point::Checked("sub") && !swapped {
            swapped = true;
            std::fs::rename(scratch.dir().join("sub"), scratch.dir().join("sub.old")).expect("move");
            std::fs::create_dir(scratch.dir().join("sub")).expect("new sub");
            std::fs::write(scratch.dir().join("sub/token"), "after").expect("write");
        }
    });
    assert_eq!(value.expect("read"), Some("after".to_owned()));
}

#[test]
fn a_kubernetes_rotation_during_the_read_gives_the_new_value() {
    let scratch = Scratch::new("k8s");
    scratch.file("..v1/token", b"one\n");
    scratch.link("..data", "..v1");
    scratch.link("token", "..data/token");
    assert_eq!(read_secret_file(&scratch.dir(), "token").expect("read"), Some("one".to_owned()));

    let mut rotated = false;
    let value = read_secret_file_with(&scratch.dir(), "token", &mut |point| {
        if point == Point::Checked("..v1") && !rotated {
            rotated = true;
            scratch.file("..v2/token", b"two\n");
            symlink("..v2", scratch.dir().join("..data_tmp")).expect("new link");
            std::fs::rename(scratch.dir().join("..data_tmp"), scratch.dir().join("..data")).expect("switch");
            std::fs::remove_dir_all(scratch.dir().join("..v1")).expect("old version gone");
        }
    });
    assert!(rotated, "the walk went through ..v1");
    assert_eq!(value.expect("read"), Some("two".to_owned()));
}

/// Run as `nobody` by the test below: reads the secret named by the environment and prints the
/// error code.
#[test]
#[allow(clippy::print_stdout)] // the child reports to its parent on stdout
fn child_reads_as_nobody() {
    let (Ok(folder), Ok(name)) = (std::env::var("SKILL_SECRETS_CHILD_DIR"), std::env::var("SKILL_SECRETS_CHILD_NAME"))
    else {
        return;
    };
    match read_secret_file(Path::new(&folder), &name) {
        Ok(value) => println!("\nchild-result: value {}", value.is_some()),
        Err(error) => println!(
            "\nchild-result: {} {} {}",
            error.code(),
            error.retryable(),
            error.details().and_then(|d| d.get("path")).and_then(|p| p.as_str()).unwrap_or("")
        ),
    }
}

#[test]
fn a_user_without_rights_gets_secret_unreadable() {
    use std::os::unix::process::CommandExt;
    let scratch = Scratch::new("rights");
    std::fs::set_permissions(&scratch.0, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    scratch.file("closed-file", b"v");
    std::fs::set_permissions(scratch.dir().join("closed-file"), std::fs::Permissions::from_mode(0o600)).expect("chmod");
    std::fs::create_dir(scratch.0.join("closed-folder")).expect("folder");
    std::fs::write(scratch.0.join("closed-folder/token"), "v").expect("write");
    std::fs::set_permissions(scratch.0.join("closed-folder"), std::fs::Permissions::from_mode(0o700)).expect("chmod");
    // The test binary may sit where `nobody` cannot reach it (a checkout under /root): run a copy.
    let binary = scratch.0.join("test-binary");
    std::fs::copy(std::env::current_exe().expect("test binary"), &binary).expect("copy the test binary");
    std::fs::set_permissions(&binary, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let run_as_nobody = |folder: &Path, name: &str| {
        let output = std::process::Command::new(&binary)
            .args(["--exact", "secrets::tests::child_reads_as_nobody", "--nocapture", "--test-threads=1"])
            .env("SKILL_SECRETS_CHILD_DIR", folder)
            .env("SKILL_SECRETS_CHILD_NAME", name)
            .uid(65534)
            .gid(65534)
            .output()
            .expect("the child runs");
        let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
        stdout
            .lines()
            .find_map(|l| l.split_once("child-result: ").map(|(_, r)| r.trim().to_owned()))
            .unwrap_or_else(|| panic!("no result from the child: {stdout}{}", String::from_utf8_lossy(&output.stderr)))
    };
    let file_path = scratch.dir().join("closed-file");
    assert_eq!(run_as_nobody(&scratch.dir(), "closed-file"), format!("secret_unreadable true {}", file_path.display()));
    let folder = scratch.0.join("closed-folder");
    assert_eq!(run_as_nobody(&folder, "token"), format!("secret_unreadable true {}", folder.join("token").display()));
    std::fs::set_permissions(scratch.dir().join("closed-file"), std::fs::Permissions::from_mode(0o644)).expect("chmod");
    assert_eq!(run_as_nobody(&scratch.dir(), "closed-file"), "value true", "readable once allowed");
}
