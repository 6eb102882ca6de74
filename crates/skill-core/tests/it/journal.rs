//! The tamper-evident journal against whoever holds the database: a copy of the claims story's
//! database, changed by SQL with every guard dropped as such a person would, then exported and
//! verified by `skill-core journal`. Each change of the corpus is found, naming the entry at
//! fault; the untouched copy verifies, with our verifier and the standard-library Python one.

use std::path::{Path, PathBuf};
use std::process::Command;

use rusqlite::Connection;
use skill_journal::tree::{Levels, Nodes as _, leaf_hash};

use crate::running::CORE;

/// The Python verifier kept with the journal's crate.
pub(crate) fn python_verifier() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../skill-journal/tests/python/export.py")
}

/// `skill-core ARGS`: its exit code and stdout.
pub(crate) fn core(args: &[&str]) -> (i32, String, String) {
    let output = Command::new(CORE).args(args).output().expect("skill-core runs");
    (
        output.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&output.stdout).to_string(),
        String::from_utf8_lossy(&output.stderr).to_string(),
    )
}

/// Exports the database in `data` to `out` (`journal export`).
pub(crate) fn export(data: &Path, out: &Path) {
    let (code, _, err) =
        core(&["journal", "export", "--db", &data.display().to_string(), "--out", &out.display().to_string()]);
    assert_eq!(code, 0, "export: {err}");
}

/// `journal verify` of the export at `dir`, trusting `trusted`: exit code and what it printed.
pub(crate) fn verify(dir: &Path, trusted: &Path) -> (i32, String) {
    let (code, out, err) =
        core(&["journal", "verify", &dir.display().to_string(), "--trust", &trusted.display().to_string()]);
    (code, format!("{out}{err}"))
}

/// A copy of the database folder `data` in `to`, consistent while the core still runs.
pub(crate) fn snapshot(data: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("a folder");
    let source = Connection::open(data.join("core.db")).expect("opens");
    source.execute("VACUUM INTO ?1", [to.join("core.db").display().to_string()]).expect("copied");
}

fn open(data: &Path) -> Connection {
    let connection = Connection::open(data.join("core.db")).expect("opens");
    // As whoever holds the database: every guard gone.
    let triggers: Vec<String> = connection
        .prepare("SELECT name FROM sqlite_master WHERE type = 'trigger'")
        .expect("prepared")
        .query_map([], |row| row.get(0))
        .expect("read")
        .collect::<Result<_, _>>()
        .expect("names");
    for trigger in triggers {
        connection.execute_batch(&format!("DROP TRIGGER \"{trigger}\"")).expect("dropped");
    }
    connection.execute_batch("PRAGMA foreign_keys = OFF").expect("off");
    connection
}

/// The leaf index of the event of `kind` about `subject`.
fn index_of(connection: &Connection, kind: &str, subject: &str) -> i64 {
    connection
        .query_row(
            "SELECT l.idx FROM journal_leaves l JOIN events e ON e.seq = l.event_seq WHERE e.kind = ?1 AND e.subject = ?2",
            [kind, subject],
            |row| row.get(0),
        )
        .unwrap_or_else(|error| panic!("no {kind} of {subject}: {error}"))
}

fn size(connection: &Connection) -> i64 {
    connection.query_row("SELECT count(*) FROM journal_leaves", [], |row| row.get(0)).expect("counted")
}

/// What a careful forger does after changing entries: every stored hash made again from them, so
/// nothing inside the database gives the change away.
fn rehash(connection: &Connection) {
    let entries: Vec<String> = connection
        .prepare("SELECT e.entry FROM journal_leaves l JOIN events e ON e.seq = l.event_seq ORDER BY l.idx")
        .expect("prepared")
        .query_map([], |row| row.get(0))
        .expect("read")
        .collect::<Result<_, _>>()
        .expect("entries");
    let count = entries.len() as u64;
    let levels = Levels::new(entries.iter().map(|entry| leaf_hash(entry.as_bytes())).collect());
    let signed = |n: u64| i64::try_from(n).expect("small");
    connection.execute("DELETE FROM journal_nodes", []).expect("emptied");
    let mut insert = connection.prepare("INSERT INTO journal_nodes (level, idx, hash) VALUES (?1, ?2, ?3)").expect("p");
    for level in 0..64_u32 {
        for at in 0..(count >> level) {
            insert.execute((level, signed(at), &levels.node(level, at)[..])).expect("a node");
        }
        if count >> level == 0 {
            break;
        }
    }
    connection.execute("UPDATE journal_head SET size = ?1", [signed(count)]).expect("head");
}

