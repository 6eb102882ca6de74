//! `skill-sdk package check|plan|apply` on copies of `examples/claims`, against a core served on
//! 127.0.0.1 by this test.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::Arc;

use serde_json::{Value, json};
use skill_engine::{Engine, Origin, TokenRequest};
use skill_fixtures::Scratch;

pub(crate) const SDK: &str = env!("CARGO_BIN_EXE_skill-sdk");

/// The `skill-core` beside `skill-sdk`, which runs `package test`'s scenarios: built (or found
/// fresh) once per test run, since cargo builds only this crate's binaries for its tests.
pub(crate) fn core_binary() -> &'static Path {
    static BUILT: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    BUILT.get_or_init(|| {
        let debug = Path::new(SDK).parent().expect("the binaries' folder");
        let target = debug.parent().expect("the target folder");
        let built = Command::new(env!("CARGO"))
            .args(["build", "--quiet", "-p", "skill-core", "--bin", "skill-core", "--target-dir"])
            .arg(target)
            .current_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join("../.."))
            .status()
            .expect("cargo runs");
        assert!(built.success(), "cargo build -p skill-core failed");
        debug.join(format!("skill-core{}", std::env::consts::EXE_SUFFIX))
    })
}

pub(crate) fn example() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/claims")
}

/// A copy of the claims package (its YAML files and scenario tests) in a folder named `claims`.
pub(crate) struct Copy {
    scratch: Scratch,
}

impl Copy {
    pub(crate) fn new(label: &str) -> Self {
        let scratch = Scratch::new(&format!("skill-package-{label}"));
        let root = scratch.path();
        for folder in ["skills", "task-types", "artifact-types", "agents", "rules", "processes", "tests"] {
            let target = root.join("claims").join(folder);
            std::fs::create_dir_all(&target).expect("folder");
            for entry in std::fs::read_dir(example().join(folder)).expect("example folder") {
                let entry = entry.expect("entry");
                std::fs::copy(entry.path(), target.join(entry.file_name())).expect("copy");
            }
        }
        std::fs::copy(example().join("package.yaml"), root.join("claims/package.yaml")).expect("manifest");
        Self { scratch }
    }

    pub(crate) fn package(&self) -> PathBuf {
        self.scratch.path().join("claims")
    }

    pub(crate) fn edit(&self, file: &str, from: &str, to: &str) {
        self.scratch.edit(&format!("claims/{file}"), from, to);
    }

    fn write(&self, file: &str, document: &Value) {
        self.scratch.write(&format!("claims/{file}"), &skill_contract::yaml::to_string(document));
    }

    pub(crate) fn sdk(&self, args: &[&str], core: Option<(&str, &str)>) -> Output {
        let mut command = Command::new(SDK);
        command.args(["package"]).args(args).arg("--package").arg(self.package()).env_remove("CI");
        command.env("SKILL_CORE_BIN", core_binary());
        if let Some((url, token)) = core {
            command.args(["--core", url]).env("SKILL_CORE_TOKEN", token);
        }
        command.output().expect("skill-sdk runs")
    }
}

pub(crate) fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// The codes `check --json` reports, with their paths.
fn problems(copy: &Copy) -> Vec<(String, String, String)> {
    let output = copy.sdk(&["check", "--json"], None);
    let report: Value = serde_json::from_slice(&output.stdout).expect("JSON");
    let list = report["problems"].as_array().expect("problems").clone();
    assert_eq!(output.status.code(), Some(if list.is_empty() { 0 } else { 1 }));
    for problem in &list {
        assert!(problem["hint"].as_str().is_some_and(|hint| !hint.is_empty()), "every problem has a hint: {problem}");
    }
    list.iter()
        .map(|p| {
            let field = |key: &str| p[key].as_str().unwrap_or_default().to_owned();
            (field("file"), field("path"), field("code"))
        })
        .collect()
}

const OUTCOME: &str = "spec.approvalSchema.gates.default.outcomes.approved[0].invokeSkill.skill";

