//! Package installs as the catalog records them: which package (key, version, install hash)
//! installed which objects (skills by name), and the events journal for readers.

use chrono::Utc;
use serde_json::json;
use skill_api::{EventOut, InstallOut, ObjectRef, RecordRequest};
use skill_store::ErrorKind;
use skill_store::records::{PackageInstall, PackageObject};

use crate::actor::Actor;
use crate::catalog::{checked_limit, view_time};
use crate::error::{EngineError, Result};
use crate::{Engine, Origin};

impl Engine {
    /// Records an install of a package and links its objects to it (`org.manage`).
    pub async fn record_install(
        &self,
        actor: &Actor,
        request: &RecordRequest,
        request_id: Option<&str>,
    ) -> Result<InstallOut> {
        actor.require("org.manage")?;
        for (field, text) in [
            ("package.key", &request.package.key),
            ("package.version", &request.package.version),
            ("installHash", &request.install_hash),
        ] {
            if text.is_empty() || text.chars().count() > 200 {
                return Err(
                    EngineError::invalid_request(format!("`{field}` has 1 to 200 characters")).with("field", field)
                );
            }
        }
        let install = PackageInstall {
            key: request.package.key.clone(),
            version: request.package.version.clone(),
            install_hash: request.install_hash.clone(),
            installed_at: Utc::now(),
            installed_by: Some(actor.id().to_owned()),
        };
        let mut objects: Vec<PackageObject> =
            request.objects.iter().map(|o| PackageObject { kind: o.kind.clone(), key: o.key.clone() }).collect();
        objects.sort();
        objects.dedup();
        let event = self.event(
            "package.installed",
            format!("package:{}", install.key),
            json!({"version": install.version, "installHash": install.install_hash, "objects": objects.len()}),
            &Origin::of(actor, request_id),
        );
        self.store.record_install(&install, &objects, &event).await?;
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