/// The entry of the event at `index`, changed by `change`, written back (with the event's data).
fn rewrite(connection: &Connection, index: i64, change: impl Fn(&mut serde_json::Value)) {
    let (seq, entry, data): (i64, String, String) = connection
        .query_row(
            "SELECT e.seq, e.entry, e.data FROM journal_leaves l JOIN events e ON e.seq = l.event_seq WHERE l.idx = ?1",
            [index],
            |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)),
        )
        .expect("the entry");
    let mut entry: serde_json::Value = serde_json::from_str(&entry).expect("JSON");
    let mut data: serde_json::Value = serde_json::from_str(&data).expect("JSON");
    change(&mut entry["clear"]);
    change(&mut data);
    let salt: Vec<u8> =
        connection.query_row("SELECT salt FROM events WHERE seq = ?1", [seq], |row| row.get(0)).expect("salt");
    let salt: [u8; 16] = salt.try_into().expect("16 bytes");
    entry["data"] = serde_json::Value::String(skill_journal::entry::payload_digest(&salt, &data));
    let entry = skill_journal::entry::canonical(&entry);
    connection
        .execute("UPDATE events SET entry = ?1, data = ?2 WHERE seq = ?3", (entry, data.to_string(), seq))
        .expect("rewritten");
}

/// The corpus: each change, made on its own copy of `snapshot`, is found by `journal verify`
/// with the index at fault; `trusted` is the checkpoint the core sent outside, `call` the
/// external write the story made.
pub(crate) fn tamper_corpus(snapshot_dir: &Path, trusted: &Path, call: &str, scratch: &Path) {
    let call_subject = format!("skill_invocation:{call}");
    let mut found = 0;
    let mut case = |name: &str, tamper: &dyn Fn(&Connection) -> (i32, Vec<String>)| {
        let copy = scratch.join(name);
        snapshot(snapshot_dir, &copy);
        let connection = open(&copy);
        let (expected_code, expected) = tamper(&connection);
        drop(connection);
        let out = scratch.join(format!("{name}-export"));
        export(&copy, &out);
        let (code, said) = verify(&out, trusted);
        assert_eq!(code, expected_code, "{name}: {said}");
        for needle in &expected {
            assert!(said.contains(needle.as_str()), "{name}: {needle:?} not in {said}");
        }
        found += 1;
    };

    case("flipped-byte", &|db| {
        let at = index_of(db, "skill.invocation_requested", &call_subject);
        db.execute(
            "UPDATE events SET entry = replace(entry, '\"kind\":\"skill.', '\"kind\":\"skilL.') \
             WHERE seq = (SELECT event_seq FROM journal_leaves WHERE idx = ?1)",
            [at],
        )
        .expect("flipped");
        (2, vec![format!("index {at}: the entry at index {at} does not hash"), "entry_changed".into()])
    });
    case("deleted-row", &|db| {
        let at = size(db) / 2;
        db.execute("DELETE FROM events WHERE seq = (SELECT event_seq FROM journal_leaves WHERE idx = ?1)", [at])
            .expect("d");
        db.execute("DELETE FROM journal_leaves WHERE idx = ?1", [at]).expect("deleted");
        (2, vec![format!("index {at}: the entry at index {at} is missing"), "entry_missing".into()])
    });
    case("rows-swapped", &|db| {
        let (a, b) = (3_i64, 7_i64);
        let seq = |at: i64| -> i64 {
            db.query_row("SELECT event_seq FROM journal_leaves WHERE idx = ?1", [at], |row| row.get(0)).expect("seq")
        };
        let (sa, sb) = (seq(a), seq(b));
        db.execute("UPDATE journal_leaves SET event_seq = -1 WHERE idx = ?1", [a]).expect("moved");
        db.execute("UPDATE journal_leaves SET event_seq = ?1 WHERE idx = ?2", (sa, b)).expect("moved");
        db.execute("UPDATE journal_leaves SET event_seq = ?1 WHERE idx = ?2", (sb, a)).expect("moved");
        (2, vec![format!("index {a}: the entry at index {a} does not hash"), format!("index {b}:")])
    });
    case("tail-cut", &|db| {
        let cut = size(db) - 3;
        db.execute("DELETE FROM events WHERE seq IN (SELECT event_seq FROM journal_leaves WHERE idx >= ?1)", [cut])
            .expect("d");
        db.execute("DELETE FROM journal_leaves WHERE idx >= ?1", [cut]).expect("cut");
        db.execute("DELETE FROM journal_checkpoints WHERE size > ?1", [cut]).expect("cut");
        rehash(db);
        (2, vec![format!("index {cut}: the trusted checkpoint signs"), "tail_cut".into()])
    });
    case("approver-replaced", &|db| {
        let at = index_of(db, "skill.invocation_requested", &call_subject);
        let basis: String = db
            .query_row(
                "SELECT json_extract(data, '$.authorizationBasis.approvalId') FROM events WHERE kind = ?1 AND subject = ?2",
                ["skill.invocation_requested", &call_subject],
                |row| row.get(0),
            )
            .expect("the call's approval");
        let decision = index_of(db, "approval.decided", &format!("approval:{basis}"));
        rewrite(db, decision, |value| value["decidedBy"] = serde_json::Value::String("someone-else".into()));
        rehash(db);
        (
            2,
            vec![
                format!("index {at}: the external write at index {at}"),
                "basis_decider_mismatch".into(),
                "root_mismatch".into(),
            ],
        )
    });
    case("approval-replayed", &|db| {
        let at = index_of(db, "skill.invocation_requested", &call_subject);
        let other = "0190aaaa-0000-7000-8000-000000000001";
        db.execute(
            "INSERT INTO events (id, kind, subject, data, actor_id, request_id, created_at, entry, salt) \
             SELECT 'replayed', kind, 'skill_invocation:' || ?1, data, actor_id, request_id, created_at, \
             replace(replace(entry, ?2, ?1), id, 'replayed'), salt FROM events WHERE kind = 'skill.invocation_requested' AND subject = ?3",
            (other, call, &call_subject),
        )
        .expect("replayed");
        let seq = db.last_insert_rowid();
        let end = size(db);
        db.execute("INSERT INTO journal_leaves (idx, event_seq) VALUES (?1, ?2)", (end, seq)).expect("a leaf");
        rehash(db);
        (
            3,
            vec![
                format!("index {end}: the approval"),
                format!("already made at index {at}"),
                "basis_spent_twice".into(),
            ],
        )
    });
    case("history-re-signed", &|db| {
        // Rewritten, hashed again and signed again by a key of the same name the forger made.
        let at = index_of(db, "skill.invocation_requested", &call_subject);
        rewrite(db, at, |value| value["skill"] = serde_json::Value::String("claim.other".into()));
        rehash(db);
        let name: String = db
            .query_row("SELECT key FROM journal_checkpoints ORDER BY size DESC LIMIT 1", [], |row| row.get(0))
            .expect("the key");
        let name = name.split('+').next().expect("a name").to_owned();
        let forger = skill_journal::Signer::generate(&name).expect("a key");
        let total = size(db);
        let levels: Vec<[u8; 32]> = db
            .prepare("SELECT hash FROM journal_nodes WHERE level = 0 ORDER BY idx")
            .expect("p")
            .query_map([], |row| row.get::<_, Vec<u8>>(0))
            .expect("read")
            .map(|hash| hash.expect("a hash").try_into().expect("32 bytes"))
            .collect();
        let root = skill_journal::tree::root(&levels[..], total as u64);
        let checkpoint = skill_journal::Checkpoint { origin: name, size: total as u64, root };
        db.execute("DELETE FROM journal_checkpoints", []).expect("gone");
        db.execute(
            "INSERT INTO journal_checkpoints (size, root, note, key, signed_at) VALUES (?1, ?2, ?3, ?4, '2026-01-01T00:00:00Z')",
            (total, &root[..], forger.sign(&checkpoint.body()), forger.verifier().text()),
        )
        .expect("re-signed");
        (2, vec!["the trusted checkpoint is not signed by the key".into(), "checkpoint_unsigned".into()])
    });
    assert_eq!(found, 7, "every change of the corpus was found");
}

