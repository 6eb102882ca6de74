//! Bounds on a schema's work, checked before it is compiled: at most [`MAX_REFS`] `$ref`s, no
//! `$ref` that leads back to itself without descending into the instance (validation would
//! never end), and at most [`MAX_EXPANSION`] subschemas applied to one place of an instance
//! (`allOf` of references to `allOf`s of references… grows exponentially with nesting).

use std::collections::HashMap;

use serde_json::Value;

/// The most `$ref`s in one schema document.
pub const MAX_REFS: usize = 1_000;
/// The most subschemas one place of an instance may be checked against.
pub const MAX_EXPANSION: u64 = 1_000;

/// Keywords whose subschemas apply to the same place of the instance as their parent.
const IN_PLACE_LISTS: &[&str] = &["allOf", "anyOf", "oneOf"];
const IN_PLACE_ONE: &[&str] = &["not", "if", "then", "else"];

/// Why a schema is refused, or nothing.
pub(crate) fn check(schema: &Value) -> Result<(), String> {
    let refs = count_refs(schema);
    if refs > MAX_REFS {
        return Err(format!("the schema has {refs} `$ref`s; at most {MAX_REFS} are accepted"));
    }
    let mut walk = Walk { root: schema, memo: HashMap::new(), open: Vec::new() };
    walk.every_schema(schema, String::new())
}

fn count_refs(value: &Value) -> usize {
    match value {
        Value::Object(map) => {
            usize::from(map.get("$ref").is_some_and(Value::is_string)) + map.values().map(count_refs).sum::<usize>()
        }
        Value::Array(items) => items.iter().map(count_refs).sum(),
        _ => 0,
    }
}

struct Walk<'a> {
    root: &'a Value,
    /// The expansion of each subschema already measured, by JSON pointer.
    memo: HashMap<String, u64>,
    /// The subschemas being measured (a `$ref` back to one of them is a cycle).
    open: Vec<String>,
}

