//! Reading a skill document: every problem reported with its path in the document.

use serde_json::{Map, Value};

use super::{API_VERSION, CompositeSkill, KIND, LeafSkill, SKILL_SOURCE, Skill, SkillBody, ToolDeclaration};
use crate::contract::{NormalizeOptions, is_tool_name, normalize};
use crate::fields::{self, present};
use crate::names::{SkillName, SkillRef, SkillVersion};
use crate::policy::{RiskLevel, SideEffects};
use crate::violation::{Problem, Violation, ViolationCode};

const DOCUMENT_KEYS: &[&str] = &["apiVersion", "kind", "key", "spec"];
const LEAF_KEYS: &[&str] = &["version", "description", "sideEffects", "riskLevel", "contract", "protocol"];
const COMPOSITE_KEYS: &[&str] = &["version", "description", "includes", "tools"];
const TOOL_KEYS: &[&str] = &["name", "source", "server", "description", "writes", "hasSideEffects", "riskLevel"];

fn document_violation(field: impl Into<String>, problem: Problem) -> Violation {
    Violation::new(field, problem).coded(ViolationCode::InvalidSkillDocument)
}

pub(super) fn empty_composite() -> Violation {
    document_violation(
        "spec",
        Problem::Missing { expected: "a contract (a leaf skill), or includes or tools (a composite skill)" },
    )
}

fn conflict(field: &str, reason: &str) -> Violation {
    document_violation(field, Problem::Conflict { reason: reason.to_owned() })
}

pub(super) fn document(document: &Value, options: &NormalizeOptions, out: &mut Vec<Violation>) -> Option<Skill> {
    let Value::Object(map) = document else {
        out.push(
            fields::wrong_type("document", "a mapping with apiVersion, kind, key and spec", document)
                .coded(ViolationCode::InvalidSkillDocument),
        );
        return None;
    };
    if let Some(place) = fields::find_nul(document, "") {
        out.push(document_violation(place, Problem::NulCharacter));
        return None;
    }
    let unknown_before = out.len();
    fields::check_keys(map, DOCUMENT_KEYS, "document", out);
    for violation in &mut out[unknown_before..] {
        violation.code = ViolationCode::InvalidSkillDocument;
    }
    for (key, expected) in [("apiVersion", API_VERSION), ("kind", KIND)] {
        if map.get(key).and_then(Value::as_str) != Some(expected) {
            let found =
                map.get(key).map_or_else(String::new, |v| v.as_str().map_or_else(|| v.to_string(), str::to_owned));
            let allowed: &'static [&'static str] = if key == "kind" { &[KIND] } else { &[API_VERSION] };
            out.push(document_violation(key, Problem::NotAllowed { found, allowed }));
        }
    }
    let name = match map.get("key") {
        Some(Value::String(text)) => SkillName::new(text)
            .map_err(|e| out.push(document_violation("key", Problem::Conflict { reason: e.to_string() })))
            .ok(),
        _ => {
            out.push(document_violation(
                "key",
                Problem::Missing { expected: "the skill name, e.g. claim.draft_reply" },
            ));
            None
        }
    };
    let Some(Value::Object(spec)) = map.get("spec") else {
        out.push(document_violation(
            "spec",
            Problem::Missing { expected: "a mapping with version, description and a contract" },
        ));
        return None;
    };
    // Everything a version holds is shown to every reader of the catalog: no credential anywhere.
    if let Some(place) = crate::secret_scan::find_secret_material(&map["spec"], "spec") {
        out.push(Violation::new(place, Problem::SecretMaterial));
    }
    let version = match spec.get("version") {
        Some(Value::String(text)) => SkillVersion::new(text)
            .map_err(|e| out.push(document_violation("spec.version", Problem::Conflict { reason: e.to_string() })))
            .ok(),
        Some(other) => {
            out.push(document_violation(
                "spec.version",
                Problem::Conflict {
                    reason: format!(
                        "write the version as a quoted string ('{other}'): YAML reads 1.10 as the number 1.1"
                    ),
                },
            ));
            None
        }
        None => {
            out.push(document_violation(
                "spec.version",
                Problem::Missing { expected: "the version as a string, e.g. '1'" },
            ));
            None
        }
    };
    let description = match present(spec, "description") {
        None => String::new(),
        Some(value) => match fields::string(value, "spec.description", out) {
            Some(text) if text.chars().count() > crate::MAX_DESCRIPTION => {
                let length = text.chars().count();
                out.push(Violation::new("spec.description", Problem::TooLong { length, max: crate::MAX_DESCRIPTION }));
                String::new()
            }
            Some(text) => text.to_owned(),
            None => String::new(),
        },
    };
    let body = if present(spec, "contract").is_some() {
        leaf(spec, options, out).map(|leaf| SkillBody::Leaf(Box::new(leaf)))
    } else {
        composite(spec, out).map(SkillBody::Composite)
    };
    Some(Skill { name: name?, version: version?, description, body: body? })
}

