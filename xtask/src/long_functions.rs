//! No function of more than 80 lines or 6 parameters (`self` aside) outside tests without a
//! reason: an `#[allow]` of `clippy::too_many_lines` or `clippy::too_many_arguments` with
//! `reason = "…"` on it (`#[expect]` would fail: clippy's `too_many_lines` is not enabled). The functions that were longer before
//! the rule are listed in `xtask/long-functions.txt`; that list may only shrink (an entry that
//! is no longer long, or no longer there, must go).
//!
//! The sources are read as rustfmt writes them: a function's body ends at the first `}` at its
//! own indentation, and test modules (`#[cfg(test)] mod …`) end the same way.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

use crate::workspace_root;

/// The most lines a function has, its signature and closing brace included.
pub(crate) const MAX_LINES: usize = 80;
/// The most parameters, `self` aside.
pub(crate) const MAX_PARAMETERS: usize = 6;

/// A function over a limit: where, and by how much.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Long {
    /// `crates/x/src/y.rs::name`.
    pub(crate) id: String,
    pub(crate) lines: usize,
    pub(crate) parameters: usize,
}

fn indentation(line: &str) -> usize {
    line.len() - line.trim_start().len()
}

/// The function a line declares, if it does: its name.
fn declared(line: &str) -> Option<&str> {
    let mut words = line.trim_start();
    for prefix in ["pub(crate) ", "pub(super) ", "pub ", "const ", "async ", "unsafe ", "extern \"C\" "] {
        words = words.strip_prefix(prefix).unwrap_or(words);
        words = words.strip_prefix("async ").unwrap_or(words);
    }
    let rest = words.strip_prefix("fn ")?;
    let end = rest.find(|c: char| !(c.is_alphanumeric() || c == '_'))?;
    Some(&rest[..end])
}

/// The parameters of the signature starting at `lines[0]` (its text up to the body), `self`
/// aside.
fn parameters(signature: &str) -> usize {
    // The list opens at the first `(` after `fn ` (not `pub(crate)`'s).
    let after = signature.find("fn ").unwrap_or(0);
    let Some(open) = signature[after..].find('(').map(|at| at + after) else { return 0 };
    let mut depth = 0usize;
    let mut count = 0usize;
    let mut current = String::new();
    let mut previous = ' ';
    for c in signature[open..].chars() {
        match c {
            '(' | '[' | '{' | '<' => depth += 1,
            '>' if previous == '-' => {}
            ')' | ']' | '}' | '>' => {
                depth -= 1;
                if depth == 0 {
                    break;
                }
            }
            ',' if depth == 1 => {
                count += usize::from(is_parameter(&current));
                current.clear();
                previous = c;
                continue;
            }
            _ => {}
        }
        if depth >= 1 && !(depth == 1 && c == '(') {
            current.push(c);
        }
        previous = c;
    }
    count + usize::from(is_parameter(&current))
}

fn is_parameter(text: &str) -> bool {
    let mut text = text.trim().trim_start_matches('&');
    if text.starts_with('\'') {
        text = text.split_once(' ').map_or("", |(_, rest)| rest);
    }
    let text = text.trim_start_matches("mut ").trim();
    !(text.is_empty() || text == "self" || text.starts_with("self:"))
}

/// Whether the attributes above line `at` give a reason for the limit `lint`.
fn excused(lines: &[&str], at: usize, lint: &str) -> bool {
    let mut index = at;
    while index > 0 {
        index -= 1;
        let line = lines[index].trim();
        if !(line.starts_with("#[")
            || line.starts_with("///")
            || line.starts_with("//")
            || line.starts_with('"')
            || line.starts_with(')')
            || line.starts_with("clippy::")
            || line.starts_with("reason"))
        {
            return false;
        }
        if line.contains(lint)
            && (line.contains("reason = ") || lines.get(index + 1).is_some_and(|l| l.contains("reason = ")))
        {
            return true;
        }
    }
    false
}

