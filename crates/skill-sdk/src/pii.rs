//! The personal-data guard: before a prompt reaches a model, personal data of individuals —
//! SNILS, passport, phone, e-mail and full names — is replaced by the marker `[ПДн:<kind>]`.
//! Business identifiers (ИНН, КПП, ОГРН, classifier codes, amounts, dates, registry numbers) are
//! left alone.
//!
//! The patterns and their order are the platform's (every SDK redacts the same way). They run on
//! the linear-time `regex` engine, never a backtracking one, because prompts carry untrusted
//! text: the look-behinds and a leading `\b` become a check of the characters around a match's
//! start (a rejected start is retried one character later), and the look-aheads and a trailing
//! `\b` become a consumed boundary character (`(?:[^\d]|\z)`, `(?:\W|\z)`) that the replacement
//! leaves in place. (Unicode `\b` as an assertion would also force the regex crate off its DFA on
//! Cyrillic text.)

use std::collections::BTreeMap;
use std::sync::LazyLock;

use regex::Regex;
use serde_json::{Map, Value};

/// A kind of personal data.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum PiiKind {
    Snils,
    Passport,
    Phone,
    Email,
    FullName,
}

impl PiiKind {
    /// The word in the marker: `снилс`, `паспорт`, `телефон`, `email`, `фио`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Snils => "снилс",
            Self::Passport => "паспорт",
            Self::Phone => "телефон",
            Self::Email => "email",
            Self::FullName => "фио",
        }
    }

    /// `[ПДн:<kind>]`.
    pub fn marker(self) -> String {
        format!("[ПДн:{}]", self.as_str())
    }
}

/// What a redaction found: how many of each kind. Never the values.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Redaction {
    found: BTreeMap<&'static str, usize>,
}

impl Redaction {
    pub fn is_empty(&self) -> bool {
        self.found.is_empty()
    }

    /// How many of `kind` were replaced.
    pub fn count(&self, kind: PiiKind) -> usize {
        self.found.get(kind.as_str()).copied().unwrap_or(0)
    }

    /// `{kind: count}` sorted by kind, for logs and previews.
    pub fn as_log(&self) -> Map<String, Value> {
        self.found.iter().map(|(k, n)| ((*k).to_owned(), Value::from(*n))).collect()
    }

    fn add(&mut self, kind: PiiKind, n: usize) {
        if n > 0 {
            *self.found.entry(kind.as_str()).or_insert(0) += n;
        }
    }

    fn merge(&mut self, other: &Redaction) {
        for (kind, n) in &other.found {
            *self.found.entry(kind).or_insert(0) += n;
        }
    }
}

/// What must hold at a match's start: a look-behind, or a word boundary.
#[derive(Clone, Copy)]
enum Start {
    Anywhere,
    NotAfterDigit,
    NotAfterDigitOrDot,
    NotAfterCyrillicLetter,
    /// `\b`: a word character on exactly one side.
    WordBoundary,
}

impl Start {
    fn refuses(self, before: Option<char>, first: Option<char>) -> bool {
        match (self, before) {
            (Self::WordBoundary, _) => before.is_some_and(is_word_char) == first.is_some_and(is_word_char),
            (_, None) | (Self::Anywhere, _) => false,
            (Self::NotAfterDigit, Some(c)) => is_decimal_digit(c),
            (Self::NotAfterDigitOrDot, Some(c)) => is_decimal_digit(c) || c == '.',
            (Self::NotAfterCyrillicLetter, Some(c)) => matches!(c, 'А'..='Я' | 'а'..='я' | 'Ё' | 'ё'),
        }
    }
}

/// A word character, as `\w` means it.
fn is_word_char(c: char) -> bool {
    if c.is_ascii() {
        return c.is_ascii_alphanumeric() || c == '_';
    }
    static WORD: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"^\w$").expect("invariant: a valid pattern"));
    let mut buffer = [0u8; 4];
    WORD.is_match(c.encode_utf8(&mut buffer))
}

/// A Unicode decimal digit (category Nd), as `\d` means it.
fn is_decimal_digit(c: char) -> bool {
    if c.is_ascii() {
        return c.is_ascii_digit();
    }
    static DIGIT: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"^\d$").expect("invariant: a valid pattern"));
    let mut buffer = [0u8; 4];
    DIGIT.is_match(c.encode_utf8(&mut buffer))
}

/// One pattern: the regex (its group 1 is what is replaced; anything after it is a boundary
/// character kept in place) and what must hold at its start.
struct Pattern {
    kind: PiiKind,
    regex: Regex,
    start: Start,
}

/// Python's `\s` also counts the separators U+001C–U+001F.
const S: &str = r"[\s\x1c-\x1f]";
const NAME: &str = r"[А-ЯЁ][а-яё]+(?:-[А-ЯЁ][а-яё]+)?";