fn leaf(spec: &Map<String, Value>, options: &NormalizeOptions, out: &mut Vec<Violation>) -> Option<LeafSkill> {
    let mut unknown: Vec<String> = Vec::new();
    for key in spec.keys() {
        let reason = match key.as_str() {
            k if LEAF_KEYS.contains(&k) => continue,
            "includes" | "tools" => "a skill with a contract is a leaf: put includes and tools into a composite skill",
            "inputSchema" | "outputSchema" | "config" => {
                "a skill with a contract takes its schemas from the contract: remove this field"
            }
            _ => {
                unknown.push(key.clone());
                continue;
            }
        };
        out.push(conflict(&format!("spec.{key}"), reason));
    }
    if !unknown.is_empty() {
        out.push(document_violation("spec", Problem::UnknownKeys { unknown, allowed: LEAF_KEYS }));
    }
    let side_effects: Option<SideEffects> = fields::required_word(spec.get("sideEffects"), "spec.sideEffects", out);
    let risk_level: Option<RiskLevel> = fields::required_word(spec.get("riskLevel"), "spec.riskLevel", out);
    let raw = spec.get("contract").unwrap_or(&Value::Null);
    let contract = match normalize(raw, side_effects.unwrap_or(SideEffects::None), options) {
        Ok(contract) => Some(contract),
        Err(error) => {
            for violation in error.violations() {
                let mut violation = violation.clone();
                violation.field = if violation.field == "contract" {
                    "spec.contract".to_owned()
                } else {
                    format!("spec.contract.{}", violation.field)
                };
                out.push(violation);
            }
            None
        }
    };
    if let (Some(contract), Some(protocol)) = (&contract, present(spec, "protocol")) {
        let declared = contract.implementation().protocol().as_str();
        if protocol.as_str() != Some(declared) {
            out.push(Violation::new(
                "spec.protocol",
                Problem::Conflict {
                    reason: format!("{protocol} differs from the contract's implementation protocol {declared}"),
                },
            ));
        }
    }
    Some(LeafSkill { side_effects: side_effects?, risk_level: risk_level?, contract: contract? })
}

fn composite(spec: &Map<String, Value>, out: &mut Vec<Violation>) -> Option<CompositeSkill> {
    let mut unknown: Vec<String> = Vec::new();
    for key in spec.keys() {
        match key.as_str() {
            k if COMPOSITE_KEYS.contains(&k) => {}
            "sideEffects" | "riskLevel" => out.push(conflict(
                &format!("spec.{key}"),
                "a composite skill takes its capabilities from what it includes: remove this field",
            )),
            _ => unknown.push(key.clone()),
        }
    }
    if !unknown.is_empty() {
        out.push(document_violation("spec", Problem::UnknownKeys { unknown, allowed: COMPOSITE_KEYS }));
    }
    let before = out.len();
    let mut includes = Vec::new();
    match present(spec, "includes") {
        None => {}
        Some(Value::Array(items)) => {
            for (index, item) in items.iter().enumerate() {
                match item.as_str().map(SkillRef::parse) {
                    Some(Ok(r)) if !includes.contains(&r) => includes.push(r),
                    Some(Ok(_)) => {}
                    Some(Err(e)) => out.push(
                        document_violation("spec.includes", Problem::Conflict { reason: e.to_string() }).at(index),
                    ),
                    None => out.push(
                        fields::wrong_type("spec.includes", "a name@version string", item)
                            .coded(ViolationCode::InvalidSkillDocument)
                            .at(index),
                    ),
                }
            }
        }
        Some(other) => out.push(
            fields::wrong_type("spec.includes", "a list of name@version", other)
                .coded(ViolationCode::InvalidSkillDocument),
        ),
    }
    let mut tools: Vec<ToolDeclaration> = Vec::new();
    match present(spec, "tools") {
        None => {}
        Some(Value::Array(items)) => {
            for (index, item) in items.iter().enumerate() {
                if let Some(tool) = tool(item, index, out) {
                    if tools.iter().any(|t| t.name == tool.name) {
                        out.push(conflict("spec.tools", &format!("tool `{}` is declared twice", tool.name)));
                    } else {
                        tools.push(tool);
                    }
                }
            }
        }
        Some(other) => out.push(
            fields::wrong_type("spec.tools", "a list of tool declarations", other)
                .coded(ViolationCode::InvalidSkillDocument),
        ),
    }
    if out.len() != before {
        return None;
    }
    if includes.is_empty() && tools.is_empty() {
        out.push(empty_composite());
        return None;
    }
    Some(CompositeSkill { includes, tools })
}

