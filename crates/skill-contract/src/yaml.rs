//! YAML for package documents: a block-style writer whose output every YAML 1.1 and 1.2 reader
//! reads back to the same JSON value, and a strict reader.
//!
//! The writer emits mappings in insertion order, sequences as `- item` at the key's column,
//! multi-line strings as literal blocks, and quotes every string that a YAML 1.1 reader (PyYAML)
//! or a YAML 1.2 reader would take for something else: numbers (`'1'`, `'2.0'`, `'1e3'`),
//! booleans of either version (`'no'`, `'on'`, `'y'`), nulls (`''`, `'~'`, `'null'`), and
//! strings that start with an indicator or contain `: ` / ` #`. Strings with control or
//! line-separator characters are double-quoted with escapes. Non-ASCII text is kept as is.
//!
//! The reader takes YAML 1.2 with strict booleans (`yes` stays a string), refuses duplicate
//! keys, bounds alias expansion, and keeps a `!!binary` scalar as the text written.

use serde_json::{Map, Value};

/// A YAML text that could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct YamlError(String);

/// Reads one YAML document into JSON, strictly: YAML 1.2 core booleans only, duplicate keys
/// refused, alias expansion bounded.
pub fn from_str(text: &str) -> Result<Value, YamlError> {
    let options = serde_saphyr::options! {
        strict_booleans: true,
        duplicate_keys: serde_saphyr::DuplicateKeyPolicy::Error,
        // `!!binary` text stays the text written: a reviewer reads what is published, never a
        // value decoded from base64 behind the tag.
        ignore_binary_tag_for_string: true,
    };
    serde_saphyr::from_str_with_options(text, options).map_err(|e| YamlError(plain_cause(e.to_string())))
}

/// The reader's messages that name its internals (`invalid u64`) in the words of the document.
const CAUSES: &[(&str, &str)] = &[
    ("invalid u64", "`!!int` needs a whole number from -2^63 to 2^64-1 (decimal, 0x hex or 0o octal)"),
    ("invalid i64", "`!!int` needs a whole number from -2^63 to 2^64-1 (decimal, 0x hex or 0o octal)"),
    ("invalid floating point", "`!!float` needs a number"),
    (
        "cannot deserialize tagged scalar into string",
        "this tag is not read here (only !!str, !!int, !!float, !!bool, !!null and !!binary are): remove it",
    ),
    ("rejected by the configured policy", "refused: JSON has no infinite or NaN numbers"),
];

fn plain_cause(mut message: String) -> String {
    for (internal, plain) in CAUSES {
        message = message.replace(internal, plain);
    }
    message
}

/// Writes a JSON value as a block-style YAML document, ending with a newline.
pub fn to_string(value: &Value) -> String {
    let mut writer = Writer { out: String::new() };
    match value {
        Value::Object(map) if !map.is_empty() => writer.mapping(map, 0),
        Value::Array(items) if !items.is_empty() => writer.sequence(items, 0),
        scalar => writer.scalar(scalar, 2),
    }
    writer.out
}

struct Writer {
    out: String,
}

impl Writer {
    fn pad(&mut self, indent: usize) {
        self.out.extend(std::iter::repeat_n(' ', indent));
    }

    fn mapping(&mut self, map: &Map<String, Value>, indent: usize) {
        for (key, value) in map {
            self.pad(indent);
            self.entry(key, value, indent);
        }
    }

    /// `key:` and its value; the cursor is at the key's column.
    fn entry(&mut self, key: &str, value: &Value, indent: usize) {
        self.out.push_str(&inline_string(key));
        self.out.push(':');
        match value {
            Value::Object(map) if !map.is_empty() => {
                self.out.push('\n');
                self.mapping(map, indent + 2);
            }
            Value::Array(items) if !items.is_empty() => {
                self.out.push('\n');
                self.sequence(items, indent);
            }
            scalar => {
                self.out.push(' ');
                self.scalar(scalar, indent + 2);
            }
        }
    }

    fn sequence(&mut self, items: &[Value], indent: usize) {
        for item in items {
            self.pad(indent);
            self.out.push_str("- ");
            self.item(item, indent + 2);
        }
    }

    /// A sequence item; the cursor is just after `- `, at column `indent`.
    fn item(&mut self, item: &Value, indent: usize) {
        match item {
            Value::Object(map) if !map.is_empty() => {
                for (i, (key, value)) in map.iter().enumerate() {
                    if i > 0 {
                        self.pad(indent);
                    }
                    self.entry(key, value, indent);
                }
            }
            Value::Array(items) if !items.is_empty() => {
                for (i, sub) in items.iter().enumerate() {
                    if i > 0 {
                        self.pad(indent);
                    }
                    self.out.push_str("- ");
                    self.item(sub, indent + 2);
                }
            }
            scalar => self.scalar(scalar, indent),
        }
    }