fn patronymic() -> String {
    format!(r"(?:[А-ЯЁ][а-яё]+(?:ович|евич|ич|овна|евна|ична|инична)|[А-ЯЁ][а-яё]+{S}(?:оглы|кызы))")
}

fn pattern(kind: PiiKind, core: &str, end: &str, start: Start) -> Pattern {
    let source = format!("({core}){end}");
    Pattern { kind, regex: Regex::new(&source).expect("invariant: the guard's patterns are valid"), start }
}

static PATTERNS: LazyLock<Vec<Pattern>> = LazyLock::new(|| {
    let not_digit = r"(?:[^\d]|\z)";
    let not_digit_or_dot = r"(?:[^\d.]|\z)";
    let word_end = r"(?:\W|\z)";
    let p = patronymic();
    vec![
        pattern(PiiKind::Snils, r"\d{3}-\d{3}-\d{3}[ -]\d{2}", not_digit, Start::NotAfterDigit),
        pattern(
            PiiKind::Passport,
            &format!(r"(?i:(?:паспорт\w*|серия)[^\n\d]{{0,20}}\d{{2}}{S}?\d{{2}}[^\n\d]{{0,12}}\d{{6}})"),
            not_digit,
            Start::Anywhere,
        ),
        pattern(
            PiiKind::Phone,
            // `[{S}(-]` nests the whitespace class inside another: their union.
            &format!(r"(?:\+7|8)[{S}(-]*\d{{3}}[{S})-]*\d{{3}}[{S}-]*\d{{2}}[{S}-]*\d{{2}}"),
            not_digit_or_dot,
            Start::NotAfterDigitOrDot,
        ),
        // The address ends with letters, so its trailing `\b` is a non-word character after it.
        pattern(PiiKind::Email, r"(?i:[a-z0-9._%+-]+@[a-z0-9.-]+\.[a-z]{2,})", word_end, Start::WordBoundary),
        pattern(PiiKind::FullName, &format!(r"{NAME}{S}{NAME}{S}{p}"), word_end, Start::WordBoundary),
        pattern(PiiKind::FullName, &format!(r"(?:{NAME}{S})?{p}{S}{NAME}"), word_end, Start::WordBoundary),
        pattern(PiiKind::FullName, &format!(r"{NAME}{S}{p}"), word_end, Start::WordBoundary),
        pattern(PiiKind::FullName, &format!(r"{NAME}{S}[А-ЯЁ]\.{S}?[А-ЯЁ]\."), "", Start::WordBoundary),
        pattern(
            PiiKind::FullName,
            &format!(r"[А-ЯЁ]\.{S}?[А-ЯЁ]\.{S}?{NAME}"),
            word_end,
            Start::NotAfterCyrillicLetter,
        ),
    ]
});

/// Writes `text` with every match of one pattern replaced into `out`, scanning left to right as a
/// backtracking engine would: non-overlapping, leftmost first.
fn apply(
    pattern: &Pattern,
    text: &str,
    out: &mut String,
    locations: &mut regex::CaptureLocations,
    redaction: &mut Redaction,
) {
    out.clear();
    let mut copied = 0;
    let mut from = 0;
    let mut count = 0;
    while from <= text.len() {
        if pattern.regex.captures_read_at(locations, text, from).is_none() {
            break;
        }
        let (start, end) = locations.get(1).expect("invariant: every pattern has its group");
        let before = text[..start].chars().next_back();
        let first = text[start..].chars().next();
        if pattern.start.refuses(before, first) {
            // No match may start here; try from the next character.
            from = start + first.map_or(1, char::len_utf8);
            continue;
        }
        out.push_str(&text[copied..start]);
        out.push_str(&pattern.kind.marker());
        count += 1;
        copied = end;
        from = end;
    }
    out.push_str(&text[copied..]);
    redaction.add(pattern.kind, count);
}

/// The text with personal data replaced, and what was found.
///
/// ```
/// let (text, found) = skill_sdk::pii::redact("Директор Иванов Иван Иванович подписал");
/// assert_eq!(text, "Директор [ПДн:фио] подписал");
/// assert_eq!(found.count(skill_sdk::pii::PiiKind::FullName), 1);
/// ```
pub fn redact(text: &str) -> (String, Redaction) {
    let mut redaction = Redaction::default();
    // Two buffers used in turn: each pattern reads one and writes the other.
    let capacity = text.len() + text.len() / 4 + 64;
    let mut current = String::with_capacity(capacity);
    current.push_str(text);
    let mut next = String::with_capacity(capacity);
    for pattern in PATTERNS.iter() {
        let mut locations = pattern.regex.capture_locations();
        apply(pattern, &current, &mut next, &mut locations, &mut redaction);
        std::mem::swap(&mut current, &mut next);
    }
    (current, redaction)
}

