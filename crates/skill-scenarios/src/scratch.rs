//! The scratch core the tests run on: a SQLite database made once per run — the workspaces the
//! tests name, the people who act in them, an executor the mocks answer as, and the packages
//! installed — then copied for each test, so every test starts from the packages as installed
//! and nothing one test did is seen by another (nor by any real core).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::Value;
use skill_api::{ApplyRequest, ExecutorAllowance, TestFailure};
use skill_engine::clock::MovedClock;
use skill_engine::{Actor, Engine, Origin, TokenRequest};

/// The people of every scratch core: who starts the work, and who decides it.
pub const TESTER: &str = "tester";
pub const REVIEWER: &str = "reviewer";
const INSTALLER: &str = "installer";
const EXECUTOR: &str = "mock-executor";

/// The database every test copies, and the tokens of those who act on it.
pub struct Template {
    folder: Folder,
    file: PathBuf,
    tokens: BTreeMap<String, String>,
    /// The permissions a person of the tests holds (given to one an `approve` names).
    grants: Vec<String>,
    copies: std::sync::atomic::AtomicU64,
}

/// One test's core: its engine on its copy, its clock, and who acts.
pub struct Scratch {
    pub engine: Engine,
    pub clock: Arc<MovedClock>,
    pub people: BTreeMap<String, Actor>,
    pub executor: Actor,
    grants: Vec<String>,
    file: PathBuf,
    blobs: PathBuf,
}

/// Removes the folders of runs that ended without removing theirs (a process killed half-way):
/// those beside `ours` named as a run's, owned by whoever owns `ours`, made longer ago than twice
/// the longest run.
fn sweep(parent: &Path, ours: &Path) {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        let Ok(owner) = std::fs::metadata(ours).map(|ours| ours.uid()) else { return };
        let Ok(entries) = std::fs::read_dir(parent) else { return };
        let oldest = std::time::SystemTime::now() - 2 * crate::RUN_TIMEOUT;
        for entry in entries.flatten() {
            let name = entry.file_name();
            let Some(id) = name.to_str().and_then(|name| name.strip_prefix(FOLDER_PREFIX)) else { continue };
            let Ok(id) = uuid::Uuid::parse_str(id) else { continue };
            let Some((seconds, nanos)) = id.get_timestamp().map(|stamp| stamp.to_unix()) else { continue };
            let made = std::time::UNIX_EPOCH + std::time::Duration::new(seconds, nanos);
            // `symlink_metadata`: a link placed there is not followed.
            let Ok(found) = std::fs::symlink_metadata(entry.path()) else { continue };
            if made < oldest && found.is_dir() && found.uid() == owner {
                let _ = std::fs::remove_dir_all(entry.path());
            }
        }
    }
    #[cfg(not(unix))]
    let _ = (parent, ours);
}

/// How a run's folder is named: this, then a UUIDv7 (which says when it was made).
pub const FOLDER_PREFIX: &str = "skill-package-test-";

/// What the packages make the people of the tests and their installer hold, read before any
/// grant is made (a grant is a write of its own, and the scratch core checks a package only when
/// it installs it) by the contract crate's own readers: each skill's contract normalized (at most
/// [`skill_contract::MAX_PERMISSIONS`] permissions, each well-formed), each agent's document
/// within its limits.
struct Held {
    /// The permissions the skills' contracts require.
    required: BTreeSet<String>,
    /// The agents' permissions, as written (`PERMISSION` or `PERMISSION@WORKSPACE`).
    agents: BTreeSet<String>,
}

