//! A skill written in Rust: its compile-time declaration, and its contract, validators and
//! export built once, on first use.

use std::fmt;
use std::sync::OnceLock;

use serde_json::{Map, Value, json};
use skill_contract::schema::{SchemaDocumentError, SchemaValidator};
use skill_contract::{
    Contract, ContractError, Implementation, NormalizeOptions, RefError, RiskLevel, SideEffects, SkillName, SkillRef,
    SkillVersion, normalize,
};

use crate::declaration::{Declaration, DeclaredImplementation, Estimate};

/// One registered skill, collected with `inventory` (the macro registers every `SKILL`).
#[derive(Debug)]
pub struct Registration(pub &'static Skill);

inventory::collect!(Registration);

/// A skill declared with `#[skill]`: reach it as `<function>::SKILL`.
///
/// Its contract is built on first use from the declaration and the schemas of the input and
/// output types. The attribute already refused at compile time what the contract rules refuse;
/// what only shows at run time (an explicit schema that is not valid JSON Schema) is reported by
/// [`crate::registry`] when the host starts.
pub struct Skill {
    declaration: Declaration,
    prepared: OnceLock<Result<Prepared, PrepareError>>,
}

/// Why a skill's contract could not be built.
#[derive(Debug, Clone, thiserror::Error)]
pub enum PrepareError {
    #[error("{skill}: {error}")]
    Reference { skill: String, error: RefError },
    #[error("{skill}: {error}")]
    Contract { skill: String, error: ContractError },
    #[error("{skill}: {field}: {error}")]
    Schema { skill: String, field: &'static str, error: SchemaDocumentError },
}

struct Prepared {
    skill_ref: SkillRef,
    contract: Contract,
    inputs: SchemaValidator,
    outputs: SchemaValidator,
}

impl fmt::Debug for Skill {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "<Skill {}@{}>", self.declaration.name, self.declaration.version)
    }
}

impl Skill {
    #[doc(hidden)]
    pub const fn __declare(declaration: Declaration) -> Self {
        Self { declaration, prepared: OnceLock::new() }
    }

    pub(crate) fn declaration(&self) -> &Declaration {
        &self.declaration
    }

    /// The skill's name, e.g. `claim.draft_reply`.
    pub fn name(&self) -> &'static str {
        self.declaration.name
    }

    /// The version, e.g. `1`.
    pub fn version(&self) -> &'static str {
        self.declaration.version
    }

    /// `name@version` as written.
    pub fn reference(&self) -> String {
        format!("{}@{}", self.declaration.name, self.declaration.version)
    }

    pub fn description(&self) -> &'static str {
        self.declaration.description
    }

    pub fn side_effects(&self) -> SideEffects {
        self.declaration.side_effects
    }

    pub fn risk_level(&self) -> RiskLevel {
        self.declaration.risk_level
    }

    /// `module.path:function` of the Rust function (`::` written as `.`), the local entrypoint
    /// the core matches against an executor's allow-list.
    pub fn entrypoint(&self) -> String {
        let d = &self.declaration;
        let module = d.module_path.strip_suffix(&format!("::{}", d.function)).unwrap_or(d.module_path);
        format!("{}:{}", module.replace("::", "."), d.function)
    }

    /// Where the skill is declared, `file:line`.
    pub fn location(&self) -> String {
        format!("{}:{}", self.declaration.file, self.declaration.line)
    }

    fn prepared(&self) -> Result<&Prepared, &PrepareError> {
        self.prepared.get_or_init(|| prepare(self)).as_ref()
    }

    /// Builds the contract now, reporting what is wrong with it.
    pub fn check(&self) -> Result<(), PrepareError> {
        self.prepared().map(|_| ()).map_err(Clone::clone)
    }

    /// The parsed `name@version`.
    pub fn skill_ref(&self) -> Result<SkillRef, PrepareError> {
        self.prepared().map(|p| p.skill_ref.clone()).map_err(Clone::clone)
    }

    /// The contract with the implementation declared in code.
    pub fn contract(&self) -> Result<&Contract, PrepareError> {
        self.prepared().map(|p| &p.contract).map_err(Clone::clone)
    }

    pub(crate) fn validators(&self) -> Result<(&SchemaValidator, &SchemaValidator), PrepareError> {
        self.prepared().map(|p| (&p.inputs, &p.outputs)).map_err(Clone::clone)
    }

    /// The skill document the package holds (`skills/<name>.yaml`), with the declared
    /// implementation or the one given.
    pub fn document(&self, implementation: Option<Implementation>) -> Result<Value, PrepareError> {
        let prepared = self.prepared().map_err(Clone::clone)?;
        let contract = match implementation {
            Some(implementation) => prepared.contract.with_implementation(implementation),
            None => prepared.contract.clone(),
        };
        let error = |error: ContractError| PrepareError::Contract { skill: self.reference(), error };
        let skill = skill_contract::Skill::leaf(
            prepared.skill_ref.name().clone(),
            prepared.skill_ref.version().clone(),
            self.declaration.description,
            self.declaration.side_effects,
            self.declaration.risk_level,
            contract,
        )
        .map_err(error)?;
        Ok(skill.to_document())
    }

    /// The local implementation at this function (what `export --protocol local` writes).
    pub fn local_implementation(&self) -> Result<Implementation, PrepareError> {
        Implementation::local(&self.entrypoint())
            .map_err(|error| PrepareError::Contract { skill: self.reference(), error })
    }
}