/// The long functions of one source file's text, outside tests and without a reason.
pub(crate) fn long_in(file: &str, text: &str) -> Vec<Long> {
    let lines: Vec<&str> = text.lines().collect();
    let mut found = Vec::new();
    let mut index = 0;
    while index < lines.len() {
        let line = lines[index];
        // A test module: skip to its end.
        if line.trim() == "#[cfg(test)]"
            && lines.get(index + 1).is_some_and(|next| next.trim_start().starts_with("mod ") || next.contains(" mod "))
        {
            let indent = indentation(line);
            index += 2;
            while index < lines.len() && !(lines[index].trim() == "}" && indentation(lines[index]) == indent) {
                index += 1;
            }
            index += 1;
            continue;
        }
        let Some(name) = declared(line) else {
            index += 1;
            continue;
        };
        let indent = indentation(line);
        let mut end = index;
        let mut signature = String::new();
        // The signature runs to the line that opens the body (or ends a body-less declaration).
        while end < lines.len() {
            signature.push_str(lines[end]);
            signature.push('\n');
            let trimmed = lines[end].trim_end();
            if trimmed.ends_with('{') || trimmed.ends_with(';') || trimmed.ends_with('}') {
                break;
            }
            end += 1;
        }
        let one_line = lines.get(end).is_some_and(|l| l.trim_end().ends_with('}') || l.trim_end().ends_with(';'));
        if !one_line {
            while end < lines.len() && !(lines[end].trim() == "}" && indentation(lines[end]) == indent) {
                end += 1;
            }
        }
        let length = end - index + 1;
        let count = parameters(&signature);
        let too_long = length > MAX_LINES && !excused(&lines, index, "too_many_lines");
        let too_many = count > MAX_PARAMETERS && !excused(&lines, index, "too_many_arguments");
        if too_long || too_many {
            found.push(Long { id: format!("{file}::{name}"), lines: length, parameters: count });
        }
        index += 1;
    }
    found
}

/// Every source file of the workspace's crates and tools (test folders aside).
fn sources() -> Vec<PathBuf> {
    let root = workspace_root();
    let mut pending: Vec<PathBuf> = vec![root.join("crates"), root.join("xtask/src"), root.join("examples")];
    let mut files = Vec::new();
    while let Some(folder) = pending.pop() {
        for entry in std::fs::read_dir(&folder).into_iter().flatten().flatten() {
            let path = entry.path();
            let name = path.file_name().and_then(|n| n.to_str()).unwrap_or_default();
            if path.is_dir() {
                if !matches!(name, "tests" | "target" | "benches" | "node_modules" | "fuzz") {
                    pending.push(path);
                }
            } else if name.ends_with(".rs") {
                files.push(path);
            }
        }
    }
    files.sort();
    files
}

/// What the baseline lists.
fn baseline(path: &Path) -> Result<BTreeSet<String>> {
    let text = std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    Ok(text
        .lines()
        .map(str::trim)
        .filter(|line| !line.is_empty() && !line.starts_with('#'))
        .map(str::to_owned)
        .collect())
}

/// What `long` has that `listed` does not (new, with their sizes), and what `listed` names that
/// is no longer long (gone).
fn against(long: &[Long], listed: &BTreeSet<String>) -> (Vec<String>, Vec<String>) {
    let found: BTreeSet<&str> = long.iter().map(|entry| entry.id.as_str()).collect();
    let new = long
        .iter()
        .filter(|entry| !listed.contains(&entry.id))
        .map(|entry| format!("{} ({} lines, {} parameters)", entry.id, entry.lines, entry.parameters))
        .collect();
    let gone = listed.iter().filter(|id| !found.contains(id.as_str())).cloned().collect();
    (new, gone)
}

