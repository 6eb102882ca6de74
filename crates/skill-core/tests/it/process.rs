//! `skill-core` as an operator runs it: a token issued from the command line, the API served on
//! PostgreSQL and on an embedded SQLite directory, stopped with SIGTERM.

use skill_api::Code;
use std::process::Command;

use skill_fixtures::Running;

use crate::running::{self, CORE};
use serde_json::{Value, json};

pub(crate) fn token(db: &str) -> String {
    let output = Command::new(CORE)
        .args(["token", "create", "--db", db, "--name", "ops", "--grant", "org.manage", "--label", "bootstrap"])
        .output()
        .expect("skill-core runs");
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("it is shown once"), "{stderr}");
    let token = String::from_utf8_lossy(&output.stdout).trim().to_owned();
    assert!(token.starts_with("skp_") && !stderr.contains(&token), "the token goes to stdout only");
    token
}

/// `skill-core serve` on `db`: the process, its base URL, and the line that says where it listens.
fn serve(db: &str) -> (Running, String, String) {
    let mut running = running::start(&["serve", "--db", db, "--listen", "127.0.0.1:0"], false);
    let start = running.until(30, |line| line.contains("on http://")).pop().expect("a line");
    let rest = start.split("on http://").nth(1).expect("an address");
    let base = format!("http://{}", rest.split('/').next().unwrap_or_default());
    (running, base, start)
}

fn publish_and_read(base: &str, token: &str) {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
    runtime.block_on(async {
        let client = reqwest::Client::new();
        let body = json!({"name": "claim.classify", "version": "1", "sideEffects": "none", "riskLevel": "low",
                          "contract": {"inputs": {"type": "object"}, "outputs": {"type": "object"},
                                       "implementation": {"protocol": "local", "entrypoint": "claims.skills:classify"}}});
        let created = client.post(format!("{base}/api/v1/skills")).bearer_auth(token).json(&body).send().await.expect("answers");
        assert_eq!(created.status().as_u16(), 201);
        let read = client.get(format!("{base}/api/v1/skills/claim.classify")).bearer_auth(token).send().await.expect("answers");
        let read: Value = read.json().await.expect("JSON");
        assert_eq!(read["contract"]["timeoutSeconds"], 60);
        let ready = client.get(format!("{base}/readyz")).send().await.expect("answers");
        assert_eq!(ready.status().as_u16(), 200);
    });
}

#[test]
fn an_operator_bootstraps_and_serves_on_sqlite() {
    let folder = std::env::temp_dir().join(format!("skill-core-process-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&folder);
    let db = folder.to_str().expect("utf-8").to_owned();
    let created = Command::new(CORE)
        .args(["workspace", "create", "--db", &db, "--key", "claims", "--name", "Claims desk"])
        .output()
        .expect("skill-core runs");
    assert!(created.status.success(), "{}", String::from_utf8_lossy(&created.stderr));
    let clerk = Command::new(CORE)
        .args(["token", "create", "--db", &db, "--name", "clerk", "--grant", "tasks.write@claims"])
        .output()
        .expect("skill-core runs");
    assert!(clerk.status.success(), "{}", String::from_utf8_lossy(&clerk.stderr));
    let missing = Command::new(CORE)
        .args(["token", "create", "--db", &db, "--name", "clerk", "--grant", "tasks.write@nowhere"])
        .output()
        .expect("skill-core runs");
    assert_eq!(missing.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&missing.stderr).contains("workspace nowhere not found"));
    let token = token(&db);
    let (served, base, _) = serve(&db);
    publish_and_read(&base, &token);
    let lines = served.stop(rustix::process::Signal::TERM);
    assert!(lines.iter().any(|line| line.contains("skill-core stopped")), "{lines:?}");
    assert!(folder.join("core.db").exists(), "a data directory holds core.db");
    let _ = std::fs::remove_dir_all(&folder);
}

#[test]
fn an_operator_bootstraps_and_serves_on_postgres() {
    let admin = std::env::var("SKILL_TEST_POSTGRES_URL").expect(
        "SKILL_TEST_POSTGRES_URL names a PostgreSQL superuser URL; `cargo xtask test -p skill-core` starts a server and sets it",
    );
    let name = format!("skill_core_process_{}", std::process::id());
    let created = Command::new("psql")
        .args([admin.as_str(), "-q", "-c", &format!("CREATE DATABASE {name}")])
        .output()
        .expect("psql runs");
    assert!(created.status.success(), "{}", String::from_utf8_lossy(&created.stderr));
    let (base, _) = admin.rsplit_once('/').expect("a URL with a database");
    let db = format!("{base}/{name}");
    let token = token(&db);
    let (served, base, start) = serve(&db);
    assert!(start.contains("(database: postgres://"), "{start}");
    publish_and_read(&base, &token);
    let lines = served.stop(rustix::process::Signal::TERM);
    assert!(lines.iter().any(|line| line.contains("skill-core stopped")), "{lines:?}");

    let refused =
        Command::new(CORE).args(["token", "revoke", "--db", &db, "no-such-token"]).output().expect("skill-core runs");
    assert_eq!(refused.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&refused.stderr).contains("not_found"));
}

/// `token create` refuses a life that would overflow or is already over, and a label with
/// control characters, and prints no token when it refuses; the engine refuses the same for
/// any other caller.
#[test]
fn token_create_refuses_bad_lives_and_labels() {
    let folder = std::env::temp_dir().join(format!("skill-core-token-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&folder);
    let db = folder.to_str().expect("utf-8").to_owned();
    let create = |extra: &[&str]| {
        Command::new(CORE)
            .args(["token", "create", "--db", &db, "--name", "ops", "--grant", "org.read"])
            .args(extra)
            .output()
            .expect("skill-core runs")
    };
    for days in ["4294967295", "0", "3651"] {
        let refused = create(&["--expires-in-days", days]);
        assert_eq!(refused.status.code(), Some(2), "{days}");
        assert!(String::from_utf8_lossy(&refused.stderr).contains("1..=3650"), "{days}: {:?}", refused.stderr);
        assert!(refused.stdout.is_empty(), "{days}: no token");
    }
    for label in ["red \u{1b}[31m", "line\nbreak", &"x".repeat(201)] {
        let refused = create(&["--label", label]);
        assert_eq!(refused.status.code(), Some(1), "{label:?}");
        assert!(String::from_utf8_lossy(&refused.stderr).contains("invalid_label"), "{:?}", refused.stderr);
        assert!(refused.stdout.is_empty(), "no token");
    }
    let issued = create(&["--expires-in-days", "3650", "--label", "ten years, ünïcode"]);
    assert!(issued.status.success(), "{}", String::from_utf8_lossy(&issued.stderr));

    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
    runtime.block_on(async {
        let store = skill_store::open(&db, &Default::default()).await.expect("store");
        let engine = skill_engine::Engine::new(store);
        for expires_at in
            [chrono::Utc::now() - chrono::Duration::seconds(1), chrono::Utc::now() + chrono::Duration::days(3651)]
        {
            let request = skill_engine::TokenRequest {
                principal: "ops".into(),
                kind: "person".into(),
                grants: vec![],
                label: String::new(),
                expires_at: Some(expires_at),
            };
            let refused = engine.issue_token(&request, &skill_engine::Origin::default()).await.expect_err("refused");
            assert_eq!(refused.code, Code::InvalidExpiry);
        }
    });
    let _ = std::fs::remove_dir_all(&folder);
}
