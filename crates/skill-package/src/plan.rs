//! What installing a skill document would do to a core: create the version, patch its mutable
//! fields, move its endpoint, leave it, or refuse because the published contract is immutable;
//! and the plan of a whole package against a core.

use serde_json::{Value, json};
use skill_api::{ListQuery, PatchRequest, PublishRequest, SkillKind, SkillOut};
use skill_client::Client;
use skill_contract::package;
use skill_contract::{NormalizeOptions, Skill, SkillBody, ToolDeclaration};

use crate::load::Loaded;

/// The plan for one skill version.
#[derive(Debug, Clone, PartialEq)]
pub enum SkillPlan {
    /// Not published yet: `body` is the `POST /skills` request.
    Create { body: Box<PublishRequest> },
    /// Published, with mutable fields (`description`, `endpoint`) to change: `body` is the
    /// `PATCH` request, to send with `If-Match` of `row_version`.
    Patch { id: String, row_version: i32, body: Box<PatchRequest>, moved_from: Option<Value> },
    /// Published as wanted.
    Unchanged,
    /// Published with a different contract (or policy, protocol, composition): only a new version
    /// can carry the change.
    Refuse { fields: Vec<String> },
}

/// Compares the wanted version with the published one.
pub fn plan_skill(wanted: &Skill, published: Option<&SkillOut>) -> SkillPlan {
    let Some(published) = published else {
        return SkillPlan::Create { body: Box::new(PublishRequest::from_skill(wanted)) };
    };
    let mut immutable: Vec<String> = Vec::new();
    let mut body = PatchRequest::default();
    let mut moved_from = None;
    match wanted.body() {
        SkillBody::Leaf(leaf) => {
            if published.kind != SkillKind::Leaf {
                return SkillPlan::Refuse { fields: vec!["contract".to_owned()] };
            }
            let contract = leaf.contract();
            for (field, value, stored) in [
                ("sideEffects", leaf.side_effects().as_str(), published.side_effects.map(|s| s.as_str())),
                ("riskLevel", leaf.risk_level().as_str(), published.risk_level.map(|r| r.as_str())),
                ("protocol", contract.implementation().protocol().as_str(), published.protocol.as_deref()),
            ] {
                if stored != Some(value) {
                    immutable.push(field.to_owned());
                }
            }
            let wanted_contract = contract.to_normalized_json();
            let stored = &published.contract.as_ref().map_or(Value::Null, skill_contract::Contract::to_normalized_json);
            if !subset(&wanted_contract, stored) {
                let endpoint = wanted_contract["implementation"]["endpoint"].as_str();
                let mut with_stored_endpoint = wanted_contract.clone();
                with_stored_endpoint["implementation"]["endpoint"] = stored["implementation"]["endpoint"].clone();
                match endpoint {
                    Some(endpoint) if subset(&with_stored_endpoint, stored) => {
                        body.endpoint = Some(endpoint.to_owned());
                        moved_from = Some(stored["implementation"]["endpoint"].clone());
                    }
                    _ => immutable.extend(differing("contract", &wanted_contract, stored)),
                }
            }
        }
        SkillBody::Composite(composite) => {
            if published.kind != SkillKind::Composite {
                return SkillPlan::Refuse { fields: vec!["includes".to_owned()] };
            }
            let includes: Vec<String> = composite.includes().iter().map(ToString::to_string).collect();
            if published.includes.as_ref() != Some(&includes) {
                immutable.push("includes".to_owned());
            }
            let tools: Vec<Value> = composite.tools().iter().map(ToolDeclaration::to_json).collect();
            if published.tools.as_ref() != Some(&tools) {
                immutable.push("tools".to_owned());
            }
        }
    }
    if !immutable.is_empty() {
        return SkillPlan::Refuse { fields: immutable };
    }
    if published.description != wanted.description() {
        body.description = Some(wanted.description().to_owned());
    }
    if body.fields().is_empty() {
        return SkillPlan::Unchanged;
    }
    SkillPlan::Patch { id: published.id.clone(), row_version: published.row_version, body: Box::new(body), moved_from }
}

/// Whether `wanted` is contained in `published`: objects compare only the wanted keys,
/// recursively; lists and scalars compare exactly.
pub fn subset(wanted: &Value, published: &Value) -> bool {
    match (wanted, published) {
        (Value::Object(wanted), Value::Object(published)) => {
            wanted.iter().all(|(key, value)| published.get(key).is_some_and(|stored| subset(value, stored)))
        }
        _ => wanted == published,
    }
}

