//! A JSON Schema document as forms, examples, labels and stand-ins read it: its properties and
//! which are required, its type, its choices, its label. Every such reading of a schema goes
//! through [`SchemaView`], so no caller walks the document by key.

use serde_json::{Map, Value};

/// The type a schema names (`type`: one word, or the first of a list that is not `null`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JsonType {
    Object,
    Array,
    String,
    Integer,
    Number,
    Boolean,
    Null,
}

impl JsonType {
    fn parse(word: &str) -> Option<Self> {
        Some(match word {
            "object" => Self::Object,
            "array" => Self::Array,
            "string" => Self::String,
            "integer" => Self::Integer,
            "number" => Self::Number,
            "boolean" => Self::Boolean,
            "null" => Self::Null,
            _ => return None,
        })
    }
}

/// A view of one schema document (or a part of one).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SchemaView<'a>(pub &'a Value);

impl<'a> SchemaView<'a> {
    fn get(self, key: &str) -> Option<&'a Value> {
        self.0.get(key)
    }

    fn text(self, key: &str) -> Option<&'a str> {
        self.get(key).and_then(Value::as_str)
    }

    /// The properties of an object schema, in order.
    pub fn properties(self) -> impl Iterator<Item = (&'a String, SchemaView<'a>)> {
        self.property_map().into_iter().flatten().map(|(name, schema)| (name, SchemaView(schema)))
    }

    /// The properties as written (none when there are none).
    pub fn property_map(self) -> Option<&'a Map<String, Value>> {
        self.get("properties").and_then(Value::as_object)
    }

    /// Whether it declares properties.
    pub fn has_properties(self) -> bool {
        self.property_map().is_some_and(|properties| !properties.is_empty())
    }

    /// The property `name`.
    pub fn property(self, name: &str) -> Option<SchemaView<'a>> {
        self.property_map().and_then(|properties| properties.get(name)).map(SchemaView)
    }

    /// The names `required` lists.
    pub fn required(self) -> Vec<&'a str> {
        self.get("required").and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str).collect()
    }

    /// The type it names: one word, or the first of a list that is not `null`.
    pub fn kind(self) -> Option<JsonType> {
        match self.get("type")? {
            Value::String(word) => JsonType::parse(word),
            Value::Array(words) => {
                words.iter().filter_map(Value::as_str).filter_map(JsonType::parse).find(|kind| *kind != JsonType::Null)
            }
            _ => None,
        }
    }

    /// The type when `type` is one word.
    pub fn one_kind(self) -> Option<JsonType> {
        self.text("type").and_then(JsonType::parse)
    }

    /// Whether `type` is exactly `kind`, as one word.
    pub fn is_exactly(self, kind: JsonType) -> bool {
        self.one_kind() == Some(kind)
    }

    pub fn title(self) -> Option<&'a str> {
        self.text("title")
    }

    pub fn description(self) -> Option<&'a str> {
        self.text("description")
    }

    /// What names it for people: its title, else its description.
    pub fn label(self) -> Option<&'a str> {
        self.title().or_else(|| self.description())
    }

    /// The values `enum` allows.
    pub fn choices(self) -> Option<&'a [Value]> {
        self.get("enum").and_then(Value::as_array).map(Vec::as_slice)
    }

    /// The one value `const` allows.
    pub fn constant(self) -> Option<&'a Value> {
        self.get("const")
    }

    pub fn max_length(self) -> Option<u64> {
        self.get("maxLength").and_then(Value::as_u64)
    }

    /// Its first example, else its default.
    pub fn sample(self) -> Option<&'a Value> {
        self.get("examples")
            .and_then(Value::as_array)
            .and_then(|examples| examples.first())
            .or_else(|| self.get("default"))
    }

    /// The schema without a `null` alternative: `anyOf`/`oneOf` `[T, null]` (an `Option<T>`) is
    /// `T`; anything else is itself.
    pub fn without_null(self) -> SchemaView<'a> {
        let alternatives = self.get("anyOf").or_else(|| self.get("oneOf")).and_then(Value::as_array);
        let rest: Vec<&Value> = alternatives
            .into_iter()
            .flatten()
            .filter(|one| SchemaView(one).text("type").and_then(JsonType::parse) != Some(JsonType::Null))
            .collect();
        match rest.as_slice() {
            [only] if alternatives.is_some() => SchemaView(only),
            _ => self,
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn an_object_schema_reads_its_properties_required_and_labels() {
        let schema = json!({"type": "object", "required": ["to", 7, "body"],
            "properties": {"to": {"type": "string", "title": "Recipient", "maxLength": 200},
                           "body": {"type": ["null", "string"], "description": "What is said"},
                           "tone": {"enum": ["warm", "plain"]}}});
        let view = SchemaView(&schema);
        assert!(view.is_exactly(JsonType::Object) && view.has_properties());
        assert_eq!(view.required(), ["to", "body"]);
        let names: Vec<&str> = view.properties().map(|(name, _)| name.as_str()).collect();
        assert_eq!(names, ["to", "body", "tone"]);
        let to = view.property("to").expect("to");
        assert_eq!((to.label(), to.kind(), to.max_length()), (Some("Recipient"), Some(JsonType::String), Some(200)));
        let body = view.property("body").expect("body");
        assert_eq!((body.label(), body.kind()), (Some("What is said"), Some(JsonType::String)));
        assert!(!body.is_exactly(JsonType::String), "a list is not one word");
        assert_eq!((body.one_kind(), to.one_kind()), (None, Some(JsonType::String)));
        assert_eq!(view.property("tone").and_then(SchemaView::choices), Some(&[json!("warm"), json!("plain")][..]));
        assert_eq!(view.property("none"), None);
        assert_eq!(SchemaView(&json!({"type": "colour"})).kind(), None);
    }

    #[test]
    fn an_optional_is_its_inner_schema_and_a_sample_is_the_first_example_or_the_default() {
        let optional = json!({"anyOf": [{"type": "integer", "title": "n"}, {"type": "null"}]});
        assert_eq!(SchemaView(&optional).without_null().kind(), Some(JsonType::Integer));
        let either = json!({"oneOf": [{"type": "integer"}, {"type": "string"}]});
        assert_eq!(SchemaView(&either).without_null(), SchemaView(&either), "two alternatives stay");
        let plain = json!({"type": "string"});
        assert_eq!(SchemaView(&plain).without_null(), SchemaView(&plain));
        assert_eq!(SchemaView(&json!({"examples": [3, 4], "default": 1})).sample(), Some(&json!(3)));
        assert_eq!(SchemaView(&json!({"default": 1})).sample(), Some(&json!(1)));
        assert_eq!(SchemaView(&json!({"const": "x"})).constant(), Some(&json!("x")));
    }
}
