//! Skill names, versions and `name@version` references, with the character rules of the catalog.
//!
//! A name is dotted lower-case, optionally with one namespace (`local/my-skill`); a version is a
//! short registry string (`1`, `1.2.0`, `2024-05+build.1`). Errors say which part is wrong, at
//! which character, and what is allowed there.

use std::cmp::Ordering;
use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Longest name segment (either side of the optional `/`).
pub const MAX_NAME_SEGMENT: usize = 100;
/// Longest version string.
pub const MAX_VERSION: usize = 50;

/// What is wrong with a skill name, version or reference.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RefError {
    #[error("skill reference `{0}` has no `@`: write it as name@version, e.g. claim.draft_reply@1")]
    MissingAt(String),
    #[error("skill reference `{0}` has more than one `@`: write it as name@version")]
    SeveralAt(String),
    #[error("skill name is empty: use lowercase letters, digits, `_`, `.`, `-`, e.g. claim.draft_reply")]
    EmptyName,
    #[error("skill version is empty: use e.g. 1 or 1.2.0")]
    EmptyVersion,
    #[error("skill name `{name}`: {problem}")]
    BadName { name: String, problem: String },
    #[error("skill version `{version}`: {problem}")]
    BadVersion { version: String, problem: String },
}

/// A validated skill name: `^[a-z0-9][a-z0-9_.-]{0,99}(/[a-z0-9][a-z0-9_.-]{0,99})?$`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SkillName(String);

/// A validated skill version: `^[A-Za-z0-9][A-Za-z0-9._+-]{0,49}$`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SkillVersion(String);

/// A reference to one version of a skill, written `name@version`.
///
/// Ordering is the code-point order of the written form, so `doc.summarize@1` sorts before
/// `doc.summarize_later@1` and `a-b@1` before `a@1`, as the catalog lists them.
///
/// ```
/// use skill_contract::SkillRef;
/// let r: SkillRef = "claim.draft_reply@1".parse().unwrap();
/// assert_eq!(r.name().as_str(), "claim.draft_reply");
/// assert_eq!(r.version().as_str(), "1");
/// assert_eq!(r.to_string(), "claim.draft_reply@1");
/// assert!("Claim@1".parse::<SkillRef>().unwrap_err().to_string().contains("position 1"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct SkillRef {
    name: SkillName,
    version: SkillVersion,
}

fn is_name_start(c: char) -> bool {
    c.is_ascii_lowercase() || c.is_ascii_digit()
}

fn is_name_char(c: char) -> bool {
    is_name_start(c) || matches!(c, '_' | '.' | '-')
}

fn is_version_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '+' | '-')
}

/// Describes a character for a message: printable ones quoted, others by code point.
fn describe_char(c: char) -> String {
    if c.is_control() || c.is_whitespace() { format!("{:?}", c) } else { format!("'{c}'") }
}

fn check_name_segment(segment: &str, offset: usize) -> Result<(), String> {
    let mut chars = segment.chars();
    let Some(first) = chars.next() else {
        return Err(format!("empty segment at position {}", offset + 1));
    };
    if !is_name_start(first) {
        return Err(format!(
            "character {} at position {} cannot start a segment: start with a lowercase letter or a digit",
            describe_char(first),
            offset + 1
        ));
    }
    for (i, c) in segment.char_indices().skip(1) {
        if !is_name_char(c) {
            let hint = if c.is_ascii_uppercase() { " (names are lowercase)" } else { "" };
            return Err(format!(
                "character {} at position {} is not allowed{hint}: use lowercase letters, digits, `_`, `.`, `-`",
                describe_char(c),
                offset + segment[..i].chars().count() + 1
            ));
        }
    }
    let len = segment.chars().count();
    if len > MAX_NAME_SEGMENT {
        return Err(format!("segment is {len} characters long, at most {MAX_NAME_SEGMENT} are allowed"));
    }
    Ok(())
}