fn held(packages: &[ApplyRequest]) -> Result<Held, Box<TestFailure>> {
    let mut held = Held { required: BTreeSet::new(), agents: BTreeSet::new() };
    for (p, package) in packages.iter().enumerate() {
        for (s, skill) in package.create.iter().enumerate() {
            // A skill without a contract or a readable policy is the installation's to refuse.
            let (Some(contract), Some(Ok(effects))) =
                (&skill.contract, skill.side_effects.as_deref().map(str::parse::<skill_contract::SideEffects>))
            else {
                continue;
            };
            let read = skill_contract::normalize(contract, effects, &skill_contract::NormalizeOptions::default());
            match read {
                Ok(contract) => held.required.extend(contract.required_permissions().iter().cloned()),
                Err(error) => {
                    let first = error.violations().first().map(ToString::to_string).unwrap_or_default();
                    let field = error.violations().first().map(|violation| violation.field.as_str());
                    let at = field.filter(|field| *field != "contract").map(|field| format!(".{field}"));
                    return Err(Box::new(
                        TestFailure::new(
                            "package_refused",
                            Some(format!("packages[{p}].create[{s}].contract{}", at.unwrap_or_default())),
                            format!(
                                "package {}: the contract of {} is refused: {first}",
                                package.package.key, skill.name
                            ),
                        )
                        .hinted("fix the skill's contract: skill-sdk package check says the same"),
                    ));
                }
            }
        }
        for (a, agent) in package.agents.iter().enumerate() {
            let problem = match skill_contract::agent::read_spec(&agent.spec) {
                Ok(spec) => match spec.problems().into_iter().next() {
                    None => {
                        held.agents.extend(spec.identity.permissions);
                        continue;
                    }
                    Some(problem) => problem,
                },
                Err(problem) => problem,
            };
            return Err(Box::new(
                TestFailure::new(
                    "package_refused",
                    Some(format!("packages[{p}].agents[{a}].{}", problem.path)),
                    format!("package {}: the agent {} is refused: {}", package.package.key, agent.key, problem.message),
                )
                .hinted(problem.hint),
            ));
        }
    }
    Ok(held)
}

/// The run's folder, removed with everything in it when dropped: when the run ends, when making
/// the template fails, and when the run is dropped half-way (a client that went away).
struct Folder(PathBuf);

impl Drop for Folder {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn failure(message: impl Into<String>) -> Box<TestFailure> {
    Box::new(TestFailure::new("scratch_core_failed", None, message))
}

async fn actor(engine: &Engine, name: &str, kind: &str, grants: &[String]) -> Result<String, Box<TestFailure>> {
    let request = TokenRequest {
        principal: name.to_owned(),
        kind: kind.to_owned(),
        grants: grants.to_vec(),
        label: "package test".to_owned(),
        expires_at: None,
    };
    let issued = engine
        .issue_token(&request, &Origin::default())
        .await
        .map_err(|error| failure(format!("the {name} of the tests cannot be made: {}", error.message)))?;
    Ok(issued.token)
}

impl Template {
    /// Makes the template in the new folder `folder` (which it owns and removes when dropped,
    /// or when making it fails or is dropped): the workspaces, people and executor, and
    /// `packages` installed in order. A package the scratch core refuses fails the whole run.
    pub async fn make(
        folder: &Path,
        packages: &[ApplyRequest],
        workspaces: &BTreeSet<String>,
    ) -> Result<Self, Box<TestFailure>> {
        // A folder of its own, made now: one already there (another run's, or a link placed
        // there) is never written into.
        if let Some(parent) = folder.parent() {
            std::fs::create_dir_all(parent)
                .map_err(|error| failure(format!("cannot make {}: {error}", parent.display())))?;
        }
        // The owner's alone: the packages' skills, the core's published versions and the tests'
        // facts are in it.
        let mut builder = std::fs::DirBuilder::new();
        #[cfg(unix)]
        std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
        builder.create(folder).map_err(|error| failure(format!("cannot make {}: {error}", folder.display())))?;
        let owned = Folder(folder.to_path_buf());
        if let Some(parent) = folder.parent() {
            sweep(parent, folder);
        }
        let held = held(packages)?;
        Self::fill(owned, packages, workspaces, held).await
    }