/// The check `cargo xtask ci` runs.
pub(crate) fn check() -> Result<()> {
    println!("==> long functions");
    let root = workspace_root();
    let mut long = Vec::new();
    for file in sources() {
        let text = std::fs::read_to_string(&file).with_context(|| format!("reading {}", file.display()))?;
        let shown = file.strip_prefix(&root).unwrap_or(&file).display().to_string();
        long.extend(long_in(&shown, &text));
    }
    let listed_path = root.join("xtask/long-functions.txt");
    let listed = baseline(&listed_path)?;
    let (new, gone) = against(&long, &listed);
    if !new.is_empty() {
        bail!(
            "functions over {MAX_LINES} lines or {MAX_PARAMETERS} parameters without a reason: split them, or say why with \
             #[allow(clippy::too_many_lines, reason = \"…\")] (or too_many_arguments):\n  {}",
            new.join("\n  ")
        );
    }
    if !gone.is_empty() {
        bail!(
            "{} lists functions that are no longer long (or no longer there): take them off the list:\n  {}",
            listed_path.display(),
            gone.join("\n  ")
        );
    }
    println!("    none new; {} from before the rule still listed in xtask/long-functions.txt", listed.len());
    Ok(())
}

/// The current list, for writing the baseline (`cargo xtask long-functions`).
pub(crate) fn print() -> Result<()> {
    let root = workspace_root();
    for file in sources() {
        let text = std::fs::read_to_string(&file)?;
        let shown = file.strip_prefix(&root).unwrap_or(&file).display().to_string();
        for entry in long_in(&shown, &text) {
            println!("{}", entry.id);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn body(lines: usize) -> String {
        (0..lines).map(|n| format!("    let x{n} = {n};\n")).collect()
    }

    #[test]
    fn a_long_function_or_one_of_many_parameters_is_found_unless_it_says_why() {
        let text = format!(
            "fn short() {{\n{}}}\n\npub(crate) async fn long() {{\n{}}}\n\n#[allow(clippy::too_many_lines, reason = \"a table\")]\nfn excused() {{\n{}}}\n\nfn many(\n    a: u8,\n    b: u8,\n    c: Vec<(u8, u8)>,\n    d: impl Fn(u8) -> u8,\n    e: u8,\n    f: u8,\n    g: u8,\n) {{\n}}\n\nimpl X {{\n    fn six(&self, a: u8, b: u8, c: u8, d: u8, e: u8, f: HashMap<u8, u8>) {{}}\n}}\n",
            body(10),
            body(80),
            body(90)
        );
        let found = long_in("f.rs", &text);
        let ids: Vec<(&str, usize, usize)> =
            found.iter().map(|entry| (entry.id.as_str(), entry.lines, entry.parameters)).collect();
        assert_eq!(ids, [("f.rs::long", 82, 0), ("f.rs::many", 10, 7)]);
    }

    #[test]
    fn a_reason_wrapped_over_lines_as_rustfmt_writes_it_excuses_too() {
        let text = format!(
            "#[tokio::main]\n#[allow(\n    clippy::too_many_lines,\n    reason = \"a script\"\n)]\nasync fn wrapped() {{\n{}}}\n\n#[allow(\n    clippy::too_many_arguments,\n    reason = \"the other one\"\n)]\nfn unexcused() {{\n{}}}\n",
            body(90),
            body(90)
        );
        let ids: Vec<String> = long_in("f.rs", &text).into_iter().map(|entry| entry.id).collect();
        assert_eq!(ids, ["f.rs::unexcused"], "a reason for another limit excuses nothing");
    }

    #[test]
    fn the_list_only_shrinks_a_new_one_and_one_no_longer_long_are_both_named() {
        let long = |id: &str| Long { id: id.to_owned(), lines: 90, parameters: 2 };
        let listed: BTreeSet<String> = ["a.rs::old", "a.rs::split"].into_iter().map(str::to_owned).collect();
        let (new, gone) = against(&[long("a.rs::old"), long("a.rs::fresh")], &listed);
        assert_eq!(new, ["a.rs::fresh (90 lines, 2 parameters)"]);
        assert_eq!(gone, ["a.rs::split"]);
        assert_eq!(against(&[long("a.rs::old"), long("a.rs::split")], &listed), (vec![], vec![]));
    }

    #[test]
    fn test_modules_are_left_out() {
        let text = format!("#[cfg(test)]\nmod tests {{\n    fn long() {{\n{}    }}\n}}\n", body(100));
        assert_eq!(long_in("f.rs", &text), Vec::new());
    }
}