impl SkillName {
    /// Validates a name.
    pub fn new(name: &str) -> Result<Self, RefError> {
        if name.is_empty() {
            return Err(RefError::EmptyName);
        }
        let bad = |problem: String| RefError::BadName { name: name.to_owned(), problem };
        let mut parts = name.splitn(3, '/');
        let first = parts.next().unwrap_or_default();
        check_name_segment(first, 0).map_err(bad)?;
        if let Some(second) = parts.next() {
            check_name_segment(second, first.chars().count() + 1).map_err(bad)?;
        }
        if parts.next().is_some() {
            return Err(bad("only one namespace is allowed: write namespace/name".to_owned()));
        }
        Ok(Self(name.to_owned()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The namespace before `/`, if any.
    pub fn namespace(&self) -> Option<&str> {
        self.0.split_once('/').map(|(ns, _)| ns)
    }
}

impl SkillVersion {
    /// Validates a version.
    pub fn new(version: &str) -> Result<Self, RefError> {
        let bad = |problem: String| RefError::BadVersion { version: version.to_owned(), problem };
        let mut chars = version.chars();
        let Some(first) = chars.next() else {
            return Err(RefError::EmptyVersion);
        };
        if !first.is_ascii_alphanumeric() {
            return Err(bad(format!(
                "character {} at position 1 cannot start a version: start with a letter or a digit",
                describe_char(first)
            )));
        }
        for (i, c) in version.chars().enumerate().skip(1) {
            if !is_version_char(c) {
                return Err(bad(format!(
                    "character {} at position {} is not allowed: use letters, digits, `.`, `_`, `+`, `-`",
                    describe_char(c),
                    i + 1
                )));
            }
        }
        let len = version.chars().count();
        if len > MAX_VERSION {
            return Err(bad(format!("is {len} characters long, at most {MAX_VERSION} are allowed")));
        }
        Ok(Self(version.to_owned()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl SkillRef {
    pub fn new(name: SkillName, version: SkillVersion) -> Self {
        Self { name, version }
    }

    /// Parses `name@version`.
    pub fn parse(text: &str) -> Result<Self, RefError> {
        let Some((name, version)) = text.split_once('@') else {
            return Err(RefError::MissingAt(text.to_owned()));
        };
        if version.contains('@') {
            return Err(RefError::SeveralAt(text.to_owned()));
        }
        Ok(Self { name: SkillName::new(name)?, version: SkillVersion::new(version)? })
    }

    pub fn name(&self) -> &SkillName {
        &self.name
    }

    pub fn version(&self) -> &SkillVersion {
        &self.version
    }

    fn written(&self) -> impl Iterator<Item = u8> + '_ {
        self.name.0.bytes().chain(std::iter::once(b'@')).chain(self.version.0.bytes())
    }
}

impl Ord for SkillRef {
    fn cmp(&self, other: &Self) -> Ordering {
        self.written().cmp(other.written())
    }
}

impl PartialOrd for SkillRef {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

macro_rules! string_forms {
    ($ty:ty, $parse:path) => {
        impl fmt::Display for $ty {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                fmt::Display::fmt(&self.to_string_form(), f)
            }
        }

        impl FromStr for $ty {
            type Err = RefError;
            fn from_str(s: &str) -> Result<Self, RefError> {
                $parse(s)
            }
        }

        impl Serialize for $ty {
            fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.collect_str(self)
            }
        }

        impl<'de> Deserialize<'de> for $ty {
            fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                let text = String::deserialize(deserializer)?;
                $parse(&text).map_err(serde::de::Error::custom)
            }
        }
    };
}

impl SkillName {
    fn to_string_form(&self) -> &str {
        &self.0
    }
}

impl SkillVersion {
    fn to_string_form(&self) -> &str {
        &self.0
    }
}

impl SkillRef {
    fn to_string_form(&self) -> String {
        format!("{}@{}", self.name.0, self.version.0)
    }
}

string_forms!(SkillName, SkillName::new);
string_forms!(SkillVersion, SkillVersion::new);
string_forms!(SkillRef, SkillRef::parse);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_formats_a_reference() {
        let r = SkillRef::parse("local/my-skill@1.2.0+b").expect("valid");
        assert_eq!(r.name().namespace(), Some("local"));
        assert_eq!(r.to_string(), "local/my-skill@1.2.0+b");
    }

    #[test]
    fn reference_errors_name_the_part() {
        let cases = [
            ("claim", "no `@`"),
            ("a@1@2", "more than one `@`"),
            ("@1", "name is empty"),
            ("a@", "version is empty"),
            ("Claim@1", "position 1 cannot start"),
            ("cLaim@1", "position 2 is not allowed (names are lowercase)"),
            ("a/b/c@1", "only one namespace"),
            ("a/@1", "empty segment at position 3"),
            ("a@-1", "cannot start a version"),
            ("a@1 2", "' ' at position 2"),
        ];
        for (text, expected) in cases {
            let error = SkillRef::parse(text).expect_err(text).to_string();
            assert!(error.contains(expected), "{text}: {error}");
        }
    }

    #[test]
    fn length_limits_are_inclusive() {
        let long = "a".repeat(MAX_NAME_SEGMENT);
        assert!(SkillName::new(&long).is_ok());
        assert!(SkillName::new(&format!("{long}a")).is_err());
        assert!(SkillName::new(&format!("{long}/{long}")).is_ok());
        let version = "1".repeat(MAX_VERSION);
        assert!(SkillVersion::new(&version).is_ok());
        assert!(SkillVersion::new(&format!("{version}1")).is_err());
    }

    #[test]
    fn orders_by_written_form() {
        let mut refs: Vec<SkillRef> = ["doc.summarize_later@1", "a@1", "doc.summarize@1", "a-b@1"]
            .iter()
            .map(|s| s.parse().expect("valid"))
            .collect();
        refs.sort();
        let written: Vec<String> = refs.iter().map(ToString::to_string).collect();
        assert_eq!(written, ["a-b@1", "a@1", "doc.summarize@1", "doc.summarize_later@1"]);
    }

    #[test]
    fn serde_validates() {
        let r: SkillRef = serde_json::from_str("\"a.b@1\"").expect("valid");
        assert_eq!(serde_json::to_string(&r).expect("serializes"), "\"a.b@1\"");
        assert!(serde_json::from_str::<SkillRef>("\"A@1\"").is_err());
    }
}
