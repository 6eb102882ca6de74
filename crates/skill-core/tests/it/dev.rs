//! `skill-core dev --temp --package examples/claims` as a new user meets it: the commands it
//! prints run in a shell as printed, in order (a call, then a claim task, its draft by dev's
//! stand-in model, a gate approval); the reviewer signs in to the console in Chromium, finds the
//! draft in the reply box and approves it; exactly that reply lands in the outbox dev made — with
//! no variable set by hand. Idle, dev prints nothing; a call that fails prints one line with its
//! code; stopped, it removes its throwaway data folder.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::prometheus::Prometheus;
use crate::running::CORE;
use crate::webdriver::Session;

/// What dev's stand-in model says in every answer.
const STAND_IN: &str = "dev's stand-in model — set SKILL_LLM_BASE_URL for a real one";

/// `skill-core dev` as a child, its stdout and its stderr read line by line as they come.
struct Dev {
    child: Child,
    out: Arc<Mutex<Vec<String>>>,
    err: Arc<Mutex<Vec<String>>>,
}

fn collect(stream: impl std::io::Read + Send + 'static) -> Arc<Mutex<Vec<String>>> {
    let lines = Arc::new(Mutex::new(Vec::new()));
    let kept = Arc::clone(&lines);
    std::thread::spawn(move || {
        for line in BufReader::new(stream).lines().map_while(Result::ok) {
            kept.lock().expect("lines").push(line);
        }
    });
    lines
}

impl Dev {
    fn start(args: &[&str]) -> Self {
        let mut command = Command::new(CORE);
        command.args(args).stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
        for name in ["SKILL_LOG", "SKILL_LLM_PROVIDER", "SKILL_LLM_BASE_URL", "CLAIMS_OUTBOX_DIR", "CLAIMS_SKILLS_URL"]
        {
            command.env_remove(name);
        }
        let mut child = command.spawn().expect("skill-core runs");
        let out = collect(child.stdout.take().expect("stdout"));
        let err = collect(child.stderr.take().expect("stderr"));
        Self { child, out, err }
    }

    fn out(&self) -> Vec<String> {
        self.out.lock().expect("lines").clone()
    }

    fn err(&self) -> Vec<String> {
        self.err.lock().expect("lines").clone()
    }

