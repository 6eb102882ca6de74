//! Parsing and checking the arguments of `#[skill(...)]`.
//!
//! Every value is checked with the contract crate's own rules, so what the core would refuse is
//! a compile error on the token that is wrong.

use proc_macro2::Span;
use skill_contract::{
    BACKOFF_SECONDS, Idempotency, Implementation, MAX_ATTEMPTS, NormalizeOptions, PolicyWord, RiskLevel, SideEffects,
    SkillName, SkillVersion, TIMEOUT_SECONDS, is_permission,
};
use syn::punctuated::Punctuated;
use syn::{Expr, ExprLit, Lit, Token};

/// The cost estimate, kept as written (an integer stays an integer).
pub(crate) enum Estimate {
    Integer(u64),
    Float(f64),
}

/// The implementation declared in code.
pub(crate) enum DeclaredImplementation {
    Local { entrypoint: Option<String> },
    Http { endpoint: String, audience: Option<String> },
    Mcp { endpoint: String, tool: Option<String>, audience: Option<String> },
}

/// Checked arguments.
pub(crate) struct Args {
    pub name: String,
    pub version: String,
    pub side_effects: SideEffects,
    pub risk: RiskLevel,
    pub idempotency: Idempotency,
    pub timeout: u64,
    pub retry: (u64, u64),
    pub permissions: Vec<String>,
    pub cost_model: Option<(String, Option<Estimate>)>,
    pub description: Option<String>,
    pub implementation: DeclaredImplementation,
    pub inputs_schema: Option<Expr>,
    pub outputs_schema: Option<Expr>,
}

const KNOWN: &[&str] = &[
    "version",
    "side_effects",
    "risk",
    "idempotency",
    "timeout",
    "retry",
    "permissions",
    "cost_model",
    "description",
    "implementation",
    "inputs_schema",
    "outputs_schema",
];

/// Collects errors so that one compilation reports every wrong argument.
#[derive(Default)]
pub(crate) struct Errors(Option<syn::Error>);

impl Errors {
    pub(crate) fn push(&mut self, error: syn::Error) {
        match &mut self.0 {
            Some(existing) => existing.combine(error),
            None => self.0 = Some(error),
        }
    }

    pub(crate) fn at(&mut self, tokens: &dyn quote::ToTokens, message: impl std::fmt::Display) {
        self.push(syn::Error::new_spanned(tokens, message));
    }

    /// How many errors were collected so far.
    pub(crate) fn count(&self) -> usize {
        self.0.as_ref().map_or(0, |e| e.into_iter().count())
    }

    pub(crate) fn into_result(self) -> Result<(), syn::Error> {
        self.0.map_or(Ok(()), Err)
    }
}

fn string(expr: &Expr, what: &str, errors: &mut Errors) -> Option<String> {
    match expr {
        Expr::Lit(ExprLit { lit: Lit::Str(s), .. }) => Some(s.value()),
        other => {
            errors.at(other, format!("{what}: expected a string literal, e.g. \"...\""));
            None
        }
    }
}

/// An integer literal in `min..=max`.
fn integer(expr: &Expr, what: &str, (min, max, _): (u64, u64, u64), errors: &mut Errors) -> Option<u64> {
    let out_of_range = format!("{what} must be an integer from {min} to {max}");
    match expr {
        Expr::Lit(ExprLit { lit: Lit::Int(int), .. }) => match int.base10_parse::<u64>() {
            Ok(n) if (min..=max).contains(&n) => Some(n),
            Ok(n) => {
                errors.at(expr, format!("{out_of_range}, got {n}"));
                None
            }
            Err(_) => {
                errors.at(expr, out_of_range);
                None
            }
        },
        Expr::Unary(syn::ExprUnary { op: syn::UnOp::Neg(_), .. }) => {
            errors.at(expr, format!("{out_of_range}, got a negative number"));
            None
        }
        other => {
            errors.at(other, format!("{out_of_range}: write an integer literal"));
            None
        }
    }
}

fn word<T: PolicyWord>(expr: &Expr, field: &str, errors: &mut Errors) -> Option<T> {
    let text = string(expr, field, errors)?;
    match text.parse::<T>() {
        Ok(value) => Some(value),
        Err(_) => {
            errors.at(expr, format!("{field}: `{text}` is not allowed, use one of: {}", T::WORDS.join(", ")));
            None
        }
    }
}