#[test]
fn the_claims_package_checks_clean() {
    let copy = Copy::new("clean");
    let output = copy.sdk(&["check"], None);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    assert_eq!(text(&output.stdout), "package claims 1.0.0: 15 objects, no problems\n");
}

#[test]
fn broken_references_fail_with_their_codes() {
    let copy = Copy::new("unknown");
    copy.edit("task-types/claim-reply.yaml", "skill: claim.send_reply@1", "skill: claim.send_reply@2");
    assert_eq!(problems(&copy), [("task-types/claim-reply.yaml".into(), OUTCOME.into(), "unknown_reference".into())]);
    let output = copy.sdk(&["check"], None);
    assert!(text(&output.stderr).contains("hint: the package can see claim.send_reply@1"), "{}", text(&output.stderr));

    let copy = Copy::new("unpinned");
    copy.edit("task-types/claim-reply.yaml", "skill: claim.send_reply@1", "skill: claim.send_reply");
    assert_eq!(
        problems(&copy),
        [("task-types/claim-reply.yaml".into(), OUTCOME.into(), "unpinned_external_write".into())]
    );

    let copy = Copy::new("rule");
    copy.edit("rules/claim-intake.yaml", "skill: claim.classify@1", "skill: claim.send_reply@1");
    assert_eq!(
        problems(&copy),
        [("rules/claim-intake.yaml".into(), "spec.interpretation.skill".into(), "rule_skill_side_effects".into())]
    );
    let copy = Copy::new("condition");
    copy.edit("rules/claim-intake.yaml", "size(fact.data.text) > 0", "size(fact.data.text) >");
    assert_eq!(
        problems(&copy),
        [("rules/claim-intake.yaml".into(), "spec.on.when".into(), "invalid_condition".into())]
    );
    let copy = Copy::new("rule-refs");
    copy.edit("rules/claim-intake.yaml", "process: claim-handling@1", "process: claim-audit@1");
    copy.edit("rules/claim-intake.yaml", "agent: claims-intake", "agent: nobody");
    assert_eq!(
        problems(&copy),
        [
            ("rules/claim-intake.yaml".into(), "spec.ensureWork[0].process.process".into(), "unknown_reference".into()),
            ("rules/claim-intake.yaml".into(), "spec.identity.agent".into(), "unknown_reference".into())
        ]
    );

    let copy = Copy::new("acceptance");
    copy.write(
        "task-types/claim-audit.yaml",
        &json!({"apiVersion": "taimen.ai/v1", "kind": "TaskType", "key": "claim-audit", "spec": {"version": "1",
                "acceptance": [{"kind": "deterministic", "spec": {"skill": "claim.send_reply@1"}},
                               {"kind": "human", "when": "always"}]}}),
    );
    assert_eq!(
        problems(&copy),
        [(
            "task-types/claim-audit.yaml".into(),
            "spec.acceptance[0].spec.skill".into(),
            "invalid_acceptance_spec".into()
        )]
    );

    let copy = Copy::new("process");
    copy.write(
        "processes/follow-up.yaml",
        &json!({"apiVersion": "taimen.ai/v1", "kind": "Process", "key": "follow-up",
                "spec": {"version": "1", "identity": {"agent": "claims-intake"}, "steps": [
                    {"id": "classify", "call": {"skill": "claim.classify@9", "input": {"text": "$.input.text"}}},
                    {"id": "send", "call": {"skill": "claim.send_reply@1", "input": {"claim": "$.input.claim"}}},
                    {"id": "review", "task": {"type": "claim-audit@1", "title": "Audit {{$.input.claim}}"}},
                    {"id": "route", "switch": {"cases": [{"when": "fact.kind == 'x'", "next": "done"}], "default": "done"}},
                    {"id": "done", "end": {"status": "completed"}}]}}),
    );
    // A process calls a version that writes only on a person's decision (decidedBy); the unknown
    // version, the unknown task type and the condition reading what a switch has not.
    assert_eq!(
        problems(&copy),
        [
            ("processes/follow-up.yaml".into(), "spec.steps[0].call.skill".into(), "unknown_reference".into()),
            ("processes/follow-up.yaml".into(), "spec.steps[1].call.decidedBy".into(), "invalid_process".into()),
            ("processes/follow-up.yaml".into(), "spec.steps[2].task.type".into(), "unknown_reference".into()),
            (
                "processes/follow-up.yaml".into(),
                "spec.steps[3].switch.cases[0].when".into(),
                "invalid_condition".into()
            )
        ]
    );
    copy.edit("processes/follow-up.yaml", "agent: claims-intake", "agent: nobody");
    assert!(
        problems(&copy).contains(&(
            "processes/follow-up.yaml".into(),
            "spec.identity.agent".into(),
            "unknown_reference".into()
        )),
        "the agent it runs as is declared"
    );

    let copy = Copy::new("task-process");
    copy.write(
        "task-types/claim-watch.yaml",
        &json!({"apiVersion": "taimen.ai/v1", "kind": "TaskType", "key": "claim-watch",
                "spec": {"version": "1", "process": {"process": "claim-nothing@1", "input": {"claim": "$.customFields.claim"}}}}),
    );
    assert_eq!(
        problems(&copy),
        [("task-types/claim-watch.yaml".into(), "spec.process.process".into(), "unknown_reference".into())]
    );
    copy.edit("task-types/claim-watch.yaml", "claim-nothing@1", "claim-handling@1");
    assert_eq!(problems(&copy), [], "a task type may start a process of its package");

    let copy = Copy::new("contract");
    copy.edit("skills/claim.classify.yaml", "timeoutSeconds: 5", "timeoutSeconds: 0");
    assert_eq!(
        problems(&copy),
        [("skills/claim.classify.yaml".into(), "spec.contract.timeoutSeconds".into(), "invalid_skill_contract".into())]
    );
}