    /// Stdout once a line says `done` (within `seconds`).
    fn until(&mut self, seconds: u64, done: impl Fn(&str) -> bool) -> Vec<String> {
        let deadline = Instant::now() + Duration::from_secs(seconds);
        loop {
            let out = self.out();
            if out.iter().any(|line| done(line)) {
                return out;
            }
            if let Ok(Some(status)) = self.child.try_wait() {
                panic!("dev ended ({status}) before it was ready:\n{}\n{}", out.join("\n"), self.err().join("\n"));
            }
            assert!(Instant::now() < deadline, "dev was not ready in {seconds} s:\n{}", self.err().join("\n"));
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for Dev {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The text after the banner's `label` (`  model     …`).
fn labelled<'a>(banner: &'a [String], label: &str) -> &'a str {
    let line = banner
        .iter()
        .find(|line| line.strip_prefix("  ").is_some_and(|rest| rest.starts_with(&format!("{label} "))))
        .unwrap_or_else(|| panic!("a {label} line in {banner:#?}"));
    line.trim_start()[label.len()..].trim_start()
}

/// The shell lines under "In another shell", as printed (the indent taken off).
fn printed_commands(banner: &[String]) -> Vec<String> {
    let start = banner.iter().position(|line| line.starts_with("In another shell")).expect("the commands");
    banner[start + 1..]
        .iter()
        .take_while(|line| !line.starts_with("Stop with"))
        .filter_map(|line| line.strip_prefix("  ").map(str::to_owned))
        .collect()
}

/// The reply files of `outbox`: `(claim, reply)`.
fn replies(outbox: &Path) -> Vec<(String, String)> {
    std::fs::read_dir(outbox)
        .expect("the outbox dev made")
        .filter_map(Result::ok)
        .filter(|entry| !entry.file_name().to_string_lossy().starts_with('.'))
        .map(|entry| {
            let message: Value = serde_json::from_slice(&std::fs::read(entry.path()).expect("a reply")).expect("JSON");
            (
                message["claim"].as_str().unwrap_or_default().to_owned(),
                message["reply"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect()
}

#[tokio::test]
async fn a_new_user_plays_the_claims_story_from_devs_printed_commands_and_the_console() {
    let package = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/claims");
    let package = package.display().to_string();
    let mut dev = Dev::start(&[
        "dev",
        "--temp",
        "--package",
        &package,
        "--listen",
        "127.0.0.1:0",
        "--metrics-listen",
        "127.0.0.1:0",
    ]);
    let banner = dev.until(600, |line| line.starts_with("Stop with"));
    // A real Prometheus scrapes the core all along.
    let metrics = dev.err().iter().find_map(|line| line.strip_prefix("metrics at http://").map(str::to_owned));
    let metrics = metrics.expect("dev says where its metrics are").trim_end_matches("/metrics").to_owned();
    assert_eq!(banner[0], "skill-core dev: package claims 1.0.0 applied", "{banner:#?}");
    // And the package's host, which executes its local skills, on a port of its own.
    let executor =
        labelled(&banner, "metrics").strip_prefix("the executor's at http://").expect("the executor's metrics");
    let executor = executor.trim_end_matches("/metrics").to_owned();
    let prometheus = Prometheus::start(&[metrics, executor]).await;
    let data = labelled(&banner, "core").split("(data: ").nth(1).expect("the data folder").to_owned();
    let data = PathBuf::from(data.trim_end_matches(", removed at stop)"));
    assert!(data.is_dir(), "a throwaway data folder: {}", data.display());
    let mode = std::os::unix::fs::PermissionsExt::mode(&std::fs::metadata(&data).expect("metadata").permissions());
    assert_eq!(mode & 0o777, 0o700, "drafts and replies are the owner's alone");
    let outbox = PathBuf::from(labelled(&banner, "CLAIMS_OUTBOX_DIR").trim_end_matches(" (made by dev)"));
    assert!(outbox.starts_with(&data) && outbox.is_dir(), "the outbox folder, made by dev in its data: {outbox:?}");
    assert!(labelled(&banner, "model").starts_with(STAND_IN), "{banner:#?}");
    assert!(labelled(&banner, "https").contains("claims-integration serves the 1 http skill on https://localhost:"));

    // The printed commands, in a shell, in order: each succeeds.
    let commands = printed_commands(&banner);
    assert!(commands.iter().any(|line| line.starts_with("export REVIEWER=")), "{commands:#?}");
    let script = format!(
        "{}\nprintf 'TASK=%s\\nDRAFT=%s\\nAPPROVAL=%s\\nINSTANCE=%s\\n' \"$TASK\" \"$DRAFT\" \"$APPROVAL\" \"$INSTANCE\"\n",
        commands.join("\n")
    );
    let shell = Command::new("bash").args(["-e", "-o", "pipefail", "-c", &script]).output().expect("bash runs");
    let said = String::from_utf8_lossy(&shell.stdout).to_string();
    assert!(shell.status.success(), "{said}\n{}", String::from_utf8_lossy(&shell.stderr));
    let variable = |name: &str| {
        let value = said.lines().find_map(|line| line.strip_prefix(&format!("{name}="))).unwrap_or_default().to_owned();
        assert!(value.len() == 36 && value.contains('-'), "{name} is an id, not {value:?}: {said}");
        value
    };
    let (task, draft, approval) = (variable("TASK"), variable("DRAFT"), variable("APPROVAL"));
    let export = |name: &str| {
        let prefix = format!("export {name}=");
        commands.iter().find_map(|line| line.strip_prefix(&prefix)).expect("an export line").to_owned()
    };
    let (url, token, reviewer) = (export("SKILL_CORE_URL"), export("SKILL_CORE_TOKEN"), export("REVIEWER"));
    let api = |path: &str| format!("{url}/api/v1{path}");
    // No connection kept between requests: dev closes idle ones (its header timeout).
    let http = reqwest::Client::builder().pool_max_idle_per_host(0).build().expect("a client");
    let read = |path: String| {
        let request = http.get(api(&path)).bearer_auth(&token);
        async move { request.send().await.expect("the core answers").json::<Value>().await.expect("JSON") }
    };
    let ended = |path: String| {
        let read = &read;
        async move {
            for _ in 0..300 {
                let now = read(path.clone()).await;
                if now["status"] != "pending" && now["status"] != "running" {
                    return now;
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            panic!("{path} did not end");
        }
    };
    let drafted = ended(format!("/skill-invocations/{draft}")).await;
    let text = drafted["output"]["draft"].as_str().unwrap_or_else(|| panic!("a draft: {drafted}")).to_owned();
    assert!(text.contains(STAND_IN) && text.contains("has not arrived"), "the stand-in's draft of the message: {text}");
    assert_eq!(read(format!("/approvals/{approval}")).await["status"], "pending");
    // The fact the commands sent: the rule started claim-handling, whose review task has the
    // stand-in's draft and a gate for the reviewer.
    let instance = variable("INSTANCE");
    let mut review = Value::Null;
    for _ in 0..300 {
        let now = read(format!("/process-instances/{instance}")).await;
        review =
            now["steps"].as_array().into_iter().flatten().find(|s| s["step"] == "review").cloned().unwrap_or_default();
        if review["invocationId"].is_string() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let drafted_review =
        ended(format!("/skill-invocations/{}", review["invocationId"].as_str().unwrap_or_default())).await;
    assert_eq!(drafted_review["status"], "succeeded", "{drafted_review}");
    assert_eq!(drafted_review["taskId"], review["taskId"], "the draft is the review task's: {drafted_review}");

    // The reviewer decides in the console: the draft is in the reply box, labelled as the reply.
    let browser = Session::start(1280, 1200).await;
    browser.open(&format!("{url}/console/sign-in")).await;
    browser.find("#token").await.type_text(&reviewer).await;
    browser.find("form button[type=submit]").await.click().await;
    browser.until_text("main h1", 10, |h1| h1 == "Tasks").await;
    browser.open(&format!("{url}/console/tasks/{task}")).await;
    // The page offers to draft again: a second draft call, and the reply box starts from it.
    browser.find(&format!("form[action='/console/tasks/{task}/draft'] button")).await.click().await;
    let calls = browser
        .until_text("#calls", 30, |calls| {
            calls.matches("claim.draft_reply@1").count() == 2 && !calls.contains("pending")
        })
        .await;
    assert!(!calls.contains("failed"), "{calls}");
    let form = browser.until_text("form.decide", 10, |form| form.contains("Reply to send")).await;
    assert!(form.contains("claim.send_reply@1"), "{form}");
    let boxed = browser.find("form.decide textarea").await.property("value").await;
    assert_eq!(boxed, text, "the reply box holds the draft");
    browser.find("button.approve").await.click().await;
    browser.until_text(".outcome", 30, |outcome| outcome.contains("succeeded")).await;
    drop(browser);
    assert_eq!(replies(&outbox), [("C-1002".to_owned(), text.clone())], "one reply, the draft's text");
    let decided = read(format!("/approvals/{approval}")).await;
    assert_eq!(
        (decided["status"].clone(), decided["outcome"]["status"].clone()),
        (json!("approved"), json!("succeeded"))
    );
    // What Prometheus saw: the reply's call ended once, in the histogram of its skill; the
    // approvals waiting for a person rose and fell with the decision; the queue's gauges are
    // there, every call ended.
    prometheus.until("count(up{job=\"skills\"} == 1)", 20, |up| up == 2.0).await;
    // The executor ran the reply once, and counts the calls it completed.
    let ran = "skills_host_calls_total{skill=\"claim.send_reply@1\",outcome=\"succeeded\"}";
    prometheus.until(ran, 20, |n| n == 1.0).await;
    prometheus.until("skills_executor_calls_total{component=\"host\",outcome=\"completed\"}", 20, |n| n >= 1.0).await;
    prometheus.until("skills_executor_slots{component=\"host\",state=\"all\"}", 20, |n| n == 4.0).await;
    let sent = "skills_call_duration_seconds_count{skill=\"claim.send_reply@1\",outcome=\"succeeded\"}";
    prometheus.until(sent, 20, |n| n == 1.0).await;
    let bucket = "skills_call_duration_seconds_bucket{skill=\"claim.send_reply@1\",outcome=\"succeeded\",le=\"+Inf\"}";
    prometheus.until(bucket, 20, |n| n == 1.0).await;
    prometheus.until("max_over_time(skills_approvals_pending[10m])", 20, |n| n >= 1.0).await;
    // The gauge is what dev's database holds (read beside it), the decided approval no longer in it.
    let store = skill_store::open(data.to_str().expect("utf-8"), &Default::default()).await.expect("dev's store");
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let truth = store.backlog(chrono::Utc::now()).await.expect("the backlog").approvals_pending;
        let seen = prometheus.query("skills_approvals_pending").await;
        if seen.len() == 1 && seen[0].1 == truth as f64 {
            break;
        }
        assert!(Instant::now() < deadline, "Prometheus saw {seen:?} pending approvals, the database holds {truth}");
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    drop(store);
    // Every query of the Grafana dashboard is one Prometheus takes, on metrics the core has.
    let dashboard = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/grafana/skills-core.json");
    let dashboard: Value =
        serde_json::from_str(&std::fs::read_to_string(dashboard).expect("the dashboard")).expect("JSON");
    let panels = dashboard["panels"].as_array().expect("panels");
    assert!(panels.len() >= 12, "{} panels", panels.len());
    let mut answered = 0;
    for target in panels.iter().flat_map(|panel| panel["targets"].as_array().into_iter().flatten()) {
        let expr = target["expr"].as_str().expect("an expression");
        answered += usize::from(!prometheus.query(expr).await.is_empty());
    }
    assert!(answered >= 12, "only {answered} of the dashboard's queries found series");
    prometheus.until("skills_approval_decision_seconds_count{decision=\"approved\"}", 20, |n| n == 1.0).await;
    prometheus.until("count(skills_calls_waiting)", 20, |n| n == 4.0).await;
    // Every one of the core's workers passes, at least every second; no outcome waits.
    prometheus.until("count(skills_worker_last_pass_timestamp_seconds)", 20, |n| n == 7.0).await;
    prometheus.until("max(time() - skills_worker_last_pass_timestamp_seconds)", 20, |n| n < 10.0).await;
    prometheus.until("skills_outcomes_waiting_seconds", 20, |n| n == 0.0).await;
    // Counted from the start (a series to alert on before the first failure), and each one
    // counted is explained in dev's log: a read that failed, or one past its 5 s (a machine
    // loaded enough).
    let errors = prometheus.until("skills_scrape_errors_total", 20, |n| n >= 0.0).await;
    if errors > 0.0 {
        let said = dev
            .err()
            .iter()
            .filter(|line| line.contains("a scrape error") || line.contains("could not read what waits"))
            .count();
        assert!(said > 0, "{errors} scrape errors counted, none explained: {:#?}", dev.err());
    }
    prometheus.until("skills_calls_open{state=\"pending\"}", 20, |n| n == 0.0).await;
    // Requests by their route's template: the API's and the console's pages the reviewer used.
    let posts = "sum(skills_http_requests_total{method=\"POST\",route=~\"/api/v1/.+\",status=~\"2..\"})";
    prometheus.until(posts, 20, |n| n >= 1.0).await;
    let task_page = "sum(skills_http_requests_total{route=\"/console/tasks/{id}\",status=\"200\"})";
    prometheus.until(task_page, 20, |n| n >= 1.0).await;
    drop(prometheus);

    // The journal: the reply's call, its basis and the reviewer's decision are entries of a
    // tree whose checkpoints the core signed and wrote beside its data; proofs over the API
    // verify; the record verifies offline (ours and the Python verifier), `explain` names the
    // reviewer, and every change of the tamper corpus is found.
    let sent = read("/skill-invocations?skill=claim.send_reply@1".to_owned()).await;
    let reply = sent["items"][0]["id"].as_str().unwrap_or_else(|| panic!("the reply's call: {sent}")).to_owned();
    journal_holds(&read, &data, &reply).await;
    console_shows_provenance(&url, &token, &reply).await;

    // Idle, dev prints nothing for a minute (executors long-poll and heartbeat meanwhile).
    tokio::time::sleep(Duration::from_secs(2)).await;
    let (out, err) = (dev.out().len(), dev.err().len());
    tokio::time::sleep(Duration::from_secs(60)).await;
    let said: Vec<String> = dev.err()[err..].to_vec();
    assert_eq!((dev.out().len(), said.clone()), (out, Vec::<String>::new()), "idle for a minute");

    // A call that fails prints one line, with its code.
    let lookup = http
        .post(api("/skills/claim.lookup@1:invoke"))
        .bearer_auth(&token)
        .json(&json!({"inputs": {"claim": "C-9"}}))
        .send()
        .await
        .expect("the core answers")
        .json::<Value>()
        .await
        .expect("JSON");
    let failed = ended(format!("/skill-invocations/{}", lookup["id"].as_str().expect("an id"))).await;
    assert_eq!(failed["error"]["code"], "claim_not_found", "{failed}");
    tokio::time::sleep(Duration::from_secs(2)).await;
    let lines: Vec<String> = dev.err()[err..].to_vec();
    assert_eq!(lines.len(), 1, "{lines:#?}");
    assert!(lines[0].contains("code=claim_not_found") && lines[0].contains("skill=claim.lookup@1"), "{lines:?}");

    // Stopped, its throwaway data folder is gone.
    let pid = rustix::process::Pid::from_raw(i32::try_from(dev.child.id()).expect("a pid")).expect("a pid");
    rustix::process::kill_process(pid, rustix::process::Signal::INT).expect("signalled");
    let deadline = Instant::now() + Duration::from_secs(30);
    let status = loop {
        if let Some(status) = dev.child.try_wait().expect("waits") {
            break status;
        }
        assert!(Instant::now() < deadline, "dev did not stop");
        std::thread::sleep(Duration::from_millis(100));
    };
    assert!(status.success(), "{status}: {:#?}", dev.err());
    assert!(!data.exists(), "--temp removes {}", data.display());
}

/// The journal's part of the story (see above).
async fn journal_holds<F, R>(read: &F, data: &Path, reply: &str)
where
    F: Fn(String) -> R,
    R: std::future::Future<Output = Value>,
{
    use base64::Engine as _;
    use base64::engine::general_purpose::STANDARD as BASE64;

    // Signed within a second of the last event, and then no more (nothing new is written).
    let mut latest = Value::Null;
    for _ in 0..100 {
        let now = read("/journal/checkpoint".to_owned()).await;
        if now["size"].as_u64().is_some() && now["size"] == latest["size"] {
            break;
        }
        latest = now;
        tokio::time::sleep(Duration::from_millis(1_500)).await;
    }
    let size = latest["size"].as_u64().unwrap_or_else(|| panic!("a checkpoint: {latest}"));
    let key = skill_journal::Verifier::parse(latest["key"].as_str().expect("its key")).expect("a verifier key");
    let body = key.open(latest["note"].as_str().expect("a note")).expect("the note verifies with the key served");
    let checkpoint = skill_journal::Checkpoint::parse(body).expect("a checkpoint");
    assert_eq!((checkpoint.size, checkpoint.origin.as_str()), (size, "skill-core-dev/journal"));
    let hash = |text: &Value| -> [u8; 32] {
        BASE64.decode(text.as_str().expect("base64")).expect("base64").try_into().expect("32 bytes")
    };
    for index in [0, size / 2, size - 1] {
        let proof = read(format!("/journal/proofs/inclusion?index={index}")).await;
        let path: Vec<[u8; 32]> = proof["hashes"].as_array().expect("hashes").iter().map(hash).collect();
        let leaf = skill_journal::tree::leaf_hash(proof["entry"].as_str().expect("the entry").as_bytes());
        assert_eq!(leaf, hash(&proof["leafHash"]));
        assert!(
            skill_journal::tree::verify_inclusion(index, size, &leaf, &path, &checkpoint.root),
            "the entry at {index} is in the signed tree: {proof}"
        );
    }
    let consistency = read(format!("/journal/proofs/consistency?from=1&to={size}")).await;
    let path: Vec<[u8; 32]> = consistency["hashes"].as_array().expect("hashes").iter().map(hash).collect();
    assert!(skill_journal::tree::verify_consistency(
        1,
        size,
        &hash(&consistency["fromRootHash"]),
        &checkpoint.root,
        &path
    ));
    let beyond = read(format!("/journal/proofs/inclusion?index={size}&size={size}")).await;
    assert_eq!(beyond["error"]["code"], "invalid_request", "{beyond}");

    // The record as the core left it: a copy, and the checkpoint it wrote beside its data.
    let scratch = std::env::temp_dir().join(format!("skill-journal-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&scratch);
    let copy = scratch.join("story");
    crate::journal::snapshot(data, &copy);
    let trusted = scratch.join("published.note");
    std::fs::copy(data.join("checkpoint.note"), &trusted).expect("dev wrote the checkpoint beside its data");
    assert_eq!(std::fs::read_to_string(&trusted).expect("read"), latest["note"].as_str().expect("note"));
    let exported = scratch.join("story-export");
    crate::journal::export(&copy, &exported);
    let (code, said) = crate::journal::verify(&exported, &trusted);
    assert_eq!(code, 0, "{said}");
    assert!(said.contains(&format!("{size} entries verified")) && said.contains("each with a valid basis"), "{said}");

    let proofs = scratch.join("proofs");
    let (code, explained, err) = crate::journal::core(&[
        "journal",
        "explain",
        "--db",
        &copy.display().to_string(),
        reply,
        "--out",
        &proofs.display().to_string(),
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(explained.contains("claim.send_reply@1, an external write"), "{explained}");
    assert!(explained.contains("approved by dev-reviewer ("), "the reviewer is named: {explained}");
    assert!(explained.contains("with the token "), "{explained}");
    assert!(!explained.contains("(none recorded)"), "the reviewer's token is named: {explained}");
    let mut files: Vec<String> = std::fs::read_dir(&proofs)
        .expect("proofs written")
        .map(|entry| entry.expect("an entry").path().display().to_string())
        .filter(|path| path.ends_with(".tlog-proof"))
        .collect();
    files.sort();
    assert!(files.iter().any(|file| file.ends_with("decision.tlog-proof")), "{files:?}");
    for file in &files {
        let proof = skill_journal::TlogProof::parse(&std::fs::read_to_string(file).expect("read")).expect("a proof");
        proof.verify(&key).unwrap_or_else(|error| panic!("{file}: {error}"));
    }
    // The Python verifier, standard library only: the export, the trusted checkpoint, the proofs.
    let mut python = Command::new("python3");
    python.arg(crate::journal::python_verifier()).arg(&exported).arg("--trust").arg(&trusted).args(&files);
    let checked = python.output().expect("python3 runs");
    let said = String::from_utf8_lossy(&checked.stdout);
    assert!(checked.status.success(), "{said}{}", String::from_utf8_lossy(&checked.stderr));
    assert!(
        said.contains(&format!("{size} entries")) && said.contains(&format!("{} proofs hold", files.len())),
        "{said}"
    );

    crate::journal::tamper_corpus(&copy, &trusted, reply, &scratch);
    crate::journal::explain_corpus(&copy, reply, &scratch);
    std::fs::remove_dir_all(&scratch).expect("cleaned");
}

/// An operator's console shows the reply's provenance — the reviewer's decision, the token, and
/// its entry proven in the latest checkpoint — and the journal's page, with where dev sent it.
async fn console_shows_provenance(url: &str, token: &str, reply: &str) {
    let http = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().expect("a client");
    let signed_in = http
        .post(format!("{url}/console/sign-in"))
        .header("origin", url)
        .header("content-type", "application/x-www-form-urlencoded")
        // A token is letters, digits, `_` and `-`: nothing to escape.
        .body(format!("token={token}"))
        .send()
        .await
        .expect("the console answers");
    let cookie = signed_in.headers().get("set-cookie").expect("a session").to_str().expect("ASCII");
    let cookie = cookie.split(';').next().expect("name=value").to_owned();
    let page = |path: String| {
        let request = http.get(format!("{url}{path}")).header("cookie", &cookie);
        async move { request.send().await.expect("the console answers").text().await.expect("a page") }
    };
    let call = page(format!("/console/calls/{reply}")).await;
    assert!(call.contains("<h2>Provenance</h2>"), "{call}");
    assert!(call.contains("approved by <strong class=\"decider\">dev-reviewer</strong>"), "{call}");
    assert!(call.contains("(its inclusion proof checked)"), "{call}");
    let journal = page("/console/journal".to_owned()).await;
    assert!(journal.contains("skill-core-dev/journal+"), "the signing key: {journal}");
    assert!(journal.contains("<pre class=\"note\">skill-core-dev/journal\n"), "the latest note: {journal}");
    assert!(journal.contains("<tr class=\"sent\">") && journal.contains("checkpoint.note"), "where it went: {journal}");
    assert!(!journal.contains("<tr class=\"failed\">"), "{journal}");
}
