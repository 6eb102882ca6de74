//! Package installs as the catalog records them: which package (key, version, install hash)
//! installed which objects (skills by name), and the events journal for readers.

use skill_contract::codes::Code;
use std::collections::HashMap;

use skill_api::events::PackageInstalled;
use skill_api::{ApplyOut, ApplyRequest, EventOut, InstallOut, ObjectRef, PackageRef, RecordRequest};
use skill_contract::{Skill, SkillName, SkillRef};
use skill_store::ErrorKind;
use skill_store::records::{
    ArtifactTypeRecord, Event, PackageInstall, PackageObject, PackagePlan, SkillFilter, SkillRecord, SkillUpdate,
};

use crate::actor::Actor;
use crate::catalog::{change_of, checked_limit, skill_out, to_skill, version_conflict, view_time};
use crate::error::{Class, EngineError, Result};
use crate::{Engine, Origin};

impl Engine {
    /// The artifact type versions of a package to publish: one already published as wanted is
    /// left alone, one published otherwise is refused.
    async fn planned_artifact_types(
        &self,
        actor: &Actor,
        wanted: &[skill_api::ArtifactTypeRequest],
        origin: &Origin,
    ) -> Result<Vec<(ArtifactTypeRecord, Event)>> {
        let mut planned = Vec::new();
        for (index, wanted) in wanted.iter().enumerate() {
            let item = format!("artifactTypes[{index}]");
            let record = crate::artifacts::types::prepare_artifact_type(actor, wanted, self.new_id())
                .map_err(|error| error.with("item", item.clone()))?;
            planned.extend(self.unpublished(record, &item, origin).await?);
        }
        Ok(planned)
    }

    /// Records an install of a package and links its objects to it (`org.manage`).
    pub async fn record_install(
        &self,
        actor: &Actor,
        request: &RecordRequest,
        request_id: Option<&str>,
    ) -> Result<InstallOut> {
        actor.require("org.manage")?;
        check_package_ref(&request.package, &request.install_hash)?;
        if let Some(index) = request.objects.iter().position(|object| object.kind == "Agent") {
            return Err(EngineError::invalid_request(format!(
                "objects[{index}] is an agent: agents are installed with their documents, by POST /packages:apply"
            ))
            .with("field", format!("objects[{index}]")));
        }
        let (objects, adopt) = checked_objects(&request.objects, &request.adopt)?;
        self.check_known(&request.objects, &[], &[]).await?;
        let install = install_of(&request.package, &request.install_hash, actor);
        let installed = PackageInstalled {
            version: install.version.clone(),
            install_hash: install.install_hash.clone(),
            objects: objects.len(),
            created: None,
            patched: None,
        };
        let event = self.event(format!("package:{}", install.key), &installed, &Origin::of(actor, request_id));
        self.store.record_install(&install, &objects, &adopt, &event).await?;
        self.package(actor, &install.key).await
    }

    /// The last install of a package and its objects (`org.read`).
    pub async fn package(&self, actor: &Actor, key: &str) -> Result<InstallOut> {
        actor.require("org.read")?;
        let install = self.store.package_install(key).await.map_err(|error| match error.kind() {
            ErrorKind::NotFound => EngineError::not_found(&format!("package {key}")),
            _ => error.into(),
        })?;
        let objects = self.store.package_objects(key).await?;
        Ok(InstallOut {
            installed_at: view_time(&install.installed_at),
            key: install.key,
            version: install.version,
            install_hash: install.install_hash,
            installed_by: install.installed_by,
            objects: objects.into_iter().map(|o| ObjectRef { kind: o.kind, key: o.key }).collect(),
        })
    }

    /// Journal entries after `after` (`org.read`), at most `limit` (1 to 1000, default 100).
    pub async fn events(
        &self,
        actor: &Actor,
        after: i64,
        subject: Option<&str>,
        limit: Option<u32>,
    ) -> Result<Vec<EventOut>> {
        actor.require("org.read")?;
        let limit = checked_limit(limit, 100, 1000)?;
        let events = self.store.events(after, subject, limit).await?;
        Ok(events
            .into_iter()
            .map(|event| EventOut {
                created_at: view_time(&event.created_at),
                seq: event.seq,
                id: event.id,
                kind: event.kind,
                subject: event.subject,
                data: event.data,
                actor_id: event.actor_id,
                request_id: event.request_id,
            })
            .collect())
    }
}