/// `key = value` pairs inside `cost_model(...)`, `local(...)`, `http(...)`, `mcp(...)`.
fn named_pairs<'a>(
    call: &'a syn::ExprCall,
    allowed: &[&str],
    errors: &mut Errors,
) -> Vec<(String, &'a Expr, &'a Expr)> {
    let mut pairs = Vec::new();
    for arg in &call.args {
        match arg {
            Expr::Assign(assign) => match path_ident(&assign.left) {
                Some(key) if allowed.contains(&key.as_str()) => {
                    if pairs.iter().any(|(k, _, _): &(String, &Expr, &Expr)| *k == key) {
                        errors.at(&assign.left, format!("`{key}` is given twice"));
                    } else {
                        pairs.push((key, &*assign.left, &*assign.right));
                    }
                }
                _ => errors.at(&assign.left, format!("unknown key: use {}", allowed.join(", "))),
            },
            other => errors.at(other, format!("expected `key = value` with a key of: {}", allowed.join(", "))),
        }
    }
    pairs
}

fn path_ident(expr: &Expr) -> Option<String> {
    match expr {
        Expr::Path(path) => path.path.get_ident().map(ToString::to_string),
        _ => None,
    }
}

fn estimate(expr: &Expr, errors: &mut Errors) -> Option<Estimate> {
    let bad = "cost_model estimate must be a number ≥ 0, e.g. 1 or 0.5";
    match expr {
        Expr::Lit(ExprLit { lit: Lit::Int(int), .. }) => int.base10_parse().ok().map(Estimate::Integer),
        Expr::Lit(ExprLit { lit: Lit::Float(float), .. }) => match float.base10_parse::<f64>() {
            Ok(f) if f.is_finite() && f >= 0.0 => Some(Estimate::Float(f)),
            _ => {
                errors.at(expr, bad);
                None
            }
        },
        other => {
            errors.at(other, bad);
            None
        }
    }
}

fn cost_model(call: &syn::ExprCall, errors: &mut Errors) -> Option<(String, Option<Estimate>)> {
    let pairs = named_pairs(call, &["unit", "estimate"], errors);
    let unit = pairs.iter().find(|(k, _, _)| k == "unit").and_then(|(_, _, v)| {
        let unit = string(v, "cost_model unit", errors)?;
        if unit.trim().is_empty() {
            errors.at(*v, "cost_model unit must not be empty: name what a call is measured in, e.g. \"request\"");
            return None;
        }
        Some(unit)
    });
    if unit.is_none() && !pairs.iter().any(|(k, _, _)| k == "unit") {
        errors.at(call, "cost_model needs `unit = \"...\"`");
    }
    let estimate = pairs.iter().find(|(k, _, _)| k == "estimate").and_then(|(_, _, v)| estimate(v, errors));
    unit.map(|unit| (unit, estimate))
}

fn implementation(expr: &Expr, errors: &mut Errors) -> Option<DeclaredImplementation> {
    let usage = "implementation must be local(entrypoint = ..), http(endpoint = .., audience = ..) or \
                 mcp(endpoint = .., tool = .., audience = ..)";
    let call = match expr {
        Expr::Call(call) => call,
        Expr::Path(_) if path_ident(expr).as_deref() == Some("local") => {
            return Some(DeclaredImplementation::Local { entrypoint: None });
        }
        other => {
            errors.at(other, usage);
            return None;
        }
    };
    let kind = path_ident(&call.func);
    let allowed: &[&str] = match kind.as_deref() {
        Some("local") => &["entrypoint"],
        Some("http") => &["endpoint", "audience"],
        Some("mcp") => &["endpoint", "tool", "audience"],
        _ => {
            errors.at(&call.func, usage);
            return None;
        }
    };
    let before = errors.count();
    let pairs = named_pairs(call, allowed, errors);
    let get = |key: &str, errors: &mut Errors| {
        pairs.iter().find(|(k, _, _)| k == key).and_then(|(_, _, v)| string(v, key, errors))
    };
    let declared = match kind.as_deref() {
        Some("local") => DeclaredImplementation::Local { entrypoint: get("entrypoint", errors) },
        Some("http") => {
            let Some(endpoint) = get("endpoint", errors) else {
                errors.at(call, "http(...) needs `endpoint = \"https://...\"`");
                return None;
            };
            DeclaredImplementation::Http { endpoint, audience: get("audience", errors) }
        }
        _ => {
            let Some(endpoint) = get("endpoint", errors) else {
                errors.at(call, "mcp(...) needs `endpoint = \"https://...\"` or `endpoint = \"stdio:<name>\"`");
                return None;
            };
            DeclaredImplementation::Mcp { endpoint, tool: get("tool", errors), audience: get("audience", errors) }
        }
    };
    if errors.count() != before {
        return None;
    }
    // The contract crate's rules; a local default entrypoint and an mcp default tool are filled
    // with valid stand-ins, since the real ones are only known at run time.
    let document = match &declared {
        DeclaredImplementation::Local { entrypoint } => serde_json::json!({
            "protocol": "local", "entrypoint": entrypoint.clone().unwrap_or_else(|| "module:function".into())
        }),
        DeclaredImplementation::Http { endpoint, audience } => {
            let mut doc = serde_json::json!({"protocol": "http", "endpoint": endpoint});
            if let Some(audience) = audience {
                doc["auth"] = serde_json::json!({"audience": audience});
            }
            doc
        }
        DeclaredImplementation::Mcp { endpoint, tool, audience } => {
            let mut doc = serde_json::json!({
                "protocol": "mcp", "endpoint": endpoint, "entrypoint": tool.clone().unwrap_or_else(|| "tool".into())
            });
            if let Some(audience) = audience {
                doc["auth"] = serde_json::json!({"audience": audience});
            }
            doc
        }
    };
    let options = NormalizeOptions { allow_placeholders: true, ..Default::default() };
    if let Err(error) = Implementation::parse(&document, &options) {
        for violation in error.violations() {
            let key = violation.field.rsplit('.').next().unwrap_or_default();
            let key = if key == "entrypoint" && matches!(declared, DeclaredImplementation::Mcp { .. }) {
                "tool"
            } else {
                key
            };
            let place = pairs.iter().find(|(k, _, _)| k == key).map_or(call as &dyn quote::ToTokens, |(_, _, v)| *v);
            errors.at(place, format!("{} ({})", violation.problem, violation.code.as_str()));
        }
        return None;
    }
    Some(declared)
}

