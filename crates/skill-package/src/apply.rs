//! Carrying a package's plan out through the typed client: every version created or patched,
//! then the install recorded; an unchanged package already installed writes nothing.

use skill_api::{ObjectRef, PackageRef, RecordRequest};
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
    if writes.is_empty() && same_install {
        return Ok(Applied::Already);
    }
    for change in writes {
        let reference = format!("{}@{}", change.key, change.version);
        match &change.plan {
            SkillPlan::Create { body } => {
                core.publish(body).await.map_err(|error| failure("publishing", &reference, &error))?;
            }
            SkillPlan::Patch { id, row_version, body, .. } => {
                core.patch_skill(id, *row_version, body)
                    .await
                    .map_err(|error| failure("changing", &reference, &error))?;
            }
            SkillPlan::Unchanged | SkillPlan::Refuse { .. } => {}
        }
        done(change);
    }
    let mut objects: Vec<ObjectRef> = loaded
        .package
        .objects
        .iter()
        .filter(|object| object.kind == "Skill")
        .map(|object| ObjectRef { kind: "Skill".to_owned(), key: object.key.clone() })
        .collect();
    objects.dedup();
    let record = RecordRequest {
        package: PackageRef { key: key.clone(), version: loaded.package.version.clone() },
        install_hash: loaded.install_hash.clone(),
        objects,
    };
    core.record_install(&record).await.map_err(|error| failure("recording the install of", key, &error))?;
    Ok(Applied::Done)
}