impl Engine {
    /// Applies a package's whole plan (`org.manage`): every version checked first (a composite
    /// may include a version of the same plan), then every version created and changed and the
    /// install recorded in one transaction. Any refusal names the part (`details.item`) and
    /// writes nothing.
    pub async fn apply_package(
        &self,
        actor: &Actor,
        request: &ApplyRequest,
        request_id: Option<&str>,
    ) -> Result<ApplyOut> {
        actor.require("org.manage")?;
        check_package_ref(&request.package, &request.install_hash)?;
        let (objects, adopt) = checked_objects(&request.objects, &request.adopt)?;
        let origin = Origin::of(actor, request_id);

        let mut creates = Vec::new();
        let mut planned: HashMap<SkillRef, Skill> = HashMap::new();
        let mut composites = Vec::new();
        for (index, publish) in request.create.iter().enumerate() {
            let item = format!("create[{index}]");
            let (record, composite) =
                self.prepare_publication(publish).await.map_err(|error| error.with("item", item.clone()))?;
            if let Some(skill) = composite {
                planned.insert(skill.skill_ref(), skill.clone());
                composites.push((item, skill));
            } else if let Some(Ok(skill)) = to_skill(&record) {
                planned.insert(skill.skill_ref(), skill);
            }
            let event = self.registered_event(&record, &origin);
            creates.push((record, event));
        }
        for (item, skill) in &composites {
            self.resolve_for_publication(skill, &planned).await.map_err(|error| error.with("item", item.clone()))?;
        }
        let created_names: Vec<&str> = creates.iter().map(|(record, _)| record.name.as_str()).collect();
        let agent_keys: Vec<&str> = request.agents.iter().map(|agent| agent.key.as_str()).collect();
        self.check_known(&request.objects, &created_names, &agent_keys).await?;
        if let Some(schema) = &request.settings_schema {
            self.check_settings_schema(&request.package.key, schema).await?;
        }
        let mut updates = Vec::new();
        for (index, patch) in request.patch.iter().enumerate() {
            let item = format!("patch[{index}]");
            let current = self.store.skill(&patch.id).await.map_err(|error| match error.kind() {
                ErrorKind::NotFound => {
                    EngineError::not_found(&format!("skill {}", patch.id)).with("item", item.clone())
                }
                _ => error.into(),
            })?;
            if current.skill.row_version != patch.row_version {
                return Err(version_conflict(patch.row_version, current.skill.row_version).with("item", item));
            }
            let (change, data) = change_of(&current.skill, &patch.change).map_err(|error| error.with("item", item))?;
            let event = self.event(format!("skill:{}", patch.id), &data, &origin);
            updates.push(SkillUpdate { id: patch.id.clone(), expected_row_version: patch.row_version, change, event });
        }
        // Task types, which may name the versions this plan publishes; one already published
        // as wanted is left alone, one published otherwise is refused.
        let planned_records: Vec<SkillRecord> = creates.iter().map(|(record, _)| record.clone()).collect();
        let artifact_types = self.planned_artifact_types(actor, &request.artifact_types, &origin).await?;
        let planned_types: Vec<_> = artifact_types.iter().map(|(record, _)| record.clone()).collect();
        let wanted_processes: Vec<String> = request
            .processes
            .iter()
            .map(|process| {
                // A spec that does not read names no version; its publication below says why.
                let version = skill_api::process::read_spec(&process.spec).map(|spec| spec.version).unwrap_or_default();
                format!("{}@{version}", process.key)
            })
            .collect();
        let mut task_types = Vec::new();
        for (index, wanted) in request.task_types.iter().enumerate() {
            let item = format!("taskTypes[{index}]");
            let record = self
                .prepare_task_type(actor, wanted, &planned_records, &planned_types, &wanted_processes)
                .await
                .map_err(|error| error.with("item", item.clone()))?;
            task_types.extend(self.unpublished(record, &item, &origin).await?);
        }
        let planned_task_types: Vec<_> = task_types.iter().map(|(record, _)| record.clone()).collect();
        let planned =
            crate::planned::Planned { skills: &planned_records, task_types: &planned_task_types, ..Default::default() };

        let listed = crate::agents::Objects { objects: &objects, adopt: &adopt };
        let agents =
            self.planned_agents(actor, &request.agents, &request.package.key, &listed, &planned, &origin).await?;
        let planned_agents: Vec<_> = agents.iter().map(|plan| plan.record.clone()).collect();
        let processes = self
            .planned_processes(actor, request, &planned_records, &planned_task_types, &planned_agents, &origin)
            .await?;
        let planned_processes: Vec<_> = processes.iter().map(|(record, _)| record.clone()).collect();
        let rules = self
            .planned_rules(
                actor,
                request,
                (&planned_records, &planned_task_types, &planned_agents, &planned_processes),
                &origin,
            )
            .await?;
        let install = install_of(&request.package, &request.install_hash, actor);
        let installed = PackageInstalled {
            version: install.version.clone(),
            install_hash: install.install_hash.clone(),
            objects: objects.len(),
            created: Some(creates.len()),
            patched: Some(updates.len()),
        };
        let event = self.event(format!("package:{}", install.key), &installed, &origin);
        let created_ids: Vec<String> = creates.iter().map(|(record, _)| record.id.clone()).collect();
        let patched_ids: Vec<String> = updates.iter().map(|update| update.id.clone()).collect();
        let published_types: Vec<_> =
            task_types.iter().map(|(record, _)| crate::work::task_type_out(record.clone())).collect();
        let published_artifact_types: Vec<_> =
            planned_types.into_iter().map(crate::artifacts::types::artifact_type_out).collect();
        let applied_agents: Vec<String> = agents.iter().map(|plan| plan.record.key.clone()).collect();
        let published_rules: Vec<_> = rules.iter().map(|(record, _)| crate::rules::rule_out(record.clone())).collect();
        let published_processes: Vec<_> =
            processes.iter().map(|(record, _)| crate::processes::process_out(record.clone())).collect();
        let plan = PackagePlan {
            creates,
            updates,
            install,
            objects,
            adopt,
            settings_schema: request.settings_schema.clone(),
            task_types,
            artifact_types,
            agents,
            rules,
            processes,
        };
        if let Err(error) = self.store.apply_package(&plan, &event).await {
            return Err(match error.kind() {
                ErrorKind::Conflict => EngineError::new(
                    Class::Conflict,
                    Code::SkillExists,
                    "a version of the plan was published meanwhile: plan again",
                ),
                ErrorKind::Stale => EngineError::new(
                    Class::Conflict,
                    Code::VersionConflict,
                    "a version the plan changes changed meanwhile: plan again",
                ),
                _ => error.into(),
            });
        }
        let read = |ids: Vec<String>| async move {
            let mut out = Vec::new();
            for id in ids {
                out.push(skill_out(self.store.skill(&id).await?, true));
            }
            Ok::<_, EngineError>(out)
        };
        let created = read(created_ids).await?;
        let patched = read(patched_ids).await?;
        Ok(ApplyOut {
            install: self.package(actor, &request.package.key).await?,
            created,
            patched,
            task_types: published_types,
            artifact_types: published_artifact_types,
            agents: {
                let mut out = Vec::new();
                for key in applied_agents {
                    out.push(self.agent(actor, &key).await?);
                }
                out
            },
            rules: published_rules,
            processes: published_processes,
        })
    }