    async fn fill(
        owned: Folder,
        packages: &[ApplyRequest],
        workspaces: &BTreeSet<String>,
        held: Held,
    ) -> Result<Self, Box<TestFailure>> {
        let folder = owned.0.as_path();
        let data = folder.join("template");
        let options = skill_store::StoreOptions { sqlite_full_sync: false, ..Default::default() };
        let store = skill_store::open(&data.display().to_string(), &options)
            .await
            .map_err(|error| failure(format!("cannot open the scratch database: {error}")))?;
        let engine = Engine::new(Arc::clone(&store));
        // The workspaces the tests name, and those the packages' agents hold permissions in.
        let agents_workspaces =
            held.agents.iter().filter_map(|written| skill_contract::agent::split_permission(written).1);
        let made: BTreeSet<&str> = workspaces.iter().map(String::as_str).chain(agents_workspaces).collect();
        for key in &made {
            engine
                .create_workspace(key, key, &Origin::default())
                .await
                .map_err(|error| failure(format!("cannot make the workspace {key}: {}", error.message)))?;
        }
        // The people hold what the package's skills require, in every workspace of the tests.
        let mut grants: BTreeSet<String> = BTreeSet::from(["skills.invoke".to_owned(), "org.read".to_owned()]);
        for workspace in workspaces {
            for permission in ["tasks.read", "tasks.write", "facts.read", "facts.write", "approvals.decide"] {
                grants.insert(format!("{permission}@{workspace}"));
            }
            for permission in &held.required {
                grants.insert(format!("{permission}@{workspace}"));
            }
        }
        let grants: Vec<String> = grants.into_iter().collect();
        let mut tokens = BTreeMap::new();
        // An install grants at most what its installer holds: the installer holds what the
        // packages' agents do.
        let mut installer_grants: BTreeSet<String> = grants.iter().cloned().collect();
        installer_grants.insert("org.manage".to_owned());
        installer_grants.extend(held.agents);
        let installer_grants: Vec<String> = installer_grants.into_iter().collect();
        let installer = actor(&engine, INSTALLER, "person", &installer_grants).await?;
        let installer = engine.authenticate(&installer).await.map_err(|error| failure(error.message))?;
        for person in [TESTER, REVIEWER] {
            tokens.insert(person.to_owned(), actor(&engine, person, "person", &grants).await?);
        }
        tokens.insert(EXECUTOR.to_owned(), actor(&engine, EXECUTOR, "executor", &["skills.execute".to_owned()]).await?);
        engine
            .allow_executor(None, EXECUTOR, &allowance(packages), None)
            .await
            .map_err(|error| failure(format!("the mock executor cannot be allowed the skills: {}", error.message)))?;
        for (p, package) in packages.iter().enumerate() {
            engine.apply_package(&installer, package, None).await.map_err(|error| {
                let at = ["path", "item", "field"].iter().find_map(|key| error.details.get(*key)?.as_str());
                let mut refused = TestFailure::new(
                    "package_refused",
                    Some(at.map_or_else(|| format!("packages[{p}]"), |at| format!("packages[{p}].{at}"))),
                    format!(
                        "the scratch core refused package {}: {} ({})",
                        package.package.key, error.message, error.code
                    ),
                );
                refused.actual = Some(Value::Object(error.details.clone()));
                Box::new(refused)
            })?;
        }
        let file = folder.join("template.db");
        store.copy_into(&file).await.map_err(|error| failure(format!("cannot copy the scratch database: {error}")))?;
        Ok(Self { folder: owned, file, tokens, grants, copies: 0.into() })
    }

    /// A fresh copy for one test, with its own clock.
    pub async fn scratch(&self) -> Result<Scratch, Box<TestFailure>> {
        let nth = self.copies.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let file = self.folder.0.join(format!("test-{nth}.db"));
        std::fs::copy(&self.file, &file).map_err(|error| failure(format!("cannot copy the template: {error}")))?;
        let options = skill_store::StoreOptions { sqlite_full_sync: false, ..Default::default() };
        let store = skill_store::open(&file.display().to_string(), &options)
            .await
            .map_err(|error| failure(format!("cannot open a test's database: {error}")))?;
        let clock = Arc::new(MovedClock::default());
        // Artifacts' content (a task-bound call's result) in a folder of the test's own.
        let blobs = self.folder.0.join(format!("test-{nth}-blobs"));
        let engine = Engine::new(store)
            .with_clock(clock.clone())
            .with_blobs(Arc::new(skill_store::FolderBlobs::new(blobs.clone())));
        let mut people = BTreeMap::new();
        let mut executor = None;
        for (name, token) in &self.tokens {
            let actor = engine.authenticate(token).await.map_err(|error| failure(error.message))?;
            if name == EXECUTOR {
                executor = Some(actor);
            } else {
                people.insert(name.clone(), actor);
            }
        }
        let executor = executor.ok_or_else(|| failure("the mock executor is missing"))?;
        Ok(Scratch { engine, clock, people, executor, grants: self.grants.clone(), file, blobs })
    }
}

impl Scratch {
    /// The person `name`: one of the tests' people, or a new one with their permissions.
    pub async fn person(&mut self, name: &str) -> Result<Actor, Box<TestFailure>> {
        if let Some(actor) = self.people.get(name) {
            return Ok(actor.clone());
        }
        let token = actor(&self.engine, name, "person", &self.grants).await?;
        let actor = self.engine.authenticate(&token).await.map_err(|error| failure(error.message))?;
        self.people.insert(name.to_owned(), actor.clone());
        Ok(actor)
    }