/// The dotted paths under `path` where `wanted` is not contained in `published`, down to the
/// keys of `implementation`.
fn differing(path: &str, wanted: &Value, published: &Value) -> Vec<String> {
    match (wanted, published) {
        (Value::Object(wanted), Value::Object(published)) if path.matches('.').count() < 2 => wanted
            .iter()
            .filter(|(key, value)| !published.get(key.as_str()).is_some_and(|stored| subset(value, stored)))
            .flat_map(|(key, value)| {
                differing(&format!("{path}.{key}"), value, published.get(key.as_str()).unwrap_or(&Value::Null))
            })
            .collect(),
        _ => vec![path.to_owned()],
    }
}

/// One line of a package's plan.
#[derive(Debug, Clone)]
pub struct Change {
    pub key: String,
    pub version: String,
    pub plan: SkillPlan,
    /// Another package that installed this skill's name, if any.
    pub owner: Option<String>,
    /// Whether the install takes the name over from `owner` (`--adopt`).
    pub adopt: bool,
}

impl Change {
    pub fn operation(&self) -> &'static str {
        if self.is_taken() {
            return "refuse";
        }
        match &self.plan {
            SkillPlan::Create { .. } => "create",
            SkillPlan::Patch { moved_from: Some(_), body, .. } if body.fields() == ["endpoint"] => "move",
            SkillPlan::Patch { .. } => "patch",
            SkillPlan::Unchanged => "unchanged",
            SkillPlan::Refuse { .. } => "refuse",
        }
    }

    pub fn is_refused(&self) -> bool {
        matches!(self.plan, SkillPlan::Refuse { .. }) || self.is_taken()
    }

    /// Another package installed the name and the install does not adopt it.
    fn is_taken(&self) -> bool {
        self.owner.is_some() && !self.adopt
    }

    /// The message of a name another package holds.
    fn taken_message(&self) -> String {
        let owner = self.owner.as_deref().unwrap_or_default();
        format!("package {owner} installed {}: pass --adopt {} to move it to this package", self.key, self.key)
    }

    pub fn to_json(&self) -> Value {
        let mut out = json!({"kind": "Skill", "key": self.key, "version": self.version, "operation": self.operation()});
        if let Some(owner) = &self.owner {
            out["owner"] = json!(owner);
            out["adopt"] = json!(self.adopt);
        }
        if self.is_taken() {
            out["message"] = json!(self.taken_message());
            return out;
        }
        match &self.plan {
            SkillPlan::Patch { row_version, moved_from, body, .. } => {
                out["fields"] = json!(body.fields());
                out["expected"] = json!({"rowVersion": row_version});
                if let Some(from) = moved_from {
                    out["endpoint"] = json!({"from": from, "to": body.endpoint});
                }
            }
            SkillPlan::Refuse { fields } => {
                out["fields"] = json!(fields);
                out["message"] = json!(refusal(fields));
            }
            _ => {}
        }
        out
    }

    pub fn describe(&self) -> String {
        let name = format!("{}@{}", self.key, self.version);
        if self.is_taken() {
            return format!("  ! refused    {name}: {}", self.taken_message());
        }
        let line = self.describe_plan(&name);
        match (&self.owner, self.adopt) {
            (Some(owner), true) => format!("{line} (adopted from package {owner})"),
            _ => line,
        }
    }

    fn describe_plan(&self, name: &str) -> String {
        match &self.plan {
            SkillPlan::Create { .. } => format!("  + create     {name}"),
            SkillPlan::Patch { moved_from, body, .. } => {
                let mut line = format!("  ~ {:<10} {name} ({})", self.operation(), body.fields().join(", "));
                if let Some(from) = moved_from {
                    let from = from.as_str().map_or_else(|| from.to_string(), str::to_owned);
                    line.push_str(&format!(": endpoint {from} → {}", body.endpoint.as_deref().unwrap_or_default()));
                }
                line
            }
            SkillPlan::Unchanged => format!("  = unchanged  {name}"),
            SkillPlan::Refuse { fields } => format!("  ! refused    {name}: {}", refusal(fields)),
        }
    }
}