    /// The rule versions a package publishes, each checked against what the plan publishes with
    /// it; one published already with the same document is left alone, one published otherwise
    /// is `409 rule_exists`.
    #[allow(clippy::type_complexity)]
    async fn planned_rules(
        &self,
        actor: &Actor,
        request: &ApplyRequest,
        (skills, task_types, agents, processes): (
            &[SkillRecord],
            &[skill_store::records::TaskTypeRecord],
            &[skill_store::records::AgentRecord],
            &[skill_store::records::ProcessRecord],
        ),
        origin: &Origin,
    ) -> Result<Vec<(skill_store::records::RuleRecord, skill_store::records::Event)>> {
        let planned =
            crate::planned::Planned { skills, task_types, agents, processes, package: Some(&request.package.key) };
        let mut rules = Vec::new();
        for (index, wanted) in request.rules.iter().enumerate() {
            let item = format!("rules[{index}]");
            let record =
                self.prepare_rule(actor, wanted, &planned).await.map_err(|error| error.with("item", item.clone()))?;
            rules.extend(self.unpublished(record, &item, origin).await?);
        }
        Ok(rules)
    }
}

impl Engine {
    /// The process versions a package publishes, each checked against what the plan publishes
    /// with it; one published already with the same document is left alone, one published
    /// otherwise is `409 process_exists`.
    async fn planned_processes(
        &self,
        actor: &Actor,
        request: &ApplyRequest,
        skills: &[SkillRecord],
        task_types: &[skill_store::records::TaskTypeRecord],
        agents: &[skill_store::records::AgentRecord],
        origin: &Origin,
    ) -> Result<Vec<(skill_store::records::ProcessRecord, skill_store::records::Event)>> {
        let planned =
            crate::planned::Planned { skills, task_types, agents, processes: &[], package: Some(&request.package.key) };
        let mut processes = Vec::new();
        for (index, wanted) in request.processes.iter().enumerate() {
            let item = format!("processes[{index}]");
            let record = self
                .prepare_process(actor, wanted, &planned)
                .await
                .map_err(|error| error.with("item", item.clone()))?;
            processes.extend(self.unpublished(record, &item, origin).await?);
        }
        Ok(processes)
    }
}

