//! Carrying a package's plan out through the typed client: one `packages:apply` request, which
//! the core writes in one transaction (every version created or patched, the task types not yet
//! published, and the install recorded — or nothing); an unchanged package already installed
//! writes nothing.

use skill_api::{ApplyRequest, ObjectRef, PackageRef, PlannedPatch};
use skill_client::Client;

use crate::failure::failure;
use crate::load::Loaded;
use crate::plan::{Change, SkillPlan};

/// What an apply did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Applied {
    /// The changes were written and the install recorded.
    Done,
    /// Nothing to write: every version as wanted and the same install recorded.
    Already,
}

/// Carries out `changes` (which must hold no refusal) and records the install; `done` is told
/// of each change written.
pub async fn apply(
    loaded: &Loaded,
    core: &Client,
    changes: &[Change],
    mut done: impl FnMut(&Change),
) -> Result<Applied, String> {
    if let Some(change) = changes.iter().find(|change| change.is_refused()) {
        return Err(format!("{}@{} is refused: {}", change.key, change.version, change.describe()));
    }
    let key = &loaded.package.key;
    let writes: Vec<&Change> = changes.iter().filter(|change| change.operation() != "unchanged").collect();
    let installed = core.install(key).await.map_err(|error| failure("reading the install of", key, &error))?;
    let same_install = installed.as_ref().is_some_and(|install| {
        install.install_hash == loaded.install_hash && install.version == loaded.package.version
    });
    let adopts = changes.iter().any(|change| change.adopt);
    if writes.is_empty() && same_install && !adopts {
        return Ok(Applied::Already);
    }
    let mut request = ApplyRequest {
        package: PackageRef { key: key.clone(), version: loaded.package.version.clone() },
        install_hash: loaded.install_hash.clone(),
        create: Vec::new(),
        patch: Vec::new(),
        objects: Vec::new(),
        adopt: Vec::new(),
        settings_schema: loaded.package.settings.clone(),
        task_types: crate::task_types::task_type_requests(loaded)?,
        artifact_types: crate::task_types::artifact_type_requests(loaded)?,
        agents: crate::task_types::agent_requests(loaded)?,
        rules: crate::task_types::rule_requests(loaded)?,
        processes: crate::task_types::process_requests(loaded)?,
    };
    for change in &writes {
        match &change.plan {
            SkillPlan::Create { body } => request.create.push((**body).clone()),
            SkillPlan::Patch { id, row_version, body, .. } => {
                request.patch.push(PlannedPatch {
                    id: id.clone(),
                    row_version: *row_version,
                    change: (**body).clone(),
                });
            }
            SkillPlan::Unchanged | SkillPlan::Refuse { .. } => {}
        }
    }
    request.objects = loaded
        .package
        .objects
        .iter()
        .filter(|object| matches!(object.kind.as_str(), "Skill" | "Agent"))
        .map(|object| ObjectRef { kind: object.kind.clone(), key: object.key.clone() })
        .collect();
    request.objects.sort();
    request.objects.dedup();
    request.adopt = changes
        .iter()
        .filter(|change| change.adopt)
        .map(|change| ObjectRef { kind: "Skill".to_owned(), key: change.key.clone() })
        .collect();
    request.adopt.sort();
    request.adopt.dedup();
    // One request, one transaction in the core: every version and the install, or nothing.
    core.apply_package(&request).await.map_err(|error| failure("applying", key, &error))?;
    for change in writes {
        done(change);
    }
    Ok(Applied::Done)
}
