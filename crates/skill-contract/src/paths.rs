//! The path expressions packages use to read a document: `$` followed by `.name` and `[n]`
//! segments only (at most 500 characters) — a task type's inputs from a task, a work rule's from
//! its fact and interpretation. One grammar, read the same by the offline check and the core.

use serde_json::Value;

/// The longest path, in characters.
pub const MAX_PATH: usize = 500;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Segment {
    Key(String),
    Index(usize),
}

/// The segments of `path`, or `None` when it is not one.
pub fn parse(path: &str) -> Option<Vec<Segment>> {
    if path.chars().count() > MAX_PATH {
        return None;
    }
    let mut rest = path.strip_prefix('$')?;
    let mut segments = Vec::new();
    while !rest.is_empty() {
        if let Some(after) = rest.strip_prefix('.') {
            let end = after.find(['.', '[']).unwrap_or(after.len());
            let name = &after[..end];
            let mut chars = name.chars();
            let first_ok = chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_');
            if !first_ok || !chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-') {
                return None;
            }
            segments.push(Segment::Key(name.to_owned()));
            rest = &after[end..];
        } else if let Some(after) = rest.strip_prefix('[') {
            let (digits, tail) = after.split_once(']')?;
            if digits.is_empty() || !digits.chars().all(|c| c.is_ascii_digit()) || digits.len() > 9 {
                return None;
            }
            segments.push(Segment::Index(digits.parse().ok()?));
            rest = tail;
        } else {
            return None;
        }
    }
    Some(segments)
}

/// Whether `path` is a path of this grammar.
pub fn is_path(path: &str) -> bool {
    parse(path).is_some()
}

/// The value `path` names in `root`, `None` when it names nothing (or is not a path).
pub fn lookup<'a>(root: &'a Value, path: &str) -> Option<&'a Value> {
    let mut here = root;
    for segment in parse(path)? {
        here = match segment {
            Segment::Key(key) => here.get(key)?,
            Segment::Index(index) => here.get(index)?,
        };
    }
    Some(here)
}
