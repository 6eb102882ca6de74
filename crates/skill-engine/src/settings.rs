//! Package settings: the schema an install declares (checked at apply: a schema change must
//! still fit the values already set), the values an operator sets (checked against it, no
//! secrets, versioned), and what a claim hands to the executor.

use serde_json::{Value, json};
use skill_api::events::PackageSettingsChanged;
use skill_api::{ClaimSettings, SettingsOut, SettingsRequest};
use skill_contract::codes::Code;
use skill_contract::schema::{SchemaValidator, check_schema_document};
use skill_store::ErrorKind;
use skill_store::records::PackageSettings;

use crate::actor::Actor;
use crate::catalog::view_time;
use crate::error::{Class, EngineError, Result};
use crate::{Engine, Origin};

impl Engine {
    /// A package's settings (`org.read`).
    pub async fn package_settings(&self, actor: &Actor, key: &str) -> Result<SettingsOut> {
        actor.require("org.read")?;
        let settings = self.settings_row(key).await?;
        let version = self.store.package_install(key).await?.version;
        Ok(settings_out(settings, version))
    }

    /// Sets a package's values, whole (`org.manage`).
    pub async fn set_package_settings(
        &self,
        actor: &Actor,
        key: &str,
        request: &SettingsRequest,
        request_id: Option<&str>,
    ) -> Result<SettingsOut> {
        actor.require("org.manage")?;
        let current = self.settings_row(key).await?;
        if let Some(expected) = request.expected_revision
            && expected != current.values_revision
        {
            return Err(EngineError::new(
                Class::Conflict,
                Code::VersionConflict,
                format!(
                    "the settings are at values revision {}, not {expected}: read them again",
                    current.values_revision
                ),
            )
            .with("expectedVersion", expected)
            .with("currentVersion", current.values_revision));
        }
        let values = Value::Object(request.values.clone());
        if let Some(place) = skill_contract::find_secret_material(&values, "values") {
            return Err(EngineError::new(
                Class::Invalid,
                Code::SecretMaterialRejected,
                format!("{place} looks like a secret: settings are not secrets; keep secrets in the secret store"),
            )
            .with("field", place));
        }
        check_values(key, &current.schema, &values).await?;
        let next = PackageSettings {
            values,
            values_revision: current.values_revision + 1,
            updated_at: self.now(),
            updated_by: Some(actor.id().to_owned()),
            ..current
        };
        let changed =
            PackageSettingsChanged { values_revision: next.values_revision, schema_revision: next.schema_revision };
        let event = self.event(format!("package:{key}"), &changed, &Origin::of(actor, request_id));
        match self.store.set_package_values(&next, &event).await {
            Ok(()) => {}
            Err(error) if error.kind() == ErrorKind::Stale => {
                return Err(EngineError::new(
                    Class::Conflict,
                    Code::VersionConflict,
                    "the settings changed meanwhile: read them again",
                ));
            }
            Err(error) => return Err(error.into()),
        }
        let version = self.store.package_install(key).await?.version;
        Ok(settings_out(next, version))
    }

    /// The settings a claim of a version of `skill_name` hands over, or `None` when its package
    /// declares none.
    pub(crate) async fn claim_settings(&self, skill_name: &str) -> Result<Option<ClaimSettings>> {
        Ok(self.store.skill_settings(skill_name).await?.map(|(settings, version)| ClaimSettings {
            package: settings.package_key,
            version,
            schema_revision: i64::from(settings.schema_revision),
            values: settings.values,
        }))
    }

    /// Checks a settings schema an apply brings: a valid schema of an object, no secrets, and
    /// one the values already set for the package still fit.
    pub(crate) async fn check_settings_schema(&self, key: &str, schema: &Value) -> Result<()> {
        let refuse = |message: String| {
            Err(EngineError::new(Class::Invalid, Code::InvalidPackageSettings, message).with("field", "settingsSchema"))
        };
        if !skill_contract::SchemaView(schema).is_exactly(skill_contract::JsonType::Object) {
            return refuse("the settings schema must describe an object (type: object)".to_owned());
        }
        if let Err(error) = check_schema_document(schema) {
            return refuse(format!("the settings schema is not a valid JSON Schema: {error}"));
        }
        if let Some(place) = skill_contract::find_secret_material(schema, "settingsSchema") {
            return refuse(format!("the settings schema holds what looks like a secret at {place}"));
        }
        match self.store.package_settings(key).await {
            Ok(current) if current.values_revision > 0 && current.schema != *schema => {
                check_values(key, schema, &current.values).await.map_err(|error| EngineError {
                    message: format!("{}: set values that fit both schemas first", error.message),
                    ..error
                })
            }
            Ok(_) => Ok(()),
            Err(error) if error.kind() == ErrorKind::NotFound => Ok(()),
            Err(error) => Err(error.into()),
        }
    }

    async fn settings_row(&self, key: &str) -> Result<PackageSettings> {
        self.store.package_settings(key).await.map_err(|error| match error.kind() {
            ErrorKind::NotFound => {
                EngineError::not_found(&format!("settings of package {key} (its manifest declares no spec.settings)"))
            }
            _ => error.into(),
        })
    }
}

/// `values` fit `schema` (`422 invalid_package_settings` with every error otherwise).
async fn check_values(key: &str, schema: &Value, values: &Value) -> Result<()> {
    let (schema, values) = (schema.clone(), values.clone());
    let errors = tokio::task::spawn_blocking(move || SchemaValidator::new(&schema).map(|v| v.errors(&values)))
        .await
        .map_err(|error| EngineError::new(Class::Internal, Code::InternalError, error.to_string()))?
        .map_err(|error| {
            EngineError::new(
                Class::Invalid,
                Code::InvalidPackageSettings,
                format!("the settings schema does not compile: {error}"),
            )
        })?;
    if errors.is_empty() {
        return Ok(());
    }
    let first = errors.first().map(ToString::to_string).unwrap_or_default();
    Err(EngineError::new(
        Class::Invalid,
        Code::InvalidPackageSettings,
        format!("the values do not fit the settings schema of package {key}: {first}"),
    )
    .with("errors", json!(errors)))
}

fn settings_out(settings: PackageSettings, version: String) -> SettingsOut {
    SettingsOut {
        package: settings.package_key,
        package_version: version,
        schema: settings.schema,
        schema_revision: settings.schema_revision,
        values: settings.values,
        values_revision: settings.values_revision,
        updated_at: view_time(&settings.updated_at),
        updated_by: settings.updated_by,
    }
}