impl<'a> Walk<'a> {
    /// Measures every subschema of the document (each must be bounded, wherever it applies).
    fn every_schema(&mut self, node: &'a Value, pointer: String) -> Result<(), String> {
        if node.is_object() {
            self.expansion(node, &pointer)?;
        }
        match node {
            Value::Object(map) => {
                for (key, value) in map {
                    // Values of `const`, `enum`, `default` and `examples` are instances, not schemas.
                    if matches!(key.as_str(), "const" | "enum" | "default" | "examples") {
                        continue;
                    }
                    self.every_schema(value, format!("{pointer}/{}", escape(key)))?;
                }
            }
            Value::Array(items) => {
                for (index, item) in items.iter().enumerate() {
                    self.every_schema(item, format!("{pointer}/{index}"))?;
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// How many subschemas apply at the place `node` applies: itself, its in-place
    /// subschemas, and what its `$ref` points to, recursively.
    fn expansion(&mut self, node: &'a Value, pointer: &str) -> Result<u64, String> {
        if let Some(known) = self.memo.get(pointer) {
            return Ok(*known);
        }
        if self.open.iter().any(|open| open == pointer) {
            return Err(format!(
                "`$ref` at {} leads back to {} without descending into the instance: validation would never end",
                display(self.open.last().map_or(pointer, String::as_str)),
                display(pointer)
            ));
        }
        let Value::Object(map) = node else { return Ok(0) };
        self.open.push(pointer.to_owned());
        let mut total: u64 = 1;
        let mut children: Vec<(&'a Value, String)> = Vec::new();
        for key in IN_PLACE_LISTS {
            if let Some(Value::Array(items)) = map.get(*key) {
                children.extend(items.iter().enumerate().map(|(i, item)| (item, format!("{pointer}/{key}/{i}"))));
            }
        }
        for key in IN_PLACE_ONE {
            if let Some(item) = map.get(*key) {
                children.push((item, format!("{pointer}/{key}")));
            }
        }
        if let Some(target) = map.get("$ref").and_then(Value::as_str).and_then(|r| self.resolve(r)) {
            children.push(target);
        }
        for (child, place) in children {
            total = total.saturating_add(self.expansion(child, &place)?);
            if total > MAX_EXPANSION {
                return Err(format!(
                    "the subschema at {} applies more than {MAX_EXPANSION} subschemas to one place of an instance \
                     (nested allOf/anyOf/oneOf over references multiply): simplify it",
                    display(pointer)
                ));
            }
        }
        self.open.pop();
        self.memo.insert(pointer.to_owned(), total);
        Ok(total)
    }

    /// The subschema a local `$ref` names (`#`, `#/json/pointer` or `#anchor`), with its pointer.
    fn resolve(&self, reference: &str) -> Option<(&'a Value, String)> {
        let fragment = reference.strip_prefix('#')?;
        if fragment.is_empty() || fragment.starts_with('/') {
            let pointer = percent_decode(fragment);
            return self.root.pointer(&pointer).map(|target| (target, pointer));
        }
        find_anchor(self.root, fragment, String::new())
    }
}

fn find_anchor<'a>(node: &'a Value, anchor: &str, pointer: String) -> Option<(&'a Value, String)> {
    match node {
        Value::Object(map) => {
            if map.get("$anchor").and_then(Value::as_str) == Some(anchor) {
                return Some((node, pointer));
            }
            map.iter().find_map(|(key, value)| find_anchor(value, anchor, format!("{pointer}/{}", escape(key))))
        }
        Value::Array(items) => {
            items.iter().enumerate().find_map(|(index, item)| find_anchor(item, anchor, format!("{pointer}/{index}")))
        }
        _ => None,
    }
}

fn escape(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

/// `%xx` sequences of a URI fragment decoded (a pointer to `$defs/a b` is written `a%20b`).
fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut index = 0;
    while index < bytes.len() {
        let hex = bytes.get(index + 1..index + 3).and_then(|h| std::str::from_utf8(h).ok());
        match (bytes[index], hex.and_then(|h| u8::from_str_radix(h, 16).ok())) {
            (b'%', Some(byte)) => {
                out.push(byte);
                index += 3;
            }
            (byte, _) => {
                out.push(byte);
                index += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn display(pointer: &str) -> &str {
    if pointer.is_empty() { "/" } else { pointer }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn recursion_through_the_instance_is_fine() {
        let tree = json!({"$defs": {"node": {"type": "object", "properties": {
            "children": {"type": "array", "items": {"$ref": "#/$defs/node"}}}}},
            "$ref": "#/$defs/node"});
        assert_eq!(check(&tree), Ok(()));
        let root = json!({"type": "object", "properties": {"next": {"$ref": "#"}}});
        assert_eq!(check(&root), Ok(()));
    }

    #[test]
    fn a_reference_back_to_itself_in_place_is_refused() {
        for cycle in [
            json!({"$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"allOf": [{"$ref": "#/$defs/a"}]}}, "$ref": "#/$defs/a"}),
            json!({"$ref": "#"}),
            json!({"$defs": {"a": {"$anchor": "x", "not": {"$ref": "#x"}}}}),
        ] {
            let refused = check(&cycle).expect_err("a cycle");
            assert!(refused.contains("leads back to"), "{refused}");
        }
    }

    #[test]
    fn exponential_fan_out_and_too_many_references_are_refused() {
        let mut defs = serde_json::Map::new();
        defs.insert("d0".into(), json!({"type": "string"}));
        for level in 1..=12 {
            let below = format!("#/$defs/d{}", level - 1);
            defs.insert(format!("d{level}"), json!({"allOf": [{"$ref": below}, {"$ref": below}]}));
        }
        let fan_out = json!({"$defs": defs, "$ref": "#/$defs/d12"});
        assert!(serde_json::to_vec(&fan_out).expect("JSON").len() < 2_000, "small, yet 2^12 in place");
        let refused = check(&fan_out).expect_err("fan-out");
        assert!(refused.contains("more than 1000 subschemas"), "{refused}");

        let mut chain = serde_json::Map::new();
        for n in 0..1_001 {
            chain.insert(
                format!("d{n}"),
                json!({"type": "object", "properties": {"x": {"$ref": format!("#/$defs/d{}", n + 1)}}}),
            );
        }
        let refused = check(&json!({"$defs": chain})).expect_err("too many");
        assert!(refused.contains("1001 `$ref`s"), "{refused}");
    }

    #[test]
    fn references_resolve_by_pointer_escapes_and_percent_encoding() {
        let schema = json!({"$defs": {"a b": {"type": "string"}, "c/d": {"$ref": "#/$defs/a%20b"}},
                            "properties": {"x": {"$ref": "#/$defs/c~1d"}}});
        assert_eq!(check(&schema), Ok(()));
        let cycle = json!({"$defs": {"a b": {"$ref": "#/$defs/a%20b"}}});
        assert!(check(&cycle).is_err());
    }
}