    /// Removes the test's database.
    pub fn discard(self) {
        let (file, blobs) = (self.file.clone(), self.blobs.clone());
        drop(self);
        for suffix in ["", "-wal", "-shm"] {
            let _ = std::fs::remove_file(format!("{}{suffix}", file.display()));
        }
        let _ = std::fs::remove_dir_all(blobs);
    }
}

/// `scheme://host[:port]` of an endpoint; a `stdio:` server as it is.
pub fn origin(endpoint: &str) -> String {
    let lower = endpoint.to_ascii_lowercase();
    if lower.starts_with("stdio:") {
        return endpoint.to_owned();
    }
    match lower.find("://") {
        Some(at) => {
            let rest = &lower[at + 3..];
            let end = rest.find('/').unwrap_or(rest.len());
            format!("{}{}", &lower[..at + 3], &rest[..end])
        }
        None => lower,
    }
}

/// What the mock executor may run: every protocol, entrypoint, origin and audience of the
/// packages' skills.
fn allowance(packages: &[ApplyRequest]) -> ExecutorAllowance {
    let mut allowed = ExecutorAllowance {
        protocols: vec!["local".into(), "http".into(), "mcp".into()],
        ..ExecutorAllowance::default()
    };
    for skill in packages.iter().flat_map(|package| &package.create) {
        let implementation = skill.contract.as_ref().map(|c| c["implementation"].clone()).unwrap_or_default();
        if let Some(entrypoint) = implementation["entrypoint"].as_str() {
            allowed.local.push(entrypoint.to_owned());
        }
        if let Some(endpoint) = implementation["endpoint"].as_str() {
            let target = origin(endpoint);
            match implementation["protocol"].as_str() {
                Some("http") => allowed.http_origins.push(target),
                Some("mcp") => allowed.mcp_origins.push(target),
                _ => {}
            }
        }
        if let Some(audience) = implementation["auth"]["audience"].as_str() {
            allowed.audiences.push(audience.to_owned());
        }
    }
    for list in [&mut allowed.local, &mut allowed.http_origins, &mut allowed.mcp_origins, &mut allowed.audiences] {
        list.sort();
        list.dedup();
    }
    allowed
}

// Never the tokens: a debug print names where the database is.
impl std::fmt::Debug for Template {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Template").field("file", &self.file).finish_non_exhaustive()
    }
}

impl std::fmt::Debug for Scratch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Scratch").field("file", &self.file).finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;
    use std::time::{Duration, SystemTime};

    use super::{FOLDER_PREFIX, Template, sweep};

    /// A run's folder name as if made `ago`.
    fn named(ago: Duration) -> String {
        let made = SystemTime::now() - ago;
        let since = made.duration_since(SystemTime::UNIX_EPOCH).expect("after 1970");
        let stamp = uuid::Timestamp::from_unix(uuid::NoContext, since.as_secs(), since.subsec_nanos());
        format!("{FOLDER_PREFIX}{}", uuid::Uuid::new_v7(stamp))
    }

    #[test]
    fn a_run_folder_is_the_owners_alone_and_one_left_by_a_killed_run_goes_later() {
        let parent = std::env::temp_dir().join(format!("skill-scenarios-sweep-{}", uuid::Uuid::now_v7()));
        std::fs::create_dir(&parent).expect("a parent");
        let old = parent.join(named(2 * crate::RUN_TIMEOUT + Duration::from_secs(60)));
        let young = parent.join(named(Duration::from_secs(60)));
        let stranger = parent.join("skill-package-test-not-a-uuid");
        for folder in [&old, &young, &stranger] {
            std::fs::create_dir(folder).expect("a folder");
            std::fs::write(folder.join("template.db"), b"x").expect("a file");
        }
        let ours = parent.join(named(Duration::ZERO));
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("a runtime");
        let workspaces = BTreeSet::from(["test".to_owned()]);
        let template = runtime.block_on(Template::make(&ours, &[], &workspaces)).expect("made");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&ours).expect("ours").permissions().mode();
            assert_eq!(mode & 0o777, 0o700, "the run's folder is its owner's alone");
        }
        assert!(!old.exists(), "a folder older than twice the longest run is removed");
        assert!(young.exists() && stranger.exists(), "a young one, and one not named as a run's, stay");
        drop(template);
        assert!(!ours.exists(), "the run's own folder goes with it");
        sweep(&parent, &young);
        assert!(young.exists());
        std::fs::remove_dir_all(&parent).expect("cleaned");
    }
}