/// `journal explain` of `call` on copies of `snapshot_dir` changed behind the journal's back:
/// each change is said (exit 2), and the chain is told as the journal proves it, not as the
/// database now has it.
pub(crate) fn explain_corpus(snapshot_dir: &Path, call: &str, scratch: &Path) {
    let explain = |name: &str, tamper: &dyn Fn(&Connection)| {
        let copy = scratch.join(format!("explain-{name}"));
        snapshot(snapshot_dir, &copy);
        tamper(&open(&copy));
        core(&["journal", "explain", "--db", &copy.display().to_string(), call])
    };
    // The reviewer renamed in the database: the name stays the one the journal proves.
    let (code, out, err) = explain("renamed", &|db| {
        db.execute("UPDATE principals SET name = 'mallory' WHERE name = 'dev-reviewer'", []).expect("renamed");
    });
    assert_eq!(code, 2, "{out}{err}");
    assert!(out.contains("approved by dev-reviewer (") && !out.contains("mallory ("), "{out}");
    assert!(err.contains("names it \"dev-reviewer\"") && err.contains("\"mallory\""), "{err}");
    // The decision's payload changed without its entry: not read as the decision.
    let (code, out, err) = explain("decision-changed", &|db| {
        db.execute(
            "UPDATE events SET data = json_set(data, '$.decidedBy', 'someone-else') WHERE kind = 'approval.decided'",
            [],
        )
        .expect("changed");
    });
    assert_eq!(code, 2, "{out}{err}");
    assert!(!out.contains("someone-else") && err.contains("is not the one its digest commits to"), "{out}{err}");
    assert!(out.contains("approved by dev-reviewer ("), "the decision as its entry keeps it: {out}");
    // Payloads erased (as erasure does): the chain is read from what the entries keep in the
    // clear; a name whose entry is erased is the database's, and said to be unproven.
    let (code, out, err) = explain("erased", &|db| {
        db.execute(
            "UPDATE events SET data = '{}', salt = NULL WHERE kind IN ('skill.invocation_requested', \
             'approval.decided', 'approval.requested', 'principal.created')",
            [],
        )
        .expect("erased");
    });
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("claim.send_reply@1, an external write"), "{out}");
    assert!(out.contains("approved by dev-reviewer (") && out.contains("no entry of the journal proves it"), "{out}");
    assert!(out.contains("the four-eyes rule holds"), "{out}");
    // The decider rewritten in the entry, every hash made again: the tree no longer has the
    // signed checkpoint's root, as journal verify finds.
    let (code, out, err) = explain("decider-rewritten", &|db| {
        let basis: String = db
            .query_row(
                "SELECT json_extract(data, '$.authorizationBasis.approvalId') FROM events WHERE kind = ?1 AND subject = ?2",
                ["skill.invocation_requested", &format!("skill_invocation:{call}")],
                |row| row.get(0),
            )
            .expect("the call's approval");
        let decision = index_of(db, "approval.decided", &format!("approval:{basis}"));
        rewrite(db, decision, |value| value["decidedBy"] = serde_json::Value::String("someone-else".into()));
        rehash(db);
    });
    assert_eq!(code, 2, "{out}{err}");
    assert!(err.contains("root_mismatch") || err.contains("basis_decider_mismatch"), "{err}");
}