/// An agent or executor document granting what only a person holds fails the check, naming the
/// file and field and what it may hold instead; apply refuses it before the core writes anything.
#[test]
fn no_agent_or_executor_document_grants_what_only_a_person_holds() {
    let core = serve("people-only");
    let copy = Copy::new("people-only");
    copy.edit(
        "agents/claims-desk.yaml",
        "permissions: [skills.invoke, claims.reply]",
        "permissions: [skills.invoke, claims.reply, org.manage, approvals.decide@claims]",
    );
    copy.edit(
        "agents/claims-skills.yaml",
        "permissions: [skills.execute]",
        "permissions: [skills.execute, org.manage]",
    );
    let forbidden =
        |file: &str, path: &str| (file.to_owned(), path.to_owned(), "agent_permission_forbidden".to_owned());
    assert_eq!(
        problems(&copy),
        [
            forbidden("agents/claims-desk.yaml", "spec.identity.permissions[2]"),
            forbidden("agents/claims-desk.yaml", "spec.identity.permissions[3]"),
            forbidden("agents/claims-skills.yaml", "spec.identity.permissions[1]"),
        ]
    );
    let output = copy.sdk(&["check"], None);
    let said = text(&output.stderr);
    assert!(
        said.contains("agents/claims-desk.yaml at spec.identity.permissions[2]: an agent never holds org.manage"),
        "{said}"
    );
    assert!(
        said.contains("agents/claims-skills.yaml at spec.identity.permissions[1]: an executor never holds org.manage")
    );
    for instead in ["org.read", "skills.invoke", "tasks.read@…", "tasks.write@…", "facts.read@…", "facts.write@…"]
    {
        assert!(said.contains(instead), "the check says what an agent may hold instead ({instead}): {said}");
    }

    let events = core.event_count();
    let refused = copy.sdk(&["apply"], Some((core.url.as_str(), core.token.as_str())));
    assert_eq!(refused.status.code(), Some(1), "{}", text(&refused.stderr));
    assert!(text(&refused.stderr).contains("agent_permission_forbidden"), "{}", text(&refused.stderr));
    assert_eq!(core.event_count(), events, "a refused apply writes nothing");
}

pub(crate) struct Served {
    pub(crate) url: String,
    pub(crate) token: String,
    pub(crate) engine: Engine,
    pub(crate) _runtime: tokio::runtime::Runtime,
    folder: PathBuf,
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.folder);
    }
}

