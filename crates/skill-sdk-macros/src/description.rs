//! The description of a skill from its doc comment: the first paragraph, inner newlines kept.

use syn::{Attribute, Expr, ExprLit, Lit, Meta};

/// The doc comment's text, dedented like a cleaned docstring.
fn doc_text(attrs: &[Attribute]) -> String {
    let lines: Vec<String> = attrs
        .iter()
        .filter_map(|attr| match &attr.meta {
            Meta::NameValue(nv) if nv.path.is_ident("doc") => match &nv.value {
                Expr::Lit(ExprLit { lit: Lit::Str(s), .. }) => Some(s.value()),
                _ => None,
            },
            _ => None,
        })
        .flat_map(|chunk| chunk.split('\n').map(str::to_owned).collect::<Vec<_>>())
        .collect();
    let indent = lines
        .iter()
        .filter(|line| !line.trim().is_empty())
        .map(|line| line.len() - line.trim_start().len())
        .min()
        .unwrap_or(0);
    lines
        .iter()
        .map(|line| if line.trim().is_empty() { "" } else { &line[indent..] })
        .map(str::trim_end)
        .collect::<Vec<_>>()
        .join("\n")
}

/// The first paragraph of the doc comment (split at the first blank line), trimmed; empty
/// without a doc comment.
pub(crate) fn first_paragraph(attrs: &[Attribute]) -> String {
    let text = doc_text(attrs);
    let text = text.trim_start_matches('\n');
    text.split("\n\n").next().unwrap_or_default().trim().to_owned()
}