/// The message of a refusal.
pub fn refusal(fields: &[String]) -> String {
    format!("the contract of a published version is immutable: raise spec.version (changed: {})", fields.join(", "))
}

/// The plan of every skill of the package against `core`. An endpoint's `${VAR}` is filled
/// from the environment (or the variable's declared default) first; nothing else is.
///
/// A composite's includes must be in the plan or published in the core: a version that only a
/// required package declares, and that package was never applied, is refused here, as the core
/// would refuse it. A skill whose name another package installed is refused unless its name is
/// in `adopt`.
pub async fn plan(loaded: &Loaded, core: &Client, adopt: &[String]) -> Result<Vec<Change>, String> {
    plan_with(loaded, core, adopt, &|name| std::env::var(name).ok()).await
}

/// [`plan`] with the installation variables from `variables` instead of the environment (the
/// declared defaults still apply to what it does not know).
pub async fn plan_with(
    loaded: &Loaded,
    core: &Client,
    adopt: &[String],
    variables: &(dyn Fn(&str) -> Option<String> + Sync),
) -> Result<Vec<Change>, String> {
    for name in adopt {
        if !loaded.package.objects.iter().any(|object| object.kind == "Skill" && &object.key == name) {
            return Err(format!("--adopt {name}: package {} has no skill {name}", loaded.package.key));
        }
    }
    let mut changes = Vec::new();
    let mut composites: Vec<(String, Skill)> = Vec::new();
    let objects: Vec<_> = loaded.package.objects.iter().filter(|object| object.kind == "Skill").collect();
    // What is published of each object, read once; and the origins the installation gave the
    // endpoint variables, as the published versions' endpoints show them.
    let mut found = Vec::with_capacity(objects.len());
    for object in &objects {
        let published = match object.version() {
            Some(version) => {
                let reference = format!("{}@{version}", object.key);
                core.find_skill(&reference)
                    .await
                    .map_err(|error| crate::failure::failure("reading", &reference, &error))?
            }
            None => None,
        };
        found.push(published);
    }
    let installed = installed_origins(&objects, &found);
    // The installer's value first; an endpoint variable it does not set stays where the
    // installation put it; the declared default only where there is nothing yet.
    let lookup =
        |name: &str| variables(name).filter(|value| !value.is_empty()).or_else(|| installed.get(name).cloned());
    for (object, published) in objects.into_iter().zip(found) {
        let document = package::fill(&loaded.package, object, &lookup)
            .map_err(|problems| problems.iter().map(ToString::to_string).collect::<Vec<_>>().join("\n"))?;
        let skill = Skill::from_document(&document, &NormalizeOptions::default())
            .map_err(|error| format!("{}: {error}", object.file))?;
        let name = skill.name().as_str().to_owned();
        let linked = match &published {
            Some(published) => published.package.clone(),
            None => owner_of(core, &name).await?,
        };
        let owner = linked.map(|package| package.key).filter(|key| *key != loaded.package.key);
        changes.push(Change {
            adopt: owner.is_some() && adopt.contains(&name),
            key: name,
            version: skill.version().as_str().to_owned(),
            plan: plan_skill(&skill, published.as_ref()),
            owner,
        });
        if matches!(skill.body(), SkillBody::Composite(_)) {
            composites.push((object.file.clone(), skill));
        }
    }
    for (file, skill) in &composites {
        let SkillBody::Composite(composite) = skill.body() else { continue };
        for include in composite.includes() {
            let reference = include.to_string();
            let planned = changes.iter().any(|change| format!("{}@{}", change.key, change.version) == reference);
            if planned {
                continue;
            }
            let published = core
                .find_skill(&reference)
                .await
                .map_err(|error| crate::failure::failure("reading", &reference, &error))?;
            if published.is_none() {
                return Err(format!(
                    "{file}: {} includes {reference}, which this package does not publish and the core does not have \
                     (resolution_failure): apply the package that declares it first",
                    skill.skill_ref()
                ));
            }
        }
    }
    Ok(changes)
}