impl Engine {
    /// Every object names a skill the catalog has in some version, or one of `planned`
    /// (`422 unknown_reference` naming the first that does not).
    async fn check_known(&self, objects: &[ObjectRef], planned: &[&str], agents: &[&str]) -> Result<()> {
        for (index, object) in objects.iter().enumerate() {
            if object.kind == "Agent" {
                let known = agents.contains(&object.key.as_str())
                    || match self.store.agent(&object.key).await {
                        Ok(_) => true,
                        Err(error) if error.kind() == ErrorKind::NotFound => false,
                        Err(error) => return Err(error.into()),
                    };
                if !known {
                    return Err(EngineError::new(
                        Class::Invalid,
                        Code::UnknownReference,
                        format!("the core has no agent {}: declare it in the same apply", object.key),
                    )
                    .with("field", format!("objects[{index}]")));
                }
                continue;
            }
            if planned.contains(&object.key.as_str()) {
                continue;
            }
            let filter = SkillFilter { name: Some(object.key.clone()), limit: 1, ..SkillFilter::default() };
            if self.store.skills(&filter).await?.is_empty() {
                return Err(unknown_object(&object.key).with("field", format!("objects[{index}]")));
            }
        }
        Ok(())
    }
}

fn unknown_object(name: &str) -> EngineError {
    EngineError::new(
        Class::Invalid,
        Code::UnknownReference,
        format!("the catalog has no version of the skill {name}: publish it first, or in the same apply"),
    )
}

/// The install `actor` records now.
fn install_of(package: &PackageRef, install_hash: &str, actor: &Actor) -> PackageInstall {
    PackageInstall {
        key: package.key.clone(),
        version: package.version.clone(),
        install_hash: install_hash.to_owned(),
        installed_at: chrono::Utc::now(),
        installed_by: Some(actor.id().to_owned()),
    }
}

/// A package key (never a path), a version, and a SHA-256 in hex.
fn check_package_ref(package: &PackageRef, install_hash: &str) -> Result<()> {
    let bad = |field: &str, message: String| Err(EngineError::invalid_request(message).with("field", field));
    if !skill_contract::package::is_package_key(&package.key) {
        return bad(
            "package.key",
            format!("{:?} is not a package key: letters, digits, `-`, `_`, `.`, no `..`", package.key),
        );
    }
    let version_ok = (1..=100).contains(&package.version.len())
        && package.version.chars().all(|c| c.is_ascii_alphanumeric() || "._+-".contains(c));
    if !version_ok {
        return bad(
            "package.version",
            format!("{:?} is not a version: 1 to 100 of letters, digits, `.`, `_`, `+`, `-`", package.version),
        );
    }
    if install_hash.len() != 64 || !install_hash.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)) {
        return bad("installHash", "the install hash is a SHA-256 in 64 lowercase hex digits".to_owned());
    }
    Ok(())
}

/// The objects of an install (skills, by a valid name, each once) and those of them it adopts
/// from another package.
fn checked_objects(objects: &[ObjectRef], adopt: &[ObjectRef]) -> Result<(Vec<PackageObject>, Vec<PackageObject>)> {
    let mut adopted = Vec::new();
    for (index, object) in adopt.iter().enumerate() {
        if !objects.contains(object) {
            return Err(EngineError::invalid_request(format!(
                "adopt[{index}] ({} {}) is not one of the install's objects",
                object.kind, object.key
            ))
            .with("field", format!("adopt[{index}]")));
        }
        adopted.push(PackageObject { kind: object.kind.clone(), key: object.key.clone() });
    }
    let mut out = Vec::new();
    for (index, object) in objects.iter().enumerate() {
        let known = match object.kind.as_str() {
            "Skill" => SkillName::new(&object.key).is_ok(),
            "Agent" => skill_contract::agent::is_agent_key(&object.key),
            _ => false,
        };
        if !known {
            return Err(EngineError::invalid_request(format!(
                "objects[{index}] is not a skill by name or an agent by key: {{kind: Skill | Agent, key: <name or key>}}"
            ))
            .with("field", format!("objects[{index}]")));
        }
        out.push(PackageObject { kind: object.kind.clone(), key: object.key.clone() });
    }
    out.sort();
    out.dedup();
    Ok((out, adopted))
}