    /// A scalar (or an empty collection) and its line end; a literal block's lines go at
    /// `indent`.
    fn scalar(&mut self, value: &Value, indent: usize) {
        match value {
            Value::Null => self.out.push_str("null"),
            Value::Bool(b) => self.out.push_str(if *b { "true" } else { "false" }),
            Value::Number(n) => self.out.push_str(&number(n)),
            Value::Object(_) => self.out.push_str("{}"),
            Value::Array(_) => self.out.push_str("[]"),
            Value::String(s) if fits_literal_block(s) => {
                let trailing = s.len() - s.trim_end_matches('\n').len();
                self.out.push_str(match trailing {
                    0 => "|-",
                    1 => "|",
                    _ => "|+",
                });
                self.out.push('\n');
                let body = s.strip_suffix('\n').unwrap_or(s);
                for line in body.split('\n') {
                    if !line.is_empty() {
                        self.pad(indent);
                        self.out.push_str(line);
                    }
                    self.out.push('\n');
                }
                return;
            }
            Value::String(s) => self.out.push_str(&inline_string(s)),
        }
        self.out.push('\n');
    }
}

/// Floats in the form both YAML versions read as floats: a `.` in the mantissa and a signed
/// exponent (`1e20` → `1.0e+20`).
fn number(n: &serde_json::Number) -> String {
    let text = n.to_string();
    if !n.is_f64() {
        return text;
    }
    match text.split_once(['e', 'E']) {
        None => text,
        Some((mantissa, exponent)) => {
            let mantissa = if mantissa.contains('.') { mantissa.to_owned() } else { format!("{mantissa}.0") };
            let exponent = if exponent.starts_with(['+', '-']) { exponent.to_owned() } else { format!("+{exponent}") };
            format!("{mantissa}e{exponent}")
        }
    }
}

/// Characters that never appear raw in our output: controls (tab included), DEL, C1 controls,
/// YAML 1.1 line breaks and the byte-order mark.
fn is_special(c: char) -> bool {
    (c.is_control() && c != '\n') || matches!(c, '\u{2028}' | '\u{2029}' | '\u{feff}')
}

fn fits_literal_block(s: &str) -> bool {
    s.contains('\n')
        && !s.starts_with([' ', '\n'])
        && !s.chars().any(is_special)
        && !s.contains(" \n")
        && !s.ends_with(' ')
}

/// Words that some YAML version reads as a boolean or null.
const RESERVED_WORDS: &[&str] = &["y", "n", "yes", "no", "true", "false", "on", "off", "null", "~", "=", "<<"];
const INDICATORS: &[char] =
    &['-', '?', ':', ',', '[', ']', '{', '}', '#', '&', '*', '!', '|', '>', '\'', '"', '%', '@', '`'];

/// Whether a reader would take the plain scalar for a number, a date or a special float.
fn looks_numeric(s: &str) -> bool {
    let unsigned = s.strip_prefix(['+', '-']).unwrap_or(s);
    let lower = unsigned.to_ascii_lowercase();
    unsigned.starts_with(|c: char| c.is_ascii_digit())
        || (unsigned.starts_with('.') && unsigned[1..].starts_with(|c: char| c.is_ascii_digit()))
        || lower == ".inf"
        || lower == ".nan"
}

fn plain_is_safe(s: &str) -> bool {
    !s.is_empty()
        && !s.starts_with(char::is_whitespace)
        && !s.ends_with(char::is_whitespace)
        && !s.starts_with(INDICATORS)
        && !s.starts_with("...")
        && !s.chars().any(|c| c == '\n' || is_special(c))
        && !s.contains(": ")
        && !s.contains(" #")
        && !s.ends_with(':')
        && !RESERVED_WORDS.contains(&s.to_ascii_lowercase().as_str())
        && !looks_numeric(s)
}

