//! Discovery: what any skill resolves to (`SkillDefinition`: the skill, its resolved tools, its
//! metadata and schemas) and its summary (`SkillMetadata`: capability summary, `writes`,
//! `read_only`, source types), for one skill or the whole catalogue.

use skill_contract::codes::Code;
use std::collections::HashMap;

use skill_api::{MetadataOut, Page, SkillStatus};
use skill_contract::composite::{self, Resolution};
use skill_contract::{Skill, SkillBody, SkillDefinition, SkillMetadata};
use skill_store::records::{SkillFilter, SkillRecord};

use crate::Engine;
use crate::actor::Actor;
use crate::catalog::{bounded_page, kind, to_skill};
use crate::error::{Class, EngineError, Result, resolve_error};

impl Engine {
    /// The definition of the version `reference` names (`org.read`, `skills.invoke` or
    /// `skills.execute`).
    pub async fn definition(&self, actor: &Actor, reference: &str) -> Result<SkillDefinition> {
        actor.require_any(&["org.read", "skills.invoke", "skills.execute"])?;
        let record = self.find(reference).await?.skill;
        let (skill, resolution) = self.resolve_record(&record).await?;
        let metadata = SkillMetadata::from_skill(&skill, resolution.tools());
        let (input_schema, output_schema) = match skill.body() {
            SkillBody::Leaf(leaf) => (Some(leaf.contract().inputs().clone()), Some(leaf.contract().outputs().clone())),
            SkillBody::Composite(_) => (record.input_schema.clone(), record.output_schema.clone()),
        };
        SkillDefinition::new(skill, resolution.into_tools(), metadata, input_schema, output_schema)
            .map_err(|error| EngineError::new(Class::Invalid, Code::ValidationError, error.to_string()))
    }

    /// The metadata of the version `reference` names.
    pub async fn metadata(&self, actor: &Actor, reference: &str) -> Result<MetadataOut> {
        actor.require_any(&["org.read", "skills.invoke", "skills.execute"])?;
        let record = self.find(reference).await?.skill;
        let (skill, resolution) = self.resolve_record(&record).await?;
        Ok(metadata_out(&record, SkillMetadata::from_skill(&skill, resolution.tools())))
    }

    /// The metadata of every active leaf and composite version, a page at a time (`org.read`).
    pub async fn catalogue(
        &self,
        actor: &Actor,
        limit: Option<u32>,
        cursor: Option<String>,
    ) -> Result<Page<MetadataOut>> {
        actor.require("org.read")?;
        let filter = SkillFilter { status: Some(SkillStatus::Active), ..SkillFilter::default() };
        let (entries, next_cursor) = self.page(filter, limit, cursor).await?;
        let mut items = Vec::new();
        for entry in entries {
            if entry.skill.contract.is_none() && entry.skill.composition.is_none() {
                continue;
            }
            let (skill, resolution) = self.resolve_record(&entry.skill).await?;
            items.push(metadata_out(&entry.skill, SkillMetadata::from_skill(&skill, resolution.tools())));
        }
        Ok(bounded_page(items, next_cursor, |item| item.id.clone()))
    }

    /// The record as a `Skill` and its resolved tool set.
    pub(crate) async fn resolve_record(&self, record: &SkillRecord) -> Result<(Skill, Resolution)> {
        let skill = match to_skill(record) {
            None => {
                return Err(EngineError::new(
                    Class::Conflict,
                    Code::SkillNotInvocable,
                    format!("{}@{} is a catalog row without a contract or includes", record.name, record.version),
                )
                .with("reason", "no_contract"));
            }
            Some(Err(error)) => {
                tracing::error!(skill = %record.id, %error, "a stored skill does not read back");
                return Err(EngineError::new(
                    Class::Internal,
                    Code::InternalError,
                    "a stored skill does not read back",
                ));
            }
            Some(Ok(skill)) => skill,
        };
        let known = self.closure(&skill, &HashMap::new()).await?;
        let resolution = composite::resolve_skill(&skill, &known).map_err(|error| resolve_error(&skill, &error))?;
        Ok((skill, resolution))
    }
}

fn metadata_out(record: &SkillRecord, metadata: SkillMetadata) -> MetadataOut {
    MetadataOut { metadata, id: record.id.clone(), status: record.status, kind: kind(record) }
}