fn tool(item: &Value, index: usize, out: &mut Vec<Violation>) -> Option<ToolDeclaration> {
    let field = format!("spec.tools[{index}]");
    let Value::Object(map) = item else {
        out.push(
            fields::wrong_type(&field, "a tool declaration {name, source, writes, ...}", item)
                .coded(ViolationCode::InvalidSkillDocument),
        );
        return None;
    };
    let before = out.len();
    fields::check_keys(map, TOOL_KEYS, &field, out);
    let name = match present(map, "name").and_then(Value::as_str) {
        Some(name) if is_tool_name(name) => Some(name.to_owned()),
        Some(name) => {
            out.push(document_violation(
                format!("{field}.name"),
                Problem::BadFormat {
                    found: name.to_owned(),
                    rule: "a tool name (letters, digits, `_`, `.`, `-`, `/`; at most 200)",
                },
            ));
            None
        }
        None => {
            out.push(document_violation(
                format!("{field}.name"),
                Problem::Missing { expected: "the tool's name on its server" },
            ));
            None
        }
    };
    let source = match present(map, "source").and_then(Value::as_str) {
        None => "mcp".to_owned(),
        Some(SKILL_SOURCE) => {
            out.push(conflict(
                &format!("{field}.source"),
                "`skill` is reserved for catalog skills: include the skill by name@version instead",
            ));
            String::new()
        }
        Some(source)
            if source.len() <= 32
                && source.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_')
                && !source.is_empty() =>
        {
            source.to_owned()
        }
        Some(source) => {
            out.push(document_violation(
                format!("{field}.source"),
                Problem::BadFormat { found: source.to_owned(), rule: "a lowercase source label such as mcp" },
            ));
            String::new()
        }
    };
    let server_field = format!("{field}.server");
    let server = present(map, "server").and_then(|v| fields::bounded_string(v, &server_field, 2000, out)).map(|text| {
        // The MCP server the tool lives on: a URL without credentials, or stdio:<name>.
        let mut problems = Vec::new();
        crate::contract::check_mcp_address(text, &server_field, &mut problems);
        out.extend(problems.into_iter().map(|violation| match violation.problem {
            // Credentials keep their own code.
            Problem::SecretMaterial => violation,
            _ => violation.coded(ViolationCode::InvalidSkillDocument),
        }));
        text.to_owned()
    });
    let description = present(map, "description")
        .and_then(|v| fields::string(v, &format!("{field}.description"), out))
        .unwrap_or_default()
        .to_owned();
    let writes = match present(map, "writes") {
        Some(Value::Bool(b)) => *b,
        _ => {
            out.push(document_violation(
                format!("{field}.writes"),
                Problem::Missing { expected: "true or false: whether the tool can write to the outside world" },
            ));
            false
        }
    };
    let has_side_effects = match present(map, "hasSideEffects") {
        None => writes,
        Some(Value::Bool(b)) => *b,
        Some(other) => {
            out.push(
                fields::wrong_type(&format!("{field}.hasSideEffects"), "true or false", other)
                    .coded(ViolationCode::InvalidSkillDocument),
            );
            writes
        }
    };
    let risk_level: RiskLevel = fields::word(map, "riskLevel", &format!("{field}.riskLevel"), out);
    if out.len() != before {
        return None;
    }
    Some(ToolDeclaration::new(name?, source, server, description, writes, has_side_effects, risk_level))
}