/// The origin each endpoint variable has in the installation: for a published version whose
/// package endpoint is `${NAME}<tail>` and whose endpoint now ends with `<tail>`, what comes before
/// it. The first version that shows one decides.
fn installed_origins(
    objects: &[&package::PackageObject],
    published: &[Option<SkillOut>],
) -> std::collections::BTreeMap<String, String> {
    let mut origins = std::collections::BTreeMap::new();
    for (object, published) in objects.iter().zip(published) {
        let (Some((name, tail)), Some(published)) = (package::endpoint_variable(object), published) else {
            continue;
        };
        let endpoint = published.contract.as_ref().and_then(|contract| contract.implementation().endpoint());
        if let Some(origin) = endpoint.and_then(|e| e.strip_suffix(tail.as_str()))
            && !origin.is_empty()
        {
            origins.entry(name).or_insert_with(|| origin.to_owned());
        }
    }
    origins
}

/// The package that installed `name` (in any version), if any.
async fn owner_of(core: &Client, name: &str) -> Result<Option<skill_api::PackageOut>, String> {
    let query = ListQuery { name: Some(name.to_owned()), limit: Some(1), ..ListQuery::default() };
    let page = core.skills(&query).await.map_err(|error| crate::failure::failure("reading", name, &error))?;
    Ok(page.items.into_iter().next().and_then(|skill| skill.package))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn skill(timeout: u32, endpoint: &str, description: &str) -> Skill {
        let document = json!({"apiVersion": "taimen.ai/v1", "kind": "Skill", "key": "a.b", "spec": {
            "version": "1", "description": description, "sideEffects": "external_read", "riskLevel": "low",
            "contract": {"inputs": {"type": "object"}, "outputs": {"type": "object"}, "timeoutSeconds": timeout,
                         "implementation": {"protocol": "http", "endpoint": endpoint}}}});
        Skill::from_document(&document, &NormalizeOptions::default()).expect("a skill")
    }

    fn published(skill: &Skill) -> SkillOut {
        let SkillPlan::Create { body } = plan_skill(skill, None) else { panic!("absent means create") };
        SkillOut {
            id: "id-1".into(),
            name: body.name,
            version: body.version.expect("a version"),
            kind: SkillKind::Leaf,
            description: body.description.unwrap_or_default(),
            protocol: Some("http".into()),
            config: json!({}),
            input_schema: None,
            output_schema: None,
            side_effects: body.side_effects.map(|word| word.parse().expect("a word")),
            risk_level: body.risk_level.map(|word| word.parse().expect("a word")),
            contract: body
                .contract
                .map(|contract| skill_contract::Contract::from_stored(&contract).expect("a contract")),
            includes: None,
            tools: None,
            status: skill_api::SkillStatus::Active,
            row_version: 4,
            created_at: String::new(),
            updated_at: String::new(),
            package: None,
        }
    }

    #[test]
    fn a_changed_contract_is_refused_naming_the_field() {
        let stored = published(&skill(60, "https://a", "d"));
        assert_eq!(plan_skill(&skill(60, "https://a", "d"), Some(&stored)), SkillPlan::Unchanged);
        let SkillPlan::Refuse { fields } = plan_skill(&skill(30, "https://a", "d"), Some(&stored)) else {
            panic!("refused")
        };
        assert_eq!(fields, ["contract.timeoutSeconds"]);
        let SkillPlan::Refuse { fields } = plan_skill(&skill(30, "https://b", "d"), Some(&stored)) else {
            panic!("refused")
        };
        assert_eq!(
            fields,
            ["contract.timeoutSeconds", "contract.implementation.endpoint"],
            "not a move when more changed"
        );
    }

    #[test]
    fn an_endpoint_change_is_a_move_and_a_description_a_patch() {
        let stored = published(&skill(60, "https://a", "d"));
        let SkillPlan::Patch { id, row_version, body, moved_from } =
            plan_skill(&skill(60, "https://b", "new"), Some(&stored))
        else {
            panic!("a patch")
        };
        assert_eq!((id.as_str(), row_version), ("id-1", 4));
        assert_eq!(body.fields(), ["description", "endpoint"]);
        assert_eq!(serde_json::to_value(&body).expect("json"), json!({"endpoint": "https://b", "description": "new"}));
        assert_eq!(moved_from, Some(json!("https://a")));
    }

    #[test]
    fn subsets_compare_wanted_keys_only() {
        assert!(subset(&json!({"a": {"b": 1}}), &json!({"a": {"b": 1, "c": 2}, "d": 3})));
        assert!(!subset(&json!({"a": [1]}), &json!({"a": [1, 2]})));
        assert!(!subset(&json!({"a": null}), &json!({})));
    }
}