/// Parses and checks the attribute's arguments. `span` points at the attribute for errors about
/// missing arguments.
pub(crate) fn parse(tokens: proc_macro2::TokenStream, span: Span) -> Result<Args, syn::Error> {
    let list: Punctuated<Expr, Token![,]> = syn::parse::Parser::parse2(Punctuated::parse_terminated, tokens)?;
    let mut errors = Errors::default();
    let mut items = list.iter();
    let name_expr = items.next();
    let name = match name_expr {
        Some(expr @ Expr::Lit(ExprLit { lit: Lit::Str(s), .. })) => match SkillName::new(&s.value()) {
            Ok(_) => Some(s.value()),
            Err(error) => {
                errors.at(expr, error);
                None
            }
        },
        Some(other) => {
            errors.at(
                other,
                "the first argument is the skill name as a string, e.g. #[skill(\"claim.draft_reply\", ...)]",
            );
            None
        }
        None => {
            errors.push(syn::Error::new(span, "#[skill(...)] needs the skill name first, e.g. #[skill(\"claim.draft_reply\", version = \"1\", side_effects = \"none\", risk = \"low\")]"));
            None
        }
    };

    let mut seen: Vec<(String, &Expr)> = Vec::new();
    let mut cost: Option<&syn::ExprCall> = None;
    for item in items {
        let (key, value, key_tokens): (String, &Expr, &dyn quote::ToTokens) = match item {
            Expr::Assign(assign) => match path_ident(&assign.left) {
                Some(key) => (key, &*assign.right, &*assign.left),
                None => {
                    errors.at(&assign.left, format!("expected an argument name: one of {}", KNOWN.join(", ")));
                    continue;
                }
            },
            Expr::Call(call) if path_ident(&call.func).as_deref() == Some("cost_model") => {
                if cost.replace(call).is_some() {
                    errors.at(&call.func, "`cost_model` is given twice");
                }
                continue;
            }
            other => {
                errors.at(other, format!("expected `name = value` with a name of: {}", KNOWN.join(", ")));
                continue;
            }
        };
        if !KNOWN.contains(&key.as_str()) {
            let hint = match key.as_str() {
                "risk_level" => " (write `risk`)",
                "timeout_seconds" => " (write `timeout`)",
                "retry_policy" | "retries" => " (write `retry = (attempts, backoff_seconds)`)",
                "required_permissions" => " (write `permissions`)",
                _ => "",
            };
            errors.at(key_tokens, format!("unknown argument `{key}`{hint}: use one of {}", KNOWN.join(", ")));
        } else if seen.iter().any(|(k, _)| *k == key) {
            errors.at(key_tokens, format!("`{key}` is given twice"));
        } else {
            seen.push((key, value));
        }
    }
    let get = |key: &str| seen.iter().find(|(k, _)| k == key).map(|(_, v)| *v);

    let version = match get("version") {
        Some(expr) => {
            let text = match expr {
                Expr::Lit(ExprLit { lit: Lit::Str(s), .. }) => Some(s.value()),
                Expr::Lit(ExprLit { lit: Lit::Int(i), .. }) => Some(i.base10_digits().to_owned()),
                other => {
                    errors.at(other, "version: expected a string literal such as \"1\" or \"1.2.0\"");
                    None
                }
            };
            text.and_then(|text| match SkillVersion::new(&text) {
                Ok(_) => Some(text),
                Err(error) => {
                    errors.at(expr, error);
                    None
                }
            })
        }
        None => {
            errors.push(syn::Error::new(
                span,
                "#[skill] needs `version = \"...\"`: the version is part of the skill's name@version",
            ));
            None
        }
    };
    let required_word = |key: &str, errors: &mut Errors, words: &[&str]| {
        if get(key).is_none() {
            errors
                .push(syn::Error::new(span, format!("#[skill] needs `{key} = \"...\"`, one of: {}", words.join(", "))));
        }
    };
    required_word("side_effects", &mut errors, SideEffects::ALLOWED);
    required_word("risk", &mut errors, RiskLevel::ALLOWED);
    let side_effects = get("side_effects").and_then(|e| word::<SideEffects>(e, "side_effects", &mut errors));
    let risk = get("risk").and_then(|e| word::<RiskLevel>(e, "risk", &mut errors));
    let idempotency = get("idempotency").map_or(Some(Idempotency::None), |e| word(e, "idempotency", &mut errors));
    let timeout =
        get("timeout").map_or(Some(TIMEOUT_SECONDS.2), |e| integer(e, "timeout", TIMEOUT_SECONDS, &mut errors));

    let retry = match get("retry") {
        None => Some((MAX_ATTEMPTS.2, BACKOFF_SECONDS.2)),
        Some(Expr::Tuple(tuple)) if tuple.elems.len() == 2 => {
            let attempts = integer(&tuple.elems[0], "retry attempts", MAX_ATTEMPTS, &mut errors);
            let backoff = integer(&tuple.elems[1], "retry backoff seconds", BACKOFF_SECONDS, &mut errors);
            attempts.zip(backoff)
        }
        Some(other) => {
            errors.at(other, "retry must be a pair `(max_attempts, backoff_seconds)`, e.g. retry = (3, 10)");
            None
        }
    };
    if let (Some(side_effects), Some(idempotency), Some((attempts, _))) = (side_effects, idempotency, retry)
        && let Some(violation) =
            skill_contract::unsafe_retry(side_effects, idempotency, u32::try_from(attempts).unwrap_or(u32::MAX))
    {
        // The contract crate's rule and words; only the spelling of the fix is the attribute's.
        errors.at(
            get("retry").expect("invariant: attempts > 1 come from a retry argument"),
            format!(
                "{} (in #[skill]: retry = (1, ..), or idempotency = \"natural\" or \"required\")",
                violation.problem
            ),
        );
    }

    let mut permissions = Vec::new();
    match get("permissions") {
        None => {}
        Some(Expr::Array(array)) => {
            for element in &array.elems {
                if let Some(text) = string(element, "permission", &mut errors) {
                    if is_permission(&text) {
                        permissions.push(text);
                    } else {
                        errors.at(
                            element,
                            format!("permission `{text}` must be dotted lowercase words, e.g. \"claims.write\""),
                        );
                    }
                }
            }
        }
        Some(other) => errors.at(other, "permissions must be a list of strings, e.g. permissions = [\"claims.write\"]"),
    }
    permissions.sort();
    permissions.dedup();

    let cost_model = cost.and_then(|call| cost_model(call, &mut errors));
    let description = get("description").and_then(|e| string(e, "description", &mut errors));
    let implementation = match get("implementation") {
        None => Some(DeclaredImplementation::Local { entrypoint: None }),
        Some(expr) => implementation(expr, &mut errors),
    };
    errors.into_result()?;
    let missing = || syn::Error::new(span, "invariant: a checked argument is present");
    Ok(Args {
        name: name.ok_or_else(missing)?,
        version: version.ok_or_else(missing)?,
        side_effects: side_effects.ok_or_else(missing)?,
        risk: risk.ok_or_else(missing)?,
        idempotency: idempotency.ok_or_else(missing)?,
        timeout: timeout.ok_or_else(missing)?,
        retry: retry.ok_or_else(missing)?,
        permissions,
        cost_model,
        description,
        implementation: implementation.ok_or_else(missing)?,
        inputs_schema: get("inputs_schema").cloned(),
        outputs_schema: get("outputs_schema").cloned(),
    })
}