/// A core on 127.0.0.1 with an embedded database, and an org.manage token.
pub(crate) fn serve(label: &str) -> Served {
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().expect("runtime");
    let folder = std::env::temp_dir().join(format!("skill-package-core-{label}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&folder);
    let (url, token, engine) = runtime.block_on(async {
        let store = skill_store::open(folder.to_str().expect("utf-8"), &Default::default()).await.expect("store");
        let engine = Engine::new(Arc::clone(&store));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("a port");
        let url = format!("http://{}", listener.local_addr().expect("address"));
        tokio::spawn(skill_server::serve(engine.clone(), listener, Default::default()));
        // The claims package's agents file their requests in the workspace `claims` and are
        // granted what the installer must hold itself.
        engine.create_workspace("claims", "Claims", &Origin::default()).await.expect("workspace");
        let request = TokenRequest {
            principal: "installer".into(),
            kind: "person".into(),
            grants: ["org.manage", "skills.invoke", "skills.execute", "claims.reply", "tasks.write@claims"]
                .map(String::from)
                .to_vec(),
            label: "test".into(),
            expires_at: None,
        };
        let token = engine.issue_token(&request, &Origin::default()).await.expect("token").token;
        (url, token, engine)
    });
    Served { url, token, engine, _runtime: runtime, folder }
}

impl Served {
    /// Every table of the core's database and its number of rows.
    pub(crate) fn row_counts(&self) -> std::collections::BTreeMap<String, i64> {
        let file = self.folder.join(skill_store::SQLITE_FILE);
        self._runtime.block_on(async move {
            let options = sqlx::sqlite::SqliteConnectOptions::new().filename(&file).read_only(true);
            let pool = sqlx::SqlitePool::connect_with(options).await.expect("the core's database");
            let tables: Vec<String> =
                sqlx::query_scalar("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
                    .fetch_all(&pool)
                    .await
                    .expect("tables");
            let mut counts = std::collections::BTreeMap::new();
            for table in tables {
                // The names come from the database's own catalog.
                let sql = format!("SELECT count(*) FROM \"{table}\"");
                let count: i64 = sqlx::query_scalar(sqlx::AssertSqlSafe(sql)).fetch_one(&pool).await.expect("a count");
                counts.insert(table, count);
            }
            pool.close().await;
            counts
        })
    }

    /// A token of a new person `name` with `grants` (agents call only their assigned skills).
    pub(crate) fn person(&self, name: &str, grants: &[&str]) -> String {
        self.token_of("person", name, grants)
    }

    /// A token of a new executor `name` with `grants`, allowed to run the `local` modules.
    pub(crate) fn executor(&self, name: &str, grants: &[&str], local: &[&str]) -> String {
        let token = self.token_of("executor", name, grants);
        let allowance = skill_api::ExecutorAllowance {
            protocols: vec!["local".into()],
            local: local.iter().map(|module| (*module).to_owned()).collect(),
            ..skill_api::ExecutorAllowance::default()
        };
        self._runtime.block_on(self.engine.allow_executor(None, name, &allowance, None)).expect("allowed");
        token
    }

    fn token_of(&self, kind: &str, name: &str, grants: &[&str]) -> String {
        let request = TokenRequest {
            principal: name.into(),
            kind: kind.into(),
            grants: grants.iter().map(|grant| (*grant).to_owned()).collect(),
            label: "test".into(),
            expires_at: None,
        };
        self._runtime.block_on(self.engine.issue_token(&request, &Origin::default())).expect("token").token
    }

    fn skill(&self, reference: &str) -> Value {
        let engine = self.engine.clone();
        let token = self.token.clone();
        let reference = reference.to_owned();
        self._runtime.block_on(async move {
            let actor = engine.authenticate(&token).await.expect("actor");
            serde_json::to_value(engine.skill(&actor, &reference).await.expect("published")).expect("JSON")
        })
    }

    fn event_count(&self) -> usize {
        self._runtime.block_on(self.engine.store().events(0, None, 1000)).expect("events").len()
    }
}

fn lookup(endpoint: &str, description: &str, timeout: u32) -> Value {
    json!({"apiVersion": "taimen.ai/v1", "kind": "Skill", "key": "claim.lookup", "spec": {
        "version": "1", "description": description, "sideEffects": "external_read", "riskLevel": "low",
        "contract": {"inputs": {"type": "object"}, "outputs": {"type": "object"}, "timeoutSeconds": timeout,
                     "implementation": {"protocol": "http", "endpoint": endpoint}}}})
}

#[test]
fn plan_and_apply_publish_then_patch_move_and_refuse() {
    let core = serve("apply");
    let copy = Copy::new("apply");
    copy.write("skills/claim.lookup.yaml", &lookup("https://claims.example/lookup", "Find a claim.", 30));
    let at = Some((core.url.as_str(), core.token.as_str()));

    let plan = copy.sdk(&["plan"], at);
    assert_eq!(plan.status.code(), Some(0), "{}", text(&plan.stderr));
    assert!(
        text(&plan.stdout).contains("5 to create, 0 to patch, 0 to move, 0 unchanged, 0 refused"),
        "{}",
        text(&plan.stdout)
    );
    let applied = copy.sdk(&["apply"], at);
    assert_eq!(applied.status.code(), Some(0), "{}", text(&applied.stderr));
    assert!(text(&applied.stdout).contains("applied — 5 created"), "{}", text(&applied.stdout));
    let send = core.skill("claim.send_reply@1");
    assert_eq!(
        (send["sideEffects"].clone(), send["package"]["key"].clone()),
        (json!("external_write"), json!("claims"))
    );

    let events = core.event_count();
    let again = copy.sdk(&["apply"], at);
    assert_eq!(text(&again.stdout), "package claims 1.0.0: already applied, nothing changed\n");
    assert_eq!(core.event_count(), events, "re-applying wrote nothing");

    copy.write("skills/claim.lookup.yaml", &lookup("https://claims.example/lookup", "Find a claim by id.", 30));
    let plan: Value = serde_json::from_slice(&copy.sdk(&["plan", "--json"], at).stdout).expect("JSON plan");
    let change = plan["changes"]
        .as_array()
        .expect("changes")
        .iter()
        .find(|c| c["key"] == "claim.lookup")
        .expect("lookup")
        .clone();
    assert_eq!((change["operation"].clone(), change["fields"].clone()), (json!("patch"), json!(["description"])));
    assert_eq!(copy.sdk(&["apply"], at).status.code(), Some(0));
    assert_eq!(core.skill("claim.lookup@1")["description"], "Find a claim by id.");

    copy.write("skills/claim.lookup.yaml", &lookup("https://claims-v2.example/lookup", "Find a claim by id.", 30));
    let plan = copy.sdk(&["plan"], at);
    assert!(
        text(&plan.stdout).contains("~ move       claim.lookup@1 (endpoint): endpoint https://claims.example/lookup → https://claims-v2.example/lookup"),
        "{}",
        text(&plan.stdout)
    );
    assert_eq!(copy.sdk(&["apply"], at).status.code(), Some(0));
    let moved = core.skill("claim.lookup@1");
    assert_eq!(moved["contract"]["implementation"]["endpoint"], "https://claims-v2.example/lookup");
    assert_eq!(moved["rowVersion"], 3);

    copy.write("skills/claim.lookup.yaml", &lookup("https://claims-v2.example/lookup", "Find a claim by id.", 45));
    let plan = copy.sdk(&["plan"], at);
    assert_eq!(plan.status.code(), Some(1));
    assert!(
        text(&plan.stdout).contains(
            "! refused    claim.lookup@1: the contract of a published version is immutable: raise spec.version (changed: contract.timeoutSeconds)"
        ),
        "{}",
        text(&plan.stdout)
    );
    let events = core.event_count();
    let refused = copy.sdk(&["apply"], at);
    assert_eq!(refused.status.code(), Some(1));
    assert!(text(&refused.stderr).contains("nothing was applied"), "{}", text(&refused.stderr));
    assert_eq!(core.event_count(), events, "a refused apply writes nothing");
    assert_eq!(core.skill("claim.lookup@1")["contract"]["timeoutSeconds"], 30);

    let no_token = copy.sdk(&["plan"], Some((core.url.as_str(), "")));
    assert_eq!(no_token.status.code(), Some(2));
    assert!(text(&no_token.stderr).contains("SKILL_CORE_TOKEN"));
}

/// A package that tries to publish the installer's token through a placeholder is refused with
/// the file and path, by `check`, `plan` and `apply`, and writes nothing; a declared variable at
/// the start of an endpoint is filled.
#[test]
fn a_package_cannot_publish_the_installers_token() {
    let core = serve("secrets");
    let at = Some((core.url.as_str(), core.token.as_str()));
    let copy = Copy::new("secrets");
    copy.write("skills/claim.lookup.yaml", &lookup("https://claims.example/lookup", "token ${SKILL_CORE_TOKEN}", 30));
    assert_eq!(
        problems(&copy),
        [("skills/claim.lookup.yaml".into(), "spec.description".into(), "variable_not_allowed".into())]
    );
    let events = core.event_count();
    for command in ["plan", "apply"] {
        let refused = copy.sdk(&[command], at);
        assert_ne!(refused.status.code(), Some(0), "{command}");
        let stderr = text(&refused.stderr);
        assert!(
            stderr.contains("skills/claim.lookup.yaml at spec.description") && stderr.contains("variable_not_allowed"),
            "{command}: {stderr}"
        );
        assert!(!stderr.contains(&core.token), "{command}: the token is not echoed");
    }
    assert_eq!(core.event_count(), events, "nothing was published");

    // Undeclared, or the platform's own, even at the start of the endpoint.
    for (variable, code) in [("HOME", "undeclared_variable"), ("SKILL_CORE_TOKEN", "reserved_variable")] {
        copy.write("skills/claim.lookup.yaml", &lookup(&format!("${{{variable}}}/lookup"), "Find a claim.", 30));
        assert_eq!(
            problems(&copy),
            [("skills/claim.lookup.yaml".into(), "spec.contract.implementation.endpoint".into(), code.into())]
        );
    }

    // Declared: filled from the environment at plan and apply.
    copy.edit(
        "package.yaml",
        "  variables:\n",
        "  variables:\n    CLAIMS_LOOKUP_URL: {kind: url, description: where the lookup runs}\n",
    );
    copy.write("skills/claim.lookup.yaml", &lookup("${CLAIMS_LOOKUP_URL}/lookup", "Find a claim.", 30));
    assert_eq!(problems(&copy), []);
    let unset = copy.sdk(&["apply"], at);
    assert_ne!(unset.status.code(), Some(0));
    assert!(text(&unset.stderr).contains("variable_not_set"), "{}", text(&unset.stderr));
    let mut apply = Command::new(SDK);
    apply
        .args(["package", "apply", "--package"])
        .arg(copy.package())
        .args(["--core", &core.url])
        .env("SKILL_CORE_TOKEN", &core.token)
        .env("CLAIMS_LOOKUP_URL", "https://lookup.example")
        .env_remove("CI");
    let applied = apply.output().expect("runs");
    assert_eq!(applied.status.code(), Some(0), "{}", text(&applied.stderr));
    let published = core.skill("claim.lookup@1");
    assert_eq!(published["contract"]["implementation"]["endpoint"], "https://lookup.example/lookup");
    // An installer who does not set the variable leaves the endpoint where the installation put
    // it: no move back to a default (here there is none, and nothing is refused either).
    let unset = copy.sdk(&["plan"], at);
    assert_eq!(unset.status.code(), Some(0), "{}", text(&unset.stderr));
    assert!(text(&unset.stdout).contains("0 to move"), "{}", text(&unset.stdout));
    copy.edit(
        "package.yaml",
        "{kind: url, description: where the lookup runs}",
        "{kind: url, description: where the lookup runs, default: 'https://default.example'}",
    );
    let with_default = copy.sdk(&["plan"], at);
    assert!(
        text(&with_default.stdout).contains("0 to move"),
        "the default does not move it: {}",
        text(&with_default.stdout)
    );
    apply.env("CLAIMS_LOOKUP_URL", "https://lookup-2.example");
    let moved = apply.output().expect("runs");
    assert_eq!(moved.status.code(), Some(0), "{}", text(&moved.stderr));
    let published = core.skill("claim.lookup@1");
    assert_eq!(published["contract"]["implementation"]["endpoint"], "https://lookup-2.example/lookup", "set, it moves");
}

/// A package that links to `/dev/zero` or a file outside it, or requires a path, is reported,
/// not read.
#[test]
fn the_package_reader_does_not_trust_the_file_system() {
    let copy = Copy::new("links");
    std::os::unix::fs::symlink("/dev/zero", copy.package().join("skills/zero.yaml")).expect("link");
    std::os::unix::fs::symlink("/etc/hostname", copy.package().join("skills/host.yaml")).expect("link");
    copy.edit("package.yaml", "  requires: []", "  requires: [/etc]");
    assert_eq!(
        problems(&copy),
        [
            ("skills/host.yaml".into(), String::new(), "link_outside_package".into()),
            ("skills/zero.yaml".into(), String::new(), "link_outside_package".into()),
            ("package.yaml".into(), "spec.requires[0]".into(), "invalid_package".into()),
        ]
    );
}

/// A composite that includes a version only a never-applied required package declares passes
/// the offline check (the required package is beside it), but plan and apply refuse it before
/// anything is written, as the core would.
#[test]
fn an_include_the_core_does_not_have_stops_the_plan_and_writes_nothing() {
    let core = serve("includes");
    let at = Some((core.url.as_str(), core.token.as_str()));
    let copy = Copy::new("includes");
    let crm = copy.package().parent().expect("a parent").join("crm");
    std::fs::create_dir_all(crm.join("skills")).expect("crm");
    std::fs::write(
        crm.join("package.yaml"),
        "apiVersion: taimen.ai/v1\nkind: Package\nkey: crm\nspec:\n  version: 1.0.0\n",
    )
    .expect("crm manifest");
    let mut find = lookup("https://crm.example/find", "Find a customer.", 30);
    find["key"] = json!("crm.find");
    std::fs::write(crm.join("skills/crm.find.yaml"), skill_contract::yaml::to_string(&find)).expect("crm skill");
    copy.edit("package.yaml", "  requires: []", "  requires: [crm]");
    copy.write(
        "skills/claims.flow.yaml",
        &json!({"apiVersion": "taimen.ai/v1", "kind": "Skill", "key": "claims.flow",
                "spec": {"version": "1", "description": "Find, then answer.", "includes": ["crm.find@1"]}}),
    );
    assert_eq!(problems(&copy), [], "the offline check sees crm beside the package");
    let events = core.event_count();
    for command in ["plan", "apply"] {
        let refused = copy.sdk(&[command], at);
        assert_ne!(refused.status.code(), Some(0), "{command}");
        let stderr = text(&refused.stderr);
        assert!(stderr.contains("crm.find@1") && stderr.contains("resolution_failure"), "{command}: {stderr}");
    }
    assert_eq!(core.event_count(), events, "nothing was written");
}

/// A package that declares a skill another package installed is refused by plan and apply
/// (nothing written, the owner named) until it adopts the name with `--adopt`; then the skill
/// moves, and the first package's next apply is refused in turn.
#[test]
fn a_package_takes_another_packages_skill_only_by_adoption() {
    let core = serve("adopt");
    let at = Some((core.url.as_str(), core.token.as_str()));
    let copy = Copy::new("adopt");
    assert_eq!(copy.sdk(&["apply"], at).status.code(), Some(0), "claims installed");
    let rival = copy.package().parent().expect("a parent").join("rival");
    std::fs::create_dir_all(rival.join("skills")).expect("rival");
    std::fs::write(
        rival.join("package.yaml"),
        "apiVersion: taimen.ai/v1\nkind: Package\nkey: rival\nspec:\n  version: 1.0.0\n",
    )
    .expect("rival manifest");
    std::fs::copy(copy.package().join("skills/claim.classify.yaml"), rival.join("skills/claim.classify.yaml"))
        .expect("the same skill");
    let sdk = |args: &[&str]| {
        Command::new(SDK)
            .args(["package"])
            .args(args)
            .arg("--package")
            .arg(&rival)
            .args(["--core", &core.url])
            .env("SKILL_CORE_TOKEN", &core.token)
            .env_remove("CI")
            .output()
            .expect("skill-sdk runs")
    };

    let events = core.event_count();
    let plan = sdk(&["plan", "--json"]);
    assert_eq!(plan.status.code(), Some(1));
    let plan: Value = serde_json::from_slice(&plan.stdout).expect("JSON plan");
    let change = &plan["changes"][0];
    assert_eq!(
        (change["operation"].clone(), change["owner"].clone(), change["adopt"].clone()),
        (json!("refuse"), json!("claims"), json!(false))
    );
    let refused = sdk(&["apply"]);
    assert_eq!(refused.status.code(), Some(1));
    assert!(text(&refused.stderr).contains("package claims installed claim.classify: pass --adopt claim.classify"));
    assert_eq!(core.event_count(), events, "nothing was written");
    assert_eq!(core.skill("claim.classify@1")["package"]["key"], "claims");

    let unknown = sdk(&["plan", "--adopt", "claim.nothing"]);
    assert_eq!(unknown.status.code(), Some(1));
    assert!(text(&unknown.stderr).contains("--adopt claim.nothing: package rival has no skill claim.nothing"));

    let plan = sdk(&["plan", "--adopt", "claim.classify"]);
    assert_eq!(plan.status.code(), Some(0), "{}", text(&plan.stderr));
    assert!(
        text(&plan.stdout).contains("= unchanged  claim.classify@1 (adopted from package claims)"),
        "{}",
        text(&plan.stdout)
    );
    let adopted = sdk(&["apply", "--adopt", "claim.classify"]);
    assert_eq!(adopted.status.code(), Some(0), "{}", text(&adopted.stderr));
    assert_eq!(core.skill("claim.classify@1")["package"]["key"], "rival");
    assert_eq!(core.skill("claim.send_reply@1")["package"]["key"], "claims", "only the adopted name moved");

    // The first package, applied again after a change, now meets the new owner.
    copy.edit("package.yaml", "version: 1.0.0", "version: 1.0.1");
    let refused = copy.sdk(&["apply"], at);
    assert_eq!(refused.status.code(), Some(1));
    assert!(text(&refused.stderr).contains("package rival installed claim.classify"), "{}", text(&refused.stderr));
}

/// `spec.settings` is checked offline (a schema of an object, no secrets) and sent with the
/// apply, where the core keeps it for the values an operator sets.
#[test]
fn the_settings_schema_is_checked_and_applied() {
    let core = serve("settings");
    let at = Some((core.url.as_str(), core.token.as_str()));
    let copy = Copy::new("settings");
    copy.edit("package.yaml", "  requires: []", "  requires: []\n  settings: {type: string}");
    assert_eq!(problems(&copy), [("package.yaml".into(), "spec.settings".into(), "invalid_package_settings".into())]);
    copy.edit(
        "package.yaml",
        "  settings: {type: string}",
        "  settings:\n    type: object\n    properties:\n      signature: {type: string, default: The claims desk}",
    );
    assert_eq!(problems(&copy), []);
    assert_eq!(copy.sdk(&["apply"], at).status.code(), Some(0));
    let settings = core._runtime.block_on(async {
        let client = skill_client::Client::new(&core.url, core.token.clone()).expect("a client");
        client.settings("claims").await.expect("settings")
    });
    assert_eq!(settings.schema["properties"]["signature"]["default"], "The claims desk");
    assert_eq!((settings.schema_revision, settings.values_revision), (1, 0));
}
