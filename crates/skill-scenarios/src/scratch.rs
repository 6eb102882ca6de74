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
        std::fs::create_dir(folder).map_err(|error| failure(format!("cannot make {}: {error}", folder.display())))?;
        Self::fill(Folder(folder.to_path_buf()), packages, workspaces).await
    }

    async fn fill(
        owned: Folder,
        packages: &[ApplyRequest],
        workspaces: &BTreeSet<String>,
    ) -> Result<Self, Box<TestFailure>> {
        let folder = owned.0.as_path();
        let data = folder.join("template");
        let options = skill_store::StoreOptions { sqlite_full_sync: false, ..Default::default() };
        let store = skill_store::open(&data.display().to_string(), &options)
            .await
            .map_err(|error| failure(format!("cannot open the scratch database: {error}")))?;
        let engine = Engine::new(Arc::clone(&store));
        for key in workspaces {
            engine
                .create_workspace(key, key, &Origin::default())
                .await
                .map_err(|error| failure(format!("cannot make the workspace {key}: {}", error.message)))?;
        }
        // The people hold what the package's skills require, in every workspace of the tests.
        let mut grants: BTreeSet<String> = BTreeSet::from(["skills.invoke".to_owned(), "org.read".to_owned()]);
        let required = packages.iter().flat_map(|package| &package.create).flat_map(|skill| {
            skill.contract.as_ref().and_then(|c| c["requiredPermissions"].as_array().cloned()).unwrap_or_default()
        });
        let required: Vec<String> = required.filter_map(|p| p.as_str().map(str::to_owned)).collect();
        for workspace in workspaces {
            for permission in ["tasks.read", "tasks.write", "facts.read", "facts.write", "approvals.decide"] {
                grants.insert(format!("{permission}@{workspace}"));
            }
            for permission in &required {
                grants.insert(format!("{permission}@{workspace}"));
            }
        }
        let grants: Vec<String> = grants.into_iter().collect();
        let mut tokens = BTreeMap::new();
        // An install grants at most what its installer holds: the installer holds what the
        // packages' agents do.
        let mut installer_grants: BTreeSet<String> = grants.iter().cloned().collect();
        installer_grants.insert("org.manage".to_owned());
        for agent in packages.iter().flat_map(|package| &package.agents) {
            let held = agent.spec["identity"]["permissions"].as_array().cloned().unwrap_or_default();
            installer_grants.extend(held.iter().filter_map(Value::as_str).map(str::to_owned));
        }
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
        for package in packages {
            engine.apply_package(&installer, package, None).await.map_err(|error| {
                let mut refused = TestFailure::new(
                    "package_refused",
                    error.details.get("path").and_then(Value::as_str).map(str::to_owned),
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
