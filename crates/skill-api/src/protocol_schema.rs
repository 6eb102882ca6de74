//! Schemas of the protocol types the API answers with (`SkillMetadata`, `SkillDefinition`),
//! written here because the contract crate describes its types with serde, not schemars.

use schemars::{Schema, SchemaGenerator, json_schema};

/// `SkillMetadata`: the discovery summary of a skill.
pub(crate) fn metadata(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "type": "object",
        "description": "SkillMetadata: the resolved tool count, the capability summary and writes/read_only derived from it",
        "required": ["name", "description", "version", "tool_count", "capability_summary", "source_types", "writes", "read_only"],
        "properties": {
            "name": {"type": "string"},
            "description": {"type": "string"},
            "version": {"type": "string"},
            "tool_count": {"type": "integer", "minimum": 0},
            "capability_summary": {
                "type": "object",
                "properties": {
                    "read_tools": {"type": "integer", "minimum": 0},
                    "write_tools": {"type": "integer", "minimum": 0},
                    "has_side_effects": {"type": "boolean"},
                    "max_risk_level": {"enum": ["low", "medium", "high", null]},
                },
            },
            "source_types": {"type": "array", "items": {"type": "string"}},
            "writes": {"type": "boolean"},
            "read_only": {"type": "boolean"},
        },
    })
}

/// `SkillDefinition`: a skill with its resolved tools, metadata and schemas.
pub(crate) fn definition(generator: &mut SchemaGenerator) -> Schema {
    let metadata = metadata(generator);
    json_schema!({
        "type": "object",
        "description": "SkillDefinition: the skill document, its flattened tool set, its metadata and its schemas",
        "required": ["skill", "resolved_tools", "metadata"],
        "properties": {
            "skill": {"type": "object", "description": "the skill document (apiVersion, kind, key, spec)"},
            "resolved_tools": {"type": "array", "items": {
                "type": "object",
                "required": ["name", "skill", "source_type"],
                "properties": {
                    "name": {"type": "string"},
                    "skill": {"type": "string", "description": "name@version of the skill that provides the tool"},
                    "source_type": {"type": "string"},
                },
            }},
            "metadata": metadata,
            "input_schema": {"type": ["object", "null"]},
            "output_schema": {"type": ["object", "null"]},
        },
    })
}
