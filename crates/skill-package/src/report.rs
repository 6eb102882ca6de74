//! What a run came to, for people (a line per test, the failing step with what was expected and
//! what happened) and for CI systems (JUnit XML).

use std::fmt::Write as _;

use skill_api::{PackageTestOut, TestFailure};

/// The human summary: a line per test, the failure under it, then the totals.
pub fn human(out: &PackageTestOut) -> String {
    let mut text = String::new();
    for test in &out.tests {
        let mark = if test.passed { "ok  " } else { "FAIL" };
        let _ = writeln!(text, "{mark} {} ({}) {:.0} ms", test.name, test.file, test.seconds * 1000.0);
        if let Some(failure) = &test.failure {
            text.push_str(&failure_lines(failure, "     "));
        }
        for warning in &test.warnings {
            text.push_str(&failure_lines(warning, "     warning: "));
        }
    }
    for warning in &out.warnings {
        text.push_str(&failure_lines(warning, "warning: "));
    }
    let _ = writeln!(text, "{} passed, {} failed in {:.2} s", out.passed, out.failed, out.seconds);
    text
}

fn failure_lines(failure: &TestFailure, lead: &str) -> String {
    let mut text = String::new();
    let at = failure.path.as_deref().map(|path| format!(" at {path}")).unwrap_or_default();
    let _ = writeln!(text, "{lead}{}{at}: {}", failure.code, failure.message);
    if let Some(expected) = &failure.expected {
        let _ = writeln!(text, "{lead}  expected: {expected}");
    }
    if let Some(actual) = &failure.actual {
        let _ = writeln!(text, "{lead}  actual:   {actual}");
    }
    if let Some(hint) = &failure.hint {
        let _ = writeln!(text, "{lead}  hint: {hint}");
    }
    text
}

fn escaped(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            // XML 1.0 has no other control characters.
            c if (c as u32) < 0x20 && !matches!(c, '\n' | '\r' | '\t') => out.push('\u{FFFD}'),
            c => out.push(c),
        }
    }
    out
}

/// JUnit XML: one `testsuite` (the package), a `testcase` per test, a `failure` per failed one.
pub fn junit(package: &str, out: &PackageTestOut) -> String {
    let mut xml = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let _ = writeln!(
        xml,
        "<testsuites tests=\"{}\" failures=\"{}\" time=\"{:.3}\">",
        out.tests.len(),
        out.failed,
        out.seconds
    );
    let _ = writeln!(
        xml,
        "  <testsuite name=\"{}\" tests=\"{}\" failures=\"{}\" time=\"{:.3}\">",
        escaped(package),
        out.tests.len(),
        out.failed,
        out.seconds
    );
    for test in &out.tests {
        let _ = write!(
            xml,
            "    <testcase classname=\"{}\" name=\"{}\" file=\"{}\" time=\"{:.3}\"",
            escaped(package),
            escaped(&test.name),
            escaped(&test.file),
            test.seconds
        );
        match &test.failure {
            None => xml.push_str("/>\n"),
            Some(failure) => {
                let _ = writeln!(
                    xml,
                    ">\n      <failure type=\"{}\" message=\"{}\">{}</failure>\n    </testcase>",
                    escaped(&failure.code),
                    escaped(&failure.message),
                    escaped(&failure_lines(failure, ""))
                );
            }
        }
    }
    xml.push_str("  </testsuite>\n</testsuites>\n");
    xml
}