/// Redacts a system prompt and the string `content` of every message; other keys, and
/// non-string contents, are kept as they are. The counts are summed.
pub fn redact_messages(system: Option<&str>, messages: &[Value]) -> (Option<String>, Vec<Value>, Redaction) {
    let mut total = Redaction::default();
    let system = system.map(|text| {
        let (clean, found) = redact(text);
        total.merge(&found);
        clean
    });
    let messages = messages
        .iter()
        .map(|message| {
            let mut message = message.clone();
            if let Some(Value::String(content)) = message.get_mut("content") {
                let (clean, found) = redact(content);
                total.merge(&found);
                *content = clean;
            }
            message
        })
        .collect();
    (system, messages, total)
}

/// The properties of an attributes schema marked `x-personal-data: allowed`.
pub fn personal_fields(schema: &Value) -> Vec<String> {
    schema
        .get("properties")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .filter(|(_, property)| property.get("x-personal-data").and_then(Value::as_str) == Some("allowed"))
        .map(|(name, _)| name.clone())
        .collect()
}

/// A copy of `attributes` without the fields the schema marks as personal data (an unchanged
/// copy without a schema).
pub fn strip_personal_fields(attributes: &Map<String, Value>, schema: Option<&Value>) -> Map<String, Value> {
    let personal = schema.map(personal_fields).unwrap_or_default();
    attributes.iter().filter(|(name, _)| !personal.contains(name)).map(|(k, v)| (k.clone(), v.clone())).collect()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn the_reference_examples() {
        let cases = [
            ("Директор Иванов Иван Иванович подписал", "Директор [ПДн:фио] подписал"),
            ("Согласовано: А.С. Петрова", "Согласовано: [ПДн:фио]"),
            ("СНИЛС 112-233-445 95", "СНИЛС [ПДн:снилс]"),
            ("Паспорт серия 45 10 № 123456 выдан", "[ПДн:паспорт] выдан"),
            ("тел. +7 (912) 345-67-89", "тел. [ПДн:телефон]"),
            ("пишите ivan.petrov@mail.ru", "пишите [ПДн:email]"),
            ("В Москве Иван Иванович", "В [ПДн:фио]"),
        ];
        for (input, expected) in cases {
            assert_eq!(redact(input).0, expected, "{input}");
        }
    }

    #[test]
    fn look_arounds_are_honoured() {
        assert_eq!(redact("1112-233-445 95").0, "1112-233-445 95", "a digit before");
        assert_eq!(redact("112-233-445 951").0, "112-233-445 951", "a digit after");
        assert_eq!(redact("112 233 445 95").0, "112 233 445 95", "spaces inside are not SNILS");
        assert_eq!(redact("v1.89123456789").0, "v1.89123456789", "a dot before a phone");
        assert_eq!(redact("89123456789.5").0, "89123456789.5", "a dot after a phone");
        assert_eq!(redact("звонить 89123456789, 89123456780").0, "звонить [ПДн:телефон], [ПДн:телефон]");
        assert_eq!(
            redact("+79123456789 +79123456780").0,
            "[ПДн:телефон] [ПДн:телефон]",
            "a boundary character is not eaten"
        );
        assert_eq!(redact("+79123456789+79123456780").0, "[ПДн:телефон]+79123456780", "a digit before the second");
        assert_eq!(redact("ТОВАРА.С. Петров").0, "ТОВАРА.С. Петров", "initials after a Cyrillic letter");
    }

    #[test]
    fn messages_keep_their_other_keys() {
        let messages = vec![
            json!({"role": "user", "content": "мой email a@b.ru", "name": "x"}),
            json!({"role": "user", "content": [{"type": "text", "text": "a@b.ru"}]}),
        ];
        let (system, cleaned, found) = redact_messages(Some("звонить +7 912 345 67 89"), &messages);
        assert_eq!(system.as_deref(), Some("звонить [ПДн:телефон]"));
        assert_eq!(cleaned[0], json!({"role": "user", "content": "мой email [ПДн:email]", "name": "x"}));
        assert_eq!(cleaned[1], messages[1], "non-string content is not scanned");
        assert_eq!(found.as_log(), json!({"email": 1, "телефон": 1}).as_object().expect("object").clone());
    }

    #[test]
    fn personal_fields_are_marked_in_the_schema() {
        let schema = json!({"properties": {"name": {"x-personal-data": "allowed"}, "inn": {"type": "string"}}});
        assert_eq!(personal_fields(&schema), ["name"]);
        let attributes = json!({"name": "Иванов", "inn": "7701234567"}).as_object().expect("object").clone();
        assert_eq!(
            strip_personal_fields(&attributes, Some(&schema)),
            json!({"inn": "7701234567"}).as_object().expect("object").clone()
        );
        assert_eq!(strip_personal_fields(&attributes, None), attributes);
    }
}