fn implementation_json(skill: &Skill) -> Value {
    let d = skill.declaration();
    let auth = |audience: Option<&str>| audience.map(|a| json!({"audience": a}));
    let mut doc = match d.implementation {
        DeclaredImplementation::Local { entrypoint } => {
            json!({"protocol": "local", "entrypoint": entrypoint.map_or_else(|| skill.entrypoint(), str::to_owned)})
        }
        DeclaredImplementation::Http { endpoint, audience } => {
            json!({"protocol": "http", "endpoint": endpoint, "auth": auth(audience)})
        }
        DeclaredImplementation::Mcp { endpoint, tool, audience } => json!({
            "protocol": "mcp", "endpoint": endpoint,
            "entrypoint": tool.map_or_else(|| d.name.replace('/', "."), str::to_owned),
            "auth": auth(audience),
        }),
    };
    if doc.get("auth").is_some_and(Value::is_null)
        && let Some(map) = doc.as_object_mut()
    {
        map.remove("auth");
    }
    doc
}

fn contract_json(skill: &Skill) -> Value {
    let d = skill.declaration();
    let mut contract = Map::new();
    contract.insert("inputs".into(), (d.inputs_schema)());
    contract.insert("outputs".into(), (d.outputs_schema)());
    contract.insert("idempotency".into(), json!(d.idempotency.as_str()));
    contract.insert("timeoutSeconds".into(), json!(d.timeout_seconds));
    contract.insert("retryPolicy".into(), json!({"maxAttempts": d.max_attempts, "backoffSeconds": d.backoff_seconds}));
    if !d.permissions.is_empty() {
        contract.insert("requiredPermissions".into(), json!(d.permissions));
    }
    if let Some(cost) = d.cost_model {
        let mut model = Map::new();
        model.insert("unit".into(), json!(cost.unit));
        match cost.estimate {
            Some(Estimate::Integer(n)) => {
                model.insert("estimate".into(), json!(n));
            }
            Some(Estimate::Float(f)) => {
                model.insert("estimate".into(), json!(f));
            }
            None => {}
        }
        contract.insert("costModel".into(), Value::Object(model));
    }
    contract.insert("implementation".into(), implementation_json(skill));
    Value::Object(contract)
}

fn prepare(skill: &Skill) -> Result<Prepared, PrepareError> {
    let d = skill.declaration();
    let reference = |error: RefError| PrepareError::Reference { skill: skill.reference(), error };
    let skill_ref =
        SkillRef::new(SkillName::new(d.name).map_err(reference)?, SkillVersion::new(d.version).map_err(reference)?);
    let options = NormalizeOptions { allow_placeholders: true, ..Default::default() };
    let contract = normalize(&contract_json(skill), d.side_effects, &options)
        .map_err(|error| PrepareError::Contract { skill: skill.reference(), error })?;
    let validator = |schema: &Value, field: &'static str| {
        SchemaValidator::new(schema).map_err(|error| PrepareError::Schema { skill: skill.reference(), field, error })
    };
    let inputs = validator(contract.inputs(), "inputs")?;
    let outputs = validator(contract.outputs(), "outputs")?;
    Ok(Prepared { skill_ref, contract, inputs, outputs })
}