/// A string on one line: plain when safe, else single-quoted, else double-quoted with escapes.
fn inline_string(s: &str) -> String {
    if plain_is_safe(s) {
        return s.to_owned();
    }
    if !s.chars().any(|c| c == '\n' || is_special(c)) {
        return format!("'{}'", s.replace('\'', "''"));
    }
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\0' => out.push_str("\\0"),
            '\u{7}' => out.push_str("\\a"),
            '\u{8}' => out.push_str("\\b"),
            '\t' => out.push_str("\\t"),
            '\n' => out.push_str("\\n"),
            '\u{b}' => out.push_str("\\v"),
            '\u{c}' => out.push_str("\\f"),
            '\r' => out.push_str("\\r"),
            '\u{1b}' => out.push_str("\\e"),
            '\u{85}' => out.push_str("\\N"),
            '\u{2028}' => out.push_str("\\L"),
            '\u{2029}' => out.push_str("\\P"),
            c if is_special(c) && (c as u32) <= 0xff => out.push_str(&format!("\\x{:02X}", c as u32)),
            c if is_special(c) => out.push_str(&format!("\\u{:04X}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_binary_tag_does_not_hide_a_decoded_value() {
        let read = from_str("version: !!binary MS4w\nname: !!binary aGVsbG8=\n").expect("reads");
        assert_eq!(
            read,
            serde_json::json!({"version": "MS4w", "name": "aGVsbG8="}),
            "the text written, not 1.0 and hello"
        );
    }

    #[test]
    fn quotes_what_readers_would_misread() {
        let cases = [
            ("1", "'1'"),
            ("2.0", "'2.0'"),
            ("1e3", "'1e3'"),
            ("-1", "'-1'"),
            (".5", "'.5'"),
            (".inf", "'.inf'"),
            ("0x1F", "'0x1F'"),
            ("2024-01-01", "'2024-01-01'"),
            ("no", "'no'"),
            ("On", "'On'"),
            ("y", "'y'"),
            ("true", "'true'"),
            ("null", "'null'"),
            ("~", "'~'"),
            ("", "''"),
            ("a: b", "'a: b'"),
            ("# x", "'# x'"),
            ("a #b", "'a #b'"),
            ("*x", "'*x'"),
            ("@x", "'@x'"),
            ("key:", "'key:'"),
            (" padded ", "' padded '"),
            ("it's", "it's"),
            ("'q'", "'''q'''"),
            ("${SVC}/skills/x@1", "${SVC}/skills/x@1"),
            ("claims_integration.skills:draft_reply", "claims_integration.skills:draft_reply"),
            ("Сложить два числа.", "Сложить два числа."),
            ("tab\there", "\"tab\\there\""),
            ("nul\0", "\"nul\\0\""),
            ("line\u{2028}sep", "\"line\\Lsep\""),
        ];
        for (input, expected) in cases {
            assert_eq!(inline_string(input), expected, "{input:?}");
        }
    }

    #[test]
    fn writes_block_style_in_insertion_order() {
        let value = json!({
            "b": 1,
            "a": {"list": ["x", {"k": "v", "w": [1, 2]}, []], "empty": {}},
            "text": "one\ntwo",
            "float": 1e20,
            "nothing": null
        });
        let expected = "\
b: 1
a:
  list:
  - x
  - k: v
    w:
    - 1
    - 2
  - []
  empty: {}
text: |-
  one
  two
float: 1.0e+20
nothing: null
";
        assert_eq!(to_string(&value), expected);
        assert_eq!(from_str(expected).expect("reads"), value);
    }

    #[test]
    fn literal_blocks_keep_trailing_newlines() {
        for text in ["a\nb", "a\nb\n", "a\n\n", "a\n\nb\n\n\n", "x\n  indented\ny"] {
            let value = json!({"t": text});
            let written = to_string(&value);
            assert!(written.starts_with("t: |"), "{written}");
            assert_eq!(from_str(&written).expect("reads"), value, "{written}");
        }
        for text in [" lead\nx", "\nlead", "trail \nx", "tab\t\nx"] {
            let written = to_string(&json!({"t": text}));
            assert!(written.starts_with("t: \""), "{written}");
            assert_eq!(from_str(&written).expect("reads"), json!({"t": text}), "{written}");
        }
    }

    #[test]
    fn reader_is_strict() {
        assert_eq!(from_str("a: yes\nb: on\nc: true").expect("reads"), json!({"a": "yes", "b": "on", "c": true}));
        let error = from_str("a: 1\na: 2").expect_err("duplicate");
        assert!(error.to_string().contains("duplicate"), "{error}");
    }

    #[test]
    fn tag_errors_name_the_tag_not_the_reader() {
        assert_eq!(from_str("a: !!int \"30\"\nb: !!int -0x1F").expect("reads"), json!({"a": 30, "b": -31}));
        for (text, cause) in [
            ("a: !!int x30", "`!!int` needs a whole number"),
            ("a: !!int 1.5", "`!!int` needs a whole number"),
            ("a: !!int 99999999999999999999999", "from -2^63 to 2^64-1"),
            ("a: !!int -99999999999999999999999", "from -2^63 to 2^64-1"),
            ("a: !!float x", "`!!float` needs a number"),
            ("a: !!float 1e999", "JSON has no infinite or NaN numbers"),
            ("a: !!timestamp 2026-01-01", "this tag is not read here"),
        ] {
            let error = from_str(text).expect_err(text).to_string();
            assert!(error.contains(cause) && error.contains("line 1"), "{text}: {error}");
            assert!(!error.contains("u64") && !error.contains("i64") && !error.contains("policy"), "{text}: {error}");
        }
    }
}