/// Whoever holds only the database rewrites an entry, every stored hash and the checkpoints
/// (deleting them all), then restarts the core: it reads back the checkpoint it sent outside,
/// refuses to sign the rewritten tree, and leaves that checkpoint as it was. The audit commands
/// refuse a database that is not there and a folder that is not empty.
#[test]
fn a_core_never_signs_a_history_rewritten_behind_the_checkpoint_it_sent_out() {
    let folder = std::env::temp_dir().join(format!("skill-journal-resign-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&folder);
    std::fs::create_dir_all(&folder).expect("a folder");
    let (data, key, sent) = (folder.join("data"), folder.join("journal.key"), folder.join("sent.note"));
    let text = |path: &Path| path.display().to_string();
    let (code, verifier, err) = core(&["journal", "keygen", "--name", "tests.example/journal", "--out", &text(&key)]);
    assert_eq!(code, 0, "{err}");
    let verifier = verifier.trim().to_owned();
    for name in ["ana", "rui", "eve"] {
        let (code, _, err) = core(&["token", "create", "--db", &text(&data), "--name", name, "--grant", "org.read"]);
        assert_eq!(code, 0, "{err}");
    }
    let serve = || {
        crate::running::start(
            &[
                "serve",
                "--db",
                &text(&data),
                "--listen",
                "127.0.0.1:0",
                "--journal-key",
                &text(&key),
                "--journal-send-file",
                &text(&sent),
            ],
            false,
        )
    };
    let mut first = serve();
    first.address(30);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while !sent.exists() {
        assert!(std::time::Instant::now() < deadline, "no checkpoint was sent");
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    first.stop(rustix::process::Signal::TERM);
    let published = std::fs::read_to_string(&sent).expect("the checkpoint sent");

    let connection = open(&data);
    let at = index_of(&connection, "token.created", &{
        let id: String = connection
            .query_row("SELECT subject FROM events WHERE kind = 'token.created' ORDER BY seq LIMIT 1", [], |row| {
                row.get(0)
            })
            .expect("a token's event");
        id
    });
    rewrite(&connection, at, |value| value["label"] = serde_json::Value::String("rewritten".into()));
    rehash(&connection);
    connection.execute("DELETE FROM journal_sends", []).expect("gone");
    connection.execute("DELETE FROM journal_checkpoints", []).expect("gone");
    drop(connection);

    let mut again = serve();
    let said = again.until(20, |line| line.contains("journal_inconsistent"));
    let refusal = said.last().expect("a line");
    assert!(refusal.contains("the checkpoint sent outside the database"), "{refusal}");
    std::thread::sleep(std::time::Duration::from_millis(2_500));
    again.stop(rustix::process::Signal::TERM);
    assert_eq!(std::fs::read_to_string(&sent).expect("still there"), published, "the sent checkpoint is kept");
    let signed: i64 = Connection::open(data.join("core.db"))
        .expect("opens")
        .query_row("SELECT count(*) FROM journal_checkpoints", [], |row| row.get(0))
        .expect("counted");
    assert_eq!(signed, 0, "nothing was signed over the rewritten history");
    // The export, checked against what was sent: the rewrite is found.
    let export_to = folder.join("export");
    super::journal::export(&data, &export_to);
    let (code, out, err) = core(&["journal", "verify", &text(&export_to), "--trust", &text(&sent), "--key", &verifier]);
    assert_eq!(code, 2, "{out}{err}");
    assert!(
        out.contains("index 0: the entries do not hash to the trusted checkpoint") && out.contains("root_mismatch"),
        "{out}"
    );

    // An audit never makes an empty database, nor writes into a folder with something in it.
    let (code, _, err) =
        core(&["journal", "export", "--db", &text(&folder.join("no-such")), "--out", &text(&folder.join("x"))]);
    assert_eq!(code, 1);
    assert!(err.contains("--db: no database at"), "{err}");
    assert!(!folder.join("no-such").exists());
    let planted = folder.join("planted");
    std::fs::create_dir_all(&planted).expect("a folder");
    std::os::unix::fs::symlink(folder.join("victim"), planted.join("checkpoints.jsonl")).expect("a link");
    let (code, _, err) = core(&["journal", "export", "--db", &text(&data), "--out", &text(&planted)]);
    assert_eq!(code, 1);
    assert!(err.contains("is not an empty folder"), "{err}");
    assert!(!folder.join("victim").exists());
    let _ = std::fs::remove_dir_all(&folder);
}

/// With every guard in place, an event appended by SQL with a hash planted beside it is not
/// signed over (the core makes the hashes after the last checkpoint again from the entries), and a
/// checkpoint row of another key is never served as the core's.
#[test]
fn a_planted_hash_is_never_signed_and_a_planted_checkpoint_never_served() {
    let folder = std::env::temp_dir().join(format!("skill-journal-planted-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&folder);
    std::fs::create_dir_all(&folder).expect("a folder");
    let (data, key) = (folder.join("data"), folder.join("journal.key"));
    let text = |path: &Path| path.display().to_string();
    let (code, _, err) = core(&["journal", "keygen", "--out", &text(&key)]);
    assert_eq!(code, 0, "{err}");
    let (code, token, err) = core(&["token", "create", "--db", &text(&data), "--name", "ana", "--grant", "org.read"]);
    assert_eq!(code, 0, "{err}");
    let token = token.trim().to_owned();
    let serve = || {
        crate::running::start(
            &["serve", "--db", &text(&data), "--listen", "127.0.0.1:0", "--journal-key", &text(&key)],
            false,
        )
    };
    let read = |address: &str, path: &str| -> serde_json::Value {
        let output = Command::new("curl")
            .args(["-s", "-H", &format!("Authorization: Bearer {token}"), &format!("http://{address}/api/v1{path}")])
            .output()
            .expect("curl runs");
        serde_json::from_slice(&output.stdout).expect("JSON")
    };
    let signed = |connection: &Connection| -> i64 {
        connection
            .query_row("SELECT coalesce(max(size), 0) FROM journal_checkpoints", [], |row| row.get(0))
            .expect("read")
    };
    let mut first = serve();
    let address = first.address(30);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while read(&address, "/journal/checkpoint")["size"].as_u64().is_none() {
        assert!(std::time::Instant::now() < deadline, "no checkpoint was signed");
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    first.stop(rustix::process::Signal::TERM);

    // The guards stay: a well-formed event appended, and a hash of the attacker's beside it.
    let connection = Connection::open(data.join("core.db")).expect("opens");
    let before = signed(&connection);
    connection
        .execute_batch(
            "BEGIN; \
             INSERT INTO events (id, kind, subject, data, actor_id, request_id, created_at, entry, salt) \
             SELECT 'planted', kind, subject, data, actor_id, request_id, created_at, replace(entry, id, 'planted'), salt \
             FROM events WHERE seq = (SELECT min(seq) FROM events); \
             INSERT INTO journal_nodes (level, idx, hash) SELECT 0, size - 1, zeroblob(32) FROM journal_head; \
             COMMIT;",
        )
        .expect("appended with a planted hash");
    let mut again = serve();
    let address = again.address(30);
    let said = again.until(20, |line| line.contains("journal_inconsistent"));
    assert!(said.last().is_some_and(|line| line.contains("does not match them")), "{said:?}");
    // A checkpoint row of another key at the head: the core still serves its own.
    let forger = skill_journal::Signer::generate("skill-core/journal").expect("a key");
    let size: i64 = connection.query_row("SELECT size FROM journal_head", [], |row| row.get(0)).expect("size");
    let body =
        skill_journal::Checkpoint { origin: "skill-core/journal".into(), size: size as u64, root: [9; 32] }.body();
    connection
        .execute(
            "INSERT INTO journal_checkpoints (size, root, note, key, signed_at) VALUES (?1, ?2, ?3, ?4, '2026-01-01T00:00:00Z')",
            (size, &[9_u8; 32][..], forger.sign(&body), forger.verifier().text()),
        )
        .expect("a forged row");
    let served = read(&address, "/journal/checkpoint");
    assert_eq!(served["size"].as_i64(), Some(before), "{served}");
    assert_ne!(served["key"].as_str(), Some(forger.verifier().text().as_str()));
    again.stop(rustix::process::Signal::TERM);
    let ours: i64 = connection
        .query_row(
            "SELECT count(*) FROM journal_checkpoints WHERE size > ?1 AND key <> ?2",
            (before, forger.verifier().text()),
            |row| row.get(0),
        )
        .expect("counted");
    assert_eq!(ours, 0, "nothing was signed over the planted hash");
    let _ = std::fs::remove_dir_all(&folder);
}
