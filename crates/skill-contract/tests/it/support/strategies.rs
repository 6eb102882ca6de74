//! Strategies for property tests: awkward strings, arbitrary JSON values and arbitrary
//! contracts.

#![allow(dead_code, unreachable_pub)]

use proptest::prelude::*;
use serde_json::{Map, Value, json};
use skill_contract::{NormalizeOptions, Skill};

/// Strings that trip YAML readers, plus arbitrary Unicode text and line-based text.
pub fn awkward_string() -> impl Strategy<Value = String> {
    let fixed = prop::sample::select(vec![
        "",
        " ",
        "no",
        "No",
        "NO",
        "yes",
        "on",
        "Off",
        "y",
        "n",
        "true",
        "False",
        "null",
        "Null",
        "~",
        "1",
        "1.0",
        "-1",
        "+1",
        "0x1F",
        "0o17",
        "0b101",
        "1e3",
        "1_000",
        "12:30",
        "2024-01-01",
        "2001-12-14t21:59:43.10-05:00",
        ".inf",
        "-.INF",
        ".NaN",
        "#x",
        "# x",
        "a #b",
        "a: b",
        "key:",
        "-",
        "- x",
        "--- x",
        "...",
        "? x",
        "*x",
        "&x",
        "!x",
        "!!str",
        "%x",
        "@x",
        "`x",
        "|",
        ">",
        "'",
        "\"",
        "'quoted'",
        "\"dq\"",
        "[a]",
        "{a: 1}",
        "a, b",
        "<<",
        "=",
        "multi\nline",
        "multi\nline\n",
        "trailing\n\n",
        "\nleading",
        "  indented\nx",
        "tab\tx",
        "cr\rlf",
        "nul\u{0}",
        "bell\u{7}",
        "ü",
        "Сложить два числа.",
        "Здравствуйте!\n\nВторой абзац…",
        "emoji 🦀",
        "\u{85}",
        "\u{2028}",
        "\u{feff}bom",
        "\u{a0}nbsp",
        "${SVC}/skills/x@1",
        "claims_integration.skills:draft_reply",
    ])
    .prop_map(str::to_owned);
    prop_oneof![
        3 => fixed,
        3 => any::<String>(),
        2 => prop::collection::vec("[a-z :#'\"-]{0,8}", 0..5).prop_map(|lines| lines.join("\n")),
        1 => "[ -~]{0,40}",
    ]
}

fn number() -> impl Strategy<Value = Value> {
    prop_oneof![
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<f64>().prop_filter("finite", |f| f.is_finite()).prop_map(Value::from),
        prop::sample::select(vec![0.0, 1.0, -0.5, 1e20, 1.5e-7, 123456789.0]).prop_map(Value::from),
    ]
}

/// Arbitrary JSON values with awkward strings as keys and leaves.
pub fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        number(),
        awkward_string().prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
            prop::collection::vec((awkward_string(), inner), 0..5)
                .prop_map(|entries| Value::Object(entries.into_iter().collect::<Map<String, Value>>())),
        ]
    })
}

fn implementation() -> impl Strategy<Value = Value> {
    prop_oneof![
        "[a-z_][a-z0-9_]{0,8}(\\.[a-z_][a-z0-9_]{0,8}){0,2}:[a-z_][a-z0-9_]{0,10}"
            .prop_map(|e| json!({"protocol": "local", "entrypoint": e})),
        ("[a-z]{1,10}", prop::option::of("[a-z][a-z-]{0,12}")).prop_map(|(host, audience)| {
            let mut doc = json!({"protocol": "http", "endpoint": format!("https://{host}.example/skills/x@1")});
            if let Some(audience) = audience {
                doc["auth"] = json!({"audience": audience, "scopes": ["claims:read"]});
            }
            doc
        }),
        ("[a-z]{1,10}", "[a-z][a-z._-]{0,20}").prop_map(
            |(name, tool)| json!({"protocol": "mcp", "endpoint": format!("stdio:{name}"), "entrypoint": tool})
        ),
    ]
}

fn schema() -> impl Strategy<Value = Value> {
    (prop::collection::vec(("[a-z]{1,6}", text()), 0..4), any::<bool>()).prop_map(|(props, required)| {
        let mut properties = Map::new();
        for (name, description) in &props {
            properties.insert(name.clone(), json!({"type": "string", "description": description, "default": description}));
        }
        let mut schema = json!({"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object", "properties": properties});
        if required && !props.is_empty() {
            schema["required"] = json!([props[0].0]);
        }
        schema
    })
}

/// Awkward strings without NUL, which documents refuse.
fn text() -> impl Strategy<Value = String> {
    awkward_string().prop_map(|s| s.replace('\0', ""))
}

/// Arbitrary valid leaf skills.
pub fn leaf_skill() -> impl Strategy<Value = Skill> {
    (
        ("[a-z][a-z0-9_.-]{0,15}", "[0-9A-Za-z][0-9A-Za-z._+-]{0,8}", text()),
        (prop::sample::select(vec!["none", "external_read", "external_write"]), prop::sample::select(vec!["low", "medium", "high"])),
        (schema(), schema()),
        (prop::sample::select(vec!["none", "natural", "required"]), 1u32..=3600, 1u32..=10, 0u32..=3600),
        (prop::collection::vec("[a-z]{1,6}\\.[a-z]{1,6}", 0..4), prop::option::of(("[a-z ]{1,10}", prop::option::of(0u32..1000)))),
        implementation(),
    )
        .prop_map(|((name, version, description), (side_effects, risk), (inputs, outputs), (idem, timeout, attempts, backoff), (permissions, cost), implementation)| {
            let attempts = if side_effects == "external_write" && idem == "none" { 1 } else { attempts };
            let mut contract = json!({
                "inputs": inputs, "outputs": outputs, "idempotency": idem, "timeoutSeconds": timeout,
                "retryPolicy": {"maxAttempts": attempts, "backoffSeconds": backoff},
                "requiredPermissions": permissions, "implementation": implementation
            });
            if let Some((unit, estimate)) = cost {
                let unit = if unit.trim().is_empty() { "call".to_owned() } else { unit };
                contract["costModel"] = match estimate {
                    Some(e) => json!({"unit": unit, "estimate": e}),
                    None => json!({"unit": unit}),
                };
            }
            let document = json!({
                "apiVersion": "taimen.ai/v1", "kind": "Skill", "key": name,
                "spec": {"version": version, "description": description, "sideEffects": side_effects, "riskLevel": risk, "contract": contract}
            });
            Skill::from_document(&document, &NormalizeOptions::default()).expect("generated skills are valid")
        })
}
